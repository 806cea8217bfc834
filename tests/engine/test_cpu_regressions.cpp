// Regressions of the CPU executor found by the equivalence properties, each a
// small project verified against the oracle and the unsharded run.
#include <QtTest/QtTest>

#include "io/project_file.h"
#include "io/random_inputs.h"
#include "ops/library.h"
#include "verify/verify.h"

using namespace tapestry;

namespace {
QString verify_text(const std::string &json) {
    LoadResult loaded = parse_project(json, "regression.tapestry.json");
    if (!loaded.ok()) return QString::fromStdString("load failed: " + format_issue(loaded.issues.front()));
    auto inputs = make_random_inputs(loaded.graph, 7);
    auto report = verify::check_equivalence(loaded.graph, OpLibrary::standard(), inputs);
    if (!report) return QString::fromStdString("verify failed: " + report.error());
    QString out;
    for (const verify::OutputComparison &c : report->comparisons)
        out += QString::fromStdString(c.tensor + " vs " + c.against + ": " + (c.pass ? "pass" : "FAIL") + " (max abs " +
                                      std::to_string(c.max_abs_error) + ")\n");
    return report->pass() ? QString() : out;
}
}  // namespace

class TestCpuRegressions : public QObject {
    Q_OBJECT
private slots:
    // oneDNN's layer normalization treats rows as consecutive in memory; a shard
    // split along a middle dim (a strided view) came out wrong.
    void layernormShardedAlongMiddleDim() {
        const std::string json = R"JSON({
  "format": "tapestry-project", "version": 1, "name": "ln",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [3, 3, 4], "role": "input"},
    {"id": "g", "dtype": "f32", "shape": [4], "role": "input"},
    {"id": "b", "dtype": "f32", "shape": [4], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": [3, 3, 4], "role": "output"}],
  "operations": [
    {"id": "ln", "kind": "layernorm", "params": {"axis": 2}, "inputs": {"x": "x", "gamma": "g", "beta": "b"},
     "outputs": {"y": "y"},
     "shards": [{"id": "ln/0", "index": {"start": [0, 0, 0], "end": [3, 2, 4]}},
                {"id": "ln/1", "index": {"start": [0, 2, 0], "end": [3, 3, 4]}}]}]})JSON";
        const QString failures = verify_text(json);
        QVERIFY2(failures.isEmpty(), qPrintable(failures));
    }

    // Reducing only extent-1 axes reduces nothing, which oneDNN's reduction refuses.
    void reduceOverExtentOneAxesToScalar() {
        const std::string json = R"JSON({
  "format": "tapestry-project", "version": 1, "name": "r",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [1, 1, 1], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": [], "role": "output"}],
  "operations": [
    {"id": "r", "kind": "reduce_sum", "params": {"axes": [-3, -2, -1], "keepdims": false},
     "inputs": {"x": "x"}, "outputs": {"y": "y"}}]})JSON";
        const QString failures = verify_text(json);
        QVERIFY2(failures.isEmpty(), qPrintable(failures));
    }
};

QTEST_GUILESS_MAIN(TestCpuRegressions)
#include "test_cpu_regressions.moc"
