// Stages, the pipeline and the stage text (engine/passes/stage.h), with golden
// texts in tests/data/passes/*.golden: an input graph, a pass, the expected stage
// text. TAPESTRY_UPDATE_GOLDEN=1 rewrites the golden files from the actual text.
#include <QtTest/QtTest>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/project_file.h"
#include "verify/numeric_check.h"
#include "passes/shard.h"
#include "passes/stage.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

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

using test::source_dir;

Graph input_graph(const QString &input) {
    if (input == "tiny") {
        LoadResult r = parse_project(kTiny);
        TAPESTRY_CHECK(r.ok(), "tiny project does not parse");
        return r.graph;
    }
    LoadResult r = load_project(source_dir() / input.toStdString());
    TAPESTRY_CHECK(r.ok(), "example project does not load");
    return r.graph;
}

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// "" when equal, else the first differing line as a small diff.
std::string first_difference(const std::string &expected, const std::string &actual) {
    if (expected == actual) return "";
    const auto e = split_lines(expected), a = split_lines(actual);
    for (size_t i = 0; i < std::max(e.size(), a.size()); ++i) {
        const std::string el = i < e.size() ? e[i] : "<end of file>";
        const std::string al = i < a.size() ? a[i] : "<end of text>";
        if (el != al)
            return "line " + std::to_string(i + 1) + ":\n- " + el + "\n+ " + al +
                   "\n(set TAPESTRY_UPDATE_GOLDEN=1 to rewrite the golden file)";
    }
    return "the texts differ in their final newline";
}

Expected<Stage, std::string> shard_specs(const Graph &g, const QString &specs) {
    std::vector<std::string> list;
    for (const QString &s : specs.split(' ', Qt::SkipEmptyParts)) list.push_back(s.toStdString());
    auto options = parse_shard_options(list);
    if (!options) return unexpected(options.error());
    // Only the named ops: propagation and data movement are golden-tested in
    // test_propagate and test_movement.
    options->propagate = false;
    options->movement = false;
    return shard(g, *options);
}

}  // namespace

class TestPassesStage : public QObject {
    Q_OBJECT
private slots:
    void range_text_form();
    void original_stage_is_the_input();
    void pipeline_keeps_every_stage();
    void pipeline_reports_the_failing_pass();
    void golden_data();
    void golden();
};

void TestPassesStage::range_text_form() {
    QCOMPARE(range_text(ZRange({0, 0}, {128, 4096})), std::string("[0,128)x[0,4096)"));
    QCOMPARE(range_text(ZRange({-2}, {3})), std::string("[-2,3)"));
    QCOMPARE(range_text(ZRange()), std::string("[]"));
}

void TestPassesStage::original_stage_is_the_input() {
    const Graph g = input_graph("tiny");
    const Stage s = original_stage(g);
    QCOMPARE(s.pass, std::string("original"));
    QVERIFY(s.graph.shares_all_nodes(g));
    QVERIFY(s.diff.empty());
    QCOMPARE(QString::fromStdString(stage_text(s, 0)),
             QString("stage 0: original\noptions: (none)\nsummary: the input graph: 4 tensors, 2 operations\n"
                     "diff: 0 added, 0 removed, 0 changed\n"));
}

void TestPassesStage::pipeline_keeps_every_stage() {
    const Graph g = input_graph("tiny");
    Pipeline p;
    p.add("shard", [](const Graph &in) { return shard_specs(in, "fc1:0=2"); }).add("shard", [](const Graph &in) {
        return shard_specs(in, "fc1:1=2 r1:0=5");
    });
    QCOMPARE(p.size(), size_t(2));
    CertifyOptions o;
    o.numeric = verify::numeric_check();
    auto stages = p.run(g, o);
    QVERIFY2(stages, stages ? "" : stages.error().c_str());
    QCOMPARE(stages->size(), size_t(3));
    const std::vector<Stage> &s = *stages;
    QCOMPARE(s[0].pass, std::string("original"));
    QVERIFY(s[0].graph.shares_all_nodes(g));
    // Each stage runs on the previous one's graph and shares what it did not change.
    QVERIFY(s[1].input.shares_all_nodes(s[0].graph));
    QVERIFY(s[2].input.shares_all_nodes(s[1].graph));
    QCOMPARE(s[1].graph.op_ptr(OpId("r1")).get(), g.op_ptr(OpId("r1")).get());
    QCOMPARE(s[2].diff.summary().changed, (std::vector<std::string>{"fc1", "r1"}));
    QCOMPARE(s[2].graph.find_op(OpId("fc1"))->shards.size(), size_t(4));
    for (const Stage &st : s) {
        QVERIFY2(st.certificate.pass(), st.certificate.text().c_str());
        QVERIFY(st.certificate.find("numeric"));
    }
}

void TestPassesStage::pipeline_reports_the_failing_pass() {
    Pipeline p;
    p.add("shard", [](const Graph &in) { return shard_specs(in, "fc1:0=2"); }).add("shard", [](const Graph &in) {
        return shard_specs(in, "fc7:0=2");
    });
    auto stages = p.run(input_graph("tiny"));
    QVERIFY(!stages);
    QCOMPARE(QString::fromStdString(stages.error()),
             QString("pass 2 (shard): shard spec 'fc7:0=2': unknown operation 'fc7'"));
}

void TestPassesStage::golden_data() {
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("specs");
    QTest::addColumn<QString>("golden");
    QTest::newRow("tiny uneven") << "tiny"
                                 << "fc1:0=4 r1:1=3+5"
                                 << "shard_tiny_uneven.golden";
    QTest::newRow("mlp batch 4") << "projects/mlp.tapestry.json"
                                 << "fc2:0=4 fc3:0=4 fc4:0=4"
                                 << "shard_mlp_batch4.golden";
    QTest::newRow("mlp product") << "projects/mlp.tapestry.json"
                                 << "fc1:1=2"
                                 << "shard_mlp_product.golden";
}

void TestPassesStage::golden() {
    QFETCH(QString, input);
    QFETCH(QString, specs);
    QFETCH(QString, golden);
    if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    const Graph g = input_graph(input);
    auto stage = shard_specs(g, specs);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    stage->certificate = certify(g, stage->graph);
    const std::string actual = stage_text(*stage, 1);
    const std::filesystem::path path = source_dir() / "tests/data/passes" / golden.toStdString();
    if (qgetenv("TAPESTRY_UPDATE_GOLDEN") == "1") {
        std::ofstream(path, std::ios::binary) << actual;
        qInfo("rewrote %s", path.c_str());
    }
    std::ifstream in(path, std::ios::binary);
    QVERIFY2(in, ("missing golden file " + path.string() + " (TAPESTRY_UPDATE_GOLDEN=1 writes it)").c_str());
    const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string diff = first_difference(expected, actual);
    QVERIFY2(diff.empty(), (path.filename().string() + " differs at " + diff).c_str());
}

QTEST_GUILESS_MAIN(TestPassesStage)
#include "test_passes_stage.moc"
