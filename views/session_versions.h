// Which editor version of a session project holds a graph: what the studio's
// records hang off (a pipeline's stages, a search run). Shared by the Stages and
// Optimize docks; called on worker threads, as every session write is.
#pragma once

#include <QString>

#include "graph/graph.h"
#include "store/session.h"

namespace tapestry::views {

struct VersionHolding {
    qint64 project = 0;            // the project (created when none was given)
    store::VersionId version = 0;  // 0 with an error
    QString error;                 // the store's message
};

// The project's latest editor version when it is `graph`; else `graph` saved as
// a new "autosave" version — the project named `name` created first when
// `project` is 0.
VersionHolding versionHolding(store::Session &session, qint64 project, const QString &name, const Graph &graph);

// The project a document read from `file` (an absolute path: a project file or an
// imported model) continues: the newest one the studio made for that file or last
// saved it as; 0 when there is none (or the session cannot say).
qint64 projectOfFile(store::Session &session, const QString &file);
// Records that `project` is the one `file` continues; "" or the store's message.
QString recordProjectFile(store::Session &session, qint64 project, const QString &file);

}  // namespace tapestry::views
