// Shard regions of a tensor (engine/passes/shard_regions.h), the data of the
// studio's shard map: the MLP's fc1 split four ways writes four row blocks of
// fc1.out; every shard reads all of fc1.weight (a replicated read); a conv2d
// split along H reads its input with 2-row halos between neighbours, counted
// exactly and checked point by point; unsharded ops and inputs; refusals.
#include <QtTest/QtTest>

#include "io/project_file.h"
#include "passes/shard.h"
#include "passes/shard_regions.h"

using namespace tapestry;

namespace {

Graph load(const char *name) {
    const QString path = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects/" + name + ".tapestry.json";
    LoadResult r = load_project(path.toStdString());
    TAPESTRY_CHECK(r.ok(), "example project does not load");
    return r.graph;
}

// `g` with op's shards dropped, then sharded by the pass with `specs`.
Graph sharded(Graph g, const std::string &op, const std::vector<std::string> &specs) {
    Operation plain = *g.find_op(OpId(op));
    plain.shards.clear();
    g.put_op(std::move(plain));
    auto options = parse_shard_options(specs);
    TAPESTRY_CHECK(options.has_value(), "bad spec");
    // Exactly the split asked for: no propagation to neighbours, no move nodes.
    options->propagate = false;
    options->movement = false;
    auto stage = shard(g, *options);
    TAPESTRY_CHECK(stage.has_value(), "shard pass failed");
    return stage->graph;
}

QStringList region_texts(const TensorShardMap &m) {
    QStringList out;
    for (const ShardRegion &r : m.regions)
        out << QString::fromStdString(r.label() + " " + r.port + " " + r.box.to_string());
    return out;
}

// Points read by regions of two or more different shards, counted one by one.
std::int64_t brute_force_shared(const TensorShardMap &m) {
    std::int64_t n = 0;
    m.extent.for_each_point([&](const ZPoint &p) {
        std::vector<std::string> seen;
        for (const ShardRegion &r : m.regions)
            if (r.box.contains(p) && std::find(seen.begin(), seen.end(), r.label()) == seen.end())
                seen.push_back(r.label());
        if (seen.size() > 1) ++n;
    });
    return n;
}

}  // namespace

class TestShardRegions : public QObject {
    Q_OBJECT

private slots:
    void mlpFc1FourWayWritesFourRowBlocks();
    void replicatedWeightReadIsSharedByAllShards();
    void convSplitAlongHReadsHalos_data();
    void convSplitAlongHReadsHalos();
    void convWritersPartitionTheOutput();
    void unshardedProducerIsOneRegion();
    void inputHasNoWriters();
    void refusals_data();
    void refusals();
};

void TestShardRegions::mlpFc1FourWayWritesFourRowBlocks() {
    const Graph g = sharded(load("mlp"), "fc1", {"fc1:0=4"});
    auto m = tensor_writers(g, TensorId("h1"));
    QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
    QCOMPARE(region_texts(*m), QStringList({"fc1/0 y [0:128, 0:4096]", "fc1/1 y [128:256, 0:4096]",
                                            "fc1/2 y [256:384, 0:4096]", "fc1/3 y [384:512, 0:4096]"}));
    for (const ShardRegion &r : m->regions) QCOMPARE(r.box.size(), Coord(128 * 4096));
    QVERIFY(m->sharded());
    QCOMPARE(m->covered, std::int64_t(512 * 4096));
    QCOMPARE(m->shared, std::int64_t(0));
    QVERIFY(m->overlaps.empty());
    QCOMPARE(m->labels().size(), size_t(4));

    // The consumer gelu1 is not sharded: it reads all of h1 as one region.
    auto r = tensor_readers(g, TensorId("h1"), OpId("gelu1"));
    QVERIFY(r.has_value());
    QCOMPARE(region_texts(*r), QStringList({"gelu1 x [0:512, 0:4096]"}));
    QVERIFY(!r->sharded());
}

void TestShardRegions::replicatedWeightReadIsSharedByAllShards() {
    const Graph g = sharded(load("mlp"), "fc1", {"fc1:0=4"});
    auto m = tensor_readers(g, TensorId("w1"), OpId("fc1"));
    QVERIFY(m.has_value());
    QCOMPARE(m->regions.size(), size_t(4));
    for (const ShardRegion &r : m->regions) QCOMPARE(r.box, ZRange::of_shape({1024, 4096}));
    QCOMPARE(m->overlaps.size(), size_t(6));  // every pair of the four shards
    QCOMPARE(m->shared, std::int64_t(1024 * 4096));
    QCOMPARE(m->covered, std::int64_t(1024 * 4096));
    // Sharding the other dim splits the weight into column blocks: nothing shared.
    const Graph by_col = sharded(load("mlp"), "fc1", {"fc1:1=2"});
    auto cols = tensor_readers(by_col, TensorId("w1"), OpId("fc1"));
    QVERIFY(cols.has_value());
    QCOMPARE(region_texts(*cols), QStringList({"fc1/0 w [0:1024, 0:2048]", "fc1/1 w [0:1024, 2048:4096]"}));
    QCOMPARE(cols->shared, std::int64_t(0));
}

void TestShardRegions::convSplitAlongHReadsHalos_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("input");
    QTest::addColumn<int>("parts");
    QTest::addColumn<QStringList>("rows");  // the H range each shard reads
    QTest::addColumn<QString>("shapes");
    QTest::addColumn<qint64>("shared");
    // conv1: x [8, 3, 32, 32], 3×3 window, padding 1: shard p-blocks of 8 read 10
    // rows (8 at the clipped edges); neighbours share 2 rows.
    QTest::newRow("conv1 H/4") << "conv1"
                               << "x" << 4 << QStringList{"0:9", "7:17", "15:25", "23:32"} << "3×(8×3×2×32)"
                               << qint64(3 * 8 * 3 * 2 * 32);
    // Uneven: 32 rows into 5 → 7,7,6,6,6.
    QTest::newRow("conv1 H/5 uneven") << "conv1"
                                      << "x" << 5 << QStringList{"0:8", "6:15", "13:21", "19:27", "25:32"}
                                      << "4×(8×3×2×32)" << qint64(4 * 8 * 3 * 2 * 32);
    // conv2 reads pool1_out [8, 16, 16, 16].
    QTest::newRow("conv2 H/4") << "conv2"
                               << "pool1_out" << 4 << QStringList{"0:5", "3:9", "7:13", "11:16"} << "3×(8×16×2×16)"
                               << qint64(3 * 8 * 16 * 2 * 16);
}

void TestShardRegions::convSplitAlongHReadsHalos() {
    QFETCH(QString, op);
    QFETCH(QString, input);
    QFETCH(int, parts);
    QFETCH(QStringList, rows);
    QFETCH(QString, shapes);
    QFETCH(qint64, shared);
    const std::string spec = op.toStdString() + ":2=" + std::to_string(parts);
    const Graph g = sharded(load("convnet"), op.toStdString(), {spec});
    auto m = tensor_readers(g, TensorId(input.toStdString()), OpId(op.toStdString()));
    QVERIFY2(m.has_value(), m ? "" : m.error().c_str());
    QStringList got;
    for (const ShardRegion &r : m->regions)
        if (r.port == "x") got << QString("%1:%2").arg(r.box.start()[2]).arg(r.box.end()[2]);
    QCOMPARE(got, rows);
    QCOMPARE(QString::fromStdString(overlap_shapes_text(m->overlaps)), shapes);
    QCOMPARE(qint64(m->shared), shared);
    QCOMPARE(m->shared, brute_force_shared(*m));
    QCOMPARE(m->covered, m->extent.size());
    // The shared boxes are the union of the overlaps, disjoint.
    Coord sum = 0;
    for (const ZRange &b : m->shared_boxes) sum += b.size();
    QCOMPARE(qint64(sum), shared);
}

void TestShardRegions::convWritersPartitionTheOutput() {
    const Graph g = sharded(load("convnet"), "conv1", {"conv1:2=4"});
    auto m = tensor_writers(g, TensorId("conv1_out"));
    QVERIFY(m.has_value());
    QCOMPARE(region_texts(*m),
             QStringList({"conv1/0 y [0:8, 0:16, 0:8, 0:32]", "conv1/1 y [0:8, 0:16, 8:16, 0:32]",
                          "conv1/2 y [0:8, 0:16, 16:24, 0:32]", "conv1/3 y [0:8, 0:16, 24:32, 0:32]"}));
    QCOMPARE(m->shared, std::int64_t(0));
    QCOMPARE(m->covered, std::int64_t(8 * 16 * 32 * 32));
}

void TestShardRegions::unshardedProducerIsOneRegion() {
    const Graph g = load("mlp");
    auto m = tensor_writers(g, TensorId("h2"));
    QVERIFY(m.has_value());
    QCOMPARE(region_texts(*m), QStringList({"fc2 y [0:512, 0:4096]"}));
    QVERIFY(!m->sharded());
    QCOMPARE(m->covered, std::int64_t(512 * 4096));
}

void TestShardRegions::inputHasNoWriters() {
    auto m = tensor_writers(load("mlp"), TensorId("x"));
    QVERIFY(m.has_value());
    QVERIFY(m->regions.empty());
    QCOMPARE(m->covered, std::int64_t(0));
    QCOMPARE(m->extent, ZRange::of_shape({512, 1024}));
}

void TestShardRegions::refusals_data() {
    QTest::addColumn<QString>("tensor");
    QTest::addColumn<QString>("consumer");  // "" asks for the writers
    QTest::addColumn<QString>("message");
    QTest::newRow("no tensor") << "nope"
                               << ""
                               << "no tensor 'nope' in the graph";
    QTest::newRow("no op") << "h1"
                           << "fc9"
                           << "no operation 'fc9' in the graph";
    QTest::newRow("not a reader") << "h1"
                                  << "fc2"
                                  << "operation 'fc2' does not read tensor 'h1'";
}

void TestShardRegions::refusals() {
    QFETCH(QString, tensor);
    QFETCH(QString, consumer);
    QFETCH(QString, message);
    const Graph g = load("mlp");
    auto m = consumer.isEmpty() ? tensor_writers(g, TensorId(tensor.toStdString()))
                                : tensor_readers(g, TensorId(tensor.toStdString()), OpId(consumer.toStdString()));
    QVERIFY(!m.has_value());
    QCOMPARE(QString::fromStdString(m.error()), message);
}

QTEST_GUILESS_MAIN(TestShardRegions)
#include "test_shard_regions.moc"
