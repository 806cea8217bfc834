#include "views/session_versions.h"

#include <mutex>
#include <set>
#include <utility>

#include "views/graph_diff.h"

namespace tapestry::views {

namespace {

// Held while a writer finds or makes a file's project (and, in versionHolding,
// the version it hangs off): the finding and the making are one step.
std::mutex &fileProjectsLock() {
    static std::mutex lock;
    return lock;
}

// The projects a Stages run, a search or a launch made for a document before the
// studio's join save of it came (session file, project), under the lock above:
// the join save that finds one has not continued an earlier project but met its
// own document's, made a moment before, and takes it off.
std::set<std::pair<std::string, qint64>> &projectsAwaitingTheirJoin() {
    static std::set<std::pair<std::string, qint64>> made;
    return made;
}

FileProject findOrMakeProject(store::Session &session, const QString &file, const QString &name,
                              bool join = false) {
    FileProject out;
    out.project = projectOfFile(session, file);
    out.continued = out.project != 0;
    if (out.continued) {
        if (join && projectsAwaitingTheirJoin().erase({session.path().string(), out.project}) > 0)
            out.continued = false;
        return out;
    }
    auto created = session.create_project(name.toStdString());
    if (!created) {
        out.error = QString::fromStdString(created.error().message);
        return out;
    }
    out.project = *created;
    if (!join) projectsAwaitingTheirJoin().insert({session.path().string(), out.project});
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
    auto file = session.source_file(project);
    return file ? QString::fromStdString(*file) : QString();
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
    auto set = session.set_source_file(project, file.toStdString());
    return set ? QString() : QString::fromStdString(set.error().message);
}

FileProject projectForFile(store::Session &session, const QString &file, const QString &name) {
    const std::lock_guard<std::mutex> lock(fileProjectsLock());
    return findOrMakeProject(session, file, name);
}

FileProject projectForFile(store::Session &session, const QString &file, const QString &name,
                           const std::function<void(const FileProject &found)> &then, bool join) {
    const std::lock_guard<std::mutex> lock(fileProjectsLock());
    FileProject found = findOrMakeProject(session, file, name, join);
    if (found.error.isEmpty()) then(found);
    return found;
}

SavedSnapshot saveSnapshot(store::Session &session, qint64 project, const Graph &graph,
                           const store::Placements &placements, const QString &name, const QString &file,
                           bool autosave, bool join) {
    SavedSnapshot out;
    auto save = [&](qint64 into) {
        out.project = into;
        if (join)
            if (auto latest = session.load_latest(into); latest && sameGraph(*latest, graph)) {
                out.unchanged = true;
                // A project saved before keeps its arrangement (what the studio
                // brought back); one whose only version a racing Stages run or
                // launch held has none: it gets the document's.
                auto kept = session.placements(into);
                if (kept && kept->empty())
                    if (auto set = session.set_placements(into, placements); !set)
                        out.error = QString::fromStdString(set.error().message);
                return;
            }
        auto saved = session.save_version(into, graph, autosave ? "autosave" : "save", &placements);
        if (!saved) out.error = QString::fromStdString(saved.error().message);
    };
    if (project != 0) {
        save(project);
        return out;
    }
    const FileProject found = projectForFile(
        session, file, name,
        [&](const FileProject &f) {
            out.continued = f.continued;
            (void)session.set_state(store::kSessionScope, "current_project", std::to_string(f.project));
            save(f.project);
        },
        join);
    if (!found.error.isEmpty()) out.error = found.error;
    return out;
}

}  // namespace tapestry::views
