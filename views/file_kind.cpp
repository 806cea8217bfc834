#include "views/file_kind.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

namespace tapestry::views {

FileKind kindOfFile(const QString &path) {
    if (path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive)) return FileKind::onnx;
    if (path.endsWith(QLatin1String(".tapestry-session"), Qt::CaseInsensitive)) return FileKind::session;
    // Only a regular file no larger than the readers take (a FIFO would block the
    // read, a device or a huge file would be read whole): anything else is no file
    // of ours.
    const QFileInfo info(path);
    if (!info.isFile() || info.size() > static_cast<qint64>(kMaxSniffedBytes)) return FileKind::unknown;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return FileKind::unknown;
    static constexpr char kSqlite[] = "SQLite format 3";  // the header's first 16 bytes, NUL included
    const QByteArray head = file.peek(sizeof kSqlite);
    if (head == QByteArray(kSqlite, sizeof kSqlite)) return FileKind::session;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll());
    const QString format = doc.object().value(QStringLiteral("format")).toString();
    if (format == QLatin1String("tapestry-project")) return FileKind::project;
    if (format == QLatin1String("tapestry-plan")) return FileKind::plan;
    if (format == QLatin1String("tapestry-front")) return FileKind::front;
    if (format == QLatin1String("tapestry-target")) return FileKind::target;
    return FileKind::unknown;
}

QString fileKindText(FileKind kind) {
    switch (kind) {
    case FileKind::project: return QCoreApplication::translate("FileKind", "a project file");
    case FileKind::plan: return QCoreApplication::translate("FileKind", "a plan file");
    case FileKind::front: return QCoreApplication::translate("FileKind", "a front file");
    case FileKind::target: return QCoreApplication::translate("FileKind", "a target file");
    case FileKind::session: return QCoreApplication::translate("FileKind", "a session file");
    case FileKind::onnx: return QCoreApplication::translate("FileKind", "an ONNX model");
    case FileKind::unknown: break;
    }
    return {};
}

}  // namespace tapestry::views
