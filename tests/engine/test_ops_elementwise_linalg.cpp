// The elementwise, linear algebra, reduction and normalization ops: derivation
// goldens (shapes, index spaces, projection text), every derivation error with its
// exact message, FLOP counts, monoids, closed-form numeric checks, and the
// graph-level reference evaluator (sharded == unsharded).
#include <QtTest/QtTest>

#include <cmath>

#include "op_check.h"
#include "ops/evaluate.h"

using namespace tapestry;
using namespace tapestry::testing;
using Ints = std::vector<std::int64_t>;

namespace {

struct Golden {
    std::string name, kind;
    Params params;
    std::vector<PortTypes> inputs;
    std::string y_shape, index_space;
    std::vector<std::pair<std::string, std::string>> projections;  // "port" → to_string(); "y" for the output
};

std::vector<Golden> goldens() {
    return {
        {"linear", "linear", {}, {port("x", {100, 32}), port("w", {32, 16}), port("bias", {16})}, "[100, 16]",
         "[0:100, 0:16]",
         {{"x", "[1 0 | 0 | 1; 0 0 | 0 | 32]"},
          {"w", "[0 0 | 0 | 32; 0 1 | 0 | 1]"},
          {"bias", "[0 1 | 0 | 1]"},
          {"y", "[1 0 | 0 | 1; 0 1 | 0 | 1]"}}},
        {"linear/batched-vector", "linear", {}, {port("x", {2, 3, 8}), port("w", {8, 4})}, "[2, 3, 4]",
         "[0:2, 0:3, 0:4]",
         {{"x", "[1 0 0 | 0 | 1; 0 1 0 | 0 | 1; 0 0 0 | 0 | 8]"}, {"w", "[0 0 0 | 0 | 8; 0 0 1 | 0 | 1]"}}},
        {"add/broadcast", "add", {}, {port("a", {10, 10, 10}), port("b", {1, 10})}, "[10, 10, 10]",
         "[0:10, 0:10, 0:10]",
         {{"a", "[1 0 0 | 0 | 1; 0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"}, {"b", "[0 0 0 | 0 | 1; 0 0 1 | 0 | 1]"}}},
        {"mul/both-stretch", "mul", {}, {port("a", {4, 1}), port("b", {3})}, "[4, 3]", "[0:4, 0:3]",
         {{"a", "[1 0 | 0 | 1; 0 0 | 0 | 1]"}, {"b", "[0 1 | 0 | 1]"}}},
        {"sub/scalar", "sub", {}, {port("a", {}), port("b", {2, 3})}, "[2, 3]", "[0:2, 0:3]",
         {{"a", "[]"}, {"b", "[1 0 | 0 | 1; 0 1 | 0 | 1]"}}},
        {"relu", "relu", {}, {port("x", {2, 5})}, "[2, 5]", "[0:2, 0:5]", {{"x", "[1 0 | 0 | 1; 0 1 | 0 | 1]"}}},
        {"matmul/broadcast-batch", "matmul", {}, {port("a", {3, 1, 2, 4}), port("b", {2, 4, 5})}, "[3, 2, 2, 5]",
         "[0:3, 0:2, 0:2, 0:5]",
         {{"a", "[1 0 0 0 | 0 | 1; 0 0 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 0 0 0 | 0 | 4]"},
          {"b", "[0 1 0 0 | 0 | 1; 0 0 0 0 | 0 | 4; 0 0 0 1 | 0 | 1]"}}},
        {"matmul/2d", "matmul", {}, {port("a", {5, 7}), port("b", {7, 2})}, "[5, 2]", "[0:5, 0:2]",
         {{"a", "[1 0 | 0 | 1; 0 0 | 0 | 7]"}, {"b", "[0 0 | 0 | 7; 0 1 | 0 | 1]"}}},
        {"reduce_sum/drop", "reduce_sum", Params{{"axes", Ints{1}}, {"keepdims", false}}, {port("x", {3, 4, 5})},
         "[3, 5]", "[0:3, 0:5]", {{"x", "[1 0 | 0 | 1; 0 0 | 0 | 4; 0 1 | 0 | 1]"}}},
        {"reduce_mean/keep", "reduce_mean", Params{{"axes", Ints{-2}}}, {port("x", {3, 4, 5})}, "[3, 1, 5]",
         "[0:3, 0:1, 0:5]", {{"x", "[1 0 0 | 0 | 1; 0 0 0 | 0 | 4; 0 0 1 | 0 | 1]"}}},
        {"reduce_max/all", "reduce_max", Params{{"axes", Ints{0, 1}}, {"keepdims", false}}, {port("x", {3, 4})}, "[]",
         "[]", {{"x", "[| 0 | 3; | 0 | 4]"}, {"y", "[]"}}},
        {"softmax", "softmax", {}, {port("x", {2, 6})}, "[2, 6]", "[0:2, 0:6]", {{"x", "[1 0 | 0 | 1; 0 0 | 0 | 6]"}}},
        {"softmax/axis0", "softmax", Params{{"axis", std::int64_t{0}}}, {port("x", {2, 6})}, "[2, 6]", "[0:2, 0:6]",
         {{"x", "[0 0 | 0 | 2; 0 1 | 0 | 1]"}}},
        {"layernorm/two-axes", "layernorm", Params{{"axis", std::int64_t{-2}}},
         {port("x", {2, 3, 4}), port("gamma", {3, 4}), port("beta", {3, 4})}, "[2, 3, 4]", "[0:2, 0:3, 0:4]",
         {{"x", "[1 0 0 | 0 | 1; 0 0 0 | 0 | 3; 0 0 0 | 0 | 4]"},
          {"gamma", "[0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"},
          {"beta", "[0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"}}},
        {"rmsnorm", "rmsnorm", {}, {port("x", {2, 8}, DType::f16), port("gamma", {8}, DType::f16)}, "[2, 8]",
         "[0:2, 0:8]", {{"x", "[1 0 | 0 | 1; 0 0 | 0 | 8]"}, {"gamma", "[0 1 | 0 | 1]"}}},
    };
}

struct ErrorCase {
    std::string name, kind;
    Params params;
    std::vector<PortTypes> inputs;
    std::string code, field, message;
};

std::vector<ErrorCase> error_cases() {
    return {
        {"linear/w-rows", "linear", {}, {port("x", {8, 32}), port("w", {64, 16})}, "shape-mismatch", "inputs.w[0]",
         "linear: w has 64 rows but x has 32 features"},
        {"linear/bias-length", "linear", {}, {port("x", {8, 32}), port("w", {32, 16}), port("bias", {10})},
         "shape-mismatch", "inputs.bias[0]", "linear: bias has 10 elements but w has 16 columns"},
        {"linear/w-rank", "linear", {}, {port("x", {8, 32}), port("w", {2, 32, 16})}, "rank-mismatch", "inputs.w[0]",
         "linear: w must have rank 2 [in, out], got rank 3 [2, 32, 16]"},
        {"linear/bias-rank", "linear", {}, {port("x", {8, 32}), port("w", {32, 16}), port("bias", {1, 16})},
         "rank-mismatch", "inputs.bias[0]", "linear: bias must have rank 1 [out], got rank 2 [1, 16]"},
        {"linear/scalar-x", "linear", {}, {port("x", {}), port("w", {32, 16})}, "rank-mismatch", "inputs.x[0]",
         "linear: x must have rank at least 1, got rank 0 []"},
        {"linear/w-dtype", "linear", {}, {port("x", {8, 32}), port("w", {32, 16}, DType::bf16)}, "dtype-mismatch",
         "inputs.w[0]", "linear: w is bf16 but x is f32"},
        {"add/no-broadcast", "add", {}, {port("a", {3, 4}), port("b", {5})}, "shape-mismatch", "inputs.b[0]",
         "add: b [5] does not broadcast with a [3, 4]"},
        {"div/dtype", "div", {}, {port("a", {3}), port("b", {3}, DType::f16)}, "dtype-mismatch", "inputs.b[0]",
         "div: b is f16 but a is f32"},
        {"mul/integer", "mul", {}, {port("a", {3}, DType::i32), port("b", {3}, DType::i32)}, "dtype-mismatch",
         "inputs.a[0]", "mul: a must have a floating dtype, got i32"},
        {"relu/integer", "relu", {}, {port("x", {3}, DType::i64)}, "dtype-mismatch", "inputs.x[0]",
         "relu: x must have a floating dtype, got i64"},
        {"gelu/bad-choice", "gelu", Params{{"approximate", std::string("fast")}}, {port("x", {3})}, "bad-param",
         "params.approximate", "parameter 'approximate' of gelu must be one of none, tanh, got \"fast\""},
        {"pow/missing-exponent", "pow", {}, {port("x", {3})}, "missing-param", "params.exponent",
         "pow needs parameter 'exponent'"},
        {"matmul/vector", "matmul", {}, {port("a", {5}), port("b", {5, 2})}, "rank-mismatch", "inputs.a[0]",
         "matmul: a must have rank at least 2, got rank 1 [5] (a 1-D operand is not promoted; reshape it to a "
         "matrix)"},
        {"matmul/k", "matmul", {}, {port("a", {2, 4}), port("b", {3, 5})}, "shape-mismatch", "inputs.b[0]",
         "matmul: b has 3 rows but a has 4 columns"},
        {"matmul/batch", "matmul", {}, {port("a", {2, 3, 4}), port("b", {3, 4, 5})}, "shape-mismatch", "inputs.b[0]",
         "matmul: batch dims [3] of b do not broadcast with [2] of a"},
        {"matmul/dtype", "matmul", {}, {port("a", {2, 4}, DType::bf16), port("b", {4, 5})}, "dtype-mismatch",
         "inputs.b[0]", "matmul: b is f32 but a is bf16"},
        {"reduce_sum/axis-range", "reduce_sum", Params{{"axes", Ints{3}}}, {port("x", {3, 4})}, "bad-param",
         "params.axes", "reduce_sum: axis 3 is out of range for x of rank 2"},
        {"reduce_sum/negative-range", "reduce_sum", Params{{"axes", Ints{-3}}}, {port("x", {3, 4})}, "bad-param",
         "params.axes", "reduce_sum: axis -3 is out of range for x of rank 2"},
        {"reduce_mean/twice", "reduce_mean", Params{{"axes", Ints{1, -1}}}, {port("x", {3, 4})}, "bad-param",
         "params.axes", "reduce_mean: axis 1 is named twice in axes"},
        {"reduce_max/empty", "reduce_max", Params{{"axes", Ints{}}}, {port("x", {3, 4})}, "bad-param", "params.axes",
         "reduce_max: axes must name at least one axis"},
        {"reduce_sum/missing-axes", "reduce_sum", {}, {port("x", {3, 4})}, "missing-param", "params.axes",
         "reduce_sum needs parameter 'axes'"},
        {"softmax/axis", "softmax", Params{{"axis", std::int64_t{2}}}, {port("x", {3, 4})}, "bad-param",
         "params.axis", "softmax: axis 2 is out of range for x of rank 2"},
        {"softmax/scalar", "softmax", {}, {port("x", {})}, "bad-param", "params.axis",
         "softmax: axis -1 is out of range for x of rank 0"},
        {"layernorm/gamma-shape", "layernorm", {}, {port("x", {3, 4}), port("gamma", {5})}, "shape-mismatch",
         "inputs.gamma[0]", "layernorm: gamma has shape [5] but the normalized shape of x is [4]"},
        {"layernorm/beta-rank", "layernorm", Params{{"axis", std::int64_t{0}}},
         {port("x", {3, 4}), port("beta", {4})}, "shape-mismatch", "inputs.beta[0]",
         "layernorm: beta has shape [4] but the normalized shape of x is [3, 4]"},
        {"layernorm/epsilon", "layernorm", Params{{"epsilon", -1.0}}, {port("x", {3, 4})}, "bad-param",
         "params.epsilon", "layernorm: epsilon must not be negative, got -1"},
        {"rmsnorm/gamma-dtype", "rmsnorm", {}, {port("x", {3, 4}), port("gamma", {4}, DType::f16)}, "dtype-mismatch",
         "inputs.gamma[0]", "rmsnorm: gamma is f16 but x is f32"},
        {"rmsnorm/no-beta", "rmsnorm", {}, {port("x", {3, 4}), port("beta", {4})}, "unknown-port", "inputs.beta",
         "rmsnorm has no input port 'beta'"},
    };
}

Derivation derive_or_die(const std::string &kind, const Params &params, const std::vector<PortTypes> &inputs) {
    auto d = OpLibrary::standard().derive(kind, params, inputs);
    TAPESTRY_CHECK(d.has_value(), "test derivation failed");
    return std::move(d).value();
}

std::vector<double> values(const RefArray &a) { return a.data; }

RefArray array(std::vector<Coord> shape, std::vector<double> data) {
    RefArray a(ZRange::of_shape(ZPoint(std::move(shape))));
    TAPESTRY_CHECK(a.data.size() == data.size(), "test array size");
    a.data = std::move(data);
    return a;
}

// Runs the reference of a case over its whole index space on given inputs (ports
// in OpDef order) and returns output y.
RefArray run_y(const OpCase &c, std::vector<std::vector<RefArray>> inputs) {
    auto out = evaluate_case(c, inputs);
    if (!out) qFatal("evaluate_case(%s): %s", c.name.c_str(), out.error().c_str());
    return (*out)[0][0];
}

// ---- the 2-op graph for the evaluator ---------------------------------------------------

Tensor tensor(const std::string &id, ZRange range, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = std::move(range);
    t.role = role;
    return t;
}

PortBinding bind(const std::string &port, const std::string &tensor_id, ZRange range) {
    return PortBinding{port, {TensorSelection{TensorId(tensor_id), std::move(range)}}};
}

// x [10:14, 0:3] (non-zero origin) → linear(w [3, 5], bias [5]) → h [4, 5] → relu → y [4, 5].
Graph linear_relu_graph(bool sharded) {
    Graph g;
    g.name = "linear-relu";
    g.put_tensor(tensor("x", ZRange(ZPoint{10, 0}, ZPoint{14, 3}), TensorRole::input));
    g.put_tensor(tensor("w", ZRange::of_shape({3, 5}), TensorRole::parameter));
    g.put_tensor(tensor("bias", ZRange::of_shape({5}), TensorRole::parameter));
    g.put_tensor(tensor("h", ZRange::of_shape({4, 5}), TensorRole::intermediate));
    g.put_tensor(tensor("y", ZRange::of_shape({4, 5}), TensorRole::output));
    Operation fc;
    fc.id = OpId("fc");
    fc.name = "fc";
    fc.kind = "linear";
    fc.inputs = {bind("x", "x", ZRange(ZPoint{10, 0}, ZPoint{14, 3})), bind("w", "w", ZRange::of_shape({3, 5})),
                 bind("bias", "bias", ZRange::of_shape({5}))};
    fc.outputs = {bind("y", "h", ZRange::of_shape({4, 5}))};
    Operation act;
    act.id = OpId("act");
    act.name = "act";
    act.kind = "relu";
    act.inputs = {bind("x", "h", ZRange::of_shape({4, 5}))};
    act.outputs = {bind("y", "y", ZRange::of_shape({4, 5}))};
    if (sharded) {
        // Uneven shards along both dims of fc, a column split of act.
        fc.shards = {Shard{ShardId("fc.0"), ZRange(ZPoint{0, 0}, ZPoint{1, 5}), "", {}, {}},
                     Shard{ShardId("fc.1"), ZRange(ZPoint{1, 0}, ZPoint{4, 2}), "", {}, {}},
                     Shard{ShardId("fc.2"), ZRange(ZPoint{1, 2}, ZPoint{4, 5}), "", {}, {}}};
        act.shards = {Shard{ShardId("act.0"), ZRange(ZPoint{0, 0}, ZPoint{4, 3}), "", {}, {}},
                      Shard{ShardId("act.1"), ZRange(ZPoint{0, 3}, ZPoint{4, 5}), "", {}, {}}};
    }
    // Consumer first in the file: the evaluator must order by dependency.
    g.put_op(std::move(act));
    g.put_op(std::move(fc));
    return g;
}

std::map<TensorId, RefArray> linear_relu_inputs() {
    std::map<TensorId, RefArray> in;
    RefArray x(ZRange(ZPoint{10, 0}, ZPoint{14, 3}));
    for (size_t k = 0; k < x.data.size(); ++k) x.data[k] = std::sin(1.0 + static_cast<double>(k));
    RefArray w(ZRange::of_shape({3, 5}));
    for (size_t k = 0; k < w.data.size(); ++k) w.data[k] = std::cos(0.5 * static_cast<double>(k));
    RefArray bias(ZRange::of_shape({5}));
    for (size_t k = 0; k < bias.data.size(); ++k) bias.data[k] = 0.1 * static_cast<double>(k) - 0.2;
    in[TensorId("x")] = x;
    in[TensorId("w")] = w;
    in[TensorId("bias")] = bias;
    return in;
}

}  // namespace

class TestOpsElementwiseLinalg : public QObject {
    Q_OBJECT
private slots:
    // ---- derivation goldens ------------------------------------------------------------
    void derive_golden_data() {
        QTest::addColumn<int>("row");
        const auto g = goldens();
        for (size_t i = 0; i < g.size(); ++i) QTest::newRow(g[i].name.c_str()) << static_cast<int>(i);
    }
    void derive_golden() {
        QFETCH(int, row);
        const Golden g = goldens()[static_cast<size_t>(row)];
        auto d = OpLibrary::standard().derive(g.kind, g.params, g.inputs);
        QVERIFY2(d.has_value(), d.has_value() ? "" : describe(d.error()).c_str());
        QCOMPARE(d->outputs.size(), size_t{1});
        QCOMPARE(d->outputs[0].port, std::string("y"));
        QCOMPARE(d->outputs[0].operands[0].shape.to_string(), g.y_shape);
        QCOMPARE(d->outputs[0].operands[0].dtype, g.inputs[0].operands[0].dtype);
        QCOMPARE(d->signature.index_space.to_string(), g.index_space);
        for (const auto &[p, text] : g.projections) {
            const OperandProjection *op = p == "y" ? d->signature.output("y", 0) : d->signature.input(p, 0);
            QVERIFY2(op, ("no projection for " + p).c_str());
            QCOMPARE(op->projection.to_string(), text);
            QVERIFY(!op->clipped);
        }
        // Unless stated, the output projection is the identity.
        bool y_stated = false;
        for (const auto &pr : g.projections) y_stated = y_stated || pr.first == "y";
        if (!y_stated)
            QVERIFY(d->signature.output("y", 0)->projection ==
                    IndexProjection::identity(d->signature.index_space.rank()));
    }

    void optional_ports_are_absent_from_the_signature() {
        const Derivation d = derive_or_die("linear", {}, {port("x", {4, 3}), port("w", {3, 2})});
        QVERIFY(d.signature.input("bias", 0) == nullptr);
        QCOMPARE(d.signature.inputs.size(), size_t{2});
        const Derivation ln = derive_or_die("layernorm", {}, {port("x", {4, 3}), port("beta", {3})});
        QVERIFY(ln.signature.input("gamma", 0) == nullptr);
        QVERIFY(ln.signature.input("beta", 0) != nullptr);
    }

    // ---- errors ----------------------------------------------------------------------------
    void derive_errors_data() {
        QTest::addColumn<int>("row");
        const auto e = error_cases();
        for (size_t i = 0; i < e.size(); ++i) QTest::newRow(e[i].name.c_str()) << static_cast<int>(i);
    }
    void derive_errors() {
        QFETCH(int, row);
        const ErrorCase c = error_cases()[static_cast<size_t>(row)];
        auto d = OpLibrary::standard().derive(c.kind, c.params, c.inputs);
        QVERIFY2(!d.has_value(), "derivation unexpectedly succeeded");
        QCOMPARE(d.error().message, c.message);
        QCOMPARE(d.error().field, c.field);
        QCOMPARE(d.error().code, c.code);
    }

    // ---- metadata ------------------------------------------------------------------------------
    void op_metadata() {
        const OpLibrary &lib = OpLibrary::standard();
        const std::map<std::string, std::string> categories = {
            {"add", "elementwise"},        {"sub", "elementwise"},       {"mul", "elementwise"},
            {"div", "elementwise"},        {"relu", "elementwise"},      {"gelu", "elementwise"},
            {"sigmoid", "elementwise"},    {"tanh", "elementwise"},      {"exp", "elementwise"},
            {"sqrt", "elementwise"},       {"pow", "elementwise"},       {"matmul", "linear algebra"},
            {"linear", "linear algebra"},  {"reduce_sum", "reduction"},  {"reduce_mean", "reduction"},
            {"reduce_max", "reduction"},   {"softmax", "reduction"},     {"layernorm", "normalization"},
            {"rmsnorm", "normalization"}};
        for (const auto &[kind, category] : categories) {
            const OpDef *d = lib.find(kind);
            QVERIFY2(d, kind.c_str());
            QCOMPARE(std::string(d->category()), category);
            QVERIFY(!d->summary().empty());
            QCOMPARE(d->output_ports().size(), size_t{1});
            QCOMPARE(d->output_ports()[0].name, std::string("y"));
            for (const ParamSpec &p : d->params()) QVERIFY2(!p.doc.empty(), (kind + "." + p.name).c_str());
            QVERIFY(!d->composite());
            QCOMPARE(d->read_pattern(Params{}), ReadPattern::dense);
        }
        // Defaults as in docs/ops.md.
        QCOMPARE(lib.with_defaults(*lib.find("gelu"), {}).get_string("approximate", ""), std::string("none"));
        QCOMPARE(lib.with_defaults(*lib.find("softmax"), {}).get_int("axis", 0), std::int64_t{-1});
        QCOMPARE(lib.with_defaults(*lib.find("layernorm"), {}).get_float("epsilon", 0), 1e-5);
        QCOMPARE(lib.with_defaults(*lib.find("rmsnorm"), {}).get_float("epsilon", 0), 1e-6);
        QCOMPARE(lib.with_defaults(*lib.find("reduce_sum"), {}).get_bool("keepdims", false), true);
        QVERIFY(lib.find("linear")->input_ports()[2].optional);
    }

    // ---- FLOPs -----------------------------------------------------------------------------
    void flops_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("row");
        QTest::addColumn<double>("flops");
        // Whole-op FLOPs = flops_per_point × index points.
        QTest::newRow("matmul") << "matmul" << 0 << 2.0 * 4 * (2 * 3 * 5);
        QTest::newRow("linear+bias") << "linear" << 1 << (2.0 * 32 + 1) * (8 * 16);
        QTest::newRow("linear") << "linear" << 2 << 2.0 * 32 * (8 * 16);
        QTest::newRow("add") << "add" << 3 << 1.0 * 24;
        QTest::newRow("gelu-tanh") << "gelu" << 4 << 9.0 * 6;
        QTest::newRow("gelu-erf") << "gelu" << 5 << 5.0 * 6;
        QTest::newRow("sigmoid") << "sigmoid" << 6 << 4.0 * 6;
        QTest::newRow("reduce_mean") << "reduce_mean" << 7 << (4.0 + 1) * 3;
        QTest::newRow("reduce_sum") << "reduce_sum" << 8 << 12.0;
        QTest::newRow("softmax") << "softmax" << 9 << 5.0 * 12;
        QTest::newRow("layernorm+gamma+beta") << "layernorm" << 10 << 7.0 * 12;
        QTest::newRow("rmsnorm") << "rmsnorm" << 11 << 3.0 * 12;
    }
    void flops() {
        QFETCH(QString, kind);
        QFETCH(int, row);
        QFETCH(double, flops);
        const std::vector<std::pair<Params, std::vector<PortTypes>>> rows = {
            {{}, {port("a", {2, 3, 4}), port("b", {2, 4, 5})}},
            {{}, {port("x", {8, 32}), port("w", {32, 16}), port("bias", {16})}},
            {{}, {port("x", {8, 32}), port("w", {32, 16})}},
            {{}, {port("a", {2, 3, 4}), port("b", {4})}},
            {Params{{"approximate", std::string("tanh")}}, {port("x", {6})}},
            {{}, {port("x", {6})}},
            {{}, {port("x", {6})}},
            {Params{{"axes", Ints{1}}}, {port("x", {3, 4})}},
            {Params{{"axes", Ints{0, 1}}}, {port("x", {3, 4})}},
            {{}, {port("x", {3, 4})}},
            {{}, {port("x", {3, 4}), port("gamma", {4}), port("beta", {4})}},
            {{}, {port("x", {3, 4})}},
        };
        const OpLibrary &lib = OpLibrary::standard();
        const auto &[params, inputs] = rows[static_cast<size_t>(row)];
        const OpDef *def = lib.find(kind.toStdString());
        const Derivation d = derive_or_die(kind.toStdString(), params, inputs);
        const OpCost c = lib.cost(*def, params, d, inputs, d.signature.index_space);
        QCOMPARE(c.flops, flops);
        // FLOPs scale with the shard: half the index space, half the FLOPs.
        if (d.signature.index_space.rank() > 0 && d.signature.index_space.extent(0) % 2 == 0) {
            const ZRange half = d.signature.index_space.split(0, 2)[0];
            QCOMPARE(lib.cost(*def, params, d, inputs, half).flops, flops / 2);
        }
    }

    void linear_cost_bytes() {
        const OpLibrary &lib = OpLibrary::standard();
        const std::vector<PortTypes> in = {port("x", {8, 32}), port("w", {32, 16}), port("bias", {16})};
        const Derivation d = derive_or_die("linear", {}, in);
        const OpCost c = lib.cost(*lib.find("linear"), {}, d, in, ZRange::of_shape({4, 8}));
        // Rows 0..3 of x, columns 0..7 of w, 8 bias elements.
        QCOMPARE(c.bytes_read, 4.0 * (4 * 32 + 32 * 8 + 8));
        QCOMPARE(c.bytes_written, 4.0 * 32);
    }

    // ---- monoids -----------------------------------------------------------------------------
    void monoid_names() {
        const OpLibrary &lib = OpLibrary::standard();
        const std::map<std::string, std::string> expected = {
            {"matmul", "sum"},        {"linear", "sum"},     {"reduce_sum", "sum"},     {"reduce_mean", "mean"},
            {"reduce_max", "max"},    {"softmax", "logsumexp"}, {"layernorm", "moments"}, {"rmsnorm", "mean_square"}};
        for (const auto &[kind, name] : expected) {
            auto m = lib.find(kind)->monoid(lib.with_defaults(*lib.find(kind), {}));
            QVERIFY2(m.has_value(), kind.c_str());
            QCOMPARE(m->name, name);
            QCOMPARE(static_cast<int>(m->identity.size()), m->width);
        }
        for (const char *k : {"add", "relu", "gelu", "pow"}) QVERIFY(!lib.find(k)->monoid(Params{}).has_value());
    }

    void monoid_split_equals_whole_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<double>("whole");
        const std::vector<double> v = {3, -1, 4, 1, -5, 9, 2, -6};
        double sum = 0, sq = 0, mx = -1e300, se = 0;
        for (double x : v) {
            sum += x;
            sq += x * x;
            mx = std::max(mx, x);
        }
        for (double x : v) se += std::exp(x);
        const double mean = sum / 8;
        double var = 0;
        for (double x : v) var += (x - mean) * (x - mean);
        QTest::newRow("reduce_sum") << "reduce_sum" << sum;
        QTest::newRow("reduce_mean") << "reduce_mean" << mean;
        QTest::newRow("reduce_max") << "reduce_max" << mx;
        QTest::newRow("layernorm (variance)") << "layernorm" << var / 8;
        QTest::newRow("rmsnorm (mean square)") << "rmsnorm" << sq / 8;
        QTest::newRow("softmax (log-sum-exp)") << "softmax" << std::log(se);
    }
    void monoid_split_equals_whole() {
        QFETCH(QString, kind);
        QFETCH(double, whole);
        const OpLibrary &lib = OpLibrary::standard();
        const OpDef *def = lib.find(kind.toStdString());
        const ReductionMonoid m = *def->monoid(lib.with_defaults(*def, {}));
        const std::vector<double> v = {3, -1, 4, 1, -5, 9, 2, -6};
        // The whole fold.
        QVERIFY(std::abs(op_util::reduce_with(m, v) - whole) < 1e-12);
        // Split unevenly in three, fold each part, combine in a different order.
        std::vector<double> p1 = m.identity, p2 = m.identity, p3 = m.identity;
        for (size_t i = 0; i < v.size(); ++i) m.lift_into(i < 1 ? p1 : i < 6 ? p2 : p3, v[i]);
        std::vector<double> acc = m.identity;
        m.combine(acc, p3);
        m.combine(acc, p1);
        m.combine(acc, p2);
        QVERIFY2(std::abs(m.lower(acc) - whole) < 1e-12,
                 (std::to_string(m.lower(acc)) + " vs " + std::to_string(whole)).c_str());
        // The identity is neutral on both sides.
        std::vector<double> left = m.identity;
        m.combine(left, p2);
        QVERIFY(left == p2);
        std::vector<double> right = p2;
        m.combine(right, m.identity);
        QVERIFY(right == p2);
    }

    // Splitting a mean into two partial (n, Σx) and combining equals the mean of the
    // whole, through the reduce_mean op itself: two shards of a reduction over a
    // split axis, combined with the monoid.
    void reduce_mean_partials_combine() {
        const OpCase c{"mean", "reduce_mean", Params{{"axes", Ints{1}}}, {port("x", {2, 5})}};
        const RefArray x = array({2, 5}, {1, 2, 3, 4, 10, -1, -2, -3, -4, 0});
        const RefArray whole = run_y(c, {{x}});
        QCOMPARE(values(whole), (std::vector<double>{4, -2}));
        const ReductionMonoid m = op_util::mean_monoid();
        for (Coord row = 0; row < 2; ++row) {
            std::vector<double> a = m.identity, b = m.identity;
            for (Coord k = 0; k < 5; ++k) m.lift_into(k < 2 ? a : b, x.at(ZPoint{row, k}));
            m.combine(a, b);
            QCOMPARE(m.lower(a), whole.at(ZPoint{row, 0}));
        }
    }

    // ---- closed forms ------------------------------------------------------------------------
    void matmul_by_hand() {
        const OpCase c{"m", "matmul", {}, {port("a", {2, 2}), port("b", {2, 3})}};
        const RefArray y = run_y(c, {{array({2, 2}, {1, 2, 3, 4})}, {array({2, 3}, {5, 6, 7, 8, 9, 10})}});
        QCOMPARE(values(y), (std::vector<double>{21, 24, 27, 47, 54, 61}));
    }
    void matmul_broadcast_batch_by_hand() {
        // a: two 1x2 matrices; b: one 2x1 matrix broadcast over the batch.
        const OpCase c{"m", "matmul", {}, {port("a", {2, 1, 2}), port("b", {2, 1})}};
        const RefArray y = run_y(c, {{array({2, 1, 2}, {1, 2, 3, 4})}, {array({2, 1}, {10, 100})}});
        QCOMPARE(y.range.to_string(), std::string("[0:2, 0:1, 0:1]"));
        QCOMPARE(values(y), (std::vector<double>{210, 430}));
    }
    void linear_by_hand() {
        const OpCase c{"l", "linear", {}, {port("x", {2, 2}), port("w", {2, 2}), port("bias", {2})}};
        const RefArray y = run_y(
            c, {{array({2, 2}, {1, 2, 3, 4})}, {array({2, 2}, {1, 0, 0, 2})}, {array({2}, {0.5, -1})}});
        QCOMPARE(values(y), (std::vector<double>{1.5, 3, 3.5, 7}));
    }
    void broadcast_by_hand() {
        const OpCase c{"s", "sub", {}, {port("a", {2, 1}), port("b", {3})}};
        const RefArray y = run_y(c, {{array({2, 1}, {10, 20})}, {array({3}, {1, 2, 3})}});
        QCOMPARE(values(y), (std::vector<double>{9, 8, 7, 19, 18, 17}));
        const OpCase d{"d", "div", {}, {port("a", {}), port("b", {2})}};
        QCOMPARE(values(run_y(d, {{array({}, {1})}, {array({2}, {4, 8})}})), (std::vector<double>{0.25, 0.125}));
    }
    void activations_by_hand() {
        auto one = [](const char *kind, Params p, double x) {
            return run_y(OpCase{kind, kind, std::move(p), {port("x", {1})}}, {{array({1}, {x})}}).data[0];
        };
        QCOMPARE(one("relu", {}, -2), 0.0);
        QCOMPARE(one("relu", {}, 2), 2.0);
        QVERIFY(std::abs(one("gelu", {}, 1) - 0.8413447460685429) < 1e-15);
        QVERIFY(std::abs(one("gelu", Params{{"approximate", std::string("tanh")}}, 1) - 0.8411919906082768) < 1e-15);
        QVERIFY(std::abs(one("sigmoid", {}, 0) - 0.5) < 1e-15);
        QVERIFY(std::abs(one("tanh", {}, 0.5) - 0.46211715726000974) < 1e-15);
        QVERIFY(std::abs(one("exp", {}, 1) - 2.718281828459045) < 1e-15);
        QCOMPARE(one("sqrt", {}, 6.25), 2.5);
        QCOMPARE(one("pow", Params{{"exponent", 3.0}}, 2), 8.0);
        QCOMPARE(one("pow", Params{{"exponent", 0.5}}, 9), 3.0);
    }
    void reductions_by_hand() {
        const RefArray x = array({2, 3}, {1, 5, 2, -4, 0, 7});
        auto red = [&](const char *kind, Ints axes) {
            return values(run_y(OpCase{kind, kind, Params{{"axes", axes}, {"keepdims", false}}, {port("x", {2, 3})}},
                                {{x}}));
        };
        QCOMPARE(red("reduce_sum", {1}), (std::vector<double>{8, 3}));
        QCOMPARE(red("reduce_sum", {0}), (std::vector<double>{-3, 5, 9}));
        QCOMPARE(red("reduce_max", {1}), (std::vector<double>{5, 7}));
        QCOMPARE(red("reduce_max", {0, 1}), (std::vector<double>{7}));
        QCOMPARE(red("reduce_mean", {0, 1}), (std::vector<double>{11.0 / 6}));
    }
    void softmax_rows_sum_to_one() {
        for (std::int64_t axis : {0, 1, -1}) {
            const OpCase c{"s", "softmax", Params{{"axis", axis}}, {port("x", {3, 4})}};
            RefArray x(ZRange::of_shape({3, 4}));
            for (size_t k = 0; k < x.data.size(); ++k) x.data[k] = std::sin(3.0 * static_cast<double>(k)) * 5;
            const RefArray y = run_y(c, {{x}});
            const int a = axis == 0 ? 0 : 1;
            const int other = 1 - a;
            for (Coord o = 0; o < (other == 0 ? 3 : 4); ++o) {
                double sum = 0, denom = 0;
                for (Coord k = 0; k < (a == 0 ? 3 : 4); ++k) {
                    ZPoint p = a == 0 ? ZPoint{k, o} : ZPoint{o, k};
                    sum += y.at(p);
                    denom += std::exp(x.at(p));
                }
                QVERIFY2(std::abs(sum - 1) < 1e-12, std::to_string(sum).c_str());
                // And each element is exp(x)/Σexp(x).
                const ZPoint p0 = a == 0 ? ZPoint{0, o} : ZPoint{o, 0};
                QVERIFY(std::abs(y.at(p0) - std::exp(x.at(p0)) / denom) < 1e-12);
            }
        }
    }
    void layernorm_mean_zero_variance_one() {
        const OpCase c{"ln", "layernorm", Params{{"epsilon", 0.0}, {"axis", std::int64_t{1}}}, {port("x", {2, 2, 3})}};
        RefArray x(ZRange::of_shape({2, 2, 3}));
        for (size_t k = 0; k < x.data.size(); ++k) x.data[k] = std::cos(1.7 * static_cast<double>(k)) * 3 + 1;
        const RefArray y = run_y(c, {{x}});
        for (Coord b = 0; b < 2; ++b) {
            double s = 0, s2 = 0;
            for (Coord i = 0; i < 2; ++i)
                for (Coord j = 0; j < 3; ++j) {
                    s += y.at(ZPoint{b, i, j});
                    s2 += y.at(ZPoint{b, i, j}) * y.at(ZPoint{b, i, j});
                }
            QVERIFY2(std::abs(s / 6) < 1e-12, std::to_string(s / 6).c_str());
            QVERIFY2(std::abs(s2 / 6 - 1) < 1e-12, std::to_string(s2 / 6).c_str());
        }
        // gamma and beta scale and shift: y' = 2·y + 1 with gamma = 2, beta = 1.
        const OpCase cg{"ln", "layernorm", Params{{"epsilon", 0.0}, {"axis", std::int64_t{1}}},
                        {port("x", {2, 2, 3}), port("gamma", {2, 3}), port("beta", {2, 3})}};
        const RefArray yg =
            run_y(cg, {{x}, {RefArray(ZRange::of_shape({2, 3}), 2.0)}, {RefArray(ZRange::of_shape({2, 3}), 1.0)}});
        for (size_t k = 0; k < y.data.size(); ++k) QVERIFY(std::abs(yg.data[k] - (2 * y.data[k] + 1)) < 1e-12);
    }
    void rmsnorm_by_hand() {
        const OpCase c{"rms", "rmsnorm", Params{{"epsilon", 0.0}}, {port("x", {1, 2}), port("gamma", {2})}};
        const RefArray y = run_y(c, {{array({1, 2}, {3, 4})}, {array({2}, {1, 10})}});
        const double rms = std::sqrt((9.0 + 16.0) / 2);
        QVERIFY(std::abs(y.data[0] - 3 / rms) < 1e-15);
        QVERIFY(std::abs(y.data[1] - 40 / rms) < 1e-15);
    }

    // ---- graph-level evaluation --------------------------------------------------------------
    void evaluate_linear_relu() {
        const auto in = linear_relu_inputs();
        auto plain = evaluate_reference(linear_relu_graph(false), in, OpLibrary::standard());
        QVERIFY2(plain.has_value(), plain.has_value() ? "" : plain.error().c_str());
        auto sharded = evaluate_reference(linear_relu_graph(true), in, OpLibrary::standard());
        QVERIFY2(sharded.has_value(), sharded.has_value() ? "" : sharded.error().c_str());
        // Closed form.
        const RefArray &x = in.at(TensorId("x")), &w = in.at(TensorId("w")), &bias = in.at(TensorId("bias"));
        const RefArray &y = plain->at(TensorId("y"));
        QCOMPARE(y.range, ZRange::of_shape({4, 5}));
        int positives = 0;
        for (Coord b = 0; b < 4; ++b)
            for (Coord o = 0; o < 5; ++o) {
                double h = bias.at(ZPoint{o});
                for (Coord f = 0; f < 3; ++f) h += x.at(ZPoint{10 + b, f}) * w.at(ZPoint{f, o});
                QVERIFY(std::abs(y.at(ZPoint{b, o}) - std::max(h, 0.0)) < 1e-12);
                QVERIFY(std::abs(plain->at(TensorId("h")).at(ZPoint{b, o}) - h) < 1e-12);
                positives += h > 0;
            }
        QVERIFY(positives > 0 && positives < 20);  // relu really clips something
        // Sharded equals unsharded, bit for bit, for every tensor.
        for (const auto &[id, arr] : *plain) {
            QVERIFY(sharded->count(id));
            QVERIFY2(bitwise_equal({{arr}}, {{sharded->at(id)}}), id.value.c_str());
        }
        // Shards can be ignored on request.
        auto ignored = evaluate_reference(linear_relu_graph(true), in, OpLibrary::standard(), {false});
        QVERIFY(ignored.has_value());
        QVERIFY(bitwise_equal({{ignored->at(TensorId("y"))}}, {{y}}));
    }

    void evaluate_leaves_unsharded_gaps_unwritten() {
        // A shard list that misses part of the index space leaves those outputs NaN,
        // so a broken sharding cannot pass as equal to the reference.
        Graph g = linear_relu_graph(true);
        Operation act = *g.find_op(OpId("act"));
        act.shards.pop_back();
        g.put_op(std::move(act));
        auto r = evaluate_reference(g, linear_relu_inputs(), OpLibrary::standard());
        QVERIFY(r.has_value());
        QVERIFY(std::isnan(r->at(TensorId("y")).at(ZPoint{0, 4})));
        QVERIFY(!std::isnan(r->at(TensorId("y")).at(ZPoint{0, 0})));
    }

    void evaluate_errors() {
        auto in = linear_relu_inputs();
        in.erase(TensorId("w"));
        auto missing = evaluate_reference(linear_relu_graph(false), in, OpLibrary::standard());
        QVERIFY(!missing.has_value());
        QCOMPARE(missing.error(), std::string("tensor 'w' has no value: it is not given and no operation writes it"));

        auto wrong = linear_relu_inputs();
        wrong[TensorId("x")] = RefArray(ZRange::of_shape({4, 3}));
        auto r = evaluate_reference(linear_relu_graph(false), wrong, OpLibrary::standard());
        QVERIFY(!r.has_value());
        QCOMPARE(r.error(), std::string("the value given for tensor 'x' spans [0:4, 0:3] but the tensor spans "
                                        "[10:14, 0:3]"));

        Graph g = linear_relu_graph(false);
        Tensor w = *g.find_tensor(TensorId("w"));
        w.range = ZRange::of_shape({4, 5});
        g.put_tensor(w);
        Operation fc = *g.find_op(OpId("fc"));
        fc.inputs[1].selections[0].range = ZRange::of_shape({4, 5});
        g.put_op(fc);
        auto in2 = linear_relu_inputs();
        in2[TensorId("w")] = RefArray(ZRange::of_shape({4, 5}));
        auto bad = evaluate_reference(g, in2, OpLibrary::standard());
        QVERIFY(!bad.has_value());
        QCOMPARE(bad.error(), std::string("operation 'fc': linear: w has 4 rows but x has 3 features (inputs.w[0])"));
    }
};

QTEST_GUILESS_MAIN(TestOpsElementwiseLinalg)
#include "test_ops_elementwise_linalg.moc"
