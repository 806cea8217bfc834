#include "session_controller.h"

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
    session_ = std::shared_ptr<store::Session>(std::move(opened).value().release());
    project_id_ = 0;
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
    auto graph = session_->load_latest(id);
    auto info = session_->project(id);
    if (!graph || !info) {
        *error = qs(!graph ? graph.error().message : info.error().message);
        return std::nullopt;
    }
    SessionProject p;
    p.id = id;
    p.name = qs(info->name);
    p.graph = *graph;
    if (auto placements = session_->placements(id)) {
        for (const auto &[node, pl] : *placements) {
            p.positions.insert(qs(node), QPointF(pl.x, pl.y));
            if (pl.pinned) p.pinned.insert(qs(node));
        }
    }
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
    if (what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Positions | GraphDocument::Pins))
        scheduleAutosave();
}

void SessionController::scheduleAutosave() {
    if (session_) autosave_timer_->start();
}

void SessionController::joinIfNew() {
    if (session_ && project_id_ == 0 && doc_->graph().node_count() > 0) save(true);
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

QPair<qint64, QString> SessionController::saveSnapshot(store::Session &session, qint64 project, const Graph &graph,
                                                       const store::Placements &placements, const QString &name,
                                                       bool autosave) {
    if (project == 0) {
        auto created = session.create_project(name.toStdString());
        if (!created) return qMakePair(qint64(0), qs(created.error().message));
        project = *created;
        session.set_state(store::kSessionScope, "current_project", std::to_string(project));
    }
    auto saved = session.save_version(project, graph, autosave ? "autosave" : "save", &placements);
    return qMakePair(project, saved ? QString() : qs(saved.error().message));
}

void SessionController::save(bool autosave) {
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
    std::shared_ptr<store::Session> session = session_;
    const qint64 known_project = project_id_;
    save_in_flight_ = true;
    save_label_->setText(autosave ? tr("Autosaving…") : tr("Saving…"));
    auto *watcher = new QFutureWatcher<QPair<qint64, QString>>(this);
    const quint64 generation = save_generation_ = generation_;
    connect(watcher, &QFutureWatcher<QPair<qint64, QString>>::finished, this, [=, this] {
        const auto [project, error] = watcher->result();
        watcher->deleteLater();
        save_in_flight_ = false;
        const QString time = QTime::currentTime().toString(QStringLiteral("HH:mm:ss"));
        // The document may have been replaced meanwhile: the project made is the old one's.
        const bool same_document = generation == generation_;
        if (error.isEmpty()) {
            if (project_id_ == 0 && same_document) project_id_ = project;
            if (!autosave && same_document) doc_->undoStack()->setClean();
            save_label_->setText(autosave ? tr("Autosaved %1").arg(time) : tr("Saved %1").arg(time));
            if (!autosave) status_->showMessage(tr("Saved %1 in %2").arg(name, QFileInfo(path()).fileName()), 5000);
        } else {
            save_label_->setText(tr("Not saved"));
            status_->showMessage(tr("Could not save into the session: %1").arg(error), 15000);
        }
        emit saved(error);
        if (save_again_) {
            save_again_ = false;
            scheduleAutosave();
        }
    });
    save_future_ = QtConcurrent::run([session, snapshot, placements, name, known_project, autosave] {
        return saveSnapshot(*session, known_project, snapshot, placements, name, autosave);
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
            if (project_id_ == 0 && save_generation_ == generation_) project_id_ = save_future_.result().first;
        }
        autosave_timer_->stop();
        const QString name = doc_->source().name.isEmpty() ? tr("untitled") : doc_->source().name;
        project_id_ = saveSnapshot(*session_, project_id_, doc_->graph(), placements(), name, true).first;
    }
    session_->set_state(store::kSessionScope, "current_project", std::to_string(project_id_));
}

}  // namespace tapestry::studio
