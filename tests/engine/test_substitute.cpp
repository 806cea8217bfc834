// The substitution pass (engine/passes/substitute.h): the golden stage text on the
// MLP, certified stages (structure, coverage, injectivity, dataflow, numeric) on the
// MLP and on GPT-2 style blocks, pointer sharing of untouched nodes, the fuse goal
// undoing the expansions, limits in the summary, and the refusals.
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/project_file.h"
#include "numeric_certify.h"
#include "passes/rules.h"
#include "passes/substitute.h"
#include "substitute_support.h"
#include "test_projects.h"

using namespace tapestry;
using tapestry::test::GraphBuilder;

namespace {

using test::source_dir;

Graph project(const std::string &name) {
    LoadResult r = load_project(source_dir() / "projects" / name);
    TAPESTRY_CHECK(r.ok(), "example project does not load");
    return r.graph;
}

// A GPT-2 style block at toy size: pre-norm causal attention and a GELU MLP, with residuals.
Graph small_block(Coord batch = 2, Coord seq = 6, Coord width = 8, Coord heads = 2) {
    GraphBuilder b;
    auto x = b.input("x", {batch, seq, width});
    auto param = [&](const std::string &id, ZPoint s) { return b.input(id, std::move(s), TensorRole::parameter); };
    auto ln1 = b.op("ln1", "layernorm", {}, {{"x", x}, {"gamma", param("g1", {width})}, {"beta", param("be1", {width})}});
    auto qkv = b.op("qkv", "linear", {}, {{"x", ln1}, {"w", param("w_qkv", {width, 3 * width})}, {"bias", param("b_qkv", {3 * width})}});
    auto part = [&](const std::string &id, Coord k) {
        return b.op(id, "slice",
                    {{"starts", std::vector<std::int64_t>{k * width}}, {"ends", std::vector<std::int64_t>{(k + 1) * width}},
                     {"axes", std::vector<std::int64_t>{2}}},
                    {{"x", qkv}});
    };
    auto att = b.op("att", "attention", {{"heads", heads}, {"causal", true}}, {{"q", part("q", 0)}, {"k", part("k", 1)}, {"v", part("v", 2)}});
    auto proj = b.op("proj", "linear", {}, {{"x", att}, {"w", param("w_proj", {width, width})}, {"bias", param("b_proj", {width})}});
    auto h = b.op("h", "add", {}, {{"a", x}, {"b", proj}});
    auto ln2 = b.op("ln2", "layernorm", {}, {{"x", h}, {"gamma", param("g2", {width})}, {"beta", param("be2", {width})}});
    auto fc = b.op("fc", "linear", {}, {{"x", ln2}, {"w", param("w_fc", {width, 4 * width})}, {"bias", param("b_fc", {4 * width})}});
    auto act = b.op("act", "gelu", {{"approximate", std::string("tanh")}}, {{"x", fc}});
    auto out = b.op("mlp", "linear", {}, {{"x", act}, {"w", param("w_out", {4 * width, width})}, {"bias", param("b_out", {width})}});
    b.op("y", "add", {}, {{"a", h}, {"b", out}}, true);
    return b.g;
}

int count_kind(const Graph &g, const std::string &kind) {
    int n = 0;
    for (const OpPtr &op : g.operations()) n += op->kind == kind;
    return n;
}

std::string read_file(const std::filesystem::path &p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class TestSubstitute : public QObject {
    Q_OBJECT
private slots:
    void golden_mlp();
    void mlp_certifies_numerically();
    void untouched_nodes_keep_pointers();
    void block_expands_and_certifies_data();
    void block_expands_and_certifies();
    void gpt2_project_expands_and_certifies();
    void fuse_goal_undoes_the_expansion();
    void nothing_to_do_changes_nothing();
    void limits_show_in_the_summary();
    void refusals_data();
    void refusals();
};

void TestSubstitute::golden_mlp() {
    SubstituteOptions o;
    o.rules = {"linear-split", "linear-fuse"};
    o.certify = CertifyOptions{};
    auto stage = substitute(project("mlp.tapestry.json"), o);
    QVERIFY2(stage.has_value(), stage ? "" : stage.error().c_str());
    const std::string actual = stage_text(*stage, 1);
    const auto path = source_dir() / "tests/data/passes/mlp_substitute.golden";
    if (qEnvironmentVariableIsSet("TAPESTRY_UPDATE_GOLDEN")) {
        std::ofstream(path) << actual;
        QSKIP("golden file rewritten");
    }
    const std::string expected = read_file(path);
    QVERIFY2(!expected.empty(), ("missing golden file " + path.string()).c_str());
    QCOMPARE(QString::fromStdString(actual), QString::fromStdString(expected));
}

void TestSubstitute::mlp_certifies_numerically() {
    // Full size: the structural checks (ISL); the numeric run on the MLP scaled /32
    // (batch 16, features 24/40), same structure and shards.
    SubstituteOptions o;
    o.rules = {"linear-split"};
    o.certify = CertifyOptions{};
    auto full = substitute(project("mlp.tapestry.json"), o);
    QVERIFY(full.has_value());
    QVERIFY2(full->certificate.pass(), full->certificate.text().c_str());
    o.certify = test::numeric_certify();
    const std::map<Coord, Coord> m{{512, 16}, {1024, 24}, {4096, 40}, {128, 4}, {256, 8}, {384, 12}};
    auto stage = substitute(test::scaled(project("mlp.tapestry.json"), m), o);
    QVERIFY(stage.has_value());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    QVERIFY(stage->certificate.find("numeric") != nullptr);
    // fc1 is sharded (left as it is); fc2..fc4 are split into matmul + add.
    QCOMPARE(count_kind(stage->graph, "linear"), 1);
    QCOMPARE(count_kind(stage->graph, "matmul"), 3);
    QVERIFY2(QString::fromStdString(stage->summary).contains("rules fired: linear-split×3;"), stage->summary.c_str());
}

void TestSubstitute::untouched_nodes_keep_pointers() {
    const Graph g = project("mlp.tapestry.json");
    SubstituteOptions o;
    o.rules = {"linear-split"};
    auto stage = substitute(g, o);
    QVERIFY(stage.has_value());
    for (const char *id : {"fc1", "gelu1", "relu2", "gelu3"})
        QCOMPARE(stage->graph.op_ptr(OpId(id)), g.op_ptr(OpId(id)));
    for (const char *id : {"x", "w1", "w2", "h1", "h2", "y"})
        QCOMPARE(stage->graph.tensor_ptr(TensorId(id)), g.tensor_ptr(TensorId(id)));
    const auto summary = stage->diff.summary();
    QCOMPARE(summary.removed, (std::vector<std::string>{"fc2", "fc3", "fc4"}));
    QVERIFY(summary.changed.empty());
    // The diff reverts to the input.
    Graph back = stage->graph;
    stage->diff.revert(back);
    QVERIFY(back.shares_all_nodes(g));
}

void TestSubstitute::block_expands_and_certifies_data() {
    QTest::addColumn<int>("heads");
    QTest::newRow("2 heads") << 2;
    QTest::newRow("1 head") << 1;
    QTest::newRow("4 heads") << 4;
}

void TestSubstitute::block_expands_and_certifies() {
    QFETCH(int, heads);
    SubstituteOptions o;  // the default: expand composites
    o.certify = test::numeric_certify();
    auto stage = substitute(small_block(2, 6, 8, heads), o);
    QVERIFY2(stage.has_value(), stage ? "" : stage.error().c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    QCOMPARE(count_kind(stage->graph, "attention"), 0);
    QCOMPARE(count_kind(stage->graph, "layernorm"), 0);
    QCOMPARE(count_kind(stage->graph, "softmax"), 1);
    QCOMPARE(count_kind(stage->graph, "linear"), 4);
    const QString s = QString::fromStdString(stage->summary);
    QVERIFY2(s.contains("(saturated)") && s.contains("attention-expand×1") && s.contains("layernorm-expand×2"),
             stage->summary.c_str());
}

void TestSubstitute::gpt2_project_expands_and_certifies() {
    // Full size (8 × 256 × 768, 12 heads): the structural checks; numeric on a copy
    // scaled to 2 × 8 × 96 (12 heads of 8), the same ops and params.
    SubstituteOptions o;
    o.certify = CertifyOptions{};
    auto full = substitute(project("gpt2_block.tapestry.json"), o);
    QVERIFY2(full.has_value(), full ? "" : full.error().c_str());
    QVERIFY2(full->certificate.pass(), full->certificate.text().c_str());
    QCOMPARE(count_kind(full->graph, "attention"), 0);
    QCOMPARE(count_kind(full->graph, "layernorm"), 0);
    qInfo("%s", full->summary.c_str());
    o.certify = test::numeric_certify();
    const std::map<Coord, Coord> m{{8, 2}, {256, 8}, {768, 96}, {1536, 192}, {2304, 288}, {3072, 384}};
    auto stage = substitute(test::scaled(project("gpt2_block.tapestry.json"), m), o);
    QVERIFY2(stage.has_value(), stage ? "" : stage.error().c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    QCOMPARE(count_kind(stage->graph, "softmax"), 1);
}

void TestSubstitute::fuse_goal_undoes_the_expansion() {
    const Graph block = small_block();
    SubstituteOptions expand;
    expand.rules = {"attention-expand", "layernorm-expand", "linear-split"};
    auto expanded = substitute(block, expand);
    QVERIFY(expanded.has_value());
    QVERIFY(count_kind(block, "attention") > 0);
    QCOMPARE(count_kind(expanded->graph, "attention"), 0);
    QCOMPARE(count_kind(expanded->graph, "layernorm"), 0);
    QCOMPARE(count_kind(expanded->graph, "linear"), 0);
    SubstituteOptions fuse;
    fuse.goal = "fuse";
    fuse.rules = {"attention-fuse", "layernorm-fuse", "linear-fuse"};
    fuse.certify = test::numeric_certify();
    auto fused = substitute(expanded->graph, fuse);
    QVERIFY(fused.has_value());
    QVERIFY2(fused->certificate.pass(), fused->certificate.text().c_str());
    QCOMPARE(count_kind(fused->graph, "attention"), count_kind(block, "attention"));
    QCOMPARE(count_kind(fused->graph, "layernorm"), 2);
    QCOMPARE(count_kind(fused->graph, "linear"), 4);
    QCOMPARE(fused->graph.operations().size(), block.operations().size());
    // ε comes back as written: the f32 constant is read as the shortest decimal that
    // rounds to it (1e-5), not as its f32 value 9.99999974738e-06.
    for (const OpPtr &op : fused->graph.operations())
        if (op->kind == "layernorm") QCOMPARE(op->params.get_float("epsilon", 0), 1e-5);
}

void TestSubstitute::nothing_to_do_changes_nothing() {
    const Graph g = project("mlp.tapestry.json");
    SubstituteOptions o;  // no attention or normalization in the MLP
    auto stage = substitute(g, o);
    QVERIFY(stage.has_value());
    QVERIFY(stage->diff.empty());
    QVERIFY(stage->graph.shares_all_nodes(g));
    QVERIFY2(QString::fromStdString(stage->summary).contains("rules fired: none"), stage->summary.c_str());
}

void TestSubstitute::limits_show_in_the_summary() {
    GraphBuilder b;
    TensorId acc = b.input("t0", {3, 3});
    for (int i = 1; i < 8; ++i)
        acc = b.op(i == 7 ? "y" : "s" + std::to_string(i), "add", {},
                   {{"a", acc}, {"b", b.input("t" + std::to_string(i), {3, 3})}}, i == 7);
    SubstituteOptions o;
    o.rules = {"add-assoc", "add-comm"};
    o.limits.iterations = 2;
    o.certify = test::numeric_certify();
    auto stage = substitute(b.g, o);
    QVERIFY(stage.has_value());
    QVERIFY2(QString::fromStdString(stage->summary).startsWith("2 iterations (iteration limit), "),
             stage->summary.c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    o.limits = RunnerLimits{};
    o.limits.nodes = 50;
    stage = substitute(b.g, o);
    QVERIFY(stage.has_value());
    QVERIFY2(QString::fromStdString(stage->summary).contains(" (node limit), "), stage->summary.c_str());
}

void TestSubstitute::refusals_data() {
    QTest::addColumn<QString>("rules");
    QTest::addColumn<QString>("goal");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown rule") << "linear-split,linear-splat" << "expand"
                                  << "substitute: unknown rule 'linear-splat' (rules: linear-split, linear-fuse, "
                                     "attention-expand, attention-fuse, layernorm-expand, layernorm-fuse, rmsnorm-expand, rmsnorm-fuse, "
                                     "transpose-transpose, reshape-reshape, add-assoc, add-comm, mul-assoc, mul-comm, matmul-ksplit)";
    QTest::newRow("unknown goal") << "" << "shrink" << "substitute: unknown goal 'shrink' (goals: expand, fuse)";
}

void TestSubstitute::refusals() {
    QFETCH(QString, rules);
    QFETCH(QString, goal);
    QFETCH(QString, message);
    SubstituteOptions o;
    for (const QString &r : rules.split(',', Qt::SkipEmptyParts)) o.rules.push_back(r.toStdString());
    o.goal = goal.toStdString();
    auto stage = substitute(small_block(), o);
    QVERIFY(!stage.has_value());
    QCOMPARE(QString::fromStdString(stage.error()), message);
}

QTEST_GUILESS_MAIN(TestSubstitute)
#include "test_substitute.moc"
