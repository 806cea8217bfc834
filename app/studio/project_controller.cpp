#include "project_controller.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "canvas_controller.h"
#include "dock.h"
#include "graph/validate.h"
#include "io/onnx_import.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "session_controller.h"
#include "views/graph_document.h"
#include "views/graph_view.h"
#include "views/onnx_import_worker.h"
#include "views/project_loader.h"
#include "views/project_locator.h"

namespace tapestry::studio {

namespace {

constexpr int kMaxRecent = 8;

bool isOnnxFile(const QString &path) {
    return path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive);
}

// The load issues one per line, as the message box's details list them.
QString issueLines(const std::vector<Issue> &issues) {
    QStringList lines;
    for (const Issue &i : issues) lines << QString::fromStdString(format_issue(i));
    return lines.join(QLatin1Char('\n'));
}

}  // namespace

ProjectController::ProjectController(views::GraphDocument *doc, CanvasController *canvas, QStatusBar *status,
                                     QWidget *window)
    : QObject(window), doc_(doc), canvas_(canvas), status_(status), window_(window) {
    loader_ = new views::ProjectLoader(this);
    import_ = new views::OnnxImportWorker(this);
    recent_menu_ = new QMenu(tr("Open &Recent"), window);
    recent_ = QSettings().value(QStringLiteral("recentFiles")).toStringList();
    rebuildRecentMenu();
    connect(loader_, &views::ProjectLoader::loaded, this, &ProjectController::onProjectLoaded);
    connect(import_, &views::OnnxImportWorker::finished, this, &ProjectController::onImportFinished);
}

ProjectController::~ProjectController() {
    loader_->cancel();
    import_->cancel();
}

void ProjectController::setBusy(bool loading, bool saving, const QString &message) {
    if (!message.isEmpty()) status_->showMessage(message);
    if (loading_ == loading && saving_ == saving) return;
    loading_ = loading;
    saving_ = saving;
    emit busyChanged();
}

// ---- replacing the document ------------------------------------------------------

void ProjectController::replaceDocument(const QString &what, std::function<void()> replace) {
    if (!doc_->isModified()) {
        replace();
        return;
    }
    const QString name = doc_->source().name;
    auto *box = new QMessageBox(QMessageBox::Question, tr("Unsaved changes"),
                                tr("%1 has changes that are not saved.").arg(name),
                                QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, window_);
    box->setObjectName(QStringLiteral("unsavedChangesBox"));
    box->setInformativeText(tr("Save them before %1 replaces it?").arg(what));
    box->setDefaultButton(QMessageBox::Save);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box, name, what, replace = std::move(replace)] {
        const QMessageBox::StandardButton choice = box->standardButton(box->clickedButton());
        if (choice == QMessageBox::Discard || (choice == QMessageBox::Save && save_ && save_())) {
            replace();
            return;
        }
        status_->showMessage(tr("Kept %1; %2 was not opened").arg(name, what), 8000);
        emit projectLoaded(false);
    });
    box->open();  // window-modal, without a nested event loop
}

void ProjectController::replace(const views::DocumentSource &source, const Graph &graph,
                                const std::vector<Issue> &load_issues, const std::vector<Issue> &validation_issues,
                                const QHash<QString, QPointF> &positions, const QSet<QString> &pinned) {
    failed_path_.clear();
    doc_->replace(source, graph, load_issues, validation_issues, positions, pinned);
    if (!source.path.isEmpty()) addRecent(source.path);
}

// ---- opening -------------------------------------------------------------------

void ProjectController::openProject(const QString &path) {
    const QFileInfo info(path);
    pending_path_ = info.absoluteFilePath();
    import_->cancel();
    setBusy(true, saving_, tr("Opening %1…").arg(info.fileName()));
    if (!doc_->isOpen()) canvas_->view()->setPlaceholderText(tr("Opening %1…").arg(info.fileName()));
    loader_->start(pending_path_, session_ ? session_() : nullptr);
}

bool ProjectController::isPlanFile(const QString &path) {
    return path.endsWith(QLatin1String(".plan.json"), Qt::CaseInsensitive);
}

void ProjectController::openAny(const QString &path) {
    if (path.endsWith(QLatin1String(".tapestry-session"), Qt::CaseInsensitive))
        emit openSessionRequested(path);
    else if (isPlanFile(path))
        emit openPlanRequested(path);
    else if (isOnnxFile(path))
        importOnnx(path);
    else
        openProject(path);
}

void ProjectController::reload() {
    const views::DocumentSource &source = doc_->source();
    if (source.imported)
        importOnnx(source.path, source.import_dims);
    else if (!source.path.isEmpty())
        openProject(source.path);
    else if (!doc_->isOpen() && !failed_path_.isEmpty())
        openProject(failed_path_);
}

void ProjectController::openDefaultProject() {
    const QString found = views::findExampleProject();
    if (!found.isEmpty()) {
        openProject(found);
        return;
    }
    const QString where = views::exampleProjectDirs().join(QStringLiteral("\n  "));
    canvas_->view()->setPlaceholderText(
        tr("No project open: the example project mlp.tapestry.json was not found.\n"
           "Looked in:\n  %1\nOpen a project with File ▸ Open… (Ctrl+O), or set TAPESTRY_SOURCE_DIR.")
            .arg(where));
    status_->showMessage(tr("No example project found; open one with File ▸ Open…"));
    emit projectLoaded(false);
}

void ProjectController::onProjectLoaded(quint64, const views::LoadedProject &project) {
    if (project.path != pending_path_) return;  // a stale answer for a file no longer wanted
    pending_path_.clear();
    if (!project.opened) {
        setBusy(false, saving_);
        // One of our files of another kind, not named so: opened as what it is (as a
        // *.plan.json or *.tapestry-session would have been), the canvas kept.
        const QString name = QFileInfo(project.path).fileName();
        switch (project.kind) {
        case views::FileKind::plan:
            status_->showMessage(tr("%1 is a plan file: opening it in the Plan dock").arg(name), 8000);
            emit openPlanRequested(project.path);
            emit projectLoaded(false);
            return;
        case views::FileKind::session:
            status_->showMessage(tr("%1 is a session file: opening it as the session").arg(name), 8000);
            emit openSessionRequested(project.path);
            emit projectLoaded(false);
            return;
        case views::FileKind::target:
            status_->showMessage(tr("%1 is a target file: adding it to the Plan dock's targets").arg(name), 8000);
            emit openTargetRequested(project.path);
            emit projectLoaded(false);
            return;
        case views::FileKind::front: {
            // The figures of a search's plans, by position in a space the file does
            // not hold: nothing to show as a graph, and no plan to make without it.
            views::LoadedProject refused = project;
            refused.error =
                tr("it is a front file (the predicted figures of a search's plans, not a graph). A search kept in "
                   "a session — the Optimize dock's, or tapestry optimize --session FILE — shows again in the "
                   "Optimize dock when that session is open (File ▸ Open Session…), its plans ready to open");
            refuseOpen(refused);
            return;
        }
        default:
            break;
        }
        refuseOpen(project);
        return;
    }
    const QString name = QFileInfo(project.path).fileName();
    replaceDocument(name, [this, project, name] {
        views::DocumentSource source;
        source.path = project.path;
        source.name = name;
        replace(source, project.graph, project.load_issues, project.validation_issues, project.positions,
                project.pinned);
        emit projectLoaded(true);
    });
    setBusy(false, saving_);  // after the layout of the new document started: the window stays busy
}

void ProjectController::refuseOpen(const views::LoadedProject &project) {
    const QString name = QFileInfo(project.path).fileName();
    const QString why = tr("Could not open %1: %2").arg(name, project.error);
    if (!doc_->isOpen()) {
        // Nothing to keep: the empty window says why (File ▸ Reload tries again).
        failed_path_ = project.path;
        canvas_->view()->setPlaceholderText(why);
        status_->showMessage(why);
        emit openFailed(why, project.load_issues);
        emit projectLoaded(false);
        return;
    }
    // The document, its history and every panel stay exactly as they were.
    status_->showMessage(tr("%1 — %2 is unchanged").arg(why, doc_->source().name));
    auto *box = new QMessageBox(QMessageBox::Warning, tr("Could not open %1").arg(name), why, QMessageBox::Ok, window_);
    box->setObjectName(QStringLiteral("openErrorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setInformativeText(tr("%1 stays open, with its history.").arg(doc_->source().name));
    if (!project.load_issues.empty()) box->setDetailedText(issueLines(project.load_issues));
    box->open();
    emit projectLoaded(false);
}

void ProjectController::showSessionProject(const SessionProject &p) {
    replaceDocument(p.name, [this, p] {
        views::DocumentSource source;
        source.name = p.name;
        source.session_project = p.id;
        replace(source, p.graph, {}, validate(p.graph, OpLibrary::standard()), p.positions, p.pinned);
        emit projectLoaded(true);
    });
}

void ProjectController::newProject() {
    replaceDocument(tr("a new graph"), [this] {
        Graph g;
        g.name = "untitled";
        views::DocumentSource source;
        source.name = tr("untitled");
        replace(source, g, {}, {});
    });
}

// ---- ONNX import -----------------------------------------------------------------

void ProjectController::importDialog() {
    QSettings settings;
    const QString start =
        settings.value(QStringLiteral("onnx/lastDir"), QFileInfo(doc_->source().path).absolutePath()).toString();
    const QString path = QFileDialog::getOpenFileName(window_, tr("Import ONNX Model"), start,
                                                      tr("ONNX models (*.onnx);;All files (*)"));
    if (path.isEmpty()) return;
    settings.setValue(QStringLiteral("onnx/lastDir"), QFileInfo(path).absolutePath());
    importOnnx(path);
}

void ProjectController::importOnnx(const QString &path, const QMap<QString, qint64> &dim_values) {
    loader_->cancel();  // an import supersedes a load in flight, and vice versa
    pending_path_.clear();
    setBusy(true, saving_, tr("Importing %1…").arg(QFileInfo(path).fileName()));
    import_->start(QFileInfo(path).absoluteFilePath(), dim_values, session_ ? session_() : nullptr);
}

void ProjectController::onImportFinished(quint64, const views::OnnxImportOutcome &outcome) {
    const QString name = QFileInfo(outcome.path).fileName();
    if (!outcome.missing_dims.isEmpty() || !outcome.ok) setBusy(false, saving_);
    if (!outcome.missing_dims.isEmpty()) {
        status_->showMessage(tr("%1 has symbolic dimensions; give them values to import it.").arg(name));
        askDimensions(outcome.path, outcome.missing_dims, outcome.dim_values);
        return;
    }
    if (!outcome.ok) {
        status_->showMessage(tr("Could not import %1: %2").arg(name, outcome.error).section(QLatin1Char('\n'), 0, 0));
        auto *box = new QMessageBox(QMessageBox::Warning, tr("Import failed"), QString(), QMessageBox::Ok, window_);
        box->setObjectName(QStringLiteral("importErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        if (!outcome.unsupported.isEmpty()) {
            box->setText(tr("%1 uses %2 the importer does not support; nothing was imported.")
                             .arg(name, countText(outcome.unsupported.size(), tr("operator"), tr("operators"))));
            box->setInformativeText(tr("Unsupported:\n• %1").arg(outcome.unsupported.join(QStringLiteral("\n• "))));
            box->setDetailedText(outcome.error);
        } else {
            box->setText(tr("Could not import %1.").arg(name));
            box->setInformativeText(outcome.error);
        }
        box->open();
        emit importFinished(false);
        return;
    }
    replaceDocument(name, [this, outcome, name] {
        views::DocumentSource source;
        source.path = outcome.path;
        source.name = tr("%1 (imported)").arg(name);
        source.imported = true;
        source.import_dims = outcome.dim_values;
        replace(source, outcome.graph, {}, outcome.validation_issues, outcome.positions, outcome.pinned);
        // An older model went through ONNX's version converter: say so.
        if (const std::string note = onnx_conversion_note(outcome.graph); !note.empty())
            status_->showMessage(status_->currentMessage() + QStringLiteral("; ") + QString::fromStdString(note),
                                 12000);
        emit importFinished(true);
    });
    setBusy(false, saving_);
}

void ProjectController::askDimensions(const QString &path, const QStringList &names,
                                      const QMap<QString, qint64> &known) {
    auto *dialog = new QDialog(window_);
    dialog->setObjectName(QStringLiteral("dimensionDialog"));
    dialog->setWindowTitle(tr("Dimension Values"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    auto *layout = new QVBoxLayout(dialog);
    auto *intro = new QLabel(tr("%1 leaves these input dimensions symbolic. The graph needs a size for each:")
                                 .arg(QFileInfo(path).fileName()),
                             dialog);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto *form = new QFormLayout;
    QSettings settings;
    std::vector<std::pair<QString, QSpinBox *>> boxes;
    for (const QString &dim : names) {
        auto *box = new QSpinBox(dialog);
        box->setObjectName(QStringLiteral("dim_") + dim);
        box->setRange(1, 1 << 30);
        box->setValue(settings.value(QStringLiteral("onnx/dims/") + dim, 1).toInt());
        form->addRow(dim, box);
        boxes.emplace_back(dim, box);
    }
    layout->addLayout(form);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, dialog);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Import"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    connect(dialog, &QDialog::accepted, this, [this, path, known, boxes] {
        QMap<QString, qint64> values = known;
        QSettings remembered;
        for (const auto &[dim, box] : boxes) {
            values.insert(dim, box->value());
            remembered.setValue(QStringLiteral("onnx/dims/") + dim, box->value());
        }
        importOnnx(path, values);
    });
    connect(dialog, &QDialog::rejected, this, [this, path] {
        status_->showMessage(tr("Import of %1 abandoned").arg(QFileInfo(path).fileName()), 6000);
        emit importFinished(false);
    });
    dialog->open();  // window-modal, without a nested event loop
}

// ---- dialogs and saving ----------------------------------------------------------

void ProjectController::openDialog() {
    const QString current = doc_->source().path;
    const QString start =
        current.isEmpty() ? QFileInfo(views::findExampleProject()).absolutePath() : QFileInfo(current).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(window_, tr("Open Project"), start,
                                     tr("Tapestry projects (*.tapestry.json);;JSON files (*.json);;All files (*)"));
    // A plan file picked here goes to the Plan dock rather than failing as a project.
    if (isPlanFile(path))
        emit openPlanRequested(path);
    else if (!path.isEmpty())
        openProject(path);
}

bool ProjectController::saveAsDialog() {
    const QFileInfo current(doc_->source().path);
    QString base = current.completeBaseName();
    base.remove(QLatin1String(".tapestry"));
    if (base.isEmpty()) base = QFileInfo(doc_->source().name).completeBaseName();
    const QString suggested = current.absoluteDir().filePath(base + QStringLiteral(".tapestry.json"));
    QString path = QFileDialog::getSaveFileName(window_, tr("Save Project As"), suggested,
                                                tr("Tapestry projects (*.tapestry.json)"));
    if (path.isEmpty()) return false;
    if (!path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)) path += QStringLiteral(".tapestry.json");
    saveProjectAs(path);
    return true;
}

void ProjectController::saveProjectAs(const QString &path) {
    const QString target = QFileInfo(path).absoluteFilePath();
    setBusy(loading_, true, tr("Saving %1…").arg(QFileInfo(target).fileName()));
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, target] {
        watcher->deleteLater();
        const QString error = watcher->result();
        setBusy(loading_, false);
        if (error.isEmpty()) {
            views::DocumentSource source = doc_->source();
            source.path = target;
            source.name = QFileInfo(target).fileName();
            source.imported = false;
            source.import_dims.clear();
            doc_->setSource(source);
            addRecent(target);
            status_->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(target)), 6000);
        } else {
            status_->showMessage(tr("Could not save %1: %2").arg(QFileInfo(target).fileName(), error));
            auto *box = new QMessageBox(QMessageBox::Warning, tr("Save failed"),
                                        tr("Could not save the project: %1").arg(error), QMessageBox::Ok, window_);
            box->setAttribute(Qt::WA_DeleteOnClose);
            box->open();
        }
        emit projectSaved(target, error);
    });
    watcher->setFuture(QtConcurrent::run([graph = doc_->graph(), target] {
        try {
            return QString::fromStdString(save_project_with_values(graph, std::filesystem::path(target.toStdString())));
        } catch (const std::exception &e) {
            return QStringLiteral("internal error: %1").arg(QString::fromUtf8(e.what()));
        }
    }));
}

// ---- recent files ----------------------------------------------------------------

void ProjectController::addRecent(const QString &path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent) recent_.removeLast();
    rebuildRecentMenu();
    QSettings().setValue(QStringLiteral("recentFiles"), recent_);
}

void ProjectController::rebuildRecentMenu() {
    recent_menu_->clear();
    for (const QString &path : std::as_const(recent_)) {
        QAction *a = recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openAny(path); });
        a->setToolTip(path);
        a->setStatusTip(path);
        a->setEnabled(QFileInfo::exists(path));
    }
    if (!recent_.isEmpty()) recent_menu_->addSeparator();
    QAction *clear = recent_menu_->addAction(tr("Clear Menu"), this, [this] {
        recent_.clear();
        rebuildRecentMenu();
        QSettings().setValue(QStringLiteral("recentFiles"), recent_);
    });
    clear->setEnabled(!recent_.isEmpty());
}

}  // namespace tapestry::studio
