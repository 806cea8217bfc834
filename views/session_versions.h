// Which editor version of a session project holds a graph: what the studio's
// records hang off (a pipeline's stages, a search run). Shared by the Stages and
// Optimize docks; called on worker threads, as every session write is.
#pragma once

#include <QHash>
#include <QPointF>
#include <QSet>
#include <QString>
#include <functional>

#include "graph/graph.h"
#include "store/session.h"

namespace tapestry::views {

struct VersionHolding {
    qint64 project = 0;            // the project (created when none was given)
    store::VersionId version = 0;  // 0 with an error
    QString error;                 // the store's message
};

// The project's latest editor version when it is `graph`; else `graph` saved as
// a new "autosave" version. With `project` 0: the project `file` continues
// (projectForFile), else one named `name` made for it. The whole of it holds
// projectForFile's lock: racing callers hold one version, not one each.
VersionHolding versionHolding(store::Session &session, qint64 project, const QString &name, const QString &file,
                              const Graph &graph);

// The project a document read from `file` (an absolute path: a project file or an
// imported model) continues: the newest one the studio made for that file or last
// saved it as; 0 when there is none (or the session cannot say).
qint64 projectOfFile(store::Session &session, const QString &file);
// The file `project` continues, "" when none is recorded.
QString fileOfProject(store::Session &session, qint64 project);
// Records that `project` is the one `file` continues; "" or the store's message.
QString recordProjectFile(store::Session &session, qint64 project, const QString &file);

// The project a document read from `file` goes into: the one the file continues,
// else a new one named `name`, recorded as the file's ("" file: always a new one,
// recorded nowhere). Finding and making are one step under a process-wide lock,
// so a save and a Stages run or a launch racing for a document just opened make
// one project, not two (another process cannot have the session open).
struct FileProject {
    qint64 project = 0;      // 0 with an error
    bool continued = false;  // it existed
    QString error;
};
FileProject projectForFile(store::Session &session, const QString &file, const QString &name);
// projectForFile, then `then(found)` while the lock is still held, so a writer's
// look at the project's latest version and its save are one step with the finding
// (the studio's save; versionHolding). Not called when the finding failed.
// `join`: the finder is the join save of a document just opened; a project
// another writer (versionHolding, projectForFile) made for the file and no join
// save has found since is that document's own, so not `continued`.
FileProject projectForFile(store::Session &session, const QString &file, const QString &name,
                           const std::function<void(const FileProject &found)> &then, bool join = false);

// One save of the studio's document into the session. With `project` 0, the
// project `file` continues (projectForFile) or a new one named `name` made for
// it; `join`: the document was just opened, so when the project's latest
// version is already `graph` — the file's earlier project, or a version a Stages
// run or a launch racing this save held — no version is written, and the
// placements only where the project has none. With `project` 0 the whole of it
// holds projectForFile's lock.
struct SavedSnapshot {
    qint64 project = 0;
    QString error;           // "" when saved
    bool continued = false;  // the document went on with the project its file had
    bool unchanged = false;  // … whose latest version is already its graph: no version written
};
SavedSnapshot saveSnapshot(store::Session &session, qint64 project, const Graph &graph,
                           const store::Placements &placements, const QString &name, const QString &file,
                           bool autosave, bool join);

// How the project `file` continues keeps its nodes: the positions and pins of its
// latest version, when that version is `graph` (the file is unchanged since);
// `project` 0 and nothing else when there is no such project, the file changed,
// or the session cannot say. Project files keep no layout, so this is what
// brings a user's arrangement back when the file is opened again.
struct FileArrangement {
    qint64 project = 0;
    QHash<QString, QPointF> positions;
    QSet<QString> pinned;
};
FileArrangement arrangementOfFile(store::Session &session, const QString &file, const Graph &graph);
// Placements as the canvas takes them: node positions, and the pinned nodes.
void unpackPlacements(const store::Placements &placements, QHash<QString, QPointF> &positions, QSet<QString> &pinned);

}  // namespace tapestry::views
