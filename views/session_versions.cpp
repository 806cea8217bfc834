#include "views/session_versions.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <mutex>

#include "views/graph_diff.h"

namespace tapestry::views {

namespace {

constexpr std::string_view kSourceFileKey = "source_file";

// Held while a writer finds or makes a file's project (and, in versionHolding,
// the version it hangs off): the finding and the making are one step.
std::mutex &fileProjectsLock() {
    static std::mutex lock;
    return lock;
}

FileProject findOrMakeProject(store::Session &session, const QString &file, const QString &name) {
    FileProject out;
    out.project = projectOfFile(session, file);
    out.continued = out.project != 0;
    if (out.continued) return out;
    auto created = session.create_project(name.toStdString());
    if (!created) {
        out.error = QString::fromStdString(created.error().message);
        return out;
    }
    out.project = *created;
    // Should this not be written, the file only makes a new project the next time.
    (void)recordProjectFile(session, out.project, file);
    return out;
}

}  // namespace

VersionHolding versionHolding(store::Session &session, qint64 project, const QString &name, const QString &file,
                              const Graph &graph) {
    VersionHolding out;
    const std::lock_guard<std::mutex> lock(fileProjectsLock());
    if (project == 0) {
        const FileProject found = findOrMakeProject(session, file, name);
        if (!found.error.isEmpty()) {
            out.error = found.error;
            return out;
        }
        project = found.project;
    }
    out.project = project;
    auto info = session.project(project);
    auto latest = session.load_latest(project);
    if (info && latest && sameGraph(*latest, graph)) {
        out.version = info->latest_version_id;
        return out;
    }
    auto saved = session.save_version(project, graph, "autosave");
    if (!saved)
        out.error = QString::fromStdString(saved.error().message);
    else
        out.version = saved->id;
    return out;
}

QString fileOfProject(store::Session &session, qint64 project) {
    auto json = session.state(project, kSourceFileKey);
    if (!json || !json->has_value()) return {};
    return QJsonDocument::fromJson(QByteArray::fromStdString(**json)).object().value(QStringLiteral("path")).toString();
}

qint64 projectOfFile(store::Session &session, const QString &file) {
    if (file.isEmpty()) return 0;
    auto projects = session.projects();
    if (!projects) return 0;
    for (auto p = projects->rbegin(); p != projects->rend(); ++p)
        if (fileOfProject(session, p->id) == file) return p->id;
    return 0;
}

FileArrangement arrangementOfFile(store::Session &session, const QString &file, const Graph &graph) {
    FileArrangement out;
    const qint64 project = projectOfFile(session, file);
    if (project == 0) return out;
    auto latest = session.load_latest(project);
    if (!latest || !sameGraph(*latest, graph)) return out;
    auto placements = session.placements(project);
    if (!placements) return out;
    out.project = project;
    unpackPlacements(*placements, out.positions, out.pinned);
    return out;
}

void unpackPlacements(const store::Placements &placements, QHash<QString, QPointF> &positions, QSet<QString> &pinned) {
    for (const auto &[node, p] : placements) {
        const QString id = QString::fromStdString(node);
        positions.insert(id, QPointF(p.x, p.y));
        if (p.pinned) pinned.insert(id);
    }
}

QString recordProjectFile(store::Session &session, qint64 project, const QString &file) {
    if (project == 0 || file.isEmpty()) return {};
    const QByteArray json = QJsonDocument(QJsonObject{{QStringLiteral("path"), file}}).toJson(QJsonDocument::Compact);
    auto set = session.set_state(project, kSourceFileKey, json.toStdString());
    return set ? QString() : QString::fromStdString(set.error().message);
}

FileProject projectForFile(store::Session &session, const QString &file, const QString &name) {
    const std::lock_guard<std::mutex> lock(fileProjectsLock());
    return findOrMakeProject(session, file, name);
}

}  // namespace tapestry::views
