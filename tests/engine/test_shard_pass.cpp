// The sharding pass (engine/passes/shard.h): even, uneven and explicit splits,
// product sharding of sharded ops, untouched nodes kept by pointer, and every
// refusal with the exact message a user sees.
#include <QtTest/QtTest>

#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "verify/numeric_check.h"
#include "passes/shard.h"

using namespace tapestry;

namespace {

// x[10, 6] → linear fc1 → h[10, 8] → relu r1 → y[10, 8].
const char *kTiny = R"({
  "format": "tapestry-project", "version": 1, "name": "tiny",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 6], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [10, 8], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [10, 8], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w"}, "outputs": {"y": "h"}},
    {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y"}}
  ]
})";

Graph tiny() {
    LoadResult r = parse_project(kTiny);
    TAPESTRY_CHECK(r.ok(), "tiny project does not parse");
    return r.graph;
}

Expected<Stage, std::string> run_shard(const Graph &g, const std::vector<std::string> &specs,
                                       const SignatureSource *lib = nullptr) {
    auto options = parse_shard_options(specs);
    if (!options) return unexpected(options.error());
    options->library = lib;
    // These cases are about the split itself; propagation and data movement have
    // their own suites (test_propagate, test_movement).
    options->propagate = false;
    options->movement = false;
    return shard(g, *options);
}

// "fc1/0 [0,3)x[0,8), …"
QString shards_text(const Graph &g, const std::string &op) {
    QStringList out;
    for (const Shard &s : g.find_op(OpId(op))->shards)
        out << QString::fromStdString(s.id.value + " " + range_text(s.index));
    return out.join(", ");
}

// A kind whose index space [n, k] writes y[n] only: dim 1 is a reduction.
class RowSumSource : public SignatureSource {
public:
    bool knows(const std::string &kind) const override { return kind == "rowsum"; }
    Expected<Derivation, DerivationError> derive(const std::string &, const Params &,
                                                 const std::vector<PortTypes> &inputs) const override {
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

Graph rowsum_graph() {
    Graph g;
    g.put_tensor(Tensor{TensorId("x"), "x", DType::f32, ZRange::of_shape({4, 6}), TensorRole::input, {}, {}});
    g.put_tensor(Tensor{TensorId("s"), "s", DType::f32, ZRange::of_shape({4}), TensorRole::output, {}, {}});
    Operation op;
    op.id = OpId("sum1");
    op.kind = "rowsum";
    op.inputs.push_back(PortBinding{"x", {TensorSelection{TensorId("x"), ZRange::of_shape({4, 6})}}});
    op.outputs.push_back(PortBinding{"y", {TensorSelection{TensorId("s"), ZRange::of_shape({4})}}});
    g.put_op(std::move(op));
    return g;
}

}  // namespace

class TestShardPass : public QObject {
    Q_OBJECT
private slots:
    void splits_data();
    void splits();
    void untouched_nodes_keep_their_pointers();
    void diff_names_exactly_the_changed_ops();
    void product_sharding_splits_every_shard();
    void stated_shard_selections_stay_consistent();
    void refusals_data();
    void refusals();
    void reduction_dim_is_refused();
    void certify_option_certifies_the_stage();
};

void TestShardPass::splits_data() {
    QTest::addColumn<QStringList>("specs");
    QTest::addColumn<QString>("shards");
    QTest::addColumn<QString>("summary");
    QTest::newRow("even 2") << QStringList{"fc1:0=2"} << "fc1/0 [0,5)x[0,8), fc1/1 [5,10)x[0,8)"
                            << "split fc1 dim 0 into 2 (5 each): 2 shards";
    QTest::newRow("uneven 10 into 4") << QStringList{"fc1:0=4"}
                                      << "fc1/0 [0,3)x[0,8), fc1/1 [3,6)x[0,8), fc1/2 [6,8)x[0,8), fc1/3 [8,10)x[0,8)"
                                      << "split fc1 dim 0 into 4 (3+3+2+2): 4 shards";
    QTest::newRow("explicit sizes") << QStringList{"fc1:0=3+5+2"}
                                    << "fc1/0 [0,3)x[0,8), fc1/1 [3,8)x[0,8), fc1/2 [8,10)x[0,8)"
                                    << "split fc1 dim 0 into 3 (3+5+2): 3 shards";
    QTest::newRow("output dim") << QStringList{"fc1:1=3"}
                                << "fc1/0 [0,10)x[0,3), fc1/1 [0,10)x[3,6), fc1/2 [0,10)x[6,8)"
                                << "split fc1 dim 1 into 3 (3+3+2): 3 shards";
    QTest::newRow("one part") << QStringList{"fc1:0=1"} << "fc1/0 [0,10)x[0,8)"
                              << "split fc1 dim 0 into 1 (10 each): 1 shard";
}

void TestShardPass::splits() {
    QFETCH(QStringList, specs);
    QFETCH(QString, shards);
    QFETCH(QString, summary);
    std::vector<std::string> s;
    for (const QString &x : specs) s.push_back(x.toStdString());
    auto stage = run_shard(tiny(), s);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(shards_text(stage->graph, "fc1"), shards);
    QCOMPARE(QString::fromStdString(stage->summary), summary);
    QCOMPARE(stage->pass, std::string("shard"));
    QCOMPARE(QString::fromStdString(stage->options), specs.join(" "));
    const auto issues = validate(stage->graph, OpLibrary::standard());
    QVERIFY2(!has_errors(issues), issues.empty() ? "" : format_issue(issues.front()).c_str());
}

void TestShardPass::untouched_nodes_keep_their_pointers() {
    const Graph g = tiny();
    auto stage = run_shard(g, {"fc1:0=2"});
    QVERIFY(stage);
    for (const TensorPtr &t : g.tensors()) QCOMPARE(stage->graph.tensor_ptr(t->id).get(), t.get());
    QCOMPARE(stage->graph.op_ptr(OpId("r1")).get(), g.op_ptr(OpId("r1")).get());
    QVERIFY(stage->graph.op_ptr(OpId("fc1")).get() != g.op_ptr(OpId("fc1")).get());
    QVERIFY(!stage->graph.shares_all_nodes(g));
    // The input is untouched too, and the diff reverts the stage to it.
    QVERIFY(g.find_op(OpId("fc1"))->shards.empty());
    Graph back = stage->graph;
    stage->diff.revert(back);
    QVERIFY(back.shares_all_nodes(g));
    // No spec: nothing changes, nothing is allocated.
    auto none = run_shard(g, {});
    QVERIFY(none);
    QVERIFY(none->graph.shares_all_nodes(g));
    QVERIFY(none->diff.empty());
}

void TestShardPass::diff_names_exactly_the_changed_ops() {
    auto stage = run_shard(tiny(), {"fc1:0=2", "r1:1=4"});
    QVERIFY(stage);
    const auto sum = stage->diff.summary();
    QVERIFY(sum.added.empty());
    QVERIFY(sum.removed.empty());
    QCOMPARE(sum.changed, (std::vector<std::string>{"fc1", "r1"}));
    QCOMPARE(shards_text(stage->graph, "r1"),
             QString("r1/0 [0,10)x[0,2), r1/1 [0,10)x[2,4), r1/2 [0,10)x[4,6), r1/3 [0,10)x[6,8)"));
}

void TestShardPass::product_sharding_splits_every_shard() {
    auto stage = run_shard(tiny(), {"fc1:0=3+7", "fc1:1=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(shards_text(stage->graph, "fc1"),
             QString("fc1/0.0 [0,3)x[0,4), fc1/0.1 [0,3)x[4,8), fc1/1.0 [3,10)x[0,4), fc1/1.1 [3,10)x[4,8)"));
    QCOMPARE(
        QString::fromStdString(stage->summary),
        QString(
            "split fc1 dim 0 into 2 (3+7): 2 shards; fc1 dim 1 into 2 (4 each), product with its 2 shards: 4 shards"));
    // Splitting along the same dim again splits each shard by its own extent.
    auto again = run_shard(tiny(), {"fc1:0=2", "fc1:0=2"});
    QVERIFY(again);
    QCOMPARE(shards_text(again->graph, "fc1"),
             QString("fc1/0.0 [0,3)x[0,8), fc1/0.1 [3,5)x[0,8), fc1/1.0 [5,8)x[0,8), fc1/1.1 [8,10)x[0,8)"));
    // Two specs on one op are one changed node in the diff.
    QCOMPARE(again->diff.summary().changed, std::vector<std::string>{"fc1"});
    const auto issues = validate(again->graph, OpLibrary::standard());
    QVERIFY(!has_errors(issues));
}

void TestShardPass::stated_shard_selections_stay_consistent() {
    // The MLP file states fc1's shard selections; the split shards state theirs too.
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    LoadResult loaded = load_project(std::filesystem::path(source.toStdString()) / "projects/mlp.tapestry.json");
    QVERIFY(loaded.ok());
    auto stage = run_shard(loaded.graph, {"fc1:1=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    const Operation *fc1 = stage->graph.find_op(OpId("fc1"));
    QCOMPARE(fc1->shards.size(), size_t(8));
    QCOMPARE(fc1->shards[1].id.value, std::string("fc1/0.1"));
    QCOMPARE(fc1->shards[1].device, std::string("gpu0"));
    QCOMPARE(fc1->shards[1].outputs.at(0).selections.at(0).range, ZRange({0, 2048}, {128, 4096}));
    const auto issues = validate(stage->graph, OpLibrary::standard());
    QVERIFY2(!has_errors(issues), issues.empty() ? "" : format_issue(issues.front()).c_str());
}

void TestShardPass::refusals_data() {
    QTest::addColumn<QStringList>("specs");
    QTest::addColumn<QString>("message");
    QTest::newRow("no dim") << QStringList{"fc1=4"}
                            << "shard spec 'fc1=4': expected op:dim=parts, e.g. fc1:0=4 or fc1:0=3+5+2";
    QTest::newRow("no parts") << QStringList{"fc1:0"}
                              << "shard spec 'fc1:0': expected op:dim=parts, e.g. fc1:0=4 or fc1:0=3+5+2";
    QTest::newRow("dim not a number")
        << QStringList{"fc1:b=4"}
        << "shard spec 'fc1:b=4': dim 'b' is not a dimension number (dims are numbered from 0)";
    QTest::newRow("zero parts") << QStringList{"fc1:0=0"}
                                << "shard spec 'fc1:0=0': part count '0' is not a whole number 1 … 65536";
    QTest::newRow("too many parts") << QStringList{"fc1:0=1000000"}
                                    << "shard spec 'fc1:0=1000000': part count '1000000' is not a whole number 1 … 65536";
    QTest::newRow("bad size") << QStringList{"fc1:0=3+0+7"}
                              << "shard spec 'fc1:0=3+0+7': size '0' is not a whole number 1 … 1099511627776";
    QTest::newRow("trailing plus") << QStringList{"fc1:0=3+"}
                                   << "shard spec 'fc1:0=3+': size '' is not a whole number 1 … 1099511627776";
    QTest::newRow("unknown op") << QStringList{"fc9:0=4"} << "shard spec 'fc9:0=4': unknown operation 'fc9'";
    QTest::newRow("dim out of range")
        << QStringList{"fc1:3=4"}
        << "shard spec 'fc1:3=4': dim 3 is out of range: 'fc1' has a 2-dim index space [0,10)x[0,8) and its "
           "contraction in as dim 2";
    QTest::newRow("sizes do not sum")
        << QStringList{"fc1:0=3+5+1"}
        << "shard spec 'fc1:0=3+5+1': sizes 3+5+1 sum to 9, but dim 0 of 'fc1' has extent 10";
    QTest::newRow("too many parts") << QStringList{"fc1:1=9"}
                                    << "shard spec 'fc1:1=9': cannot split dim 1 of 'fc1' (extent 8) into 9 parts";
    QTest::newRow("product sizes do not fit the second shard")
        << QStringList{"fc1:0=6+4", "fc1:0=3+3"}
        << "shard spec 'fc1:0=3+3': sizes 3+3 sum to 6, but dim 0 of shard 'fc1/1' has extent 4";
}

void TestShardPass::refusals() {
    QFETCH(QStringList, specs);
    QFETCH(QString, message);
    std::vector<std::string> s;
    for (const QString &x : specs) s.push_back(x.toStdString());
    const Graph g = tiny();
    auto stage = run_shard(g, s);
    QVERIFY(!stage);
    QCOMPARE(QString::fromStdString(stage.error()), message);
    QVERIFY(g.find_op(OpId("fc1"))->shards.empty());
}

void TestShardPass::reduction_dim_is_refused() {
    RowSumSource lib;
    const Graph g = rowsum_graph();
    auto refused = run_shard(g, {"sum1:1=2"}, &lib);
    QVERIFY(!refused);
    QCOMPARE(refused.error(), std::string("shard spec 'sum1:1=2': dim 1 of sum1 is a reduction with no monoid split for "
                                          "kind 'rowsum' (contractions of matmul/linear and the reduced axes of "
                                          "reduce_* split)"));
    auto fine = run_shard(g, {"sum1:0=2"}, &lib);
    QVERIFY2(fine, fine ? "" : fine.error().c_str());
    QCOMPARE(shards_text(fine->graph, "sum1"), QString("sum1/0 [0,2)x[0,6), sum1/1 [2,4)x[0,6)"));
}

void TestShardPass::certify_option_certifies_the_stage() {
    auto options = parse_shard_options({"fc1:0=4", "r1:1=3"});
    QVERIFY(options);
    auto plain = shard(tiny(), *options);
    QVERIFY(plain);
    QVERIFY(!plain->certificate.certified());
    options->certify = CertifyOptions{};
    options->certify->numeric = verify::numeric_check();
    auto stage = shard(tiny(), *options);
    QVERIFY(stage);
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    QCOMPARE(stage->certificate.checks.size(), size_t(5));
}

QTEST_GUILESS_MAIN(TestShardPass)
#include "test_shard_pass.moc"
