// What the session store suites share: fresh session files in a temporary
// folder and opening them; SQL run on a session file with the plain SQLite API,
// outside the store (to plant rows the API would refuse, or to count rows); and a
// store result's code or message as text for QCOMPARE.
#pragma once

#include <sqlite3.h>

#include <QString>
#include <QTemporaryDir>
#include <QtGlobal>
#include <cstdint>
#include <memory>

#include "store/session.h"

namespace tapestry::test {

// Session files of a suite: s1, s2, … in a folder removed with the suite.
class SessionFiles {
public:
    bool valid() const { return dir_.isValid(); }
    QString path(const QString &name) const { return dir_.filePath(name); }
    QString fresh() { return path(QString("s%1.tapestry-session").arg(++counter_)); }
    // The open session, or null with the refusal printed.
    static std::unique_ptr<store::Session> open(const QString &file,
                                                store::OpenMode mode = store::OpenMode::read_write) {
        auto s = store::Session::open(file.toStdString(), mode);
        if (!s) qWarning("%s", s.error().message.c_str());
        return s ? std::move(s).value() : nullptr;
    }

private:
    QTemporaryDir dir_;
    int counter_ = 0;
};

// Runs SQL on a file with the plain SQLite API, outside the store.
inline bool raw_exec(const QString &path, const char *sql) {
    sqlite3 *db = nullptr;
    bool ok = sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) ==
              SQLITE_OK;
    ok = ok && sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

// The first column of the first row of a query (-1 when there is none).
inline std::int64_t raw_int(const QString &path, const char *sql) {
    sqlite3 *db = nullptr;
    std::int64_t v = -1;
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt *s = nullptr;
        if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return v;
}

// The code of a refusal, or "ok" when the call succeeded: an unexpected success
// then fails the comparison instead of stopping the suite at error().
template <typename R>
QString code_of(const R &r) {
    return r ? QString("ok") : QString::fromStdString(r.error().code);
}
template <typename R>
QString message_of(const R &r) {
    return r ? QString("ok") : QString::fromStdString(r.error().message);
}

}  // namespace tapestry::test
