// Sharding propagation (engine/passes/propagate.h): a batch split of the MLP's first
// layer spreads over the whole chain, forward and backward, uneven and grid splits
// keep their boundaries, and propagation stops where a neighbour's map is not
// one-to-one (contractions, convolution windows, reduction dims) and never touches
// an op that already has shards. Golden text: tests/data/passes/*propagate*.golden.
#include <QtTest/QtTest>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "verify/numeric_check.h"
#include "passes/movement.h"
#include "passes/propagate.h"
#include "passes/shard.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

// x[B, 6] → fc1 → gelu1 → fc2 → relu2 → fc3 → gelu3 → fc4 → y[B, 6]: the MLP of
// projects/mlp.tapestry.json with small widths.
std::string small_mlp_text(int batch) {
    const std::string b = std::to_string(batch);
    std::string t = R"({"format": "tapestry-project", "version": 1, "name": "small mlp", "tensors": [
      {"id": "x", "dtype": "f32", "shape": [B, 6], "role": "input"},
      {"id": "w1", "dtype": "f32", "shape": [6, 12], "role": "parameter"},
      {"id": "b1", "dtype": "f32", "shape": [12], "role": "parameter"},
      {"id": "h1", "dtype": "f32", "shape": [B, 12], "role": "intermediate"}, {"id": "a1", "dtype": "f32", "shape": [B, 12], "role": "intermediate"},
      {"id": "w2", "dtype": "f32", "shape": [12, 12], "role": "parameter"},
      {"id": "b2", "dtype": "f32", "shape": [12], "role": "parameter"},
      {"id": "h2", "dtype": "f32", "shape": [B, 12], "role": "intermediate"}, {"id": "a2", "dtype": "f32", "shape": [B, 12], "role": "intermediate"},
      {"id": "w3", "dtype": "f32", "shape": [12, 12], "role": "parameter"},
      {"id": "b3", "dtype": "f32", "shape": [12], "role": "parameter"},
      {"id": "h3", "dtype": "f32", "shape": [B, 12], "role": "intermediate"}, {"id": "a3", "dtype": "f32", "shape": [B, 12], "role": "intermediate"},
      {"id": "w4", "dtype": "f32", "shape": [12, 6], "role": "parameter"},
      {"id": "b4", "dtype": "f32", "shape": [6], "role": "parameter"},
      {"id": "y", "dtype": "f32", "shape": [B, 6], "role": "output"}],
     "operations": [
      {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w1", "bias": "b1"}, "outputs": {"y": "h1"}},
      {"id": "gelu1", "kind": "gelu", "inputs": {"x": "h1"}, "outputs": {"y": "a1"}},
      {"id": "fc2", "kind": "linear", "inputs": {"x": "a1", "w": "w2", "bias": "b2"}, "outputs": {"y": "h2"}},
      {"id": "relu2", "kind": "relu", "inputs": {"x": "h2"}, "outputs": {"y": "a2"}},
      {"id": "fc3", "kind": "linear", "inputs": {"x": "a2", "w": "w3", "bias": "b3"}, "outputs": {"y": "h3"}},
      {"id": "gelu3", "kind": "gelu", "inputs": {"x": "h3"}, "outputs": {"y": "a3"}},
      {"id": "fc4", "kind": "linear", "inputs": {"x": "a3", "w": "w4", "bias": "b4"}, "outputs": {"y": "y"}}]})";
    for (size_t p = t.find("[B,"); p != std::string::npos; p = t.find("[B,")) t.replace(p + 1, 1, b);
    return t;
}

using test::parse;

using test::source_dir;

// The example MLP without the shards its file states (the tests shard it themselves).
Graph mlp_unsharded() {
    LoadResult r = load_project(source_dir() / "projects/mlp.tapestry.json");
    TAPESTRY_CHECK(r.ok(), "projects/mlp.tapestry.json does not load");
    Graph g = r.graph;
    for (const OpPtr &op : r.graph.operations()) {
        Operation o = *op;
        o.shards.clear();
        g.put_op(std::move(o));
    }
    return g;
}

Expected<Stage, std::string> run(const Graph &g, const std::vector<std::string> &specs, bool movement = true,
                                 const SignatureSource *lib = nullptr) {
    auto options = parse_shard_options(specs);
    if (!options) return unexpected(options.error());
    options->movement = movement;
    options->library = lib;
    return shard(g, *options);
}

QString shards_text(const Graph &g, const std::string &op) {
    QStringList out;
    for (const Shard &s : g.find_op(OpId(op))->shards)
        out << QString::fromStdString(s.id.value + " " + range_text(s.index));
    return out.join(", ");
}

// The standard library plus "rowsum": index space [n, k] reading x[n, k], writing
// y[n] — dim 1 is a reduction dim of the index space.
class WithRowSum : public SignatureSource {
public:
    bool knows(const std::string &kind) const override { return kind == "rowsum" || OpLibrary::standard().knows(kind); }
    Expected<Derivation, DerivationError> derive(const std::string &kind, const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        if (kind != "rowsum") return OpLibrary::standard().derive(kind, params, inputs);
        const ZPoint shape = inputs.at(0).operands.at(0).shape;
        Derivation d;
        d.outputs.push_back(PortTypes{"y", {OperandType{DType::f32, ZPoint{shape[0]}}}});
        d.signature.index_space = ZRange::of_shape(shape);
        d.signature.inputs.push_back(PortProjections{"x", {OperandProjection{IndexProjection::identity(2), false}}});
        d.signature.outputs.push_back(PortProjections{
            "y",
            {OperandProjection{IndexProjection(AffineMap(ZMatrix::from_rows({{1, 0}}, 2), ZPoint{0}), ZPoint{1}),
                               false}}});
        return d;
    }
};

std::string read_file(const std::filesystem::path &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

class TestPropagate : public QObject {
    Q_OBJECT
private slots:
    void mlp_batch_split_spreads_over_the_chain();
    void mlp_golden();
    void small_mlp_certifies_numerically_data();
    void small_mlp_certifies_numerically();
    void backward_to_a_producer();
    void uneven_and_grid_boundaries_carry_over();
    void stops_where_the_map_is_not_one_to_one();
    void never_onto_a_reduction_dim();
    void never_touches_a_sharded_op();
    void deterministic();
};

void TestPropagate::mlp_batch_split_spreads_over_the_chain() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    const Graph g = mlp_unsharded();
    auto stage = run(g, {"fc1:0=4"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    for (const char *op : {"fc1", "gelu1", "fc2", "relu2", "fc3", "gelu3", "fc4"}) {
        const Operation *o = stage->graph.find_op(OpId(op));
        QCOMPARE(o->shards.size(), size_t(4));
        for (size_t k = 0; k < 4; ++k) {
            QCOMPARE(o->shards[k].id.value, std::string(op) + "/" + std::to_string(k));
            QCOMPARE(o->shards[k].index.start()[0], Coord(128 * k));
            QCOMPARE(o->shards[k].index.end()[0], Coord(128 * (k + 1)));
            QCOMPARE(o->shards[k].index.extent(1), stage->graph.find_tensor(o->output_tensors()[0])->range.extent(1));
        }
    }
    // Same selections everywhere: nothing moves, nothing is inserted.
    QCOMPARE(stage->graph.operations().size(), g.operations().size());
    QVERIFY(data_movement(stage->graph, OpLibrary::standard()).empty());
    QVERIFY2(stage->summary.find("; propagated to 6 ops") != std::string::npos, stage->summary.c_str());
    QVERIFY2(stage->summary.find("moves") == std::string::npos, stage->summary.c_str());
    const Certificate c = certify(g, stage->graph);
    QVERIFY2(c.pass(), c.text().c_str());
}

void TestPropagate::mlp_golden() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    const Graph g = mlp_unsharded();
    auto stage = run(g, {"fc1:0=4"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    stage->certificate = certify(g, stage->graph);
    const std::string actual = stage_text(*stage, 1);
    const auto path = source_dir() / "tests/data/passes/mlp_fc1_batch4_propagated.golden";
    if (qgetenv("TAPESTRY_UPDATE_GOLDEN") == "1") std::ofstream(path, std::ios::binary) << actual;
    QCOMPARE(QString::fromStdString(actual), QString::fromStdString(read_file(path)));
}

void TestPropagate::small_mlp_certifies_numerically_data() {
    QTest::addColumn<QStringList>("specs");
    QTest::addColumn<int>("propagated");
    QTest::newRow("fc1 batch 4") << QStringList{"fc1:0=4"} << 6;
    QTest::newRow("fc1 batch uneven") << QStringList{"fc1:0=1+4+5"} << 6;
    QTest::newRow("relu2 batch 3, backward too") << QStringList{"relu2:0=3"} << 6;
    QTest::newRow("fc1 features 2") << QStringList{"fc1:1=2"} << 1;  // gelu1; fc2 contracts over them
}

void TestPropagate::small_mlp_certifies_numerically() {
    QFETCH(QStringList, specs);
    QFETCH(int, propagated);
    const Graph g = parse(small_mlp_text(10));
    std::vector<std::string> list;
    for (const QString &s : specs) list.push_back(s.toStdString());
    auto stage = run(g, list);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    const std::string said = "propagated to " + std::to_string(propagated) + (propagated == 1 ? " op" : " ops");
    QVERIFY2(stage->summary.find(said) != std::string::npos, stage->summary.c_str());
    CertifyOptions o;
    o.numeric = verify::numeric_check();
    const Certificate c = certify(g, stage->graph, o);
    QVERIFY2(c.pass(), c.text().c_str());
    QVERIFY(c.find("numeric"));
}

void TestPropagate::backward_to_a_producer() {
    const Graph g = parse(small_mlp_text(8));
    auto stage = run(g, {"fc4:0=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    // fc4's batch split reaches every op upstream through the batch rows.
    for (const char *op : {"gelu3", "fc3", "relu2", "fc2", "gelu1", "fc1"})
        QCOMPARE(shards_text(stage->graph, op), QString("%1/0 [0,4)x[0,12), %1/1 [4,8)x[0,12)").arg(op));
}

void TestPropagate::uneven_and_grid_boundaries_carry_over() {
    const Graph g = parse(small_mlp_text(10));
    auto uneven = run(g, {"fc1:0=1+4+5"});
    QVERIFY2(uneven, uneven ? "" : uneven.error().c_str());
    QCOMPARE(shards_text(uneven->graph, "relu2"),
             QString("relu2/0 [0,1)x[0,12), relu2/1 [1,5)x[0,12), relu2/2 [5,10)x[0,12)"));
    // A 2×2 grid on gelu1 carries to fc1 (backward) but not to fc2, whose
    // contraction takes a1's feature dim.
    auto grid = run(g, {"gelu1:0=2", "gelu1:1=2"}, false);
    QVERIFY2(grid, grid ? "" : grid.error().c_str());
    QCOMPARE(shards_text(grid->graph, "fc1"),
             QString("fc1/0 [0,5)x[0,6), fc1/1 [0,5)x[6,12), fc1/2 [5,10)x[0,6), fc1/3 [5,10)x[6,12)"));
    QVERIFY(grid->graph.find_op(OpId("fc2"))->shards.empty());
    QVERIFY2(grid->summary.find("propagated to 1 op") != std::string::npos, grid->summary.c_str());
}

void TestPropagate::stops_where_the_map_is_not_one_to_one() {
    // relu sharded on H feeds a 3×3 convolution: its window makes the map not one-to-one.
    const char *text = R"({"format": "tapestry-project", "version": 1, "name": "relu conv", "tensors": [
      {"id": "x", "dtype": "f32", "shape": [1, 2, 8, 4], "role": "input"},
      {"id": "r", "dtype": "f32", "shape": [1, 2, 8, 4], "role": "intermediate"},
      {"id": "w", "dtype": "f32", "shape": [3, 2, 3, 3], "role": "parameter"},
      {"id": "y", "dtype": "f32", "shape": [1, 3, 8, 4], "role": "output"}],
     "operations": [
      {"id": "act", "kind": "relu", "inputs": {"x": "x"}, "outputs": {"y": "r"}},
      {"id": "conv", "kind": "conv2d", "params": {"padding": [1, 1, 1, 1]}, "inputs": {"x": "r", "w": "w"},
       "outputs": {"y": "y"}}]})";
    const Graph g = parse(text);
    auto stage = run(g, {"act:2=2"}, false);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY(stage->graph.find_op(OpId("conv"))->shards.empty());
    QCOMPARE(stage->summary.find("propagated"), std::string::npos);
    // Nor backward: the conv's output channels are no dim of r.
    auto channels = run(g, {"conv:1=3"}, false);
    QVERIFY2(channels, channels ? "" : channels.error().c_str());
    QVERIFY(channels->graph.find_op(OpId("act"))->shards.empty());
}

void TestPropagate::never_onto_a_reduction_dim() {
    Graph g;
    const ZRange r46 = ZRange::of_shape({4, 6});
    g.put_tensor(Tensor{TensorId("x"), "x", DType::f32, r46, TensorRole::input, {}, {}});
    g.put_tensor(Tensor{TensorId("r"), "r", DType::f32, r46, TensorRole::intermediate, {}, {}});
    g.put_tensor(Tensor{TensorId("s"), "s", DType::f32, ZRange::of_shape({4}), TensorRole::output, {}, {}});
    Operation act;
    act.id = OpId("act");
    act.kind = "relu";
    act.inputs.push_back(PortBinding{"x", {TensorSelection{TensorId("x"), r46}}});
    act.outputs.push_back(PortBinding{"y", {TensorSelection{TensorId("r"), r46}}});
    g.put_op(act);
    Operation sum;
    sum.id = OpId("sum1");
    sum.kind = "rowsum";
    sum.inputs.push_back(PortBinding{"x", {TensorSelection{TensorId("r"), r46}}});
    sum.outputs.push_back(PortBinding{"y", {TensorSelection{TensorId("s"), ZRange::of_shape({4})}}});
    g.put_op(sum);
    const WithRowSum lib;
    // r's dim 1 maps one-to-one onto sum1's dim 1, but that dim is a reduction.
    auto cols = run(g, {"act:1=2"}, false, &lib);
    QVERIFY2(cols, cols ? "" : cols.error().c_str());
    QVERIFY(cols->graph.find_op(OpId("sum1"))->shards.empty());
    // Its dim 0 is not.
    auto rows = run(g, {"act:0=2"}, false, &lib);
    QVERIFY2(rows, rows ? "" : rows.error().c_str());
    QCOMPARE(shards_text(rows->graph, "sum1"), QString("sum1/0 [0,2)x[0,6), sum1/1 [2,4)x[0,6)"));
}

void TestPropagate::never_touches_a_sharded_op() {
    const Graph g0 = parse(small_mlp_text(8));
    // A previous stage sharded relu2 on its features; fc1 is now split on batch.
    auto before = run(g0, {"relu2:1=3"}, false);
    QVERIFY2(before, before ? "" : before.error().c_str());
    const Graph &g = before->graph;
    const OpPtr relu2 = g.op_ptr(OpId("relu2"));
    const OpPtr fc2 = g.op_ptr(OpId("fc2"));  // got relu2's feature split by propagation
    QVERIFY(!fc2->shards.empty());
    auto options = parse_shard_options({"fc1:0=2"});
    QVERIFY(options);
    options->movement = false;
    auto stage = shard(g, *options);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY(stage->graph.op_ptr(OpId("relu2")) == relu2);
    QVERIFY(stage->graph.op_ptr(OpId("fc2")) == fc2);
    QCOMPARE(shards_text(stage->graph, "gelu1"), QString("gelu1/0 [0,4)x[0,12), gelu1/1 [4,8)x[0,12)"));
    // An op named by a spec of the same run keeps the node its spec made: the diff
    // records one change for it, and that node is the stage's.
    auto same_run = run(g0, {"fc1:0=2", "relu2:1=3"}, false);
    QVERIFY2(same_run, same_run ? "" : same_run.error().c_str());
    int relu2_changes = 0;
    for (const NodeChange &ch : same_run->diff.changes())
        if (ch.id == "relu2") {
            ++relu2_changes;
            QVERIFY(ch.op_after == same_run->graph.op_ptr(OpId("relu2")));
        }
    QCOMPARE(relu2_changes, 1);
    QCOMPARE(shards_text(same_run->graph, "relu2"),
             QString("relu2/0 [0,8)x[0,4), relu2/1 [0,8)x[4,8), relu2/2 [0,8)x[8,12)"));

    // Directly on the rewriter: a second run keeps every sharded op's pointer.
    Graph copy = stage->graph;
    RecordingRewriter rw(copy);
    const std::vector<OpId> given = propagate_shardings(rw, OpLibrary::standard());
    for (const OpPtr &op : stage->graph.operations())
        if (!op->shards.empty()) QVERIFY2(copy.op_ptr(op->id) == op, op->id.value.c_str());
    for (const OpId &id : given) QVERIFY(stage->graph.find_op(id)->shards.empty());
}

void TestPropagate::deterministic() {
    const Graph g = parse(small_mlp_text(9));
    auto a = run(g, {"fc1:0=3", "relu2:1=2"});
    auto b = run(g, {"fc1:0=3", "relu2:1=2"});
    QVERIFY(a && b);
    QCOMPARE(QString::fromStdString(stage_text(*a, 1)), QString::fromStdString(stage_text(*b, 1)));
}

QTEST_GUILESS_MAIN(TestPropagate)
#include "test_propagate.moc"
