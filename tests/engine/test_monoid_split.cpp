// Sharding a contraction through the monoid rewrite (engine/passes/monoid_split.h):
// matmul/linear split on k become partial_matmul + reduce_sum (+ the bias add), the
// stage certifies (numerically too), refusals say why; and the partial_matmul kind
// itself — its reference against the matmul it splits and its CPU kernel against
// its reference, sharded and not.
#include <QtTest/QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "graph/validate.h"
#include "io/project_file.h"
#include "kernel_check.h"
#include "ops/library.h"
#include "verify/numeric_check.h"
#include "passes/monoid_split.h"
#include "passes/shard.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

using test::parse;

// a [A] @ b [B] → mm → y → relu r → z (output). Shapes as JSON arrays.
Graph matmul_graph(const std::string &a, const std::string &b, const std::string &y) {
    return parse(R"({"format": "tapestry-project", "version": 1, "name": "mm",
  "tensors": [
    {"id": "a", "dtype": "f32", "shape": )" + a + R"(, "role": "input"},
    {"id": "b", "dtype": "f32", "shape": )" + b + R"(, "role": "parameter"},
    {"id": "y", "dtype": "f32", "shape": )" + y + R"(, "role": "intermediate"},
    {"id": "z", "dtype": "f32", "shape": )" + y + R"(, "role": "output"}
  ],
  "operations": [
    {"id": "mm", "kind": "matmul", "inputs": {"a": "a", "b": "b"}, "outputs": {"y": "y"}},
    {"id": "r", "kind": "relu", "inputs": {"x": "y"}, "outputs": {"y": "z"}}
  ]})");
}

// x[10, 6] → linear fc1 (+ bias) → h[10, 8] → relu r1 → out[10, 8].
Graph linear_graph(bool with_bias) {
    return parse(std::string(R"({"format": "tapestry-project", "version": 1, "name": "lin",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 6], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
    {"id": "bias", "dtype": "f32", "shape": [8], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [10, 8], "role": "intermediate"},
    {"id": "out", "dtype": "f32", "shape": [10, 8], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w")") +
                        (with_bias ? R"(, "bias": "bias")" : "") + R"(}, "outputs": {"y": "h"}},
    {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "out"}}
  ]})");
}

// x[6, 10, 4] → reduce r (kind, params) → y → relu q → z (output).
Graph reduce_graph(const std::string &kind, const std::string &params, const std::string &y) {
    return parse(R"({"format": "tapestry-project", "version": 1, "name": "red",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [6, 10, 4], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": )" + y + R"(, "role": "intermediate"},
    {"id": "z", "dtype": "f32", "shape": )" + y + R"(, "role": "output"}
  ],
  "operations": [
    {"id": "r", "kind": ")" + kind + R"(", "params": )" + params + R"(, "inputs": {"x": "x"}, "outputs": {"y": "y"}},
    {"id": "q", "kind": "relu", "inputs": {"x": "y"}, "outputs": {"y": "z"}}
  ]})");
}

// The shard pass alone: no propagation or data movement, so the stage shows the split.
Expected<Stage, std::string> split(const Graph &g, const std::vector<std::string> &specs, bool numeric = false) {
    auto options = parse_shard_options(specs);
    if (!options) return unexpected(options.error());
    options->propagate = false;
    options->movement = false;
    options->certify = CertifyOptions{};
    if (numeric) options->certify->numeric = verify::numeric_check();
    return shard(g, *options);
}

QString shards_text(const Graph &g, const std::string &op) {
    QStringList out;
    for (const Shard &s : g.find_op(OpId(op))->shards)
        out << QString::fromStdString(s.id.value + " " + range_text(s.index) + (s.device.empty() ? "" : "@" + s.device));
    return out.join(", ");
}

QString ids(const std::vector<std::string> &v) {
    QStringList out;
    for (const std::string &s : v) out << QString::fromStdString(s);
    return out.join(" ");
}

using test::source_dir;

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

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

}  // namespace

class TestMonoidSplit : public QObject {
    Q_OBJECT
private slots:
    // ---- the pass -------------------------------------------------------------------
    void mlp_fc1_kdim4_golden();
    void splits_certify_numerically_data();
    void splits_certify_numerically();
    void matmul_split_rewrites_into_partial_and_reduce();
    void linear_with_bias_adds_it_after_the_reduce();
    void product_with_an_existing_split();
    void reduce_split_into_partial_reduces();
    void numeric_check_catches_a_wrong_reduction();
    void split_with_propagation_and_movement();
    void reduction_blocks_are_equal_with_the_last_clipped();
    void refusals_data();
    void refusals();
    void collective_labels();
    // ---- the partial_matmul kind ------------------------------------------------------
    void partial_products_sum_to_the_matmul_data();
    void partial_products_sum_to_the_matmul();
    void cpu_kernel_matches_reference_data();
    void cpu_kernel_matches_reference();
    void partial_matmul_refuses_bad_parts_data();
    void partial_matmul_refuses_bad_parts();
};

void TestMonoidSplit::mlp_fc1_kdim4_golden() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    LoadResult loaded = load_project(source_dir() / "projects/mlp.tapestry.json");
    QVERIFY(loaded.ok());
    // fc1 is a linear over [512, 4096] already split 4-way on its batch (gpu0…gpu3):
    // its contraction (in = 1024, dim 2) into 4 blocks is a product split.
    auto stage = split(loaded.graph, {"fc1:2=4"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    const std::string actual = stage_text(*stage, 1);
    const std::filesystem::path path = source_dir() / "tests/data/passes/mlp_fc1_kdim4.golden";
    if (qgetenv("TAPESTRY_UPDATE_GOLDEN") == "1") {
        std::ofstream(path, std::ios::binary) << actual;
        qInfo("rewrote %s", path.c_str());
    }
    std::ifstream in(path, std::ios::binary);
    QVERIFY2(in, ("missing golden file " + path.string() + " (TAPESTRY_UPDATE_GOLDEN=1 writes it)").c_str());
    const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string diff = first_difference(expected, actual);
    QVERIFY2(diff.empty(), (path.filename().string() + " differs at " + diff).c_str());
    // fc1's partials stay on their batch shard's device (none); fc2 is unsharded, so its
    // four partials sit on four (virtual) devices and their reduction is an all-reduce.
    auto fc2 = split(loaded.graph, {"fc2:2=4"});
    QVERIFY2(fc2, fc2 ? "" : fc2.error().c_str());
    QVERIFY2(fc2->certificate.pass(), fc2->certificate.text().c_str());
    QCOMPARE(QString::fromStdString(fc2->summary),
             QString("split fc2 contraction in (dim 2, extent 4096) into 4 blocks (1024 each): fc2.partial 4 shards, "
                     "fc2.reduce (reduction of partials: all_reduce), fc2.bias (bias)"));
}

void TestMonoidSplit::splits_certify_numerically_data() {
    QTest::addColumn<QString>("graph");
    QTest::addColumn<QStringList>("specs");
    QTest::newRow("matmul k even") << "mm 2d" << QStringList{"mm:2=4"};
    QTest::newRow("matmul k uneven 10 into 4") << "mm uneven" << QStringList{"mm:2=4"};
    QTest::newRow("matmul k explicit sizes") << "mm uneven" << QStringList{"mm:2=4+4+2"};
    QTest::newRow("matmul k one block") << "mm 2d" << QStringList{"mm:2=1"};
    QTest::newRow("matmul broadcast batch") << "mm batched" << QStringList{"mm:4=3"};
    QTest::newRow("matmul batch then k (product)") << "mm batched" << QStringList{"mm:0=2", "mm:2=2", "mm:4=3"};
    QTest::newRow("linear no bias") << "linear" << QStringList{"fc1:2=3"};
    QTest::newRow("linear with bias, blocks of one") << "linear bias" << QStringList{"fc1:2=6"};
    QTest::newRow("linear batch then k (product)") << "linear bias" << QStringList{"fc1:0=2", "fc1:2=2"};
    QTest::newRow("then the partials split again") << "linear bias" << QStringList{"fc1:2=2", "fc1.partial:2=2"};
    QTest::newRow("then the reduce split") << "linear bias" << QStringList{"fc1:2=3", "fc1.reduce:0=2"};
    QTest::newRow("reduce_sum axis 1 kept, 10 into 4") << "sum keep" << QStringList{"r:3=4"};
    QTest::newRow("reduce_sum batch then axis (product)") << "sum drop" << QStringList{"r:0=2", "r:2=3"};
    QTest::newRow("reduce_max second of two axes") << "max two" << QStringList{"r:2=2"};
    QTest::newRow("reduce_max first of two axes") << "max two" << QStringList{"r:1=3"};
    QTest::newRow("reduce_mean equal blocks") << "mean drop" << QStringList{"r:2=5"};
}

void TestMonoidSplit::splits_certify_numerically() {
    QFETCH(QString, graph);
    QFETCH(QStringList, specs);
    Graph g;
    if (graph == "mm 2d") g = matmul_graph("[6, 8]", "[8, 5]", "[6, 5]");
    if (graph == "mm uneven") g = matmul_graph("[4, 10]", "[10, 3]", "[4, 3]");
    if (graph == "mm batched") g = matmul_graph("[2, 1, 3, 7]", "[4, 7, 5]", "[2, 4, 3, 5]");
    if (graph == "linear") g = linear_graph(false);
    if (graph == "linear bias") g = linear_graph(true);
    if (graph == "sum keep") g = reduce_graph("reduce_sum", R"({"axes": [1]})", "[6, 1, 4]");
    if (graph == "sum drop") g = reduce_graph("reduce_sum", R"({"axes": [-2], "keepdims": false})", "[6, 4]");
    if (graph == "max two") g = reduce_graph("reduce_max", R"({"axes": [2, 1], "keepdims": false})", "[6]");
    if (graph == "mean drop") g = reduce_graph("reduce_mean", R"({"axes": [1], "keepdims": false})", "[6, 4]");
    QVERIFY(!g.operations().empty());
    std::vector<std::string> s;
    for (const QString &x : specs) s.push_back(x.toStdString());
    auto stage = split(g, s, true);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
    QVERIFY(stage->certificate.find("numeric") && stage->certificate.find("numeric")->pass);
    const auto issues = validate(stage->graph, OpLibrary::standard());
    QVERIFY2(!has_errors(issues), issues.empty() ? "" : format_issue(issues.front()).c_str());
}

void TestMonoidSplit::matmul_split_rewrites_into_partial_and_reduce() {
    const Graph g = matmul_graph("[4, 10]", "[10, 3]", "[4, 3]");
    auto stage = split(g, {"mm:2=4"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    const auto sum = stage->diff.summary();
    QCOMPARE(ids(sum.removed), QString("mm"));
    QCOMPARE(ids(sum.added), QString("mm.partials mm.partial mm.reduce"));
    QVERIFY(sum.changed.empty());
    // Consumers and every other node keep their pointers.
    QCOMPARE(stage->graph.op_ptr(OpId("r")).get(), g.op_ptr(OpId("r")).get());
    for (const TensorPtr &t : g.tensors()) QCOMPARE(stage->graph.tensor_ptr(t->id).get(), t.get());
    const Operation *partial = stage->graph.find_op(OpId("mm.partial"));
    QCOMPARE(partial->kind, std::string("partial_matmul"));
    QCOMPARE(partial->params.get_int("parts", 0), std::int64_t{4});
    QCOMPARE(shards_text(stage->graph, "mm.partial"),
             QString("mm/0 [0,1)x[0,4)x[0,3), mm/1 [1,2)x[0,4)x[0,3), mm/2 [2,3)x[0,4)x[0,3), mm/3 [3,4)x[0,4)x[0,3)"));
    const Tensor *partials = stage->graph.find_tensor(TensorId("mm.partials"));
    QCOMPARE(partials->range, ZRange::of_shape({4, 4, 3}));
    QCOMPARE(partials->role, TensorRole::intermediate);
    const Operation *reduce = stage->graph.find_op(OpId("mm.reduce"));
    QCOMPARE(reduce->kind, std::string("reduce_sum"));
    QCOMPARE(reduce->params.get_ints("axes", {}), std::vector<std::int64_t>{0});
    QCOMPARE(reduce->params.get_bool("keepdims", true), false);
    QCOMPARE(reduce->output("y")->selections.at(0).tensor.value, std::string("y"));
    QVERIFY(reduce->shards.empty());
    QCOMPARE(QString::fromStdString(stage->summary),
             QString("split mm contraction k (dim 2, extent 10) into 4 blocks (3+3+3+1): mm.partial 4 shards, "
                     "mm.reduce (reduction of partials: all_reduce)"));
    // The clipped last block reads a[:, 9:10] only.
    auto derived = resolve(stage->graph, *partial, OpLibrary::standard());
    QVERIFY(derived);
    const ZRange last = partial->shards[3].index;
    QCOMPARE(selection_of(*derived->signature.input("a", 0), last, ZRange::of_shape({4, 10})), ZRange({0, 9}, {4, 10}));
    QCOMPARE(selection_of(*derived->signature.input("b", 0), partial->shards[1].index, ZRange::of_shape({10, 3})),
             ZRange({3, 0}, {6, 3}));
    // The diff reverts the stage to the input.
    Graph back = stage->graph;
    stage->diff.revert(back);
    QVERIFY(back.shares_all_nodes(g));
}

void TestMonoidSplit::linear_with_bias_adds_it_after_the_reduce() {
    const Graph g = linear_graph(true);
    auto stage = split(g, {"fc1:2=3"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(ids(stage->diff.summary().added), QString("fc1.partials fc1.reduced fc1.partial fc1.reduce fc1.bias"));
    QCOMPARE(ids(stage->diff.summary().removed), QString("fc1"));
    const Operation *partial = stage->graph.find_op(OpId("fc1.partial"));
    QCOMPARE(partial->input("a")->selections.at(0).tensor.value, std::string("x"));
    QCOMPARE(partial->input("b")->selections.at(0).tensor.value, std::string("w"));
    const Operation *reduce = stage->graph.find_op(OpId("fc1.reduce"));
    QCOMPARE(reduce->output("y")->selections.at(0).tensor.value, std::string("fc1.reduced"));
    const Operation *add = stage->graph.find_op(OpId("fc1.bias"));
    QCOMPARE(add->kind, std::string("add"));
    QCOMPARE(add->input("a")->selections.at(0).tensor.value, std::string("fc1.reduced"));
    QCOMPARE(add->input("b")->selections.at(0).tensor.value, std::string("bias"));
    QCOMPARE(add->output("y")->selections.at(0).tensor.value, std::string("h"));
    QCOMPARE(QString::fromStdString(stage->summary),
             QString("split fc1 contraction in (dim 2, extent 6) into 3 blocks (2 each): fc1.partial 3 shards, "
                     "fc1.reduce (reduction of partials: all_reduce), fc1.bias (bias)"));
    // Without a bias there is no add and the reduce writes h itself.
    auto plain = split(linear_graph(false), {"fc1:2=3"});
    QVERIFY(plain);
    QCOMPARE(ids(plain->diff.summary().added), QString("fc1.partials fc1.partial fc1.reduce"));
    QCOMPARE(plain->graph.find_op(OpId("fc1.reduce"))->output("y")->selections.at(0).tensor.value, std::string("h"));
}

void TestMonoidSplit::product_with_an_existing_split() {
    auto stage = split(linear_graph(true), {"fc1:0=3+7", "fc1:2=2"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(shards_text(stage->graph, "fc1.partial"),
             QString("fc1/0.0 [0,1)x[0,3)x[0,8), fc1/0.1 [1,2)x[0,3)x[0,8), "
                     "fc1/1.0 [0,1)x[3,10)x[0,8), fc1/1.1 [1,2)x[3,10)x[0,8)"));
    QCOMPARE(shards_text(stage->graph, "fc1.reduce"), QString("fc1.reduce/0 [0,3)x[0,8), fc1.reduce/1 [3,10)x[0,8)"));
    QCOMPARE(shards_text(stage->graph, "fc1.bias"), QString("fc1.bias/0 [0,3)x[0,8), fc1.bias/1 [3,10)x[0,8)"));
    QCOMPARE(QString::fromStdString(stage->summary),
             QString("split fc1 dim 0 into 2 (3+7): 2 shards; fc1 contraction in (dim 2, extent 6) into 2 blocks (3 "
                     "each): fc1.partial 4 shards (product with its 2 shards), fc1.reduce (reduction of partials: "
                     "reduce_scatter), fc1.bias (bias)"));
    // A later spec naming the split op says where it went.
    auto later = split(linear_graph(true), {"fc1:2=2", "fc1:0=2"});
    QVERIFY(!later);
    QCOMPARE(QString::fromStdString(later.error()),
             QString("shard spec 'fc1:0=2': unknown operation 'fc1' (an earlier spec split its contraction: name "
                     "'fc1.partial' or 'fc1.reduce')"));
}

void TestMonoidSplit::reduce_split_into_partial_reduces() {
    const Graph g = reduce_graph("reduce_sum", R"({"axes": [1], "keepdims": false})", "[6, 4]");
    auto stage = split(g, {"r:0=2", "r:2=4"});
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QCOMPARE(ids(stage->diff.summary().added), QString("r.partials r.partial.0 r.partial.1 r.partial.2 r.partial.3 r.reduce"));
    QCOMPARE(ids(stage->diff.summary().removed), QString("r"));
    QCOMPARE(stage->graph.find_tensor(TensorId("r.partials"))->range, ZRange::of_shape({6, 4, 4}));
    const Operation *last = stage->graph.find_op(OpId("r.partial.3"));
    QCOMPARE(last->kind, std::string("reduce_sum"));
    QCOMPARE(last->params.get_bool("keepdims", false), true);
    QCOMPARE(last->input("x")->selections.at(0).range, ZRange({0, 9, 0}, {6, 10, 4}));
    QCOMPARE(last->output("y")->selections.at(0).range, ZRange({0, 3, 0}, {6, 4, 4}));
    QCOMPARE(shards_text(stage->graph, "r.partial.3"), QString("r/0.3 [0,3)x[0,1)x[0,4), r/1.3 [3,6)x[0,1)x[0,4)"));
    QCOMPARE(shards_text(stage->graph, "r.reduce"), QString("r.reduce/0 [0,3)x[0,4), r.reduce/1 [3,6)x[0,4)"));
    QCOMPARE(QString::fromStdString(stage->summary),
             QString("split r dim 0 into 2 (3 each): 2 shards; r reduced axis 1 (dim 2, extent 10) into 4 blocks "
                     "(3+3+3+1): 4 partial reduce_sum r.partial.0 … r.partial.3 (8 shards, product with its 2 "
                     "shards), r.reduce (reduction of partials: reduce_scatter)"));
    QCOMPARE(QString::fromStdString(collective_of(stage->graph, *stage->graph.find_op(OpId("r.reduce")))),
             QString("reduce_scatter"));
    // Unsharded partial reduces are one (virtual) device each: an all-reduce.
    auto plain = split(g, {"r:2=2"});
    QVERIFY(plain);
    QCOMPARE(QString::fromStdString(collective_of(plain->graph, *plain->graph.find_op(OpId("r.reduce")))),
             QString("all_reduce"));
    // A mean of block means is the mean only for equal blocks.
    auto mean = split(reduce_graph("reduce_mean", R"({"axes": [1], "keepdims": false})", "[6, 4]"), {"r:2=4"});
    QVERIFY(!mean);
    QCOMPARE(QString::fromStdString(mean.error()),
             QString("shard spec 'r:2=4': reduce_mean 'r' splits only into blocks of equal size (a mean of block means "
                     "is the mean only then), but the reduced axis 1 (dim 2) of 'r' (extent 10) into 4 gives 3+3+3+1"));
    // Two reduced axes are two contractions.
    auto beyond = split(reduce_graph("reduce_max", R"({"axes": [1, 2], "keepdims": false})", "[6]"), {"r:3=2"});
    QVERIFY(!beyond);
    QCOMPARE(QString::fromStdString(beyond.error()),
             QString("shard spec 'r:3=2': dim 3 is out of range: 'r' has a 1-dim index space [0,6) and its "
                     "contractions axis 1 as dim 1, axis 2 as dim 2"));
}

// With the shard pass's defaults (propagation, data movement) after the split, the
// stage still computes the original.
void TestMonoidSplit::split_with_propagation_and_movement() {
    auto options = parse_shard_options({"fc1:0=2", "fc1:2=3"});
    QVERIFY(options);
    options->certify = CertifyOptions{};
    options->certify->numeric = verify::numeric_check();
    auto stage = shard(linear_graph(true), *options);
    QVERIFY2(stage, stage ? "" : stage.error().c_str());
    QVERIFY2(stage->summary.find("fc1.reduce (reduction of partials: reduce_scatter)") != std::string::npos,
             stage->summary.c_str());
    QVERIFY2(stage->certificate.pass(), stage->certificate.text().c_str());
}

// The numeric check is what proves the rewrite: a wrong second reduction (max of the
// partials instead of their sum) passes the structural checks but not that one.
void TestMonoidSplit::numeric_check_catches_a_wrong_reduction() {
    const Graph g = matmul_graph("[4, 10]", "[10, 3]", "[4, 3]");
    auto stage = split(g, {"mm:2=4"});
    QVERIFY(stage);
    Graph broken = stage->graph;
    Operation reduce = *broken.find_op(OpId("mm.reduce"));
    reduce.kind = "reduce_max";
    broken.put_op(reduce);
    CertifyOptions options;
    options.numeric = verify::numeric_check();
    const Certificate c = certify(g, broken, options);
    QVERIFY(c.find("dataflow")->pass);
    QVERIFY(!c.find("numeric")->pass);
    QVERIFY(!c.pass());
}

void TestMonoidSplit::reduction_blocks_are_equal_with_the_last_clipped() {
    QCOMPARE(reduction_blocks(10, 4, "k").value(), (std::vector<Coord>{3, 3, 3, 1}));
    QCOMPARE(reduction_blocks(10, 3, "k").value(), (std::vector<Coord>{4, 4, 2}));
    QCOMPARE(reduction_blocks(8, 4, "k").value(), (std::vector<Coord>{2, 2, 2, 2}));
    QCOMPARE(reduction_blocks(7, 1, "k").value(), (std::vector<Coord>{7}));
    QCOMPARE(reduction_blocks(10, std::vector<Coord>{3, 3, 3, 1}, "k").value(), (std::vector<Coord>{3, 3, 3, 1}));
    QVERIFY(!reduction_blocks(10, 6, "k"));
    QVERIFY(!reduction_blocks(10, 11, "k"));
    QVERIFY(!reduction_blocks(10, std::vector<Coord>{6, 4}, "k"));
    QVERIFY(!reduction_blocks(10, std::vector<Coord>{3, 3, 4}, "k"));
}

void TestMonoidSplit::refusals_data() {
    QTest::addColumn<QString>("graph");
    QTest::addColumn<QStringList>("specs");
    QTest::addColumn<QString>("message");
    QTest::newRow("an empty block")
        << "mm" << QStringList{"mm:2=6"}
        << "shard spec 'mm:2=6': cannot split the contraction k (dim 2) of 'mm' (extent 10) into 6 blocks: a "
           "reduction splits into blocks of equal size, the last one clipped, and blocks of 2 cover it in 5";
    QTest::newRow("more parts than points")
        << "mm" << QStringList{"mm:2=11"}
        << "shard spec 'mm:2=11': cannot split the contraction k (dim 2) of 'mm' (extent 10) into 11 parts";
    QTest::newRow("sizes of another form")
        << "mm" << QStringList{"mm:2=6+4"}
        << "shard spec 'mm:2=6+4': sizes 6+4 do not split the contraction k (dim 2) of 'mm' into blocks of equal "
           "size with the last one clipped (in 2 parts: 5+5)";
    QTest::newRow("sizes that do not sum")
        << "mm" << QStringList{"mm:2=3+3+3"}
        << "shard spec 'mm:2=3+3+3': sizes 3+3+3 sum to 9, but the contraction k (dim 2) of 'mm' has extent 10";
    QTest::newRow("beyond the contraction")
        << "mm" << QStringList{"mm:3=2"}
        << "shard spec 'mm:3=2': dim 3 is out of range: 'mm' has a 2-dim index space [0,4)x[0,3) and its "
           "contraction k as dim 2";
    QTest::newRow("a partial product has no contraction to split")
        << "mm" << QStringList{"mm:2=2", "mm.partial:3=2"}
        << "shard spec 'mm.partial:3=2': dim 3 is out of range: 'mm.partial' has a 3-dim index space "
           "[0,2)x[0,4)x[0,3)";
    QTest::newRow("relu has no contraction")
        << "mm" << QStringList{"r:2=2"}
        << "shard spec 'r:2=2': dim 2 is out of range: 'r' has a 2-dim index space [0,4)x[0,3)";
    QTest::newRow("linear over a vector")
        << "vector" << QStringList{"fc:1=2"}
        << "shard spec 'fc:1=2': 'fc' cannot be split on its contraction: partial_matmul: a must have rank at "
           "least 2, got rank 1 [6] (reshape x to [1, 6])";
}

void TestMonoidSplit::refusals() {
    QFETCH(QString, graph);
    QFETCH(QStringList, specs);
    QFETCH(QString, message);
    Graph g = matmul_graph("[4, 10]", "[10, 3]", "[4, 3]");
    if (graph == "vector")
        g = parse(R"({"format": "tapestry-project", "version": 1, "name": "v",
  "tensors": [{"id": "x", "dtype": "f32", "shape": [6], "role": "input"},
              {"id": "w", "dtype": "f32", "shape": [6, 4], "role": "parameter"},
              {"id": "y", "dtype": "f32", "shape": [4], "role": "output"}],
  "operations": [{"id": "fc", "kind": "linear", "inputs": {"x": "x", "w": "w"}, "outputs": {"y": "y"}}]})");
    std::vector<std::string> s;
    for (const QString &x : specs) s.push_back(x.toStdString());
    auto stage = split(g, s);
    QVERIFY(!stage);
    QCOMPARE(QString::fromStdString(stage.error()), message);
}

void TestMonoidSplit::collective_labels() {
    auto label = [](const Stage &s, const std::string &op) {
        return QString::fromStdString(collective_of(s.graph, *s.graph.find_op(OpId(op))));
    };
    const Graph g = linear_graph(true);
    // Partials on 3 (virtual) devices summed by one reduce: all-reduce.
    auto unsharded = split(g, {"fc1:2=3"});
    QVERIFY(unsharded);
    QCOMPARE(label(*unsharded, "fc1.reduce"), QString("all_reduce"));
    // The reduce sharded on the batch: each shard sums partials of 2 devices: reduce-scatter.
    auto scattered = split(g, {"fc1:0=2", "fc1:2=2"});
    QVERIFY(scattered);
    QCOMPARE(label(*scattered, "fc1.reduce"), QString("reduce_scatter"));
    // One block: nothing to combine across devices.
    auto one = split(g, {"fc1:2=1"});
    QVERIFY(one);
    QCOMPARE(label(*one, "fc1.reduce"), QString("none"));
    // Not a reduction of partials.
    QCOMPARE(label(*unsharded, "fc1.bias"), QString(""));
    QCOMPARE(label(*unsharded, "r1"), QString(""));
    // Partials placed on one device per reduce shard need no collective.
    Graph placed = scattered->graph;
    Operation p = *placed.find_op(OpId("fc1.partial"));
    for (Shard &s : p.shards) s.device = s.id.value.rfind("fc1/0", 0) == 0 ? "gpu0" : "gpu1";
    placed.put_op(p);
    QCOMPARE(QString::fromStdString(collective_of(placed, *placed.find_op(OpId("fc1.reduce")))), QString("none"));
    p.shards[0].device = "gpu1";
    placed.put_op(p);
    QCOMPARE(QString::fromStdString(collective_of(placed, *placed.find_op(OpId("fc1.reduce")))),
             QString("reduce_scatter"));
}

// ---- the partial_matmul kind ----------------------------------------------------------

void TestMonoidSplit::partial_products_sum_to_the_matmul_data() {
    QTest::addColumn<QVector<qint64>>("a");
    QTest::addColumn<QVector<qint64>>("b");
    QTest::addColumn<int>("parts");
    QTest::newRow("2d even") << QVector<qint64>{5, 8} << QVector<qint64>{8, 3} << 4;
    QTest::newRow("2d clipped 10 into 4") << QVector<qint64>{3, 10} << QVector<qint64>{10, 4} << 4;
    QTest::newRow("broadcast batch") << QVector<qint64>{3, 1, 2, 7} << QVector<qint64>{2, 7, 3} << 3;
    QTest::newRow("batch one side") << QVector<qint64>{4, 5} << QVector<qint64>{2, 5, 6} << 2;
    QTest::newRow("one block") << QVector<qint64>{2, 3} << QVector<qint64>{3, 2} << 1;
    QTest::newRow("blocks of one") << QVector<qint64>{2, 3} << QVector<qint64>{3, 2} << 3;
}

void TestMonoidSplit::partial_products_sum_to_the_matmul() {
    QFETCH(QVector<qint64>, a);
    QFETCH(QVector<qint64>, b);
    QFETCH(int, parts);
    const OpLibrary &lib = OpLibrary::standard();
    const ZPoint as(std::vector<Coord>(a.begin(), a.end())), bs(std::vector<Coord>(b.begin(), b.end()));
    const std::vector<PortTypes> in{{"a", {OperandType{DType::f32, as}}}, {"b", {OperandType{DType::f32, bs}}}};
    Params params;
    params.set("parts", std::int64_t{parts});
    auto pd = lib.derive("partial_matmul", params, in);
    QVERIFY2(pd, pd ? "" : pd.error().message.c_str());
    auto md = lib.derive("matmul", {}, in);
    QVERIFY(md);
    // The output is [parts, *y] and the index space its shape.
    const ZPoint ys = md->outputs[0].operands[0].shape;
    const ZPoint ps = pd->outputs[0].operands[0].shape;
    QCOMPARE(ps[0], Coord{parts});
    QCOMPARE(ZPoint(std::vector<Coord>(ps.coords().begin() + 1, ps.coords().end())), ys);
    QCOMPARE(pd->signature.index_space, ZRange::of_shape(ps));
    QVERIFY(pd->signature.input("a", 0)->clipped);

    RefArray ra(ZRange::of_shape(as)), rb(ZRange::of_shape(bs));
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    for (double &v : ra.data) v = u(rng);
    for (double &v : rb.data) v = u(rng);
    RefArray partial(ZRange::of_shape(ps), std::nan("")), whole(ZRange::of_shape(ys), std::nan(""));
    lib.find("partial_matmul")->reference(RefContext{params, *pd, {{&ra}, {&rb}}, {{&partial}}, pd->signature.index_space});
    const Params none;
    lib.find("matmul")->reference(RefContext{none, *md, {{&ra}, {&rb}}, {{&whole}}, md->signature.index_space});
    // Σ_p y[p] = a @ b.
    const Coord n = ys.product();
    for (Coord e = 0; e < n; ++e) {
        double sum = 0;
        for (Coord p = 0; p < parts; ++p) sum += partial.data[static_cast<size_t>(p * n + e)];
        QVERIFY2(std::abs(sum - whole.data[static_cast<size_t>(e)]) < 1e-12, std::to_string(e).c_str());
    }
    // Block p alone is the product of a's and b's slices pB:(p+1)B.
    const Coord k = as[as.rank() - 1];
    const Coord block = (k + parts - 1) / parts;
    const int last = parts - 1;
    ZPoint point = ZPoint::zeros(ps.rank());
    point[0] = last;
    double expect = 0;
    for (Coord kk = last * block; kk < k; ++kk) {
        ZPoint ea = ZPoint::zeros(as.rank()), eb = ZPoint::zeros(bs.rank());
        ea[as.rank() - 1] = kk;
        eb[bs.rank() - 2] = kk;
        expect += ra.at(ea) * rb.at(eb);
    }
    QVERIFY(std::abs(partial.at(point) - expect) < 1e-12);
    QCOMPARE(lib.find("partial_matmul")->flops_per_point(params, *pd), 2.0 * static_cast<double>(block));
    QCOMPARE(lib.find("partial_matmul")->monoid(params)->name, std::string("sum"));
}

void TestMonoidSplit::cpu_kernel_matches_reference_data() {
    QTest::addColumn<QVector<qint64>>("a");
    QTest::addColumn<QVector<qint64>>("b");
    QTest::addColumn<int>("parts");
    QTest::addColumn<int>("seed");
    QTest::newRow("2d even") << QVector<qint64>{7, 12} << QVector<qint64>{12, 5} << 4 << 1;
    QTest::newRow("2d clipped 10 into 4") << QVector<qint64>{6, 10} << QVector<qint64>{10, 9} << 4 << 2;
    QTest::newRow("broadcast batch") << QVector<qint64>{3, 1, 4, 11} << QVector<qint64>{2, 11, 6} << 3 << 3;
    QTest::newRow("batch one side") << QVector<qint64>{5, 9} << QVector<qint64>{3, 9, 4} << 2 << 4;
    QTest::newRow("shared weights") << QVector<qint64>{2, 3, 4, 13} << QVector<qint64>{13, 7} << 5 << 5;
}

void TestMonoidSplit::cpu_kernel_matches_reference() {
    QFETCH(QVector<qint64>, a);
    QFETCH(QVector<qint64>, b);
    QFETCH(int, parts);
    QFETCH(int, seed);
    test::KernelCase c;
    c.kind = "partial_matmul";
    c.params.set("parts", std::int64_t{parts});
    c.inputs = {{"a", {ZPoint(std::vector<Coord>(a.begin(), a.end()))}},
                {"b", {ZPoint(std::vector<Coord>(b.begin(), b.end()))}}};
    c.seed = static_cast<std::uint64_t>(seed);
    // The whole op, then random shards over (p, batch, m, n), the clipped last block included.
    const test::KernelCheckResult whole = test::check_kernel(c);
    QVERIFY2(whole.ok, whole.message.c_str());
    QVERIFY(whole.compared > 0);
    auto d = OpLibrary::standard().derive("partial_matmul", c.params,
                                          {{"a", {OperandType{DType::f32, c.inputs[0].second[0]}}},
                                           {"b", {OperandType{DType::f32, c.inputs[1].second[0]}}}});
    QVERIFY(d);
    const ZRange space = d->signature.index_space;
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 31 + 7);
    for (int trial = 0; trial < 6; ++trial) {
        ZPoint s = space.start(), e = space.end();
        for (int dim = 0; dim < space.rank(); ++dim) {
            std::uniform_int_distribution<Coord> at(0, space.extent(dim) - 1);
            Coord x = at(rng), y = at(rng);
            if (x > y) std::swap(x, y);
            s[dim] = x;
            e[dim] = y + 1;
        }
        if (trial == 0) s[0] = e[0] - 1;  // one block
        if (trial == 1) {                 // the last (clipped) block and the one before
            s[0] = std::max<Coord>(0, space.extent(0) - 2);
            e[0] = space.extent(0);
        }
        c.index_range = ZRange(s, e);
        const test::KernelCheckResult r = test::check_kernel(c);
        QVERIFY2(r.ok, (c.index_range->to_string() + ": " + r.message).c_str());
        QVERIFY(r.compared > 0);
    }
}

void TestMonoidSplit::partial_matmul_refuses_bad_parts_data() {
    QTest::addColumn<qint64>("parts");
    QTest::addColumn<QString>("message");
    QTest::newRow("zero") << qint64{0} << "partial_matmul: parts 0 must be between 1 and k = 10";
    QTest::newRow("more than k") << qint64{11} << "partial_matmul: parts 11 must be between 1 and k = 10";
    QTest::newRow("an empty block")
        << qint64{6}
        << "partial_matmul: k = 10 does not split into 6 non-empty blocks of equal size (blocks of 2 cover it in 5)";
}

void TestMonoidSplit::partial_matmul_refuses_bad_parts() {
    QFETCH(qint64, parts);
    QFETCH(QString, message);
    Params params;
    params.set("parts", std::int64_t{parts});
    const std::vector<PortTypes> in{{"a", {OperandType{DType::f32, ZPoint{4, 10}}}},
                                    {"b", {OperandType{DType::f32, ZPoint{10, 3}}}}};
    auto d = OpLibrary::standard().derive("partial_matmul", params, in);
    QVERIFY(!d);
    QCOMPARE(QString::fromStdString(d.error().message), message);
    QCOMPARE(QString::fromStdString(d.error().field), QString("params.parts"));
    // parts is required.
    auto missing = OpLibrary::standard().derive("partial_matmul", {}, in);
    QVERIFY(!missing);
    QCOMPARE(QString::fromStdString(missing.error().code), QString("missing-param"));
}

QTEST_GUILESS_MAIN(TestMonoidSplit)
#include "test_monoid_split.moc"
