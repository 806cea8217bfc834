// The undo commands of the studio (STYLE.md: every edit is an undo command
// calling the engine API): an edit through the engine's Editor, a drag of nodes,
// and the application of a pipeline stage. Each replays what it recorded on a
// GraphDocument, which announces the change to the views.
#pragma once

#include <QHash>
#include <QPointF>
#include <QString>
#include <QUndoCommand>

#include "graph/delta.h"

namespace tapestry::views {

class GraphDocument;

// One edit: a GraphDelta recorded by the engine's Editor. The edit is already
// applied when the command is pushed, so its first redo() does nothing. New
// nodes go to `place` (id → scene position), else where they were last seen.
class EditCommand : public QUndoCommand {
public:
    EditCommand(GraphDocument *doc, const QString &text, GraphDelta delta, QHash<QString, QPointF> place);
    void redo() override;
    void undo() override;

private:
    GraphDocument *doc_;
    GraphDelta delta_;
    QHash<QString, QPointF> place_;
    bool first_ = true;
};

// One drag of one or more nodes (already where the user left them when pushed).
// Consecutive drags of the same nodes stay separate steps: a drag is what the
// user thinks of as one move.
class MoveCommand : public QUndoCommand {
public:
    MoveCommand(GraphDocument *doc, QHash<QString, QPointF> from, QHash<QString, QPointF> to);
    void redo() override;
    void undo() override;

private:
    GraphDocument *doc_;
    QHash<QString, QPointF> from_, to_;
    bool first_ = true;
};

// Applying a pipeline stage: one recorded delta, document graph → stage graph,
// applied on the first redo() (GraphDocument::applyStage pushes it).
class ApplyStageCommand : public QUndoCommand {
public:
    ApplyStageCommand(GraphDocument *doc, const QString &text, GraphDelta delta);
    void redo() override;
    void undo() override;

private:
    GraphDocument *doc_;
    GraphDelta delta_;
};

}  // namespace tapestry::views
