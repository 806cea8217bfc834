// `tapestry launch` and `tapestry devices` from the command line (docs/launch.md):
// a plan made by `tapestry plan -o` launched on the cpu backend, its report in
// text and JSON, outputs written, and every refusal and failure with its words
// and exit code.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "cli_run.h"

using tapestry::test::cli;
using tapestry::test::example_project;

namespace {

// `tapestry plan` of an example into `dir`, returning the plan file's path.
QString make_plan(const QTemporaryDir &dir, const char *example, const QStringList &how) {
    const QString out = dir.filePath(QString("%1.plan.json").arg(example));
    const auto r = cli(QStringList{"plan", example_project(example), "-o", out} + how);
    if (r.code != 0) qFatal("tapestry plan: %s", qPrintable(r.err));
    return out;
}

}  // namespace

class TestCliLaunch : public QObject {
    Q_OBJECT
private slots:
    void launchesAPlanAndChecksItsOutputs() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "4", "--baseline", "tp"});
        const auto r = cli({"launch", plan, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["ok"].toBool(), true);
        QCOMPARE(j["status"].toString(), QString("ok"));
        QCOMPARE(j["backend"].toString(), QString("cpu"));
        QCOMPARE(j["devices"].toArray().size(), 4);
        QVERIFY(j["equivalence"].toObject()["pass"].toBool());
        QCOMPARE(j["equivalence"].toObject()["outputs"].toArray()[0].toObject()["against"].toString(), QString("unsharded"));
        QVERIFY(j["measured"].toObject()["wall_seconds"].toDouble() > 0);
        QVERIFY(j["predicted"].toObject()["label"].toString().contains("prediction"));
        QVERIFY(j["steps"].toArray().size() > 10);
        for (const QJsonValue &d : j["devices"].toArray())
            QVERIFY(d.toObject()["peak_bytes"].toDouble() > 0);
    }

    void textReportAndOutputs() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "attention", {"--devices", "2", "--baseline", "tp"});
        const QString outputs = dir.filePath("out");
        const auto r = cli({"launch", plan, "--outputs", outputs, "--oracle", "--steps"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QVERIFY2(r.out.contains("on the cpu backend (cpu: "), qPrintable(r.out));
        QVERIFY(r.out.contains("peak measured"));
        QVERIFY(r.out.contains("(prediction for target h100-sxm, not this machine)"));
        QVERIFY2(r.out.contains("PASS y vs unsharded") && r.out.contains("PASS y vs oracle"), qPrintable(r.out));
        QVERIFY(r.out.contains("launch: ok, outputs equal the reference"));
        QVERIFY(QFile::exists(outputs + "/y.npy"));
    }

    void aFailingStepIsReportedAndExitsOne() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "2", "--baseline", "dp"});
        const auto r = cli({"launch", plan, "--fail-step", "3"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("launch failed: step 3 (kernel") && r.err.contains("(rank 0) failed: injected fault"),
                 qPrintable(r.err));
    }

    void refusals() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "4", "--baseline", "dp"});
        auto r = cli({"launch", plan, "--device-memory", "1MiB"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("not launched: device 0:0 needs"), qPrintable(r.err));
        r = cli({"launch", plan, "--max-devices", "2"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("the plan has 4 devices, but the cpu backend offers 2"), qPrintable(r.err));
        r = cli({"launch", dir.filePath("missing.plan.json")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("missing.plan.json"), qPrintable(r.err));
        r = cli({"launch", plan, "--backend", "gpu"});
        QCOMPARE(r.code, 2);
        r = cli({"launch", plan, "--inputs", dir.filePath("nowhere")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("nowhere"), qPrintable(r.err));
    }

    void keepsTheLaunchInASession() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "2", "--baseline", "tp"});
        const QString session = dir.filePath("runs.tapestry-session");
        const auto r = cli({"launch", plan, "--session", session, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QString kept = QJsonDocument::fromJson(r.out.toUtf8()).object()["session"].toString();
        QVERIFY2(kept.contains("as launch 1 of plan 1 (project 'mlp (launched plans)')"), qPrintable(kept));
        // A plan for H100s launched on this CPU measures no H100.
        QVERIFY2(kept.contains("no calibration points: the cpu backend does not measure target h100-sxm"), qPrintable(kept));
        const auto again = cli({"launch", plan, "--session", session});
        QVERIFY2(again.code == 0 && again.out.contains("as launch 2 of plan 2"), qPrintable(again.out + again.err));
        const auto list = cli({"session", "list", session});
        QVERIFY2(list.out.contains("mlp (launched plans)"), qPrintable(list.out + list.err));
    }

    void calibrateFitsTheHostAndPlanReadsIt() {
        QTemporaryDir dir;
        const QString session = dir.filePath("host.tapestry-session");
        const auto r = cli({"calibrate", example_project("attention"), "--devices", "1,2", "--session", session, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["target"].toString(), QString("host"));
        QVERIFY(j["plans_launched"].toInt() >= 5);
        QVERIFY(j["failed"].toArray().isEmpty());
        const int points = j["steps"].toObject()["measurements"].toInt();
        QVERIFY(points > 10);
        QVERIFY(!j["table"].toArray().isEmpty());
        // The plan command predicts from what the launches measured.
        const auto p = cli({"plan", example_project("attention"), "--target", "host", "--devices", "2", "--session", session});
        QVERIFY2(p.code == 0, qPrintable(p.err + p.out));
        QVERIFY2(p.out.contains(QString("calibration: %1 measurements on host").arg(points)), qPrintable(p.out));
        // Only the host can be calibrated here.
        const auto h = cli({"calibrate", example_project("attention"), "--target", "h100"});
        QCOMPARE(h.code, 2);
        QVERIFY2(h.err.contains("the cpu backend measures the host only"), qPrintable(h.err));
    }

    void devicesListsTheCpuBackend() {
        auto r = cli({"devices"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("cpu: ") && r.out.contains("virtual devices"), qPrintable(r.out));
        r = cli({"devices", "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["backends"].toArray()[0].toObject()["name"].toString(), QString("cpu"));
        QVERIFY(j["backends"].toArray()[0].toObject()["cores"].toInt() >= 1);
    }
};

QTEST_GUILESS_MAIN(TestCliLaunch)
#include "test_cli_launch.moc"
