#include "views/session_versions.h"

#include "views/graph_diff.h"

namespace tapestry::views {

VersionHolding versionHolding(store::Session &session, qint64 project, const QString &name, const Graph &graph) {
    VersionHolding out;
    out.project = project;
    if (project != 0) {
        auto info = session.project(project);
        auto latest = session.load_latest(project);
        if (info && latest && sameGraph(*latest, graph)) {
            out.version = info->latest_version_id;
            return out;
        }
    }
    if (out.project == 0) {
        auto created = session.create_project(name.toStdString());
        if (!created) {
            out.error = QString::fromStdString(created.error().message);
            return out;
        }
        out.project = *created;
    }
    auto saved = session.save_version(out.project, graph, "autosave");
    if (!saved)
        out.error = QString::fromStdString(saved.error().message);
    else
        out.version = saved->id;
    return out;
}

}  // namespace tapestry::views
