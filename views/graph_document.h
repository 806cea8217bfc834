// GraphDocument: the graph a window edits — the engine Graph, its validation
// issues, node positions and pins — and the QUndoStack through which every edit
// goes (STYLE.md: every edit is an undo command calling the engine API). Views
// listen to `edited` and redraw only the nodes it names.
#pragma once

#include <QHash>
#include <QObject>
#include <QPointF>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QUndoStack>
#include <functional>
#include <vector>

#include "edit/editor.h"
#include "graph/delta.h"
#include "graph/graph.h"
#include "graph/issue.h"

namespace tapestry::views {

class GraphDocument : public QObject {
    Q_OBJECT
public:
    explicit GraphDocument(QObject *parent = nullptr);

    const Graph &graph() const { return graph_; }
    const std::vector<Issue> &issues() const { return issues_; }
    QUndoStack *undoStack() { return &undo_; }

    // Replaces the document (open, import, new): clears the undo history.
    void reset(const Graph &graph, const std::vector<Issue> &issues);

    // Runs one edit through the engine's Editor and pushes it as one undo step
    // named `text`. New nodes are drawn at `place` (id → scene position) when
    // given. Returns "" or the reason the edit was refused (nothing changes then).
    using EditFn = std::function<edit::EditResult(edit::Editor &)>;
    QString edit(const QString &text, const EditFn &fn, const QHash<QString, QPointF> &place = {});
    // The ids an edit made, for callers that place or select them (valid after a
    // successful edit()).
    const QStringList &lastAdded() const { return last_added_; }
    // Lines the last edit wants the user to know (values dropped, shards removed).
    const QStringList &lastNotes() const { return last_notes_; }

    // Records a finished drag as one undo step (the nodes are already there).
    void recordMove(const QHash<QString, QPointF> &from, const QHash<QString, QPointF> &to);

    // Positions known for nodes (from the layout, drags and edits) and the pinned
    // ones a re-layout keeps.
    const QHash<QString, QPointF> &positions() const { return positions_; }
    void setPositions(const QHash<QString, QPointF> &positions);  // not an undo step (layout)
    const QSet<QString> &pinned() const { return pinned_; }
    void setPinned(const QStringList &ids, bool pinned);

    // Applied by the undo commands.
    void applyDelta(const GraphDelta &delta, bool forward, const QHash<QString, QPointF> &place);
    void applyMove(const QHash<QString, QPointF> &to);

signals:
    // The graph changed: `touched` are the ids added, removed or changed; views
    // redraw those (at `place` when given).
    void edited(const QStringList &touched, const QHash<QString, QPointF> &place);
    // Nodes moved by undo/redo of a drag.
    void moved(const QHash<QString, QPointF> &to);
    void pinsChanged();
    void documentReset();

private:
    void revalidate();

    Graph graph_;
    std::vector<Issue> issues_;
    QHash<QString, QPointF> positions_;
    QSet<QString> pinned_;
    QUndoStack undo_;
    QStringList last_added_, last_notes_;
};

}  // namespace tapestry::views
