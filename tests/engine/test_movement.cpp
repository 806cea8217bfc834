// Data movement (engine/passes/movement.h) and the `move` kind: where consumer
// shards read what other producer shards wrote, the shard pass inserts a move
// labelled all_gather, send_recv (halo exchange), reduce_scatter or all_reduce, and
// data_movement() counts exactly the elements each shard-to-shard transfer carries —
// checked here against counts worked out by hand. Every stage certifies, numerically too.
#include <QtTest/QtTest>
#include <filesystem>
#include <fstream>
#include <random>

#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "verify/numeric_check.h"
#include "passes/movement.h"
#include "passes/shard.h"
#include "runtime/cpu/kernel.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

std::string small_mlp_text(int batch) {
    return test::mlp_project_text(batch);
}

// x[N, C, H, W] → conv c1 (K1 filters R×R, padding R/2) → t → conv c2 (K2 filters) → y.
std::string conv_chain_text(int n, int c, int h, int w, int k1, int k2, int r) {
    auto s = [](int v) { return std::to_string(v); };
    const std::string pad = s(r / 2);
    const std::string shape_t = "[" + s(n) + ", " + s(k1) + ", " + s(h) + ", " + s(w) + "]";
    return R"({"format": "tapestry-project", "version": 1, "name": "conv chain", "tensors": [
      {"id": "x", "dtype": "f32", "shape": [)" +
           s(n) + ", " + s(c) + ", " + s(h) + ", " + s(w) + R"(], "role": "input"},
      {"id": "w1", "dtype": "f32", "shape": [)" +
           s(k1) + ", " + s(c) + ", " + s(r) + ", " + s(r) + R"(], "role": "parameter"},
      {"id": "t", "dtype": "f32", "shape": )" +
           shape_t + R"(, "role": "intermediate"},
      {"id": "w2", "dtype": "f32", "shape": [)" +
           s(k2) + ", " + s(k1) + ", " + s(r) + ", " + s(r) + R"(], "role": "parameter"},
      {"id": "y", "dtype": "f32", "shape": [)" +
           s(n) + ", " + s(k2) + ", " + s(h) + ", " + s(w) + R"(], "role": "output"}],
     "operations": [
      {"id": "c1", "kind": "conv2d", "params": {"padding": [)" +
           pad + ", " + pad + ", " + pad + ", " + pad + R"(]},
       "inputs": {"x": "x", "w": "w1"}, "outputs": {"y": "t"}},
      {"id": "c2", "kind": "conv2d", "params": {"padding": [)" +
           pad + ", " + pad + ", " + pad + ", " + pad + R"(]},
       "inputs": {"x": "t", "w": "w2"}, "outputs": {"y": "y"}}]})";
}

using test::parse;

using test::source_dir;

Expected<Stage, std::string> run(const Graph &g, const QStringList &specs, bool propagate = true) {
    std::vector<std::string> list;
    for (const QString &s : specs) list.push_back(s.toStdString());
    auto options = parse_shard_options(list);
    if (!options) return unexpected(options.error());
    options->propagate = propagate;
    return shard(g, *options);
}

// "from->to elements" per transfer, in data_movement()'s order.
QStringList transfers_text(const std::vector<Transfer> &ts) {
    QStringList out;
    for (const Transfer &t : ts)
        out << QString::fromStdString(t.collective + " " + t.tensor.value + " " + t.from_shard.value + "->" +
                                      t.to_shard.value + " " + std::to_string(t.elements));
    return out;
}

void verify_numeric(const Graph &original, const Graph &stage) {
    CertifyOptions o;
    o.numeric = verify::numeric_check();
    const Certificate c = certify(original, stage, o);
    QVERIFY2(c.pass(), c.text().c_str());
    QVERIFY(c.find("numeric"));
}

std::string read_file(const std::filesystem::path &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

class TestMovement : public QObject {
    Q_OBJECT
private slots:
    void mlp_all_gather_golden();
    void small_mlp_all_gather_counts();
    void conv_halo_exchange_data();
    void conv_halo_exchange();
    void reductions_of_partials_data();
    void reductions_of_partials();
    void partial_products_meet_their_reduction();
    void same_selection_inserts_nothing();
    void a_move_that_drops_a_shard_fails_certification();
    void random_specs_certify();
    void move_kind();
};

void TestMovement::mlp_all_gather_golden() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    LoadResult loaded = load_project(source_dir() / "projects/mlp.tapestry.json");
    QVERIFY(loaded.ok());
    Graph g = loaded.graph;
    for (const OpPtr &op : loaded.graph.operations()) {  // the tests shard it themselves
        Operation o = *op;
        o.shards.clear();
        g.put_op(std::move(o));
    }
    auto stage = run(g, {"fc1:0=4", "fc2:1=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    // By hand: fc1's batch split reaches gelu1 (4 × 128 rows of a1); fc2's two
    // output-feature shards each read all 512 rows of a1, so each gets the 3 × 128 × 4096
    // elements the three gelu1 shards on other devices wrote: an all-gather. fc2's split
    // reaches relu2 (2 × 2048 columns of a2); fc3 (unsharded, device 0) contracts over
    // all of a2 and gets relu2/1's 512 × 2048 elements: a send/recv.
    const QStringList expected{"all_gather a1 gelu1/0->fc2/1 524288", "all_gather a1 gelu1/1->fc2/0 524288",
                               "all_gather a1 gelu1/2->fc2/0 524288", "all_gather a1 gelu1/2->fc2/1 524288",
                               "all_gather a1 gelu1/3->fc2/0 524288", "all_gather a1 gelu1/3->fc2/1 524288",
                               "send_recv a2 relu2/1->fc3 1048576"};
    const auto moves = data_movement(stage->graph, OpLibrary::standard());
    QCOMPARE(transfers_text(moves), expected);
    for (const Transfer &t : moves) QCOMPARE(t.bytes, t.elements * 4);
    QVERIFY2(stage->summary.find("; moves 4194304 elements (16777216 bytes) in 7 transfers: all_gather 6, "
                                 "send_recv 1") != std::string::npos,
             stage->summary.c_str());
    stage->certificate = certify(g, stage->graph);
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    const std::string actual = stage_text(*stage, 1);
    const auto path = source_dir() / "tests/data/passes/mlp_fc1_batch4_fc2_out2_move.golden";
    if (qgetenv("TAPESTRY_UPDATE_GOLDEN") == "1") std::ofstream(path, std::ios::binary) << actual;
    QCOMPARE(QString::fromStdString(actual), QString::fromStdString(read_file(path)));
}

void TestMovement::small_mlp_all_gather_counts() {
    const Graph g = parse(small_mlp_text(8));
    auto stage = run(g, {"fc1:0=4", "fc2:1=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    // 2 rows × 12 features per gelu1 shard; relu2/1 holds 8 rows × 6 features.
    const QStringList expected{"all_gather a1 gelu1/0->fc2/1 24", "all_gather a1 gelu1/1->fc2/0 24",
                               "all_gather a1 gelu1/2->fc2/0 24", "all_gather a1 gelu1/2->fc2/1 24",
                               "all_gather a1 gelu1/3->fc2/0 24", "all_gather a1 gelu1/3->fc2/1 24",
                               "send_recv a2 relu2/1->fc3 48"};
    QCOMPARE(transfers_text(data_movement(stage->graph)), expected);
    // The moves sit between the tensors and their consumers, sharded like the producers.
    const Operation *move = stage->graph.find_op(OpId("move.a1.fc2"));
    QVERIFY(move);
    QCOMPARE(move->kind, std::string("move"));
    QCOMPARE(move->params.get_string("collective", ""), std::string("all_gather"));
    QCOMPARE(move->shards.size(), size_t(4));
    QCOMPARE(move->shards[1].index, ZRange({2, 0}, {4, 12}));
    QCOMPARE(stage->graph.find_op(OpId("fc2"))->input("x")->selections[0].tensor.value, std::string("a1.all_gather"));
    QCOMPARE(stage->graph.find_op(OpId("fc3"))->input("x")->selections[0].tensor.value, std::string("a2.send_recv"));
    QVERIFY(stage->graph.find_op(OpId("move.a2.fc3"))->shards.size() == 2);
    verify_numeric(g, stage->graph);
}

void TestMovement::conv_halo_exchange_data() {
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("r");
    QTest::addColumn<QString>("parts");
    QTest::addColumn<QStringList>("rows");  // "from->to rows" worked out by hand
    // 3×3, padding 1: shard k of c2 reads one row above and below its own rows.
    const QStringList ring{"c1/0->c2/1 1", "c1/1->c2/0 1", "c1/1->c2/2 1",
                           "c1/2->c2/1 1", "c1/2->c2/3 1", "c1/3->c2/2 1"};
    QTest::newRow("3x3, H 8 into 4") << 8 << 3 << "4" << ring;
    QTest::newRow("3x3, H 10 into 3,3,2,2") << 10 << 3 << "4" << ring;
    // 5×5, padding 2, rows {0}, {1..4}, {5..9}: c2/0 reads rows 0..2 (1, 2 from c1/1);
    // c2/1 reads 0..6 (0 from c1/0; 5, 6 from c1/2); c2/2 reads 3..9 (3, 4 from c1/1).
    QTest::newRow("5x5, H 10 into 1+4+5")
        << 10 << 5 << "1+4+5" << QStringList{"c1/0->c2/1 1", "c1/1->c2/0 2", "c1/1->c2/2 2", "c1/2->c2/1 2"};
}

void TestMovement::conv_halo_exchange() {
    QFETCH(int, h);
    QFETCH(int, r);
    QFETCH(QString, parts);
    QFETCH(QStringList, rows);
    const int n = 2, c = 3, w = 5, k1 = 4, k2 = 2;
    const Graph g = parse(conv_chain_text(n, c, h, w, k1, k2, r));
    auto stage = run(g, {"c1:2=" + parts, "c2:2=" + parts});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QStringList expected;
    std::int64_t total = 0;
    for (const QString &row : rows) {
        const QStringList f = row.split(' ');
        const std::int64_t elements = f[1].toLongLong() * w * k1 * n;  // rows × width × channels × batch
        total += elements;
        expected << "send_recv t " + f[0] + " " + QString::number(elements);
    }
    QCOMPARE(transfers_text(data_movement(stage->graph, OpLibrary::standard())), expected);
    const std::string said = "moves " + std::to_string(total) + " elements (" + std::to_string(total * 4) +
                             " bytes) in " + std::to_string(rows.size()) + " transfers: send_recv " +
                             std::to_string(rows.size());
    QVERIFY2(stage->summary.find(said) != std::string::npos, stage->summary.c_str());
    QVERIFY(stage->graph.find_op(OpId("move.t.c2")));
    verify_numeric(g, stage->graph);
}

void TestMovement::reductions_of_partials_data() {
    QTest::addColumn<QStringList>("specs");
    QTest::addColumn<QStringList>("transfers");
    // r[4, 6] in four row shards, summed over its rows.
    QTest::newRow("unsharded sum: all_reduce")
        << QStringList{"act:0=4"}
        << QStringList{"all_reduce r act/1->sum 6", "all_reduce r act/2->sum 6", "all_reduce r act/3->sum 6"};
    QTest::newRow("sum split on columns: reduce_scatter")
        << QStringList{"act:0=4", "sum:1=2"}
        << QStringList{"reduce_scatter r act/0->sum/1 3", "reduce_scatter r act/1->sum/0 3",
                       "reduce_scatter r act/2->sum/0 3", "reduce_scatter r act/2->sum/1 3",
                       "reduce_scatter r act/3->sum/0 3", "reduce_scatter r act/3->sum/1 3"};
}

void TestMovement::reductions_of_partials() {
    QFETCH(QStringList, specs);
    QFETCH(QStringList, transfers);
    const Graph g = parse(R"({"format": "tapestry-project", "version": 1, "name": "sum", "tensors": [
      {"id": "x", "dtype": "f32", "shape": [4, 6], "role": "input"}, {"id": "r", "dtype": "f32", "shape": [4, 6], "role": "intermediate"},
      {"id": "s", "dtype": "f32", "shape": [1, 6], "role": "output"}],
     "operations": [
      {"id": "act", "kind": "relu", "inputs": {"x": "x"}, "outputs": {"y": "r"}},
      {"id": "sum", "kind": "reduce_sum", "params": {"axes": [0]}, "inputs": {"x": "r"}, "outputs": {"y": "s"}}]})");
    auto stage = run(g, specs);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(transfers_text(data_movement(stage->graph, OpLibrary::standard())), transfers);
    verify_numeric(g, stage->graph);
}

void TestMovement::partial_products_meet_their_reduction() {
    // fc1's contraction (dim 2) in two blocks: the monoid split writes partials
    // [2, 8, 12] from shards fc1/0, fc1/1; the unsharded reduce on device 0 sums them,
    // so fc1/1's 8 × 12 partial sums travel: an all-reduce.
    const Graph g = parse(small_mlp_text(8));
    auto stage = run(g, {"fc1:2=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(transfers_text(data_movement(stage->graph, OpLibrary::standard())),
             QStringList{"all_reduce fc1.partials fc1/1->fc1.reduce 96"});
    verify_numeric(g, stage->graph);
    // With the reduce split on batch too (a later spec), each reduce shard sums the
    // rows of both partial shards: a reduce-scatter.
    auto scattered = run(g, {"fc1:2=2", "fc1.reduce:0=2"});
    QVERIFY2(scattered, scattered ? "" : scattered.error().c_str());
    QCOMPARE(transfers_text(data_movement(scattered->graph, OpLibrary::standard())),
             (QStringList{"reduce_scatter fc1.partials fc1/0->fc1.reduce/1 48",
                          "reduce_scatter fc1.partials fc1/1->fc1.reduce/0 48"}));
    verify_numeric(g, scattered->graph);
}

void TestMovement::same_selection_inserts_nothing() {
    const Graph g = parse(small_mlp_text(8));
    auto stage = run(g, {"fc1:0=2", "gelu1:0=2"}, false);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    // fc2 is unsharded (device 0) and reads all of a1: that one moves; h1 does not.
    QVERIFY(!stage->graph.find_op(OpId("move.h1.gelu1")));
    QCOMPARE(transfers_text(data_movement(stage->graph, OpLibrary::standard())),
             QStringList{"send_recv a1 gelu1/1->fc2 48"});
    // With propagation the whole chain is split alike and nothing moves at all.
    auto all = run(g, {"fc1:0=2"});
    QVERIFY2(all, all ? "" : all.error().c_str());
    QCOMPARE(all->graph.operations().size(), g.operations().size());
    QVERIFY(data_movement(all->graph, OpLibrary::standard()).empty());
}

void TestMovement::a_move_that_drops_a_shard_fails_certification() {
    // The verifier catches a broken move: one that loses the rows of a producer shard.
    const Graph g = parse(conv_chain_text(1, 2, 8, 3, 2, 2, 3));
    auto stage = run(g, {"c1:2=4", "c2:2=4"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    Graph broken = stage->graph;
    Operation move = *broken.find_op(OpId("move.t.c2"));
    move.shards.pop_back();  // the last producer shard's rows never reach c2
    broken.put_op(std::move(move));
    const Certificate c = certify(g, broken);
    QVERIFY(!c.pass());
    QVERIFY(!c.find("coverage")->pass);
}

void TestMovement::random_specs_certify() {
    // Random splits of the small MLP and of conv chains (index dims only, 1–4 parts,
    // 1–2 specs): propagation and movement must always leave a stage that certifies,
    // numerically too, and data_movement() must count exactly what the moves carry.
    std::mt19937 rng(5);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const std::vector<std::string> mlp_ops{"fc1", "gelu1", "fc2", "relu2", "fc3", "gelu3", "fc4"};
    int with_moves = 0, with_propagation = 0;
    for (int round = 0; round < 16; ++round) {
        const bool conv = round % 2 == 1;
        const int h = 5 + pick(6);
        const Graph g = conv ? parse(conv_chain_text(1, 2, h, 3, 2, 2, 1 + 2 * pick(3))) : parse(small_mlp_text(h));
        QStringList specs;
        for (int k = 0, n = 1 + pick(2); k < n; ++k) {
            const std::string op = conv ? (pick(2) ? "c1" : "c2") : mlp_ops[static_cast<size_t>(pick(7))];
            const int dim = conv ? (pick(3) ? 2 : 1) : pick(2);
            specs << QString::fromStdString(op + ":" + std::to_string(dim) + "=" +
                                            std::to_string(1 + pick(conv && dim == 1 ? 2 : 4)));
        }
        auto stage = run(g, specs);
        QVERIFY2(stage, stage ? "" : stage.error().c_str());
        CertifyOptions o;
        o.numeric = verify::numeric_check();
        const Certificate c = certify(g, stage->graph, o);
        QVERIFY2(c.pass(), (specs.join(' ').toStdString() + "\n" + c.text()).c_str());
        const auto moves = data_movement(stage->graph, OpLibrary::standard());
        for (const Transfer &t : moves) {
            QVERIFY(t.elements > 0);
            QVERIFY(t.from_shard != t.to_shard);
        }
        with_moves += moves.empty() ? 0 : 1;
        with_propagation += stage->summary.find("propagated") == std::string::npos ? 0 : 1;
    }
    // The seed gives both kinds of case (so the loop is not vacuous).
    QVERIFY2(with_moves >= 4 && with_propagation >= 4, (std::to_string(with_moves) + " rounds with moves, " +
                                                        std::to_string(with_propagation) + " with propagation")
                                                           .c_str());
}

void TestMovement::move_kind() {
    const OpLibrary &lib = OpLibrary::standard();
    const OpDef *def = lib.find("move");
    QVERIFY(def);
    QCOMPARE(std::string(def->category()), std::string("data movement"));
    QVERIFY(cpu::find_kernel("move"));
    const std::vector<PortTypes> in{PortTypes{"x", {OperandType{DType::i32, ZPoint{3, 4}}}}};
    auto ok = lib.derive("move", Params{{"collective", std::string("copy")}}, in);
    QVERIFY(ok);
    QCOMPARE(ok->outputs.at(0).operands.at(0), (OperandType{DType::i32, ZPoint{3, 4}}));
    QCOMPARE(ok->signature.inputs.at(0).operands.at(0).projection, IndexProjection::identity(2));
    auto missing = lib.derive("move", Params{}, in);
    QVERIFY(!missing);
    QCOMPARE(QString::fromStdString(missing.error().message), QString("move needs parameter 'collective'"));
    auto bad = lib.derive("move", Params{{"collective", std::string("broadcast")}}, in);
    QVERIFY(!bad);
    QCOMPARE(QString::fromStdString(bad.error().message),
             QString("parameter 'collective' of move must be one of send_recv, all_gather, reduce_scatter, "
                     "all_reduce, copy, got \"broadcast\""));
}

QTEST_GUILESS_MAIN(TestMovement)
#include "test_movement.moc"
