// The numeric proof of equivalence (verify/verify.h): the comparison
// machinery on crafted values (errors, tolerances, NaN, the worst element), verify
// on small graphs (sharded and not, a failing output, bad inputs), and verify on
// every example project (the large ones scaled down so the double-precision oracle
// stays quick; the MLP keeps its 4-way sharded layer); and `tapestry run` /
// `tapestry verify` as a user meets them (exit codes, --json, .npy in and out).
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "graph/validate.h"
#include "io/npy.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "ops/evaluate.h"
#include "verify/verify.h"

using namespace tapestry;
using namespace tapestry::cpu;
using namespace tapestry::verify;
using CoordMap = std::map<Coord, Coord>;
Q_DECLARE_METATYPE(std::vector<double>)
Q_DECLARE_METATYPE(CoordMap)

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TensorData f32_values(const std::vector<double> &v) {
    TensorData t(DType::f32, ZPoint{static_cast<Coord>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
    return t;
}

PortBinding bind(const std::string &port, const Graph &g, const std::string &tensor) {
    return {port, {TensorSelection{TensorId(tensor), g.find_tensor(TensorId(tensor))->range}}};
}

Tensor make_tensor(const std::string &id, ZPoint shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    return t;
}

// x[rows, k] · w[k, n] + bias[n] → h; relu(h) → y. `row_shards` splits the linear
// along its batch dimension (uneven when it does not divide).
Graph linear_relu(Coord rows, Coord k, Coord n, int row_shards) {
    Graph g;
    g.name = "linear_relu";
    g.put_tensor(make_tensor("x", {rows, k}, TensorRole::input));
    g.put_tensor(make_tensor("w", {k, n}, TensorRole::parameter));
    g.put_tensor(make_tensor("bias", {n}, TensorRole::parameter));
    g.put_tensor(make_tensor("h", {rows, n}, TensorRole::intermediate));
    g.put_tensor(make_tensor("y", {rows, n}, TensorRole::output));
    Operation fc;
    fc.id = OpId("fc");
    fc.name = "fc";
    fc.kind = "linear";
    fc.inputs = {bind("x", g, "x"), bind("w", g, "w"), bind("bias", g, "bias")};
    fc.outputs = {bind("y", g, "h")};
    if (row_shards > 1) {
        const auto pieces = ZRange::of_shape({rows, n}).split(0, row_shards);
        for (size_t i = 0; i < pieces.size(); ++i)
            fc.shards.push_back({ShardId("fc/" + std::to_string(i)), pieces[i], "", {}, {}});
    }
    g.put_op(fc);
    Operation act;
    act.id = OpId("act");
    act.name = "act";
    act.kind = "relu";
    act.inputs = {bind("x", g, "h")};
    act.outputs = {bind("y", g, "y")};
    g.put_op(act);
    return g;
}

// Maps every coordinate and the int-list parameters `shape`, `starts`, `ends`
// through `m` (values not in `m` stay), and drops stated index spaces, signatures
// and shard selections so that the op library derives them again: a smaller model
// with the same structure and the same shards.
Graph scaled(const Graph &g, const std::map<Coord, Coord> &m) {
    if (m.empty()) return g;
    auto f = [&](Coord c) {
        auto it = m.find(c);
        return it == m.end() ? c : it->second;
    };
    auto fp = [&](const ZPoint &p) {
        std::vector<Coord> c = p.to_vector();
        for (Coord &x : c) x = f(x);
        return ZPoint(c);
    };
    auto fr = [&](const ZRange &r) { return ZRange(fp(r.start()), fp(r.end())); };
    auto fports = [&](std::vector<PortBinding> ports) {
        for (PortBinding &p : ports)
            for (TensorSelection &s : p.selections) s.range = fr(s.range);
        return ports;
    };
    Graph out;
    out.name = g.name;
    out.description = g.description;
    for (const TensorPtr &t : g.tensors()) {
        Tensor c = *t;
        c.range = fr(t->range);
        c.value.reset();
        c.data.reset();
        out.put_tensor(std::move(c));
    }
    for (const OpPtr &op : g.operations()) {
        Operation c = *op;
        c.index_space.reset();
        c.signature.reset();
        c.inputs = fports(op->inputs);
        c.outputs = fports(op->outputs);
        for (const char *name : {"shape", "starts", "ends"})
            if (const ParamValue *v = op->params.find(name);
                v && std::holds_alternative<std::vector<std::int64_t>>(*v)) {
                std::vector<std::int64_t> list = std::get<std::vector<std::int64_t>>(*v);
                for (std::int64_t &x : list) x = f(x);
                c.params.set(name, list);
            }
        for (Shard &s : c.shards) {
            s.index = fr(s.index);
            s.inputs.clear();
            s.outputs.clear();
        }
        out.put_op(std::move(c));
    }
    return out;
}

std::string comparisons_text(const VerifyReport &r) {
    std::string s;
    for (const OutputComparison &c : r.comparisons)
        s += c.tensor + " vs " + c.against + ": max abs " + std::to_string(c.max_abs_error) + ", max rel " +
             std::to_string(c.max_rel_error) + ", worst " + std::to_string(c.worst_index) +
             (c.pass ? " pass" : " FAIL") + "\n";
    return s;
}

}  // namespace

class TestVerify : public QObject {
    Q_OBJECT

private slots:
    // --- the comparison machinery -------------------------------------------
    void compare_values_data();
    void compare_values();
    void compare_values_tensor_overload();

    // --- verify on small graphs ---------------------------------------------
    void verify_sharded_graph_passes_data();
    void verify_sharded_graph_passes();
    void verify_unsharded_graph_compares_with_oracle_only();
    void verify_reports_the_overflowing_element();
    void verify_with_zero_tolerance_fails_on_rounding();
    void verify_measures_atol_in_units_of_the_output_scale();

    // --- errors ---------------------------------------------------------------
    void verify_refuses_a_missing_input();
    void verify_refuses_a_graph_without_outputs();
    void verify_refuses_an_input_of_the_wrong_shape();

    // --- every example project ---------------------------------------------
    void example_projects_are_equivalent_data();
    void example_projects_are_equivalent();

    // --- the command line ----------------------------------------------------
    void cli_run_reads_inputs_and_writes_outputs();
    void cli_run_refuses_a_missing_input_file();
    void cli_verify_exit_codes_data();
    void cli_verify_exit_codes();
    void cli_verify_bf16_example_at_bf16_tolerance();
    void cli_import_exit_codes_data();
    void cli_import_exit_codes();
};

void TestVerify::compare_values_data() {
    QTest::addColumn<std::vector<double>>("actual");
    QTest::addColumn<std::vector<double>>("expected");
    QTest::addColumn<double>("atol");
    QTest::addColumn<double>("rtol");
    QTest::addColumn<bool>("pass");
    QTest::addColumn<double>("max_abs");
    QTest::addColumn<double>("max_rel");
    QTest::addColumn<qint64>("worst");

    QTest::newRow("identical") << std::vector<double>{1, -2, 3} << std::vector<double>{1, -2, 3} << 0.0 << 0.0 << true
                               << 0.0 << 0.0 << qint64(0);
    // 0.5 off at index 2; every element fails at atol 0.1 only there.
    QTest::newRow("one element off") << std::vector<double>{1, 2, 3.5, 4} << std::vector<double>{1, 2, 3, 4} << 0.1
                                     << 0.0 << false << 0.5 << 0.5 / 3 << qint64(2);
    // Two failures: the larger error is the worst.
    QTest::newRow("worst of two failures") << std::vector<double>{1.25, 2, 3, 5} << std::vector<double>{1, 2, 3, 4}
                                           << 0.1 << 0.0 << false << 1.0 << 0.25 << qint64(3);
    // rtol admits 0.5 around 100 but not 0.5 around 1.
    QTest::newRow("relative tolerance passes") << std::vector<double>{100.5, 1} << std::vector<double>{100, 1} << 0.0
                                               << 0.01 << true << 0.5 << 0.005 << qint64(0);
    QTest::newRow("relative tolerance fails") << std::vector<double>{100, 1.5} << std::vector<double>{100, 1} << 0.0
                                              << 0.01 << false << 0.5 << 0.5 << qint64(1);
    // All pass: the worst is the element closest to its tolerance (index 1: 0.09 of 0.1).
    QTest::newRow("closest to tolerance") << std::vector<double>{1.05, 2.09, 3} << std::vector<double>{1, 2, 3} << 0.1
                                          << 0.0 << true << 0.09 << 0.05 << qint64(1);
    QTest::newRow("nan equals nan") << std::vector<double>{kNaN, 1} << std::vector<double>{kNaN, 1} << 0.0 << 0.0
                                    << true << 0.0 << 0.0 << qint64(0);
    QTest::newRow("nan against a number") << std::vector<double>{1, kNaN} << std::vector<double>{1, 2} << 1.0 << 1.0
                                          << false << kInf << kInf << qint64(1);
    QTest::newRow("number against nan") << std::vector<double>{0, 1} << std::vector<double>{kNaN, 1} << 1.0 << 1.0
                                        << false << kInf << kInf << qint64(0);
    QTest::newRow("equal infinities") << std::vector<double>{kInf, -kInf} << std::vector<double>{kInf, -kInf} << 0.0
                                      << 0.0 << true << 0.0 << 0.0 << qint64(0);
    QTest::newRow("overflow against a finite value") << std::vector<double>{1, kInf} << std::vector<double>{1, 1e39}
                                                     << 1e-4 << 1e-3 << false << kInf << kInf << qint64(1);
    // References below atol count their error in units of atol; with atol 0 an
    // exact zero reference gives a large but finite relative error.
    QTest::newRow("zero reference") << std::vector<double>{1e-6} << std::vector<double>{0} << 1e-5 << 0.0 << true
                                    << 1e-6 << 0.1 << qint64(0);
    QTest::newRow("zero reference, atol 0") << std::vector<double>{1e-6} << std::vector<double>{0} << 0.0 << 1.0
                                            << false << 1e-6 << 1e-6 / 1e-30 << qint64(0);
    QTest::newRow("tiny reference") << std::vector<double>{0, 5} << std::vector<double>{1e-20, 5} << 1e-4 << 1e-3
                                    << true << 1e-20 << 1e-16 << qint64(0);
}

void TestVerify::compare_values() {
    QFETCH(std::vector<double>, actual);
    QFETCH(std::vector<double>, expected);
    QFETCH(double, atol);
    QFETCH(double, rtol);
    QFETCH(bool, pass);
    QFETCH(double, max_abs);
    QFETCH(double, max_rel);
    QFETCH(qint64, worst);
    // Expected values are given exactly; actual ones pass through f32.
    const TensorData a = f32_values(actual);
    std::vector<double> exact_actual(actual.size());
    for (size_t i = 0; i < actual.size(); ++i) exact_actual[i] = a.get(static_cast<std::int64_t>(i));
    const OutputComparison c = verify::compare_values(a, expected, atol, rtol);
    QCOMPARE(c.pass, pass);
    QCOMPARE(c.worst_index, worst);
    if (std::isinf(max_abs)) {
        QVERIFY(std::isinf(c.max_abs_error));
    } else {
        QVERIFY2(std::fabs(c.max_abs_error - max_abs) <= 1e-6 * std::max(1.0, max_abs),
                 qPrintable(QString::number(c.max_abs_error)));
    }
    if (std::isinf(max_rel)) {
        QVERIFY(std::isinf(c.max_rel_error));
    } else {
        QVERIFY2(std::fabs(c.max_rel_error - max_rel) <= 1e-5 * std::max(1.0, max_rel),
                 qPrintable(QString::number(c.max_rel_error)));
    }
    QVERIFY(c.tensor.empty());
    QVERIFY(c.against.empty());
}

void TestVerify::compare_values_tensor_overload() {
    TensorData a(DType::f32, ZPoint{2, 3});
    TensorData b(DType::f32, ZPoint{2, 3});
    for (std::int64_t i = 0; i < 6; ++i) {
        a.set(i, static_cast<double>(i));
        b.set(i, static_cast<double>(i));
    }
    a.set(4, 4.25);  // element [1, 1]
    OutputComparison c = verify::compare_values(a, b, 0.1, 0.0);
    QVERIFY(!c.pass);
    QCOMPARE(c.worst_index, std::int64_t{4});
    QCOMPARE(c.max_abs_error, 0.25);
    c = verify::compare_values(a, b, 0.3, 0.0);
    QVERIFY(c.pass);
}

void TestVerify::verify_sharded_graph_passes_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("shards");
    QTest::newRow("even 2-way") << 8 << 2;
    QTest::newRow("uneven 3-way") << 7 << 3;
    QTest::newRow("one row per shard") << 4 << 4;
}

void TestVerify::verify_sharded_graph_passes() {
    QFETCH(int, rows);
    QFETCH(int, shards);
    const Graph g = linear_relu(rows, 16, 5, shards);
    QVERIFY(!has_errors(validate(g, OpLibrary::standard())));
    const auto inputs = make_random_inputs(g, 7);
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), inputs);
    QVERIFY2(report, report ? "" : report.error().c_str());
    QVERIFY(report->sharded);
    QCOMPARE(report->comparisons.size(), size_t{2});
    QCOMPARE(report->comparisons[0].tensor, std::string("y"));
    QCOMPARE(report->comparisons[0].against, std::string("oracle"));
    QCOMPARE(report->comparisons[1].against, std::string("unsharded"));
    QVERIFY2(report->pass(), comparisons_text(*report).c_str());
    // A real computation in f32 against a double oracle is close, not bit-exact
    // unless every value is representable; either way the error is tiny.
    QVERIFY(report->comparisons[0].max_abs_error < 1e-4);
    QVERIFY(report->comparisons[0].worst_index >= 0);
    QVERIFY(report->comparisons[0].worst_index < rows * 5);
}

void TestVerify::verify_unsharded_graph_compares_with_oracle_only() {
    const Graph g = linear_relu(6, 8, 3, 1);
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), make_random_inputs(g, 1));
    QVERIFY2(report, report ? "" : report.error().c_str());
    QVERIFY(!report->sharded);
    QCOMPARE(report->comparisons.size(), size_t{1});
    QCOMPARE(report->comparisons[0].against, std::string("oracle"));
    QVERIFY2(report->pass(), comparisons_text(*report).c_str());
}

// An input so large that one output element overflows f32 (the executor's
// infinity) while the double oracle stays finite: verify must fail on exactly
// that element, and the sharded and unsharded runs still agree with each other.
void TestVerify::verify_reports_the_overflowing_element() {
    const Graph g = linear_relu(4, 3, 5, 2);
    std::map<TensorId, TensorData> inputs;
    TensorData x(DType::f32, ZPoint{4, 3});
    TensorData w(DType::f32, ZPoint{3, 5});
    TensorData bias(DType::f32, ZPoint{5});
    for (std::int64_t i = 0; i < 12; ++i) x.set(i, 0.25);
    for (std::int64_t i = 0; i < 15; ++i) w.set(i, 0.5);
    x.set(3 * 3 + 0, 1e38);  // x[3, 0]
    w.set(0 * 5 + 2, 10.0);  // w[0, 2]: y[3, 2] = 1e39 + … overflows f32
    inputs[TensorId("x")] = x;
    inputs[TensorId("w")] = w;
    inputs[TensorId("bias")] = bias;
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), inputs);
    QVERIFY2(report, report ? "" : report.error().c_str());
    QVERIFY(!report->pass());
    const OutputComparison &vs_oracle = report->comparisons[0];
    QCOMPARE(vs_oracle.against, std::string("oracle"));
    QVERIFY(!vs_oracle.pass);
    QCOMPARE(vs_oracle.worst_index, std::int64_t{3 * 5 + 2});
    QVERIFY(std::isinf(vs_oracle.max_abs_error));
    const OutputComparison &vs_unsharded = report->comparisons[1];
    QCOMPARE(vs_unsharded.against, std::string("unsharded"));
    QVERIFY2(vs_unsharded.pass, comparisons_text(*report).c_str());
}

// f32 sums of 64 products are not the double ones: with no tolerance at all the
// comparison against the oracle must fail, and name an element with that error.
void TestVerify::verify_with_zero_tolerance_fails_on_rounding() {
    const Graph g = linear_relu(8, 64, 8, 2);
    VerifyOptions options;
    options.atol = 0;
    options.rtol = 0;
    const auto inputs = make_random_inputs(g, 3);
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), inputs, options);
    QVERIFY2(report, report ? "" : report.error().c_str());
    const OutputComparison &c = report->comparisons[0];
    QVERIFY(!c.pass);
    QVERIFY(!report->pass());
    QVERIFY(c.max_abs_error > 0);
    QVERIFY(c.max_abs_error < 1e-4);
    QVERIFY(c.worst_index >= 0 && c.worst_index < 64);

    // The worst element's error is the maximum: recompute it from the oracle and a
    // run of our own.
    std::map<TensorId, RefArray> ref_inputs;
    for (const auto &[id, data] : inputs) {
        RefArray a(g.find_tensor(id)->range);
        for (std::int64_t i = 0; i < data.element_count(); ++i) a.data[static_cast<size_t>(i)] = data.get(i);
        ref_inputs.emplace(id, std::move(a));
    }
    EvaluationOptions whole;
    whole.run_shards = false;
    auto oracle = evaluate_reference(g, ref_inputs, OpLibrary::standard(), whole);
    QVERIFY(oracle);
    CpuOptions cpu_options;
    auto program = Program::compile(g, OpLibrary::standard(), cpu_options);
    QVERIFY2(program, program ? "" : program.error().c_str());
    auto run = (*program)->run(inputs);
    QVERIFY2(run, run ? "" : run.error().c_str());
    const TensorData &y = run->outputs.at(TensorId("y"));
    const double at_worst =
        std::fabs(y.get(c.worst_index) - oracle->at(TensorId("y")).data[static_cast<size_t>(c.worst_index)]);
    QCOMPARE(at_worst, c.max_abs_error);
}

// y = (x + c) − d in f32: y[0] = (1e8 + 1) − 1e8 cancels to 0 (1e8 + 1 rounds to
// 1e8), where the oracle says 1; y[1] = 1.5e8. An error of 1 in an output whose
// values reach 1.5e8 is rounding, not a difference: with scale_atol (the default)
// atol counts in units of 1.5e8 and the comparison passes; with absolute atol it
// fails at element 0.
void TestVerify::verify_measures_atol_in_units_of_the_output_scale() {
    Graph g;
    g.name = "cancellation";
    for (const char *id : {"x", "c", "d"}) g.put_tensor(make_tensor(id, {2}, TensorRole::input));
    g.put_tensor(make_tensor("t", {2}, TensorRole::intermediate));
    g.put_tensor(make_tensor("y", {2}, TensorRole::output));
    Operation add;
    add.id = OpId("add");
    add.kind = "add";
    add.inputs = {bind("a", g, "x"), bind("b", g, "c")};
    add.outputs = {bind("y", g, "t")};
    g.put_op(add);
    Operation sub;
    sub.id = OpId("sub");
    sub.kind = "sub";
    sub.inputs = {bind("a", g, "t"), bind("b", g, "d")};
    sub.outputs = {bind("y", g, "y")};
    g.put_op(sub);
    std::map<TensorId, TensorData> inputs{{TensorId("x"), f32_values({1e8, 1e8})},
                                          {TensorId("c"), f32_values({1, 5e7})},
                                          {TensorId("d"), f32_values({1e8, 0})}};
    auto report = verify::check_equivalence(g, OpLibrary::standard(), inputs);
    QVERIFY2(report, report ? "" : report.error().c_str());
    QVERIFY2(report->pass(), comparisons_text(*report).c_str());
    QCOMPARE(report->comparisons[0].max_abs_error, 1.0);
    QCOMPARE(report->comparisons[0].atol, 1e-4 * 1.5e8);

    VerifyOptions absolute;
    absolute.scale_atol = false;
    report = verify::check_equivalence(g, OpLibrary::standard(), inputs, absolute);
    QVERIFY2(report, report ? "" : report.error().c_str());
    QVERIFY(!report->pass());
    QCOMPARE(report->comparisons[0].worst_index, std::int64_t{0});
    QCOMPARE(report->comparisons[0].atol, 1e-4);
}

void TestVerify::verify_refuses_a_missing_input() {
    const Graph g = linear_relu(4, 3, 2, 2);
    auto inputs = make_random_inputs(g, 1);
    inputs.erase(TensorId("w"));
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), inputs);
    QVERIFY(!report);
    QVERIFY2(report.error().find("'w'") != std::string::npos, report.error().c_str());
}

void TestVerify::verify_refuses_a_graph_without_outputs() {
    Graph g = linear_relu(4, 3, 2, 1);
    Tensor y = *g.find_tensor(TensorId("y"));
    y.role = TensorRole::intermediate;
    g.put_tensor(y);
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), make_random_inputs(g, 1));
    QVERIFY(!report);
    QCOMPARE(report.error(), std::string("the graph has no tensor with role output to compare"));
}

void TestVerify::verify_refuses_an_input_of_the_wrong_shape() {
    const Graph g = linear_relu(4, 3, 2, 1);
    auto inputs = make_random_inputs(g, 1);
    inputs[TensorId("x")] = TensorData(DType::f32, ZPoint{3, 4});
    const auto report = verify::check_equivalence(g, OpLibrary::standard(), inputs);
    QVERIFY(!report);
    QVERIFY2(report.error().find("'x'") != std::string::npos, report.error().c_str());
}

void TestVerify::example_projects_are_equivalent_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<CoordMap>("scale");
    QTest::addColumn<bool>("sharded");
    // Batch 2, a quarter of the channels and of the image side; 32 features flattened.
    QTest::newRow("convnet /4") << "projects/convnet.tapestry.json" << CoordMap{{32, 8}, {16, 4}, {8, 2}, {2048, 32}}
                                << false;
    QTest::newRow("mlp /32") << "projects/mlp.tapestry.json"
                             << CoordMap{{512, 16}, {1024, 24}, {4096, 40}, {128, 4}, {256, 8}, {384, 12}} << true;
    QTest::newRow("attention /8") << "projects/attention.tapestry.json" << CoordMap{{4, 2}, {128, 16}, {512, 64}}
                                  << false;
    // 12 heads of 4 features; q, k, v sliced out of the fused projection.
    QTest::newRow("gpt2_block /16") << "projects/gpt2_block.tapestry.json"
                                    << CoordMap{{8, 2}, {256, 12}, {768, 48}, {1536, 96}, {2304, 144}, {3072, 192}}
                                    << false;
}

void TestVerify::example_projects_are_equivalent() {
    QFETCH(QString, file);
    QFETCH(CoordMap, scale);
    QFETCH(bool, sharded);
    const QByteArray source = qgetenv("TAPESTRY_SOURCE_DIR");
    if (source.isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    const std::filesystem::path path = std::filesystem::path(source.toStdString()) / file.toStdString();
    LoadResult loaded = load_project(path);
    QVERIFY2(loaded.ok(), path.c_str());
    QVERIFY(load_tensor_values(loaded.graph, path.parent_path()).empty());
    const Graph g = scaled(loaded.graph, scale);
    const auto issues = validate(g, OpLibrary::standard());
    QVERIFY2(!has_errors(issues), issues.empty() ? "" : format_issue(issues.front()).c_str());
    size_t outputs = 0;
    for (const TensorPtr &t : g.tensors()) outputs += t->role == TensorRole::output ? 1 : 0;

    const auto report = verify::check_equivalence(g, OpLibrary::standard(), make_random_inputs(g, 2024));
    QVERIFY2(report, report ? "" : report.error().c_str());
    QCOMPARE(report->sharded, sharded);
    QCOMPARE(report->comparisons.size(), outputs * (sharded ? 2 : 1));
    QVERIFY2(report->pass(), comparisons_text(*report).c_str());
}

namespace {

// x[10, 64] → linear (three uneven shards) → gelu → y[10, 32].
const char *kTinyProject = R"({
  "format": "tapestry-project",
  "version": 1,
  "name": "tiny mlp",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [10, 64], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [64, 32], "role": "parameter"},
    {"id": "bias", "dtype": "f32", "shape": [32], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [10, 32], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [10, 32], "role": "output"}
  ],
  "operations": [
    {"id": "fc", "kind": "linear", "inputs": {"x": "x", "w": "w", "bias": "bias"}, "outputs": {"y": "h"},
     "shards": [{"id": "fc/0", "index": {"start": [0, 0], "end": [4, 32]}},
                {"id": "fc/1", "index": {"start": [4, 0], "end": [7, 32]}},
                {"id": "fc/2", "index": {"start": [7, 0], "end": [10, 32]}}]},
    {"id": "act", "kind": "gelu", "inputs": {"x": "h"}, "outputs": {"y": "y"}}
  ]
}
)";

struct CliResult {
    int code = -1;
    QByteArray out, err;
};

CliResult run_cli(const QStringList &args) {
    QProcess p;
    p.start(QString::fromLocal8Bit(qgetenv("TAPESTRY_CLI")), args);
    CliResult r;
    if (!p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QString write_tiny(const QTemporaryDir &dir) {
    const QString path = dir.filePath("tiny.tapestry.json");
    std::ofstream(path.toStdString()) << kTinyProject;
    return path;
}

}  // namespace

void TestVerify::cli_run_reads_inputs_and_writes_outputs() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_CLI")) QSKIP("TAPESTRY_CLI is not set (CTest sets it)");
    QTemporaryDir dir;
    const QString project = write_tiny(dir);
    // x = 0: every row of y is gelu(bias), whatever the random weights.
    QVERIFY(QDir(dir.path()).mkpath("in"));
    QCOMPARE(write_npy(TensorData(DType::f32, ZPoint{10, 64}), (dir.filePath("in") + "/x.npy").toStdString()),
             std::string());
    const CliResult r = run_cli(
        {"run", project, "--inputs", dir.filePath("in"), "--outputs", dir.filePath("out"), "--seed", "5", "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject j = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(j["ok"].toBool(), true);
    QCOMPARE(j["sharded"].toBool(), true);
    const QJsonArray outputs = j["outputs"].toArray();
    QCOMPARE(outputs.size(), 1);
    QCOMPARE(outputs[0].toObject()["tensor"].toString(), QString("y"));
    QCOMPARE(outputs[0].toObject()["shape"].toArray(), (QJsonArray{10, 32}));
    QCOMPARE(j["steps"].toArray().size(), 4);  // three shards and the gelu

    const auto y = read_npy((dir.filePath("out") + "/y.npy").toStdString());
    QVERIFY2(y, y ? "" : y.error().c_str());
    QCOMPARE(y->shape, (ZPoint{10, 32}));
    for (std::int64_t r_ = 1; r_ < 10; ++r_)
        for (std::int64_t c = 0; c < 32; ++c) QCOMPARE(y->get(r_ * 32 + c), y->get(c));
    // The file holds what the summary says.
    double lo = y->get(0), hi = y->get(0);
    for (std::int64_t i = 0; i < y->element_count(); ++i) {
        lo = std::min(lo, y->get(i));
        hi = std::max(hi, y->get(i));
    }
    QCOMPARE(outputs[0].toObject()["min"].toDouble(), lo);
    QCOMPARE(outputs[0].toObject()["max"].toDouble(), hi);

    // Text output names the output and the wall time.
    const CliResult text = run_cli({"run", project});
    QCOMPARE(text.code, 0);
    QVERIFY(text.out.contains("3 shards, 2 threads, inputs random (seed 0)"));
    QVERIFY(text.out.contains("[10, 32]"));
    QVERIFY(text.out.contains("wall"));
}

void TestVerify::cli_run_refuses_a_missing_input_file() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_CLI")) QSKIP("TAPESTRY_CLI is not set (CTest sets it)");
    QTemporaryDir dir;
    const QString project = write_tiny(dir);
    QVERIFY(QDir(dir.path()).mkpath("empty"));
    const CliResult r = run_cli({"run", project, "--inputs", dir.filePath("empty")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("x.npy"), r.err.constData());
    QVERIFY(r.out.isEmpty());
}

void TestVerify::cli_verify_exit_codes_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("expect");  // in stdout (or stderr for usage errors)
    QTest::newRow("equivalent") << QStringList{} << 0 << "equivalent  (2 comparisons, 0 failed";
    // With no tolerance the oracle comparison fails (f32 rounding). Whether the
    // sharded and unsharded runs agree bit for bit depends on the kernels oneDNN
    // picks for this ISA, so the count of failures is not part of the row.
    QTest::newRow("no tolerance") << QStringList{"--atol", "0", "--rtol", "0", "--absolute-atol"} << 1
                                  << "NOT equivalent  (2 comparisons, ";
    QTest::newRow("bad threads") << QStringList{"--threads", "0"} << 2 << "--threads";
    QTest::newRow("negative atol") << QStringList{"--atol", "-1"} << 2 << "--atol";
}

void TestVerify::cli_verify_exit_codes() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, expect);
    if (qEnvironmentVariableIsEmpty("TAPESTRY_CLI")) QSKIP("TAPESTRY_CLI is not set (CTest sets it)");
    QTemporaryDir dir;
    const CliResult r = run_cli(QStringList{"verify", write_tiny(dir)} + args);
    QCOMPARE(r.code, code);
    QVERIFY2((code == 2 ? r.err : r.out).contains(expect.toUtf8()), (r.out + r.err).constData());
    if (code == 2) return;
    const CliResult j = run_cli(QStringList{"verify", write_tiny(dir), "--json"} + args);
    QCOMPARE(j.code, code);
    const QJsonObject o = QJsonDocument::fromJson(j.out).object();
    QCOMPARE(o["pass"].toBool(), code == 0);
    QCOMPARE(o["sharded"].toBool(), true);
    const QJsonArray comparisons = o["comparisons"].toArray();
    QCOMPARE(comparisons.size(), 2);
    QCOMPARE(comparisons[0].toObject()["against"].toString(), QString("oracle"));
    QCOMPARE(comparisons[1].toObject()["against"].toString(), QString("unsharded"));
    QCOMPARE(comparisons[0].toObject()["worst_element"].toArray().size(), 2);
    QCOMPARE(comparisons[0].toObject()["pass"].toBool(), code == 0);
}

// The bf16 example (projects/mlp_bf16.tapestry.json) runs on every CPU — on one
// without native bf16 its steps compute in f32 and round back, and the run says
// so — and verifies against the oracle at bf16's tolerance (2 ulps, 2^-6), which
// verify applies to a bf16 output by itself. At f32's tolerance, asked for
// explicitly, it does not: the floor is what makes it pass, not a loose default.
void TestVerify::cli_verify_bf16_example_at_bf16_tolerance() {
    if (qEnvironmentVariableIsEmpty("TAPESTRY_CLI")) QSKIP("TAPESTRY_CLI is not set (CTest sets it)");
    const QString project = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects/mlp_bf16.tapestry.json";
    qInfo("oneDNN ISA: %s", cpu::cpu_isa().name.c_str());
    const CliResult j = run_cli({"verify", project, "--json"});
    QCOMPARE(j.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(j.out).object();
    QVERIFY2(o["pass"].toBool(), j.out.constData());
    QCOMPARE(o["isa"].toString(), QString::fromStdString(cpu::cpu_isa().name));
    QCOMPARE(o["dtype_floor"].toBool(), true);
    const QJsonArray comparisons = o["comparisons"].toArray();
    QCOMPARE(comparisons.size(), 2);
    for (const QJsonValue &c : comparisons) QCOMPARE(c.toObject()["rtol_applied"].toDouble(), 0.015625);
    // Without native bf16 the matmuls cannot run in bf16: the notice names them.
    const QJsonArray notices = o["notices"].toArray();
    if (!cpu::cpu_isa().native_bf16) {
        QVERIFY(!notices.isEmpty());
        QVERIFY2(notices[0].toString().contains("'fc2'") &&
                     notices[0].toString().contains(QString::fromStdString("on " + cpu::cpu_isa().name)),
                 qPrintable(notices[0].toString()));
    }
    const CliResult strict = run_cli({"verify", project, "--atol", "1e-4", "--rtol", "1e-3"});
    QCOMPARE(strict.code, 1);
    QVERIFY2(strict.out.contains("NOT equivalent"), strict.out.constData());
}

// tapestry import: 0 with a summary line (and the conversion, for an older
// opset), 1 with one message naming the file for a bad model, 2 for usage.
void TestVerify::cli_import_exit_codes_data() {
    QTest::addColumn<QStringList>("args");  // model (under tests/data/onnx, or absolute) and options
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("expect");  // in stdout for 0, stderr otherwise
    QTest::newRow("truncated") << QStringList{"truncated.onnx"} << 1
                               << "tapestry: truncated.onnx: not an ONNX model, or a truncated one";
    QTest::newRow("not onnx") << QStringList{"not_onnx.onnx"} << 1 << "tapestry: not_onnx.onnx: not an ONNX model";
    QTest::newRow("unsupported ops") << QStringList{"unsupported_ops.onnx"} << 1
                                     << "2 operators are not supported: Hardmax (hm), LpNormalization (node #2)";
    QTest::newRow("dynamic dim") << QStringList{"dynamic_dim.onnx"} << 1 << "give one with --dim batch=N";
    QTest::newRow("dynamic dim given") << QStringList{"dynamic_dim.onnx", "--dim", "batch=3"} << 0
                                       << "operations, 1 inputs";
    QTest::newRow("bad dim") << QStringList{"dynamic_dim.onnx", "--dim", "batch"} << 2 << "--dim";
    QTest::newRow("opset 6, converted")
        << QStringList{"/usr/share/libonnx-testdata/data/pytorch-converted/test_ReLU/model.onnx"} << 0
        << "  converted from opset 6 to 13 by ONNX's version converter";
}

void TestVerify::cli_import_exit_codes() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, expect);
    if (qEnvironmentVariableIsEmpty("TAPESTRY_CLI")) QSKIP("TAPESTRY_CLI is not set (CTest sets it)");
    QString model = args.takeFirst();
    if (!QDir::isAbsolutePath(model))
        model = QDir(qEnvironmentVariable("TAPESTRY_SOURCE_DIR")).filePath(QStringLiteral("tests/data/onnx/") + model);
    if (!QFileInfo::exists(model)) QSKIP(qPrintable(model + QStringLiteral(" is not installed")));
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("m.tapestry.json"));
    const CliResult r = run_cli(QStringList{"import", model, "-o", out} + args);
    QCOMPARE(r.code, code);
    QVERIFY2((code == 0 ? r.out : r.err).contains(expect.toUtf8()), (r.out + r.err).constData());
    QCOMPARE(QFileInfo::exists(out), code == 0);  // nothing is written for a refused model
    if (code == 1) QCOMPARE(r.err.count('\n'), 1);  // one message
}

QTEST_GUILESS_MAIN(TestVerify)
#include "test_verify.moc"
