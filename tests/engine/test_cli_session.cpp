// `tapestry session list|export|import|rename|delete` as a user meets it (docs/cli.md,
// docs/sessions.md): runs the binary named by $TAPESTRY_CLI and checks exit codes,
// messages, --json output, exported files, and that refused sessions stay
// byte-identical.
#include <sqlite3.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>

namespace {

struct Result {
    int code = -1;
    QByteArray out;
    QByteArray err;
};

QByteArray file_hash(const QString &path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
}

QByteArray read_all(const QString &path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A parameter of 96 elements (exported as .npy beside the project) and one of 3
// (embedded).
QByteArray project_with_values() {
    QByteArray values;
    for (int i = 0; i < 96; ++i) values += (i ? ", " : "") + QByteArray::number(i * 0.5);
    return R"({
  "format": "tapestry-project",
  "version": 1,
  "name": "valued",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [2, 96], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [96], "role": "parameter", "value": [)" +
           values + R"(]},
    {"id": "s", "dtype": "f32", "shape": [3], "role": "parameter", "value": [1, 2, 3]},
    {"id": "y", "dtype": "f32", "shape": [2, 96], "role": "output"}
  ],
  "operations": [
    {"id": "scale", "kind": "mul", "inputs": {"a": "x", "b": "w"}, "outputs": {"y": "y"}}
  ]
}
)";
}

}  // namespace

class TestCliSession : public QObject {
    Q_OBJECT

    QString cli_, mlp_, gpt_;
    QTemporaryDir dir_;

    Result run(const QStringList &args) {
        QProcess p;
        p.setWorkingDirectory(dir_.path());
        p.start(cli_, args);
        Result r;
        if (!p.waitForFinished(60000)) {
            p.kill();
            p.waitForFinished();
            return r;
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        return r;
    }

    QString path(const QString &name) const { return dir_.filePath(name); }

private slots:
    void initTestCase() {
        cli_ = qEnvironmentVariable("TAPESTRY_CLI");
        QVERIFY2(!cli_.isEmpty(), "TAPESTRY_CLI must name the tapestry binary (ctest sets it)");
        QVERIFY(dir_.isValid());
        const QString projects = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects/";
        mlp_ = projects + "mlp.tapestry.json";
        gpt_ = projects + "gpt2_block.tapestry.json";
        QVERIFY(QFile::exists(mlp_));
    }

    void import_list_export_round_trip() {
        const QString session = path("work.tapestry-session");
        Result r = run({"session", "import", session, mlp_});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("project 'mlp' (id 1), version 1, 23 nodes"), r.out.constData());
        QVERIFY(r.err.isEmpty());
        r = run({"session", "import", session, gpt_, "--name", "GPT-2 block"});
        QCOMPARE(r.code, 0);

        r = run({"session", "list", session});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith((session + ": 2 projects (schema 6)").toUtf8()), r.out.constData());
        QVERIFY2(r.out.contains("  1  mlp  1 version, latest v1 saved 20"), r.out.constData());
        QVERIFY2(r.out.contains("  2  GPT-2 block  1 version"), r.out.constData());
        // Each names the file it was imported from, which it continues in the studio.
        const QString mlp_file = QFileInfo(mlp_).absoluteFilePath();
        QVERIFY2(r.out.contains(("; file " + mlp_file + "\n").toUtf8()), r.out.constData());

        r = run({"session", "list", session, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(doc["schema_version"].toInt(), 6);
        const QJsonArray projects = doc["projects"].toArray();
        QCOMPARE(projects.size(), 2);
        QCOMPARE(projects[1].toObject()["name"].toString(), QString("GPT-2 block"));
        QCOMPARE(projects[1].toObject()["versions"].toInt(), 1);
        QVERIFY(projects[1].toObject()["latest_saved_at"].toString().endsWith("Z"));
        QCOMPARE(projects[0].toObject()["file"].toString(), mlp_file);
        QCOMPARE(projects[1].toObject()["file"].toString(), QFileInfo(gpt_).absoluteFilePath());

        // Every project into a folder; one by name into a file: the graph JSON
        // equals what `tapestry export -f json` makes of the original.
        r = run({"session", "export", session, "-o", path("all")});
        QCOMPARE(r.code, 0);
        QVERIFY(QFile::exists(path("all/mlp.tapestry.json")));
        QVERIFY(QFile::exists(path("all/GPT-2_block.tapestry.json")));
        r = run({"session", "export", session, "mlp", "-o", path("one.tapestry.json")});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("exported 'mlp' version 1"), r.out.constData());
        const Result original = run({"export", mlp_, "-f", "json"});
        QCOMPARE(original.code, 0);
        QCOMPARE(read_all(path("one.tapestry.json")), original.out);
        QCOMPARE(read_all(path("all/mlp.tapestry.json")), original.out);
        // By id, and a version by number.
        r = run({"session", "export", session, "2", "--version", "1", "-o", path("gpt.tapestry.json")});
        QCOMPARE(r.code, 0);
        QCOMPARE(read_all(path("gpt.tapestry.json")), run({"export", gpt_, "-f", "json"}).out);
    }

    void values_travel_through_a_session() {
        const QString project = path("valued.tapestry.json");
        {
            QFile f(project);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(project_with_values());
        }
        const QString session = path("valued.tapestry-session");
        QCOMPARE(run({"session", "import", session, project}).code, 0);
        QCOMPARE(run({"session", "export", session, "valued", "-o", path("out/valued.tapestry.json")}).code, 0);
        // The big value went beside the project as .npy, the small one stayed embedded.
        QVERIFY(QFile::exists(path("out/valued.data/w.npy")));
        const QByteArray exported = read_all(path("out/valued.tapestry.json"));
        QVERIFY2(exported.contains("\"data\": \"valued.data/w.npy\""), exported.constData());
        QVERIFY2(exported.contains("\"value\": [1.0, 2.0, 3.0]"), exported.constData());
        // Importing the export (values read from the .npy) and exporting again gives the same files.
        const QString second = path("second.tapestry-session");
        QCOMPARE(run({"session", "import", second, path("out/valued.tapestry.json")}).code, 0);
        QCOMPARE(run({"session", "export", second, "valued", "-o", path("again/valued.tapestry.json")}).code, 0);
        QCOMPARE(read_all(path("again/valued.tapestry.json")), exported);
        QCOMPARE(file_hash(path("again/valued.data/w.npy")), file_hash(path("out/valued.data/w.npy")));
    }

    void rename_and_delete() {
        const QString session = path("tidy.tapestry-session");
        QCOMPARE(run({"session", "import", session, mlp_}).code, 0);
        QCOMPARE(run({"session", "import", session, mlp_}).code, 0);
        QCOMPARE(run({"session", "import", session, gpt_, "--name", "GPT-2 block"}).code, 0);

        // Two are named 'mlp': by name is refused, by id works.
        Result r = run({"session", "rename", session, "mlp", "MLP tuned"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("2 projects are named 'mlp'; name one by its id: 1 2"), r.err.constData());
        r = run({"session", "rename", session, "2", "MLP tuned"});
        QCOMPARE(r.code, 0);
        QCOMPARE(QString::fromUtf8(r.out).trimmed(), session + ": project 2 'mlp' is now 'MLP tuned'");
        QVERIFY2(run({"session", "list", session}).out.contains("  2  MLP tuned  1 version"), "renamed in the list");
        r = run({"session", "rename", session, "mlp", ""});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("a project needs a name"), r.err.constData());

        // Without --yes it only says what would go.
        const QByteArray before = file_hash(session);
        r = run({"session", "delete", session, "GPT-2 block"});
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err).trimmed(),
                 "tapestry: " + session +
                     ": deleting project 3 'GPT-2 block' removes its 1 version; nothing was deleted (add --yes to "
                     "delete it)");
        QCOMPARE(file_hash(session), before);
        r = run({"session", "delete", session, "GPT-2 block", "--yes"});
        QCOMPARE(r.code, 0);
        QCOMPARE(QString::fromUtf8(r.out).trimmed(), session + ": deleted project 3 'GPT-2 block' with its 1 version");
        r = run({"session", "list", session});
        QVERIFY2(r.out.startsWith((session + ": 2 projects").toUtf8()), r.out.constData());
        QVERIFY(!r.out.contains("GPT-2 block"));
        r = run({"session", "delete", session, "GPT-2 block", "--yes"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no project named 'GPT-2 block' (it has: 'mlp', 'MLP tuned')"), r.err.constData());

        // What a project keeps besides its versions is named before it goes.
        QCOMPARE(run({"optimize", mlp_, "--target", "h100", "--devices", "2", "--evaluations", "20", "--session",
                      session})
                     .code,
                 0);
        r = run({"session", "delete", session, "mlp (searches)"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("'mlp (searches)' removes its 1 version, 1 search run; nothing was deleted"),
                 r.err.constData());
        r = run({"session", "delete", session, "mlp (searches)", "--yes"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("with its 1 version, 1 search run"), r.out.constData());
        QVERIFY(!run({"session", "searches", session}).out.contains("mlp (searches)"));
    }

    // ---- errors -------------------------------------------------------------------------

    void usage_errors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("no action") << QStringList{"session"};
        QTest::newRow("unknown action") << QStringList{"session", "merge", "x"};
        QTest::newRow("list without session") << QStringList{"session", "list"};
        QTest::newRow("import without file") << QStringList{"session", "import", "s.tapestry-session"};
        QTest::newRow("bad version") << QStringList{"session", "export", "s", "p", "--version", "0"};
        QTest::newRow("rename without a new name") << QStringList{"session", "rename", "s", "p"};
        QTest::newRow("delete without a project") << QStringList{"session", "delete", "s"};
    }
    void usage_errors() {
        QFETCH(QStringList, args);
        const Result r = run(args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("tapestry: "), r.err.constData());
    }

    void missing_session_is_not_created() {
        const QString session = path("missing.tapestry-session");
        const Result r = run({"session", "list", session});
        QCOMPARE(r.code, 1);
        QCOMPARE(QString::fromUtf8(r.err).trimmed(), "tapestry: session " + session + " does not exist");
        QVERIFY(!QFile::exists(session));
        // A project that cannot be loaded creates no session either.
        const Result bad = run({"session", "import", session, path("no-such.tapestry.json")});
        QCOMPARE(bad.code, 1);
        QVERIFY(!QFile::exists(session));
    }

    void unknown_project_and_version() {
        const QString session = path("lookup.tapestry-session");
        QCOMPARE(run({"session", "import", session, mlp_}).code, 0);
        Result r = run({"session", "export", session, "resnet"});
        QCOMPARE(r.code, 1);
        QCOMPARE(QString::fromUtf8(r.err).trimmed(),
                 "tapestry: " + session + ": no project named 'resnet' (it has: 'mlp')");
        r = run({"session", "export", session, "mlp", "--version", "7"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("has no version 7"), r.err.constData());
        r = run({"session", "export", session, "--version", "1"});
        QCOMPARE(r.code, 2);
    }

    void refused_sessions_stay_unchanged_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("message");
        QTest::newRow("damaged") << "damaged"
                                 << "is damaged or not a Tapestry session";
        QTest::newRow("newer") << "newer"
                               << "was written by a newer Tapestry (schema version 99";
    }
    void refused_sessions_stay_unchanged() {
        QFETCH(QString, kind);
        QFETCH(QString, message);
        const QString session = path(kind + ".tapestry-session");
        if (kind == "damaged") {
            QFile f(session);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray(4096, '\x13'));
        } else {
            QCOMPARE(run({"session", "import", session, mlp_}).code, 0);
            sqlite3 *db = nullptr;
            QCOMPARE(sqlite3_open(session.toUtf8().constData(), &db), SQLITE_OK);
            QCOMPARE(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(db);
        }
        const QByteArray before = file_hash(session);
        for (const QStringList &args : {QStringList{"session", "list", session},
                                        QStringList{"session", "export", session, "-o", path("refused-out")},
                                        QStringList{"session", "import", session, mlp_},
                                        QStringList{"session", "rename", session, "mlp", "x", "--wait", "0"},
                                        QStringList{"session", "delete", session, "mlp", "--yes", "--wait", "0"}}) {
            const Result r = run(args);
            QCOMPARE(r.code, 1);
            QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
            QVERIFY2(r.err.contains(session.toUtf8()), r.err.constData());
            QCOMPARE(file_hash(session), before);
            QVERIFY(!QFile::exists(session + "-wal"));
        }
    }

    void help_lists_the_actions() {
        const Result r = run({"session", "--help"});
        QCOMPARE(r.code, 0);
        for (const char *word : {"list", "export", "import", "rename", "delete"}) QVERIFY2(r.out.contains(word), r.out.constData());
        QVERIFY(run({"--help"}).out.contains("session"));
    }
};

QTEST_GUILESS_MAIN(TestCliSession)
#include "test_cli_session.moc"
