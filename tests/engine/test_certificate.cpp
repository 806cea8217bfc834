// Certificates (engine/passes/certificate.h): every check passes on a correct
// stage and each one can fail, naming the node at fault — overlapping shards,
// a dropped shard, a consumer reading unwritten elements, a numerically wrong
// graph — and the MLP example sharded 4-way passes all checks, numeric included.
#include <QtTest/QtTest>
#include <filesystem>

#include "io/project_file.h"
#include "verify/numeric_check.h"
#include "passes/certificate.h"
#include "passes/shard.h"
#include "substitute_support.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

using test::parse;

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

// fc1 computes only the first half of h (rows 0..4); r1 reads all of h.
const char *kHalfProduced = R"({
  "format": "tapestry-project", "version": 1, "name": "half",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 6], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [10, 8], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [10, 8], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear",
     "inputs": {"x": {"tensor": "x", "range": {"start": [0, 0], "end": [5, 6]}}, "w": "w"},
     "outputs": {"y": {"tensor": "h", "range": {"start": [0, 0], "end": [5, 8]}}},
     "shards": [{"id": "fc1/0", "index": {"start": [0, 0], "end": [3, 8]}},
                {"id": "fc1/1", "index": {"start": [3, 0], "end": [5, 8]}}]},
    {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y"}}
  ]
})";

// y = a · b with square operands, so swapping them still type-checks.
const char *kMatmul = R"({
  "format": "tapestry-project", "version": 1, "name": "mm",
  "tensors": [
    {"id": "a", "dtype": "f32", "shape": [4, 4], "role": "input"},
    {"id": "b", "dtype": "f32", "shape": [4, 4], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": [4, 4], "role": "output"}
  ],
  "operations": [{"id": "mm", "kind": "matmul", "inputs": {"a": "a", "b": "b"}, "outputs": {"y": "y"}}]
})";

Graph with_shards(const Graph &g, const std::string &op, const std::vector<ZRange> &ranges) {
    Graph out = g;
    Operation o = *g.find_op(OpId(op));
    o.shards.clear();
    for (size_t k = 0; k < ranges.size(); ++k)
        o.shards.push_back(Shard{ShardId(op + "/" + std::to_string(k)), ranges[k], "", {}, {}});
    out.put_op(std::move(o));
    return out;
}

QString failed_checks(const Certificate &c) {
    QStringList out;
    for (const CertificateCheck &k : c.checks)
        if (!k.pass) out << QString::fromStdString(k.name);
    return out.join(",");
}

bool mentions(const CertificateCheck &c, const std::string &what) {
    for (const std::string &f : c.findings)
        if (f.find(what) != std::string::npos) return true;
    return false;
}


}  // namespace

class TestCertificate : public QObject {
    Q_OBJECT
private slots:
    void correct_stage_passes_every_check();
    void overlapping_shards_fail_coverage_and_injectivity();
    void dropped_shard_is_a_coverage_gap();
    void unwritten_reads_fail_dataflow();
    void numeric_check_catches_swapped_matmul_operands();
    void numeric_check_sees_what_both_runs_share();
    void numeric_check_passes_on_an_equal_graph();
    void text_and_badge();
    void mlp_sharded_4_way_on_batch_is_certified();
};

void TestCertificate::correct_stage_passes_every_check() {
    const Graph g = parse(kTiny);
    const Graph s = with_shards(g, "fc1", ZRange::of_shape({10, 8}).split(0, 3));
    const Certificate c = certify(g, s);
    QVERIFY2(c.pass(), c.text().c_str());
    QStringList names;
    for (const CertificateCheck &k : c.checks) names << QString::fromStdString(k.name);
    QCOMPARE(names.join(","), QString("structure,coverage,injectivity,dataflow"));
    QVERIFY(!Certificate{}.pass());
    QVERIFY(!Certificate{}.certified());
}

void TestCertificate::overlapping_shards_fail_coverage_and_injectivity() {
    const Graph g = parse(kTiny);
    const Graph s = with_shards(g, "fc1", {ZRange({0, 0}, {6, 8}), ZRange({4, 0}, {10, 8})});
    const Certificate c = certify(g, s);
    QCOMPARE(failed_checks(c), QString("coverage,injectivity,dataflow"));
    const CertificateCheck *coverage = c.find("coverage");
    QCOMPARE(QString::fromStdString(coverage->message),
             QString("error shard-overlap at $.operations[0].shards[1].index (fc1/1): shards 'fc1/0' and "
                     "'fc1/1' of 'fc1' overlap on [4:6, 0:8]"));
    const CertificateCheck *inj = c.find("injectivity");
    QCOMPARE(QString::fromStdString(inj->message),
             QString("shards 'fc1/0' and 'fc1/1' of 'fc1' both write h elements [4:6, 0:8] (16 elements)"));
    QCOMPARE(inj->nodes, std::vector<std::string>{"fc1"});
    QVERIFY(mentions(*c.find("dataflow"), "'fc1/0' and 'fc1/1' both write h elements [4:6, 0:8]"));
    QVERIFY(c.find("structure")->pass);
}

void TestCertificate::dropped_shard_is_a_coverage_gap() {
    const Graph g = parse(kTiny);
    auto ranges = ZRange::of_shape({10, 8}).split(0, 4);
    ranges.erase(ranges.begin() + 2);  // drop [6,8)
    const Graph s = with_shards(g, "fc1", ranges);
    const Certificate c = certify(g, s);
    QCOMPARE(failed_checks(c), QString("coverage,dataflow"));
    QCOMPARE(QString::fromStdString(c.find("coverage")->message),
             QString("error shard-gap at $.operations[0].shards (fc1): shards of 'fc1' leave index points "
                     "[6:8, 0:8] of [0:10, 0:8] uncovered"));
    QCOMPARE(c.find("coverage")->nodes, std::vector<std::string>{"fc1"});
    QCOMPARE(
        QString::fromStdString(c.find("dataflow")->message),
        QString("'r1' reads h elements [6:8, 0:8] (16 elements) that no producer shard writes (producers: 'fc1')"));
    QCOMPARE(c.find("dataflow")->nodes, std::vector<std::string>{"r1"});
}

void TestCertificate::unwritten_reads_fail_dataflow() {
    // Structurally fine (validate only warns) and exactly covered: only dataflow fails.
    const Graph g = parse(kTiny);
    const Graph s = parse(kHalfProduced);
    const Certificate c = certify(g, s);
    QCOMPARE(failed_checks(c), QString("dataflow"));
    QCOMPARE(
        QString::fromStdString(c.find("dataflow")->message),
        QString("'r1' reads h elements [5:10, 0:8] (40 elements) that no producer shard writes (producers: 'fc1')"));
    QCOMPARE(c.find("dataflow")->nodes, std::vector<std::string>{"r1"});
}

void TestCertificate::numeric_check_catches_swapped_matmul_operands() {
    const Graph g = parse(kMatmul);
    Graph s = g;
    Operation mm = *g.find_op(OpId("mm"));
    std::swap(mm.inputs[0].selections, mm.inputs[1].selections);  // y = b · a
    s.put_op(std::move(mm));
    verify::NumericCheckOptions numeric;
    numeric.seed = 7;
    CertifyOptions o;
    o.numeric = verify::numeric_check(numeric);
    const Certificate c = certify(g, s, o);
    QCOMPARE(failed_checks(c), QString("numeric"));
    const CertificateCheck *n = c.find("numeric");
    QVERIFY2(n->message.rfind("output 'y' differs from the original's run: max abs error ", 0) == 0, n->message.c_str());
    // Against the original's run and against the oracle: two findings, both on y.
    QCOMPARE(n->nodes, (std::vector<std::string>{"y", "y"}));
    QVERIFY2(n->findings[1].rfind("output 'y' differs from the oracle: max abs error ", 0) == 0, n->findings[1].c_str());
}

// A fault both executor runs share is invisible to a comparison of the two runs;
// the oracle sees it. Here the stage is the original sharded, and both overflow
// f32 the same way (|y| reaches 8 · 3e38) where the double oracle stays finite:
// the check fails against the oracle only.
void TestCertificate::numeric_check_sees_what_both_runs_share() {
    Graph g = parse(kTiny);
    Tensor w = *g.find_tensor(TensorId("w"));
    auto big = std::make_shared<TensorData>(DType::f32, w.shape());
    for (float &v : big->as<float>()) v = 3e38f;
    w.value = big;
    g.put_tensor(std::move(w));
    auto options = parse_shard_options({"fc1:0=2"});
    QVERIFY(options);
    auto stage = shard(g, *options);
    QVERIFY(stage);
    CertifyOptions o;
    o.numeric = verify::numeric_check();
    const Certificate c = certify(g, stage->graph, o);
    QCOMPARE(failed_checks(c), QString("numeric"));
    const CertificateCheck *n = c.find("numeric");
    for (const std::string &f : n->findings)
        QVERIFY2(f.rfind("output 'y' differs from the oracle: ", 0) == 0, f.c_str());
    verify::NumericCheckOptions runs_only;
    runs_only.oracle = false;
    o.numeric = verify::numeric_check(runs_only);
    QVERIFY2(certify(g, stage->graph, o).pass(), "the two runs agree with each other");
}

void TestCertificate::numeric_check_passes_on_an_equal_graph() {
    const Graph g = parse(kTiny);
    auto options = parse_shard_options({"fc1:0=3+5+2", "fc1:1=3", "r1:0=4"});
    QVERIFY(options);
    auto stage = shard(g, *options);
    QVERIFY(stage);
    CertifyOptions o;
    o.numeric = verify::numeric_check();
    const Certificate c = certify(g, stage->graph, o);
    QVERIFY2(c.pass(), c.text().c_str());
    QVERIFY2(c.find("numeric")->message.rfind("seed 1: y vs the original's run: max abs error ", 0) == 0,
             c.find("numeric")->message.c_str());
    QVERIFY2(c.find("numeric")->message.find(", y vs the oracle: max abs error ") != std::string::npos,
             c.find("numeric")->message.c_str());
}

void TestCertificate::text_and_badge() {
    const Graph g = parse(kTiny);
    const Graph good = with_shards(g, "fc1", ZRange::of_shape({10, 8}).split(0, 2));
    const Certificate c = certify(g, good);
    QCOMPARE(QString::fromStdString(c.badge()), QString("PASS structure, coverage, injectivity, dataflow"));
    QCOMPARE(QString::fromStdString(c.text()),
             QString("certificate: PASS structure, coverage, injectivity, dataflow\n"
                     "  pass structure: validate() reports no errors\n"
                     "  pass coverage: the shards of 1 sharded operation partition their index spaces exactly\n"
                     "  pass injectivity: no output element is written twice by one operation\n"
                     "  pass dataflow: every element read of an intermediate or output tensor is written by "
                     "exactly one producer shard\n"));
    auto ranges = ZRange::of_shape({10, 8}).split(0, 4);
    ranges.pop_back();
    const Certificate bad = certify(g, with_shards(g, "fc1", ranges));
    QCOMPARE(QString::fromStdString(bad.badge()), QString("FAIL coverage (1 finding), dataflow (1 finding)"));
    const std::string text = bad.text();
    QVERIFY2(text.find("  FAIL dataflow: 1 finding\n    - 'r1' reads h elements [8:10, 0:8]") != std::string::npos,
             text.c_str());
    QVERIFY2(text.find("    - output 'y' elements") == std::string::npos, text.c_str());
}

void TestCertificate::mlp_sharded_4_way_on_batch_is_certified() {
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    LoadResult loaded = load_project(std::filesystem::path(source.toStdString()) / "projects/mlp.tapestry.json");
    QVERIFY(loaded.ok());
    // fc1 is sharded 4-way on the batch in the file; the pass shards the other three.
    auto options = parse_shard_options({"fc2:0=4", "fc3:0=4", "fc4:0=4"});
    QVERIFY(options);
    // Full size: the structural checks (ISL) only.
    auto full = shard(loaded.graph, *options);
    QVERIFY2(full, full ? "" : full.error().c_str());
    const Certificate structural = certify(loaded.graph, full->graph);
    QVERIFY2(structural.pass(), structural.text().c_str());
    // Scaled /32 (batch 16, features 24/40) for the numeric run, same structure and shards.
    const std::map<Coord, Coord> m{{512, 16}, {1024, 24}, {4096, 40}, {128, 4}, {256, 8}, {384, 12}};
    const Graph small = test::scaled(loaded.graph, m);
    auto stage = shard(small, *options);
    QVERIFY(stage);
    for (const char *op : {"fc1", "fc2", "fc3", "fc4"})
        QCOMPARE(stage->graph.find_op(OpId(op))->shards.size(), size_t(4));
    verify::NumericCheckOptions numeric;
    numeric.seed = 2024;
    CertifyOptions o;
    o.numeric = verify::numeric_check(numeric);
    const Certificate c = certify(small, stage->graph, o);
    QVERIFY2(c.pass(), c.text().c_str());
    QCOMPARE(c.checks.size(), size_t(5));
}

QTEST_GUILESS_MAIN(TestCertificate)
#include "test_certificate.moc"
