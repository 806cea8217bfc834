// `tapestry passes` (docs/cli.md, docs/passes.md): runs the real binary named by
// $TAPESTRY_CLI on the examples and checks the files it writes, its summary and
// its exit codes: 0 certified, 1 a pass refused, 2 a bad command line.
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "io/project_file.h"
#include "cli_run.h"

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
        // fc2 and fc3 as asked, their neighbours by propagation (6 changed), and a
        // move node with its tensor where fc3's 3 shards read relu2's 4 (2 added).
        QVERIFY2(r.out.contains(
                     "1      shard     2      0        6        PASS structure, coverage, injectivity, dataflow"),
                 r.out.constData());
        QVERIFY(r.out.contains("fc3 dim 0 into 3 (171+171+170)"));
        QVERIFY2(r.out.contains("propagated to 4 ops; moves 1052672 elements (4210688 bytes) in 3 transfers: send_recv 3"),
                 r.out.constData());
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

    // The whole pipeline on the small attention example: the composite is expanded,
    // the expansion sharded on the batch, the epilogues fused; every stage certified,
    // numerically too.
    void substituteShardFuse() {
        QTemporaryDir out;
        const QString small =
            QDir(qEnvironmentVariable("TAPESTRY_SOURCE_DIR")).filePath("projects/attention.tapestry.json");
        const Result r = run({"passes", small, "--pipeline", "substitute,shard,fuse", "--shard", "proj_q:0=2",
                              "--numeric", "--no-svg", "--out", out.path()});
        QVERIFY2(r.code == 0, (r.out + r.err).constData());
        QVERIFY2(r.out.contains("3 pass(es)"), r.out.constData());
        for (const char *name : {"stage-1-substitute", "stage-2-shard", "stage-3-fuse"})
            QVERIFY2(QFile::exists(QDir(out.path()).filePath(QString(name) + ".tapestry.json")), name);
        QCOMPARE(r.out.count("PASS structure, coverage, injectivity, dataflow, numeric"), 4);
    }

    // `tapestry verify STAGE --against ORIGINAL`: a stage's outputs against the
    // original's oracle; a stage of another project is refused by name.
    void verifyStageAgainstOriginal() {
        QTemporaryDir dir;
        const QString project = dir.filePath("small.tapestry.json");
        QFile f(project);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"format": "tapestry-project", "version": 1, "name": "small",
          "tensors": [
            {"id": "x", "dtype": "f32", "shape": [12, 6], "role": "input"},
            {"id": "w1", "dtype": "f32", "shape": [6, 8], "role": "parameter"},
            {"id": "b1", "dtype": "f32", "shape": [8], "role": "parameter"},
            {"id": "h", "dtype": "f32", "shape": [12, 8], "role": "intermediate"},
            {"id": "a", "dtype": "f32", "shape": [12, 8], "role": "intermediate"},
            {"id": "w2", "dtype": "f32", "shape": [8, 5], "role": "parameter"},
            {"id": "y", "dtype": "f32", "shape": [12, 5], "role": "output"}],
          "operations": [
            {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w1", "bias": "b1"}, "outputs": {"y": "h"}},
            {"id": "r1", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "a"}},
            {"id": "fc2", "kind": "linear", "inputs": {"x": "a", "w": "w2"}, "outputs": {"y": "y"}}]})");
        f.close();
        const QString out = dir.filePath("stages");
        const Result passes = run({"passes", project, "--pipeline", "shard,fuse", "--shard", "fc1:0=3", "--shard",
                                   "fc2:2=2", "--no-svg", "--out", out});
        QVERIFY2(passes.code == 0, (passes.out + passes.err).constData());
        const QString stage = QDir(out).filePath("stage-2-fuse.tapestry.json");
        const Result ok = run({"verify", stage, "--against", project});
        QVERIFY2(ok.code == 0, (ok.out + ok.err).constData());
        QVERIFY2(ok.out.contains("vs the original's oracle"), ok.out.constData());
        QVERIFY2(QString::fromUtf8(ok.out).contains(QRegularExpression("y +original .* pass")), ok.out.constData());
        const Result other = run({"verify", stage, "--against", mlp()});
        QCOMPARE(other.code, 1);
        QVERIFY2(other.err.contains("in the stage but [512, 1024] in the original: is it the stage of another project?"),
                 other.err.constData());
    }

    // A chain the CPU cannot fuse because its head is refused on its own (a matmul
    // too large for oneDNN) says so, not that the head takes no such post-op.
    void chainsOfAHugeGraphSayWhyTheyStayUnfused() {
        QTemporaryDir dir;
        const QString huge = dir.filePath("huge.tapestry.json");
        QVERIFY(tapestry::test::write_huge_mlp(huge, qint64{1} << 32));
        const auto r = run({"passes", huge, "--pipeline", "shard,fuse", "--shard", "fc1:0=2", "--out", dir.filePath("stages")});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("fuse: nothing fused; 3 edges not fused: fc1→gelu1 not fused: the CPU kernel cannot run "
                                "the chain (fused kernel: linear kernel: the matmul's source has 2147483648 elements "
                                "along a dimension: oneDNN's matmul takes at most 2147483647 (2^31 − 1))"),
                 r.out.constData());
        QVERIFY(!r.out.contains("as a post-op here"));
    }

    void refusals_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown op") << QStringList{"--shard", "fc9:0=4"} << 1
                                    << "pass 1 (shard): shard spec 'fc9:0=4': unknown operation 'fc9'";
        QTest::newRow("unknown pass") << QStringList{"--pipeline", "shuffle", "--shard", "fc2:0=4"} << 2
                                      << "unknown pass 'shuffle' (known: substitute, shard, fuse, place)";
        QTest::newRow("unknown rule") << QStringList{"--pipeline", "substitute", "--rule", "matmul-commute"} << 2
                                      << "unknown rule 'matmul-commute'";
        QTest::newRow("unknown goal") << QStringList{"--pipeline", "substitute", "--goal", "fastest"} << 2
                                      << "unknown substitution goal 'fastest' (expand or fuse)";
        QTest::newRow("no spec") << QStringList{} << 2 << "the shard pass needs at least one shard spec";
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
