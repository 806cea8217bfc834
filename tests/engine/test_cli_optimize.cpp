// `tapestry optimize` (docs/cli.md, docs/search.md): the real binary
// ($TAPESTRY_CLI) searching the MLP example's front on 4 H100s under an
// evaluation budget — the summary (front certified, baselines beside it and
// covered), --json, the front exported as JSON and CSV, a front plan exported,
// read back and certified, the same seed giving the same front, and the exit
// codes of bad command lines.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <csignal>
#include <sys/types.h>

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

// A search whose front is numerically checked (--check): every front plan's stage
// run on the CPU executor and the oracle. Under the sanitizers the GPT-2 block's
// eleven front plans take a minute alone and over two beside another suite, past
// cli()'s two minutes; six still tell a hang.
test::CliResult checked(const QStringList &args) {
    return run_cli(test::cli_path(), args, {}, 360000);
}

const QStringList kSearch = {"--target", "h100", "--devices", "4", "--evaluations", "150", "--budget", "0", "--seed", "2"};

}  // namespace

class TestCliOptimize : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (test::cli_path().isEmpty() || qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR"))
            QSKIP("TAPESTRY_CLI and TAPESTRY_SOURCE_DIR are set by CTest");
    }

    void summaryFrontAndBaselines() {
        const auto r = cli(QStringList{"optimize", project("mlp")} + kSearch);
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QVERIFY2(r.out.contains("150 plans evaluated"), qPrintable(r.out));
        QVERIFY(r.out.contains("front (predictions; every plan certified)"));
        QVERIFY(r.out.contains("hand baselines (same compiler and model)"));
        for (const char *b : {"dp ", "tp ", "pp ", "dp×tp"}) QVERIFY2(r.out.contains(b), b);
        QVERIFY(!r.out.contains("not covered"));
        // Energy as an objective: its column, in joules (a prediction at the power limit).
        const auto e = cli(QStringList{"optimize", project("mlp"), "--objectives", "time,energy"} + kSearch);
        QVERIFY2(e.code == 0, qPrintable(e.err + e.out));
        QVERIFY2(e.out.contains("energy") && e.out.contains(" mJ"), qPrintable(e.out));
        QVERIFY(!r.out.contains("no plan found keeps the constraints"));
    }
    // A cap no plan keeps: the front is of the least violating plans, and the
    // summary says so before the table, each row naming its excess.
    // Ctrl-C stops the search where it is: the front found so far is certified and
    // reported, exit 0 — a minutes-long search is not lost to an impatient key.
    void interruptReportsTheFrontSoFar() {
        QProcess p;
        p.start(test::cli_path(), {"optimize", test::example_project("gpt2_block"), "--devices", "8", "--budget", "300s",
                                   "--stall", "0"});
        QVERIFY(p.waitForStarted());
        QTest::qWait(3000);  // past loading: the handler is in place from the command's start
        QCOMPARE(p.state(), QProcess::Running);
        QElapsedTimer clock;
        clock.start();
        QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
        QVERIFY2(p.waitForFinished(60000), "the search did not stop on SIGINT");
        QVERIFY2(clock.elapsed() < 30000, qPrintable(QString::number(clock.elapsed())));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
        QVERIFY2(out.contains("stopped: interrupted (Ctrl-C)"), qPrintable(out));
        QVERIFY2(out.contains(QRegularExpression("front \\(predictions; every plan certified\\): [1-9][0-9]* plans?")),
                 qPrintable(out));
    }

    void noFeasiblePlanIsSaid() {
        const auto r = cli(QStringList{"optimize", project("mlp"), "--memory-cap", "1B"} + kSearch);
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        const qsizetype said = r.out.indexOf("no plan found keeps the constraints: every plan below exceeds them");
        QVERIFY2(said > 0, qPrintable(r.out));
        QVERIFY2(said < r.out.indexOf("step time"), qPrintable(r.out));
        QVERIFY2(r.out.contains("> cap 1 B)"), qPrintable(r.out));
    }
    // --check runs every front plan's stage on the CPU against the unsharded graph
    // and the oracle: each row says PASS with its error and tolerance, and the JSON
    // carries the same per plan.
    void numericCheckOfTheFront() {
        const QStringList args = QStringList{"optimize", project("mlp"), "--target", "h100", "--devices", "2",
                                             "--evaluations", "40", "--budget", "0", "--check"};
        auto r = cli(args);
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QVERIFY2(r.out.contains("every plan certified, and numerically checked on the CPU"), qPrintable(r.out));
        QVERIFY(r.out.contains("numeric check"));
        QVERIFY2(r.out.contains("PASS (|Δ| ≤ "), qPrintable(r.out));
        QVERIFY(!r.out.contains("FAIL"));
        r = cli(args + QStringList{"--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray front = QJsonDocument::fromJson(r.out.toUtf8()).object()["front"].toArray();
        QVERIFY(!front.isEmpty());
        for (const QJsonValue &p : front)
            QVERIFY2(p.toObject()["numeric_check"].toString().startsWith("PASS"), qPrintable(r.out));
    }
    void jsonExportsAndDeterminism() {
        QTemporaryDir dir;
        const QString json_front = dir.filePath("front.json"), csv_front = dir.filePath("front.csv"),
                      plan_file = dir.filePath("best.plan.json");
        auto r = cli(QStringList{"optimize", project("mlp")} + kSearch +
                     QStringList{"--json", "--export-front", json_front, "--export-plan", "0", plan_file});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["evaluations"].toInt(), 150);
        QCOMPARE(j["certificate_failures"].toInt(), 0);
        QVERIFY(j["label"].toString().contains("not measurements"));
        const QJsonArray front = j["front"].toArray();
        QVERIFY(front.size() >= 3);
        for (const QJsonValue &b : j["baselines"].toArray()) QVERIFY(b.toObject()["covered_by"].toInt() >= 0);
        // The exported front is the printed one.
        QFile f(json_front);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject exported = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(exported["format"].toString(), QString("tapestry-front"));
        QCOMPARE(exported["front"].toArray().size(), front.size());
        QCOMPARE(exported["front"].toArray()[0].toObject()["plan"].toString(), front[0].toObject()["plan"].toString());
        // Plan 0 is a plan file that loads and certifies.
        auto p = plan::load_plan(plan_file.toStdString());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        QVERIFY(plan::certify_plan(*p).pass());
        QCOMPARE(p->devices.size(), size_t{4});
        // CSV: a header and one row per front plan; the same seed, the same front.
        r = cli(QStringList{"optimize", project("mlp")} + kSearch + QStringList{"--threads", "1", "--export-front", csv_front});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile c(csv_front);
        QVERIFY(c.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(c.readAll()).trimmed().split('\n');
        QCOMPARE(lines.front(), QString("index,makespan_seconds,peak_bytes,devices,communication_bytes,energy_joules,feasible,plan"));
        QCOMPARE(lines.size() - 1, front.size());
        for (int i = 0; i < front.size(); ++i)
            QVERIFY2(lines[i + 1].contains(front[i].toObject()["plan"].toString().replace(',', ';')), qPrintable(lines[i + 1]));
    }
    // --maps: candidates may place an op's pieces from a device of their own. On the
    // attention example (independent q, k, v branches) mapped plans reach the front;
    // each is certified, numerically checked on the CPU, and exports as a plan that
    // loads and certifies. Without --maps no candidate has a map.
    void deviceMapsOnRequest() {
        QTemporaryDir dir;
        const QStringList search = {"optimize", project("attention"), "--target", "h100", "--devices", "4",
                                    "--evaluations", "300", "--budget", "0", "--seed", "3", "--json"};
        auto r = checked(search + QStringList{"--maps", "--check"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(j["maps"].toBool());
        const QJsonArray front = j["front"].toArray();
        int mapped = -1;
        for (int i = 0; i < front.size(); ++i) {
            const QJsonObject p = front[i].toObject();
            QVERIFY2(p["numeric_check"].toString().startsWith("PASS"), qPrintable(p["plan"].toString()));
            if (mapped < 0 && p["plan"].toString().contains(" from device ")) mapped = i;
        }
        QVERIFY2(mapped >= 0, qPrintable(r.out));
        const QString plan_file = dir.filePath("mapped.plan.json");
        r = cli(search + QStringList{"--maps", "--export-plan", QString::number(mapped), plan_file});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        auto p = plan::load_plan(plan_file.toStdString());
        QVERIFY2(p.has_value(), p ? "" : p.error().c_str());
        QVERIFY(plan::certify_plan(*p).pass());
        QVERIFY2(p->source.options.find(" from device ") != std::string::npos, p->source.options.c_str());
        r = cli(search);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(!j["maps"].toBool());
        for (const QJsonValue &v : j["front"].toArray()) QVERIFY(!v.toObject()["plan"].toString().contains(" from device "));
    }
    // Pipeline cuts are a choice of the search on request (--cuts): the run says so,
    // draws the `cut` mutator, and its front plans check out numerically; without
    // the flag no cut is drawn.
    void pipelineCutsOnRequest() {
        const QStringList search = {"optimize", project("gpt2_block"), "--target", "h100", "--devices", "4",
                                    "--evaluations", "300", "--budget", "0", "--seed", "3", "--json"};
        auto drew_cut = [](const QJsonObject &j) {
            for (const QJsonValue &m : j["mutators"].toArray())
                if (m.toObject()["mutator"].toString() == "cut") return m.toObject()["trials"].toInt() > 0;
            return false;
        };
        auto r = checked(search + QStringList{"--cuts", "--check"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(j["cuts"].toBool());
        QVERIFY(drew_cut(j));
        for (const QJsonValue &v : j["front"].toArray())
            QVERIFY2(v.toObject()["numeric_check"].toString().startsWith("PASS"), qPrintable(v.toObject()["plan"].toString()));
        r = cli(search);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(!j["cuts"].toBool());
        QVERIFY(!drew_cut(j));
        for (const QJsonValue &v : j["front"].toArray()) QVERIFY(!v.toObject()["plan"].toString().contains(" cut at "));
    }
    // --substitute: candidates may start from the expanded graph (attention made of
    // matmuls and a softmax); every front plan, substituted ones too, certified and
    // numerically checked; a substituted front plan exports as a plan file whose
    // stage options say so. Without the flag no candidate is substituted.
    void substitutionOnRequest() {
        QTemporaryDir dir;
        const QStringList search = {"optimize", project("attention"), "--target", "h100", "--devices", "8",
                                    "--evaluations", "1500", "--budget", "0", "--seed", "1", "--json"};
        auto r = checked(search + QStringList{"--substitute", "--check"});
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const QJsonArray lines = j["substitutions"].toArray();
        QCOMPARE(lines.size(), 2);
        QVERIFY2(lines[0].toString().startsWith("expand: attention-expand×1"), qPrintable(lines[0].toString()));
        QCOMPARE(lines[1].toString(), QStringLiteral("fuse: changes nothing (no choice added)"));
        int substituted = -1;
        const QJsonArray front = j["front"].toArray();
        for (int i = 0; i < front.size(); ++i) {
            const QJsonObject f = front[i].toObject();
            QVERIFY2(f["numeric_check"].toString().startsWith("PASS"), qPrintable(f["plan"].toString()));
            if (substituted < 0 && f["plan"].toString().endsWith("· substituted (expand)")) substituted = i;
        }
        QVERIFY2(substituted >= 0, "no substituted plan on the attention example's front");
        const QString out = dir.filePath("substituted.plan.json");
        r = cli(search + QStringList{"--substitute", "--export-plan", QString::number(substituted), out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject plan = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(plan["source"].toObject()["stage"].toInt(), 4);  // substitute, shard, fuse, place
        QVERIFY(plan["source"].toObject()["options"].toString().endsWith("· substituted (expand)"));
        r = cli(search);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(j["substitutions"].toArray().isEmpty());
        for (const QJsonValue &v : j["front"].toArray()) QVERIFY(!v.toObject()["plan"].toString().contains("substituted"));
    }
    // A session's measurements of the target calibrate the search's figures, its
    // front's and its baselines', the same way `tapestry plan --session` does: the
    // dp baseline beside the front is the plan's own calibrated prediction.
    void sessionCalibratesTheFigures() {
        QTemporaryDir dir;
        const QString path = dir.filePath("calibrated.tapestry-session");
        {
            auto s = store::Session::open(path.toStdString());
            QVERIFY(s.has_value());
            // Every gemm of the MLP's sizes measured at 2× its prediction.
            std::vector<store::CalibrationRow> rows;
            for (double size : {2e9, 3e9, 4e9, 2e10, 3e10, 4e10})
                rows.push_back({"gemm", size, 1e-3, 2e-3, std::nullopt, ""});
            QVERIFY((*s)->add_calibration("h100-sxm", rows));
        }
        const QStringList args = QStringList{"optimize", project("mlp")} + kSearch + QStringList{"--json"};
        auto plain = cli(args);
        auto calibrated = cli(args + QStringList{"--session", path});
        QVERIFY2(plain.code == 0 && calibrated.code == 0, qPrintable(plain.err + calibrated.err));
        const QJsonObject p = QJsonDocument::fromJson(plain.out.toUtf8()).object();
        const QJsonObject c = QJsonDocument::fromJson(calibrated.out.toUtf8()).object();
        QCOMPARE(p["calibration"].toObject()["samples"].toInt(), 0);
        QCOMPARE(c["calibration"].toObject()["samples"].toInt(), 6);
        QCOMPARE(c["calibration"].toObject()["median_error_calibrated"].toDouble(), 0.0);
        auto fastest = [](const QJsonObject &j) {
            double best = 1e30;
            for (const QJsonValue &f : j["front"].toArray())
                best = std::min(best, f.toObject()["figures"].toObject()["makespan_seconds"].toDouble());
            return best;
        };
        // The GEMMs are most of the MLP's step: calibrated, the fastest plan is slower.
        QVERIFY2(fastest(c) > 1.5 * fastest(p), qPrintable(QString("%1 vs %2").arg(fastest(c)).arg(fastest(p))));
        const auto dp_of = [](const QJsonObject &j) {
            for (const QJsonValue &b : j["baselines"].toArray())
                if (b.toObject()["baseline"].toString() == "dp") return b.toObject()["figures"].toObject()["makespan_seconds"].toDouble();
            return 0.0;
        };
        auto planned = cli({"plan", project("mlp"), "--target", "h100", "--devices", "4", "--baseline", "dp", "--session",
                            path, "--json"});
        QVERIFY2(planned.code == 0, qPrintable(planned.err));
        const double dp_plan = QJsonDocument::fromJson(planned.out.toUtf8()).object()["prediction"].toObject()["makespan_seconds"].toDouble();
        QVERIFY(dp_plan > 0);
        QCOMPARE(dp_of(c), dp_plan);
        QVERIFY(dp_of(p) < dp_plan);
        // The summary says so.
        auto text = cli(QStringList{"optimize", project("mlp")} + kSearch + QStringList{"--session", path});
        QVERIFY2(text.out.contains("calibration: 6 measurements on h100-sxm, median error 50% uncalibrated → 0% calibrated"),
                 qPrintable(text.out));
    }
    // --session keeps the search as the studio keeps its own: a run of the project
    // "<graph> (searches)", every candidate, its front; a second search of the same
    // file joins that project's one version. `session searches` lists the runs and
    // gives back the front the search printed.
    void sessionKeepsTheSearch() {
        QTemporaryDir dir;
        const QString session = dir.filePath("work.tapestry-session");
        auto r = cli(QStringList{"optimize", project("mlp")} + kSearch + QStringList{"--json", "--session", session});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const QJsonObject kept = j["session"].toObject();
        QCOMPARE(kept["project"].toString(), QString("mlp (searches)"));
        QCOMPARE(kept["search_run"].toInt(), 1);
        QVERIFY(kept["error"].isNull());
        QStringList printed;
        for (const QJsonValue &f : j["front"].toArray()) printed << f.toObject()["plan"].toString();
        printed.sort();

        r = cli({"optimize", project("mlp"), "--target", "h100", "--devices", "4", "--evaluations", "40", "--budget", "0",
                 "--session", session});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("kept in " + session + " as search run 2 of project 'mlp (searches)'"), qPrintable(r.out));
        r = cli({"session", "list", session, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray projects = QJsonDocument::fromJson(r.out.toUtf8()).object()["projects"].toArray();
        QCOMPARE(projects.size(), 1);
        QCOMPARE(projects[0].toObject()["versions"].toInt(), 1);
        QCOMPARE(projects[0].toObject()["searches"].toInt(), 2);

        r = cli({"session", "searches", session});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("2 search runs"), qPrintable(r.out));
        QVERIFY2(r.out.indexOf("search run 2 of 'mlp (searches)'") < r.out.indexOf("search run 1 of"), qPrintable(r.out));
        QVERIFY2(r.out.contains("h100-sxm, 4 devices, time · memory · devices, 150 evaluations, seed 2"), qPrintable(r.out));
        QVERIFY2(r.out.contains(QString::number(j["evaluations"].toInt() - j["invalid"].toInt()) + " plans kept"),
                 qPrintable(r.out));
        QVERIFY2(r.out.contains(QString::number(printed.size()) + " on the front"), qPrintable(r.out));

        const QString csv = dir.filePath("kept.csv");
        r = cli({"session", "searches", session, "--search", "1", "--json", "--export-front", csv});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray runs = QJsonDocument::fromJson(r.out.toUtf8()).object()["searches"].toArray();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].toObject()["status"].toString(), QString("finished"));
        QCOMPARE(runs[0].toObject()["settings"].toObject()["devices"].toInt(), 4);
        QStringList stored;
        for (const QJsonValue &f : runs[0].toObject()["front"].toArray()) stored << f.toObject()["plan"].toString();
        stored.sort();
        QCOMPARE(stored, printed);
        QFile c(csv);
        QVERIFY(c.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(c.readAll()).trimmed().split('\n').size() - 1, printed.size());

        r = cli({"session", "searches", session, "--search", "9"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no search run 9"), qPrintable(r.err));
        r = cli({"session", "searches", session, "--export-front", csv});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--export-front: needs --search"), qPrintable(r.err));
        r = cli({"session", "searches", session, "--search", "1", "--export-front", dir.filePath("front.txt")});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("is not a front file"), qPrintable(r.err));
    }

    // Re-planning after an edit: the MLP searched, one op's kind changed in the
    // file, and the edited file searched again from the first run's front
    // (--warm-start latest, or the run's number) — each front plan carried over
    // by op id; the refusals name the flag and why.
    void warmStartReplansAnEdit() {
        QTemporaryDir dir;
        const QString session = dir.filePath("work.tapestry-session");
        auto r = cli(QStringList{"optimize", project("mlp")} + kSearch + QStringList{"--json", "--session", session});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const int front = QJsonDocument::fromJson(r.out.toUtf8()).object()["front"].toArray().size();
        QVERIFY(front > 0);
        QFile original(project("mlp"));
        QVERIFY(original.open(QIODevice::ReadOnly));
        QString text = QString::fromUtf8(original.readAll());
        const qsizetype gelu = text.indexOf("\"kind\": \"gelu\"");
        QVERIFY(gelu >= 0);
        text.replace(gelu, 14, "\"kind\": \"relu\"");
        const QString edited = dir.filePath("mlp.tapestry.json");
        QFile out(edited);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(text.toUtf8());
        out.close();

        r = cli(QStringList{"optimize", edited} + kSearch + QStringList{"--session", session, "--warm-start", "latest"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString line = QString("warm start: %1 of the %1 plans on the front of search run 1").arg(front);
        QVERIFY2(r.out.contains(line), qPrintable(r.out));
        QVERIFY2(r.out.contains("as search run 2 of project 'mlp (searches)'"), qPrintable(r.out));
        r = cli({"session", "searches", session});  // the run says where it started
        QVERIFY2(r.out.contains("150 evaluations, from search run 1's front, seed 2"), qPrintable(r.out));
        r = cli(QStringList{"optimize", edited} + kSearch + QStringList{"--session", session, "--warm-start", "1", "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject warm = QJsonDocument::fromJson(r.out.toUtf8()).object()["warm_start"].toObject();
        QCOMPARE(warm["search_run"].toInt(), 1);
        QCOMPARE(warm["front"].toInt(), front);
        QCOMPARE(warm["carried"].toInt(), front);
        QCOMPARE(warm["dropped"].toInt(), 0);
        QCOMPARE(warm["merged"].toInt(), 0);
        r = cli(QStringList{"optimize", edited} + kSearch + QStringList{"--json"});
        QVERIFY(QJsonDocument::fromJson(r.out.toUtf8()).object()["warm_start"].isNull());

        // A refused warm start writes nothing: no version of a graph edited again.
        const auto versions = [](const QString &path) {
            auto s = store::Session::open(path.toStdString());
            if (!s) return -1;
            auto projects = (*s)->projects();
            if (!projects) return -1;
            int n = 0;
            for (const store::ProjectInfo &p : *projects) n += p.version_count;
            return n;
        };
        const int kept = versions(session);
        QVERIFY(kept > 0);
        text.replace("\"kind\": \"relu\"", "\"kind\": \"sigmoid\"");
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(text.toUtf8());
        out.close();

        r = cli(QStringList{"optimize", edited} + kSearch + QStringList{"--warm-start", "latest"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--warm-start: needs --session"), qPrintable(r.err));
        r = cli(QStringList{"optimize", edited} + kSearch + QStringList{"--session", session, "--warm-start", "9"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("--warm-start") && r.err.contains("no search run with id 9"), qPrintable(r.err));
        r = cli(QStringList{"optimize", edited} + kSearch + QStringList{"--session", session, "--warm-start", "first"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("expected a search run's number or 'latest', got 'first'"), qPrintable(r.err));
        r = cli(QStringList{"optimize", edited} + kSearch +
                QStringList{"--session", dir.filePath("empty.tapestry-session"), "--warm-start", "latest"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no search run of project 'mlp (searches)' to start from"), qPrintable(r.err));
        QCOMPARE(versions(session), kept);
        auto empty = store::Session::open(dir.filePath("empty.tapestry-session").toStdString());
        QVERIFY(empty.has_value());
        QVERIFY((*empty)->projects().value().empty());
    }

    // A project validation finds errors in is refused by every command that plans,
    // searches or rewrites it, with each error named (exit 1) — not searched into
    // plans whose certificates then fail as if the fault were ours.
    void invalidProjectsAreRefusedWithTheirErrors() {
        QTemporaryDir dir;
        QFile original(project("mlp"));
        QVERIFY(original.open(QIODevice::ReadOnly));
        QJsonObject p = QJsonDocument::fromJson(original.readAll()).object();
        QJsonArray ops = p["operations"].toArray();
        QJsonObject fc1 = ops[0].toObject();
        QCOMPARE(fc1["id"].toString(), QStringLiteral("fc1"));
        fc1["index_space"] = QJsonObject{{"start", QJsonArray{0, 0}}, {"end", QJsonArray{256, 4096}}};
        ops[0] = fc1;
        p["operations"] = ops;
        const QString invalid = dir.filePath("invalid.tapestry.json");
        QFile out(invalid);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(p).toJson());
        out.close();
        const QString mismatch = QStringLiteral(
            "error index-space-mismatch at $.operations[0].index_space (fc1): operation 'fc1' states index space "
            "[0:256, 0:4096] but linear derives [0:512, 0:4096]");
        for (const QStringList &args :
             {QStringList{"optimize", invalid} + kSearch, QStringList{"plan", invalid, "--target", "h100", "--devices", "4"},
              QStringList{"passes", invalid, "--shard", "fc1:0=2", "--out", dir.filePath("stages")}}) {
            const auto r = cli(args);
            QCOMPARE(r.code, 1);
            QVERIFY2(r.err.contains(mismatch), qPrintable(args.front() + ": " + r.err));
            QVERIFY2(!r.err.contains("internal error") && !r.err.contains("certificate"), qPrintable(r.err));
        }
    }

    // A valid graph too large for any device (rows 2^32: 20 TiB a device on 8) is
    // searched like any other — the figures say it exceeds the capacity. The CPU
    // matmul kernels the fusion pass asks about refuse its 2^32-row views by name:
    // oneDNN 2.6 divided by zero on them and ended the process.
    void aHugeValidGraphIsSearchedNotCrashedOn() {
        QTemporaryDir dir;
        const QString huge = dir.filePath("huge.tapestry.json");
        QVERIFY(test::write_huge_mlp(huge, qint64{1} << 32));
        const auto r = cli(QStringList{"optimize", huge, "--target", "h100", "--devices", "8", "--evaluations", "60",
                                       "--budget", "0", "--seed", "2"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("no plan found keeps the constraints") && r.out.contains("> cap 74.5 GiB"),
                 qPrintable(r.out));
    }

    void badCommandLines() {
        auto r = cli({"optimize", project("mlp"), "--objectives", "time,speed"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--objectives: unknown objective 'speed'"), qPrintable(r.err));
        r = cli({"optimize", project("mlp"), "--memory-cap", "80 furlongs"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--memory-cap: '80 furlongs' is not a size in bytes"), qPrintable(r.err));
        r = cli({"optimize", project("mlp"), "--budget", "soon"});
        QCOMPARE(r.code, 2);
        r = cli({"optimize", "/nonexistent.tapestry.json", "--evaluations", "5"});
        QCOMPARE(r.code, 1);
    }
};

QTEST_GUILESS_MAIN(TestCliOptimize)
#include "test_cli_optimize.moc"
