// Mutation test of the verifier (issue 5): deliberately broken rewrites of stages
// that certify — a dropped shard, overlapping outputs, a gap, a shifted shard
// read, an off-by-one halo, a wrong reduction, mismatched contraction blocks, a
// "commutative" matmul, a dropped activation, and broken versions of the passes'
// own nodes (a fused op without its epilogue, partials reduced by max, a move node
// missing a shard or a row) — must each be caught by the
// certificate, and by the check that is meant to catch it. The suite prints the
// score ("verifier mutation score: N/N caught"); every mutation must be caught.
#include <QtTest/QtTest>
#include <functional>

#include "io/project_file.h"
#include "numeric_certify.h"
#include "passes/certificate.h"
#include "passes/fuse.h"
#include "passes/shard.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

using test::parse;

// x[12, 6] → fc1 (linear + bias) → h[12, 8] → relu r1 → a[12, 8] → fc2 → y[12, 5].
const char *kChain = R"({
  "format": "tapestry-project", "version": 1, "name": "chain",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [12, 6], "role": "input"},
    {"id": "w1", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
    {"id": "b1", "dtype": "f32", "shape": [8], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [12, 8], "role": "intermediate"},
    {"id": "a", "dtype": "f32", "shape": [12, 8], "role": "intermediate"},
    {"id": "w2", "dtype": "f32", "shape": [8, 5], "role": "parameter"},
    {"id": "y", "dtype": "f32", "shape": [12, 5], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w1", "bias": "b1"}, "outputs": {"y": "h"}},
    {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "a"}},
    {"id": "fc2", "kind": "linear", "inputs": {"x": "a", "w": "w2"}, "outputs": {"y": "y"}}
  ]
})";

// Two 3x3 convolutions (padding 1) over x[1, 2, 8, 6]; the second is the one the
// halo mutations rewrite into a top and a bottom half.
const char *kConv = R"({
  "format": "tapestry-project", "version": 1, "name": "conv",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [1, 2, 8, 6], "role": "input"},
    {"id": "w1", "dtype": "f32", "shape": [3, 2, 3, 3], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [1, 3, 8, 6], "role": "intermediate"},
    {"id": "w2", "dtype": "f32", "shape": [2, 3, 3, 3], "role": "parameter"},
    {"id": "y", "dtype": "f32", "shape": [1, 2, 8, 6], "role": "output"}
  ],
  "operations": [
    {"id": "c1", "kind": "conv2d", "params": {"padding": [1, 1, 1, 1]},
     "inputs": {"x": "x", "w": "w1"}, "outputs": {"y": "h"}},
    {"id": "c2", "kind": "conv2d", "params": {"padding": [1, 1, 1, 1]},
     "inputs": {"x": "h", "w": "w2"}, "outputs": {"y": "y"}}
  ]
})";

// y = a · b, square, so swapping the operands still type-checks.
const char *kSquare = R"({
  "format": "tapestry-project", "version": 1, "name": "square",
  "tensors": [
    {"id": "a", "dtype": "f32", "shape": [6, 6], "role": "input"},
    {"id": "b", "dtype": "f32", "shape": [6, 6], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": [6, 6], "role": "output"}
  ],
  "operations": [{"id": "mm", "kind": "matmul", "inputs": {"a": "a", "b": "b"}, "outputs": {"y": "y"}}]
})";

// y = a[4, 6] · b[6, 5].
const char *kContraction = R"({
  "format": "tapestry-project", "version": 1, "name": "contraction",
  "tensors": [
    {"id": "a", "dtype": "f32", "shape": [4, 6], "role": "input"},
    {"id": "b", "dtype": "f32", "shape": [6, 5], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": [4, 5], "role": "output"}
  ],
  "operations": [{"id": "mm", "kind": "matmul", "inputs": {"a": "a", "b": "b"}, "outputs": {"y": "y"}}]
})";

TensorSelection sel(const char *tensor, std::vector<Coord> start, std::vector<Coord> end) {
    return TensorSelection{TensorId(tensor), ZRange(ZPoint(std::move(start)), ZPoint(std::move(end)))};
}

Tensor tensor(const char *id, std::vector<Coord> shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(ZPoint(std::move(shape)));
    t.role = role;
    return t;
}

// The contraction of kContraction as a rewrite would write it: two partial
// products over k blocks [0,3) and [3,6), then a sum. `a_block`/`b_block` pick
// the k block each partial reads (a correct rewrite pairs them), `combine` the kind
// that joins the partials.
Graph k_split(const std::vector<std::pair<Coord, Coord>> &a_block, const std::vector<std::pair<Coord, Coord>> &b_block,
              const std::string &combine) {
    Graph g;
    g.name = "contraction";
    g.put_tensor(tensor("a", {4, 6}, TensorRole::input));
    g.put_tensor(tensor("b", {6, 5}, TensorRole::input));
    g.put_tensor(tensor("p0", {4, 5}, TensorRole::intermediate));
    g.put_tensor(tensor("p1", {4, 5}, TensorRole::intermediate));
    g.put_tensor(tensor("y", {4, 5}, TensorRole::output));
    for (int p = 0; p < 2; ++p) {
        Operation op;
        op.id = OpId("mm.p" + std::to_string(p));
        op.kind = "matmul";
        const auto [a0, a1] = a_block[static_cast<size_t>(p)];
        const auto [b0, b1] = b_block[static_cast<size_t>(p)];
        op.inputs = {{"a", {sel("a", {0, a0}, {4, a1})}}, {"b", {sel("b", {b0, 0}, {b1, 5})}}};
        op.outputs = {{"y", {sel(p == 0 ? "p0" : "p1", {0, 0}, {4, 5})}}};
        g.put_op(std::move(op));
    }
    Operation sum;
    sum.id = OpId("mm.sum");
    sum.kind = combine;
    sum.inputs = {{"a", {sel("p0", {0, 0}, {4, 5})}}, {"b", {sel("p1", {0, 0}, {4, 5})}}};
    sum.outputs = {{"y", {sel("y", {0, 0}, {4, 5})}}};
    g.put_op(std::move(sum));
    return g;
}

// kConv's c2 rewritten as two convolutions, one per half of the output rows, each
// reading its rows of h plus the halo. `bottom_first_row` is the first row of h the
// bottom half reads (correct: 3, one halo row above its first output row 4);
// reading from row 4 instead and padding the missing row with zeros is the
// off-by-one halo.
Graph conv_halves(Coord bottom_first_row) {
    Graph g = parse(kConv);
    g.remove_op(OpId("c2"));
    Operation top;
    top.id = OpId("c2.top");
    top.kind = "conv2d";
    top.params.set("padding", std::vector<std::int64_t>{1, 1, 0, 1});
    top.inputs = {{"x", {sel("h", {0, 0, 0, 0}, {1, 3, 5, 6})}}, {"w", {sel("w2", {0, 0, 0, 0}, {2, 3, 3, 3})}}};
    top.outputs = {{"y", {sel("y", {0, 0, 0, 0}, {1, 2, 4, 6})}}};
    g.put_op(std::move(top));
    Operation bottom;
    bottom.id = OpId("c2.bottom");
    bottom.kind = "conv2d";
    const std::int64_t pad_top = bottom_first_row - 3;  // 0 when correct: the halo row is real data
    bottom.params.set("padding", std::vector<std::int64_t>{pad_top, 1, 1, 1});
    bottom.inputs = {{"x", {sel("h", {0, 0, bottom_first_row, 0}, {1, 3, 8, 6})}},
                     {"w", {sel("w2", {0, 0, 0, 0}, {2, 3, 3, 3})}}};
    bottom.outputs = {{"y", {sel("y", {0, 0, 4, 0}, {1, 2, 8, 6})}}};
    g.put_op(std::move(bottom));
    return g;
}

Graph sharded(const Graph &g, const std::vector<std::string> &specs, bool movement = false) {
    auto options = parse_shard_options(specs);
    TAPESTRY_CHECK(options.has_value(), "bad shard specs in the test");
    options->propagate = false;
    options->movement = movement;
    auto stage = shard(g, *options);
    TAPESTRY_CHECK(stage.has_value(), "the shard pass refused the test's specs");
    return stage->graph;
}

Graph edit_op(const Graph &g, const char *id, const std::function<void(Operation &)> &edit) {
    Graph out = g;
    Operation op = *g.find_op(OpId(id));
    edit(op);
    out.put_op(std::move(op));
    return out;
}

struct Mutation {
    std::string name;
    Graph original;
    Graph correct;  // the faithful rewrite: must certify
    Graph broken;   // the mutated rewrite: must not
    std::string expected_check;  // the check meant to catch it
};

std::vector<Mutation> mutations() {
    std::vector<Mutation> out;
    const Graph chain = parse(kChain);
    const Graph chain4 = sharded(chain, {"fc1:0=4", "r1:0=4", "fc2:0=4"});

    out.push_back({"dropped shard", chain, chain4,
                   edit_op(chain4, "fc1", [](Operation &op) { op.shards.erase(op.shards.begin() + 2); }), "coverage"});
    out.push_back({"overlapping outputs", chain, chain4, edit_op(chain4, "fc1", [](Operation &op) {
                       // fc1/1 grows one row into fc1/2's rows.
                       std::vector<Coord> end = op.shards[1].index.end().to_vector();
                       end[0] += 1;
                       op.shards[1].index = ZRange(op.shards[1].index.start(), ZPoint(end));
                       op.shards[1].outputs.clear();
                       op.shards[1].inputs.clear();
                   }),
                   "coverage"});
    out.push_back({"gap between shards", chain, chain4, edit_op(chain4, "r1", [](Operation &op) {
                       std::vector<Coord> end = op.shards[0].index.end().to_vector();
                       end[0] -= 1;
                       op.shards[0].index = ZRange(op.shards[0].index.start(), ZPoint(end));
                       op.shards[0].outputs.clear();
                       op.shards[0].inputs.clear();
                   }),
                   "coverage"});
    out.push_back({"shard reads shifted rows", chain, chain4, edit_op(chain4, "fc2", [](Operation &op) {
                       // fc2/1 states it reads a's rows one below the rows its index range needs.
                       Shard &s = op.shards[1];
                       const ZRange r = s.index;
                       s.inputs = {{"x", {sel("a", {r.start()[0] + 1, 0}, {r.end()[0] + 1, 8})}},
                                   {"w", {sel("w2", {0, 0}, {8, 5})}}};
                   }),
                   "structure"});
    Graph no_relu = chain4;
    no_relu.remove_op(OpId("r1"));
    no_relu.remove_tensor(TensorId("a"));
    no_relu = edit_op(no_relu, "fc2", [](Operation &op) {
        op.inputs[0].selections[0].tensor = TensorId("h");
        for (Shard &s : op.shards) s.inputs.clear();
    });
    out.push_back({"dropped activation", chain, chain4, no_relu, "numeric"});

    const Graph conv = parse(kConv);
    out.push_back({"off-by-one halo", conv, conv_halves(3), conv_halves(4), "numeric"});

    const Graph square = parse(kSquare);
    const Graph square2 = sharded(square, {"mm:0=2"});
    out.push_back({"commutative matmul", square, square2, edit_op(square2, "mm", [](Operation &op) {
                       std::swap(op.inputs[0].selections, op.inputs[1].selections);
                       for (Shard &s : op.shards) s.inputs.clear();
                   }),
                   "numeric"});

    const Graph contraction = parse(kContraction);
    const Graph ksplit = k_split({{0, 3}, {3, 6}}, {{0, 3}, {3, 6}}, "add");
    out.push_back({"wrong reduction (sub for sum)", contraction, ksplit,
                   k_split({{0, 3}, {3, 6}}, {{0, 3}, {3, 6}}, "sub"), "numeric"});
    out.push_back({"wrong reduction (mul for sum)", contraction, ksplit,
                   k_split({{0, 3}, {3, 6}}, {{0, 3}, {3, 6}}, "mul"), "numeric"});
    out.push_back({"mismatched contraction blocks", contraction, ksplit,
                   k_split({{0, 3}, {3, 6}}, {{3, 6}, {0, 3}}, "add"), "numeric"});

    // The passes' own node kinds. A fused op that lost its epilogue:
    auto fused_stage = fuse(chain4, test::cpu_fuse());
    TAPESTRY_CHECK(fused_stage.has_value(), "fuse failed in the test");
    const Graph fused = fused_stage->graph;
    TAPESTRY_CHECK(fused.find_op(OpId("fc1")) && fused.find_op(OpId("fc1"))->kind == "fused", "fc1 was not fused");
    out.push_back({"fused op without its epilogue", chain, fused, edit_op(fused, "fc1", [](Operation &op) {
                       op.params.set("chain", std::string("linear"));
                       op.params.set("chain_ports", std::vector<std::int64_t>{});
                   }),
                   "numeric"});
    out.push_back({"fused op with the wrong epilogue", chain, fused, edit_op(fused, "fc1", [](Operation &op) {
                       const auto *chain_text = op.params.find("chain");
                       TAPESTRY_CHECK(chain_text && std::get<std::string>(*chain_text) == "linear;relu",
                                      "unexpected fused chain in the test");
                       op.params.set("chain", std::string("linear;sigmoid"));
                   }),
                   "numeric"});
    // Partial products of fc2's contraction reduced by max instead of sum:
    const Graph ksplit2 = sharded(chain, {"fc2:2=2"});
    TAPESTRY_CHECK(ksplit2.find_op(OpId("fc2.reduce")) != nullptr, "fc2 was not split on its contraction");
    out.push_back({"partials reduced by max", chain, ksplit2,
                   edit_op(ksplit2, "fc2.reduce", [](Operation &op) { op.kind = "reduce_max"; }), "numeric"});
    // Halo exchange between two convolutions sharded 4-way on H and 3-way on H:
    const Graph halo = sharded(conv, {"c1:2=4", "c2:2=3"}, true);
    OpId move;
    for (const OpPtr &op : halo.operations())
        if (op->kind == "move") move = op->id;
    TAPESTRY_CHECK(!move.value.empty(), "no move node between the convolutions");
    out.push_back({"move node drops a shard", conv, halo, edit_op(halo, move.value.c_str(), [](Operation &op) {
                       op.shards.pop_back();
                   }),
                   "coverage"});
    out.push_back({"move node one row short", conv, halo, edit_op(halo, move.value.c_str(), [](Operation &op) {
                       std::vector<Coord> end = op.shards[1].index.end().to_vector();
                       end[2] -= 1;
                       op.shards[1].index = ZRange(op.shards[1].index.start(), ZPoint(end));
                       op.shards[1].inputs.clear();
                       op.shards[1].outputs.clear();
                   }),
                   "coverage"});
    return out;
}

CertifyOptions numeric() {
    verify::NumericCheckOptions o;
    o.seed = 7;
    return test::numeric_certify(o);
}

std::string failed(const Certificate &c) {
    std::string s;
    for (const CertificateCheck &k : c.checks)
        if (!k.pass) s += (s.empty() ? "" : ",") + k.name;
    return s;
}

}  // namespace

class TestVerifierMutations : public QObject {
    Q_OBJECT

private slots:
    void faithful_rewrites_certify_data();
    void faithful_rewrites_certify();
    void every_mutation_is_caught();
};

void TestVerifierMutations::faithful_rewrites_certify_data() {
    QTest::addColumn<int>("index");
    const auto all = mutations();
    for (size_t i = 0; i < all.size(); ++i) QTest::newRow(all[i].name.c_str()) << static_cast<int>(i);
}

// The control: without the mutation each rewrite passes every check, so a caught
// mutation is caught because of the mutation.
void TestVerifierMutations::faithful_rewrites_certify() {
    QFETCH(int, index);
    const Mutation m = mutations()[static_cast<size_t>(index)];
    const Certificate c = certify(m.original, m.correct, numeric());
    QVERIFY2(c.pass(), c.text().c_str());
    QVERIFY(c.find("numeric") != nullptr);
}

void TestVerifierMutations::every_mutation_is_caught() {
    const auto all = mutations();
    int caught = 0;
    QStringList missed, misattributed;
    for (const Mutation &m : all) {
        const Certificate c = certify(m.original, m.broken, numeric());
        const CertificateCheck *expected = c.find(m.expected_check);
        if (c.pass()) {
            missed << QString::fromStdString(m.name);
            continue;
        }
        ++caught;
        if (!expected || expected->pass)
            misattributed << QString::fromStdString(m.name + " (caught by " + failed(c) + ", expected " +
                                                    m.expected_check + ")");
        qInfo("%-32s caught by %s: %s", m.name.c_str(), failed(c).c_str(),
              c.checks.empty() ? "" : [&] {
                  for (const CertificateCheck &k : c.checks)
                      if (!k.pass) return k.message.c_str();
                  return "";
              }());
    }
    qInfo("verifier mutation score: %d/%d caught", caught, static_cast<int>(all.size()));
    QVERIFY2(missed.isEmpty(), qPrintable("not caught: " + missed.join("; ")));
    QVERIFY2(misattributed.isEmpty(), qPrintable(misattributed.join("; ")));
}

QTEST_GUILESS_MAIN(TestVerifierMutations)
#include "test_verifier_mutations.moc"
