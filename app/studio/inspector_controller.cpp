#include "inspector_controller.h"

#include <QDockWidget>
#include <QStatusBar>
#include <QVBoxLayout>

#include "canvas_controller.h"
#include "dock.h"
#include "editing_controller.h"
#include "views/graph_scene.h"
#include "views/inspector.h"
#include "views/issues_panel.h"
#include "views/node_editor.h"

namespace tapestry::studio {

using views::GraphDocument;

InspectorController::InspectorController(GraphDocument *doc, CanvasController *canvas, EditingController *editing,
                                         QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), canvas_(canvas), editing_(editing), status_(status) {
    inspector_ = new views::Inspector(window);
    node_editor_ = new views::NodeEditor(window);
    auto *column = new QWidget(window);
    auto *layout = new QVBoxLayout(column);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(node_editor_);
    layout->addWidget(inspector_, 1);
    inspector_dock_ = makeDock(tr("Inspector"), "inspectorDock", column, window, DockContent::scrolls);
    inspector_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                                 QDockWidget::DockWidgetFloatable);

    issues_ = new views::IssuesPanel(window);
    issues_dock_ = makeDock(tr("Issues"), "issuesDock", issues_, window);

    connectForm();
    connect(doc_, &GraphDocument::changed, this,
            [this](GraphDocument::Changes what, const QStringList &ids) { onDocumentChanged(what, ids); });
    connect(canvas_->scene(), &views::GraphScene::nodeSelected, this, &InspectorController::onNodeSelected);
    connect(inspector_, &views::Inspector::nodeActivated, this,
            [this](const QString &id) { canvas_->revealNode(id, false); });
    connect(issues_, &views::IssuesPanel::issueActivated, this, [this](int, const QString &node) {
        if (node.isEmpty())
            status_->showMessage(tr("This issue concerns the whole graph"), 4000);
        else if (!canvas_->revealNode(node))
            status_->showMessage(tr("%1 is not on the canvas").arg(node), 4000);
    });
}

void InspectorController::formEdit(const QString &text, const GraphDocument::EditFn &fn) {
    // A refusal is shown under the form, and the fields go back to what the graph says.
    const QString why = editing_->applyEdit(text, fn);
    if (!why.isEmpty()) node_editor_->showError(why);
    node_editor_->setGraph(doc_->graph());
}

void InspectorController::connectForm() {
    connect(node_editor_, &views::NodeEditor::renameRequested, this, [this](const QString &id, const QString &name) {
        formEdit(tr("Rename %1").arg(id),
                 [&](edit::Editor &e) { return e.rename(id.toStdString(), name.toStdString()); });
    });
    connect(node_editor_, &views::NodeEditor::tensorTypeRequested, this,
            [this](const QString &id, const QString &dtype, const QString &shape_text) {
                QString bad;
                const auto shape = views::NodeEditor::parseShape(shape_text, &bad);
                const auto type = parse_dtype(dtype.toStdString());
                if (!shape || !type) {
                    node_editor_->showError(!shape ? bad : tr("unknown dtype '%1'").arg(dtype));
                    node_editor_->setGraph(doc_->graph());
                    return;
                }
                formEdit(tr("Set type of %1").arg(id),
                         [&](edit::Editor &e) { return e.set_tensor_type(TensorId(id.toStdString()), *type, *shape); });
            });
    connect(node_editor_, &views::NodeEditor::roleRequested, this, [this](const QString &id, const QString &role) {
        const auto r = parse_role(role.toStdString());
        if (!r) {
            node_editor_->showError(tr("unknown role '%1'").arg(role));
            node_editor_->setGraph(doc_->graph());
            return;
        }
        formEdit(tr("Make %1 %2").arg(id, role),
                 [&](edit::Editor &e) { return e.set_role(TensorId(id.toStdString()), *r); });
    });
    connect(node_editor_, &views::NodeEditor::paramsRequested, this, [this](const QString &id, const Params &params) {
        formEdit(tr("Set parameters of %1").arg(id),
                 [&](edit::Editor &e) { return e.set_params(OpId(id.toStdString()), params); });
    });
}

void InspectorController::onDocumentChanged(GraphDocument::Changes what, const QStringList &ids) {
    const bool graph_changed = what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages);
    if (what & GraphDocument::Replaced) {
        run_error_.clear();
        inspector_->setGraph(doc_->shownGraph(), doc_->shownIssues(), doc_->source().name, false);
        inspector_->showNode(QString());
        node_editor_->setGraph(doc_->graph());
        node_editor_->showNode(QString());
        showIssues();
        return;
    }
    if (graph_changed) {
        // The details are written again only when what they show changed: the
        // summary, the node shown, or its neighbours (a structural change).
        const QString shown = inspector_->shownNode();
        const bool rerender =
            shown.isEmpty() || ids.contains(shown) || (what & (GraphDocument::Structure | GraphDocument::Stages));
        inspector_->setGraph(doc_->shownGraph(), doc_->shownIssues(), doc_->source().name, rerender);
        node_editor_->setGraph(doc_->graph());  // keeps the fields of a node that did not change
        showIssues();
    } else if (what & GraphDocument::Source) {
        inspector_->setGraph(doc_->shownGraph(), doc_->shownIssues(), doc_->source().name,
                             inspector_->shownNode().isEmpty());
    }
}

void InspectorController::showIssues() {
    std::vector<Issue> issues = doc_->shownIssues();
    QString headline;
    if (!run_error_.isEmpty()) {
        Issue run_issue;
        run_issue.severity = Severity::error;
        run_issue.code = "run-failed";
        run_issue.message = run_error_.toStdString();
        issues.insert(issues.begin(), run_issue);
        headline = tr("The last run failed; the graph is unchanged.");
    } else if (has_errors(doc_->loadIssues())) {
        headline = tr("%1 was read only in part; the graph shows what could be read.").arg(doc_->source().name);
    }
    issues_->setIssuesOfProject(issues, headline);
    issues_dock_->setWindowTitle(issues.empty() ? tr("Issues") : tr("Issues (%1)").arg(issues_->summary()));
}

void InspectorController::showRunError(const QString &message) {
    run_error_ = message;
    showIssues();
    issues_dock_->show();
    issues_dock_->raise();
}

void InspectorController::clearRunError() {
    if (run_error_.isEmpty()) return;
    run_error_.clear();
    showIssues();
}

void InspectorController::showOpenFailure(const QString &why, const std::vector<Issue> &load_issues) {
    inspector_->clearGraph();
    issues_->clear();
    issues_->setIssues(load_issues, why);
    issues_dock_->setWindowTitle(tr("Issues"));
    issues_dock_->show();
}

void InspectorController::onNodeSelected(const QString &id) {
    inspector_->showNode(id);
    node_editor_->showNode(id);
    views::GraphScene *scene = canvas_->scene();
    QStringList about{id};
    if (const Operation *op = scene->graph().find_op(OpId(id.toStdString())))
        for (const Shard &s : op->shards) about << QString::fromStdString(s.id.value);
    if (!id.isEmpty()) issues_->highlightNodes(about);
    if (id != scene->markedNode()) scene->markNode(QString());
}

}  // namespace tapestry::studio
