// Running the `tapestry` CLI from a test suite: the binary from $TAPESTRY_CLI
// (ctest sets it), its exit code, trimmed stdout/stderr and wall time; a run past
// the timeout is killed and reported as code -1 (a hang), a crash as -2.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace tapestry::test {

struct CliResult {
    int code = -1;  // -1: did not finish in time (a hang), -2: crashed
    QString out, err;
    qint64 ms = 0;
};

inline QString cli_path() {
    return qEnvironmentVariable("TAPESTRY_CLI");
}

inline CliResult run_cli(const QString &cli, const QStringList &args, const QString &working_dir = {},
                         int timeout_ms = 60000) {
    QProcess p;
    if (!working_dir.isEmpty()) p.setWorkingDirectory(working_dir);
    QElapsedTimer clock;
    clock.start();
    p.start(cli, args);
    CliResult r;
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished();
        r.ms = clock.elapsed();
        r.err = QString("'tapestry %1' did not finish within %2 s and was killed").arg(args.join(' ')).arg(timeout_ms / 1000);
        return r;
    }
    r.ms = clock.elapsed();
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
    r.err = QString::fromUtf8(p.readAllStandardError()).trimmed();
    return r;
}

// An example project of projects/ by name ("mlp"), under $TAPESTRY_SOURCE_DIR.
inline QString example_project(const char *name) {
    return QString("%1/projects/%2.tapestry.json").arg(qEnvironmentVariable("TAPESTRY_SOURCE_DIR"), name);
}

// The CLI under test ($TAPESTRY_CLI) with `args`, two minutes at most.
inline CliResult cli(const QStringList &args) {
    return run_cli(cli_path(), args, {}, 120000);
}

// Writes `bytes` to `path` (replacing it); false when it cannot.
inline bool write_bytes(const QString &path, const QByteArray &bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// The MLP example with its batch of 512 rows made `rows` (its stated index
// spaces, signatures and shards dropped, so it stays valid), written to `path`:
// a valid graph too large for any device. False when it cannot be written.
inline bool write_huge_mlp(const QString &path, qint64 rows) {
    QFile original(example_project("mlp"));
    if (!original.open(QIODevice::ReadOnly)) return false;
    QJsonObject p = QJsonDocument::fromJson(original.readAll()).object();
    QJsonArray tensors = p["tensors"].toArray();
    for (QJsonValueRef t : tensors) {
        QJsonObject o = t.toObject();
        QJsonArray shape = o["shape"].toArray();
        if (!shape.isEmpty() && shape[0].toInteger() == 512) shape[0] = rows;
        o["shape"] = shape;
        t = o;
    }
    p["tensors"] = tensors;
    QJsonArray ops = p["operations"].toArray();
    for (QJsonValueRef op : ops) {
        QJsonObject o = op.toObject();
        for (const char *stated : {"index_space", "signature", "shards"}) o.remove(QLatin1String(stated));
        op = o;
    }
    p["operations"] = ops;
    return write_bytes(path, QJsonDocument(p).toJson());
}

}  // namespace tapestry::test
