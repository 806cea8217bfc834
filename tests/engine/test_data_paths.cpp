// Issue 14, class 6: a project's `data` paths resolve inside its folder. An
// absolute path, a '..' that leaves the folder or a symbolic link out of it is
// refused — naming the tensor and the path — unless the user opts in
// (--allow-outside-data); `session import` then copies nothing into the session.
#include <QCryptographicHash>
#include <QDir>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <filesystem>

#include "cli_run.h"
#include "io/npy.h"
#include "io/project_file.h"
#include "io/tensor_values.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

// x [2, 3] times w [3] (w's values from `data`).
QByteArray project_with_data(const QString &data) {
    return QStringLiteral("{\"format\": \"tapestry-project\", \"version\": 1, \"name\": \"scaled\", \"tensors\": ["
                          "{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 3], \"role\": \"input\"},"
                          "{\"id\": \"w\", \"dtype\": \"f32\", \"shape\": [3], \"role\": \"parameter\", \"data\": \"%1\"},"
                          "{\"id\": \"y\", \"dtype\": \"f32\", \"shape\": [2, 3], \"role\": \"output\"}],"
                          "\"operations\": [{\"id\": \"scale\", \"kind\": \"mul\", \"inputs\": {\"a\": \"x\", \"b\": \"w\"},"
                          " \"outputs\": {\"y\": \"y\"}}]}")
        .arg(data)
        .toUtf8();
}

}  // namespace

class TestDataPaths : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString cli_;
    QString project_dir_, outside_npy_;

    QString write(const QString &path, const QByteArray &text) { return test::write_bytes(path, text) ? path : QString(); }

    test::CliResult run(const QStringList &args) { return test::run_cli(cli_, args); }

    static QString refusal(const QString &data, const QString &why) {
        return "$.tensors[1].data: tensor \"w\": '" + data + "' is outside the project's folder (" + why +
               "); give --allow-outside-data to read it anyway";
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        cli_ = qEnvironmentVariable("TAPESTRY_CLI");
        // <tmp>/project/{w.npy, sub/w.npy, out -> ..}, <tmp>/secret.npy
        project_dir_ = dir_.filePath("project");
        QVERIFY(QDir().mkpath(project_dir_ + "/sub"));
        TensorData w(DType::f32, ZPoint({3}));
        for (int i = 0; i < 3; ++i) w.set(i, i + 1);
        outside_npy_ = dir_.filePath("secret.npy");
        QVERIFY(write_npy(w, outside_npy_.toStdString()).empty());
        QVERIFY(write_npy(w, (project_dir_ + "/w.npy").toStdString()).empty());
        QVERIFY(write_npy(w, (project_dir_ + "/sub/w.npy").toStdString()).empty());
        fs::create_directory_symlink("..", (project_dir_ + "/out").toStdString());
    }

    void resolve_data_path_data() {
        QTest::addColumn<QString>("data");
        QTest::addColumn<QString>("why");  // "" when inside
        QTest::newRow("plain") << "w.npy" << "";
        QTest::newRow("sub-folder") << "sub/w.npy" << "";
        QTest::newRow("'..' that stays inside") << "sub/../w.npy" << "";
        QTest::newRow("absolute") << "/proc/self/environ" << "an absolute path";
        QTest::newRow("'..' out") << "../secret.npy" << "'..' leaves the folder";
        QTest::newRow("'..' out deeper") << "sub/../../secret.npy" << "'..' leaves the folder";
        QTest::newRow("symbolic link out") << "out/secret.npy" << "a symbolic link leads out of it";
    }
    void resolve_data_path() {
        QFETCH(QString, data);
        QFETCH(QString, why);
        const auto r = tapestry::resolve_data_path(project_dir_.toStdString(), data.toStdString(), DataPathPolicy{});
        if (why.isEmpty()) {
            QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        } else {
            QVERIFY(!r);
            QCOMPARE(QString::fromStdString(r.error()), "'" + data + "' is outside the project's folder (" + why +
                                                            "); give --allow-outside-data to read it anyway");
        }
        // With the user's consent every path is taken as written.
        QVERIFY(tapestry::resolve_data_path(project_dir_.toStdString(), data.toStdString(), DataPathPolicy{true}));
    }

    // A project in the working folder (its folder ""): a missing file is missing,
    // not "outside" (the campaign found that it was taken for a link out).
    void missing_file_beside_a_project_in_the_working_folder() {
        const QString here = QDir::currentPath();
        QVERIFY(QDir::setCurrent(project_dir_));
        const auto r = tapestry::resolve_data_path("", "no-such.npy", DataPathPolicy{});
        QVERIFY(QDir::setCurrent(here));
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        QCOMPARE(QString::fromStdString(r->string()), QStringLiteral("no-such.npy"));
    }

    void loading_names_the_tensor_and_path() {
        LoadResult loaded = parse_project(project_with_data("../secret.npy").toStdString(), "p.json");
        QVERIFY(loaded.ok());
        Graph g = loaded.graph;
        std::vector<Issue> issues = load_tensor_values(g, project_dir_.toStdString());
        QCOMPARE(issues.size(), size_t{1});
        QCOMPARE(issues[0].code, std::string("data-outside-project"));
        QCOMPARE(issues[0].node, std::string("w"));
        QCOMPARE(issues[0].json_path, std::string("$.tensors[1].data"));
        QCOMPARE(QString::fromStdString(issues[0].message), refusal("../secret.npy", "'..' leaves the folder"));
        QVERIFY(!g.find_tensor(TensorId("w"))->value);  // nothing read
        QCOMPARE(data_paths_outside(g, project_dir_.toStdString()), std::vector<std::string>{"../secret.npy"});
        issues = load_tensor_values(g, project_dir_.toStdString(), DataPathPolicy{true});
        QVERIFY(issues.empty());
        QVERIFY(g.find_tensor(TensorId("w"))->value);
    }

    void commands_refuse_unless_allowed_data() {
        QTest::addColumn<QStringList>("args");  // %P: the project, %S: a session
        QTest::newRow("run") << QStringList{"run", "%P"};
        QTest::newRow("verify") << QStringList{"verify", "%P"};
        QTest::newRow("passes") << QStringList{"passes", "%P", "--shard", "scale:0=2", "--out", "%O", "--no-svg"};
        QTest::newRow("session import") << QStringList{"session", "import", "%S", "%P"};
    }
    void commands_refuse_unless_allowed() {
        QFETCH(QStringList, args);
        if (cli_.isEmpty()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString project = write(project_dir_ + "/absolute.tapestry.json", project_with_data(outside_npy_));
        QVERIFY(!project.isEmpty());
        const QString session = dir_.filePath(QString("s-%1.tapestry-session").arg(QTest::currentDataTag()));
        const QString out = dir_.filePath(QString("stages-%1").arg(QTest::currentDataTag()).replace(' ', '_'));
        for (QString &a : args) a.replace("%P", project).replace("%S", session).replace("%O", out);
        test::CliResult r = run(args);
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, "tapestry: " + project + ": error data-outside-project at $.tensors[1].data (w): " +
                            refusal(outside_npy_, "an absolute path"));
        QVERIFY(!QFileInfo::exists(session));  // nothing copied into a session
        r = run(QStringList(args) << "--allow-outside-data");
        QVERIFY2(r.code == 0, qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestDataPaths)
#include "test_data_paths.moc"
