// Comparing two graphs by node id: the delta between them, the canvas marks of a
// stage against the one before it, and whether two graphs are the same. Shared by
// the document (which stage it holds), the stage list and the session's stages.
#pragma once

#include <QHash>
#include <QString>

#include "graph/delta.h"
#include "graph/graph.h"
#include "views/graph_scene.h"

namespace tapestry::views {

// The net difference between two graphs by node id, as a delta (a node is changed
// when its content differs; shared pointers compare equal at once). Used for
// stages restored from a session, whose recorded diff is JSON.
GraphDelta diffGraphs(const Graph &before, const Graph &after);
// The delta that turns `from` into `to`, recorded by the engine's rewriter: what
// an undo command replays (ApplyStageCommand).
GraphDelta deltaBetween(const Graph &from, const Graph &to);
// The canvas marks of `after` against `before` (added, changed; removed ids too).
QHash<QString, DiffMark> diffMarks(const Graph &before, const Graph &after);
// Same node ids with the same content, in the same order.
bool sameGraph(const Graph &a, const Graph &b);
// The ids a delta adds, removes or changes (its net summary), as QStrings.
QStringList touchedIds(const GraphDelta &delta);

}  // namespace tapestry::views
