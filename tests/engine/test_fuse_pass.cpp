// The fusion pass (engine/passes/fuse.h) and the `fused` kind (ops/fused.h,
// runtime/cpu/kernels_fused.cpp): golden stage texts for the MLP fused unsharded
// and after 4-way batch sharding, numeric certificates, every refusal (graph
// unchanged, reason in the summary), and the fused kind's reference kernel
// against its CPU kernel on random chains, sharded and unsharded — normalization
// tails (softmax, layernorm, rmsnorm) included.
#include <QtTest/QtTest>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "ops/fused.h"
#include "ops/fusion_cache.h"
#include "ops/library.h"
#include "numeric_certify.h"
#include "passes/fuse.h"
#include "passes/shard.h"
#include "passes/substitute.h"
#include "verify/verify.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

using test::parse;

// The MLP's topology at a small size: linear → gelu → linear → relu → linear → gelu → linear.
const char *kSmallMlp = R"({
  "format": "tapestry-project", "version": 1, "name": "small-mlp",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [16, 12], "role": "input"},
    {"id": "w1", "dtype": "f32", "shape": [12, 20], "role": "parameter"},
    {"id": "b1", "dtype": "f32", "shape": [20], "role": "parameter"},
    {"id": "h1", "dtype": "f32", "shape": [16, 20], "role": "intermediate"},
    {"id": "a1", "dtype": "f32", "shape": [16, 20], "role": "intermediate"},
    {"id": "w2", "dtype": "f32", "shape": [20, 20], "role": "parameter"},
    {"id": "b2", "dtype": "f32", "shape": [20], "role": "parameter"},
    {"id": "h2", "dtype": "f32", "shape": [16, 20], "role": "intermediate"},
    {"id": "a2", "dtype": "f32", "shape": [16, 20], "role": "intermediate"},
    {"id": "w3", "dtype": "f32", "shape": [20, 20], "role": "parameter"},
    {"id": "b3", "dtype": "f32", "shape": [20], "role": "parameter"},
    {"id": "h3", "dtype": "f32", "shape": [16, 20], "role": "intermediate"},
    {"id": "a3", "dtype": "f32", "shape": [16, 20], "role": "intermediate"},
    {"id": "w4", "dtype": "f32", "shape": [20, 12], "role": "parameter"},
    {"id": "b4", "dtype": "f32", "shape": [12], "role": "parameter"},
    {"id": "y", "dtype": "f32", "shape": [16, 12], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w1", "bias": "b1"}, "outputs": {"y": "h1"}},
    {"id": "gelu1", "kind": "gelu", "inputs": {"x": "h1"}, "outputs": {"y": "a1"}},
    {"id": "fc2", "kind": "linear", "inputs": {"x": "a1", "w": "w2", "bias": "b2"}, "outputs": {"y": "h2"}},
    {"id": "relu2", "kind": "relu", "inputs": {"x": "h2"}, "outputs": {"y": "a2"}},
    {"id": "fc3", "kind": "linear", "inputs": {"x": "a2", "w": "w3", "bias": "b3"}, "outputs": {"y": "h3"}},
    {"id": "gelu3", "kind": "gelu", "inputs": {"x": "h3"}, "outputs": {"y": "a3"}},
    {"id": "fc4", "kind": "linear", "inputs": {"x": "a3", "w": "w4", "bias": "b4"}, "outputs": {"y": "y"}}
  ]
})";

// matmul → add (bias, broadcast) → relu.
const char *kMatmulChain = R"({
  "format": "tapestry-project", "version": 1, "name": "matmul-chain",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [12, 8], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [8, 6], "role": "parameter"},
    {"id": "b", "dtype": "f32", "shape": [6], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [12, 6], "role": "intermediate"},
    {"id": "hb", "dtype": "f32", "shape": [12, 6], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [12, 6], "role": "output"}
  ],
  "operations": [
    {"id": "mm", "kind": "matmul", "inputs": {"a": "x", "b": "w"}, "outputs": {"y": "h"}},
    {"id": "bias", "kind": "add", "inputs": {"a": "h", "b": "b"}, "outputs": {"y": "hb"}},
    {"id": "act", "kind": "relu", "inputs": {"x": "hb"}, "outputs": {"y": "y"}}
  ]
})";

// conv2d (padded) → add (channel bias [4,1,1]) → relu → add (residual).
const char *kConvChain = R"({
  "format": "tapestry-project", "version": 1, "name": "conv-chain",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [2, 3, 6, 6], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [4, 3, 3, 3], "role": "parameter"},
    {"id": "cb", "dtype": "f32", "shape": [4, 1, 1], "role": "parameter"},
    {"id": "res", "dtype": "f32", "shape": [2, 4, 6, 6], "role": "input"},
    {"id": "c", "dtype": "f32", "shape": [2, 4, 6, 6], "role": "intermediate"},
    {"id": "cbias", "dtype": "f32", "shape": [2, 4, 6, 6], "role": "intermediate"},
    {"id": "r", "dtype": "f32", "shape": [2, 4, 6, 6], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [2, 4, 6, 6], "role": "output"}
  ],
  "operations": [
    {"id": "conv", "kind": "conv2d", "params": {"padding": [1, 1, 1, 1]}, "inputs": {"x": "x", "w": "w"}, "outputs": {"y": "c"}},
    {"id": "bias", "kind": "add", "inputs": {"a": "c", "b": "cb"}, "outputs": {"y": "cbias"}},
    {"id": "act", "kind": "relu", "inputs": {"x": "cbias"}, "outputs": {"y": "r"}},
    {"id": "skip", "kind": "add", "inputs": {"a": "res", "b": "r"}, "outputs": {"y": "y"}}
  ]
})";

// add (broadcast) → mul → tanh → sub with the chain on the right.
const char *kElementwiseChain = R"({
  "format": "tapestry-project", "version": 1, "name": "elementwise-chain",
  "tensors": [
    {"id": "a", "dtype": "f32", "shape": [6, 10], "role": "input"},
    {"id": "b", "dtype": "f32", "shape": [10], "role": "input"},
    {"id": "c", "dtype": "f32", "shape": [6, 10], "role": "input"},
    {"id": "d", "dtype": "f32", "shape": [6, 1], "role": "input"},
    {"id": "t1", "dtype": "f32", "shape": [6, 10], "role": "intermediate"},
    {"id": "t2", "dtype": "f32", "shape": [6, 10], "role": "intermediate"},
    {"id": "t3", "dtype": "f32", "shape": [6, 10], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [6, 10], "role": "output"}
  ],
  "operations": [
    {"id": "e1", "kind": "add", "inputs": {"a": "a", "b": "b"}, "outputs": {"y": "t1"}},
    {"id": "e2", "kind": "mul", "inputs": {"a": "t1", "b": "c"}, "outputs": {"y": "t2"}},
    {"id": "e3", "kind": "tanh", "inputs": {"x": "t2"}, "outputs": {"y": "t3"}},
    {"id": "e4", "kind": "sub", "inputs": {"a": "d", "b": "t3"}, "outputs": {"y": "y"}}
  ]
})";

// Residual add → layernorm with gamma and beta (a normalization tail).
const char *kAddLayernorm = R"({
  "format": "tapestry-project", "version": 1, "name": "add-layernorm",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [6, 10], "role": "input"},
    {"id": "r", "dtype": "f32", "shape": [6, 10], "role": "input"},
    {"id": "g", "dtype": "f32", "shape": [10], "role": "parameter"},
    {"id": "b", "dtype": "f32", "shape": [10], "role": "parameter"},
    {"id": "t", "dtype": "f32", "shape": [6, 10], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [6, 10], "role": "output"}
  ],
  "operations": [
    {"id": "res", "kind": "add", "inputs": {"a": "x", "b": "r"}, "outputs": {"y": "t"}},
    {"id": "ln", "kind": "layernorm", "inputs": {"x": "t", "gamma": "g", "beta": "b"}, "outputs": {"y": "y"}}
  ]
})";

// A scale by a parameter, then softmax along axis AXIS.
std::string scale_softmax(int axis) {
    return R"({
  "format": "tapestry-project", "version": 1, "name": "scale-softmax",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [4, 5, 8], "role": "input"},
    {"id": "s", "dtype": "f32", "shape": [1], "role": "parameter"},
    {"id": "t", "dtype": "f32", "shape": [4, 5, 8], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [4, 5, 8], "role": "output"}
  ],
  "operations": [
    {"id": "sc", "kind": "mul", "inputs": {"a": "x", "b": "s"}, "outputs": {"y": "t"}},
    {"id": "sm", "kind": "softmax", "params": {"axis": )" +
           std::to_string(axis) + R"(}, "inputs": {"x": "t"}, "outputs": {"y": "y"}}
  ]
})";
}

// add (bias) → gelu → rmsnorm with gamma.
const char *kAddGeluRmsnorm = R"({
  "format": "tapestry-project", "version": 1, "name": "add-gelu-rmsnorm",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [2, 3, 12], "role": "input"},
    {"id": "bias", "dtype": "f32", "shape": [12], "role": "parameter"},
    {"id": "g", "dtype": "f32", "shape": [12], "role": "parameter"},
    {"id": "t1", "dtype": "f32", "shape": [2, 3, 12], "role": "intermediate"},
    {"id": "t2", "dtype": "f32", "shape": [2, 3, 12], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [2, 3, 12], "role": "output"}
  ],
  "operations": [
    {"id": "e1", "kind": "add", "inputs": {"a": "x", "b": "bias"}, "outputs": {"y": "t1"}},
    {"id": "e2", "kind": "gelu", "inputs": {"x": "t1"}, "outputs": {"y": "t2"}},
    {"id": "rn", "kind": "rmsnorm", "inputs": {"x": "t2", "gamma": "g"}, "outputs": {"y": "y"}}
  ]
})";

// Attention scores: q·kᵀ (as a matmul of [2, 6, 4] by [2, 4, 6]) / c → softmax.
const char *kScoresSoftmax = R"({
  "format": "tapestry-project", "version": 1, "name": "scores-softmax",
  "tensors": [
    {"id": "q", "dtype": "f32", "shape": [2, 6, 4], "role": "input"},
    {"id": "kt", "dtype": "f32", "shape": [2, 4, 6], "role": "input"},
    {"id": "c", "dtype": "f32", "shape": [1], "role": "parameter"},
    {"id": "s", "dtype": "f32", "shape": [2, 6, 6], "role": "intermediate"},
    {"id": "t", "dtype": "f32", "shape": [2, 6, 6], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [2, 6, 6], "role": "output"}
  ],
  "operations": [
    {"id": "qk", "kind": "matmul", "inputs": {"a": "q", "b": "kt"}, "outputs": {"y": "s"}},
    {"id": "scale", "kind": "div", "inputs": {"a": "s", "b": "c"}, "outputs": {"y": "t"}},
    {"id": "sm", "kind": "softmax", "inputs": {"x": "t"}, "outputs": {"y": "y"}}
  ]
})";

// x[10, 6] → linear fc1 → h[10, 8] → relu r1 → y[10, 8] (HROLE: h's role).
std::string tiny(const std::string &h_role = "intermediate") {
    return R"({
  "format": "tapestry-project", "version": 1, "name": "tiny",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 6], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [10, 8], "role": ")" +
           h_role + R"("},
    {"id": "y", "dtype": "f32", "shape": [10, 8], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w"}, "outputs": {"y": "h"}},
    {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y"}}
  ]
})";
}

// fc1 → h read by two relus.
const char *kTwoConsumers = R"({
  "format": "tapestry-project", "version": 1, "name": "two-consumers",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 6], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [10, 8], "role": "intermediate"},
    {"id": "y1", "dtype": "f32", "shape": [10, 8], "role": "output"},
    {"id": "y2", "dtype": "f32", "shape": [10, 8], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w"}, "outputs": {"y": "h"}},
    {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y1"}},
    {"id": "r2", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y2"}}
  ]
})";

// relu of a [8] vector, added to x[10, 8]: the add reads t through a broadcast.
const char *kBroadcastRead = R"({
  "format": "tapestry-project", "version": 1, "name": "broadcast-read",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 8], "role": "input"},
    {"id": "v", "dtype": "f32", "shape": [8], "role": "input"},
    {"id": "t", "dtype": "f32", "shape": [8], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [10, 8], "role": "output"}
  ],
  "operations": [
    {"id": "rv", "kind": "relu", "inputs": {"x": "v"}, "outputs": {"y": "t"}},
    {"id": "add1", "kind": "add", "inputs": {"a": "x", "b": "t"}, "outputs": {"y": "y"}}
  ]
})";

// Shards set directly, "op:dim=n …": each spec splits the op's pieces (its shards,
// or its index space) evenly along dim — no propagation, no data movement.
Graph split(const Graph &g, const QString &specs) {
    Graph out = g;
    for (const QString &spec : specs.split(' ', Qt::SkipEmptyParts)) {
        const QStringList parts = spec.split(QRegularExpression("[:=]"));
        TAPESTRY_CHECK(parts.size() == 3, "bad split spec in the test");
        Operation op = *out.find_op(OpId(parts[0].toStdString()));
        const int dim = parts[1].toInt(), n = parts[2].toInt();
        std::vector<ZRange> base;
        for (const Shard &s : op.shards) base.push_back(s.index);
        if (base.empty()) base.push_back(resolve(out, op, OpLibrary::standard())->signature.index_space);
        op.shards.clear();
        for (const ZRange &r : base) {
            const Coord extent = r.extent(dim);
            Coord pos = r.start()[dim];
            for (int k = 0; k < n; ++k) {
                const Coord size = extent / n + (k < extent % n ? 1 : 0);
                ZPoint start = r.start(), end = r.end();
                start[dim] = pos;
                end[dim] = pos + size;
                pos += size;
                op.shards.push_back(Shard{ShardId(op.id.value + "/" + std::to_string(op.shards.size())),
                                          ZRange(start, end), "", {}, {}});
            }
        }
        out.put_op(std::move(op));
    }
    return out;
}

// Sharded by the shard pass (passes/shard.h).
Graph sharded(const Graph &g, const QString &specs) {
    if (specs.isEmpty()) return g;
    std::vector<std::string> list;
    for (const QString &s : specs.split(' ', Qt::SkipEmptyParts)) list.push_back(s.toStdString());
    auto options = parse_shard_options(list);
    TAPESTRY_CHECK(options.has_value(), "bad shard specs in the test");
    auto stage = shard(g, *options);
    TAPESTRY_CHECK(stage.has_value(), "the test's shard specs do not apply");
    return stage->graph;
}

std::string first_difference(const std::string &expected, const std::string &actual) {
    std::istringstream e(expected), a(actual);
    std::string le, la;
    for (int line = 1;; ++line) {
        const bool he = static_cast<bool>(std::getline(e, le)), ha = static_cast<bool>(std::getline(a, la));
        if (!he && !ha) return "the texts differ in their final newline";
        if (le != la || he != ha)
            return "line " + std::to_string(line) + ":\n- expected " + (he ? le : "(end)") + "\n+ actual   " +
                   (ha ? la : "(end)") + "\n(set TAPESTRY_UPDATE_GOLDEN=1 to rewrite the golden file)";
    }
}

// Certify numerically with a looser tolerance than the default: fused epilogues
// round once where the unfused graph rounds per tensor.
CertifyOptions numeric() {
    verify::NumericCheckOptions o;
    o.seed = 7;
    return test::numeric_certify(o);
}

}  // namespace

class TestFusePass : public QObject {
    Q_OBJECT
private slots:
    void chain_params_round_trip();
    void golden_data();
    void golden();
    void small_mlp_certifies_data();
    void small_mlp_certifies();
    void refusals_data();
    void refusals();
    void cached_answers();
    void options_exclude_and_kinds();
    void random_tails();
    void chains_data();
    void chains();
    void gpt2_block_tails();
    void example_projects_certify_data();
    void example_projects_certify();
};

void TestFusePass::chain_params_round_trip() {
    FusedChain c;
    c.members = {FusedMember{"conv2d", Params{{"padding", std::vector<std::int64_t>{1, 1, 1, 1}}, {"groups", std::int64_t{1}}}, -1},
                 FusedMember{"pow", Params{{"exponent", 2.0}}, -1},
                 FusedMember{"gelu", Params{{"approximate", std::string("tanh")}}, -1},
                 FusedMember{"sub", {}, 1}};
    c.head_operands = {1, 1, 0};
    c.member_ids = {"conv", "p", "g", "s"};
    auto p = fused_params(c);
    QVERIFY(p.has_value());
    QCOMPARE(p->get_string("chain", ""),
             std::string("conv2d{groups=1,padding=[1,1,1,1]};pow{exponent=2.0};gelu{approximate=\"tanh\"};sub"));
    auto back = parse_fused_chain(*p);
    QVERIFY2(back.has_value(), back ? "" : back.error().message.c_str());
    QVERIFY(*back == c);
    // A broken chain is a value naming the parameter.
    Params bad = *p;
    bad.set("chain_ports", std::vector<std::int64_t>{-1});
    auto e = parse_fused_chain(bad);
    QVERIFY(!e.has_value());
    QCOMPARE(e.error().field, std::string("params.chain_ports"));

    // A normalization tail: its operands' presence round-trips, its projections
    // read whole rows, and tail_operands without a tail is refused.
    FusedChain t;
    t.members = {FusedMember{"add", {}, -1}, FusedMember{"layernorm", Params{{"epsilon", 1e-5}}, -1}};
    t.head_operands = {1, 1};
    t.tail_operands = {1, 0};
    auto tp = fused_params(t);
    QVERIFY(tp.has_value());
    QCOMPARE(tp->get_ints("tail_operands", {}), (std::vector<std::int64_t>{1, 0}));
    auto tback = parse_fused_chain(*tp);
    QVERIFY2(tback.has_value(), tback ? "" : tback.error().message.c_str());
    QVERIFY(*tback == t);
    QVERIFY(tback->has_tail());
    QCOMPARE(tback->extra_count(), 1);
    const OperandType v{DType::f32, ZPoint{4, 6}}, g{DType::f32, ZPoint{6}};
    auto d = derive_fused(OpLibrary::standard(), t, {v, v, g});
    QVERIFY2(d.has_value(), d ? "" : d.error().message.c_str());
    // Both head operands read whole rows: a zero row with window 6 for dim 1.
    const IndexProjection &pa = d->fused.signature.inputs.at(0).operands.at(0).projection;
    QCOMPARE(pa.window(), (ZPoint{1, 6}));
    QCOMPARE(pa.image(ZRange(ZPoint{1, 2}, ZPoint{3, 3})), ZRange(ZPoint{1, 0}, ZPoint{3, 6}));
    QCOMPARE(d->tail_operand, (std::vector<int>{2, -1}));
    Params no_tail = *p;
    no_tail.set("tail_operands", std::vector<std::int64_t>{1});
    auto nt = parse_fused_chain(no_tail);
    QVERIFY(!nt.has_value());
    QCOMPARE(nt.error().field, std::string("params.tail_operands"));
    FusedChain ct;
    ct.members = {FusedMember{"conv2d", {}, -1}, FusedMember{"softmax", {}, -1}};
    ct.head_operands = {1, 1, 0};
    auto cd = derive_fused(OpLibrary::standard(), ct,
                           {OperandType{DType::f32, ZPoint{1, 2, 5, 5}}, OperandType{DType::f32, ZPoint{3, 2, 3, 3}}});
    // conv2d writes its index space one-to-one too: softmax over Q widens the
    // input's w window from S = 3 to S + Q − 1 = 5 (the whole row of 5).
    QVERIFY2(cd.has_value(), cd ? "" : cd.error().message.c_str());
    QCOMPARE(cd->fused.signature.inputs.at(0).operands.at(0).projection.window()[3], Coord(5));
}

// Random shapes, axes, operands and shardings along the non-normalized dims: the
// pass fuses the pair, and the fused op's reference kernel and its CPU kernel agree
// shard by shard (verify::check_equivalence), also against the unfused graph (certify).
void TestFusePass::random_tails() {
    std::mt19937 rng(11);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const char *kinds[] = {"layernorm", "rmsnorm", "softmax"};
    for (int round = 0; round < 12; ++round) {
        const std::string kind = kinds[round % 3];
        const int rank = pick(1, 3);
        std::vector<Coord> dims;
        for (int d = 0; d < rank; ++d) dims.push_back(pick(1, 6));
        const int axis = pick(0, rank - 1);
        auto shape = [](const std::vector<Coord> &s, size_t from) {
            std::string t = "[";
            for (size_t k = from; k < s.size(); ++k) t += (k > from ? "," : "") + std::to_string(s[k]);
            return t + "]";
        };
        const std::string full = shape(dims, 0);
        // The head's other operand: the full shape, its last dim, or one element.
        const int form = pick(0, 2);
        const std::string other = form == 0 ? full : form == 1 ? shape(dims, dims.size() - 1) : "[1]";
        const std::string head = pick(0, 1) ? "add" : "mul";
        const bool gamma = kind != "softmax" && pick(0, 1), beta = kind == "layernorm" && pick(0, 1);
        std::string json = R"({"format": "tapestry-project", "version": 1, "name": "random-tail", "tensors": [
            {"id": "x", "dtype": "f32", "shape": )" + full + R"(, "role": "input"},
            {"id": "o", "dtype": "f32", "shape": )" + other + R"(, "role": "parameter"},
            {"id": "t", "dtype": "f32", "shape": )" + full + R"(, "role": "intermediate"},
            {"id": "y", "dtype": "f32", "shape": )" + full + R"(, "role": "output"})";
        const std::string normalized = shape(dims, static_cast<size_t>(axis));
        if (gamma) json += R"(, {"id": "g", "dtype": "f32", "shape": )" + normalized + R"(, "role": "parameter"})";
        if (beta) json += R"(, {"id": "b", "dtype": "f32", "shape": )" + normalized + R"(, "role": "parameter"})";
        json += R"(], "operations": [{"id": "h", "kind": ")" + head +
                R"(", "inputs": {"a": "x", "b": "o"}, "outputs": {"y": "t"}}, {"id": "n", "kind": ")" + kind +
                R"(", "params": {"axis": )" + std::to_string(axis) + R"(}, "inputs": {"x": "t")" +
                (gamma ? R"(, "gamma": "g")" : "") + (beta ? R"(, "beta": "b")" : "") +
                R"(}, "outputs": {"y": "y"}}]})";
        const Graph original = parse(json.c_str());
        // Split both along one dim the tail does not normalize, when there is one.
        std::vector<int> free;
        for (int d = 0; d < rank; ++d)
            if (kind == "softmax" ? d != axis : d < axis) free.push_back(d);
        QString specs;
        if (!free.empty()) {
            const int d = free[static_cast<size_t>(pick(0, static_cast<int>(free.size()) - 1))];
            const int n = pick(1, static_cast<int>(std::min<Coord>(3, dims[static_cast<size_t>(d)])));
            specs = QString("h:%1=%2 n:%1=%2").arg(d).arg(n);
        }
        const std::string what = json + "\nshards: " + specs.toStdString();
        auto stage = fuse(split(original, specs), test::cpu_fuse());
        QVERIFY2(stage, stage ? "" : stage.error().c_str());
        QVERIFY2(stage->graph.operations().size() == 1, (stage->summary + "\n" + what).c_str());
        QCOMPARE(stage->graph.operations().front()->kind, std::string("fused"));
        auto report = verify::check_equivalence(stage->graph, OpLibrary::standard(), make_random_inputs(stage->graph, 5));
        QVERIFY2(report, report ? "" : report.error().c_str());
        for (const verify::OutputComparison &c : report->comparisons)
            QVERIFY2(c.pass, (c.tensor + ": max abs error " + std::to_string(c.max_abs_error) + "\n" + what).c_str());
        const Certificate cert = certify(original, stage->graph, numeric());
        QVERIFY2(cert.pass(), (cert.text() + "\n" + what).c_str());
    }
}

void TestFusePass::golden_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("specs");
    // fc1 is 4-sharded in the file, gelu1 is not: that edge is refused.
    QTest::newRow("mlp unsharded") << "fuse_mlp" << "";
    QTest::newRow("mlp batch 4") << "fuse_mlp_batch4"
                                 << "gelu1:0=4 fc2:0=4 relu2:0=4 fc3:0=4 gelu3:0=4 fc4:0=4";
}

void TestFusePass::golden() {
    QFETCH(QString, name);
    QFETCH(QString, specs);
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    const std::filesystem::path root(source.toStdString());
    LoadResult loaded = load_project(root / "projects/mlp.tapestry.json");
    QVERIFY(loaded.ok());
    const Graph input = sharded(loaded.graph, specs);
    FuseOptions options = test::cpu_fuse();
    options.certify = CertifyOptions{};
    auto stage = fuse(input, options);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    const std::string actual = stage_text(*stage, 1);
    const auto path = root / "tests/data/passes" / (name.toStdString() + ".golden");
    if (qgetenv("TAPESTRY_UPDATE_GOLDEN") == "1") {
        std::ofstream(path) << actual;
        return;
    }
    std::ifstream in(path);
    QVERIFY2(in.good(), ("missing golden file " + path.string()).c_str());
    std::stringstream buf;
    buf << in.rdbuf();
    QVERIFY2(buf.str() == actual, first_difference(buf.str(), actual).c_str());
}

void TestFusePass::small_mlp_certifies_data() {
    QTest::addColumn<QString>("specs");
    QTest::addColumn<int>("fused_ops");
    QTest::newRow("unsharded") << "" << 3;
    QTest::newRow("batch 4") << "fc1:0=4 gelu1:0=4 fc2:0=4 relu2:0=4 fc3:0=4 gelu3:0=4 fc4:0=4" << 3;
    // fc2 and relu2 split differently: that edge stays.
    QTest::newRow("mixed") << "fc1:0=4 gelu1:0=4 fc2:0=4 relu2:0=2" << 2;
}

void TestFusePass::small_mlp_certifies() {
    QFETCH(QString, specs);
    QFETCH(int, fused_ops);
    const Graph original = parse(kSmallMlp);
    const Graph input = split(original, specs);
    auto stage = fuse(input, test::cpu_fuse());
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    int count = 0;
    for (const OpPtr &op : stage->graph.operations())
        if (op->kind == "fused") {
            ++count;
            // Shards are the head's, ids kept.
            const Operation *head = input.find_op(op->id);
            QVERIFY(head != nullptr);
            QCOMPARE(op->shards.size(), head->shards.size());
            for (size_t k = 0; k < op->shards.size(); ++k) QCOMPARE(op->shards[k].id, head->shards[k].id);
        }
    QCOMPARE(count, fused_ops);
    const Certificate cert = certify(original, stage->graph, numeric());
    QVERIFY2(cert.pass(), cert.text().c_str());
    QVERIFY(cert.find("numeric") != nullptr);
    // A fused graph saves and loads back: its params are plain project-file values.
    LoadResult back = parse_project(serialize_project(stage->graph));
    QVERIFY(back.ok());
    for (const OpPtr &op : stage->graph.operations()) {
        const Operation *loaded = back.graph.find_op(op->id);
        QVERIFY(loaded != nullptr);
        QVERIFY(loaded->params == op->params);
    }
    QVERIFY(!has_errors(validate(back.graph, OpLibrary::standard())));
}

namespace {

// A backend that refuses every piece wider than `widest` index points, counting
// the questions it is asked.
class CountingBackend final : public FusionBackend {
public:
    explicit CountingBackend(std::int64_t widest) : widest_(widest) {}
    std::string name() const override { return "counting"; }
    std::string refusal(const FusedPiece &piece) const override {
        ++asked;
        return piece.index_range.size() > widest_ ? "too wide" : "";
    }
    mutable int asked = 0;

private:
    std::int64_t widest_;
};

}  // namespace

// A memo in front of a backend answers a piece it was asked about before as the
// backend did, refusals included, without asking again: the same stage, fewer
// questions; another piece (other splits) is asked.
void TestFusePass::cached_answers() {
    const Graph original = parse(kSmallMlp);
    const Graph batch4 = split(original, "fc1:0=4 gelu1:0=4 fc2:0=4 relu2:0=4 fc3:0=4 gelu3:0=4 fc4:0=4");
    const Graph unsplit = split(original, "");
    std::int64_t widest = 0;  // a batch-4 piece's index points: those pass, the whole ops do not
    for (const OpPtr &op : batch4.operations())
        for (const Shard &sh : op->shards) widest = std::max(widest, sh.index.size());
    CountingBackend inner(widest);
    const FusionCache cache(inner);
    QCOMPARE(QString::fromStdString(cache.name()), QStringLiteral("counting"));
    FuseOptions direct, cached;
    direct.backends = {&inner};
    cached.backends = {&cache};
    auto plain = fuse(batch4, direct);
    QVERIFY2(plain, plain ? "" : plain.error().c_str());
    const int asked_plain = inner.asked;
    QVERIFY(asked_plain > 0);
    inner.asked = 0;
    auto first = fuse(batch4, cached);
    QVERIFY(first);
    QCOMPARE(inner.asked, static_cast<int>(cache.misses()));
    const int asked_first = inner.asked;
    auto second = fuse(batch4, cached);
    QVERIFY(second);
    QCOMPARE(inner.asked, asked_first);  // every answer from the memo
    QVERIFY(cache.hits() >= asked_first);
    QCOMPARE(serialize_project(second->graph), serialize_project(plain->graph));
    QCOMPARE(second->summary, plain->summary);
    // The whole ops are refused, by the backend and by the memo alike.
    auto refused_plain = fuse(unsplit, direct), refused_first = fuse(unsplit, cached), refused_again = fuse(unsplit, cached);
    QVERIFY(refused_plain && refused_first && refused_again);
    QCOMPARE(serialize_project(refused_again->graph), serialize_project(refused_plain->graph));
    QVERIFY2(refused_again->summary.find("too wide") != std::string::npos, refused_again->summary.c_str());
    QCOMPARE(refused_again->summary, refused_plain->summary);
    QVERIFY(inner.asked > asked_first);  // other pieces: asked once
    const int after = inner.asked;
    (void)fuse(unsplit, cached);
    QCOMPARE(inner.asked, after);
}

void TestFusePass::refusals_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("specs");
    QTest::addColumn<QString>("reason");
    QTest::newRow("mismatched shards") << QString::fromStdString(tiny()) << "fc1:0=4 r1:0=2"
                                       << "1 edge not fused: fc1→r1 selections differ (fc1 4 shards, r1 2 shards)";
    QTest::newRow("same count, other dim") << QString::fromStdString(tiny()) << "fc1:0=2 r1:1=2"
                                           << "fc1→r1 selections differ (fc1 2 shards, r1 2 shards)";
    QTest::newRow("sharded vs unsharded") << QString::fromStdString(tiny()) << "fc1:0=2"
                                          << "fc1→r1 selections differ (fc1 2 shards, r1 unsharded)";
    QTest::newRow("output tensor") << QString::fromStdString(tiny("output")) << ""
                                   << "fc1→r1 not fused: h is a graph output";
    QTest::newRow("two consumers") << kTwoConsumers << "" << "fc1→{r1,r2} not fused: h has 2 consumers";
    QTest::newRow("broadcast read") << kBroadcastRead << ""
                                    << "rv→add1 not fused: add1 reads t through a broadcast or a window";
    // A layernorm split along its normalized axis reads rows that several shards of
    // its producer write.
    QTest::newRow("layernorm split on its axis")
        << kAddLayernorm << "res:1=2 ln:1=2"
        << "res→ln not fused: ln is split along its normalized axis 1 (a shard reads rows other shards of res write)";
    QTest::newRow("softmax split on its axis")
        << QString::fromStdString(scale_softmax(1)) << "sc:0=2 sc:1=2 sm:0=2 sm:1=2"
        << "sc→sm not fused: sm is split along its normalized axis 1";
    QTest::newRow("layernorm rows split differently") << kAddLayernorm << "res:0=2 ln:0=3"
                                                      << "res→ln selections differ (res 2 shards, ln 3 shards)";
}

void TestFusePass::refusals() {
    QFETCH(QString, json);
    QFETCH(QString, specs);
    QFETCH(QString, reason);
    const std::string text = json.toStdString();
    const Graph input = split(parse(text.c_str()), specs);
    auto stage = fuse(input, test::cpu_fuse());
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY(stage->diff.empty());
    QVERIFY(stage->graph.shares_all_nodes(input));
    QVERIFY2(QString::fromStdString(stage->summary).contains(reason), stage->summary.c_str());
    QVERIFY2(QString::fromStdString(stage->summary).startsWith("nothing fused; "), stage->summary.c_str());
}

void TestFusePass::options_exclude_and_kinds() {
    const std::string text = tiny();
    const Graph input = parse(text.c_str());
    FuseOptions excl = test::cpu_fuse();
    excl.exclude = {OpId("r1")};
    auto a = fuse(input, excl);
    QVERIFY(a && a->diff.empty());
    QCOMPARE(a->summary, std::string("nothing fused"));
    QCOMPARE(a->options, std::string("exclude=r1"));
    FuseOptions kinds = test::cpu_fuse();
    kinds.kinds = {"linear"};
    auto b = fuse(input, kinds);
    QVERIFY(b && b->diff.empty());
    auto c = fuse(input, test::cpu_fuse());
    QVERIFY(c.has_value());
    QCOMPARE(c->summary, std::string("fused 1 pair into 1 op: fc1+r1"));
    const GraphDelta::Summary s = c->diff.summary();
    QCOMPARE(s.changed, std::vector<std::string>{"fc1"});
    QCOMPARE(s.removed.size(), size_t(2));  // r1 and h
    QVERIFY(c->graph.find_tensor(TensorId("h")) == nullptr);
    QCOMPARE(c->graph.find_op(OpId("fc1"))->kind, std::string("fused"));
    // Reverting the diff gives the input back.
    Graph back = c->graph;
    c->diff.revert(back);
    QVERIFY(back.shares_all_nodes(input));
}

void TestFusePass::chains_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("specs");
    QTest::addColumn<QString>("chain");
    QTest::addColumn<bool>("may_decline");
    const QString mm = "matmul;add;relu", conv = "conv2d{padding=[1,1,1,1]};add;relu;add",
                  ew = "add;mul;tanh;sub";
    QTest::newRow("matmul+bias+relu") << kMatmulChain << "" << mm << false;
    QTest::newRow("matmul+bias+relu sharded") << kMatmulChain << "mm:0=3 bias:0=3 act:0=3" << mm << false;
    QTest::newRow("matmul+bias+relu 2-d shards")
        << kMatmulChain << "mm:0=2 mm:1=3 bias:0=2 bias:1=3 act:0=2 act:1=3" << mm << true;
    QTest::newRow("conv+bias+relu+residual") << kConvChain << "" << conv << false;
    QTest::newRow("conv+bias+relu+residual sharded H")
        << kConvChain << "conv:2=2 bias:2=2 act:2=2 skip:2=2" << conv << false;
    QTest::newRow("conv+bias+relu+residual sharded N,K")
        << kConvChain << "conv:0=2 conv:1=2 bias:0=2 bias:1=2 act:0=2 act:1=2 skip:0=2 skip:1=2" << conv << false;
    QTest::newRow("elementwise chain") << kElementwiseChain << "" << ew << false;
    QTest::newRow("elementwise chain sharded")
        << kElementwiseChain << "e1:0=3 e2:0=3 e3:0=3 e4:0=3" << ew << false;
    QTest::newRow("elementwise chain sharded both")
        << kElementwiseChain << "e1:0=2 e1:1=2 e2:0=2 e2:1=2 e3:0=2 e3:1=2 e4:0=2 e4:1=2" << ew << false;
    // Normalization tails.
    QTest::newRow("add+layernorm") << kAddLayernorm << "" << "add;layernorm" << false;
    QTest::newRow("add+layernorm rows 2") << kAddLayernorm << "res:0=2 ln:0=2" << "add;layernorm" << false;
    QTest::newRow("add+layernorm rows 4 uneven") << kAddLayernorm << "res:0=4 ln:0=4" << "add;layernorm" << false;
    const QString sm_last = QString::fromStdString(scale_softmax(-1)), sm_mid = QString::fromStdString(scale_softmax(1));
    QTest::newRow("mul+softmax") << sm_last << "" << "mul;softmax{axis=-1}" << false;
    QTest::newRow("mul+softmax sharded 0,1") << sm_last << "sc:0=2 sc:1=3 sm:0=2 sm:1=3" << "mul;softmax{axis=-1}"
                                             << false;
    QTest::newRow("mul+softmax middle axis sharded 0,2")
        << sm_mid << "sc:0=3 sc:2=2 sm:0=3 sm:2=2" << "mul;softmax{axis=1}" << false;
    QTest::newRow("add+gelu+rmsnorm") << kAddGeluRmsnorm << "" << "add;gelu;rmsnorm" << false;
    QTest::newRow("add+gelu+rmsnorm sharded")
        << kAddGeluRmsnorm << "e1:0=2 e1:1=3 e2:0=2 e2:1=3 rn:0=2 rn:1=3" << "add;gelu;rmsnorm" << false;
    QTest::newRow("matmul+div+softmax") << kScoresSoftmax << "" << "matmul;div;softmax" << false;
    QTest::newRow("matmul+div+softmax rows")
        << kScoresSoftmax << "qk:1=2 scale:1=2 sm:1=2" << "matmul;div;softmax" << false;
}

// One fused op whose chain is `chain`; its reference kernel (the oracle, shard by
// shard) against its CPU kernel (sharded and whole), and the stage against the
// unfused graph.
void TestFusePass::chains() {
    QFETCH(QString, json);
    QFETCH(QString, specs);
    QFETCH(QString, chain);
    QFETCH(bool, may_decline);
    const std::string text = json.toStdString();
    const Graph original = parse(text.c_str());
    const Graph input = split(original, specs);
    auto stage = fuse(input, test::cpu_fuse());
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    const Operation &f = *stage->graph.operations().front();
    if (f.kind != "fused") {
        // The pass asked the CPU kernel, which declined the head's post-ops (oneDNN
        // would fall back to its slow reference matmul on column slices): the head
        // stays, and its epilogues form their own elementwise chain.
        QVERIFY2(may_decline, stage->summary.c_str());
        QVERIFY2(QString::fromStdString(stage->summary).contains("the CPU kernel cannot run the chain"),
                 stage->summary.c_str());
        QCOMPARE(stage->graph.operations().size(), size_t(2));
        QCOMPARE(stage->graph.operations().back()->kind, std::string("fused"));
    } else {
        QCOMPARE(stage->graph.operations().size(), size_t(1));
        QCOMPARE(QString::fromStdString(f.params.get_string("chain", "")), chain);
        QCOMPARE(stage->graph.tensors().size(), original.tensors().size() - static_cast<size_t>(chain.count(QChar(59))));
    }
    const auto issues = validate(stage->graph, OpLibrary::standard());
    QVERIFY2(!has_errors(issues), issues.empty() ? "" : format_issue(issues.front()).c_str());

    for (std::uint64_t seed : {3u, 4u}) {
        auto report = verify::check_equivalence(stage->graph, OpLibrary::standard(), make_random_inputs(stage->graph, seed));
        QVERIFY2(report, report ? "" : report.error().c_str());
        for (const verify::OutputComparison &c : report->comparisons)
            QVERIFY2(c.pass, (c.tensor + " vs " + c.against + ": max abs error " + std::to_string(c.max_abs_error)).c_str());
        QCOMPARE(report->sharded, !stage->graph.operations().back()->shards.empty());
    }
    CertifyOptions opts = numeric();
    const Certificate cert = certify(original, stage->graph, opts);
    QVERIFY2(cert.pass(), cert.text().c_str());
}

// The GPT-2 block: h (residual_1's output) also feeds residual_2, so ln_2 stays
// apart even when both are sharded on the batch; after the attention expansion the
// mask add fuses into its softmax, sharded on the batch too, and certifies.
void TestFusePass::gpt2_block_tails() {
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    LoadResult loaded = load_project(std::filesystem::path(source.toStdString()) / "projects/gpt2_block.tapestry.json");
    QVERIFY(loaded.ok());
    {
        auto stage = fuse(sharded(loaded.graph, "residual_1:0=2 ln_2:0=2"), test::cpu_fuse());
        QVERIFY(stage.has_value());
        QVERIFY2(QString::fromStdString(stage->summary).contains("residual_1→{ln_2,residual_2} not fused: h has 2 consumers"),
                 stage->summary.c_str());
    }
    SubstituteOptions so;
    so.rules = {"attention-expand"};
    auto sub = substitute(loaded.graph, so);
    QVERIFY2(sub, sub ? "" : sub.error().c_str());
    const Graph input = sharded(sub->graph, "attention.add:0=2 attention.softmax:0=2");
    FuseOptions options = test::cpu_fuse();
    options.certify = numeric();
    auto stage = fuse(input, options);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY2(QString::fromStdString(stage->summary).contains("attention.add+attention.softmax"), stage->summary.c_str());
    const Operation *f = stage->graph.find_op(OpId("attention.add"));
    QVERIFY(f != nullptr);
    QCOMPARE(f->kind, std::string("fused"));
    QCOMPARE(f->params.get_string("chain", ""), std::string("add;softmax{axis=-1}"));
    QVERIFY(!f->shards.empty());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    QVERIFY(stage->certificate.find("numeric") != nullptr);
}

void TestFusePass::example_projects_certify_data() {
    QTest::addColumn<QString>("file");
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) return;
    std::vector<std::string> files;
    for (const auto &e : std::filesystem::directory_iterator(std::filesystem::path(source.toStdString()) / "projects"))
        if (e.path().string().ends_with(".tapestry.json")) files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    for (const std::string &f : files) QTest::newRow(f.c_str()) << QString::fromStdString(f);
}

// Every example project fuses into a graph that certifies against its input
// (structure, coverage, injectivity, dataflow, and numeric where it is cheap).
void TestFusePass::example_projects_certify() {
    QFETCH(QString, file);
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    LoadResult loaded = load_project(std::filesystem::path(source.toStdString()) / "projects" / file.toStdString());
    QVERIFY(loaded.ok());
    FuseOptions options = test::cpu_fuse();
    options.certify = CertifyOptions{};
    // Numerically too, except the full-size MLP (seconds of GEMMs; its small copy
    // above is certified numerically).
    if (file != "mlp.tapestry.json") options.certify->numeric = verify::numeric_check();
    auto stage = fuse(loaded.graph, options);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY2(stage->certificate.pass(), (stage->summary + "\n" + stage->certificate.text()).c_str());
}

QTEST_GUILESS_MAIN(TestFusePass)
#include "test_fuse_pass.moc"
