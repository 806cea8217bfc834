// The SQLite session behind the studio (DESIGN.md §8, docs/sessions.md): which
// session file is open, which of its projects the document is, File ▸ Save (a
// version marked "save"), and the autosave a moment after each change of the
// document — both written off the GUI thread from a snapshot of the graph — plus
// the one save a window waits for, when it closes. A document opened from a file
// joins the project that file made before (views::projectOfFile), else a new
// one; File ▸ Session Projects… (session_projects_dialog.h) lists the session's
// projects to open, rename or delete one.
#pragma once

#include <QFuture>
#include <QHash>
#include <QObject>
#include <QPointF>
#include <QSet>
#include <QString>
#include <memory>
#include <optional>

#include "graph/graph.h"
#include "store/session.h"
#include "views/session_versions.h"
#include "views/graph_document.h"

class QAction;
class QLabel;
class QStatusBar;
class QTimer;
class QWidget;

namespace tapestry::studio {

// A project read back from the session: what GraphDocument::replace needs.
struct SessionProject {
    qint64 id = 0;
    QString name;
    Graph graph;
    QHash<QString, QPointF> positions;
    QSet<QString> pinned;
};

class SessionProjectsDialog;

class SessionController : public QObject {
    Q_OBJECT
public:
    SessionController(views::GraphDocument *doc, QStatusBar *status, QWidget *window);

    // Opens a session file (created if missing); "" or the reason it was refused
    // (also shown in a message box; the file is left as it was).
    QString open(const QString &path);
    store::Session *session() const { return session_.get(); }
    std::shared_ptr<store::Session> sharedSession() const { return session_; }
    QString path() const;
    // The project of the session the document is (0: none yet; the next save makes it).
    qint64 projectId() const { return project_id_; }
    void adoptProject(qint64 id);  // a save elsewhere (the stages) created it
    // The project to show when the session opens: the one it showed last; 0 when empty.
    qint64 lastProject() const;
    // Reads a project's latest version and its placements; the error when it cannot.
    std::optional<SessionProject> readProject(qint64 id, QString *error) const;
    static std::optional<SessionProject> readProject(store::Session &session, qint64 id, QString *error);

    // Saves the document into the session now, off the GUI thread (kind "save"
    // or "autosave"); see saved().
    void save(bool autosave);
    // Closing: a pending autosave is written now, the one moment the GUI waits.
    void flush();
    // A document opened from a file joins the session once laid out.
    void joinIfNew();

    // File ▸ Session Projects… (Ctrl+Alt+S): the session's projects in a dialog,
    // to open one (read in the background, then projectRead), rename or delete it.
    QAction *projectsAction() const { return projects_action_; }
    void showProjects();
    SessionProjectsDialog *projectsDialog() const { return projects_dialog_; }  // while it is open
    // Reads a project's latest version off the GUI thread; projectRead when read,
    // the status bar says why when it cannot be.
    void openProject(qint64 id);

    // The default session file under the user's data directory, and the one the
    // studio used last (if it still exists).
    static QString defaultPath();
    static QString lastPath();

signals:
    // A save into the session finished ("" or the error).
    void saved(const QString &error);
    // A project openProject read: the window shows it (ProjectController::showSessionProject).
    void projectRead(const tapestry::studio::SessionProject &project);

private:
    void onDocumentChanged(views::GraphDocument::Changes what);
    void scheduleAutosave();
    store::Placements placements() const;
    void save(bool autosave, bool join);

    views::GraphDocument *doc_;
    QStatusBar *status_;
    QWidget *window_;
    std::shared_ptr<store::Session> session_;
    qint64 project_id_ = 0;
    quint64 generation_ = 0;       // counts the documents shown: a save's answer may be for an earlier one
    quint64 save_generation_ = 0;  // the document the save in flight is of
    QTimer *autosave_timer_ = nullptr;
    bool save_in_flight_ = false;
    bool save_again_ = false;
    QFuture<views::SavedSnapshot> save_future_;
    QLabel *save_label_ = nullptr;
    QAction *projects_action_ = nullptr;
    SessionProjectsDialog *projects_dialog_ = nullptr;
    quint64 open_generation_ = 0;  // the project read last asked for
};

}  // namespace tapestry::studio
