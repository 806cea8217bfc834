// The mpi backend under mpirun (issue 17, docs/launch.md; CTest label mpi): plans
// of the MLP and the GPT-2 block launched on 2 and 4 ranks (--oversubscribe on
// this 2-core machine) equal the reference; a rank killed mid-run is named by
// rank 0, the run ends within its timeout, and the session keeps the steps
// measured before. mpiexec comes from CMake ($TAPESTRY_MPIEXEC); as root the
// allow-run-as-root variables are set by CTest.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "cli_run.h"
#include "store/session.h"

using tapestry::test::cli;
using tapestry::test::example_project;
using tapestry::test::run_cli;

namespace {

QString mpiexec() { return qEnvironmentVariable("TAPESTRY_MPIEXEC"); }

QString make_plan(const QTemporaryDir &dir, const QString &example, const QStringList &how) {
    const QString out = dir.filePath(example + ".plan.json");
    const auto r = cli(QStringList{"plan", example_project(example.toUtf8().constData()), "-o", out} + how);
    if (r.code != 0) qFatal("tapestry plan: %s", qPrintable(r.err));
    return out;
}

// `mpirun -np N tapestry launch PLAN --backend mpi …`; rank 0 prints.
tapestry::test::CliResult mpirun(int ranks, const QStringList &launch_args, const QStringList &mpi_args = {},
                                 const QString &backend = "mpi") {
    QStringList args{"--oversubscribe", "-np", QString::number(ranks)};
    args += mpi_args;
    args += QStringList{tapestry::test::cli_path(), "launch"} + launch_args + QStringList{"--backend", backend};
    return run_cli(mpiexec(), args, {}, 180000);
}

}  // namespace

class TestMpiLaunch : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (mpiexec().isEmpty() || !QFileInfo(mpiexec()).isExecutable())
            QSKIP("no mpiexec: the mpi suite needs OpenMPI (openmpi-bin)");
        const auto d = cli({"devices"});
        if (!d.out.contains("mpi: built in")) QSKIP("this tapestry was built without the mpi backend");
    }

    void ranksEqualTheReference_data() {
        QTest::addColumn<QString>("example");
        QTest::addColumn<QStringList>("how");
        QTest::addColumn<int>("ranks");
        QTest::newRow("mlp tp on 2 devices, 2 ranks") << "mlp" << QStringList{"--devices", "2", "--baseline", "tp"} << 2;
        QTest::newRow("mlp dp×tp on 4 devices, 4 ranks") << "mlp" << QStringList{"--devices", "4", "--baseline", "dp×tp", "--tp", "2"} << 4;
        QTest::newRow("gpt2 tp on 4 devices, 2 ranks") << "gpt2_block" << QStringList{"--devices", "4", "--baseline", "tp"} << 2;
        QTest::newRow("gpt2 tp on 4 devices, 4 ranks") << "gpt2_block" << QStringList{"--devices", "4", "--baseline", "tp"} << 4;
        QTest::newRow("gpt2 pp on 2 devices, 2 ranks") << "gpt2_block" << QStringList{"--devices", "2", "--baseline", "pp"} << 2;
    }
    void ranksEqualTheReference() {
        QFETCH(QString, example);
        QFETCH(QStringList, how);
        QFETCH(int, ranks);
        QTemporaryDir dir;
        const QString plan = make_plan(dir, example, how);
        const auto r = mpirun(ranks, {plan, "--json", "--timeout", "60"});
        QVERIFY2(r.code == 0, qPrintable(QString("exit %1\n%2\n%3").arg(r.code).arg(r.out, r.err)));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY2(j["ok"].toBool(), qPrintable(r.out + r.err));
        QCOMPARE(j["backend"].toString(), QString("mpi"));
        QVERIFY(j["backend_description"].toString().contains(QString("rank 0 of %1").arg(ranks)));
        QVERIFY(j["equivalence"].toObject()["pass"].toBool());
        // Every step measured once (a step two ranks share counts once).
        const QJsonDocument planned = QJsonDocument::fromJson([&] {
            QFile f(plan);
            f.open(QIODevice::ReadOnly);
            return f.readAll();
        }());
        QCOMPARE(j["steps"].toArray().size(), planned.object()["steps"].toArray().size());
        if (how.contains("tp")) QVERIFY(j["measured"].toObject()["moved_bytes"].toDouble() > 0);
    }

    void aKilledRankIsNamedAndTheSessionKeepsWhatRan() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "gpt2_block", {"--devices", "2", "--baseline", "tp"});
        const QString session = dir.filePath("mpi.tapestry-session");
        QElapsedTimer clock;
        clock.start();
        // --enable-recovery: mpirun lets rank 0 go on when rank 1 dies, so that it can report.
        const auto r = mpirun(2, {plan, "--json", "--timeout", "3", "--session", session, "--kill-rank", "1:4"},
                              {"--enable-recovery"});
        QVERIFY2(r.code != -1, "mpirun did not end: a hang");
        QVERIFY2(clock.elapsed() < 90000, qPrintable(QString("took %1 ms").arg(clock.elapsed())));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["status"].toString(), QString("failed"));
        const QString message = j["fault"].toObject()["message"].toString();
        QVERIFY2(message.contains("rank 1") && message.contains("did not answer"), qPrintable(message + "\n" + r.err));
        QVERIFY(j["steps"].toArray().size() > 0);
        // The session holds the failed launch with the steps measured before the fault.
        auto s = tapestry::store::Session::open(session.toStdString(), tapestry::store::OpenMode::read_only);
        QVERIFY2(s.has_value(), s ? "" : s.error().message.c_str());
        auto projects = (*s)->projects();
        QVERIFY(projects.has_value() && projects->size() == 1);
        auto plans = (*s)->plans(projects->front().id);
        QVERIFY(plans.has_value() && plans->size() == 1);
        auto launches = (*s)->launches(plans->front().id);
        QVERIFY(launches.has_value() && launches->size() == 1);
        QCOMPARE(launches->front().status, std::string("failed"));
        QCOMPARE(launches->front().backend, std::string("mpi"));
        QVERIFY(launches->front().error.find("rank 1") != std::string::npos);
        auto steps = (*s)->step_measurements(launches->front().id);
        QVERIFY(steps.has_value());
        QCOMPARE(static_cast<int>(steps->size()), j["steps"].toArray().size());
    }

    // A rank that cannot get ready (out of memory, a kernel it cannot build) fails
    // every rank at once, named by rank 0 with its own words — not after the others
    // have waited out the wait limit at the start.
    void aRankThatCannotPrepareIsNamedAtOnce() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "2", "--baseline", "tp"});
        QElapsedTimer clock;
        clock.start();
        const auto r = mpirun(2, {plan, "--timeout", "100", "--fail-prepare-rank", "1"});
        QVERIFY2(r.code != -1, "mpirun did not end: a hang");
        QVERIFY(r.code != 0);
        QVERIFY2(clock.elapsed() < 60000, qPrintable(QString("took %1 ms: waited for the failed rank").arg(clock.elapsed())));
        QVERIFY2(r.err.contains("rank 1 could not finish preparing the plan: injected fault"), qPrintable(r.err));
        QCOMPARE(r.err.count("tapestry:"), 1);  // rank 0 alone reports
    }

    void moreRanksThanDevicesIsRefused() {
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "2", "--baseline", "dp"});
        const auto r = mpirun(3, {plan});
        QVERIFY(r.code != 0);
        QVERIFY2(r.err.contains("3 ranks run a plan of 2 devices"), qPrintable(r.err));
    }

    // `--backend cuda` under mpirun makes each rank one of the cuda backend's (NCCL
    // between ranks; tests/gpu on a GPU). Where there is no GPU every rank says why it
    // cannot run — rank 0 alone prints it, once.
    void cudaRanksWithoutAGpuSayWhyOnce() {
        const auto d = cli({"devices"});
        if (!d.out.contains("cuda: built in")) QSKIP("this tapestry was built without the cuda backend");
        if (!d.out.contains("no GPU")) QSKIP("this machine has a GPU: tests/gpu launches on it");
        QTemporaryDir dir;
        const QString plan = make_plan(dir, "mlp", {"--devices", "2", "--baseline", "tp"});
        const auto r = mpirun(2, {plan}, {}, "cuda");
        QVERIFY(r.code != 0);
        QCOMPARE(r.err.count("--backend cuda: no GPU"), 1);
    }
};

QTEST_GUILESS_MAIN(TestMpiLaunch)
#include "test_mpi_launch.moc"
