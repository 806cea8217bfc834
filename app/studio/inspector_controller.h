// The Inspector dock (the editing form above the node's details) and the Issues
// dock (DESIGN.md §9): what the selected node is, what is wrong with the graph,
// and the form's edits — each one undo step. Both follow GraphDocument::changed
// (re-rendering only when the shown node or the issues changed) and the canvas
// selection; an activated issue reveals its node on the canvas.
#pragma once

#include <QObject>
#include <QString>
#include <vector>

#include "graph/issue.h"
#include "views/graph_document.h"

class QDockWidget;
class QStatusBar;
class QWidget;

namespace tapestry::views {
class Inspector;
class IssuesPanel;
class NodeEditor;
}  // namespace tapestry::views

namespace tapestry::studio {

class CanvasController;
class EditingController;

class InspectorController : public QObject {
    Q_OBJECT
public:
    InspectorController(views::GraphDocument *doc, CanvasController *canvas, EditingController *editing,
                        QStatusBar *status, QWidget *window);

    views::Inspector *inspector() const { return inspector_; }
    views::NodeEditor *nodeEditor() const { return node_editor_; }
    views::IssuesPanel *issuesPanel() const { return issues_; }
    QDockWidget *inspectorDock() const { return inspector_dock_; }
    QDockWidget *issuesDock() const { return issues_dock_; }

    // A run that failed: its error heads the issues list until the next good run
    // or the next document.
    void showRunError(const QString &message);
    void clearRunError();
    // Nothing is open and `path` could not be: the issues list says why (an open
    // document is never replaced by this; see ProjectController).
    void showOpenFailure(const QString &why, const std::vector<Issue> &load_issues);

private:
    void connectForm();
    void onDocumentChanged(views::GraphDocument::Changes what, const QStringList &ids);
    void onNodeSelected(const QString &id);
    void showIssues();
    void formEdit(const QString &text, const views::GraphDocument::EditFn &fn);

    views::GraphDocument *doc_;
    CanvasController *canvas_;
    EditingController *editing_;
    QStatusBar *status_;
    views::Inspector *inspector_ = nullptr;
    views::NodeEditor *node_editor_ = nullptr;
    views::IssuesPanel *issues_ = nullptr;
    QDockWidget *inspector_dock_ = nullptr;
    QDockWidget *issues_dock_ = nullptr;
    QString run_error_;  // the last run's error, shown above the graph's issues ("" for none)
};

}  // namespace tapestry::studio
