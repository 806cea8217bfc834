#include "session_controller.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QLabel>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTime>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include "session_projects_dialog.h"
#include "views/session_versions.h"

namespace tapestry::studio {

using views::GraphDocument;

namespace {

constexpr int kAutosaveDelayMs = 1200;

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

}  // namespace

SessionController::SessionController(GraphDocument *doc, QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), status_(status), window_(window) {
    autosave_timer_ = new QTimer(this);
    autosave_timer_->setSingleShot(true);
    autosave_timer_->setInterval(kAutosaveDelayMs);
    connect(autosave_timer_, &QTimer::timeout, this, [this] { save(true); });
    save_label_ = new QLabel(window);
    save_label_->setObjectName(QStringLiteral("saveLabel"));
    status_->insertPermanentWidget(0, save_label_);
    connect(doc_, &GraphDocument::changed, this, [this](GraphDocument::Changes what) { onDocumentChanged(what); });
    projects_action_ = new QAction(tr("Session &Projects…"), this);
    projects_action_->setObjectName(QStringLiteral("actionSessionProjects"));
    projects_action_->setShortcut(QKeySequence(tr("Ctrl+Alt+S")));
    projects_action_->setStatusTip(tr("The projects this session keeps: open, rename or delete one"));
    projects_action_->setEnabled(false);
    connect(projects_action_, &QAction::triggered, this, &SessionController::showProjects);
}

void SessionController::showProjects() {
    if (!session_) return;
    if (projects_dialog_) {
        projects_dialog_->raise();
        projects_dialog_->activateWindow();
        return;
    }
    projects_dialog_ = new SessionProjectsDialog(session_, project_id_, window_);
    projects_dialog_->setAttribute(Qt::WA_DeleteOnClose);
    connect(projects_dialog_, &QObject::destroyed, this, [this] { projects_dialog_ = nullptr; });
    connect(projects_dialog_, &SessionProjectsDialog::openRequested, this, &SessionController::openProject);
    connect(projects_dialog_, &SessionProjectsDialog::renamed, this, [this](qint64 id, const QString &name) {
        // A project from the session goes by its session name; one from a file, by the file's.
        if (id == project_id_ && doc_->source().path.isEmpty()) {
            views::DocumentSource source = doc_->source();
            source.name = name;
            doc_->setSource(source);
        }
        status_->showMessage(tr("Renamed the project to %1").arg(name), 5000);
    });
    connect(projects_dialog_, &SessionProjectsDialog::deleted, this,
            [this] { status_->showMessage(tr("Deleted a project from the session"), 5000); });
    projects_dialog_->open();
}

void SessionController::openProject(qint64 id) {
    if (!session_) return;
    if (id == project_id_) {
        status_->showMessage(tr("%1 is the project the window shows").arg(doc_->source().name), 5000);
        return;
    }
    status_->showMessage(tr("Opening project %1 of the session…").arg(id));
    const quint64 generation = ++open_generation_;
    struct Read {
        std::optional<SessionProject> project;
        QString error;
    };
    auto *watcher = new QFutureWatcher<Read>(this);
    connect(watcher, &QFutureWatcher<Read>::finished, this, [this, watcher, generation, id] {
        watcher->deleteLater();
        if (generation != open_generation_) return;  // another project was asked for since
        Read read = watcher->result();
        if (!read.project) {
            status_->showMessage(tr("Could not read project %1 of the session: %2").arg(id).arg(read.error), 15000);
            return;
        }
        emit projectRead(*read.project);
    });
    std::shared_ptr<store::Session> session = session_;
    watcher->setFuture(QtConcurrent::run([id, session] {
        Read out;
        out.project = readProject(*session, id, &out.error);
        return out;
    }));
}

QString SessionController::defaultPath() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    return QDir(dir).filePath(QStringLiteral("default.tapestry-session"));
}

QString SessionController::lastPath() {
    const QString last = QSettings().value(QStringLiteral("session/last")).toString();
    return !last.isEmpty() && QFileInfo::exists(last) ? last : defaultPath();
}

QString SessionController::path() const {
    return session_ ? QString::fromStdString(session_->path().string()) : QString();
}

QString SessionController::open(const QString &path) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    auto opened = store::Session::open(path.toStdString(), store::OpenMode::read_write);
    if (!opened) {
        const QString why = qs(opened.error().message);
        status_->showMessage(why, 15000);
        auto *box = new QMessageBox(QMessageBox::Warning, tr("Session not opened"), why, QMessageBox::Ok, window_);
        box->setObjectName(QStringLiteral("sessionErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setInformativeText(tr("The file was left exactly as it was."));
        box->open();
        return why;
    }
    if (projects_dialog_) projects_dialog_->close();  // it lists the session being left
    session_ = std::shared_ptr<store::Session>(std::move(opened).value().release());
    project_id_ = 0;
    projects_action_->setEnabled(true);
    QSettings().setValue(QStringLiteral("session/last"), QFileInfo(path).absoluteFilePath());
    status_->showMessage(tr("Session %1").arg(QDir::toNativeSeparators(path)), 6000);
    return {};
}

qint64 SessionController::lastProject() const {
    if (!session_) return 0;
    auto projects = session_->projects();
    if (!projects || projects->empty()) return 0;
    qint64 wanted = 0;
    if (auto current = session_->state(store::kSessionScope, "current_project"); current && current->has_value())
        wanted = QString::fromStdString(**current).toLongLong();
    for (const store::ProjectInfo &p : *projects)
        if (p.id == wanted) return wanted;
    return projects->back().id;
}

std::optional<SessionProject> SessionController::readProject(qint64 id, QString *error) const {
    return readProject(*session_, id, error);
}

std::optional<SessionProject> SessionController::readProject(store::Session &session, qint64 id, QString *error) {
    auto graph = session.load_latest(id);
    auto info = session.project(id);
    if (!graph || !info) {
        *error = qs(!graph ? graph.error().message : info.error().message);
        return std::nullopt;
    }
    SessionProject p;
    p.id = id;
    p.name = qs(info->name);
    p.graph = *graph;
    if (auto placements = session.placements(id)) views::unpackPlacements(*placements, p.positions, p.pinned);
    return p;
}

void SessionController::adoptProject(qint64 id) {
    if (project_id_ == 0) project_id_ = id;
}

void SessionController::onDocumentChanged(GraphDocument::Changes what) {
    if (what & GraphDocument::Replaced) {
        ++generation_;
        autosave_timer_->stop();
        project_id_ = doc_->source().session_project;
        if (session_ && project_id_ != 0)
            session_->set_state(store::kSessionScope, "current_project", std::to_string(project_id_));
        return;
    }
    // Saved as another file: that file goes on with this project when opened again
    // (written off the GUI thread, which a save in flight would hold up).
    if ((what & GraphDocument::Source) && session_ && project_id_ != 0 && !doc_->source().path.isEmpty())
        (void)QtConcurrent::run([session = session_, project = project_id_, file = doc_->source().path] {
            return views::recordProjectFile(*session, project, file);
        });
    if (what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Positions | GraphDocument::Pins))
        scheduleAutosave();
}

void SessionController::scheduleAutosave() {
    if (session_) autosave_timer_->start();
}

void SessionController::joinIfNew() {
    if (session_ && project_id_ == 0 && doc_->graph().node_count() > 0) save(true, true);
}

store::Placements SessionController::placements() const {
    store::Placements out;
    const QHash<QString, QPointF> &pos = doc_->positions();
    for (auto it = pos.cbegin(); it != pos.cend(); ++it) {
        if (!doc_->graph().has_id(it.key().toStdString())) continue;
        out[it.key().toStdString()] =
            store::NodePlacement{it.value().x(), it.value().y(), doc_->pinned().contains(it.key())};
    }
    return out;
}

void SessionController::save(bool autosave) {
    save(autosave, false);
}

void SessionController::save(bool autosave, bool join) {
    if (!session_ || !doc_->isOpen()) return;
    if (save_in_flight_) {
        save_again_ = true;
        return;
    }
    autosave_timer_->stop();
    // The graph is copied by pointer (nodes are shared and immutable), so the
    // worker reads a snapshot while the user keeps editing.
    const Graph snapshot = doc_->graph();
    const store::Placements placements = this->placements();
    const QString name = doc_->source().name.isEmpty() ? tr("untitled") : doc_->source().name;
    const QString file = doc_->source().path;
    std::shared_ptr<store::Session> session = session_;
    const qint64 known_project = project_id_;
    save_in_flight_ = true;
    save_label_->setText(autosave ? tr("Autosaving…") : tr("Saving…"));
    auto *watcher = new QFutureWatcher<views::SavedSnapshot>(this);
    const quint64 generation = save_generation_ = generation_;
    connect(watcher, &QFutureWatcher<views::SavedSnapshot>::finished, this, [=, this] {
        const views::SavedSnapshot result = watcher->result();
        watcher->deleteLater();
        save_in_flight_ = false;
        const QString time = QTime::currentTime().toString(QStringLiteral("HH:mm:ss"));
        // The document may have been replaced meanwhile: the project made is the old one's.
        const bool same_document = generation == generation_;
        if (result.error.isEmpty()) {
            if (project_id_ == 0 && same_document) project_id_ = result.project;
            if (!autosave && same_document) doc_->undoStack()->setClean();
            save_label_->setText(result.unchanged ? tr("In the session")
                                 : autosave       ? tr("Autosaved %1").arg(time)
                                                  : tr("Saved %1").arg(time));
            if (result.continued && same_document)
                status_->showMessage(result.unchanged
                                         ? tr("%1 goes on with its project in the session, whose latest version it is")
                                               .arg(name)
                                         : tr("%1 goes on with its project in the session, as a new version "
                                              "(the earlier ones are kept)")
                                               .arg(name),
                                     8000);
            else if (!autosave)
                status_->showMessage(tr("Saved %1 in %2").arg(name, QFileInfo(path()).fileName()), 5000);
        } else {
            if (project_id_ == 0 && same_document) project_id_ = result.project;
            save_label_->setText(tr("Not saved"));
            status_->showMessage(tr("Could not save into the session: %1").arg(result.error), 15000);
        }
        emit saved(result.error);
        if (save_again_) {
            save_again_ = false;
            scheduleAutosave();
        }
    });
    save_future_ = QtConcurrent::run([session, snapshot, placements, name, file, known_project, autosave, join] {
        return views::saveSnapshot(*session, known_project, snapshot, placements, name, file, autosave, join);
    });
    watcher->setFuture(save_future_);
}

void SessionController::flush() {
    if (!session_) return;
    if (autosave_timer_->isActive() || save_in_flight_) {
        if (save_in_flight_) {
            // Only the save is waited for, not a running layout or run; a project
            // it just created is the one to save into.
            save_future_.waitForFinished();
            if (project_id_ == 0 && save_generation_ == generation_) project_id_ = save_future_.result().project;
        }
        autosave_timer_->stop();
        const QString name = doc_->source().name.isEmpty() ? tr("untitled") : doc_->source().name;
        project_id_ = views::saveSnapshot(*session_, project_id_, doc_->graph(), placements(), name,
                                          doc_->source().path, true, false)
                          .project;
    }
    session_->set_state(store::kSessionScope, "current_project", std::to_string(project_id_));
}

}  // namespace tapestry::studio
