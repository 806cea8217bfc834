// Every op of the standard library, run through the projection harness
// (tests/support/op_check.h): on random shards its reference kernel touches
// exactly the elements its projections select, and sharded runs equal the
// unsharded one. One row per (kind, params, input shapes); a kind without a row
// fails the coverage test.
#include <QtTest/QtTest>

#include "op_check.h"

using namespace tapestry;
using namespace tapestry::testing;
using Ints = std::vector<std::int64_t>;

namespace {

// ---- ops A: elementwise, linear algebra, reduction, normalization --------------------
std::vector<OpCase> ops_a_cases() {
    std::vector<OpCase> c;
    for (const char *k : {"add", "sub", "mul", "div", "max", "min"}) {
        const std::string kind = k;
        c.push_back({kind + "/same", kind, {}, {port("a", {3, 4}), port("b", {3, 4})}});
        c.push_back({kind + "/broadcast-row", kind, {}, {port("a", {4, 3, 5}), port("b", {1, 5})}});
        c.push_back({kind + "/broadcast-both", kind, {}, {port("a", {4, 1, 3}), port("b", {2, 1})}});
        c.push_back({kind + "/scalar", kind, {}, {port("a", {}), port("b", {2, 3})}});
    }
    c.push_back({"add/scalars", "add", {}, {port("a", {}), port("b", {})}});
    c.push_back({"add/ones", "add", {}, {port("a", {1, 1}), port("b", {1})}});
    for (const char *k : {"relu", "sigmoid", "tanh", "exp"}) {
        c.push_back({std::string(k) + "/3d", k, {}, {port("x", {2, 3, 4})}});
        c.push_back({std::string(k) + "/scalar", k, {}, {port("x", {})}});
    }
    for (const char *k : {"neg", "abs", "leaky_relu", "elu", "selu", "softplus", "softsign", "hard_sigmoid",
                          "hard_swish", "clip"}) {
        c.push_back({std::string(k) + "/3d", k, {}, {port("x", {2, 3, 4})}});
        c.push_back({std::string(k) + "/scalar", k, {}, {port("x", {})}});
    }
    c.push_back({"clip/bounds", "clip", Params{{"min", -0.25}, {"max", 0.5}}, {port("x", {3, 5})}});
    c.push_back({"leaky_relu/alpha", "leaky_relu", Params{{"alpha", 0.3}}, {port("x", {6}, DType::bf16)}});
    {
        OpCase l{"log/positive", "log", {}, {port("x", {4, 5})}};
        l.lo = 0.1;
        c.push_back(l);
        OpCase r{"reciprocal/positive", "reciprocal", {}, {port("x", {3, 2})}};
        r.lo = 0.1;
        c.push_back(r);
    }
    c.push_back({"erf/3d", "erf", {}, {port("x", {2, 3, 4})}});
    c.push_back({"erf/scalar", "erf", {}, {port("x", {})}});
    c.push_back({"cast/f32-to-f16", "cast", Params{{"to", std::string("f16")}}, {port("x", {3, 5})}});
    c.push_back({"cast/f32-to-i64", "cast", Params{{"to", std::string("i64")}}, {port("x", {2, 2, 3})}});
    c.push_back({"cast/i32-to-bf16", "cast", Params{{"to", std::string("bf16")}}, {port("x", {4}, DType::i32)}});
    c.push_back({"cast/i64-to-bool", "cast", Params{{"to", std::string("bool")}}, {port("x", {}, DType::i64)}});
    c.push_back({"gelu/erf", "gelu", {}, {port("x", {5, 6})}});
    c.push_back({"gelu/tanh", "gelu", Params{{"approximate", std::string("tanh")}}, {port("x", {5, 6}, DType::bf16)}});
    {
        OpCase s{"sqrt/positive", "sqrt", {}, {port("x", {4, 5})}};
        s.lo = 0.1;
        c.push_back(s);
        OpCase p{"pow/fractional", "pow", Params{{"exponent", 1.5}}, {port("x", {3, 7})}};
        p.lo = 0.1;
        c.push_back(p);
        OpCase q{"pow/int-exponent", "pow", Params{{"exponent", std::int64_t{3}}}, {port("x", {6})}};
        c.push_back(q);
    }

    c.push_back({"matmul/2d", "matmul", {}, {port("a", {5, 4}), port("b", {4, 6})}});
    c.push_back({"matmul/batched", "matmul", {}, {port("a", {2, 3, 4}), port("b", {2, 4, 5})}});
    c.push_back({"matmul/broadcast-batch", "matmul", {}, {port("a", {3, 1, 2, 4}), port("b", {2, 4, 3})}});
    c.push_back({"matmul/batch-one-side", "matmul", {}, {port("a", {4, 3}), port("b", {2, 3, 5})}});
    c.push_back({"linear/no-bias", "linear", {}, {port("x", {6, 5}), port("w", {5, 4})}});
    c.push_back({"linear/bias", "linear", {}, {port("x", {2, 3, 5}), port("w", {5, 4}), port("bias", {4})}});
    c.push_back({"linear/vector", "linear", {}, {port("x", {5}), port("w", {5, 3}), port("bias", {3})}});
    c.push_back({"partial_matmul/even", "partial_matmul", Params{{"parts", std::int64_t{4}}},
                 {port("a", {3, 8}), port("b", {8, 2})}});
    c.push_back({"partial_matmul/clipped", "partial_matmul", Params{{"parts", std::int64_t{4}}},
                 {port("a", {2, 3, 10}), port("b", {10, 4})}});
    c.push_back({"partial_matmul/broadcast-batch", "partial_matmul", Params{{"parts", std::int64_t{2}}},
                 {port("a", {3, 1, 2, 7}), port("b", {2, 7, 3})}});

    for (const char *k : {"reduce_sum", "reduce_mean", "reduce_max"}) {
        const std::string kind = k;
        c.push_back({kind + "/last-keep", kind, Params{{"axes", Ints{-1}}}, {port("x", {3, 4, 5})}});
        c.push_back({kind + "/middle-drop", kind, Params{{"axes", Ints{1}}, {"keepdims", false}},
                     {port("x", {3, 4, 5})}});
        c.push_back({kind + "/two-axes", kind, Params{{"axes", Ints{2, 0}}}, {port("x", {3, 4, 5})}});
        c.push_back({kind + "/all-drop", kind, Params{{"axes", Ints{0, 1}}, {"keepdims", false}},
                     {port("x", {4, 3})}});
    }
    c.push_back({"softmax/last", "softmax", {}, {port("x", {3, 6})}});
    c.push_back({"softmax/first", "softmax", Params{{"axis", std::int64_t{0}}}, {port("x", {4, 3, 2})}});
    c.push_back({"softmax/1d", "softmax", {}, {port("x", {7})}});

    c.push_back({"layernorm/last", "layernorm", {}, {port("x", {4, 6}), port("gamma", {6}), port("beta", {6})}});
    c.push_back({"layernorm/two-axes", "layernorm", Params{{"axis", std::int64_t{-2}}},
                 {port("x", {3, 4, 5}), port("gamma", {4, 5})}});
    c.push_back({"layernorm/beta-only", "layernorm", {}, {port("x", {3, 5}), port("beta", {5})}});
    c.push_back({"layernorm/plain", "layernorm", Params{{"axis", std::int64_t{0}}}, {port("x", {3, 4})}});
    {
        OpCase b{"batchnorm/4d", "batchnorm", Params{{"epsilon", 1e-3}},
                 {port("x", {2, 3, 4, 2}), port("scale", {3}), port("bias", {3}), port("mean", {3}), port("var", {3})}};
        b.lo = 0.1;  // var must stay positive
        c.push_back(b);
        OpCase m{"batchnorm/2d", "batchnorm", {},
                 {port("x", {5, 4}), port("scale", {4}), port("bias", {4}), port("mean", {4}), port("var", {4})}};
        m.lo = 0.1;
        c.push_back(m);
    }
    c.push_back({"rmsnorm/gamma", "rmsnorm", {}, {port("x", {4, 6}), port("gamma", {6})}});
    c.push_back({"rmsnorm/plain", "rmsnorm", Params{{"axis", std::int64_t{1}}}, {port("x", {2, 3, 4})}});
    c.push_back({"move/all_gather", "move", Params{{"collective", std::string("all_gather")}}, {port("x", {3, 4, 2})}});
    // fused (ops/fused.h): a head and its epilogues; extra operands read through
    // the consumer's projection composed with the head's output projection.
    auto fused = [](std::string chain, std::vector<std::int64_t> head, std::vector<std::int64_t> chain_ports) {
        Params p{{"chain", std::move(chain)}, {"head_operands", std::move(head)}};
        if (!chain_ports.empty()) p.set("chain_ports", std::move(chain_ports));
        return p;
    };
    c.push_back({"fused/linear-relu", "fused", fused("linear;relu", {1, 1, 1}, {-1}),
                 {ports("x", {{6, 5}, {5, 4}, {4}})}});
    c.push_back({"fused/matmul-bias-gelu", "fused", fused("matmul;add;gelu{approximate=\"tanh\"}", {1, 1}, {0, -1}),
                 {ports("x", {{2, 3, 4}, {4, 5}, {5}})}});
    c.push_back({"fused/elementwise", "fused", fused("add;sub;tanh;mul", {1, 1}, {1, -1, 0}),
                 {ports("x", {{3, 4}, {4}, {1, 4}, {3, 1}})}});
    c.push_back({"fused/conv-relu", "fused", fused("conv2d{padding=[1,1,1,1]};relu", {1, 1, 0}, {-1}),
                 {ports("x", {{1, 2, 5, 5}, {3, 2, 3, 3}})}});
    return c;
}

// ---- ops B: shape, convolution, embedding, attention ----------------------------------
// Their rows live in tests/engine/test_op_projections_b.cpp (which adds exact ISL
// image checks for projections with holes) and that suite fails when one of these
// kinds has no row there. A kind in neither list fails every_kind_has_a_row.
const std::set<std::string> kKindsCheckedInSuiteB{"transpose", "reshape",    "concat",    "slice",    "conv2d",
                                                  "max_pool2d", "avg_pool2d", "embedding", "gather",    "attention"};

std::vector<OpCase> all_cases() { return ops_a_cases(); }

}  // namespace

class TestOpProjections : public QObject {
    Q_OBJECT
private slots:
    void projections_match_reference_accesses_data() {
        QTest::addColumn<int>("row");
        const std::vector<OpCase> cases = all_cases();
        for (size_t i = 0; i < cases.size(); ++i)
            QTest::newRow(cases[i].name.c_str()) << static_cast<int>(i);
    }
    void projections_match_reference_accesses() {
        QFETCH(int, row);
        const OpCase c = all_cases()[static_cast<size_t>(row)];
        for (std::uint64_t seed : {1u, 2u}) {
            const std::string err = check_op_case(c, seed);
            QVERIFY2(err.empty(), (c.name + " (seed " + std::to_string(seed) + "): " + err).c_str());
        }
    }

    // No op escapes the check: every registered kind has at least one row.
    void every_kind_has_a_row() {
        std::set<std::string> covered = covered_kinds(all_cases());
        covered.insert(kKindsCheckedInSuiteB.begin(), kKindsCheckedInSuiteB.end());
        std::string missing;
        for (const OpDef *d : OpLibrary::standard().all())
            if (!covered.count(std::string(d->kind()))) missing += std::string(missing.empty() ? "" : ", ") + std::string(d->kind());
        QVERIFY2(missing.empty(), ("kinds without a projection row: " + missing).c_str());
        // And no row names a kind the library lacks.
        for (const std::string &k : covered) QVERIFY2(OpLibrary::standard().find(k), ("unknown kind in table: " + k).c_str());
    }

    // The harness itself must catch a wrong projection: narrowing a's k window
    // makes the reads of a and b disagree with the selections they derive.
    void harness_detects_a_wrong_projection() {
        auto prepared = prepare(OpCase{"m", "matmul", {}, {port("a", {3, 4}), port("b", {4, 2})}}, 1);
        QVERIFY(prepared.has_value());
        OpRun run = std::move(prepared).value();
        PortProjections &pa = run.derivation.signature.inputs[0];
        const IndexProjection &p = pa.operands[0].projection;
        ZPoint w = p.window();
        w[1] = 2;
        pa.operands[0].projection = IndexProjection(p.map(), w);
        const std::string err = check_accesses(run, run.derivation.signature.index_space);
        QVERIFY2(!err.empty(), "a narrowed window went unnoticed");
        QVERIFY2(err.find("inputs.b[0]") != std::string::npos || err.find("inputs.a[0]") != std::string::npos,
                 err.c_str());
    }

    void harness_detects_missing_writes() {
        auto prepared = prepare(OpCase{"r", "relu", {}, {port("x", {4, 4})}}, 1);
        QVERIFY(prepared.has_value());
        OpRun run = std::move(prepared).value();
        // Claim the output projection writes a 2-wide window per point: the kernel
        // writes one element per point, so the writes no longer equal the selection.
        PortProjections &py = run.derivation.signature.outputs[0];
        py.operands[0].projection = IndexProjection(py.operands[0].projection.map(), ZPoint{1, 2});
        const std::string err = check_accesses(run, ZRange::of_shape({2, 2}));
        QVERIFY2(err.find("outputs.y[0]") != std::string::npos, err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestOpProjections)
#include "test_op_projections.moc"
