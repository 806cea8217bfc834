// Hostile inputs (issue 14), one group per class: each bad input, the exact
// message a user sees, exit 1, and no file changed. Here: special and oversized
// files are refused before they are read (class 3), a foreign SQLite file is
// refused without a byte of it changing (class 5), and two processes importing
// into one session at once both succeed (the session race). The CLI cases run
// the binary named by $TAPESTRY_CLI.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <chrono>
#include <cstring>
#include <future>

#include "cli_run.h"
#include "io/bounded_file.h"
#include "io/npy.h"
#include "io/onnx_import.h"
#include "io/project_file.h"
#include "io/tensor_values.h"
#include "store/session.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

using Result = test::CliResult;

QByteArray file_hash(const QString &path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
}

bool write_file(const QString &path, const QByteArray &bytes) {
    return test::write_bytes(path, bytes);
}

bool sql_exec(const QString &path, const char *sql) {
    sqlite3 *db = nullptr;
    bool ok = sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) ==
              SQLITE_OK;
    ok = ok && sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

// A file of `size` bytes that takes no disk space (a hole), starting with `head`.
bool sparse_file(const QString &path, const QByteArray &head, qint64 size) {
    if (!write_file(path, head)) return false;
    return ::truncate(path.toUtf8().constData(), size) == 0;
}

// A listening Unix socket at `path` (closed by the caller); -1 on failure.
int make_socket(const QString &path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const QByteArray p = path.toUtf8();
    if (static_cast<size_t>(p.size()) >= sizeof(addr.sun_path)) return ::close(fd), -1;
    std::memcpy(addr.sun_path, p.constData(), static_cast<size_t>(p.size()));
    if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) return ::close(fd), -1;
    return fd;
}

// A .npy v1.0 file: header dict (padded) and `data`.
QByteArray npy(const QByteArray &dict, const QByteArray &data) {
    QByteArray header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    QByteArray out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
}

constexpr const char *kProject = R"({
  "format": "tapestry-project",
  "version": 1,
  "name": "scaled",
  "tensors": [
    {"id": "x", "dtype": "f32", "shape": [2, 3], "role": "input"},
    {"id": "w", "dtype": "f32", "shape": [3], "role": "parameter", "value": [1, 2, 3]},
    {"id": "y", "dtype": "f32", "shape": [2, 3], "role": "output"}
  ],
  "operations": [
    {"id": "scale", "kind": "mul", "inputs": {"a": "x", "b": "w"}, "outputs": {"y": "y"}}
  ]
}
)";

// The same project with w's value in the file `data` names.
QByteArray project_with_data(const QString &data) {
    QByteArray p(kProject);
    p.replace("\"value\": [1, 2, 3]", "\"data\": \"" + data.toUtf8() + '"');
    return p;
}

}  // namespace

class TestHardening : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString cli_;
    int counter_ = 0;

    QString fresh(const QString &suffix) { return dir_.filePath(QString("f%1%2").arg(++counter_).arg(suffix)); }

    // Runs the CLI; a run that does not finish in 20 s is a hang (code -1).
    Result run(const QStringList &args, int timeout_ms = 20000) { return test::run_cli(cli_, args, dir_.path(), timeout_ms); }

    bool have_cli() const { return !cli_.isEmpty(); }

    // `path` as a special file of `kind`; the socket's descriptor goes to `socket_fd`.
    QString special(const QString &kind, int &socket_fd) {
        socket_fd = -1;
        if (kind == "character device") return "/dev/zero";
        const QString path = fresh(kind == "directory" ? ".d" : ".f");
        if (kind == "FIFO") return ::mkfifo(path.toUtf8().constData(), 0600) == 0 ? path : QString();
        if (kind == "directory") return QDir().mkpath(path) ? path : QString();
        if (kind == "socket") {
            socket_fd = make_socket(path);
            return socket_fd >= 0 ? path : QString();
        }
        return {};
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        cli_ = qEnvironmentVariable("TAPESTRY_CLI");
    }

    // ---- class 3: special and oversized files ---------------------------------------

    void special_file_is_refused_by_name_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("reason");  // after "<path>: "
        QTest::newRow("/dev/zero") << "character device" << "is a character device, not a regular file";
        QTest::newRow("FIFO") << "FIFO" << "is a FIFO (named pipe), not a regular file";
        QTest::newRow("socket") << "socket" << "is a socket, not a regular file";
        QTest::newRow("directory") << "directory" << "is a directory, not a project file";
    }
    void special_file_is_refused_by_name() {
        QFETCH(QString, kind);
        QFETCH(QString, reason);
        int socket_fd = -1;
        const QString path = special(kind, socket_fd);
        QVERIFY2(!path.isEmpty(), "cannot make the special file");
        // The engine: one io issue naming the path and what it is, at once.
        QElapsedTimer clock;
        clock.start();
        LoadResult r = load_project(path.toStdString());
        QVERIFY(clock.elapsed() < 5000);
        QCOMPARE(r.issues.size(), size_t{1});
        QCOMPARE(QString::fromStdString(r.issues[0].code), QString("io"));
        QCOMPARE(QString::fromStdString(r.issues[0].message), path + ": " + reason);
        // The CLI: exit 1 with that message, never a hang.
        if (have_cli()) {
            const Result v = run({"validate", path});
            QCOMPARE(v.code, 1);
            QCOMPARE(v.err, "tapestry: " + path + ": error io: " + path + ": " + reason);
        }
        if (socket_fd >= 0) ::close(socket_fd);
    }

    void special_file_is_refused_by_every_reader_data() {
        QTest::addColumn<QString>("kind");
        QTest::newRow("/dev/zero") << "character device";
        QTest::newRow("FIFO") << "FIFO";
    }
    void special_file_is_refused_by_every_reader() {
        QFETCH(QString, kind);
        int socket_fd = -1;
        const QString path = special(kind, socket_fd);
        QVERIFY(!path.isEmpty());
        const std::string p = path.toStdString();
        const QString reason = kind == "FIFO" ? "is a FIFO (named pipe), not a regular file"
                                              : "is a character device, not a regular file";
        // Each reader on a thread: should one block on the FIFO, a writer opened
        // here releases it and the test fails instead of hanging.
        auto guarded = [&](auto read) {
            auto result = std::async(std::launch::async, read);
            if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
                const int w = ::open(p.c_str(), O_WRONLY | O_NONBLOCK);
                if (w >= 0) ::close(w);
                result.wait();
                return QString("blocked");
            }
            return result.get();
        };
        QCOMPARE(guarded([&] { return QString::fromStdString(read_npy(p).error()); }), path + ": " + reason);
        const QString name = QString::fromStdString(fs::path(p).filename().string());
        QCOMPARE(guarded([&] { return QString::fromStdString(import_onnx(p).error().message); }), name + ": " + reason);
        QCOMPARE(guarded([&] { return QString::fromStdString(read_regular_file(p, kMiB, "a file").error()); }),
                 reason);
    }

    // `tapestry run --inputs DIR` where the input's .npy is a FIFO: refused, not blocked.
    void fifo_as_input_npy_is_refused() {
        if (!have_cli()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString project = fresh(".tapestry.json");
        QVERIFY(write_file(project, kProject));
        const QString inputs = fresh(".inputs");
        QVERIFY(QDir().mkpath(inputs));
        const QString fifo = inputs + "/x.npy";
        QVERIFY(::mkfifo(fifo.toUtf8().constData(), 0600) == 0);
        for (const QString &command : {QString("run"), QString("verify")}) {
            const Result r = run({command, project, "--inputs", inputs});
            QCOMPARE(r.code, 1);
            QVERIFY2(r.err.contains(fifo + ": is a FIFO (named pipe), not a regular file"), qPrintable(r.err));
        }
    }

    void special_data_path_is_refused_by_name_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("reason");
        QTest::newRow("/dev/zero") << "character device" << "is a character device, not a regular file";
        QTest::newRow("FIFO in the project folder") << "FIFO" << "is a FIFO (named pipe), not a regular file";
    }
    void special_data_path_is_refused_by_name() {
        QFETCH(QString, kind);
        QFETCH(QString, reason);
        int socket_fd = -1;
        const QString data = special(kind, socket_fd);
        QVERIFY(!data.isEmpty());
        const QString project = fresh(".tapestry.json");
        QVERIFY(write_file(project, project_with_data(data)));
        LoadResult r = load_project(project.toStdString());
        QVERIFY(r.ok());
        // The paths are absolute: read only with the user's consent (class 6).
        const std::vector<Issue> issues =
            load_tensor_values(r.graph, dir_.path().toStdString(), DataPathPolicy{true});
        QCOMPARE(issues.size(), size_t{1});
        const QString expected = "$.tensors[1].data: tensor \"w\": " + data + ": " + reason;
        QCOMPARE(QString::fromStdString(issues[0].message), expected);
        if (have_cli()) {
            const Result v = run({"run", project, "--allow-outside-data"});
            QCOMPARE(v.code, 1);
            QCOMPARE(v.err, "tapestry: " + project + ": error tensor-data at $.tensors[1].data (w): " + expected);
        }
    }

    // The header's shape and dtype say how many bytes follow; a file with more
    // or fewer is refused from its size alone (the headers here are 128 bytes). The 8 GiB file is a hole:
    // reading them whole (as before) would take seconds and 8 GiB of memory.
    void npy_size_is_checked_against_the_header_before_its_data_are_read_data() {
        QTest::addColumn<QByteArray>("dict");
        QTest::addColumn<qint64>("size");
        QTest::addColumn<QString>("reason");
        QTest::newRow("8 GiB after a 4-element header")
            << QByteArray("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }") << (qint64{8} << 30)
            << "the data is 8589934464 bytes but shape (4,) of '<f4' needs 16 bytes (extra bytes after the array)";
        QTest::newRow("2^40 elements declared, 64 bytes present")
            << QByteArray("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }") << qint64{192}
            << "the data is 64 bytes but shape (1099511627776,) of '<f4' needs 4398046511104 bytes (the file is "
               "truncated)";
    }
    void npy_size_is_checked_against_the_header_before_its_data_are_read() {
        QFETCH(QByteArray, dict);
        QFETCH(qint64, size);
        QFETCH(QString, reason);
        const QString path = fresh(".npy");
        QVERIFY(sparse_file(path, npy(dict, {}), size));
        QElapsedTimer clock;
        clock.start();
        auto t = read_npy(path.toStdString());
        QVERIFY(!t);
        QCOMPARE(QString::fromStdString(t.error()), path + ": " + reason);
        QVERIFY2(clock.elapsed() < 2000, "the data were read before the size check");
        QCOMPARE(QFileInfo(path).size(), size);  // hashing 8 GiB of holes is slow: the size says it is unchanged
    }

    void npy_header_past_the_limit_is_refused() {
        // A v2.0 header claiming 2 MiB, all of it present: not read as a header.
        const quint32 length = 2u << 20;
        QByteArray bytes("\x93NUMPY\x02\x00", 8);
        for (int i = 0; i < 4; ++i) bytes += static_cast<char>((length >> (8 * i)) & 0xff);
        bytes += QByteArray(static_cast<int>(length), ' ');
        const QString path = fresh(".npy");
        QVERIFY(write_file(path, bytes));
        auto t = read_npy(path.toStdString());
        QVERIFY(!t);
        QCOMPARE(QString::fromStdString(t.error()),
                 path + ": the .npy header is 2097152 bytes, larger than the 1 MiB limit for a header (NumPy writes a "
                        "few hundred)");
    }

    void oversized_project_file_is_refused_before_reading() {
        const QString path = fresh(".tapestry.json");
        QVERIFY(sparse_file(path, "{", (qint64{1} << 30) + 1));
        QElapsedTimer clock;
        clock.start();
        LoadResult r = load_project(path.toStdString());
        QVERIFY(clock.elapsed() < 2000);
        QCOMPARE(r.issues.size(), size_t{1});
        QCOMPARE(QString::fromStdString(r.issues[0].message),
                 path + ": is 1073741825 bytes, larger than the 1 GiB limit for a project file");
        if (have_cli()) {
            const Result v = run({"validate", path});
            QCOMPARE(v.code, 1);
            QCOMPARE(v.err, "tapestry: " + path + ": error io: " + r.issues[0].message.c_str());
        }
    }

    // A regular file that reports size 0 but has contents (as under /proc) is
    // still read only up to the limit.
    void reading_stops_at_the_limit_whatever_the_size_says() {
        if (!QFile::exists("/proc/self/status")) QSKIP("no /proc");
        auto small = read_regular_file("/proc/self/status", 16, "a test file");
        QVERIFY(!small);
        QCOMPARE(QString::fromStdString(small.error()),
                 QString("is more than 16 bytes, larger than the 16 bytes limit for a test file"));
        auto whole = read_regular_file("/proc/self/status", kMiB, "a test file");
        QVERIFY(whole);
        QVERIFY(whole->find("Name:") != std::string::npos);
    }

    // ---- class 5: a refused session file is never modified ---------------------------

    void foreign_sqlite_file_is_refused_unchanged_data() {
        QTest::addColumn<QByteArray>("sql");  // run on a new SQLite file; empty: garbage bytes instead
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("reason");  // after "session <path> "
        QTest::newRow("another application's tables, user_version 1")
            << QByteArray("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                          "INSERT INTO customers VALUES (1, 'Ada'); PRAGMA user_version = 1;")
            << "invalid"
            << "is an SQLite database but not a Tapestry session (its schema version is 1 but it has no table "
               "'projects'); it was left unchanged";
        QTest::newRow("a session's first tables only, user_version 2")
            << QByteArray("CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT, created_at TEXT, updated_at "
                          "TEXT); PRAGMA user_version = 2;")
            << "invalid"
            << "is an SQLite database but not a Tapestry session (its schema version is 2 but it has no table "
               "'graph_versions'); it was left unchanged";
        QTest::newRow("another application's tables, no user_version")
            << QByteArray("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);") << "invalid"
            << "is an SQLite database but not a Tapestry session (it has tables and no schema version); it was left "
               "unchanged";
        QTest::newRow("garbage") << QByteArray() << "damaged"
                                 << "is damaged or not a Tapestry session (file is not a database); it was left "
                                    "unchanged";
    }
    void foreign_sqlite_file_is_refused_unchanged() {
        QFETCH(QByteArray, sql);
        QFETCH(QString, code);
        QFETCH(QString, reason);
        const QString path = fresh(".tapestry-session");
        if (sql.isEmpty()) {
            QByteArray junk;
            for (int i = 0; i < 8192; ++i) junk += static_cast<char>((i * 7919 + 13) & 0xff);
            QVERIFY(write_file(path, junk));
        } else {
            QVERIFY(sql_exec(path, sql.constData()));
        }
        const QByteArray before = file_hash(path);
        const QString message = "session " + path + " " + reason;
        for (store::OpenMode mode : {store::OpenMode::read_write, store::OpenMode::read_only}) {
            auto s = store::Session::open(path.toStdString(), mode);
            QVERIFY(!s);
            QCOMPARE(QString::fromStdString(s.error().code), code);
            QCOMPARE(QString::fromStdString(s.error().message), message);
            QCOMPARE(file_hash(path), before);
        }
        if (have_cli()) {
            const QString project = fresh(".tapestry.json");
            QVERIFY(write_file(project, kProject));
            for (const QStringList &args : {QStringList{"session", "import", path, project},
                                            QStringList{"session", "list", path},
                                            QStringList{"session", "export", path, "-o", fresh(".out")}}) {
                const Result r = run(args);
                QCOMPARE(r.code, 1);
                QCOMPARE(r.err, "tapestry: " + message);
                QCOMPARE(file_hash(path), before);
            }
        }
        QVERIFY(!QFile::exists(path + "-wal"));
        QVERIFY(!QFile::exists(path + "-shm"));
        QVERIFY(!QFile::exists(path + "-journal"));
    }

    void special_file_as_session_is_refused() {
        int socket_fd = -1;
        const QString fifo = special("FIFO", socket_fd);
        QVERIFY(!fifo.isEmpty());
        for (const QString &path : {QString("/dev/null"), fifo}) {
            const QString what = path == fifo ? "a FIFO (named pipe)" : "a character device";
            for (store::OpenMode mode : {store::OpenMode::read_write, store::OpenMode::read_only}) {
                // "code: message" of the refusal, or "opened".
                auto opened = std::async(std::launch::async, [&] {
                    auto s = store::Session::open(path.toStdString(), mode);
                    return s ? QString("opened") : QString::fromStdString(s.error().code + ": " + s.error().message);
                });
                if (opened.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
                    const int w = ::open(path.toUtf8().constData(), O_WRONLY | O_NONBLOCK);
                    if (w >= 0) ::close(w);
                    opened.wait();
                    QFAIL("opening a special file as a session blocked");
                }
                QCOMPARE(opened.get(),
                         "invalid: session " + path + " is " + what + ", not a regular file; it was left unchanged");
            }
        }
    }

    // ---- the session race ---------------------------------------------------------------

    // A script's imports in a row or at once: each waits for the one before.
    void concurrent_imports_all_succeed() {
        if (!have_cli()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString project = fresh(".tapestry.json");
        QVERIFY(write_file(project, kProject));
        const QString session = fresh(".tapestry-session");
        constexpr int kImports = 4;
        std::vector<std::unique_ptr<QProcess>> processes;
        for (int i = 0; i < kImports; ++i) {
            processes.push_back(std::make_unique<QProcess>());
            processes.back()->start(cli_, {"session", "import", session, project, "--name", QString("p%1").arg(i)});
        }
        for (auto &p : processes) {
            QVERIFY(p->waitForFinished(60000));
            QCOMPARE(p->exitStatus(), QProcess::NormalExit);
            QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
        }
        auto s = store::Session::open(session.toStdString(), store::OpenMode::read_only);
        QVERIFY(s);
        QCOMPARE((*s)->projects()->size(), size_t{kImports});
    }

    // The holder lets go after a second: the waiting import then succeeds.
    void import_waits_for_the_session_lock() {
        if (!have_cli()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString project = fresh(".tapestry.json");
        QVERIFY(write_file(project, kProject));
        const QString session = fresh(".tapestry-session");
        auto opened = store::Session::open(session.toStdString());
        QVERIFY(opened);
        std::unique_ptr<store::Session> held = std::move(opened).value();
        QProcess p;
        p.start(cli_, {"session", "import", session, project});
        QVERIFY(p.waitForStarted());
        QTest::qWait(1000);
        QCOMPARE(p.state(), QProcess::Running);  // waiting, not refused
        held.reset();
        QVERIFY(p.waitForFinished(30000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        auto s = store::Session::open(session.toStdString(), store::OpenMode::read_only);
        QVERIFY(s);
        QCOMPARE((*s)->projects()->size(), size_t{1});
    }

    // The wait is bounded: a session held longer than --wait is refused with the
    // usual message and how long it waited.
    void import_wait_is_bounded() {
        if (!have_cli()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString project = fresh(".tapestry.json");
        QVERIFY(write_file(project, kProject));
        const QString session = fresh(".tapestry-session");
        auto held = store::Session::open(session.toStdString());
        QVERIFY(held);
        const QByteArray before = file_hash(session);
        const Result r = run({"session", "import", session, project, "--wait", "0.5"});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, "tapestry: session " + session + " is open in another Tapestry window or process (waited 500 ms)");
        QVERIFY2(r.ms >= 500 && r.ms < 10000, qPrintable(QString::number(r.ms)));
        QCOMPARE(file_hash(session), before);
    }
};

QTEST_GUILESS_MAIN(TestHardening)
#include "test_hardening.moc"
