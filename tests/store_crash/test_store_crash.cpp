// Crash safety of the session store (label `slow`): a child process autosaves a
// stream of edits and is SIGKILLed at a random moment, 100 times on the same
// file. After every kill the file must pass PRAGMA integrity_check, and its latest
// version must be the last one the child reported committed (or the one after it,
// committed but not yet reported) and load equal to what the child saved.
// The seed is printed; TAPESTRY_CRASH_SEED=<seed> replays a run.
#include <sqlite3.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <random>

#include "crash_graph.h"
#include "store/session.h"

using namespace tapestry;

namespace {

constexpr int kKills = 100;

std::string integrity_check(const QString &path) {
    sqlite3 *db = nullptr;
    std::string result;
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
        sqlite3_stmt *s = nullptr;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK)
            while (sqlite3_step(s) == SQLITE_ROW)
                result += (result.empty() ? "" : "; ") +
                          std::string(reinterpret_cast<const char *>(sqlite3_column_text(s, 0)));
        sqlite3_finalize(s);
    } else {
        result = sqlite3_errmsg(db);
    }
    sqlite3_close(db);
    return result;
}

// The last "committed N" line in the child's output, 0 if none.
int last_reported(const QByteArray &out) {
    int last = 0;
    for (const QByteArray &line : out.split('\n'))
        if (line.startsWith("committed ")) last = line.mid(10).toInt();
    return last;
}

QString graph_difference(const Graph &a, const Graph &b) {
    if (a.name != b.name || a.description != b.description) return "name or description";
    if (a.tensors().size() != b.tensors().size() || a.operations().size() != b.operations().size())
        return "node counts";
    for (size_t i = 0; i < a.tensors().size(); ++i)
        if (!(*a.tensors()[i] == *b.tensors()[i])) return "tensor " + QString::fromStdString(a.tensors()[i]->id.value);
    for (size_t i = 0; i < a.operations().size(); ++i)
        if (!(*a.operations()[i] == *b.operations()[i]))
            return "operation " + QString::fromStdString(a.operations()[i]->id.value);
    return {};
}

}  // namespace

class TestStoreCrash : public QObject {
    Q_OBJECT

private slots:
    void killed_autosaver_leaves_a_good_file() {
        std::uint64_t seed = std::random_device{}();
        if (qEnvironmentVariableIsSet("TAPESTRY_CRASH_SEED"))
            seed = qEnvironmentVariable("TAPESTRY_CRASH_SEED").toULongLong();
        std::printf("crash-safety: seed %llu (TAPESTRY_CRASH_SEED=%llu replays this run)\n",
                    static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
        std::mt19937_64 rng(seed);
        // One kill in ten at a random moment from the child's start (opening,
        // recovering the last kill's WAL, creating the project); the others at a
        // random moment after its first reported commit, inside the stream.
        std::uniform_int_distribution<int> startup_ms(0, 40), stream_ms(0, 80), which(0, 9);

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("crash.tapestry-session");
        int committed = 0;  // the latest version known to be in the file
        int intact = 0, killed_mid_stream = 0;
        for (int kill = 1; kill <= kKills; ++kill) {
            QProcess child;
            child.start(TAPESTRY_STORE_CRASH_CHILD, {path});
            QVERIFY2(child.waitForStarted(10000), qPrintable(child.errorString()));
            QByteArray out;
            if (which(rng) == 0) {
                QThread::msleep(static_cast<unsigned long>(startup_ms(rng)));
            } else {
                const unsigned long wait = static_cast<unsigned long>(stream_ms(rng));
                while (!out.contains("committed") && child.waitForReadyRead(10000))
                    out += child.readAllStandardOutput();
                QThread::msleep(wait);
            }
            child.kill();  // SIGKILL
            QVERIFY(child.waitForFinished(10000));
            out += child.readAllStandardOutput();
            const QByteArray err = child.readAllStandardError();
            QVERIFY2(child.exitStatus() == QProcess::CrashExit, qPrintable("the child exited by itself: " + err));
            const int reported = last_reported(out);
            if (reported > 0) ++killed_mid_stream;

            const std::string check = integrity_check(path);
            QVERIFY2(check == "ok", qPrintable(QString("kill %1: integrity_check: %2").arg(kill).arg(check.c_str())));

            auto session = store::Session::open(path.toStdString(), store::OpenMode::read_write);
            QVERIFY2(session, session ? "" : session.error().message.c_str());
            auto projects = (*session)->projects();
            QVERIFY(projects);
            if (projects->empty()) {  // killed before it created the project
                QCOMPARE(reported, 0);
                ++intact;
                continue;
            }
            const store::ProjectId project = projects->front().id;
            auto versions = (*session)->versions(project);
            QVERIFY(versions);
            const int latest = versions->empty() ? 0 : versions->back().number;
            const int expected = reported > 0 ? reported : committed;
            QVERIFY2(latest == expected || latest == expected + 1,
                     qPrintable(QString("kill %1: the file's latest version is %2; the child reported %3 committed")
                                    .arg(kill)
                                    .arg(latest)
                                    .arg(expected)));
            QVERIFY2(latest >= committed, "a committed version was lost");
            QCOMPARE(static_cast<int>(versions->size()), latest);  // no gaps: 1 … latest
            if (latest > 0) {
                auto graph = (*session)->load_latest(project);
                QVERIFY2(graph, graph ? "" : graph.error().message.c_str());
                QCOMPARE(graph_difference(*graph, crash_test::graph_for_version(latest)), QString());
            }
            committed = latest;
            ++intact;
        }
        std::printf("crash-safety: %d/%d kills, %s (%d killed mid-stream, %d versions committed in all)\n", intact,
                    kKills, intact == kKills ? "all intact" : "NOT all intact", killed_mid_stream, committed);
        QCOMPARE(intact, kKills);
        QVERIFY2(killed_mid_stream >= kKills * 3 / 4, "too few kills landed while the child was saving");
    }
};

QTEST_GUILESS_MAIN(TestStoreCrash)
#include "test_store_crash.moc"
