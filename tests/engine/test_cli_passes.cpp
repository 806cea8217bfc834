// `tapestry passes` (docs/cli.md, docs/passes.md): runs the real binary named by
// $TAPESTRY_CLI on the examples and checks the files it writes, its summary and
// its exit codes: 0 certified, 1 a pass refused, 2 a bad command line.
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "io/project_file.h"

namespace {

struct Result {
    int code = -1;
    QByteArray out, err;
};

Result run(const QStringList &args) {
    QProcess p;
    p.start(qEnvironmentVariable("TAPESTRY_CLI"), args);
    p.waitForFinished(120000);
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

QString mlp() {
    return QDir(qEnvironmentVariable("TAPESTRY_SOURCE_DIR")).filePath("projects/mlp.tapestry.json");
}

}  // namespace

class TestCliPasses : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (qEnvironmentVariableIsEmpty("TAPESTRY_CLI") || qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR"))
            QSKIP("TAPESTRY_CLI and TAPESTRY_SOURCE_DIR are set by CTest");
    }

    void shardsCertifiesAndWritesEveryStage() {
        QTemporaryDir out;
        const Result r = run({"passes", mlp(), "--shard", "fc2:0=4", "--shard", "fc3:0=3", "--out", out.path()});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.contains(
            "1      shard     0      0        2        PASS structure, coverage, injectivity, dataflow"));
        QVERIFY(r.out.contains("fc3 dim 0 into 3 (171+171+170)"));
        for (const char *f : {"stage-0-original.tapestry.json", "stage-0-original.svg", "stage-0-original.txt",
                              "stage-1-shard.tapestry.json", "stage-1-shard.svg", "stage-1-shard.txt"})
            QVERIFY2(QFileInfo::exists(QDir(out.path()).filePath(f)), f);
        // The stage's project loads and carries the new shards.
        tapestry::LoadResult stage =
            tapestry::load_project(QDir(out.path()).filePath("stage-1-shard.tapestry.json").toStdString());
        QVERIFY(stage.ok());
        QCOMPARE(stage.graph.find_op(tapestry::OpId("fc3"))->shards.size(), size_t{3});
    }

    void numericCheckOnRequest() {
        QTemporaryDir out;
        const QString small =
            QDir(qEnvironmentVariable("TAPESTRY_SOURCE_DIR")).filePath("projects/attention.tapestry.json");
        const Result r = run({"passes", small, "--shard", "attention:0=2", "--shard", "proj_q:0=3", "--numeric",
                              "--no-svg", "--out", out.path()});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("PASS structure, coverage, injectivity, dataflow, numeric"), r.out.constData());
    }

    void refusals_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown op") << QStringList{"--shard", "fc9:0=4"} << 1
                                    << "pass 1 (shard): shard spec 'fc9:0=4': unknown operation 'fc9'";
        QTest::newRow("unknown pass") << QStringList{"--pipeline", "shuffle", "--shard", "fc2:0=4"} << 2
                                      << "unknown pass 'shuffle' (known: shard)";
        QTest::newRow("pass not here yet")
            << QStringList{"--pipeline", "fuse"} << 2 << "the fuse pass is not available yet";
        QTest::newRow("no spec") << QStringList{} << 2 << "the shard pass needs at least one --shard";
    }
    void refusals() {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, message);
        QTemporaryDir out;
        const Result r = run(QStringList{"passes", mlp(), "--out", out.path()} + args);
        QCOMPARE(r.code, code);
        QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliPasses)
#include "test_cli_passes.moc"
