// Opening and saving documents (DESIGN.md §9–§10): project files read and
// validated off the GUI thread, ONNX models imported (asking for symbolic
// dimensions), new graphs, a session's projects, Save As and the recent files —
// and the two rules that keep a window's work whole: a document with unsaved
// changes is replaced only after asking, and a file that cannot be opened changes
// nothing (the document, its history and every panel stay as they were).
#pragma once

#include <QHash>
#include <QMap>
#include <QObject>
#include <QPointF>
#include <QSet>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"

class QMenu;
class QStatusBar;
class QWidget;

namespace tapestry::store {
class Session;
}

namespace tapestry::views {
class GraphDocument;
class OnnxImportWorker;
class ProjectLoader;
struct DocumentSource;
struct LoadedProject;
struct OnnxImportOutcome;
}  // namespace tapestry::views

namespace tapestry::studio {

class CanvasController;
struct SessionProject;

class ProjectController : public QObject {
    Q_OBJECT
public:
    ProjectController(views::GraphDocument *doc, CanvasController *canvas, QStatusBar *status, QWidget *window);
    ~ProjectController() override;

    // Opens a project file (asynchronously; see projectLoaded).
    void openProject(const QString &path);
    // A project, an ONNX model to import, a session file (openSessionRequested) or
    // a plan file, *.plan.json (openPlanRequested: the Plan dock shows it).
    void openAny(const QString &path);
    static bool isPlanFile(const QString &path);
    // Reads the document's file again (a failed open is retried while nothing is open).
    void reload();
    // Starts on the default example project; says so clearly if there is none.
    void openDefaultProject();
    // Imports an ONNX model (asynchronously; see importFinished). Symbolic input
    // dimensions without a value in `dim_values` are asked for in a dialog, then
    // the import is retried; a refused model is explained in a message box.
    void importOnnx(const QString &path, const QMap<QString, qint64> &dim_values = {});
    // Starts an empty graph named "untitled" (a new project in the session).
    void newProject();
    // Shows a project read from the session.
    void showSessionProject(const SessionProject &project);
    // Saves the graph as a project (values beside it or embedded; see
    // io/tensor_values.h), off the GUI thread; see projectSaved. The saved file
    // becomes the document's file.
    void saveProjectAs(const QString &path);

    void openDialog();
    void importDialog();
    // Asks for a file name and saves there; false when the user cancelled.
    bool saveAsDialog();

    QMenu *recentMenu() const { return recent_menu_; }
    QStringList recentFiles() const { return recent_; }
    bool isBusy() const { return loading_ || saving_; }
    // What File ▸ Save does, for "Save" in the unsaved-changes question; false
    // when it did not save (the user cancelled a file dialog).
    void setSave(std::function<bool()> save) { save_ = std::move(save); }
    // The open session (or none): a project file opened again gets back the node
    // arrangement the session keeps for it (views::arrangementOfFile).
    void setSession(std::function<std::shared_ptr<store::Session>()> session) { session_ = std::move(session); }

signals:
    // An open ended: the document was replaced (true), or not (false: the file
    // could not be read, or the user kept the document).
    void projectLoaded(bool opened);
    // An ONNX import ended; `ok` false when it was refused or abandoned.
    void importFinished(bool ok);
    void projectSaved(const QString &path, const QString &error);
    void openSessionRequested(const QString &path);
    void openPlanRequested(const QString &path);
    // A target file was opened as a project: the Plan dock adds it (PlanController::openTargetFile).
    void openTargetRequested(const QString &path);
    // Nothing was open and `path` could not be read either: what to say in the empty window.
    void openFailed(const QString &why, const std::vector<tapestry::Issue> &load_issues);
    void busyChanged();

private:
    void onProjectLoaded(quint64 job, const views::LoadedProject &project);
    void onImportFinished(quint64 job, const views::OnnxImportOutcome &outcome);
    void refuseOpen(const views::LoadedProject &project);
    void askDimensions(const QString &path, const QStringList &names, const QMap<QString, qint64> &known);
    // Replaces the document by `replace`'s, asking first when it has unsaved
    // changes ("Save", "Discard" or "Cancel"); `what` names the new one.
    void replaceDocument(const QString &what, std::function<void()> replace);
    void replace(const views::DocumentSource &source, const Graph &graph, const std::vector<Issue> &load_issues,
                 const std::vector<Issue> &validation_issues, const QHash<QString, QPointF> &positions = {},
                 const QSet<QString> &pinned = {});
    void setBusy(bool loading, bool saving, const QString &message = {});
    void addRecent(const QString &path);
    void rebuildRecentMenu();

    views::GraphDocument *doc_;
    CanvasController *canvas_;
    QStatusBar *status_;
    QWidget *window_;
    views::ProjectLoader *loader_ = nullptr;
    views::OnnxImportWorker *import_ = nullptr;
    QMenu *recent_menu_ = nullptr;
    QStringList recent_;
    QString pending_path_;  // the file being opened
    QString failed_path_;   // the last file that could not be opened while nothing was open
    bool loading_ = false;
    bool saving_ = false;
    std::function<bool()> save_;
    std::function<std::shared_ptr<store::Session>()> session_;
};

}  // namespace tapestry::studio
