// GUI tests of running in the studio (label gui, offscreen): Run on the example
// projects fills the Outputs dock with every output and statistics equal to a
// direct engine run with the same seed; Verify of a sharded graph shows the table
// and a PASS badge; a run cancelled in the middle (or at once) returns to idle and
// says "cancelled"; a run that fails says why in the issues and the status bar;
// File ▸ Import ONNX asks for a symbolic dimension, opens the model like a
// project, runs it and saves it; refused models are explained. With
// TAPESTRY_SCREENSHOT_DIR set, the run and verify windows are saved there.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyleFactory>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTreeWidget>
#include <atomic>
#include <cmath>
#include <cstring>
#include <set>

#include "app/studio/main_window.h"
#include "edit/editor.h"
#include "io/npy.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/executor.h"
#include "verify/verify.h"
#include "studio_support.h"
#include "views/histogram_widget.h"
#include "views/issues_panel.h"
#include "views/onnx_import_worker.h"
#include "views/outputs_panel.h"
#include "views/project_locator.h"
#include "views/run_panel.h"
#include "views/run_worker.h"
#include "views/studio_resources.h"
#include "views/tensor_stats.h"

using tapestry::studio::MainWindow;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;
using namespace tapestry;
using namespace tapestry::views;

namespace {

constexpr int kRunTimeoutMs = 120000;

// A linear layer in three uneven shards (one along the batch, two along the
// outputs) followed by a relu: small enough for the oracle, sharded enough to
// compare the shard-by-shard run with the whole one.
const char *kShardedProject = R"({
  "format": "tapestry-project", "version": 1, "name": "sharded",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [12, 20], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [20, 10], "role": "parameter"},
    {"id": "b", "dtype": "f32", "shape": [10], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [12, 10], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [12, 10], "role": "output"}
  ],
  "operations": [
    {"id": "fc", "kind": "linear", "inputs": {"x": "x", "w": "w", "bias": "b"}, "outputs": {"y": "h"},
     "shards": [
       {"id": "fc/0", "index": {"start": [0, 0], "end": [5, 10]}},
       {"id": "fc/1", "index": {"start": [5, 0], "end": [12, 4]}},
       {"id": "fc/2", "index": {"start": [5, 4], "end": [12, 10]}}
     ]},
    {"id": "act", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y"}}
  ]
}
)";

// A matmul whose inner dimensions disagree: it opens (with an issue) but cannot run.
const char *kBrokenProject = R"({
  "format": "tapestry-project", "version": 1, "name": "broken",
  "tensors": [
    {"id": "a", "dtype": "f32", "shape": [4, 8], "role": "input"},
    {"id": "b", "dtype": "f32", "shape": [7, 3], "role": "parameter"},
    {"id": "c", "dtype": "f32", "shape": [4, 3], "role": "output"}
  ],
  "operations": [{"id": "mm", "kind": "matmul", "inputs": {"a": "a", "b": "b"}, "outputs": {"y": "c"}}]
}
)";

// A chain of `layers` matmuls [n, k] × [k, k], the first in two shards along
// the batch: the executor runs it in milliseconds, the double-precision oracle in
// seconds (at 1024 × 1024 × 8, 17 GFLOP) — chunk after chunk, so a Cancel stops
// it soon.
QByteArray matmulChainProject(int n, int k, int layers) {
    QStringList tensors{
        QStringLiteral(R"({"id": "x", "dtype": "f32", "shape": [%1, %2], "role": "input"})").arg(n).arg(k)};
    QStringList ops;
    for (int i = 1; i <= layers; ++i) {
        const QString in = i == 1 ? QStringLiteral("x") : QStringLiteral("h%1").arg(i - 1);
        const QString out = i == layers ? QStringLiteral("y") : QStringLiteral("h%1").arg(i);
        tensors
            << QStringLiteral(R"({"id": "w%1", "dtype": "f32", "shape": [%2, %2], "role": "parameter"})").arg(i).arg(k);
        tensors << QStringLiteral(R"({"id": "%1", "dtype": "f32", "shape": [%2, %3], "role": "%4"})")
                       .arg(out)
                       .arg(n)
                       .arg(k)
                       .arg(i == layers ? QStringLiteral("output") : QStringLiteral("intermediate"));
        const QString shards =
            i > 1 ? QString()
                  : QStringLiteral(R"(, "shards": [{"id": "mm1/0", "index": {"start": [0, 0], "end": [%1, %2]}},
                                                  {"id": "mm1/1", "index": {"start": [%1, 0], "end": [%3, %2]}}])")
                        .arg(n / 2)
                        .arg(k)
                        .arg(n);
        ops << QStringLiteral(R"({"id": "mm%1", "kind": "matmul", "inputs": {"a": "%2", "b": "w%1"},
                                  "outputs": {"y": "%3"}%4})")
                   .arg(i)
                   .arg(in, out, shards);
    }
    return QStringLiteral(R"({"format": "tapestry-project", "version": 1, "name": "matmul chain",
                              "tensors": [%1], "operations": [%2]})")
        .arg(tensors.join(QStringLiteral(",\n")), ops.join(QStringLiteral(",\n")))
        .toUtf8();
}

// ---- a tiny protobuf writer, enough for ONNX test models ----------------------

struct Pb {
    std::string s;
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            s += static_cast<char>((v & 0x7f) | 0x80);
            v >>= 7;
        }
        s += static_cast<char>(v);
    }
    void tag(int field, int type) {
        varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(type));
    }
    Pb &u(int field, std::uint64_t v) {
        tag(field, 0);
        varint(v);
        return *this;
    }
    Pb &str(int field, std::string_view v) {
        tag(field, 2);
        varint(v.size());
        s.append(v);
        return *this;
    }
    Pb &msg(int field, const Pb &m) { return str(field, m.s); }
    Pb &floats(int field, const std::vector<float> &v) {
        std::string bytes(v.size() * 4, '\0');
        std::memcpy(bytes.data(), v.data(), bytes.size());
        return str(field, bytes);
    }
};

// ValueInfoProto of a float tensor; a dim < 0 is the symbolic "batch".
Pb valueInfo(const std::string &name, const std::vector<std::int64_t> &dims) {
    Pb shape;
    for (std::int64_t d : dims) {
        Pb dim;
        if (d < 0)
            dim.str(2, "batch");
        else
            dim.u(1, static_cast<std::uint64_t>(d));
        shape.msg(1, dim);
    }
    Pb tensor_type;
    tensor_type.u(1, 1).msg(2, shape);  // elem_type FLOAT
    Pb type;
    type.msg(1, tensor_type);
    Pb info;
    info.str(1, name).msg(2, type);
    return info;
}

Pb initializer(const std::string &name, const std::vector<std::int64_t> &dims, const std::vector<float> &values) {
    Pb t;
    for (std::int64_t d : dims) t.u(1, static_cast<std::uint64_t>(d));
    t.u(2, 1).floats(4, values).str(8, name);
    return t;
}

Pb node(const std::string &op, const std::string &name, const std::vector<std::string> &in, const std::string &out) {
    Pb n;
    for (const std::string &i : in) n.str(1, i);
    n.str(2, out).str(3, name).str(4, op);
    return n;
}

// y = relu(x·W + B) with x [batch, 4], W [4, 3], B [3]; or, with `unsupported`,
// a Hardmax after it (an operator the importer refuses).
std::string onnxModel(bool unsupported) {
    std::vector<float> w(12), bias{0.5f, -0.25f, 0.125f};
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.1f - 0.6f;
    Pb graph;
    graph.msg(1, node("MatMul", "mm", {"x", "W"}, "h"));
    graph.msg(1, node("Add", "add_bias", {"h", "B"}, "z"));
    graph.msg(1, node("Relu", "act", {"z"}, unsupported ? "r" : "y"));
    if (unsupported) graph.msg(1, node("Hardmax", "hm", {"r"}, "y"));
    graph.str(2, "tiny");
    graph.msg(5, initializer("W", {4, 3}, w));
    graph.msg(5, initializer("B", {3}, bias));
    graph.msg(11, valueInfo("x", {-1, 4}));
    graph.msg(12, valueInfo("y", {-1, 3}));
    Pb opset;
    opset.str(1, "").u(2, 13);
    Pb model;
    model.u(1, 8).str(2, "test_studio_run").msg(7, graph).msg(8, opset);
    return model.s;
}

bool writeFile(const QString &path, const std::string &bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) &&
           f.write(bytes.data(), static_cast<qint64>(bytes.size())) == static_cast<qint64>(bytes.size());
}

bool waitRun(QSignalSpy &spy) {
    return spy.count() > 0 || spy.wait(kRunTimeoutMs);
}

bool close(double a, double b) {
    return std::abs(a - b) <= 1e-5 + 1e-4 * std::abs(b);
}

}  // namespace

class TestStudioRun : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void init();

    void summarizeTensor_data();
    void summarizeTensor();
    void imagePreview();
    void onnxDimParams();

    void runShowsOutputs_data();
    void runShowsOutputs();
    void verifyShowsPass();
    void verificationCalledTheOutputByItsId_regression();
    void verificationPassStaysAfterAnEdit_regression();
    void bf16ProjectRunsAndSaysWhichStepsFellBack();
    void bf16MatmulIsOptIn();
    void timingsListBatchTiles();
    void cancelInTheMiddle();
    void cancelAtOnce();
    void cancelDoesNotCancelVerify_regression();
    void cancelDuringTheOracleNeverShowsAVerdict();
    void cancelStopsTheOracle();
    void runErrorIsReported();
    void graphLargerThanMemoryIsRefused();
    void valuesOutsideTheFolderAreReadOnlyWithConsent();
    void importOnnxAsksDimensionRunsAndSaves();
    void importOlderOpsetSaysConverted();
    void importRealArchitectureLaysOutAndRuns();
    void importRefusedModels_data();
    void importRefusedModels();

private:
    QString writeProject(const char *name, const char *text) {
        const QString path = tmp_.filePath(QString::fromLatin1(name));
        return writeFile(path, text) ? path : QString();
    }
    QTemporaryDir tmp_;
};

void TestStudioRun::initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("TapestryTests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_studio_run"));
    QSettings().clear();
    QVERIFY(tmp_.isValid());
    QVERIFY2(!sourceDir().isEmpty(), "TAPESTRY_SOURCE_DIR is not set and no projects/ folder was found");
    lookLikeTheStudioForScreenshots();
}

void TestStudioRun::cleanupTestCase() {
    QSettings().clear();
}

void TestStudioRun::init() {
    QSettings().clear();
    QSettings().setValue(QStringLiteral("window/geometry"), QByteArray());
}

// ---- summaries -----------------------------------------------------------------

void TestStudioRun::summarizeTensor_data() {
    QTest::addColumn<QList<double>>("values");
    QTest::addColumn<double>("min");
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("mean");
    QTest::addColumn<double>("stddev");
    QTest::addColumn<int>("nans");
    QTest::addColumn<int>("infs");
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    QTest::newRow("plain") << QList<double>{1, 2, 3, 4} << 1.0 << 4.0 << 2.5 << std::sqrt(1.25) << 0 << 0;
    QTest::newRow("constant") << QList<double>{7, 7, 7} << 7.0 << 7.0 << 7.0 << 0.0 << 0 << 0;
    QTest::newRow("nan and inf are counted, not averaged")
        << QList<double>{nan, -2, inf, 2, -inf} << -2.0 << 2.0 << 0.0 << 2.0 << 1 << 2;
    QTest::newRow("nothing finite") << QList<double>{nan, inf} << 0.0 << 0.0 << 0.0 << 0.0 << 1 << 1;
}

void TestStudioRun::summarizeTensor() {
    QFETCH(QList<double>, values);
    QFETCH(double, min);
    QFETCH(double, max);
    QFETCH(double, mean);
    QFETCH(double, stddev);
    QFETCH(int, nans);
    QFETCH(int, infs);
    TensorData t(DType::f32, ZPoint({static_cast<Coord>(values.size())}));
    for (qsizetype i = 0; i < values.size(); ++i) t.set(i, values[i]);
    const TensorSummary s = summarize_tensor(t, 8);
    QCOMPARE(s.count, values.size());
    QCOMPARE(s.nan_count, nans);
    QCOMPARE(s.inf_count, infs);
    QCOMPARE(s.finite_count, values.size() - nans - infs);
    QVERIFY(close(s.min, min));
    QVERIFY(close(s.max, max));
    QVERIFY(close(s.mean, mean));
    QVERIFY2(close(s.stddev, stddev), qPrintable(QString::number(s.stddev)));
    std::int64_t binned = 0;
    for (std::int64_t c : s.histogram) binned += c;
    QCOMPARE(binned, s.finite_count);
    QCOMPARE(s.histogram.empty(), s.finite_count == 0);
    QVERIFY(s.preview.isNull());  // rank 1 is not image-shaped
}

void TestStudioRun::imagePreview() {
    QVERIFY(is_image_shaped({8, 3, 32, 32}));
    QVERIFY(is_image_shaped({1, 1, 4, 4}));
    QVERIFY(is_image_shaped({16, 16}));
    QVERIFY(!is_image_shaped({8, 16, 32, 32}));  // 16 channels
    QVERIFY(!is_image_shaped({4, 128, 512}));
    QVERIFY(!is_image_shaped({10}));

    // Two RGB items of 2×3; only the first is drawn, scaled so its range is 0..255.
    TensorData t(DType::f32, ZPoint({2, 3, 2, 3}));
    for (std::int64_t i = 0; i < t.element_count(); ++i) t.set(i, i < 18 ? static_cast<double>(i) : 1000.0);
    const TensorSummary s = summarize_tensor(t);
    QCOMPARE(s.preview.size(), QSize(3, 2));
    QCOMPARE(QColor(s.preview.pixel(0, 0)), QColor(0, qRound(6 / 17.0 * 255), qRound(12 / 17.0 * 255)));
    QCOMPARE(QColor(s.preview.pixel(2, 1)), QColor(qRound(5 / 17.0 * 255), qRound(11 / 17.0 * 255), 255));
    QVERIFY2(s.preview_note.contains(QStringLiteral("item 0 of 2")), qPrintable(s.preview_note));

    TensorData grey(DType::f32, ZPoint({2, 2}));
    grey.set(0, -1);
    grey.set(1, std::nan(""));
    grey.set(2, 0);
    grey.set(3, 1);
    const TensorSummary g = summarize_tensor(grey);
    QCOMPARE(QColor(g.preview.pixel(0, 0)), QColor(0, 0, 0));
    QCOMPARE(QColor(g.preview.pixel(1, 0)), QColor(255, 0, 255));  // NaN stands out
    QCOMPARE(QColor(g.preview.pixel(1, 1)), QColor(255, 255, 255));
}

void TestStudioRun::onnxDimParams() {
    const auto names = onnx_input_dim_params(onnxModel(false));
    QVERIFY(names.has_value());
    QCOMPARE(*names, QStringList{QStringLiteral("batch")});
    QVERIFY(!onnx_input_dim_params("this is not a protobuf at all").has_value());
    const std::string model = onnxModel(false);
    QVERIFY(!onnx_input_dim_params(std::string_view(model).substr(0, model.size() / 2)).has_value());
}

// ---- running -------------------------------------------------------------------

void TestStudioRun::runShowsOutputs_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<quint64>("seed");
    QTest::newRow("mlp") << QStringLiteral("mlp") << quint64(7);
    QTest::newRow("convnet") << QStringLiteral("convnet") << quint64(11);
}

void TestStudioRun::runShowsOutputs() {
    QFETCH(QString, project);
    QFETCH(quint64, seed);
    MainWindow w;
    w.resize(1500, 950);
    w.show();
    QVERIFY(openAndWait(w, examplePath(project)));
    QVERIFY(w.runs()->runAction()->isEnabled());
    QVERIFY(!w.runs()->cancelAction()->isEnabled());
    w.runs()->runPanel()->setRandomInputs();
    w.runs()->runPanel()->setSeed(seed);
    w.runs()->runPanel()->setThreads(2);

    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(w.runs()->isRunning());  // the result comes later, through the event loop
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("running"));
    QVERIFY(!w.runs()->runAction()->isEnabled());
    QVERIFY(w.runs()->cancelAction()->isEnabled());
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.runs()->lastOutcome().error));
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("finished"));
    QVERIFY(w.runs()->runAction()->isEnabled());
    QVERIFY(w.runs()->saveOutputsAction()->isEnabled());

    // The same graph, seed and inputs straight through the engine.
    const Graph &g = w.document()->graph();
    const auto inputs = make_random_inputs(g, seed);
    cpu::CpuOptions options;
    options.threads = 2;
    auto program = cpu::Program::compile(g, OpLibrary::standard(), options);
    QVERIFY2(program.has_value(), program ? "" : program.error().c_str());
    auto direct = (*program)->run(inputs);
    QVERIFY2(direct.has_value(), direct ? "" : direct.error().c_str());

    OutputsPanel *panel = w.runs()->outputsPanel();
    QVERIFY(panel->hasOutputs());
    int outputs = 0;
    for (const TensorPtr &t : g.tensors()) {
        if (t->role != TensorRole::output) continue;
        ++outputs;
        const QString id = QString::fromStdString(t->id.value);
        QVERIFY2(panel->selectTensor(id), qPrintable(id));
        const TensorSummary &shown = panel->summaries()[static_cast<size_t>(panel->selectedTensor())];
        QCOMPARE(shown.role, QStringLiteral("output"));
        QCOMPARE(shown.shape, t->shape().to_vector());
        QCOMPARE(shown.nan_count, 0);
        QCOMPARE(shown.inf_count, 0);
        QCOMPARE(shown.finite_count, t->range.size());
        QVERIFY(std::isfinite(shown.mean) && std::isfinite(shown.stddev));
        QVERIFY(shown.max > shown.min);
        const TensorSummary expected = summarize_tensor(direct->outputs.at(t->id));
        QVERIFY2(close(shown.min, expected.min),
                 qPrintable(QStringLiteral("%1 vs %2").arg(shown.min).arg(expected.min)));
        QVERIFY(close(shown.max, expected.max));
        QVERIFY2(close(shown.mean, expected.mean),
                 qPrintable(QStringLiteral("%1 vs %2").arg(shown.mean).arg(expected.mean)));
        QVERIFY(close(shown.stddev, expected.stddev));
        // The row says the same, and the histogram shows this tensor.
        QTreeWidgetItem *row = panel->tensorTree()->currentItem();
        QVERIFY(row);
        QCOMPARE(row->text(OutputsPanel::NameColumn),
                 OutputsPanel::tensorLabel(QString::fromStdString(t->id.value),
                                           QString::fromStdString(t->name.empty() ? t->id.value : t->name)));
        QCOMPARE(row->text(OutputsPanel::ShapeColumn), shown.shapeText());
        QCOMPARE(row->text(OutputsPanel::MeanColumn), QString::number(shown.mean, 'g', 5));
        std::int64_t binned = 0;
        for (std::int64_t c : panel->histogram()->bins()) binned += c;
        QCOMPARE(binned, t->range.size());
    }
    QVERIFY(outputs > 0);
    // Inputs are listed too; an image-shaped one shows its first item.
    for (const TensorPtr &t : g.tensors()) {
        if (t->role != TensorRole::input) continue;
        QVERIFY(panel->selectTensor(QString::fromStdString(t->id.value)));
        const bool image = is_image_shaped(t->shape().to_vector());
        QCOMPARE(panel->previewLabel()->isVisibleTo(panel), image);
        if (image) QVERIFY(!panel->previewLabel()->pixmap().isNull());
    }
    // One timing row per operation the engine timed (epilogues fused into their
    // producer have no step of their own), each an operation of the graph.
    QTreeWidget *timings = panel->timingsTree();
    QSet<QString> timed;
    for (const cpu::StepTiming &step : w.runs()->lastOutcome().steps) timed.insert(QString::fromStdString(step.op));
    QVERIFY(!timed.isEmpty());
    QCOMPARE(timings->topLevelItemCount(), static_cast<int>(timed.size()));
    for (int i = 0; i < timings->topLevelItemCount(); ++i) {
        const QString op = timings->topLevelItem(i)->text(0);
        QVERIFY2(g.find_op(OpId(op.toStdString())), qPrintable(op));
        QVERIFY(timed.contains(op));
    }
    QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("Ran")));

    if (project == QLatin1String("convnet")) {
        panel->selectTensor(QStringLiteral("x"));
        screenshot(w, QStringLiteral("studio-run-outputs.png"));
    }

    // Save Outputs writes one .npy file per output, holding the values of the run.
    const QString out_dir = tmp_.filePath(QStringLiteral("outputs-") + project);
    QSignalSpy saved(w.runs(), &RunController::outputsSaved);
    w.runs()->saveOutputs(out_dir);
    QVERIFY(saved.wait(20000) || saved.count() > 0);
    QCOMPARE(saved.front().at(1).toString(), QString());
    const QStringList files = QDir(out_dir).entryList({QStringLiteral("*.npy")}, QDir::Files);
    QCOMPARE(files.size(), outputs);
    for (const QString &file : files) {
        auto value = read_npy(std::filesystem::path(QDir(out_dir).filePath(file).toStdString()));
        QVERIFY2(value.has_value(), qPrintable(file));
        bool matches = false;
        for (const auto &[id, shown] : w.runs()->lastOutcome().output_values) matches = matches || shown == *value;
        QVERIFY2(matches, qPrintable(file));
    }
}

// The Timings tab lists the batch tiles the executor cut an operation into, as it
// lists shards: "N batch tiles" on the operation's row, one child per tile whose
// times add up to the row's. The conv net of the examples, with a tile target
// small enough that its conv chain tiles.
void TestStudioRun::timingsListBatchTiles() {
    MainWindow w;
    w.resize(1500, 950);
    w.show();
    QVERIFY(openAndWait(w, examplePath(QStringLiteral("convnet"))));
    const Graph &g = w.document()->graph();
    cpu::CpuOptions options;
    options.threads = 2;
    options.tile_bytes = 32 * 1024;
    auto program = cpu::Program::compile(g, OpLibrary::standard(), options);
    QVERIFY2(program.has_value(), program ? "" : program.error().c_str());
    auto result = (*program)->run(make_random_inputs(g, 3));
    QVERIFY2(result.has_value(), result ? "" : result.error().c_str());

    RunOutcome outcome;
    outcome.ok = true;
    outcome.source_name = QStringLiteral("convnet");
    outcome.inputs_text = QStringLiteral("random inputs, seed 3");
    outcome.threads = 2;
    outcome.steps = result->steps;
    outcome.run_ms = result->wall_milliseconds;
    outcome.arena_bytes = result->arena_bytes;
    OutputsPanel *panel = w.runs()->outputsPanel();
    panel->showOutcome(outcome);

    std::map<QString, int> tiles;  // operation -> its tile count
    for (const cpu::StepTiming &s : result->steps)
        if (s.tile >= 0) tiles[QString::fromStdString(s.op)] = s.tiles;
    QVERIFY2(tiles.size() >= 2, "the conv chain did not tile");
    QTreeWidget *timings = panel->timingsTree();
    int checked = 0;
    for (int i = 0; i < timings->topLevelItemCount(); ++i) {
        QTreeWidgetItem *row = timings->topLevelItem(i);
        auto it = tiles.find(row->text(0));
        if (it == tiles.end()) {
            QCOMPARE(row->childCount(), 0);
            QCOMPARE(row->text(1), QStringLiteral("—"));
            continue;
        }
        ++checked;
        QCOMPARE(row->text(1), QStringLiteral("%1 batch tiles").arg(it->second));
        QCOMPARE(row->childCount(), it->second);
        QSet<QString> names;
        double sum = 0;
        for (int c = 0; c < row->childCount(); ++c) {
            names.insert(row->child(c)->text(0));
            sum += row->child(c)->text(2).toDouble();
        }
        for (int k = 1; k <= it->second; ++k)
            QVERIFY2(names.contains(QStringLiteral("tile %1/%2").arg(k).arg(it->second)), qPrintable(row->text(0)));
        // Shown rounded: the children add up to the row within the rounding.
        QVERIFY2(std::abs(sum - row->text(2).toDouble()) <= 0.01 * (row->childCount() + 1) + 0.01 * sum,
                 qPrintable(QStringLiteral("%1: %2 vs %3").arg(row->text(0)).arg(sum).arg(row->text(2))));
    }
    QCOMPARE(checked, static_cast<int>(tiles.size()));
}

// The Execution box's "bf16 matmuls": off by default; on, the run's matmuls
// compute in bf16 (on a CPU with native bf16: other values, within bf16's error of
// the f32 ones), the headline says so, and the choice is remembered.
void TestStudioRun::bf16MatmulIsOptIn() {
    MainWindow w;
    w.resize(1500, 950);
    w.show();
    QVERIFY(openAndWait(w, examplePath(QStringLiteral("mlp"))));
    auto *box = w.runs()->runPanel()->findChild<QCheckBox *>(QStringLiteral("bf16Matmul"));
    QVERIFY(box);
    box->setChecked(false);
    w.runs()->runPanel()->setRandomInputs();
    w.runs()->runPanel()->setSeed(5);
    auto run = [&]() -> std::map<TensorId, TensorData> {
        QSignalSpy finished(w.runs(), &RunController::runFinished);
        w.runs()->runAction()->trigger();
        if (!waitRun(finished) || !finished.front().front().toBool()) return {};
        return w.runs()->lastOutcome().output_values;
    };
    const auto f32 = run();
    QVERIFY(!f32.empty());
    QVERIFY(!w.runs()->outputsPanel()->headline()->text().contains(QStringLiteral("bf16")));
    QTest::mouseClick(box, Qt::LeftButton, {}, QPoint(8, box->height() / 2));
    QVERIFY(box->isChecked());
    QVERIFY(w.runs()->runPanel()->bf16Matmul());
    const auto low = run();
    QVERIFY(!low.empty());
    QVERIFY2(w.runs()->outputsPanel()->headline()->text().contains(QStringLiteral("bf16 matmuls")),
             qPrintable(w.runs()->outputsPanel()->headline()->text()));
    QVERIFY(w.runs()->lastOutcome().bf16_matmul);
    // Without native bf16 the matmuls stay f32, and the panel says so.
    const bool native = cpu::cpu_isa().native_bf16;
    qInfo("oneDNN ISA: %s", cpu::cpu_isa().name.c_str());
    const QString unavailable = QStringLiteral("bf16 matmuls are not available on %1").arg(w.runs()->lastOutcome().isa);
    QCOMPARE(w.runs()->outputsPanel()->noticesLabel()->isVisibleTo(w.runs()->outputsPanel()), !native);
    QCOMPARE(w.runs()->outputsPanel()->noticesLabel()->text().contains(unavailable), !native);
    QCOMPARE(w.runs()->outputsPanel()->headline()->text().contains(QStringLiteral("not available")), !native);
    for (const auto &[id, y] : f32) {
        const TensorData &z = low.at(id);
        double worst = 0, scale = 1;
        for (std::int64_t i = 0; i < y.element_count(); ++i) {
            worst = std::max(worst, std::abs(y.get(i) - z.get(i)));
            scale = std::max(scale, std::abs(y.get(i)));
        }
        if (native) {
            QVERIFY2(worst > 0 && worst / scale < 2e-2, qPrintable(QString::number(worst / scale)));
        } else {
            QCOMPARE(worst, 0.0);
        }
    }
    // Remembered for the next window.
    w.runs()->runPanel()->setBf16Matmul(true);
    w.close();
    MainWindow again;
    QVERIFY(again.runs()->runPanel()->bf16Matmul());
    again.runs()->runPanel()->setBf16Matmul(false);
}

// A bf16 project runs on any CPU: where a step has no native bf16 kernel here
// (oneDNN's below AVX512-BF16, our f32-only loops) it computes in f32 and rounds
// back; the Timings' Kernel column marks each such step "f32 fallback" with the
// reason as its tooltip, and the notice above the tabs names the operations.
void TestStudioRun::bf16ProjectRunsAndSaysWhichStepsFellBack() {
    MainWindow w;
    w.resize(1500, 950);
    w.show();
    QVERIFY(openAndWait(w, examplePath(QStringLiteral("mlp_bf16"))));
    w.runs()->runPanel()->setRandomInputs();
    w.runs()->runPanel()->setSeed(2);
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    const RunOutcome &o = w.runs()->lastOutcome();
    QVERIFY2(finished.front().front().toBool(), qPrintable(o.error));
    qInfo("oneDNN ISA: %s", qPrintable(o.isa));
    QCOMPARE(o.isa, QString::fromStdString(cpu::cpu_isa().name));
    for (const auto &[id, y] : o.output_values) QCOMPARE(y.dtype, DType::bf16);

    std::set<QString> fell_back;
    for (const cpu::StepTiming &s : o.steps)
        if (!s.fallback.empty()) fell_back.insert(QString::fromStdString(s.op));
    if (!cpu::cpu_isa().native_bf16) QVERIFY2(fell_back.count(QStringLiteral("fc2")), "fc2 ran bf16 natively");
    OutputsPanel *panel = w.runs()->outputsPanel();
    QTreeWidget *timings = panel->timingsTree();
    int marked = 0;
    for (int i = 0; i < timings->topLevelItemCount(); ++i) {
        QTreeWidgetItem *row = timings->topLevelItem(i);
        const bool expect = fell_back.count(row->text(OutputsPanel::TimingOperationColumn)) > 0;
        QCOMPARE(row->text(OutputsPanel::TimingKernelColumn) == QStringLiteral("f32 fallback"), expect);
        if (!expect) continue;
        ++marked;
        QVERIFY2(row->toolTip(OutputsPanel::TimingKernelColumn)
                     .contains(QStringLiteral("bf16 computed in f32 (on ") + o.isa),
                 qPrintable(row->toolTip(OutputsPanel::TimingKernelColumn)));
    }
    QCOMPARE(marked, static_cast<int>(fell_back.size()));
    QCOMPARE(panel->noticesLabel()->isVisibleTo(panel), !fell_back.empty());
    if (!fell_back.empty())
        QVERIFY2(panel->noticesLabel()->text().contains(QStringLiteral("16-bit floats in f32")),
                 qPrintable(panel->noticesLabel()->text()));
    QVERIFY2(panel->timingsTotal()->text().contains(QStringLiteral("oneDNN on ") + o.isa),
             qPrintable(panel->timingsTotal()->text()));
    panel->tabs()->setCurrentIndex(OutputsPanel::TimingsTab);
    screenshot(w, QStringLiteral("studio-run-bf16.png"));
}

void TestStudioRun::verifyShowsPass() {
    const QString path = writeProject("sharded.tapestry.json", kShardedProject);
    MainWindow w;
    w.resize(1500, 950);
    w.show();
    QVERIFY(openAndWait(w, path));
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->verifyAction()->trigger();
    QVERIFY(w.runs()->isRunning());
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.runs()->lastOutcome().error));
    const verify::VerifyReport &report = w.runs()->lastOutcome().report;
    QVERIFY(report.sharded);
    QVERIFY(report.pass());

    OutputsPanel *panel = w.runs()->outputsPanel();
    QCOMPARE(panel->tabs()->currentIndex(), int(OutputsPanel::VerificationTab));
    QVERIFY(panel->verdictLabel()->isVisibleTo(panel));
    QVERIFY2(panel->verdictLabel()->text().contains(QStringLiteral("PASS")), qPrintable(panel->verdictLabel()->text()));
    QTreeWidget *table = panel->verifyTree();
    QCOMPARE(table->topLevelItemCount(), static_cast<int>(report.comparisons.size()));
    QStringList against;
    for (int i = 0; i < table->topLevelItemCount(); ++i) {
        QTreeWidgetItem *row = table->topLevelItem(i);
        QCOMPARE(row->text(OutputsPanel::VerifyOutputColumn), QStringLiteral("y"));
        QCOMPARE(row->text(OutputsPanel::VerifyResultColumn), QStringLiteral("pass"));
        bool ok = false;
        QVERIFY(row->text(OutputsPanel::VerifyMaxAbsColumn).toDouble(&ok) <= 1e-4 && ok);
        against << row->text(OutputsPanel::VerifyAgainstColumn);
    }
    QVERIFY2(against.join(QLatin1Char(',')).contains(QStringLiteral("oracle")), qPrintable(against.join(',')));
    QVERIFY2(against.join(QLatin1Char(',')).contains(QStringLiteral("unsharded")), qPrintable(against.join(',')));
    QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("passed")));
    screenshot(w, QStringLiteral("studio-verify.png"));
}

// The Verification table named an output "y" where the Tensors tab said its
// name: both say "activations (y)" now.
void TestStudioRun::verificationCalledTheOutputByItsId_regression() {
    const QString named = QString::fromLatin1(kShardedProject)
                              .replace(QStringLiteral(R"({"id": "y", "dtype")"),
                                       QStringLiteral(R"({"id": "y", "name": "activations", "dtype")"));
    const QString path = writeProject("named.tapestry.json", named.toUtf8().constData());
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, path));
    QCOMPARE(w.document()->graph().find_tensor(TensorId("y"))->name, std::string("activations"));
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    OutputsPanel *panel = w.runs()->outputsPanel();
    QStringList tensors;
    for (int i = 0; i < panel->tensorTree()->topLevelItemCount(); ++i)
        tensors << panel->tensorTree()->topLevelItem(i)->text(OutputsPanel::NameColumn);
    QVERIFY2(tensors.contains(QStringLiteral("activations (y)")), qPrintable(tensors.join(QStringLiteral(", "))));
    finished.clear();
    w.runs()->verifyAction()->trigger();
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.runs()->lastOutcome().error));
    QTreeWidget *table = panel->verifyTree();
    QVERIFY(table->topLevelItemCount() >= 2);
    for (int i = 0; i < table->topLevelItemCount(); ++i)
        QCOMPARE(table->topLevelItem(i)->text(OutputsPanel::VerifyOutputColumn), QStringLiteral("activations (y)"));
}

// A PASS stayed after the graph was edited. Now an edit turns it grey and "stale",
// and verifying again gives a fresh verdict.
void TestStudioRun::verificationPassStaysAfterAnEdit_regression() {
    const QString path = writeProject("sharded.tapestry.json", kShardedProject);
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, path));
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->verifyAction()->trigger();
    QVERIFY(waitRun(finished));
    OutputsPanel *panel = w.runs()->outputsPanel();
    QCOMPARE(panel->verdictLabel()->text(), QStringLiteral("✔ PASS"));
    QVERIFY(!panel->isStale());
    // Moving a node changes nothing the verification saw.
    w.document()->placeNodes({{QStringLiteral("act"), QPointF(400, 400)}});
    QVERIFY(!panel->isStale());
    QVERIFY(w.editing()
                ->applyEdit(QStringLiteral("Rename"), [](edit::Editor &e) { return e.rename("act", "activation"); })
                .isEmpty());
    QVERIFY(panel->isStale());
    QVERIFY2(panel->verdictLabel()->text().contains(QStringLiteral("stale")),
             qPrintable(panel->verdictLabel()->text()));
    QVERIFY(!panel->verdictLabel()->text().contains(QStringLiteral("✔")));
    QVERIFY(panel->headline()->text().startsWith(QStringLiteral("Stale")));
    finished.clear();
    w.runs()->verifyAction()->trigger();
    QVERIFY(waitRun(finished));
    QCOMPARE(panel->verdictLabel()->text(), QStringLiteral("✔ PASS"));
    QVERIFY(!panel->isStale());
}

void TestStudioRun::cancelInTheMiddle() {
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, examplePath(QStringLiteral("convnet"))));
    // The executor reports progress between steps; the first report cancels the
    // job, as a user pressing Cancel during the run would.
    auto reports = std::make_shared<std::atomic<int>>(0);
    w.runs()->runWorker()->setProgressHook([reports](int, int) { return ++*reports == 1; });
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    QCOMPARE(finished.front().front().toBool(), false);
    QVERIFY(*reports >= 1);
    QVERIFY(w.runs()->lastOutcome().cancelled);
    QVERIFY(w.runs()->lastOutcome().error.isEmpty());
    QVERIFY(!w.runs()->isRunning());
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelled"));
    QVERIFY(w.runs()->runPanel()->statusLine().contains(QStringLiteral("Cancelled")));
    QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("cancelled")));
    QVERIFY(!w.runs()->outputsPanel()->hasOutputs());
    QVERIFY(w.runs()->runAction()->isEnabled());
    QVERIFY(!w.runs()->cancelAction()->isEnabled());

    // Idle again: the next run goes through.
    w.runs()->runWorker()->setProgressHook({});
    finished.clear();
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.runs()->lastOutcome().error));
    QVERIFY(w.runs()->outputsPanel()->hasOutputs());
}

void TestStudioRun::cancelAtOnce() {
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, examplePath(QStringLiteral("convnet"))));
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    // Hold the worker at its first progress report until Cancel has been pressed:
    // on a loaded machine the GUI thread can otherwise lose the race to a run this
    // small, which then (rightly) completes instead of cancelling.
    auto pressed = std::make_shared<std::atomic_bool>(false);
    w.runs()->runWorker()->setProgressHook([pressed](int, int) {
        QElapsedTimer waited;
        waited.start();
        while (!pressed->load() && waited.elapsed() < 10000) QThread::msleep(1);
        return false;
    });
    w.runs()->runAction()->trigger();
    QVERIFY(w.runs()->cancelAction()->isEnabled());
    w.runs()->cancelAction()->trigger();  // before the worker got far
    pressed->store(true);
    w.runs()->runWorker()->setProgressHook({});
    QVERIFY(!w.runs()->cancelAction()->isEnabled());
    QVERIFY(waitRun(finished));
    QVERIFY(w.runs()->lastOutcome().cancelled);
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelled"));
    QVERIFY(!w.runs()->isRunning());
    QVERIFY(w.runs()->runAction()->isEnabled());
}

// The blocker of issue 13: Cancel during Verify said "Cancelling…" for ~95 s,
// then showed a PASS; its bar was full after 2 s and said nothing for minutes.
// Each phase is named as it starts; Cancel in the sharded run stops the worker
// itself, says "Cancelling…" at once, then "cancelled", and no verdict.
void TestStudioRun::cancelDoesNotCancelVerify_regression() {
    const QString path = writeProject("sharded.tapestry.json", kShardedProject);
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, path));
    RunWorker *worker = w.runs()->runWorker();
    QSignalSpy progress(worker, &RunWorker::progress);
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    // The first report of the sharded run (after the unsharded run's last one)
    // holds the worker until Cancel is pressed.
    auto ended = std::make_shared<std::atomic<int>>(0);
    auto pressed = std::make_shared<std::atomic_bool>(false);
    worker->setProgressHook([ended, pressed](int done, int total) {
        if (*ended == 1) {
            QElapsedTimer waited;
            waited.start();
            while (!pressed->load() && waited.elapsed() < 10000) QThread::msleep(1);
        }
        if (done >= total) ++*ended;
        return false;
    });
    w.runs()->verifyAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(*ended >= 1, kRunTimeoutMs);
    QTRY_VERIFY([&] {
        for (const QList<QVariant> &p : progress)
            if (p.at(3).toString() == QStringLiteral("Sharded run")) return true;
        return false;
    }());
    w.runs()->cancelAction()->trigger();
    // At once: the button, the panel and the status bar.
    QVERIFY(!w.runs()->cancelAction()->isEnabled());
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelling"));
    QCOMPARE(w.statusBar()->currentMessage(), QStringLiteral("Cancelling…"));
    pressed->store(true);
    QVERIFY(waitRun(finished));
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().front().toBool(), false);
    // The worker itself stopped (the executor polls between steps), well within the grace.
    QVERIFY(!worker->isWorking() || QTest::qWaitFor([&] { return !worker->isWorking(); }, 2000));
    const RunOutcome &o = w.runs()->lastOutcome();
    QVERIFY(o.cancelled);
    QVERIFY(o.report.comparisons.empty());
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelled"));
    QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("cancelled")));
    QVERIFY(!w.runs()->outputsPanel()->verdictLabel()->isVisibleTo(w.runs()->outputsPanel()));
    // Named phases, in order; the oracle never started.
    QStringList phases;
    for (const QList<QVariant> &p : progress)
        if (phases.isEmpty() || phases.back() != p.at(3).toString()) phases << p.at(3).toString();
    QVERIFY2(phases.indexOf(QStringLiteral("Unsharded run")) >= 0 &&
                 phases.indexOf(QStringLiteral("Unsharded run")) < phases.indexOf(QStringLiteral("Sharded run")),
             qPrintable(phases.join(QStringLiteral(" → "))));
    QVERIFY(!phases.contains(QStringLiteral("Oracle (double precision)")));
    worker->setProgressHook({});
}

// A window verifying the matmul chain, stopped where the oracle phase begins.
struct OracleRun {
    static inline const QString kOracle = QStringLiteral("Oracle (double precision)");
    QTemporaryDir dir;
    MainWindow w;
    QSignalSpy progress{w.runs()->runWorker(), &RunWorker::progress};
    QSignalSpy finished{w.runs(), &RunController::runFinished};

    // Opens the chain, starts Verify and waits for the oracle phase; false when
    // it never came.
    bool reachTheOracle() {
        const QString path = dir.filePath(QStringLiteral("chain.tapestry.json"));
        if (!writeFile(path, matmulChainProject(1024, 1024, 8).toStdString())) return false;
        w.show();
        if (!openAndWait(w, path)) return false;
        progress.clear();
        w.runs()->verifyAction()->trigger();
        return QTest::qWaitFor(
            [&] {
                for (const QList<QVariant> &p : progress)
                    if (p.at(3).toString() == kOracle) return true;
                return false;
            },
            kRunTimeoutMs);
    }
};

// Cancel while the oracle computes: the oracle phase is named (its bar is not
// full), Cancel says "Cancelling…" at once and "cancelled" within the grace — and
// the oracle's late result, when it comes, shows no verdict.
void TestStudioRun::cancelDuringTheOracleNeverShowsAVerdict() {
    OracleRun run;
    MainWindow &w = run.w;
    QVERIFY(run.reachTheOracle());
    if (!run.finished.isEmpty()) QSKIP("the oracle finished before Cancel could be pressed (a very fast machine)");
    QProgressBar *bar = w.runs()->runPanel()->progressBar();
    QVERIFY2(bar->maximum() == 0 || bar->value() < bar->maximum(), "the bar is full while the oracle works");
    QVERIFY2(w.runs()->runPanel()->statusLine().startsWith(OracleRun::kOracle) ||
                 bar->format().startsWith(OracleRun::kOracle),
             qPrintable(w.runs()->runPanel()->statusLine()));

    QElapsedTimer clock;
    clock.start();
    w.runs()->cancelAction()->trigger();
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelling"));
    QCOMPARE(w.statusBar()->currentMessage(), QStringLiteral("Cancelling…"));
    QVERIFY(waitRun(run.finished));
    QVERIFY2(clock.elapsed() < RunWorker::kCancelGraceMs + 1000, qPrintable(QString::number(clock.elapsed())));
    QVERIFY(w.runs()->lastOutcome().cancelled);
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelled"));
    QVERIFY(w.runs()->runAction()->isEnabled());
    // Whatever the oracle returns later is dropped.
    QVERIFY(QTest::qWaitFor([&] { return !w.runs()->runWorker()->isWorking(); }, kRunTimeoutMs));
    QTest::qWait(100);
    QCOMPARE(run.finished.count(), 1);
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("cancelled"));
    QVERIFY(!w.runs()->outputsPanel()->verdictLabel()->isVisibleTo(w.runs()->outputsPanel()));
    QVERIFY(!w.statusBar()->currentMessage().contains(QStringLiteral("passed")));
}

// Cancel during the oracle stops the worker thread itself, not only the window:
// the oracle polls the cancel before every chunk (ops/evaluate.h).
void TestStudioRun::cancelStopsTheOracle() {
    OracleRun run;
    QVERIFY(run.reachTheOracle());
    if (!run.finished.isEmpty()) QSKIP("the oracle finished before Cancel could be pressed (a very fast machine)");
    run.w.runs()->cancelAction()->trigger();
    // A chunk of the oracle, at most, after Cancel.
    QVERIFY(QTest::qWaitFor([&] { return !run.w.runs()->runWorker()->isWorking(); }, 3000));
    QVERIFY(waitRun(run.finished));
    QVERIFY(run.w.runs()->lastOutcome().cancelled);
}

// A graph whose tensors exceed the machine's memory is refused before anything
// is allocated (runtime/cpu/memory_budget.h), run and verify alike: a failed job
// with the largest tensors named, not a crash of the studio.
void TestStudioRun::graphLargerThanMemoryIsRefused() {
    const QByteArray text =
        "{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": ["
        "{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [2147483648, 2147483648], \"role\": \"input\"},"
        "{\"id\": \"y\", \"dtype\": \"f32\", \"shape\": [2147483648, 2147483648], \"role\": \"output\"}],"
        "\"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"y\"}}]}";
    LoadResult loaded = parse_project(text.toStdString(), "huge");
    QVERIFY(loaded.ok());
    for (RunMode mode : {RunMode::run, RunMode::verify}) {
        RunRequest request;
        request.mode = mode;
        request.graph = loaded.graph;
        const RunOutcome out = RunWorker::execute(request, {});
        QVERIFY(!out.ok);
        QVERIFY(!out.cancelled);
        const QString want = mode == RunMode::run ? QStringLiteral("not enough memory to run: ")
                                                  : QStringLiteral("not enough memory to verify: ");
        QVERIFY2(out.error.startsWith(want + "its tensors need more than 8 EiB (largest: 'x' more than 8 EiB"),
                 qPrintable(out.error));
    }
}

// A project whose `data` leads outside its folder (issue 14, class 6): Run asks
// first; declined, nothing runs and the status bar says why; agreed, it runs and
// is not asked again for that project.
void TestStudioRun::valuesOutsideTheFolderAreReadOnlyWithConsent() {
    QTemporaryDir dir;
    QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("project"))));
    TensorData w(DType::f32, ZPoint({3}));
    for (int i = 0; i < 3; ++i) w.set(i, i + 1);
    QVERIFY(write_npy(w, dir.filePath(QStringLiteral("secret.npy")).toStdString()).empty());
    const QString path = dir.filePath(QStringLiteral("project/outside.tapestry.json"));
    QVERIFY(writeFile(path,
                      "{\"format\": \"tapestry-project\", \"version\": 1, \"name\": \"outside\", \"tensors\": ["
                      "{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 3], \"role\": \"input\"},"
                      "{\"id\": \"w\", \"dtype\": \"f32\", \"shape\": [3], \"role\": \"parameter\", \"data\": \"../secret.npy\"},"
                      "{\"id\": \"y\", \"dtype\": \"f32\", \"shape\": [2, 3], \"role\": \"output\"}],"
                      "\"operations\": [{\"id\": \"scale\", \"kind\": \"mul\", \"inputs\": {\"a\": \"x\", \"b\": \"w\"},"
                      " \"outputs\": {\"y\": \"y\"}}]}"));
    MainWindow w_;
    w_.show();
    QVERIFY(openAndWait(w_, path));
    QStringList asked;
    bool answer = false;
    w_.runs()->setOutsideDataQuestion([&](const QStringList &paths) {
        asked = paths;
        return answer;
    });
    QSignalSpy finished(w_.runs(), &RunController::runFinished);
    w_.runs()->runAction()->trigger();
    QCOMPARE(asked, QStringList{QStringLiteral("../secret.npy")});
    QVERIFY(!w_.runs()->isRunning());
    QCOMPARE(finished.count(), 0);
    QVERIFY2(w_.statusBar()->currentMessage().startsWith(QStringLiteral("Not run: ")) &&
                 w_.statusBar()->currentMessage().endsWith(
                     QStringLiteral("reads tensor values outside its folder (../secret.npy)")),
             qPrintable(w_.statusBar()->currentMessage()));
    asked.clear();
    answer = true;
    w_.runs()->runAction()->trigger();
    QCOMPARE(asked.size(), 1);
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w_.runs()->lastOutcome().error));
    asked.clear();
    finished.clear();
    w_.runs()->runAction()->trigger();  // agreed once for this file
    QVERIFY(asked.isEmpty());
    QVERIFY(waitRun(finished));
    QVERIFY(finished.front().front().toBool());
}

void TestStudioRun::runErrorIsReported() {
    const QString path = writeProject("broken.tapestry.json", kBrokenProject);
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, path));
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    QCOMPARE(finished.front().front().toBool(), false);
    QVERIFY(!w.runs()->lastOutcome().cancelled);
    QVERIFY(!w.runs()->lastOutcome().error.isEmpty());
    QCOMPARE(w.runs()->runPanel()->stateText(), QStringLiteral("failed"));
    QVERIFY(w.statusBar()->currentMessage().startsWith(QStringLiteral("Run failed")));
    bool found = false;
    for (const Issue &i : w.inspection()->issuesPanel()->issues()) found = found || i.code == "run-failed";
    QVERIFY(found);
    QVERIFY(w.runs()->runAction()->isEnabled());
}

// ---- ONNX import ---------------------------------------------------------------

// A PyTorch export of opset 6 imports through ONNX's version converter, and the
// status bar says so.
void TestStudioRun::importOlderOpsetSaysConverted() {
    const QString model = QStringLiteral("/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx");
    if (!QFileInfo::exists(model)) QSKIP("libonnx-testdata is not installed");
    MainWindow w;
    w.show();
    QSignalSpy imported(w.project(), &ProjectController::importFinished);
    w.project()->importOnnx(model);
    QVERIFY(imported.wait(20000));
    QVERIFY2(imported.front().front().toBool(), qPrintable(w.statusBar()->currentMessage()));
    QVERIFY2(w.statusBar()->currentMessage().contains(
                 QStringLiteral("converted from opset 6 to 13 by ONNX's version converter")),
             qPrintable(w.statusBar()->currentMessage()));
    bool conv = false;
    for (const OpPtr &op : w.document()->graph().operations()) conv = conv || op->kind == "conv2d";
    QVERIFY(conv);
}

// A real architecture — ONNX's light ResNet-50 (tests/data/onnx/light): opset 9,
// its weights ConstantOfShape nodes the importer folds — through File ▸ Import
// ONNX: 123 operations laid out on the canvas, then Run on the CPU gives the
// 1000 class probabilities.
void TestStudioRun::importRealArchitectureLaysOutAndRuns() {
    const QString model = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + QStringLiteral("/tests/data/onnx/light/light_resnet50.onnx");
    if (!QFileInfo::exists(model)) QSKIP("TAPESTRY_SOURCE_DIR is set by CTest");
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    QSignalSpy imported(w.project(), &ProjectController::importFinished);
    QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
    w.project()->importOnnx(model);
    QVERIFY(imported.count() > 0 || imported.wait(60000));
    QVERIFY2(imported.front().front().toBool(), qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(ready.count() > 0 || ready.wait(kLayoutTimeoutMs));
    QCOMPARE(w.document()->source().name, QStringLiteral("light_resnet50.onnx (imported)"));
    int convs = 0, ops = 0;
    for (const OpPtr &op : w.document()->graph().operations()) {
        ++ops;
        convs += op->kind == "conv2d";
    }
    QCOMPARE(ops, 123);
    QCOMPARE(convs, 53);
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.runs()->lastOutcome().error));
    const TensorSummary &y = w.runs()->lastOutcome().outputs.front();
    QCOMPARE(y.shape, (std::vector<std::int64_t>{1, 1000}));
    QVERIFY(y.min >= 0 && y.max <= 1);  // the softmax's probabilities
    screenshot(w, QStringLiteral("studio-onnx-resnet50.png"));
}

void TestStudioRun::importOnnxAsksDimensionRunsAndSaves() {
    const QString model = tmp_.filePath(QStringLiteral("tiny.onnx"));
    QVERIFY(writeFile(model, onnxModel(false)));
    MainWindow w;
    w.show();
    QSignalSpy imported(w.project(), &ProjectController::importFinished);
    QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
    w.project()->importOnnx(model);
    // The model's batch is symbolic: the window asks for it.
    QDialog *dialog = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((dialog = w.findChild<QDialog *>(QStringLiteral("dimensionDialog"))) != nullptr, 20000);
    QCOMPARE(imported.count(), 0);
    auto *batch = dialog->findChild<QSpinBox *>(QStringLiteral("dim_batch"));
    QVERIFY(batch);
    batch->setValue(5);
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
    QVERIFY(imported.count() > 0 || imported.wait(20000));
    QVERIFY2(imported.front().front().toBool(), qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(ready.count() > 0 || ready.wait(kLayoutTimeoutMs));
    QVERIFY(w.document()->source().imported);
    QCOMPARE(w.document()->source().name, QStringLiteral("tiny.onnx (imported)"));
    QVERIFY2(w.windowTitle().startsWith(QStringLiteral("tiny.onnx (imported)")), qPrintable(w.windowTitle()));
    const Graph graph = w.document()->graph();
    const Tensor *x = nullptr;
    for (const TensorPtr &t : graph.tensors())
        if (t->role == TensorRole::input) x = t.get();
    QVERIFY(x);
    QCOMPARE(x->shape().to_vector(), (std::vector<Coord>{5, 4}));

    // It runs like a project.
    QSignalSpy finished(w.runs(), &RunController::runFinished);
    w.runs()->runAction()->trigger();
    QVERIFY(waitRun(finished));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.runs()->lastOutcome().error));
    QCOMPARE(w.runs()->lastOutcome().outputs.size(), size_t(1));
    const TensorSummary &y = w.runs()->lastOutcome().outputs.front();
    QCOMPARE(y.shape, (std::vector<std::int64_t>{5, 3}));
    QVERIFY(y.min >= 0);  // after the relu

    // Save As writes a project with the weights; it opens again with the same values.
    const QString saved_path = tmp_.filePath(QStringLiteral("tiny.tapestry.json"));
    QSignalSpy saved(w.project(), &ProjectController::projectSaved);
    QVERIFY(w.findChild<QAction *>(QStringLiteral("actionSaveAs"))->isEnabled());
    w.project()->saveProjectAs(saved_path);
    QVERIFY(saved.count() > 0 || saved.wait(20000));
    QCOMPARE(saved.front().at(1).toString(), QString());
    QCOMPARE(w.document()->source().name, QStringLiteral("tiny.tapestry.json"));
    QVERIFY(!w.document()->source().imported);
    LoadResult loaded = load_project(std::filesystem::path(saved_path.toStdString()));
    QVERIFY(!has_errors(loaded.issues));
    QVERIFY(!has_errors(load_tensor_values(loaded.graph, std::filesystem::path(tmp_.path().toStdString()))));
    int parameters = 0;
    for (const TensorPtr &t : graph.tensors()) {
        if (t->role != TensorRole::parameter) continue;
        ++parameters;
        const Tensor *back = loaded.graph.find_tensor(t->id);
        QVERIFY(back && back->value && t->value);
        QVERIFY(*back->value == *t->value);
    }
    QCOMPARE(parameters, 2);
}

void TestStudioRun::importRefusedModels_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");  // in the message box
    QTest::newRow("unsupported operator") << QByteArray::fromStdString(onnxModel(true)) << QStringLiteral("Hardmax");
    QTest::newRow("not onnx") << QByteArray("definitely not a model") << QStringLiteral("bad.onnx");
    const std::string full = onnxModel(false);
    QTest::newRow("truncated") << QByteArray::fromStdString(full.substr(0, full.size() * 2 / 3))
                               << QStringLiteral("bad.onnx");
}

void TestStudioRun::importRefusedModels() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    const QString model = tmp_.filePath(QStringLiteral("bad.onnx"));
    QVERIFY(writeFile(model, bytes.toStdString()));
    MainWindow w;
    w.show();
    QVERIFY(openAndWait(w, examplePath(QStringLiteral("convnet"))));
    const QString title = w.windowTitle();
    QSettings().setValue(QStringLiteral("onnx/dims/batch"), 2);
    QSignalSpy imported(w.project(), &ProjectController::importFinished);
    w.project()->importOnnx(model);
    // A symbolic batch is asked first (the truncated and unsupported models have one).
    QTRY_VERIFY_WITH_TIMEOUT(imported.count() > 0 || w.findChild<QDialog *>(QStringLiteral("dimensionDialog")), 20000);
    if (QDialog *dialog = w.findChild<QDialog *>(QStringLiteral("dimensionDialog")))
        dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
    QVERIFY(imported.count() > 0 || imported.wait(20000));
    QCOMPARE(imported.front().front().toBool(), false);
    QMessageBox *box = nullptr;
    QTRY_VERIFY((box = w.findChild<QMessageBox *>(QStringLiteral("importErrorBox"))) != nullptr);
    const QString all = box->text() + QLatin1Char('\n') + box->informativeText();
    QVERIFY2(all.contains(expected), qPrintable(all));
    QVERIFY(w.statusBar()->currentMessage().startsWith(QStringLiteral("Could not import bad.onnx")));
    // The project shown stays.
    QCOMPARE(w.windowTitle(), title);
    QVERIFY(!w.document()->source().imported);
    box->close();
}

QTEST_MAIN(TestStudioRun)
#include "test_studio_run.moc"
