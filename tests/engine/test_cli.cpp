// The `tapestry` command line as a user meets it (docs/cli.md): runs the binary
// named by $TAPESTRY_CLI over project files and checks exit codes, messages,
// --json output and exported files.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include "ops/library.h"

namespace {

struct Result {
    int code = -1;
    QByteArray out;
    QByteArray err;
};

// x[4, 8] · w[8, 3] + bias[3] → h[4, 3]; relu(h) → y. fc1 has two shards.
const char *kValidProject = R"({
  "format": "tapestry-project",
  "version": 1,
  "name": "tiny mlp",
  "description": "one linear layer and a relu",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [4, 8], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [8, 3], "role": "parameter"},
    {"id": "bias", "dtype": "f32", "shape": [3], "role": "parameter"},
    {"id": "h", "dtype": "f32", "shape": [4, 3], "role": "intermediate"},
    {"id": "y", "dtype": "f32", "shape": [4, 3], "role": "output"}
  ],
  "operations": [
    {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w", "bias": "bias"}, "outputs": {"y": "h"},
     "shards": [{"id": "s0", "index": {"start": [0, 0], "end": [2, 3]}, "device": "cpu0"},
                {"id": "s1", "index": {"start": [2, 0], "end": [4, 3]}, "device": "cpu1"}]},
    {"id": "act", "kind": "relu", "inputs": {"x": "h"}, "outputs": {"y": "y"}}
  ]
}
)";

// Well-formed, but relu writes a [4, 3] result into a [4, 2] tensor.
const char *kInvalidProject = R"({
  "format": "tapestry-project",
  "version": 1,
  "name": "broken",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [4, 3], "role": "input"},
    {"id": "y", "dtype": "f32", "shape": [4, 2], "role": "output"}
  ],
  "operations": [
    {"id": "act", "kind": "relu", "inputs": {"x": "x"}, "outputs": {"y": "y"}}
  ]
}
)";

const char *kMalformedProject = "{ \"format\": \"tapestry-project\", \"version\": 1, \"tensors\": [ ";

}  // namespace

class TestCli : public QObject {
    Q_OBJECT

    QString cli_;
    QTemporaryDir dir_;
    QString valid_, invalid_, malformed_, missing_;

    Result run(const QStringList &args) {
        QProcess p;
        p.start(cli_, args);
        Result r;
        if (!p.waitForFinished(30000)) {
            p.kill();
            p.waitForFinished();
            return r;
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        return r;
    }

    QString write_file(const QString &name, const QByteArray &text) {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write(text);
        return path;
    }

    static QJsonObject json_object(const QByteArray &text) {
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(text, &error);
        if (error.error != QJsonParseError::NoError || !doc.isObject()) return {};
        return doc.object();
    }

private slots:
    void initTestCase() {
        cli_ = qEnvironmentVariable("TAPESTRY_CLI");
        QVERIFY2(!cli_.isEmpty(), "TAPESTRY_CLI must name the tapestry binary (ctest sets it)");
        QVERIFY2(QFile::exists(cli_), qPrintable(cli_));
        QVERIFY(dir_.isValid());
        valid_ = write_file("mlp.tapestry.json", kValidProject);
        invalid_ = write_file("broken.tapestry.json", kInvalidProject);
        malformed_ = write_file("malformed.tapestry.json", kMalformedProject);
        missing_ = dir_.filePath("no-such-file.tapestry.json");
    }

    // ---- help, version, usage ------------------------------------------------

    void version() {
        const Result r = run({"--version"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("tapestry 0."), r.out.constData());
    }

    void help_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("top") << QStringList{"--help"} << "validate";
        QTest::newRow("validate") << QStringList{"validate", "--help"} << "PROJECT";
        QTest::newRow("show") << QStringList{"show", "--help"} << "--json";
        QTest::newRow("export") << QStringList{"export", "--help"} << "--projections";
        QTest::newRow("export formats") << QStringList{"export", "--help"} << "--no-shards";
        QTest::newRow("ops") << QStringList{"ops", "--help"} << "KIND";
    }
    void help() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Result r = run(args);
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("Usage") || r.out.contains("USAGE") || r.out.contains("usage"), r.out.constData());
        QVERIFY2(r.out.contains(expected.toUtf8()), r.out.constData());
        QVERIFY(r.err.isEmpty());
    }

    void usageErrors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("no subcommand") << QStringList{} << "subcommand";
        QTest::newRow("unknown subcommand") << QStringList{"frobnicate"} << "frobnicate";
        QTest::newRow("validate without file") << QStringList{"validate"} << "PROJECT";
        QTest::newRow("show without file") << QStringList{"show"} << "PROJECT";
        QTest::newRow("unknown flag") << QStringList{"validate", "x.json", "--bogus"} << "--bogus";
        QTest::newRow("bad format") << QStringList{"export", "x.json", "--format", "gif"} << "gif";
        QTest::newRow("bad rankdir") << QStringList{"export", "x.json", "--rankdir", "up"} << "up";
        QTest::newRow("two files") << QStringList{"validate", "a.json", "b.json"} << "b.json";
        // Seeds are whole numbers 0 … 2^64 − 1: "-5" is not taken as 2^64 − 5.
        QTest::newRow("negative seed") << QStringList{"run", "x.json", "--seed", "-5"}
                                       << "--seed: '-5' is not a seed (a whole number 0 … 18446744073709551615)";
        QTest::newRow("seed past 2^64") << QStringList{"optimize", "x.json", "--seed", "18446744073709551616"}
                                        << "'18446744073709551616' is not a seed";
        QTest::newRow("seed not a number") << QStringList{"launch", "x.plan.json", "--seed", "1e3"} << "'1e3' is not a seed";
        // Tolerances are finite numbers ≥ 0, said so (not as a 300-digit range).
        QTest::newRow("negative atol") << QStringList{"verify", "x.json", "--atol", "-1"}
                                       << "--atol: '-1' is not a tolerance (a number ≥ 0)";
        QTest::newRow("nan rtol") << QStringList{"verify", "x.json", "--rtol", "nan"} << "--rtol: 'nan' is not a tolerance";
        QTest::newRow("version 0") << QStringList{"session", "export", "x.tapestry-session", "--version", "0"}
                                   << "--version: Value 0 not in range 1 to 1073741824";
        QTest::newRow("check seed") << QStringList{"optimize", "x.json", "--check-seed", "-1"} << "--check-seed: '-1'";
        // An output is checked where it is named, before a search or a launch runs.
        QTest::newRow("front file kind") << QStringList{"optimize", "x.json", "--export-front", "front.txt"}
                                         << "--export-front: 'front.txt' is not a front file (FILE.json or FILE.csv)";
        QTest::newRow("front folder missing")
            << QStringList{"optimize", "x.json", "--export-front", "/nonexistent-tapestry-dir/front.csv"}
            << "--export-front: cannot write '/nonexistent-tapestry-dir/front.csv': the folder "
               "/nonexistent-tapestry-dir does not exist";
        QTest::newRow("plan file a folder") << QStringList{"plan", "x.json", "-o", "/"} << "--out: '/' is a folder, not a file";
        QTest::newRow("outputs a file") << QStringList{"launch", "x.plan.json", "--outputs", "/etc/passwd"}
                                        << "--outputs: '/etc/passwd' is a file, not a folder";
        QTest::newRow("outputs under a file") << QStringList{"run", "x.json", "--outputs", "/etc/passwd/out"}
                                              << "--outputs: cannot make the folder '/etc/passwd/out': /etc/passwd is a file";
        QTest::newRow("export-plan index") << QStringList{"optimize", "x.json", "--export-plan", "1x", "p.json"}
                                           << "--export-plan: expected K FILE (K: a front index, 0 first; got '1x')";
        QTest::newRow("export-plan folder")
            << QStringList{"optimize", "x.json", "--export-plan", "0", "/nonexistent-tapestry-dir/p.json"}
            << "--export-plan: cannot write '/nonexistent-tapestry-dir/p.json'";
    }
    void usageErrors() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Result r = run(args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("tapestry: "), r.err.constData());
        QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
        QVERIFY(r.out.isEmpty());
    }

    // ---- validate ------------------------------------------------------------

    void validateValid() {
        const Result r = run({"validate", valid_});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains(": valid (5 tensors, 2 operations"), r.out.constData());
        QVERIFY2(r.err.isEmpty(), r.err.constData());
    }

    void validateValidJson() {
        const Result r = run({"validate", valid_, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = json_object(r.out);
        QCOMPARE(j.value("file").toString(), valid_);
        QCOMPARE(j.value("valid").toBool(false), true);
        QVERIFY(j.value("issues").isArray());
        QCOMPARE(j.value("issues").toArray().size(), 0);
    }

    void validateInvalid() {
        const Result r = run({"validate", invalid_});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.startsWith(("tapestry: " + invalid_ + ": error ").toUtf8()), r.err.constData());
        QVERIFY2(r.err.contains("act"), r.err.constData());
        QVERIFY(r.out.contains(": invalid ("));
    }

    void validateInvalidJson() {
        const Result r = run({"validate", invalid_, "--json"});
        QCOMPARE(r.code, 1);
        const QJsonObject j = json_object(r.out);
        QCOMPARE(j.value("valid").toBool(true), false);
        const QJsonArray issues = j.value("issues").toArray();
        QVERIFY(!issues.isEmpty());
        bool found = false;
        for (const QJsonValue &v : issues) {
            const QJsonObject i = v.toObject();
            for (const char *key : {"severity", "code", "message", "node", "json_path", "related"})
                QVERIFY2(i.contains(QLatin1String(key)), key);
            QVERIFY(i.value("related").isArray());
            if (i.value("severity").toString() == "error" && i.value("node").toString() == "act") {
                found = true;
                QVERIFY2(i.value("json_path").toString().startsWith("$.operations[0]"),
                         qPrintable(i.value("json_path").toString()));
                QVERIFY(!i.value("message").toString().isEmpty());
            }
        }
        QVERIFY2(found, r.out.constData());
        QVERIFY(r.err.isEmpty());
    }

    // Every subcommand that reads a project fails the same way on a bad file.
    void badFiles_data() {
        QTest::addColumn<QString>("command");
        QTest::addColumn<bool>("missing");
        for (const char *c : {"validate", "show", "export"}) {
            QTest::addRow("%s malformed", c) << c << false;
            QTest::addRow("%s missing", c) << c << true;
        }
    }
    void badFiles() {
        QFETCH(QString, command);
        QFETCH(bool, missing);
        const QString file = missing ? missing_ : malformed_;
        const Result r = run({command, file});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.startsWith(("tapestry: " + file + ": ").toUtf8()), r.err.constData());
        QVERIFY2(r.err.contains("error"), r.err.constData());
        if (command != "validate") QVERIFY2(r.out.isEmpty(), r.out.constData());
    }

    void malformedJsonOutput() {
        const Result r = run({"validate", malformed_, "--json"});
        QCOMPARE(r.code, 1);
        const QJsonObject j = json_object(r.out);
        QCOMPARE(j.value("valid").toBool(true), false);
        QVERIFY(!j.value("issues").toArray().isEmpty());
    }

    // ---- show ----------------------------------------------------------------

    void showText() {
        const Result r = run({"show", valid_});
        QCOMPARE(r.code, 0);
        const QString out = QString::fromUtf8(r.out);
        QVERIFY2(out.startsWith("project  tiny mlp"), qPrintable(out));
        QVERIFY(out.contains("tensors (5)"));
        QVERIFY(out.contains(QRegularExpression("\\bbias\\s+bias\\s+f32\\s+\\[3\\]\\s+\\[0:3\\]\\s+parameter\\s+12 B")));
        QVERIFY(out.contains("operations (2)"));
        QVERIFY2(out.contains(QString::fromUtf8("fc1  linear  x, w, bias \u2192 h")), qPrintable(out));
        // linear: 2·8 + 1 FLOPs per point over [0:4, 0:3].
        QVERIFY2(out.contains("index [0:4, 0:3]  204 FLOP  read 236 B  write 48 B"), qPrintable(out));
        QVERIFY(out.contains("shard s1  [2:4, 0:3]  on cpu1"));
        QVERIFY(out.contains("2 shards"));
        QVERIFY(out.contains("validation  valid  (0 errors, 0 warnings"));
    }

    void showJson() {
        const Result r = run({"show", valid_, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = json_object(r.out);
        QCOMPARE(j.value("name").toString(), QString("tiny mlp"));
        const QJsonArray tensors = j.value("tensors").toArray();
        QCOMPARE(tensors.size(), 5);
        QCOMPARE(tensors[0].toObject().value("bytes").toInt(), 128);
        QCOMPARE(tensors[0].toObject().value("shape").toArray(), (QJsonArray{4, 8}));
        const QJsonArray ops = j.value("operations").toArray();
        QCOMPARE(ops.size(), 2);
        const QJsonObject fc = ops[0].toObject();
        QCOMPARE(fc.value("kind").toString(), QString("linear"));
        QCOMPARE(fc.value("index_space").toString(), QString("[0:4, 0:3]"));
        QCOMPARE(fc.value("flops").toDouble(), 204.0);
        QCOMPARE(fc.value("bytes_read").toDouble(), 236.0);
        QCOMPARE(fc.value("bytes_written").toDouble(), 48.0);
        QCOMPARE(fc.value("inputs").toArray().size(), 3);
        QCOMPARE(fc.value("shards").toArray().size(), 2);
        QCOMPARE(fc.value("shards").toArray()[0].toObject().value("device").toString(), QString("cpu0"));
        const QJsonObject totals = j.value("totals").toObject();
        QCOMPARE(totals.value("flops").toDouble(), 204.0 + 12.0);
        QCOMPARE(totals.value("tensor_bytes").toDouble(), 128.0 + 96 + 12 + 48 + 48);
        QCOMPARE(j.value("validation").toObject().value("errors").toInt(-1), 0);
    }

    void showInvalidCountsIssues() {
        const Result r = run({"show", invalid_, "--json"});
        QCOMPARE(r.code, 1);
        const QJsonObject j = json_object(r.out);
        QCOMPARE(j.value("validation").toObject().value("valid").toBool(true), false);
        QVERIFY(j.value("validation").toObject().value("errors").toInt() >= 1);
        QCOMPARE(j.value("operations").toArray().size(), 1);
    }

    // ---- export --------------------------------------------------------------

    void exportFormats_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<QByteArray>("start");
        QTest::newRow("dot") << "dot" << QByteArray("digraph tapestry {");
        QTest::newRow("svg") << "svg" << QByteArray("<?xml");
        QTest::newRow("png") << "png" << QByteArray("\x89PNG\r\n\x1a\n", 8);
        QTest::newRow("json") << "json" << QByteArray("{");
    }
    void exportFormats() {
        QFETCH(QString, format);
        QFETCH(QByteArray, start);
        const QString out = dir_.filePath("out." + format);
        QFile::remove(out);
        const Result r = run({"export", valid_, "--format", format, "-o", out});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.isEmpty(), r.err.constData());
        QVERIFY(r.out.isEmpty());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray data = f.readAll();
        QVERIFY2(data.startsWith(start), data.left(64).constData());
        if (format == "svg") {
            QVERIFY(data.contains("<svg"));
            QCOMPARE(data.count("class=\"node\""), 5 + 2 + 2);  // tensors, operations, shards
        }
        if (format == "json") {
            const QJsonObject j = json_object(data);
            QCOMPARE(j.value("format").toString(), QString("tapestry-project"));
            QCOMPARE(j.value("operations").toArray().size(), 2);
            // The re-serialised project is itself valid.
            QCOMPARE(run({"validate", out}).code, 0);
        }
    }

    void exportToStdout() {
        const Result r = run({"export", valid_, "-f", "dot"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith("digraph tapestry {"));
        QCOMPARE(r.out.count("shape=note"), 2);
        QVERIFY(!r.out.contains("shape=component"));
    }

    void exportOptions() {
        const Result r = run({"export", valid_, "--format", "dot", "--projections", "--no-shards", "--rankdir", "LR"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("rankdir=LR"));
        QCOMPARE(r.out.count("shape=component"), 2);
        QVERIFY(r.out.contains("[A | b | window]"));
        QVERIFY(!r.out.contains("shape=note"));
    }

    void exportUnwritableOutput() {
        // A folder that does not exist is seen where the option is read: a usage error.
        const QString out = dir_.filePath("no-such-dir/out.svg");
        const Result r = run({"export", valid_, "-o", out});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(("cannot write '" + out + "'").toUtf8()), r.err.constData());
        // A write that fails when it happens (a full device) is an output failure.
        const Result full = run({"export", valid_, "-o", "/dev/full"});
        QCOMPARE(full.code, 1);
        QVERIFY2(full.err.contains("cannot write '/dev/full'"), full.err.constData());
    }

    void exportDrawsInvalidProjects() {
        // Drawing is how one debugs a graph: an op that does not resolve is drawn in red.
        QByteArray text(kInvalidProject);
        text.replace("\"relu\"", "\"frobnicate\"");
        const QString file = write_file("unknown-kind.tapestry.json", text);
        QCOMPARE(run({"validate", file}).code, 1);
        const Result r = run({"export", file, "--format", "dot"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("color=\"#d00000\""), r.out.constData());
        QVERIFY(r.out.contains("unknown operation kind &#39;frobnicate&#39;"));
    }

    // A shard whose index has the wrong rank: validation reports it, and export
    // still draws the graph (issue 14) — the shard marked, nothing derived from it.
    void exportDrawsAShardOfTheWrongRank_data() {
        QTest::addColumn<QString>("format");
        QTest::newRow("dot") << "dot";
        QTest::newRow("svg") << "svg";
    }
    void exportDrawsAShardOfTheWrongRank() {
        QFETCH(QString, format);
        const QString file = write_file("wrong-rank.tapestry.json", R"({"format": "tapestry-project", "version": 1,
  "tensors": [{"id": "x", "dtype": "f32", "shape": [8, 4], "role": "input"},
              {"id": "w", "dtype": "f32", "shape": [4, 4], "role": "parameter"},
              {"id": "y", "dtype": "f32", "shape": [8, 4], "role": "output"}],
  "operations": [{"id": "mm", "kind": "matmul", "inputs": {"a": "x", "b": "w"}, "outputs": {"y": "y"},
    "shards": [{"id": "mm/0", "index": {"start": [0], "end": [4]}},
               {"id": "mm/1", "index": {"start": [4, 0], "end": [8, 4]}}]}]})");
        QCOMPARE(run({"validate", file}).code, 1);
        const Result r = run({"export", file, "--format", format});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.contains("error rank-mismatch at $.operations[0].shards[0].index (mm/0): shard 'mm/0' has index "
                                "range [0:4] of rank 1 but the index space of 'mm' [0:8, 0:4] has rank 2"),
                 r.err.constData());
        QVERIFY2(r.err.contains(": drawn with 1 error; the nodes at fault have a red border"), r.err.constData());
        QVERIFY(!r.err.contains("internal error"));
        QVERIFY2(r.out.contains("index of rank 1 in an index space of rank 2"), r.out.left(400).constData());
        if (format == "dot") {
            QCOMPARE(r.out.count("shape=note"), 2);
            QCOMPARE(r.out.count("color=\"#d00000\", penwidth=4"), 1);  // mm/0 only; mm/1 is fine
        } else {
            QCOMPARE(r.out.count("class=\"node\""), 3 + 1 + 2);
        }
    }

    // A name of ten million characters is drawn cut to its first 200, at once.
    void exportCutsVeryLongNames() {
        QByteArray text(kValidProject);
        const int at = text.indexOf("\"id\": \"x\"");
        QVERIFY(at >= 0);
        text.insert(at, "\"name\": \"" + QByteArray(10'000'000, 'n') + "\", ");
        const QString file = write_file("long-name.tapestry.json", text);
        const Result r = run({"export", file, "--format", "svg"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.isEmpty(), r.err.left(400).constData());
        QVERIFY(r.out.contains(QByteArray(200, 'n') + "\xE2\x80\xA6"));
        QVERIFY(!r.out.contains(QByteArray(201, 'n')));
        QVERIFY2(r.out.size() < 200'000, QByteArray::number(r.out.size()).constData());
    }

    // ---- ops -----------------------------------------------------------------

    void opsText() {
        const Result r = run({"ops"});
        QCOMPARE(r.code, 0);
        for (const char *kind : {"linear", "matmul", "relu", "conv2d", "softmax", "attention"})
            QVERIFY2(r.out.contains(QByteArray("\n") + kind + " "), kind);
        QVERIFY(r.out.contains("x w bias?"));
    }

    void opsOneKind() {
        const Result r = run({"ops", "reduce_sum"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("reduce_sum  (reduction)"), r.out.constData());
        QVERIFY(r.out.contains("axes"));
        QVERIFY(r.out.contains("required"));
        QVERIFY(r.out.contains("keepdims"));
        const Result bad = run({"ops", "frobnicate"});
        QCOMPARE(bad.code, 1);
        QVERIFY(bad.err.contains("unknown operation kind 'frobnicate'"));
    }

    void opsJson() {
        const Result r = run({"ops", "--json"});
        QCOMPARE(r.code, 0);
        const QJsonDocument doc = QJsonDocument::fromJson(r.out);
        QVERIFY(doc.isArray());
        QCOMPARE(static_cast<size_t>(doc.array().size()), tapestry::OpLibrary::standard().all().size());
        bool seen = false;
        for (const QJsonValue &v : doc.array()) {
            const QJsonObject op = v.toObject();
            for (const char *key : {"kind", "category", "summary", "inputs", "outputs", "params"})
                QVERIFY2(op.contains(QLatin1String(key)), key);
            if (op.value("kind").toString() != "linear") continue;
            seen = true;
            const QJsonArray ins = op.value("inputs").toArray();
            QCOMPARE(ins.size(), 3);
            QCOMPARE(ins[2].toObject().value("name").toString(), QString("bias"));
            QCOMPARE(ins[2].toObject().value("optional").toBool(), true);
            QCOMPARE(op.value("category").toString(), QString("linear algebra"));
        }
        QVERIFY(seen);
    }

    // ---- the example projects ------------------------------------------------

    void exampleProjects() {
        const QDir projects(qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects");
        const QStringList files = projects.entryList({"*.tapestry.json"}, QDir::Files, QDir::Name);
        if (files.isEmpty()) QSKIP("no example projects in projects/ yet");
        for (const QString &name : files) {
            const QString file = projects.filePath(name);
            const Result v = run({"validate", file, "--json"});
            QVERIFY2(v.code == 0, qPrintable(name + ": " + QString::fromUtf8(v.out)));
            const Result s = run({"show", file});
            QVERIFY2(s.code == 0, qPrintable(name));
            const QString svg = dir_.filePath(name + ".svg");
            const Result e = run({"export", file, "--projections", "-o", svg});
            QVERIFY2(e.code == 0, qPrintable(name + ": " + QString::fromUtf8(e.err)));
            QFile f(svg);
            QVERIFY(f.open(QIODevice::ReadOnly));
            QVERIFY(f.readAll().contains("<svg"));
        }
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
