// `tapestry plan` and `tapestry targets` (docs/cli.md, docs/plans.md): the real
// binary ($TAPESTRY_CLI) on the examples — its summary table, the plan file it
// writes (read back and certified), --json, the session that keeps the measured
// host, and exit codes: 0 certified, 1 refused, 2 a bad command line.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "cli_run.h"
#include "plan/certify.h"
#include "plan/plan_file.h"
#include "store/session.h"

using namespace tapestry;
using test::run_cli;

namespace {

QString project(const char *name) {
    return test::example_project(name);
}
using test::cli;

}  // namespace

class TestCliPlan : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (test::cli_path().isEmpty() || qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR"))
            QSKIP("TAPESTRY_CLI and TAPESTRY_SOURCE_DIR are set by CTest");
    }

    void plansATensorParallelBlockAndWritesThePlan() {
        QTemporaryDir dir;
        const QString out = dir.filePath("gpt2-tp.plan.json");
        const auto r = cli({"plan", project("gpt2_block"), "--target", "h100", "--devices", "4", "--baseline", "tp", "-o", out});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QVERIFY2(r.out.contains("baseline tp"), qPrintable(r.out));
        QVERIFY(r.out.contains("(prediction)"));
        QVERIFY(r.out.contains("plan certificate: PASS schedule, dataflow, races, arena, collectives, outputs"));
        // One row per device with its peak against the H100's capacity.
        for (const char *d : {"0:0 ", "0:1 ", "0:2 ", "0:3 "}) QVERIFY2(r.out.contains(d), qPrintable(r.out));
        auto p = plan::load_plan(out.toStdString());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        QCOMPARE(p->devices.size(), size_t{4});
        QCOMPARE(p->target, std::string("h100-sxm"));
        QVERIFY(plan::certify_plan(*p).pass());
    }
    void jsonSummary() {
        const auto r = cli({"plan", project("mlp"), "--target", "a100", "--devices", "8", "--nodes", "2", "--baseline", "dp", "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["devices"].toInt(), 8);
        QCOMPARE(j["nodes"].toInt(), 2);
        QCOMPARE(j["target"].toString(), QString("a100-80gb"));
        QCOMPARE(j["per_device"].toArray().size(), 8);
        QVERIFY(j["prediction"].toObject()["label"].toString().contains("not a measurement"));
        QVERIFY(j["prediction"].toObject()["makespan_seconds"].toDouble() > 0);
        QVERIFY(j["plan_certificate"].toString().startsWith("PASS"));
    }
    // A pipeline's steps by readiness unless --order says otherwise (docs/plans.md,
    // "Step order"): the summary, the JSON and the plan file say which.
    void stepOrderOfAPipeline() {
        QTemporaryDir dir;
        const QString out = dir.filePath("pp.plan.json");
        const auto ready = cli({"plan", project("gpt2_block"), "--target", "h100", "--devices", "4", "--baseline", "pp",
                                "-o", out});
        QVERIFY2(ready.code == 0, qPrintable(ready.err + ready.out));
        QVERIFY2(ready.out.contains("baseline pp: ") && ready.out.contains(" steps, ordered by readiness\n"),
                 qPrintable(ready.out));
        auto p = plan::load_plan(out.toStdString());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        QCOMPARE(p->source.order, plan::StepOrder::ready);
        QVERIFY(plan::certify_plan(*p).pass());
        const auto dep = cli({"plan", project("gpt2_block"), "--target", "h100", "--devices", "4", "--baseline", "pp",
                              "--order", "dependency", "--json"});
        QVERIFY2(dep.code == 0, qPrintable(dep.err));
        QCOMPARE(QJsonDocument::fromJson(dep.out.toUtf8()).object()["order"].toString(), QString("dependency"));
        const auto shard = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--json"});
        QCOMPARE(QJsonDocument::fromJson(shard.out.toUtf8()).object()["order"].toString(), QString("dependency"));
        const auto bad = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--order", "sideways"});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("--order") && bad.err.contains("sideways"), qPrintable(bad.err));
    }
    void pipelineThenPlacement() {
        const auto r = cli({"plan", project("mlp"), "--pipeline", "shard", "--shard", "fc2:1=2", "--target", "h100",
                            "--devices", "2", "--placement", "round-robin"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QVERIFY(r.out.contains("placement round-robin"));
    }
    void planAChosenStage() {
        QTemporaryDir dir;
        const QString out = dir.filePath("p.json");
        auto r = cli({"plan", project("mlp"), "--pipeline", "shard,fuse", "--shard", "fc2:0=2", "--stage", "1",
                      "--target", "h100", "--devices", "2", "-o", out});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        auto p = plan::load_plan(out.toStdString());
        QVERIFY(p.has_value());
        QCOMPARE(p->source.stage, 2);  // stage 1 (shard), then the place stage
        for (const plan::Step &s : p->steps) QVERIFY(s.op_kind != "fused");  // stage 2 (fuse) not taken
        r = cli({"plan", project("mlp"), "--pipeline", "shard", "--shard", "fc2:0=2", "--stage", "5", "--target", "h100"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("the pipeline has stages 0 to 1"), qPrintable(r.err));
        r = cli({"plan", project("mlp"), "--stage", "1", "--target", "h100"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("needs --pipeline"));
    }
    void refusalsNameWhatIsWrong() {
        auto r = cli({"plan", project("mlp"), "--target", "tpu9", "--devices", "2"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("unknown target 'tpu9'"), qPrintable(r.err));
        r = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--baseline", "zp"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("unknown baseline 'zp'"), qPrintable(r.err));
        r = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--map", "fc1=7:7"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("device '7:7' is not one of the 2 devices"), qPrintable(r.err));
        r = cli({"plan", project("mlp"), "--target", "h100", "--devices", "16", "--baseline", "tp", "--nodes", "3"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("do not spread evenly over 3 nodes"), qPrintable(r.err));
        r = cli({"plan", project("mlp"), "--target", "l40s", "--devices", "16", "--nodes", "2"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
    }
    // The cost model's calibration is always reported: none yet, or the error of
    // the measurements a session keeps for the target, before and after.
    void calibrationIsReported() {
        auto r = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--baseline", "dp"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("calibration: none — no launch on h100-sxm measured yet, predictions uncalibrated"),
                 qPrintable(r.out));
        QTemporaryDir dir;
        const QString path = dir.filePath("calibrated.tapestry-session");
        {
            auto s = store::Session::open(path.toStdString());
            QVERIFY(s.has_value());
            // Three gemm measurements in one size band, each 2× the prediction: the
            // band's factor is 2 and its error 50 % before, 0 % after.
            QVERIFY((*s)->add_calibration("h100-sxm", {{"gemm", 2e9, 1e-3, 2e-3, std::nullopt, ""},
                                                       {"gemm", 3e9, 2e-3, 4e-3, std::nullopt, ""},
                                                       {"gemm", 4e9, 3e-3, 6e-3, std::nullopt, ""}}));
        }
        r = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--baseline", "dp", "--session", path});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("calibration: 3 measurements on h100-sxm, median error 50% uncalibrated → 0% calibrated"),
                 qPrintable(r.out));
        r = cli({"plan", project("mlp"), "--target", "h100", "--devices", "2", "--baseline", "dp", "--session", path, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject c = QJsonDocument::fromJson(r.out.toUtf8()).object()["calibration"].toObject();
        QCOMPARE(c["samples"].toInt(), 3);
        QCOMPARE(c["median_error_uncalibrated"].toDouble(), 0.5);
        QCOMPARE(c["median_error_calibrated"].toDouble(), 0.0);
    }
    void targetsListShowAndMeasureIntoASession() {
        auto r = cli({"targets"});
        QCOMPARE(r.code, 0);
        for (const char *t : {"h100-sxm", "h200", "b200", "a100-80gb", "l40s", "host"}) QVERIFY2(r.out.contains(t), t);
        r = cli({"targets", "show", "h200"});
        QCOMPARE(r.code, 0);
        QVERIFY(QJsonDocument::fromJson(r.out.toUtf8()).object()["name"].toString() == "h200");
        QTemporaryDir dir;
        const QString session = dir.filePath("work.tapestry-session");
        r = cli({"targets", "measure", "--session", session, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject m = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(m["f32_flops"].toDouble() > 1e8);       // any CPU does more than 0.1 GFLOP/s
        QVERIFY(m["memory_bandwidth"].toDouble() > 1e8);
        QCOMPARE(m["label"].toString(), QString("measured on this machine"));
        r = cli({"targets", "list", "--session", session});
        QVERIFY(r.out.contains("host (measured)"));
        // The plan takes the kept measurement (no second measurement: it is quick).
        r = cli({"plan", project("mlp"), "--target", "host", "--devices", "2", "--baseline", "dp", "--session", session});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("This machine's CPU"));
        // Measured with 2 threads (the default): the 2 devices share 2 cores, a thread each.
        QVERIFY2(r.out.contains("cores: the 2 devices share 2 cores: 1 thread a kernel, at most 2 steps at once"),
                 qPrintable(r.out));
    }
};

QTEST_GUILESS_MAIN(TestCliPlan)
#include "test_cli_plan.moc"
