// GraphDocument: the one owner of the graph a studio window edits (STYLE.md:
// model/view split) — the engine Graph with its issues, node positions and pins,
// the file it came from, the stages of the last pipeline and the one the canvas
// shows, and the QUndoStack every edit goes through (views/document_commands.h).
// Nothing else keeps a truth of its own: the canvas, the inspector, the form and
// the docks subscribe to `changed`, whose flags say what changed (Okular's
// notifyPageChanged), and redraw only that.
#pragma once

#include <QFlags>
#include <QHash>
#include <QMap>
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
#include "passes/stage.h"
#include "views/graph_scene.h"

namespace tapestry::views {

// Where a document came from, and how the window names it.
struct DocumentSource {
    QString path;           // the file read or last saved ("" for a new graph or one from the session)
    QString name;           // the title's name: "mlp.tapestry.json", "tiny.onnx (imported)", "untitled"
    bool imported = false;  // read from an ONNX model (`path`) with these dimension values
    QMap<QString, qint64> import_dims;
    qint64 session_project = 0;  // the session project it is (0: not in the session yet)
};

// A stage's failed certificate checks as issues on the nodes they name, so the
// canvas rings them.
std::vector<Issue> certificateIssues(const Certificate &certificate);

class GraphDocument : public QObject {
    Q_OBJECT
public:
    // What a change touched (the flags of `changed`).
    enum Change {
        Structure = 0x01,  // nodes added or removed, or connections changed
        Params = 0x02,     // a node's parameters, name, dtype, shape or role
        Positions = 0x04,  // nodes placed or moved (a drag, its undo, a paste, a re-layout)
        Stages = 0x08,     // the stages listed, or the one the canvas shows
        Pins = 0x10,       // the pinned nodes
        Source = 0x20,     // the file or name the document goes by (Save As)
        Replaced = 0x40,   // a new document (open, import, new): all of the above, and the undo history
    };
    Q_DECLARE_FLAGS(Changes, Change)
    Q_FLAG(Changes)

    explicit GraphDocument(QObject *parent = nullptr);

    // ---- the document ---------------------------------------------------------
    // Whether a document was opened, imported or started (else the window is empty).
    bool isOpen() const { return open_; }
    const DocumentSource &source() const { return source_; }
    void setSource(const DocumentSource &source);  // emits Source
    const Graph &graph() const { return graph_; }
    // The problems of reading the file (until the first edit), then validation's.
    const std::vector<Issue> &issues() const { return issues_; }
    // Those of reading the file alone (a file read only in part has errors here).
    const std::vector<Issue> &loadIssues() const { return load_issues_; }
    QUndoStack *undoStack() { return &undo_; }
    bool isModified() const { return !undo_.isClean(); }
    // Changes with every change of the graph (an edit, its undo, a new document):
    // what ran on revision r went stale when the revision moved on.
    quint64 revision() const { return revision_; }

    // Replaces the document: clears the undo history and the stages. `positions`
    // and `pinned` are those a session kept; the layout places the rest.
    void replace(DocumentSource source, Graph graph, std::vector<Issue> load_issues,
                 std::vector<Issue> validation_issues, QHash<QString, QPointF> positions = {},
                 QSet<QString> pinned = {});

    // ---- edits ------------------------------------------------------------------
    // Runs one edit through the engine's Editor and pushes it as one undo step
    // named `text`. New nodes are drawn at `place` (id → scene position) when
    // given. Returns "" or the reason the edit was refused (nothing changes then).
    using EditFn = std::function<edit::EditResult(edit::Editor &)>;
    QString edit(const QString &text, const EditFn &fn, const QHash<QString, QPointF> &place = {});
    // The ids the last successful edit made, and the lines it wants the user to
    // know (values dropped, shards removed).
    const QStringList &lastAdded() const { return last_added_; }
    const QStringList &lastNotes() const { return last_notes_; }
    // Records a finished drag as one undo step (the nodes are already there).
    void recordMove(const QHash<QString, QPointF> &from, const QHash<QString, QPointF> &to);

    // ---- positions and pins -----------------------------------------------------
    const QHash<QString, QPointF> &positions() const { return positions_; }
    // Puts nodes somewhere (a paste, a dropped operation, a re-layout): not an
    // undo step of its own; emits Positions.
    void placeNodes(const QHash<QString, QPointF> &positions);
    // Where the first layout put the nodes: known from now on, announced to no one.
    void adoptLayout(const QHash<QString, QPointF> &positions);
    const QSet<QString> &pinned() const { return pinned_; }
    void setPinned(const QStringList &ids, bool pinned);  // emits Pins

    // ---- stages -------------------------------------------------------------------
    // The stages of the last pipeline (stage 0 is the graph it ran on). Setting
    // them shows stage `show`, or (-1) the stage the document holds, if any.
    const std::vector<Stage> &stages() const { return stages_; }
    void setStages(std::vector<Stage> stages, int show = -1);
    // The stage the canvas shows (-1: the document itself) and the one whose graph
    // is the document's graph (-1: none; the document was edited since).
    int shownStage() const { return shown_; }
    int heldStage() const { return held_; }
    // Shows stage k on the canvas; false when there is none. Emits Stages.
    bool showStage(int k);
    // Whether the canvas shows the document's graph (editable) rather than a stage.
    bool showsDocument() const { return shown_ < 0 || shown_ == held_; }
    const Graph &shownGraph() const;
    std::vector<Issue> shownIssues() const;
    // The shown stage's marks against the stage before it (none for stage 0 or the document).
    QHash<QString, DiffMark> shownDiffMarks() const;
    // Makes stage k the document's graph as one undo step; "" or why not.
    QString applyStage(int k);

    // ---- applied by the undo commands ---------------------------------------------
    void applyDelta(const GraphDelta &delta, bool forward, const QHash<QString, QPointF> &place);
    void applyMove(const QHash<QString, QPointF> &to);

signals:
    // `ids`: the nodes added, removed or changed (Structure, Params) or moved
    // (Positions); `place`: where new or moved nodes go.
    void changed(tapestry::views::GraphDocument::Changes what, const QStringList &ids,
                 const QHash<QString, QPointF> &place);

private:
    // After the graph changed: validation, the stage it holds, and the notice.
    void graphChanged(const GraphDelta &delta, const QHash<QString, QPointF> &place);
    int findHeldStage() const;

    bool open_ = false;
    DocumentSource source_;
    Graph graph_;
    std::vector<Issue> issues_;
    std::vector<Issue> load_issues_;
    QHash<QString, QPointF> positions_;
    QSet<QString> pinned_;
    QUndoStack undo_;
    QStringList last_added_, last_notes_;
    std::vector<Stage> stages_;
    int shown_ = -1;
    int held_ = -1;
    quint64 revision_ = 0;
};

Q_DECLARE_OPERATORS_FOR_FLAGS(GraphDocument::Changes)

}  // namespace tapestry::views
