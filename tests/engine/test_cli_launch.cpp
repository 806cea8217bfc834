// `tapestry launch` and `tapestry devices` from the command line (docs/launch.md):
// a plan made by `tapestry plan -o` launched on the cpu backend, its report in
// text and JSON, outputs written, and every refusal and failure with its words
// and exit code; `tapestry calibrate`, on the host and from a device run's
// results (a small pack and results file written here, with made-up times).
#include <cmath>
#include <csignal>
#include <sys/types.h>

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
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

// A device run as tapestry-gpu-check leaves it, made up for the tests (TEST DATA:
// no GPU measured these times): a pack of `cases` (name, group, measured /
// predicted ratio), every case the same 2-device h200 plan of the MLP, and a
// results file whose every kernel and copy step took `ratio` × the plan's
// prediction. Fitting on it is checkable by hand.
struct DeviceRun {
    QString pack, results, plan;
    QJsonArray steps;  // the plan's steps
};

struct MadeUpCase {
    QString name, group;
    double ratio = 1;
};

// Times on a grid of 2⁻⁴⁰ s (about 1 ps): the launch places the steps by adding
// them up, and on this grid the sums are exact, so equal times stay equal (Kendall
// τ counts ties) and a ratio of 2 stays 2 to a millionth.
double on_grid(double seconds) {
    return std::ldexp(std::round(std::ldexp(seconds, 40)), -40);
}

QJsonObject results_line_of(const MadeUpCase &c, const QJsonArray &plan_steps) {
    QJsonArray steps;
    for (int i = 0; i < plan_steps.size(); ++i) {
        const QJsonObject s = plan_steps[i].toObject();
        const double predicted = s["predicted_seconds"].toDouble();
        steps.append(QJsonObject{{"step", i},
                                 {"kind", s["kind"]},
                                 {"op", s["op"]},
                                 {"op_kind", s["op_kind"]},
                                 {"device", s["device"]},
                                 {"measured_s", on_grid(c.ratio * predicted)},
                                 {"predicted_s", predicted}});
    }
    return QJsonObject{{"record", "case"}, {"name", c.name}, {"group", c.group}, {"ok", true},
                       {"steps", steps},   {"enqueued_s", 1e-3 * c.ratio}};
}

QByteArray jsonl(const QList<QJsonObject> &lines) {
    QByteArray out;
    for (const QJsonObject &l : lines) out += QJsonDocument(l).toJson(QJsonDocument::Compact) + "\n";
    return out;
}

// Two GPUs: the made-up cases are 2-device plans, each device a GPU of its own.
const QJsonObject kH200{{"name", "NVIDIA H200"}, {"memory_bytes", 150109880320.0}, {"cc", "9.0"}, {"sms", 132}};
const QJsonObject kH200Environment{
    {"record", "environment"}, {"note", "test data: made-up times"}, {"gpus", QJsonArray{kH200, kH200}}};

DeviceRun made_up_device_run(const QTemporaryDir &dir, const QList<MadeUpCase> &cases) {
    DeviceRun run;
    run.pack = dir.filePath("pack");
    QDir().mkpath(run.pack + "/cases");
    run.plan = run.pack + "/cases/mlp.2dev.plan.json";
    const auto r = cli({"plan", example_project("mlp"), "--target", "h200", "--devices", "2", "-o", run.plan});
    if (r.code != 0) qFatal("tapestry plan: %s", qPrintable(r.err));
    QFile f(run.plan);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(run.plan));
    run.steps = QJsonDocument::fromJson(f.readAll()).object()["steps"].toArray();
    QJsonArray manifest_cases;
    QList<QJsonObject> lines{kH200Environment};
    for (const MadeUpCase &c : cases) {
        manifest_cases.append(QJsonObject{{"name", c.name}, {"group", c.group}, {"plan", "cases/mlp.2dev.plan.json"}});
        lines.append(results_line_of(c, run.steps));
    }
    const QJsonObject manifest{{"format", "tapestry-gpu-pack"}, {"version", 1}, {"target", "h200"}, {"cases", manifest_cases}};
    tapestry::test::write_bytes(run.pack + "/manifest.json", QJsonDocument(manifest).toJson());
    run.results = dir.filePath("results.jsonl");
    tapestry::test::write_bytes(run.results, jsonl(lines));
    return run;
}

// The run's pack manifest with `list` ("benchmarks", "sizes") of timed plans, each
// the mlp 2-device plan under a name of `names`.
void add_timed_plans(const DeviceRun &run, const char *list, const QStringList &names) {
    QFile mf(run.pack + "/manifest.json");
    QVERIFY(mf.open(QIODevice::ReadOnly));
    QJsonObject manifest = QJsonDocument::fromJson(mf.readAll()).object();
    mf.close();
    QJsonArray entries;
    for (const QString &name : names) entries.append(QJsonObject{{"name", name}, {"plan", "cases/mlp.2dev.plan.json"}, {"seed", 1}});
    manifest[list] = entries;
    tapestry::test::write_bytes(run.pack + "/manifest.json", QJsonDocument(manifest).toJson());
}

// A timed record ("benchmark", "size") of `name`, as tapestry-gpu-check writes
// one: its steps at 2 × the prediction, the median of its runs, no "ok".
QJsonObject timed_record(const DeviceRun &run, const char *name, const char *record) {
    QJsonObject line = results_line_of({name, "benchmark", 2}, run.steps);
    line["record"] = record;
    line.remove("ok");
    line.remove("enqueued_s");
    line["median_s"] = 2e-3;
    return line;
}

// The four cases the figures below are worked out for: fitted on k0, e0 and e2
// (ratio 2) every band's factor is 2; e1 (ratio 4) is held out.
// In an expected message: the temporary directory's path, which differs per run.
const QString run_dir_marker = "<dir>/pack/";

const QList<MadeUpCase> kFourCases{{"k0", "kernel", 2}, {"e0", "example", 2}, {"e1", "example", 4}, {"e2", "example", 2}};

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
        // A step the plan does not have is refused, not silently never failed.
        const auto past = cli({"launch", plan, "--fail-step", "100000"});
        QCOMPARE(past.code, 1);
        QVERIFY2(past.err.contains("--fail-step: the plan has ") && past.err.contains(" steps (0 … "), qPrintable(past.err));
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
        // A project is not a plan: said so, the file named once.
        const QString project = QString::fromLocal8Bit(qgetenv("TAPESTRY_SOURCE_DIR")) + "/projects/mlp.tapestry.json";
        r = cli({"launch", project});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err == "tapestry: " + project + ": format: expected \"tapestry-plan\", the file says "
                                                   "\"tapestry-project\" (a project file: `tapestry plan PROJECT -o "
                                                   "FILE` makes a plan of it)",
                 qPrintable(r.err));
        r = cli({"launch", plan, "--backend", "gpu"});
        QCOMPARE(r.code, 2);
        r = cli({"launch", plan, "--inputs", dir.filePath("nowhere")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("nowhere"), qPrintable(r.err));
        // A plan of a graph too large (rows 2^32): refused before its inputs are
        // made (they were, and the allocation aborted the process).
        const QString huge = dir.filePath("huge.tapestry.json");
        QVERIFY(tapestry::test::write_huge_mlp(huge, qint64{1} << 32));
        const QString huge_plan = dir.filePath("huge.plan.json");
        r = cli({"plan", huge, "--target", "h100", "--devices", "2", "--baseline", "dp", "-o", huge_plan});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli({"launch", huge_plan});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("not launched: device 0:0 needs") && r.err.contains("more than the"), qPrintable(r.err));
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
        // Launched again: the same plan's second launch, not a second copy of the plan.
        QVERIFY2(again.code == 0 && again.out.contains("as launch 2 of plan 1"), qPrintable(again.out + again.err));
        const auto list = cli({"session", "list", session});
        QVERIFY2(list.out.contains("mlp (launched plans)"), qPrintable(list.out + list.err));
        QVERIFY2(list.out.contains(", 1 plan (2 launches)"), qPrintable(list.out));

        // The launches read back: newest first, each with its measured wall and output check.
        const auto launches = cli({"session", "launches", session});
        QVERIFY2(launches.code == 0, qPrintable(launches.err));
        QVERIFY2(launches.out.contains(": 1 plan, 2 launches"), qPrintable(launches.out));
        QVERIFY2(launches.out.contains("plan 1 of 'mlp (launched plans)': h100-sxm × 2"), qPrintable(launches.out));
        QVERIFY2(launches.out.contains("(prediction)"), qPrintable(launches.out));
        QVERIFY2(launches.out.indexOf(QRegularExpression("\\n +2 +\\S+Z +cpu +ok +[0-9.]+ [mµ]?s +PASS\\n +1 ")) > 0,
                 qPrintable(launches.out));
        const auto json = cli({"session", "launches", session, "mlp (launched plans)", "--json"});
        QVERIFY2(json.code == 0, qPrintable(json.err));
        const QJsonArray plans = QJsonDocument::fromJson(json.out.toUtf8()).object()["plans"].toArray();
        QCOMPARE(plans.size(), 1);
        const QJsonArray kept_launches = plans[0].toObject()["launches"].toArray();
        QCOMPARE(kept_launches.size(), 2);
        for (const QJsonValue &l : kept_launches) {
            const QJsonObject o = l.toObject();
            QCOMPARE(o["status"].toString(), QString("ok"));
            // Its real start and end, not twice the time it was recorded.
            const QDateTime started = QDateTime::fromString(o["started_at"].toString(), Qt::ISODateWithMs);
            const QDateTime finished = QDateTime::fromString(o["finished_at"].toString(), Qt::ISODateWithMs);
            QVERIFY2(started.isValid() && finished.isValid(), qPrintable(o["started_at"].toString()));
            const double wall = o["measurements"].toObject()["wall_seconds"].toDouble();
            QVERIFY(wall > 0);
            QVERIFY2(started.msecsTo(finished) >= static_cast<qint64>(wall * 1000) - 2,
                     qPrintable(o["started_at"].toString() + " " + o["finished_at"].toString()));
        }
        // A plan written back from the session is the plan file launched.
        const QString back = dir.filePath("back.plan.json");
        const auto written = cli({"session", "launches", session, "--plan", "1", "-o", back});
        QVERIFY2(written.code == 0 && written.out.contains("plan 1 written to"), qPrintable(written.out + written.err));
        QFile a(plan), b(back);
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QCOMPARE(b.readAll(), a.readAll());
        const auto missing = cli({"session", "launches", session, "--plan", "9"});
        QCOMPARE(missing.code, 1);
        QVERIFY2(missing.err.contains("no plan 9"), qPrintable(missing.err));
        const auto unnamed = cli({"session", "launches", session, "-o", back});
        QCOMPARE(unnamed.code, 2);
        QVERIFY2(unnamed.err.contains("--output: needs --plan"), qPrintable(unnamed.err));
    }

    // A session the launch could not be kept in is refused before anything runs
    // (not after the run, losing what it measured), naming the session; the file
    // is left as it was. So are calibrate, plan and optimize (which read it and may
    // keep a host measurement there), under --session, not --target. An empty file
    // is a new session, as a missing one is.
    void refusesAnUnusableSessionBeforeRunning() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "2", "--baseline", "tp"});
        QVERIFY(QDir(dir.path()).mkdir("folder"));
        const QString damaged = dir.filePath("damaged.tapestry-session");
        {
            QFile f(damaged);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("not a session\n");
        }
        const struct {
            QString session, said;
        } cases[] = {
            {dir.filePath("folder"), "--session: session " + dir.filePath("folder") + " is a folder, not a session file"},
            {damaged, "--session: session " + damaged + " is damaged or not a Tapestry session"},
            {dir.filePath("nowhere/x.tapestry-session"), "the folder " + dir.filePath("nowhere") + " does not exist"},
        };
        for (const auto &c : cases) {
            const auto r = cli({"launch", plan, "--session", c.session});
            QCOMPARE(r.code, 1);
            QVERIFY2(r.err.contains(c.said), qPrintable(r.err));
            QVERIFY2(!r.out.contains("measured:"), qPrintable(r.out));  // nothing ran
            for (const QStringList &other :
                 {QStringList{"calibrate", example_project("mlp"), "--devices", "1"},
                  QStringList{"plan", example_project("mlp"), "--target", "h100", "--devices", "2"},
                  QStringList{"optimize", example_project("mlp"), "--target", "h100", "--devices", "2", "--evaluations", "5"}}) {
                const auto o = cli(other + QStringList{"--session", c.session});
                QCOMPARE(o.code, 1);
                QVERIFY2(o.err.contains(c.said) && o.err.startsWith("tapestry: --session: "), qPrintable(other.join(' ') + ": " + o.err));
            }
        }
        QFile left(damaged);
        QVERIFY(left.open(QIODevice::ReadOnly));
        QCOMPARE(left.readAll(), QByteArray("not a session\n"));
        const QString empty = dir.filePath("empty.tapestry-session");
        {
            QFile f(empty);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        const auto r = cli({"launch", plan, "--session", empty});
        QVERIFY2(r.code == 0 && r.out.contains("as launch 1 of plan 1"), qPrintable(r.out + r.err));
    }

    // Ctrl-C ends the launch under way and fits what ran before it, said so.
    void calibrateStopsOnInterrupt() {
        QProcess p;
        p.start(tapestry::test::cli_path(), {"calibrate", example_project("gpt2_block"), example_project("mlp"), "--devices",
                                   "1,2,4", "--json"});
        QVERIFY(p.waitForStarted());
        QTest::qWait(8000);
        QCOMPARE(p.state(), QProcess::Running);  // 30 plans: tens of seconds here
        QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
        QVERIFY2(p.waitForFinished(120000), "calibrate did not stop on SIGINT");
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        const QJsonObject j = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        QVERIFY(j["interrupted"].toBool());
        const int launched = j["plans_launched"].toInt();
        QVERIFY(launched < 30);
        QVERIFY(j["failed"].toArray().isEmpty());  // the stopped launch is not a failure
        // What ran is fitted (exit 0); none ran when the host measurement was not done yet (exit 1).
        QCOMPARE(p.exitCode(), launched > 0 ? 0 : 1);
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
        // The table has each band's row and rows per kernel and thread count: the
        // attention example's linears ran on 2 threads (one device) and on 1 (two).
        bool band_row = false, linear_on_1 = false, linear_on_2 = false;
        for (const QJsonValue &v : j["table"].toArray()) {
            const QJsonObject row = v.toObject();
            if (row["kernel"].toString().isEmpty() && row["threads"].toInt() == -1) {
                band_row = true;
                QVERIFY(row["counts"].toBool());
            }
            if (row["kernel"].toString() == "linear") {
                linear_on_1 = linear_on_1 || row["threads"].toInt() == 1;
                linear_on_2 = linear_on_2 || row["threads"].toInt() == 2;
                QCOMPARE(row["counts"].toBool(), row["samples"].toInt() >= 3);
            }
        }
        QVERIFY2(band_row && linear_on_1 && linear_on_2, qPrintable(r.out));
        // The plan command predicts from what the launches measured.
        const QString plan = dir.filePath("host.plan.json");
        const auto p = cli({"plan", example_project("attention"), "--target", "host", "--devices", "2", "--session", session,
                            "-o", plan});
        QVERIFY2(p.code == 0, qPrintable(p.err + p.out));
        QVERIFY2(p.out.contains(QString("calibration: %1 measurements on host").arg(points)), qPrintable(p.out));
        // A host plan launched here was predicted for this machine: the report does
        // not say otherwise (a plan for H100s does: textReportAndOutputs).
        const auto l = cli({"launch", plan});
        QVERIFY2(l.code == 0, qPrintable(l.err + l.out));
        QVERIFY2(l.out.contains("(prediction for target host)\n"), qPrintable(l.out));
        QVERIFY2(!l.out.contains("not this machine"), qPrintable(l.out));
        // Only the host can be calibrated here.
        const auto h = cli({"calibrate", example_project("attention"), "--target", "h100"});
        QCOMPARE(h.code, 2);
        QVERIFY2(h.err.contains("the cpu backend measures the host only"), qPrintable(h.err));
    }

    // In-sample, each band holds ratios 2, 2, 4, 2 per step: factor 2 (the median);
    // errors |p − 2p|/2p = 0.5 thrice and |p − 4p|/4p = 0.75 once before (median
    // 0.5), 0, 0, 0.5, 0 after (median 0). Held out, e1 alone: 0.75 before,
    // |2p − 4p|/4p = 0.5 after, and both orders agree with the measured one (τ 1).
    void calibrateFromADeviceRun() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, kFourCases);
        const auto r = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["target"].toString(), QString("h200"));
        QCOMPARE(j["gpu"].toString(), QString("NVIDIA H200"));
        QCOMPARE(j["cases_used"].toInt(), 4);
        int measured_steps = 0;  // kernels and copies: what calibration counts
        for (const QJsonValue &s : run.steps)
            measured_steps += s.toObject()["kind"].toString() == "kernel" || s.toObject()["kind"].toString() == "copy";
        QVERIFY(measured_steps >= 10);
        const QJsonObject in = j["steps"].toObject()["in_sample"].toObject();
        QCOMPARE(in["count"].toInt(), 4 * measured_steps);
        QVERIFY(std::abs(in["median_error_uncalibrated"].toDouble() - 0.5) < 1e-5);
        QVERIFY(std::abs(in["median_error_calibrated"].toDouble()) < 1e-5);
        const QJsonObject out = j["steps"].toObject()["held_out"].toObject();
        QCOMPARE(out["count"].toInt(), measured_steps);
        QCOMPARE(out["cases"].toInt(), 1);
        QCOMPARE(out["fitted_on"].toObject()["cases"].toInt(), 3);
        QVERIFY(std::abs(out["median_error_uncalibrated"].toDouble() - 0.75) < 1e-5);
        QVERIFY(std::abs(out["median_error_calibrated"].toDouble() - 0.5) < 1e-5);
        QVERIFY2(std::abs(out["kendall_tau_uncalibrated"].toDouble() - 1) < 1e-9, qPrintable(r.out));
        QVERIFY2(std::abs(out["kendall_tau_calibrated"].toDouble() - 1) < 1e-9, qPrintable(r.out));
        QCOMPARE(j["plans"].toObject()["in_sample"].toObject()["count"].toInt(), 3);  // the example cases
        QCOMPARE(j["plans"].toObject()["held_out"].toObject()["count"].toInt(), 1);
        const QJsonArray table = j["table"].toArray();
        QVERIFY(!table.isEmpty());
        for (const QJsonValue &row : table)
            QVERIFY2(std::abs(row.toObject()["factor"].toDouble() - 2) < 1e-5, qPrintable(r.out));

        const auto text = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack});
        QVERIFY2(text.code == 0, qPrintable(text.err + text.out));
        QVERIFY2(text.out.contains("calibrate: target h200 from " + run.results + " (NVIDIA H200)"), qPrintable(text.out));
        QVERIFY2(text.out.contains(QString("in-sample: fitted on all %1 measurements, judged on the same: 50% "
                                           "uncalibrated → 0% calibrated").arg(4 * measured_steps)),
                 qPrintable(text.out));
        QVERIFY2(text.out.contains("judged on the odd-numbered example cases (1 case, ") &&
                     text.out.contains("75% uncalibrated → 50% calibrated, Kendall τ 1.00 → 1.00"),
                 qPrintable(text.out));
        QVERIFY2(text.out.contains("class") && text.out.contains("measured / predicted") && text.out.contains("2.00"),
                 qPrintable(text.out));
    }

    // The points are kept for target h200, and `tapestry plan` predicts from them.
    void calibrateFromADeviceRunKeepsThePoints() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, kFourCases);
        const QString session = dir.filePath("h200.tapestry-session");
        const auto r = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--session", session, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(j["not_kept"].toArray().isEmpty());
        const int points = j["steps"].toObject()["in_sample"].toObject()["count"].toInt();
        const auto p = cli({"plan", example_project("mlp"), "--target", "h200", "--devices", "2", "--session", session});
        QVERIFY2(p.code == 0, qPrintable(p.err + p.out));
        QVERIFY2(p.out.contains(QString("calibration: %1 measurements on h200").arg(points)), qPrintable(p.out));
    }

    // A benchmark record (bench/results.jsonl, given as a second --gpu-results) is
    // judged by the fit on every case and never fitted: its steps took 2 × the
    // prediction, as the cases', so the fit's factor 2 predicts them exactly.
    void calibrateJudgesTheBenchmarkPlans() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, {{"k0", "kernel", 2}, {"e0", "example", 2}});
        add_timed_plans(run, "benchmarks", {"b0"});
        const QString bench_file = dir.filePath("bench.jsonl");
        tapestry::test::write_bytes(bench_file, jsonl({kH200Environment, timed_record(run, "b0", "benchmark")}));

        const auto r = cli({"calibrate", "--gpu-results", run.results, "--gpu-results", bench_file, "--pack", run.pack,
                            "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["cases_used"].toInt(), 2);  // the benchmark is not fitted
        const QJsonObject in = j["steps"].toObject()["in_sample"].toObject();
        const QJsonObject b = j["steps"].toObject()["benchmarks"].toObject();
        QCOMPARE(b["count"].toInt(), in["count"].toInt() / 2);  // one plan's steps against two cases'
        QVERIFY2(std::abs(b["median_error_uncalibrated"].toDouble() - 0.5) < 1e-5, qPrintable(r.out));
        QVERIFY2(std::abs(b["median_error_calibrated"].toDouble()) < 1e-5, qPrintable(r.out));
        QCOMPARE(j["plans"].toObject()["benchmarks"].toObject()["count"].toInt(), 1);

        const auto text = cli({"calibrate", "--gpu-results", run.results, "--gpu-results", bench_file, "--pack", run.pack});
        QVERIFY2(text.code == 0, qPrintable(text.err + text.out));
        QVERIFY2(text.out.contains("benchmarks: fitted on every case, judged on the benchmark plans' steps (1 plan, ") &&
                     text.out.contains("never fitted): 50% uncalibrated → 0% calibrated"),
                 qPrintable(text.out));

        // The same benchmark twice is refused, naming where it was first.
        const auto twice = cli({"calibrate", "--gpu-results", run.results, "--gpu-results", bench_file, "--gpu-results",
                                bench_file, "--pack", run.pack});
        QCOMPARE(twice.code, 1);
        QVERIFY2(twice.err.contains("bench.jsonl:2: benchmark 'b0' again (") && twice.err.contains("bench.jsonl:2)"),
                 qPrintable(twice.err));
    }

    // A "size" record (one op of a benchmark alone at its size, tapestry-gpu-pack's
    // "sizes") is timed like a benchmark — no "ok", its median — but fitted: it
    // counts among the cases used and the in-sample points, and the benchmark line
    // says its ops' sizes were fitted from it. One that failed on the device is
    // not used.
    void calibrateFitsTheSingleOpCasesOfTheBenchmarkSizes() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, {{"k0", "kernel", 2}, {"e0", "example", 2}});
        add_timed_plans(run, "benchmarks", {"b0"});
        add_timed_plans(run, "sizes", {"s0", "s1"});
        QJsonObject failed{{"record", "size"}, {"name", "s1"}, {"error", "out of memory"}};
        // s0 with its every gated run: three measurements of each of its steps.
        QJsonObject s0 = timed_record(run, "s0", "size");
        s0["steps_runs"] = QJsonArray{s0["steps"], s0["steps"], s0["steps"]};
        const QString bench_file = dir.filePath("bench.jsonl");
        tapestry::test::write_bytes(bench_file, jsonl({kH200Environment, timed_record(run, "b0", "benchmark"), s0, failed}));
        const auto r = cli({"calibrate", "--gpu-results", run.results, "--gpu-results", bench_file, "--pack", run.pack,
                            "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["cases_used"].toInt(), 3);  // k0, e0 and s0; the benchmark is not fitted
        QCOMPARE(j["size_cases"].toInt(), 1);
        QCOMPARE(j["failed_on_device"].toArray().size(), 1);
        QCOMPARE(j["failed_on_device"].toArray()[0].toString(), QString("s1"));
        const QJsonObject in = j["steps"].toObject()["in_sample"].toObject();
        const QJsonObject b = j["steps"].toObject()["benchmarks"].toObject();
        QCOMPARE(b["count"].toInt(), in["count"].toInt() / 5);  // k0's, e0's and s0's three runs' steps, one benchmark's
        const auto text = cli({"calibrate", "--gpu-results", run.results, "--gpu-results", bench_file, "--pack", run.pack});
        QVERIFY2(text.code == 0, qPrintable(text.err + text.out));
        QVERIFY2(text.out.contains("held-out:  fitted on the kernel cases, the size cases and the even-numbered example") &&
                     text.out.contains("never fitted; their ops' sizes fitted from 1 single-op case launched apart)"),
                 qPrintable(text.out));
    }

    // --worst N lists the held-out steps the fit misses most: here every step of e1
    // (measured at 4× the prediction; the fit's factor 2 leaves it 50 % short).
    void calibrateListsTheWorstHeldOutSteps() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, kFourCases);
        const auto r = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--worst", "2", "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonArray worst = QJsonDocument::fromJson(r.out.toUtf8()).object()["worst_held_out"].toArray();
        QCOMPARE(worst.size(), 2);
        for (const QJsonValue &v : worst) {
            const QJsonObject m = v.toObject();
            QCOMPARE(m["case"].toString(), QString("e1"));
            QVERIFY(std::abs(m["calibrated_s"].toDouble() - 2 * m["predicted_s"].toDouble()) < 1e-6 * m["predicted_s"].toDouble());
            QVERIFY(std::abs(m["measured_s"].toDouble() / m["calibrated_s"].toDouble() - 2) < 1e-2);
        }
        const auto text = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--worst", "2"});
        QVERIFY2(text.code == 0 && text.out.contains("the 2 held-out steps the fit misses most") &&
                     text.out.contains("    e1  ") && text.out.contains("(−50%)"),
                 qPrintable(text.out + text.err));
        const auto alone = cli({"calibrate", example_project("mlp"), "--worst", "2"});
        QCOMPARE(alone.code, 2);  // --worst needs --gpu-results
    }

    // A plan of more devices than the machine's GPUs ran on virtual devices sharing
    // one: its steps contend for the GPU and measure none of the target's devices —
    // not used, and said so.
    void calibrateLeavesOutPlansOnSharedGpus() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, kFourCases);
        QList<QJsonObject> lines;
        QFile f(run.results);
        QVERIFY(f.open(QIODevice::ReadOnly));
        for (const QByteArray &l : f.readAll().split('\n'))
            if (!l.isEmpty()) lines.append(QJsonDocument::fromJson(l).object());
        lines[0]["gpus"] = QJsonArray{kH200};
        tapestry::test::write_bytes(run.results, jsonl(lines));
        const auto r = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no passing case to calibrate from: 4 cases of more devices than the 1 GPU ran as "
                                "virtual devices sharing it"),
                 qPrintable(r.err));
    }

    // A pack made for h200 that an H100 ran calibrates h100-sxm when --target says
    // so: the same steps, predicted again by the H100's model.
    void calibrateRetargetsAPackToTheGpuThatRanIt() {
        QTemporaryDir dir;
        const DeviceRun run = made_up_device_run(dir, kFourCases);
        QFile rf(run.results);
        QVERIFY(rf.open(QIODevice::ReadOnly));
        QByteArray bytes = rf.readAll();
        rf.close();
        bytes.replace("\"NVIDIA H200\"", "\"NVIDIA H100 80GB HBM3\"");
        tapestry::test::write_bytes(run.results, bytes);

        const auto refused = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack});
        QCOMPARE(refused.code, 1);
        QVERIFY2(refused.err.contains("but NVIDIA H100 80GB HBM3 ran it: that measures nothing about the target "
                                      "(--target names the GPU's own target)"),
                 qPrintable(refused.err));

        const auto r = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--target", "h100", "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["target"].toString(), QString("h100-sxm"));
        QCOMPARE(j["cases_used"].toInt(), 4);
        // Each band's factor is fitted against h100-sxm's predictions of the steps;
        // the in-sample cases (each step 2× h200's prediction in three of them) are
        // then met exactly at the median.
        const QJsonObject in = j["steps"].toObject()["in_sample"].toObject();
        QVERIFY2(std::abs(in["median_error_calibrated"].toDouble()) < 1e-5, qPrintable(r.out));
        // Kept in a session, the points are h100-sxm's.
        const QString session = dir.filePath("h100.tapestry-session");
        const auto kept = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--target", "h100",
                               "--session", session});
        QVERIFY2(kept.code == 0, qPrintable(kept.err + kept.out));
        const auto p = cli({"plan", example_project("mlp"), "--target", "h100", "--devices", "2", "--session", session});
        QVERIFY2(p.code == 0, qPrintable(p.err + p.out));
        QVERIFY2(p.out.contains(QString("calibration: %1 measurements on h100-sxm").arg(in["count"].toInt())),
                 qPrintable(p.out));

        const auto host = cli({"calibrate", "--gpu-results", run.results, "--pack", run.pack, "--target", "host"});
        QCOMPARE(host.code, 2);
        QVERIFY2(host.err.contains("--target host: not a GPU target: a device run calibrates a GPU target"),
                 qPrintable(host.err));
    }

    void calibrateFromADeviceRunRefusesBadInput_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("malformed line") << "malformed" << 1 << "results.jsonl:4: not a JSON object";
        QTest::newRow("missing plan") << "missing plan" << 1
                                      << "results.jsonl:2: case 'k0': its plan: " + run_dir_marker + "cases/mlp.2dev.plan.json: cannot open";
        QTest::newRow("case of another pack") << "unknown case" << 1
                                              << "results.jsonl:2: case 'x9' is not in ";
        QTest::newRow("steps of another pack") << "fewer steps" << 1
                                               << "results.jsonl:2: case 'k0' has 3 steps, its plan ";
        QTest::newRow("another GPU") << "h100" << 1
                                     << "results.jsonl:2: case 'k0' is a plan for target 'h200', but NVIDIA H100 80GB "
                                        "HBM3 ran it: that measures nothing about the target";
        QTest::newRow("unreadable") << "unreadable" << 1 << "nowhere.jsonl: cannot be read";
        QTest::newRow("no pack") << "no pack" << 2 << "--gpu-results requires --pack";
        QTest::newRow("projects too") << "projects too" << 2 << "excludes";
    }
    void calibrateFromADeviceRunRefusesBadInput() {
        QFETCH(QString, what);
        QFETCH(int, code);
        QFETCH(QString, message);
        QTemporaryDir dir;
        DeviceRun run = made_up_device_run(dir, {{"k0", "kernel", 2}, {"e0", "example", 2}});
        QList<QJsonObject> lines{kH200Environment, results_line_of({"k0", "kernel", 2}, run.steps),
                                 results_line_of({"e0", "example", 2}, run.steps)};
        QStringList args{"calibrate", "--gpu-results", run.results, "--pack", run.pack};
        QByteArray bytes = jsonl(lines);
        if (what == "malformed") {
            bytes += "{\"record\": \"case\", \"name\": \n";
        } else if (what == "missing plan") {
            QFile::remove(run.plan);
        } else if (what == "unknown case") {
            lines[1]["name"] = "x9";
            bytes = jsonl(lines);
        } else if (what == "fewer steps") {
            QJsonObject c = lines[1];
            QJsonArray steps = c["steps"].toArray();
            while (steps.size() > 3) steps.removeLast();
            c["steps"] = steps;
            lines[1] = c;
            bytes = jsonl(lines);
        } else if (what == "h100") {
            QJsonObject env = kH200Environment;
            const QJsonObject h100{{"name", "NVIDIA H100 80GB HBM3"}, {"memory_bytes", 85e9}, {"cc", "9.0"}};
            env["gpus"] = QJsonArray{h100, h100};
            lines[0] = env;
            bytes = jsonl(lines);
        } else if (what == "unreadable") {
            args[2] = dir.filePath("nowhere.jsonl");
        } else if (what == "no pack") {
            args = QStringList{"calibrate", "--gpu-results", run.results};
        } else if (what == "projects too") {
            args.insert(1, example_project("mlp"));
        }
        tapestry::test::write_bytes(run.results, bytes);
        const auto r = cli(args);
        QCOMPARE(r.code, code);
        for (const QString &part : message.split(run_dir_marker)) QVERIFY2(r.err.contains(part), qPrintable(r.err));
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
        // A build with the cuda backend names the NCCL its transfers between GPUs use, or why none.
        if (!j["not_built"].toArray().contains(QJsonValue("cuda"))) {
            const QString nccl = j["nccl"].toString();
            QVERIFY2(QRegularExpression("^2\\.\\d+\\.\\d+$").match(nccl).hasMatch() || nccl.contains("no NCCL"),
                     qPrintable(nccl));
        }
    }

    void launchRefusesAnUnknownTransport() {
        const auto r = cli({"launch", "no.plan.json", "--backend", "cuda", "--transport", "carrier-pigeon"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--transport"), qPrintable(r.err));
    }

    // The cuda backend's settings given with another backend are refused, not ignored.
    void cudaSettingsWithTheCpuBackendAreRefused() {
        auto r = cli({"launch", "no.plan.json", "--transport", "nccl"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("--transport applies to --backend cuda, not --backend cpu"), qPrintable(r.err));
        r = cli({"launch", "no.plan.json", "--tf32"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("--tf32 applies to --backend cuda"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCliLaunch)
#include "test_cli_launch.moc"
