// Editing the document (issue 4, DESIGN.md §9): the Palette and History docks,
// the Edit menu's actions (undo, redo, clipboard, delete, select all, pin),
// connections dragged between ports, and operations and tensors added from the
// palette — placed in free space near where they were dropped, or near the view's
// centre. Every edit is one undo step through GraphDocument::edit; a refusal is
// said in the status bar (and at the port, for a connection).
#pragma once

#include <QHash>
#include <QObject>
#include <QPointF>
#include <QString>
#include <functional>

#include "edit/editor.h"
#include "views/graph_scene.h"

class QAction;
class QDockWidget;
class QStatusBar;
class QUndoView;
class QWidget;

namespace tapestry::views {
class GraphDocument;
class OpPalette;
}  // namespace tapestry::views

namespace tapestry::studio {

class CanvasController;

class EditingController : public QObject {
    Q_OBJECT
public:
    EditingController(views::GraphDocument *doc, CanvasController *canvas, QStatusBar *status, QWidget *window);

    views::OpPalette *palette() const { return palette_; }
    QDockWidget *paletteDock() const { return palette_dock_; }
    QDockWidget *historyDock() const { return history_dock_; }

    QAction *undoAction() const { return undo_action_; }
    QAction *redoAction() const { return redo_action_; }
    QAction *cutAction() const { return cut_action_; }
    QAction *copyAction() const { return copy_action_; }
    QAction *pasteAction() const { return paste_action_; }
    QAction *duplicateAction() const { return duplicate_action_; }
    QAction *deleteAction() const { return delete_action_; }
    QAction *selectAllAction() const { return select_all_action_; }
    QAction *pinAction() const { return pin_action_; }
    QAction *paletteSearchAction() const { return palette_search_action_; }

    // What starts a document when the user edits an empty window (File ▸ New Graph).
    void setNewDocument(std::function<void()> start) { new_document_ = std::move(start); }

    // Runs an edit as one undo step; "" or why it was refused (shown in the status bar).
    QString applyEdit(const QString &text, const std::function<edit::EditResult(edit::Editor &)> &fn,
                      const QHash<QString, QPointF> &place = {});
    QString lastEditError() const { return last_edit_error_; }
    // Adds an operation of `kind` at a free spot near a scene point; its id or "".
    QString addOperationAt(const QString &kind, const QPointF &scene_pos);
    // Adds a tensor at a free spot near a scene point; its id or "" (see lastEditError()).
    QString addTensorAt(const edit::TensorSpec &spec, const QPointF &scene_pos);
    // Asks for a tensor's name, dtype and shape (a dialog), then adds it there.
    void newTensorDialog(TensorRole role, const QPointF &scene_pos);
    // Connects an output (a tensor's value or an operation's output port) to an
    // operation's input port; "" or the reason it was refused (also shown).
    QString connectPorts(const views::PortRef &from, const views::PortRef &to);
    void copySelection();
    void cutSelection();
    void pasteClipboard();
    void duplicateSelection();
    void deleteSelection();

private:
    void createActions();
    void onPaletteActivated(const QString &entry, const QPointF &scene_pos);
    void updateActions();
    void togglePins();
    void ensureDocument();

    views::GraphDocument *doc_;
    CanvasController *canvas_;
    QStatusBar *status_;
    QWidget *window_;
    std::function<void()> new_document_;
    views::OpPalette *palette_ = nullptr;
    QDockWidget *palette_dock_ = nullptr;
    QUndoView *undo_view_ = nullptr;
    QDockWidget *history_dock_ = nullptr;
    QAction *undo_action_ = nullptr;
    QAction *redo_action_ = nullptr;
    QAction *cut_action_ = nullptr;
    QAction *copy_action_ = nullptr;
    QAction *paste_action_ = nullptr;
    QAction *duplicate_action_ = nullptr;
    QAction *delete_action_ = nullptr;
    QAction *select_all_action_ = nullptr;
    QAction *pin_action_ = nullptr;
    QAction *palette_search_action_ = nullptr;
    QString last_edit_error_;
};

}  // namespace tapestry::studio
