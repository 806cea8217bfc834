// The CPU executor and its matmul/elementwise kernels: each kernel against the
// reference kernel (broadcast, batch broadcast, strided selection views, uneven
// shard sub-ranges, bf16), fused epilogues against unfused runs, the example
// projects sharded vs unsharded vs the oracle, the buffer plan, cancellation,
// progress and error messages.
#include <QtTest/QtTest>

#include <atomic>
#include <cmath>
#include <filesystem>

#include "graph/validate.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "kernel_check.h"
#include "ops/evaluate.h"
#include "runtime/cpu/cpu_isa.h"
#include "passes/shard.h"
#include "runtime/cpu/executor.h"
#include "test_projects.h"
#include "verify/verify.h"


using namespace tapestry;
using tapestry::test::KernelCase;
using tapestry::cpu::Epilogue;

Q_DECLARE_METATYPE(tapestry::test::KernelCase)

namespace {

std::pair<std::string, std::vector<ZPoint>> port(std::string name, ZPoint shape) {
    return {std::move(name), {std::move(shape)}};
}

KernelCase kcase(std::string kind, std::vector<std::pair<std::string, std::vector<ZPoint>>> inputs, Params params = {}) {
    KernelCase c;
    c.kind = std::move(kind);
    c.inputs = std::move(inputs);
    c.params = std::move(params);
    return c;
}

KernelCase with_range(KernelCase c, ZRange r) {
    c.index_range = std::move(r);
    return c;
}

// An operand of `shape` whose every third element is NaN, the others spread over
// [-3, 3): NaN must come out NaN on every path (oneDNN, loops, fused chains).
TensorData with_nans(const ZPoint &shape, int phase = 0) {
    TensorData d(DType::f32, shape);
    for (std::int64_t i = 0; i < d.element_count(); ++i)
        d.set(i, (i + phase) % 3 == 0 ? std::nan("") : -3.0 + 6.0 * double((i * 7 + phase) % 13) / 13.0);
    return d;
}

// Graph building.
void add_tensor(Graph &g, const std::string &id, ZPoint shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    g.put_tensor(std::move(t));
}

TensorSelection whole(const Graph &g, const std::string &id) {
    return TensorSelection{TensorId(id), g.find_tensor(TensorId(id))->range};
}

void add_op(Graph &g, const std::string &id, const std::string &kind, std::vector<std::pair<std::string, std::string>> ins,
            const std::string &out, Params params = {}) {
    Operation op;
    op.id = OpId(id);
    op.name = id;
    op.kind = kind;
    op.params = std::move(params);
    for (const auto &[port, tensor] : ins) op.inputs.push_back(PortBinding{port, {whole(g, tensor)}});
    op.outputs.push_back(PortBinding{"y", {whole(g, out)}});
    g.put_op(std::move(op));
}

// Splits an operation's index space along `dim` into `parts` (uneven allowed).
void shard(Graph &g, const std::string &id, int dim, int parts) {
    const OpLibrary &lib = OpLibrary::standard();
    Operation op = *g.find_op(OpId(id));
    auto d = resolve(g, op, lib);
    QVERIFY(d.has_value());
    int n = 0;
    for (const ZRange &r : d->signature.index_space.split(dim, parts)) {
        Shard s;
        s.id = ShardId(id + "_s" + std::to_string(n++));
        s.index = r;
        op.shards.push_back(s);
    }
    g.put_op(std::move(op));
}

// The largest difference relative to the reference's largest magnitude (at least
// 1): f32 sums of many terms err in proportion to the terms, not to the result.
double rel_diff(const TensorData &a, const TensorData &b) {
    double worst = 0, scale = 1;
    for (std::int64_t i = 0; i < a.element_count(); ++i) {
        const double x = a.get(i), y = b.get(i);
        worst = std::max(worst, std::isnan(x - y) ? INFINITY : std::abs(x - y));
        scale = std::max(scale, std::abs(y));
    }
    return worst / scale;
}

double rel_diff(const TensorData &a, const RefArray &b) {
    double worst = 0, scale = 1;
    for (std::int64_t i = 0; i < a.element_count(); ++i) {
        const double x = a.get(i), y = b.data[static_cast<size_t>(i)];
        worst = std::max(worst, std::isnan(x - y) ? INFINITY : std::abs(x - y));
        scale = std::max(scale, std::abs(y));
    }
    return worst / scale;
}

Expected<cpu::RunResult, std::string> run_graph(const Graph &g, const std::map<TensorId, TensorData> &inputs,
                                                cpu::CpuOptions options = {}, const cpu::RunControl &control = {}) {
    auto p = cpu::Program::compile(g, OpLibrary::standard(), options);
    if (!p) return unexpected(p.error());
    return (*p)->run(inputs, control);
}

// The shard specs example_projects applies to each example project (by file stem).
std::map<std::string, QStringList> example_shard_specs() {
    return {{"attention", {"attention:1=2", "proj_q:0=2"}},
            {"convnet", {"conv1:0=2", "conv2:1=2"}},
            {"gpt2_block", {"c_fc:2=2", "attention:1=3"}},
            {"mlp", {"fc2:1=2"}},
            {"mlp_bf16", {"fc2:1=2"}}};
}

std::map<TensorId, RefArray> to_ref_inputs(const Graph &g, const std::map<TensorId, TensorData> &inputs) {
    std::map<TensorId, RefArray> out;
    for (const auto &[id, d] : inputs) {
        RefArray a(g.find_tensor(id)->range);
        for (std::int64_t i = 0; i < d.element_count(); ++i) a.data[static_cast<size_t>(i)] = d.get(i);
        out[id] = std::move(a);
    }
    for (const TensorPtr &t : g.tensors())
        if (t->value && !out.count(t->id)) {
            RefArray a(t->range);
            for (std::int64_t i = 0; i < t->value->element_count(); ++i) a.data[static_cast<size_t>(i)] = t->value->get(i);
            out[t->id] = std::move(a);
        }
    return out;
}

// make_random_inputs, except that big float tensors are filled by a cheap
// xorshift generator (uniform in [-1, 1)): the examples hold ~50M parameters,
// which the element-by-element generator takes seconds for in a debug build.
std::map<TensorId, TensorData> quick_inputs(const Graph &g, std::uint64_t seed) {
    std::int64_t total = 0;
    bool floats_only = true;
    for (const TensorPtr &t : g.tensors())
        if ((t->role == TensorRole::input || t->role == TensorRole::parameter) && !t->value) {
            total += t->range.size();
            floats_only = floats_only && t->dtype == DType::f32;
        }
    if (total < (1 << 20) || !floats_only) return make_random_inputs(g, seed);
    std::map<TensorId, TensorData> out;
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (const TensorPtr &t : g.tensors()) {
        if ((t->role != TensorRole::input && t->role != TensorRole::parameter) || t->value) continue;
        TensorData d(t->dtype, t->shape());
        auto v = d.as<float>();
        for (float &x : v) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            x = static_cast<float>(static_cast<double>(state >> 40) / static_cast<double>(1ull << 23) - 1.0);
        }
        out[t->id] = std::move(d);
    }
    return out;
}

// A small MLP: x[b, d] → linear+gelu → linear+relu → linear (+ residual add).
// conv → relu → max pool → conv → avg pool → flatten → linear on [batch, 3, 12, 12],
// with constant weights.
Graph conv_chain(Coord batch) {
    Graph g;
    add_tensor(g, "x", ZPoint{batch, 3, 12, 12}, TensorRole::input);
    auto param = [&](const std::string &id, ZPoint shape, double phase) {
        add_tensor(g, id, shape, TensorRole::parameter);
        Tensor t = *g.find_tensor(TensorId(id));
        auto v = std::make_shared<TensorData>(DType::f32, shape);
        auto f = v->as<float>();
        for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(0.4 * std::sin(0.37 * double(i) + phase));
        t.value = v;
        g.put_tensor(std::move(t));
    };
    param("w1", ZPoint{16, 3, 3, 3}, 0.1);
    param("b1", ZPoint{16}, 0.2);
    param("w2", ZPoint{8, 16, 3, 3}, 0.3);
    param("wl", ZPoint{72, 5}, 0.4);
    add_tensor(g, "c1", ZPoint{batch, 16, 12, 12}, TensorRole::intermediate);
    add_tensor(g, "r1", ZPoint{batch, 16, 12, 12}, TensorRole::intermediate);
    add_tensor(g, "p1", ZPoint{batch, 16, 6, 6}, TensorRole::intermediate);
    add_tensor(g, "c2", ZPoint{batch, 8, 6, 6}, TensorRole::intermediate);
    add_tensor(g, "p2", ZPoint{batch, 8, 3, 3}, TensorRole::intermediate);
    add_tensor(g, "f", ZPoint{batch, 72}, TensorRole::intermediate);
    add_tensor(g, "y", ZPoint{batch, 5}, TensorRole::output);
    const Params conv{{"padding", std::vector<std::int64_t>{1, 1, 1, 1}}};
    add_op(g, "conv1", "conv2d", {{"x", "x"}, {"w", "w1"}, {"bias", "b1"}}, "c1", conv);
    add_op(g, "relu1", "relu", {{"x", "c1"}}, "r1");
    add_op(g, "pool1", "max_pool2d", {{"x", "r1"}}, "p1", Params{{"kernel", std::vector<std::int64_t>{2, 2}}});
    add_op(g, "conv2", "conv2d", {{"x", "p1"}, {"w", "w2"}}, "c2", conv);
    add_op(g, "pool2", "avg_pool2d", {{"x", "c2"}}, "p2", Params{{"kernel", std::vector<std::int64_t>{2, 2}}});
    add_op(g, "flat", "reshape", {{"x", "p2"}}, "f", Params{{"shape", std::vector<std::int64_t>{batch, 72}}});
    add_op(g, "fc", "linear", {{"x", "f"}, {"w", "wl"}}, "y");
    return g;
}

Graph small_mlp(Coord b, Coord d, Coord h, bool residual) {
    Graph g;
    add_tensor(g, "x", {b, d}, TensorRole::input);
    add_tensor(g, "w1", {d, h}, TensorRole::parameter);
    add_tensor(g, "b1", {h}, TensorRole::parameter);
    add_tensor(g, "h1", {b, h}, TensorRole::intermediate);
    add_tensor(g, "a1", {b, h}, TensorRole::intermediate);
    add_tensor(g, "w2", {h, h}, TensorRole::parameter);
    add_tensor(g, "b2", {h}, TensorRole::parameter);
    add_tensor(g, "h2", {b, h}, TensorRole::intermediate);
    add_tensor(g, "a2", {b, h}, TensorRole::intermediate);
    add_tensor(g, "w3", {h, d}, TensorRole::parameter);
    add_tensor(g, "h3", {b, d}, residual ? TensorRole::intermediate : TensorRole::output);
    add_op(g, "fc1", "linear", {{"x", "x"}, {"w", "w1"}, {"bias", "b1"}}, "h1");
    add_op(g, "gelu1", "gelu", {{"x", "h1"}}, "a1");
    add_op(g, "fc2", "linear", {{"x", "a1"}, {"w", "w2"}, {"bias", "b2"}}, "h2");
    add_op(g, "relu2", "relu", {{"x", "h2"}}, "a2");
    add_op(g, "fc3", "matmul", {{"a", "a2"}, {"b", "w3"}}, "h3");
    if (residual) {
        add_tensor(g, "y", {b, d}, TensorRole::output);
        add_op(g, "res", "add", {{"a", "h3"}, {"b", "x"}}, "y");
    }
    return g;
}

// An op kind with no CPU kernel (the op library knows it, the executor does not).
class MysteryOp : public OpDef {
public:
    std::string_view kind() const override { return "mystery"; }
    std::string_view category() const override { return "elementwise"; }
    std::string_view summary() const override { return "y = x"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "", false, false}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "", false, false}}; }
    std::vector<ParamSpec> params() const override { return {}; }
    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &in) const override {
        const OperandType &x = in[0].operands[0];
        Derivation d;
        d.outputs.push_back({"y", {x}});
        d.signature.index_space = ZRange::of_shape(x.shape);
        d.signature.inputs.push_back({"x", {{IndexProjection::identity(x.shape.rank()), false}}});
        d.signature.outputs.push_back({"y", {{IndexProjection::identity(x.shape.rank()), false}}});
        return d;
    }
    double flops_per_point(const Params &, const Derivation &) const override { return 0; }
    void reference(const RefContext &ctx) const override {
        ctx.index_range.for_each_point([&](const ZPoint &p) { ctx.write(0, p, ctx.read(0, p)); });
    }
};

}  // namespace

class TestCpuExecutor : public QObject {
    Q_OBJECT

private slots:
    void kernel_matches_reference_data() {
        QTest::addColumn<KernelCase>("c");
        const Params tanh_gelu{{"approximate", std::string("tanh")}};
        QTest::newRow("matmul") << kcase("matmul", {port("a", {7, 5}), port("b", {5, 9})});
        QTest::newRow("matmul/batch") << kcase("matmul", {port("a", {3, 4, 6}), port("b", {3, 6, 5})});
        QTest::newRow("matmul/batch-broadcast")
            << kcase("matmul", {port("a", {2, 1, 4, 6}), port("b", {3, 6, 5})});
        QTest::newRow("matmul/weights-shared") << kcase("matmul", {port("a", {2, 3, 4, 6}), port("b", {6, 5})});
        QTest::newRow("matmul/uneven-shard")
            << with_range(kcase("matmul", {port("a", {3, 11, 6}), port("b", {3, 6, 13})}), ZRange({1, 2, 3}, {3, 7, 12}));
        QTest::newRow("matmul/shard-of-broadcast")
            << with_range(kcase("matmul", {port("a", {2, 4, 6}), port("b", {6, 9})}), ZRange({1, 1, 0}, {2, 4, 5}));
        QTest::newRow("linear") << kcase("linear", {port("x", {6, 8}), port("w", {8, 5}), port("bias", {5})});
        QTest::newRow("linear/no-bias") << kcase("linear", {port("x", {2, 3, 8}), port("w", {8, 5})});
        QTest::newRow("linear/3d-shard")
            << with_range(kcase("linear", {port("x", {3, 5, 8}), port("w", {8, 7}), port("bias", {7})}),
                          ZRange({0, 1, 2}, {3, 4, 7}));
        QTest::newRow("linear/moderate")
            << kcase("linear", {port("x", {64, 256}), port("w", {256, 192}), port("bias", {192})});
        for (const char *k : {"relu", "sigmoid", "tanh", "exp", "erf"}) {
            QTest::newRow(k) << kcase(k, {port("x", {4, 5, 6})});
            QTest::newRow((std::string(k) + "/strided").c_str())
                << with_range(kcase(k, {port("x", {5, 9})}), ZRange({1, 2}, {4, 7}));
        }
        // The kinds added for ONNX models: through oneDNN on dense views (neg, abs,
        // reciprocal, leaky_relu, elu, hard_swish, clip) or the loop (log, selu,
        // softplus, softsign, hard_sigmoid), and the loop on strided views.
        for (const char *k : {"neg", "abs", "leaky_relu", "elu", "selu", "softplus", "softsign", "hard_sigmoid",
                              "hard_swish", "clip"}) {
            KernelCase c = kcase(k, {port("x", {4, 5, 6})});
            c.lo = -7;  // past hard_swish's and hard_sigmoid's corners
            c.hi = 7;
            QTest::newRow(k) << c;
            KernelCase strided = kcase(k, {port("x", {5, 9})});
            strided.lo = -7;
            strided.hi = 7;
            QTest::newRow((std::string(k) + "/strided").c_str()) << with_range(strided, ZRange({1, 2}, {4, 7}));
        }
        for (const char *k : {"log", "reciprocal"}) {
            KernelCase c = kcase(k, {port("x", {4, 9})});
            c.lo = 0.1;
            c.hi = 4;
            QTest::newRow(k) << c;
            QTest::newRow((std::string(k) + "/strided").c_str()) << with_range(c, ZRange({1, 1}, {3, 8}));
        }
        QTest::newRow("clip/bounds") << kcase("clip", {port("x", {4, 9})}, Params{{"min", -0.3}, {"max", 0.2}});
        QTest::newRow("clip/min-only") << kcase("clip", {port("x", {4, 9})}, Params{{"min", 0.0}});
        QTest::newRow("leaky_relu/alpha") << kcase("leaky_relu", {port("x", {4, 9})}, Params{{"alpha", 0.3}});
        QTest::newRow("elu/alpha") << kcase("elu", {port("x", {4, 9})}, Params{{"alpha", 0.5}});
        QTest::newRow("selu/constants") << kcase("selu", {port("x", {4, 9})}, Params{{"alpha", 1.5}, {"gamma", 2.0}});
        QTest::newRow("hard_sigmoid/constants")
            << kcase("hard_sigmoid", {port("x", {4, 9})}, Params{{"alpha", 0.5}, {"beta", 0.25}});
        for (const char *k : {"relu", "leaky_relu", "elu", "selu", "abs", "neg", "softplus", "softsign",
                              "hard_sigmoid", "hard_swish", "clip", "sigmoid", "tanh"}) {
            for (bool strided : {false, true}) {
                KernelCase c = kcase(k, {port("x", {5, 9})}, std::string(k) == "clip" ? Params{{"min", -1.0}, {"max", 1.0}}
                                                                                        : Params{});
                c.data["x"] = {with_nans(ZPoint{5, 9})};
                if (strided) c.index_range = ZRange({1, 2}, {4, 7});
                QTest::newRow((std::string(k) + (strided ? "/nan-strided" : "/nan")).c_str()) << c;
            }
        }
        for (const char *k : {"max", "min"}) {
            KernelCase c = kcase(k, {port("a", {4, 6}), port("b", {4, 6})});
            c.data["a"] = {with_nans(ZPoint{4, 6})};
            c.data["b"] = {with_nans(ZPoint{4, 6}, 1)};
            QTest::newRow((std::string(k) + "/nan").c_str()) << c;
            KernelCase row = kcase(k, {port("a", {3, 6}), port("b", {6})});
            row.data["a"] = {with_nans(ZPoint{3, 6})};
            row.data["b"] = {with_nans(ZPoint{6}, 2)};
            QTest::newRow((std::string(k) + "/nan-broadcast").c_str()) << row;
        }
        QTest::newRow("gelu") << kcase("gelu", {port("x", {3, 70})});
        QTest::newRow("gelu/tanh") << kcase("gelu", {port("x", {3, 70})}, tanh_gelu);
        QTest::newRow("gelu/strided") << with_range(kcase("gelu", {port("x", {6, 8})}), ZRange({0, 3}, {6, 8}));
        {
            KernelCase c = kcase("sqrt", {port("x", {4, 9})});
            c.lo = 0.1;
            c.hi = 4;
            QTest::newRow("sqrt") << c;
            KernelCase p = kcase("pow", {port("x", {4, 9})}, Params{{"exponent", 1.5}});
            p.lo = 0.1;
            p.hi = 3;
            QTest::newRow("pow") << p;
            QTest::newRow("pow/strided") << with_range(p, ZRange({1, 1}, {3, 8}));
        }
        for (const char *k : {"add", "sub", "mul", "div", "max", "min"}) {
            KernelCase c = kcase(k, {port("a", {4, 6}), port("b", {4, 6})});
            if (std::string(k) == "div") c.rtol = 1e-3;
            QTest::newRow(k) << c;
            KernelCase row = kcase(k, {port("a", {3, 4, 6}), port("b", {6})});
            if (std::string(k) == "div") row.rtol = 1e-3;
            QTest::newRow((std::string(k) + "/broadcast-b").c_str()) << row;
            KernelCase left = kcase(k, {port("a", {1, 6}), port("b", {5, 6})});
            if (std::string(k) == "div") left.rtol = 1e-3;
            QTest::newRow((std::string(k) + "/broadcast-a").c_str()) << left;
        }
        QTest::newRow("add/both-broadcast") << kcase("add", {port("a", {4, 1}), port("b", {1, 5})});
        QTest::newRow("mul/broadcast-shard")
            << with_range(kcase("mul", {port("a", {5, 7}), port("b", {5, 1})}), ZRange({1, 2}, {4, 7}));
        QTest::newRow("add/3d-shard")
            << with_range(kcase("add", {port("a", {2, 5, 7}), port("b", {1, 5, 7})}), ZRange({1, 0, 3}, {2, 5, 6}));
        {
            KernelCase c = kcase("linear", {port("x", {5, 16}), port("w", {16, 8}), port("bias", {8})});
            c.dtype = DType::bf16;
            c.rtol = 2e-2;
            c.atol = 2e-2;
            QTest::newRow("linear/bf16") << c;
            KernelCase r = kcase("relu", {port("x", {4, 33})});
            r.dtype = DType::bf16;
            QTest::newRow("relu/bf16") << r;
            KernelCase a = kcase("add", {port("a", {4, 6}), port("b", {6})});
            a.dtype = DType::bf16;
            a.rtol = 1e-2;
            QTest::newRow("add/bf16") << a;
        }
        {
            KernelCase c = kcase("cast", {port("x", {3, 7})}, Params{{"to", std::string("bf16")}});
            QTest::newRow("cast/f32-bf16") << c;
            KernelCase i = kcase("cast", {port("x", {3, 7})}, Params{{"to", std::string("i32")}});
            i.lo = -50;
            i.hi = 50;
            QTest::newRow("cast/f32-i32") << i;
        }
    }
    void kernel_matches_reference() {
        QFETCH(KernelCase, c);
        if (c.kind == "cast" || c.kind == "erf")
            if (!OpLibrary::standard().find(c.kind)) QSKIP("kind not in this op library");
        const auto r = test::check_kernel(c);
        QVERIFY2(r.ok, r.message.c_str());
        QVERIFY(r.compared > 0);
    }

    void fused_kernel_matches_reference_data() {
        QTest::addColumn<KernelCase>("c");
        Epilogue gelu{"gelu", Params{{"approximate", std::string("none")}}, -1, {}};
        Epilogue gelu_tanh{"gelu", Params{{"approximate", std::string("tanh")}}, -1, {}};
        Epilogue relu{"relu", Params{}, -1, {}};
        KernelCase lin = kcase("linear", {port("x", {6, 8}), port("w", {8, 5}), port("bias", {5})});
        KernelCase a = lin;
        a.epilogues = {gelu};
        QTest::newRow("linear+gelu") << a;
        KernelCase b = lin;
        b.epilogues = {relu};
        QTest::newRow("linear+relu") << b;
        KernelCase t = lin;
        t.epilogues = {gelu_tanh};
        QTest::newRow("linear+gelu_tanh") << t;
        // matmul + residual: the extra operand projects identically from the index space.
        KernelCase m = kcase("matmul", {port("a", {7, 4}), port("b", {4, 9})});
        m.epilogues = {Epilogue{"add", Params{}, 0, {IndexProjection::identity(2), false}}};
        m.epilogue_shapes = {ZPoint{7, 9}};
        QTest::newRow("matmul+add") << m;
        KernelCase ms = m;
        ms.index_range = ZRange({2, 1}, {6, 8});
        QTest::newRow("matmul+add/shard") << ms;
        // An exported Linear: a bias-less product, then Add of one value per column
        // (folded into the primitive's bias argument), then GELU; whole and sharded.
        IndexProjection column(AffineMap(ZMatrix({{0, 1}}), ZPoint{0}), ZPoint{1});
        KernelCase bias_add = kcase("matmul", {port("a", {12, 16}), port("b", {16, 10})});
        bias_add.epilogues = {Epilogue{"add", Params{}, 0, {column, false}}, gelu_tanh};
        bias_add.epilogue_shapes = {ZPoint{10}};
        QTest::newRow("matmul+column add+gelu_tanh") << bias_add;
        bias_add.index_range = ZRange({3, 2}, {9, 7});
        QTest::newRow("matmul+column add+gelu_tanh/shard") << bias_add;
        KernelCase big = kcase("linear", {port("x", {64, 128}), port("w", {128, 256}), port("bias", {256})});
        big.epilogues = {gelu};
        QTest::newRow("linear+gelu/moderate") << big;
        KernelCase bigm = kcase("matmul", {port("a", {64, 256}), port("b", {256, 128})});
        bigm.lo = -8;
        bigm.hi = 8;
        bigm.atol = 2e-4;  // |partial sums| reach ~300: f32 rounding of the sum, not of the result
        QTest::newRow("matmul/moderate-large-values") << bigm;
        KernelCase chain = lin;
        chain.epilogues = {Epilogue{"mul", Params{}, 0, {IndexProjection::identity(2), false}}, relu};
        chain.epilogue_shapes = {ZPoint{6, 5}};
        QTest::newRow("linear+mul+relu") << chain;
        // The activations of ONNX CNNs as oneDNN post-ops, with their constants.
        KernelCase leaky = lin;
        leaky.epilogues = {Epilogue{"leaky_relu", Params{{"alpha", 0.2}}, -1, {}}};
        QTest::newRow("linear+leaky_relu") << leaky;
        KernelCase elu = lin;
        elu.epilogues = {Epilogue{"elu", Params{{"alpha", 0.5}}, -1, {}}};
        QTest::newRow("linear+elu") << elu;
        KernelCase hswish = lin;
        hswish.lo = -6;
        hswish.hi = 6;
        hswish.epilogues = {Epilogue{"hard_swish", Params{}, -1, {}}};
        QTest::newRow("linear+hard_swish") << hswish;
    }
    void fused_kernel_matches_reference() {
        QFETCH(KernelCase, c);
        const auto r = test::check_kernel(c);
        QVERIFY2(r.ok, r.message.c_str());
    }

    // Constant parameters (with values) are prepacked at compile: conv2d and linear
    // weights in oneDNN's chosen layout, and the 4-D intermediates between conv2d
    // and pool steps stored channels-last. Runs match the oracle; a caller's value
    // for a constant parameter overrides it (and the next run without one is back
    // on the prepacked weights); channels_last off gives the same values.
    void prepacked_weights_and_channels_last_match_the_oracle() {
        const Graph g = conv_chain(4);
        QVERIFY(validate(g, OpLibrary::standard()).empty());

        auto inputs = make_random_inputs(g, 3);
        QVERIFY(inputs.count(TensorId("x")) && !inputs.count(TensorId("w1")));
        auto oracle = [&](const std::map<TensorId, TensorData> &given) {
            auto out = evaluate_reference(g, to_ref_inputs(g, given), OpLibrary::standard());
            if (!out) qFatal("oracle: %s", out.error().c_str());
            return out->at(TensorId("y"));
        };
        auto p = cpu::Program::compile(g, OpLibrary::standard());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        const std::string text = (*p)->describe();
        for (const char *t : {"p1 (intermediate", "c2 (intermediate"}) {
            const auto at = text.find(t);
            QVERIFY2(at != std::string::npos && text.find("channels-last", at) < text.find('\n', at), text.c_str());
        }
        // Whether a kernel prepacks its constant weights is oneDNN's choice for this
        // ISA; what must hold everywhere is below: prepacked or not, the values are
        // the oracle's, and a caller's values for the weights win.
        qInfo("oneDNN ISA: %s", cpu::cpu_isa().name.c_str());
        auto first = (*p)->run(inputs);
        QVERIFY2(first.has_value(), first ? "" : first.error().c_str());
        QVERIFY(rel_diff(first->outputs.at(TensorId("y")), oracle(inputs)) < 1e-5);

        // The caller's values for the constant weights win over the prepacked ones.
        auto overridden = inputs;
        for (const char *id : {"w1", "w2", "wl"}) {
            TensorData d = *g.find_tensor(TensorId(id))->value;
            for (float &v : d.as<float>()) v = -0.5f * v + 0.01f;
            overridden[TensorId(id)] = std::move(d);
        }
        auto second = (*p)->run(overridden);
        QVERIFY2(second.has_value(), second ? "" : second.error().c_str());
        QVERIFY(rel_diff(second->outputs.at(TensorId("y")), oracle(overridden)) < 1e-5);
        QVERIFY(rel_diff(second->outputs.at(TensorId("y")), first->outputs.at(TensorId("y"))) > 1e-3);
        auto third = (*p)->run(inputs);
        QVERIFY2(third.has_value(), third ? "" : third.error().c_str());
        QCOMPARE(third->outputs.at(TensorId("y")).bytes, first->outputs.at(TensorId("y")).bytes);

        cpu::CpuOptions plain;
        plain.channels_last = false;
        auto fourth = run_graph(g, inputs, plain);
        QVERIFY2(fourth.has_value(), fourth ? "" : fourth.error().c_str());
        QVERIFY(rel_diff(fourth->outputs.at(TensorId("y")), first->outputs.at(TensorId("y"))) < 1e-5);
    }

    // Batch tiling (CpuOptions::tile_bytes): the conv chain runs tile by tile of
    // the batch, depth-first (every step of tile 1 before tile 2), one thread per
    // tile; the intermediates only the chain reads are rings of tiles, so the arena
    // shrinks; the values equal the untiled run's and the oracle's, run after run.
    void batch_tiles_run_depth_first_and_match_untiled() {
        const Graph g = conv_chain(9);
        const auto inputs = make_random_inputs(g, 5);
        cpu::CpuOptions tiled, untiled;
        tiled.tile_bytes = 1;  // as small as it gets: one image per tile
        untiled.tile_bytes = 0;
        auto p = cpu::Program::compile(g, OpLibrary::standard(), tiled);
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        const std::string text = (*p)->describe();
        // conv1 (+relu1), pool1, conv2, pool2, flat, fc: 6 steps per tile, 9 tiles.
        QVERIFY2(text.find("CPU program: 54 steps") != std::string::npos, text.c_str());
        QVERIFY2(text.find("step 0: conv2d conv1 tile 1/9 + fused relu1 [1 thread]") != std::string::npos, text.c_str());
        QVERIFY2(text.find("step 1: max_pool2d pool1 tile 1/9 [1 thread]") != std::string::npos, text.c_str());
        QVERIFY2(text.find("step 5: linear fc tile 1/9 [1 thread]") != std::string::npos, text.c_str());
        QVERIFY2(text.find("step 6: conv2d conv1 tile 2/9") != std::string::npos, text.c_str());
        for (const char *t : {"r1 (intermediate", "p1 (intermediate", "c2 (intermediate"}) {
            const auto at = text.find(t);
            QVERIFY2(at != std::string::npos && text.find("a ring of 4 batch tiles", at) < text.find('\n', at),
                     text.c_str());
        }
        // y is the graph's output: written whole, never a ring.
        const auto y_at = text.find("y (output");
        QVERIFY2(y_at != std::string::npos && text.find("output buffer", y_at) < text.find('\n', y_at), text.c_str());

        auto a = (*p)->run(inputs);
        QVERIFY2(a.has_value(), a ? "" : a.error().c_str());
        auto b = run_graph(g, inputs, untiled);
        QVERIFY2(b.has_value(), b ? "" : b.error().c_str());
        QCOMPARE(a->steps.size(), size_t{54});
        QCOMPARE(b->steps.size(), size_t{6});
        int tiles_seen = 0;
        for (const auto &st : a->steps) {
            QVERIFY(st.shard.empty());
            QCOMPARE(st.tiles, 9);
            tiles_seen += st.tile == 8 ? 1 : 0;
        }
        QCOMPARE(tiles_seen, 6);
        QVERIFY2(a->arena_bytes < b->arena_bytes,
                 qPrintable(QString("tiled arena %1 B, untiled %2 B").arg(a->arena_bytes).arg(b->arena_bytes)));
        const TensorData &ya = a->outputs.at(TensorId("y"));
        QVERIFY(rel_diff(ya, b->outputs.at(TensorId("y"))) < 1e-5);
        auto oracle = evaluate_reference(g, to_ref_inputs(g, inputs), OpLibrary::standard());
        QVERIFY2(oracle.has_value(), oracle ? "" : oracle.error().c_str());
        QVERIFY(rel_diff(ya, oracle->at(TensorId("y"))) < 1e-5);
        for (int again = 0; again < 3; ++again) {
            auto c = (*p)->run(inputs);
            QVERIFY2(c.has_value(), c ? "" : c.error().c_str());
            QCOMPARE(c->outputs.at(TensorId("y")).bytes, ya.bytes);
        }
    }

    // Tiling leaves alone what it cannot help: chains whose weights are big (every
    // tile would read them again), sharded operations, and small tensors.
    void batch_tiling_skips_big_weights_shards_and_small_tensors() {
        cpu::CpuOptions tiled;
        tiled.tile_bytes = 1;
        auto described = [&](const Graph &g, const cpu::CpuOptions &o) {
            auto p = cpu::Program::compile(g, OpLibrary::standard(), o);
            return p ? (*p)->describe() : "compile failed: " + p.error();
        };
        // fc2's 1024×1024 weights are 4 MiB: it runs whole, and fc1 (+gelu1) and fc3
        // on either side of it are no chain of two steps.
        const std::string big = described(small_mlp(16, 64, 1024, false), tiled);
        QVERIFY2(big.find("linear fc2 + fused relu2 [all threads]") != std::string::npos, big.c_str());
        QVERIFY2(big.find(" tile ") == std::string::npos, big.c_str());
        // A sharded op runs its shards, not tiles.
        Graph sharded = conv_chain(8);
        shard(sharded, "pool1", 0, 2);
        const std::string sh = described(sharded, tiled);
        QVERIFY2(sh.find("pool1 shard") != std::string::npos && sh.find("pool1 tile") == std::string::npos, sh.c_str());
        // The default target (512 KiB) leaves a chain of a few KiB whole.
        const std::string small = described(conv_chain(8), cpu::CpuOptions{});
        QVERIFY2(small.find(" tile ") == std::string::npos, small.c_str());
    }

    // A grouped conv2d's index space is not its output's (the group is a dim of its
    // own): asking it to fuse a binary epilogue given in the consumer's coordinates
    // once aborted on the rank mismatch (found by the tiling property). The mul runs
    // as its own step, and the result matches the oracle.
    void grouped_conv_with_a_binary_epilogue() {
        Graph g;
        add_tensor(g, "x", ZPoint{2, 4, 6, 6}, TensorRole::input);
        add_tensor(g, "w", ZPoint{6, 2, 3, 3}, TensorRole::parameter);
        add_tensor(g, "s", ZPoint{2, 6, 4, 4}, TensorRole::input);
        add_tensor(g, "c", ZPoint{2, 6, 4, 4}, TensorRole::intermediate);
        add_tensor(g, "y", ZPoint{2, 6, 4, 4}, TensorRole::output);
        add_op(g, "conv", "conv2d", {{"x", "x"}, {"w", "w"}}, "c", Params{{"groups", std::int64_t{2}}});
        add_op(g, "scale", "mul", {{"a", "c"}, {"b", "s"}}, "y");
        QVERIFY(validate(g, OpLibrary::standard()).empty());
        const auto inputs = make_random_inputs(g, 4);
        auto p = cpu::Program::compile(g, OpLibrary::standard());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        const std::string text = (*p)->describe();
        QVERIFY2(text.find("step 1: mul scale") != std::string::npos, text.c_str());
        auto r = (*p)->run(inputs);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        auto oracle = evaluate_reference(g, to_ref_inputs(g, inputs), OpLibrary::standard());
        QVERIFY2(oracle.has_value(), oracle ? "" : oracle.error().c_str());
        QVERIFY(rel_diff(r->outputs.at(TensorId("y")), oracle->at(TensorId("y"))) < 1e-5);
    }

    // Winograd (CpuOptions::winograd) for 3×3 stride-1 convolutions with channels
    // in multiples of 16: a different algorithm runs (the bits change), the values
    // do not beyond rounding — against the direct run and the oracle — tiled too.
    void winograd_convolutions_match_direct_and_the_oracle() {
        Graph g;
        add_tensor(g, "x", ZPoint{3, 16, 10, 10}, TensorRole::input);
        add_tensor(g, "w1", ZPoint{32, 16, 3, 3}, TensorRole::parameter);
        add_tensor(g, "b1", ZPoint{32}, TensorRole::parameter);
        add_tensor(g, "w2", ZPoint{16, 32, 3, 3}, TensorRole::parameter);
        add_tensor(g, "c1", ZPoint{3, 32, 10, 10}, TensorRole::intermediate);
        add_tensor(g, "r1", ZPoint{3, 32, 10, 10}, TensorRole::intermediate);
        add_tensor(g, "y", ZPoint{3, 16, 10, 10}, TensorRole::output);
        const Params conv{{"padding", std::vector<std::int64_t>{1, 1, 1, 1}}};
        add_op(g, "conv1", "conv2d", {{"x", "x"}, {"w", "w1"}, {"bias", "b1"}}, "c1", conv);
        add_op(g, "relu1", "relu", {{"x", "c1"}}, "r1");
        add_op(g, "conv2", "conv2d", {{"x", "r1"}, {"w", "w2"}}, "y", conv);
        QVERIFY(validate(g, OpLibrary::standard()).empty());
        const auto inputs = make_random_inputs(g, 9);
        auto oracle = evaluate_reference(g, to_ref_inputs(g, inputs), OpLibrary::standard());
        QVERIFY2(oracle.has_value(), oracle ? "" : oracle.error().c_str());
        cpu::CpuOptions wino, direct, wino_tiled;
        direct.winograd = false;
        wino_tiled.tile_bytes = 1;
        auto a = run_graph(g, inputs, wino);
        auto b = run_graph(g, inputs, direct);
        auto c = run_graph(g, inputs, wino_tiled);
        for (auto *r : {&a, &b, &c}) QVERIFY2(r->has_value(), *r ? "" : (*r).error().c_str());
        const TensorData &ya = a->outputs.at(TensorId("y")), &yb = b->outputs.at(TensorId("y"));
        const TensorData &yc = c->outputs.at(TensorId("y"));
        // Winograd runs on every ISA — oneDNN's on AVX-512, ours below — so its bits
        // differ from the direct algorithm's, and no step says it could not.
        qInfo("oneDNN ISA: %s", cpu::cpu_isa().name.c_str());
        QVERIFY2(ya.bytes != yb.bytes, "winograd on and off gave the same bits: the direct algorithm ran both times");
        QVERIFY2(a->notices.empty(), a->notices.empty() ? "" : a->notices[0].c_str());
        QCOMPARE(c->steps.size(), size_t{6});  // two steps (conv1 + relu1, conv2) × three tiles
        for (const TensorData *y : {&ya, &yb, &yc}) {
            const double err = rel_diff(*y, oracle->at(TensorId("y")));
            QVERIFY2(err < 1e-5, std::to_string(err).c_str());
        }
    }

    // Reduced precision, opt-in (CpuOptions::bf16_matmul): a linear with constant
    // weights computes in bf16 where the CPU has it natively — different bits, errors
    // of bf16's size (~1e-3, not ~1e-6) against the oracle — and stays f32 elsewhere.
    void bf16_matmul_is_opt_in_and_within_bf16_error() {
        Graph g;
        add_tensor(g, "x", ZPoint{32, 64}, TensorRole::input);
        add_tensor(g, "w", ZPoint{64, 48}, TensorRole::parameter);
        add_tensor(g, "b", ZPoint{48}, TensorRole::parameter);
        add_tensor(g, "h", ZPoint{32, 48}, TensorRole::intermediate);
        add_tensor(g, "y", ZPoint{32, 48}, TensorRole::output);
        for (const char *id : {"w", "b"}) {
            Tensor t = *g.find_tensor(TensorId(id));
            auto v = std::make_shared<TensorData>(DType::f32, t.shape());
            auto f = v->as<float>();
            for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(0.3 * std::sin(0.71 * double(i)));
            t.value = v;
            g.put_tensor(std::move(t));
        }
        add_op(g, "fc", "linear", {{"x", "x"}, {"w", "w"}, {"bias", "b"}}, "h");
        add_op(g, "act", "relu", {{"x", "h"}}, "y");
        QVERIFY(validate(g, OpLibrary::standard()).empty());
        const auto inputs = make_random_inputs(g, 21);
        auto oracle = evaluate_reference(g, to_ref_inputs(g, inputs), OpLibrary::standard());
        QVERIFY2(oracle.has_value(), oracle ? "" : oracle.error().c_str());
        cpu::CpuOptions low;
        low.bf16_matmul = true;
        auto a = run_graph(g, inputs);
        auto b = run_graph(g, inputs, low);
        QVERIFY2(a.has_value(), a ? "" : a.error().c_str());
        QVERIFY2(b.has_value(), b ? "" : b.error().c_str());
        const TensorData &ya = a->outputs.at(TensorId("y")), &yb = b->outputs.at(TensorId("y"));
        const double err_f32 = rel_diff(ya, oracle->at(TensorId("y")));
        const double err_bf16 = rel_diff(yb, oracle->at(TensorId("y")));
        QVERIFY2(err_f32 < 1e-5, std::to_string(err_f32).c_str());
        qInfo("oneDNN ISA: %s", cpu::cpu_isa().name.c_str());
        const std::string unavailable = "bf16 matmuls are not available on " + cpu::cpu_isa().name;
        const bool said = !b->notices.empty() && b->notices[0].find(unavailable) == 0;
        if (cpu::cpu_isa().native_bf16) {
            QVERIFY2(ya.bytes != yb.bytes, "bf16_matmul on gave the f32 bits");
            QVERIFY2(err_bf16 < 1e-2 && err_bf16 > err_f32, std::to_string(err_bf16).c_str());
            QVERIFY(!said);
        } else {
            QCOMPARE(yb.bytes, ya.bytes);  // no native bf16: the step stays f32, and the run says so
            QVERIFY2(said, b->notices.empty() ? "no notice" : b->notices[0].c_str());
        }
        QVERIFY(a->notices.empty());
    }

    void fused_graph_equals_unfused() {
        const Graph g = small_mlp(9, 12, 20, true);
        const auto inputs = make_random_inputs(g, 7);
        cpu::CpuOptions fused, plain;
        plain.fuse_epilogues = false;
        auto pf = cpu::Program::compile(g, OpLibrary::standard(), fused);
        QVERIFY2(pf.has_value(), pf ? "" : pf.error().c_str());
        const std::string text = (*pf)->describe();
        QVERIFY2(text.find("fused gelu1") != std::string::npos, text.c_str());
        QVERIFY2(text.find("fused relu2") != std::string::npos, text.c_str());
        QVERIFY2(text.find("fused res") != std::string::npos, text.c_str());
        auto a = (*pf)->run(inputs);
        auto b = run_graph(g, inputs, plain);
        QVERIFY2(a.has_value(), a ? "" : a.error().c_str());
        QVERIFY2(b.has_value(), b ? "" : b.error().c_str());
        QCOMPARE(a->steps.size(), size_t{3});
        QCOMPARE(b->steps.size(), size_t{6});
        const TensorData &ya = a->outputs.at(TensorId("y"));
        const TensorData &yb = b->outputs.at(TensorId("y"));
        QVERIFY(rel_diff(ya, yb) < 1e-5);
        // Fusion removes the folded intermediates from the buffer plan.
        QVERIFY(a->arena_bytes <= b->arena_bytes);
        QVERIFY2(text.find("h1 (intermediate, 720 B): fused away") != std::string::npos, text.c_str());
    }

    void sharded_equals_unsharded_equals_oracle_data() {
        QTest::addColumn<int>("which");
        QTest::newRow("mlp rows") << 0;
        QTest::newRow("mlp cols uneven") << 1;
        QTest::newRow("mlp moderate") << 2;
    }
    void sharded_equals_unsharded_equals_oracle() {
        QFETCH(int, which);
        Graph g = which == 2 ? small_mlp(48, 96, 192, true) : small_mlp(10, 12, 21, true);
        if (which == 0) {
            shard(g, "fc1", 0, 3);
            shard(g, "gelu1", 0, 2);
            shard(g, "fc2", 0, 4);
            shard(g, "res", 1, 3);
        } else {
            shard(g, "fc1", 1, 4);
            shard(g, "relu2", 1, 5);
            shard(g, "fc3", 1, 3);
        }
        if (which == 2) shard(g, "fc2", 0, 2);
        const auto issues = validate(g, OpLibrary::standard());
        QVERIFY2(!has_errors(issues), issues.empty() ? "" : format_issue(issues[0]).c_str());
        const auto inputs = make_random_inputs(g, 11);
        cpu::CpuOptions sharded, whole;
        whole.run_shards = false;
        auto a = run_graph(g, inputs, sharded);
        auto b = run_graph(g, inputs, whole);
        QVERIFY2(a.has_value(), a ? "" : a.error().c_str());
        QVERIFY2(b.has_value(), b ? "" : b.error().c_str());
        QVERIFY(a->steps.size() > b->steps.size());
        auto oracle = evaluate_reference(g, to_ref_inputs(g, inputs), OpLibrary::standard());
        QVERIFY2(oracle.has_value(), oracle ? "" : oracle.error().c_str());
        const TensorData &ya = a->outputs.at(TensorId("y"));
        QVERIFY(rel_diff(ya, b->outputs.at(TensorId("y"))) < 1e-5);
        const double err = rel_diff(ya, oracle->at(TensorId("y")));
        QVERIFY2(err < 1e-4, std::to_string(err).c_str());
    }

    // Every example project, sharded by the shard pass where it has no shards of
    // its own (and further where it has), runs shard by shard, whole, and through
    // the oracle — verify::check_equivalence's three-way check at its default tolerances (bf16
    // outputs at bf16's). A missing kernel is a failure, not a skip.
    void example_projects_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("specs");  // shard specs (op:dim=parts) applied first
        for (const auto &[stem, specs] : example_shard_specs())
            QTest::newRow(stem.c_str()) << QString::fromStdString(stem + ".tapestry.json") << specs;
    }
    void example_projects() {
        QFETCH(QString, file);
        QFETCH(QStringList, specs);
        const auto loaded = load_project(test::source_dir() / "projects" / file.toStdString());
        QVERIFY(loaded.ok());
        std::vector<std::string> spec_list;
        for (const QString &spec : specs) spec_list.push_back(spec.toStdString());
        auto options = parse_shard_options(spec_list);
        QVERIFY2(options, options ? "" : options.error().c_str());
        auto stage = shard(loaded.graph, *options);
        QVERIFY2(stage, stage ? "" : stage.error().c_str());
        const Graph &g = stage->graph;
        const auto report = verify::check_equivalence(g, OpLibrary::standard(), quick_inputs(g, 3));
        QVERIFY2(report, report ? "" : report.error().c_str());
        QVERIFY(report->sharded);
        std::string text;
        for (const verify::OutputComparison &c : report->comparisons)
            text += c.tensor + " vs " + c.against + ": max abs " + std::to_string(c.max_abs_error) + " (atol " +
                    std::to_string(c.atol) + ")" + (c.pass ? "" : " FAIL") + "\n";
        QVERIFY2(report->pass(), text.c_str());
    }
    void every_example_project_has_a_row() {
        const auto rows = example_shard_specs();
        for (const auto &entry : std::filesystem::directory_iterator(test::source_dir() / "projects")) {
            const std::string name = entry.path().filename().string();
            const std::string suffix = ".tapestry.json";
            if (!name.ends_with(suffix)) continue;
            const QString stem = QString::fromStdString(name.substr(0, name.size() - suffix.size()));
            QVERIFY2(rows.count(stem.toStdString()), qPrintable("projects/" + QString::fromStdString(name) + " has no row in example_projects"));
        }
    }

    void arena_reuses_memory_along_a_chain() {
        Graph g;
        const int n = 6;
        add_tensor(g, "t0", {32, 32}, TensorRole::input);
        for (int i = 1; i <= n; ++i)
            add_tensor(g, "t" + std::to_string(i), {32, 32}, i == n ? TensorRole::output : TensorRole::intermediate);
        for (int i = 1; i <= n; ++i)
            add_op(g, "op" + std::to_string(i), i % 2 ? "relu" : "tanh", {{"x", "t" + std::to_string(i - 1)}},
                   "t" + std::to_string(i));
        const auto inputs = make_random_inputs(g, 5);
        auto p = cpu::Program::compile(g, OpLibrary::standard());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        auto r = (*p)->run(inputs);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        const std::size_t each = 32 * 32 * 4;
        QCOMPARE(r->arena_bytes, 2 * each);  // two live intermediates at a time, not five
        QVERIFY(r->arena_bytes < (n - 1) * each);
        // And the values are right despite the reuse.
        const TensorData &x = inputs.at(TensorId("t0"));
        const TensorData &y = r->outputs.at(TensorId("t" + std::to_string(n)));
        for (std::int64_t i = 0; i < x.element_count(); ++i) {
            double v = x.get(i);
            for (int k = 1; k <= n; ++k) v = k % 2 ? std::max(v, 0.0) : std::tanh(v);
            QVERIFY(std::abs(y.get(i) - v) < 1e-5);
        }
        QVERIFY((*p)->describe().find("arena") != std::string::npos);
        // A second run of the same program gives the same result.
        auto again = (*p)->run(inputs);
        QVERIFY(again.has_value());
        QVERIFY(again->outputs.at(TensorId("t" + std::to_string(n))) == y);
    }

    void cancellation_stops_the_run() {
        Graph g = small_mlp(8, 8, 8, false);
        shard(g, "fc1", 0, 4);
        const auto inputs = make_random_inputs(g, 1);
        std::atomic<int> polls{0};
        cpu::RunControl control;
        control.cancelled = [&] { return ++polls > 2; };
        auto r = run_graph(g, inputs, {}, control);
        QVERIFY(!r.has_value());
        QCOMPARE(QString::fromStdString(r.error()), QString("cancelled"));
        QVERIFY(polls >= 3);
    }

    void progress_reports_every_step() {
        Graph g = small_mlp(8, 8, 8, false);
        shard(g, "fc2", 0, 3);
        const auto inputs = make_random_inputs(g, 1);
        std::mutex m;
        std::vector<std::pair<int, int>> seen;
        cpu::RunControl control;
        control.progress = [&](int done, int total) {
            std::lock_guard lock(m);
            seen.emplace_back(done, total);
        };
        cpu::CpuOptions options;
        options.threads = 2;
        auto r = run_graph(g, inputs, options, control);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        QCOMPARE(seen.size(), r->steps.size());
        std::sort(seen.begin(), seen.end());
        for (size_t i = 0; i < seen.size(); ++i) {
            QCOMPARE(seen[i].first, static_cast<int>(i + 1));
            QCOMPARE(seen[i].second, static_cast<int>(seen.size()));
        }
        // Shards are reported as steps of their own.
        int shards = 0;
        for (const auto &s : r->steps) shards += s.shard.empty() ? 0 : 1;
        QCOMPARE(shards, 3);
    }

    void op_without_kernel_is_refused() {
        OpLibrary lib;
        register_elementwise_ops(lib);
        lib.add(std::make_unique<MysteryOp>());
        Graph g;
        add_tensor(g, "x", {4}, TensorRole::input);
        add_tensor(g, "y", {4}, TensorRole::output);
        add_op(g, "x2", "mystery", {{"x", "x"}}, "y");
        auto p = cpu::Program::compile(g, lib);
        QVERIFY(!p.has_value());
        QCOMPARE(QString::fromStdString(p.error()), QString("operation 'x2': no CPU kernel for kind 'mystery'"));
    }

    void invalid_graph_is_refused_with_the_first_issue() {
        Graph g;
        add_tensor(g, "x", {4, 3}, TensorRole::input);
        add_tensor(g, "w", {5, 2}, TensorRole::parameter);
        add_tensor(g, "y", {4, 2}, TensorRole::output);
        add_op(g, "mm", "matmul", {{"a", "x"}, {"b", "w"}}, "y");
        auto p = cpu::Program::compile(g, OpLibrary::standard());
        QVERIFY(!p.has_value());
        QVERIFY2(p.error().find("mm") != std::string::npos, p.error().c_str());
    }

    void missing_input_is_an_error() {
        const Graph g = small_mlp(4, 4, 4, false);
        auto inputs = make_random_inputs(g, 1);
        inputs.erase(TensorId("x"));
        auto r = run_graph(g, inputs);
        QVERIFY(!r.has_value());
        QVERIFY2(r.error().find("'x' has no value") != std::string::npos, r.error().c_str());
    }
};

QTEST_GUILESS_MAIN(TestCpuExecutor)
#include "test_cpu_executor.moc"
