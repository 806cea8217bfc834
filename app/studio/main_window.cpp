#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPalette>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <algorithm>

#include "canvas_controller.h"
#include "canvas_export.h"
#include "editing_controller.h"
#include "inspector_controller.h"
#include "launch_controller.h"
#include "optimize_controller.h"
#include "plan_controller.h"
#include "project_controller.h"
#include "run_controller.h"
#include "session_controller.h"
#include "stages_controller.h"
#include "views/graph_document.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/issues_panel.h"
#include "views/project_locator.h"
#include "views/run_panel.h"
#include "views/studio_resources.h"

namespace tapestry::studio {

using views::GraphDocument;

namespace {

bool isProjectFile(const QString &path) {
    return (path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive) ||
            path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive) ||
            path.endsWith(QLatin1String(".tapestry-session"), Qt::CaseInsensitive)) &&
           QFileInfo(path).isFile();
}

// The first local project file (or ONNX model, or session) among dropped URLs, or "".
QString droppedProject(const QMimeData *mime) {
    if (!mime || !mime->hasUrls()) return {};
    for (const QUrl &url : mime->urls())
        if (url.isLocalFile() && isProjectFile(url.toLocalFile())) return url.toLocalFile();
    return {};
}

QAction *menuAction(QMenu *menu, const QIcon &icon, const QString &text, const QKeySequence &key = {}) {
    QAction *a = menu->addAction(icon, text);
    if (!key.isEmpty()) a->setShortcut(key);
    return a;
}

}  // namespace

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent) {
    views::initResources();
    setObjectName(QStringLiteral("studioMainWindow"));
    setWindowIcon(views::studioIcon(QStringLiteral("tapestry")));
    setAcceptDrops(true);
    setDockOptions(AnimatedDocks | AllowTabbedDocks);

    createControllers();
    placeDocks();
    createFileMenu();
    createEditMenu();
    createRunMenu();
    createViewAndHelpMenus();
    createToolBar();
    createStatusBar();
    connectControllers();
    restoreSettings();
    updateTitle();
    updateFileActions();
}

MainWindow::~MainWindow() = default;

views::GraphScene *MainWindow::scene() const {
    return canvas_->scene();
}

views::GraphView *MainWindow::view() const {
    return canvas_->view();
}

// ---- assembly ------------------------------------------------------------------

void MainWindow::createControllers() {
    doc_ = new GraphDocument(this);
    QStatusBar *status = statusBar();
    canvas_ = new CanvasController(doc_, status, this);
    setCentralWidget(canvas_->centre());
    editing_ = new EditingController(doc_, canvas_, status, this);
    inspection_ = new InspectorController(doc_, canvas_, editing_, status, this);
    session_ = new SessionController(doc_, status, this);
    runs_ = new RunController(doc_, status, this);
    stages_ = new StagesController(doc_, canvas_, session_, status, this);
    plan_ = new PlanController(doc_, canvas_, session_, status, this);
    launch_ = new LaunchController(doc_, session_, plan_, status, this);
    plan_->addLaunchAction(launch_->launchAction());
    optimize_ = new OptimizeController(doc_, session_, plan_, status, this);
    launch_->setOptimizer(optimize_);  // a lost device is re-planned through the search
    project_ = new ProjectController(doc_, canvas_, status, this);
    project_->setSave([this] { return save(); });
    project_->setSession([this] { return session_->sharedSession(); });
    editing_->setNewDocument([this] { project_->newProject(); });
}

void MainWindow::placeDocks() {
    addDockWidget(Qt::LeftDockWidgetArea, editing_->paletteDock());
    addDockWidget(Qt::LeftDockWidgetArea, canvas_->overviewDock());
    splitDockWidget(editing_->paletteDock(), canvas_->overviewDock(), Qt::Vertical);
    addDockWidget(Qt::RightDockWidgetArea, inspection_->inspectorDock());
    addDockWidget(Qt::RightDockWidgetArea, runs_->runDock());
    splitDockWidget(inspection_->inspectorDock(), runs_->runDock(), Qt::Vertical);
    addDockWidget(Qt::RightDockWidgetArea, stages_->stagesDock());
    tabifyDockWidget(runs_->runDock(), stages_->stagesDock());
    addDockWidget(Qt::RightDockWidgetArea, stages_->shardMapDock());
    tabifyDockWidget(stages_->stagesDock(), stages_->shardMapDock());
    runs_->runDock()->raise();
    addDockWidget(Qt::BottomDockWidgetArea, inspection_->issuesDock());
    // Optimize beside the bottom tabs (Plan among them), not one of them: a point's
    // plan shows while the chart stays. Split before the tabs form (a tab cannot be
    // split); closed until asked for (Run ▸ Optimize, View ▸ Optimize).
    addDockWidget(Qt::BottomDockWidgetArea, optimize_->optimizeDock());
    splitDockWidget(inspection_->issuesDock(), optimize_->optimizeDock(), Qt::Horizontal);
    optimize_->optimizeDock()->hide();
    addDockWidget(Qt::BottomDockWidgetArea, runs_->outputsDock());
    tabifyDockWidget(inspection_->issuesDock(), runs_->outputsDock());
    addDockWidget(Qt::BottomDockWidgetArea, editing_->historyDock());
    tabifyDockWidget(inspection_->issuesDock(), editing_->historyDock());
    addDockWidget(Qt::BottomDockWidgetArea, plan_->planDock());
    tabifyDockWidget(inspection_->issuesDock(), plan_->planDock());
    addDockWidget(Qt::BottomDockWidgetArea, launch_->launchDock());
    tabifyDockWidget(plan_->planDock(), launch_->launchDock());
    inspection_->issuesDock()->raise();
}

void MainWindow::applyDefaultDockSizes() {
    // Default proportions (a saved window state replaces them), once the window
    // has its geometry: the bottom docks a strip of a few rows; on the right, the
    // Run panel what it needs to show its buttons and the inspector the rest.
    resizeDocks({editing_->paletteDock(), inspection_->inspectorDock()}, {250, 450}, Qt::Horizontal);
    resizeDocks({inspection_->issuesDock()}, {140}, Qt::Vertical);
    QTimer::singleShot(0, this, [this] {
        fitRunDock();
        const int left = editing_->paletteDock()->height() + canvas_->overviewDock()->height();
        resizeDocks({editing_->paletteDock(), canvas_->overviewDock()}, {left * 2 / 3, left / 3}, Qt::Vertical);
    });
}

void MainWindow::fitRunDock() {
    // Run's buttons in view; the inspector above it takes what is left.
    const int run = runs_->runPanel()->minimumSizeHint().height() + 56;  // with its title and the tab bar
    const int right = inspection_->inspectorDock()->height() + runs_->runDock()->height();
    resizeDocks({inspection_->inspectorDock(), runs_->runDock()}, {std::max(right - run, right / 3), run},
                Qt::Vertical);
}

void MainWindow::giveOutputsRoom() {
    // The strip that suits the issues list is too short for tables: the first
    // results get the room they need (later, the user's choice stands).
    QDockWidget *outputs = runs_->outputsDock();
    if (outputs_sized_ || outputs->isFloating() || dockWidgetArea(outputs) != Qt::BottomDockWidgetArea) return;
    outputs_sized_ = true;
    if (outputs->height() >= 330) return;
    resizeDocks({outputs}, {330}, Qt::Vertical);
    QTimer::singleShot(0, this, &MainWindow::fitRunDock);
}

void MainWindow::createFileMenu() {
    auto icon = [](const char *name) { return views::studioIcon(QString::fromLatin1(name)); };
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *new_graph = menuAction(file, icon("open"), tr("&New Graph"), QKeySequence::New);
    new_graph->setStatusTip(tr("Start an empty graph in the session"));
    connect(new_graph, &QAction::triggered, project_, &ProjectController::newProject);
    QAction *open_session = menuAction(file, {}, tr("Open &Session…"));
    open_session->setStatusTip(tr("Open or create a session file (.tapestry-session)"));
    connect(open_session, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Open or Create Session"), QFileInfo(session_->path()).absolutePath(),
            tr("Tapestry sessions (*.tapestry-session)"), nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty()) openSession(path);
    });
    file->addAction(session_->projectsAction());
    open_action_ = menuAction(file, icon("open"), tr("&Open…"), QKeySequence::Open);
    open_action_->setStatusTip(tr("Open a .tapestry.json project"));
    connect(open_action_, &QAction::triggered, project_, &ProjectController::openDialog);
    file->addMenu(project_->recentMenu());
    QAction *import = menuAction(file, views::runActionIcon(QStringLiteral("import")), tr("&Import ONNX…"),
                                 QKeySequence(tr("Ctrl+I")));
    import->setObjectName(QStringLiteral("actionImportOnnx"));
    import->setStatusTip(tr("Import an ONNX model (opsets 13–17; older ones are converted) as a graph"));
    connect(import, &QAction::triggered, project_, &ProjectController::importDialog);
    // F5 only: Ctrl+R is Run (QKeySequence::Refresh includes Ctrl+R on some desktops).
    reload_action_ = menuAction(file, icon("reload"), tr("&Reload"), QKeySequence(Qt::Key_F5));
    connect(reload_action_, &QAction::triggered, project_, &ProjectController::reload);
    file->addSeparator();
    QAction *save_action = menuAction(file, {}, tr("&Save"), QKeySequence::Save);
    save_action->setStatusTip(tr("Save the graph as a new version in the session"));
    connect(save_action, &QAction::triggered, this, [this] { save(); });
    save_as_action_ =
        menuAction(file, views::runActionIcon(QStringLiteral("save")), tr("Save &As…"), QKeySequence::SaveAs);
    save_as_action_->setObjectName(QStringLiteral("actionSaveAs"));
    save_as_action_->setStatusTip(tr("Save the graph as a .tapestry.json project, with its values"));
    connect(save_as_action_, &QAction::triggered, project_, &ProjectController::saveAsDialog);
    file->addSeparator();
    export_svg_action_ = menuAction(file, icon("export"), tr("Export as &SVG…"));
    connect(export_svg_action_, &QAction::triggered, this, [this] { exportCanvasDialog(QStringLiteral("svg")); });
    export_png_action_ = menuAction(file, {}, tr("Export as &PNG…"));
    connect(export_png_action_, &QAction::triggered, this, [this] { exportCanvasDialog(QStringLiteral("png")); });
    QAction *export_any = menuAction(file, {}, tr("&Export…"), QKeySequence(tr("Ctrl+Shift+E")));  // Ctrl+E: issues
    export_any->setStatusTip(
        tr("Export the graph or the selection as SVG, PNG (at a chosen scale), DOT or project JSON"));
    connect(export_any, &QAction::triggered, this, [this] {
        const QString done =
            exportWithDialog(this, *canvas_->scene(), doc_->graph(), doc_->source().name, canvas_->view()->isDark());
        if (!done.isEmpty()) statusBar()->showMessage(done, 6000);
    });
    file->addSeparator();
    QAction *quit = menuAction(file, {}, tr("&Quit"), QKeySequence(tr("Ctrl+Q")));
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, this, &QWidget::close);
}

void MainWindow::createEditMenu() {
    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    edit->addActions({editing_->undoAction(), editing_->redoAction()});
    edit->addSeparator();
    edit->addActions({editing_->cutAction(), editing_->copyAction(), editing_->pasteAction(),
                      editing_->duplicateAction(), editing_->deleteAction()});
    edit->addSeparator();
    edit->addActions(
        {editing_->selectAllAction(), canvas_->findAction(), canvas_->findNextAction(), canvas_->findPreviousAction()});
    edit->addSeparator();
    edit->addActions({canvas_->producersAction(), canvas_->consumersAction(), editing_->pinAction()});
    addAction(editing_->paletteSearchAction());  // window-wide, in no menu
}

void MainWindow::createRunMenu() {
    QMenu *run = menuBar()->addMenu(tr("&Run"));
    run->addActions({runs_->runAction(), runs_->verifyAction(), runs_->cancelAction()});
    run->addSeparator();
    run->addActions({runs_->useShardsAction(), runs_->randomInputsAction(), runs_->inputsFolderAction()});
    run->addSeparator();
    run->addAction(runs_->saveOutputsAction());
    run->addSeparator();
    run->addAction(stages_->runPipelineAction());
    run->addSeparator();
    run->addActions({plan_->planAction(), launch_->launchAction(), plan_->openAction(), plan_->exportAction(),
                     plan_->measureHostAction()});
    run->addSeparator();
    run->addActions({optimize_->startAction(), optimize_->stopAction(), optimize_->compareAction()});
}

void MainWindow::createViewAndHelpMenus() {
    QMenu *view = menuBar()->addMenu(tr("&View"));
    view->addActions({canvas_->fitAction(), canvas_->zoomToSelectionAction(), canvas_->relayoutAction()});
    view->addSeparator();
    view->addActions({canvas_->zoomInAction(), canvas_->zoomOutAction(), canvas_->resetZoomAction()});
    view->addSeparator();
    QAction *toggle_inspector = inspection_->inspectorDock()->toggleViewAction();
    toggle_inspector->setShortcut(QKeySequence(tr("Ctrl+Shift+I")));  // Ctrl+I is Import ONNX
    QAction *toggle_issues = inspection_->issuesDock()->toggleViewAction();
    toggle_issues->setShortcut(QKeySequence(tr("Ctrl+E")));
    QAction *toggle_outputs = runs_->outputsDock()->toggleViewAction();
    toggle_outputs->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
    view->addActions({toggle_inspector, toggle_issues, runs_->runDock()->toggleViewAction(), toggle_outputs});
    view->addSeparator();
    view->addActions({editing_->paletteDock()->toggleViewAction(), canvas_->overviewDock()->toggleViewAction(),
                      editing_->historyDock()->toggleViewAction()});
    view->addSeparator();
    dark_action_ = view->addAction(tr("&Dark Theme"));
    dark_action_->setCheckable(true);
    connect(dark_action_, &QAction::toggled, this, &MainWindow::setDarkTheme);
    view->addSeparator();
    view->addActions({stages_->stagesDock()->toggleViewAction(), stages_->shardMapDock()->toggleViewAction(),
                      stages_->previousStageAction(), stages_->nextStageAction(), stages_->applyStageAction(),
                      stages_->toggleShardsAction(), stages_->expandAllShardsAction()});
    view->addSeparator();
    view->addActions({plan_->planDock()->toggleViewAction(), launch_->launchDock()->toggleViewAction(),
                      plan_->copyTargetAction(), optimize_->optimizeDock()->toggleViewAction()});

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *about = help->addAction(tr("&About Tapestry Studio"), this, [this] {
        QMessageBox::about(this, tr("About Tapestry Studio"),
                           tr("<h3>Tapestry Studio %1</h3>"
                              "<p>A workbench for block tensor operation graphs: Tapestry's block operations with "
                              "index projection functions, laid out by Graphviz and checked live.</p>"
                              "<p>Qt %2</p>")
                               .arg(QCoreApplication::applicationVersion(), QString::fromLatin1(qVersion())));
    });
    about->setMenuRole(QAction::AboutRole);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::createToolBar() {
    QToolBar *bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setMovable(false);
    bar->setIconSize(QSize(20, 20));
    // Short buttons for undo and redo; the step they undo is in their tooltip
    // (the menu items carry the full "Undo Rename fc1").
    auto proxy = [&](QAction *target, const QString &text, const char *name) {
        auto *a = new QAction(text, this);
        a->setObjectName(QString::fromLatin1(name));
        connect(a, &QAction::triggered, target, &QAction::trigger);
        auto sync = [a, target] {
            a->setEnabled(target->isEnabled());
            a->setToolTip(target->text());
        };
        connect(target, &QAction::changed, a, sync);
        sync();
        bar->addAction(a);
    };
    proxy(editing_->undoAction(), tr("Undo"), "toolbarUndo");
    proxy(editing_->redoAction(), tr("Redo"), "toolbarRedo");
    bar->addSeparator();
    bar->addActions({open_action_, reload_action_, export_svg_action_});
    bar->addSeparator();
    bar->addActions(
        {canvas_->fitAction(), canvas_->zoomInAction(), canvas_->zoomOutAction(), canvas_->resetZoomAction()});
    bar->addSeparator();
    bar->addActions({runs_->runAction(), runs_->verifyAction(), runs_->cancelAction()});
}

void MainWindow::createStatusBar() {
    busy_indicator_ = new QProgressBar(this);
    busy_indicator_->setObjectName(QStringLiteral("busyIndicator"));
    busy_indicator_->setRange(0, 0);  // indeterminate
    busy_indicator_->setTextVisible(false);
    busy_indicator_->setFixedWidth(110);
    busy_indicator_->hide();
    counts_label_ = new QLabel(this);
    counts_label_->setObjectName(QStringLiteral("countsLabel"));
    statusBar()->addPermanentWidget(busy_indicator_);
    statusBar()->addPermanentWidget(counts_label_);
    statusBar()->addPermanentWidget(canvas_->zoomLabel());
    statusBar()->setSizeGripEnabled(true);
}

void MainWindow::connectControllers() {
    connect(doc_, &GraphDocument::changed, this, [this](GraphDocument::Changes what) {
        if (what & (GraphDocument::Replaced | GraphDocument::Source)) updateTitle();
        if (what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages)) updateCounts();
        updateFileActions();
    });
    connect(doc_->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitle);
    connect(canvas_, &CanvasController::layoutReady, this, &MainWindow::onLayoutReady);
    connect(canvas_, &CanvasController::layoutFailed, this, &MainWindow::finishStartup);
    connect(canvas_, &CanvasController::busyChanged, this, &MainWindow::updateBusy);
    connect(project_, &ProjectController::busyChanged, this, &MainWindow::updateBusy);
    connect(project_, &ProjectController::openSessionRequested, this,
            [this](const QString &path) { openSession(path); });
    connect(session_, &SessionController::projectRead, project_, &ProjectController::showSessionProject);
    connect(project_, &ProjectController::openPlanRequested, this, [this](const QString &path) { openPlan(path); });
    connect(plan_, &PlanController::openElsewhereRequested, project_, &ProjectController::openAny);
    connect(project_, &ProjectController::openTargetRequested, plan_, &PlanController::openTargetFile);
    connect(project_, &ProjectController::openFailed, this,
            [this](const QString &why, const std::vector<Issue> &issues) {
                inspection_->showOpenFailure(why, issues);
                reload_action_->setEnabled(true);
            });
    connect(project_, &ProjectController::projectLoaded, this, [this](bool opened) {
        if (!opened && !doc_->isOpen()) finishStartup();
    });
    connect(runs_, &RunController::runFailed, inspection_, &InspectorController::showRunError);
    connect(runs_, &RunController::outputsShown, this, &MainWindow::giveOutputsRoom);
    connect(runs_, &RunController::runSucceeded, inspection_, &InspectorController::clearRunError);
}

// ---- the document on screen ---------------------------------------------------------

void MainWindow::onLayoutReady(bool again) {
    if (again) return;
    // A project opened from a file joins the session (so autosave has a home), and
    // the session's record of its last pipeline comes back.
    session_->joinIfNew();
    stages_->restoreStages();
    const Graph &g = doc_->graph();
    statusBar()->showMessage(tr("Opened %1 — %2 tensors, %3 operations; %4")
                                 .arg(doc_->source().name)
                                 .arg(g.tensors().size())
                                 .arg(g.operations().size())
                                 .arg(inspection_->issuesPanel()->summary().toLower()),
                             8000);
    if (!preselect_.isEmpty()) {
        // Marked like a clicked issue when the node has issues; plainly selected otherwise.
        views::NodeItem *item = scene()->nodeItem(scene()->canvasNodeFor(preselect_));
        const bool mark = item && item->health() != views::NodeHealth::ok;
        if (!canvas_->revealNode(preselect_, mark))
            statusBar()->showMessage(tr("No node %1 in %2").arg(preselect_, doc_->source().name));
        preselect_.clear();
    }
    updateFileActions();
    finishStartup();
}

void MainWindow::updateBusy() {
    const bool busy = project_->isBusy() || canvas_->isLayingOut();
    busy_indicator_->setVisible(busy);
    if (busy_ == busy) return;
    busy_ = busy;
    emit busyChanged(busy);
}

void MainWindow::updateTitle() {
    const QString app = QStringLiteral("Tapestry Studio");
    const QString &name = doc_->source().name;
    const QString shown = name + (doc_->isModified() ? QStringLiteral(" •") : QString());
    setWindowTitle(name.isEmpty() ? app : QStringLiteral("%1 — %2").arg(shown, app));
}

void MainWindow::updateCounts() {
    const Graph &g = doc_->graph();
    if (g.node_count() == 0) {
        counts_label_->clear();
        return;
    }
    counts_label_->setText(tr("%1 tensors · %2 ops · %3")
                               .arg(g.tensors().size())
                               .arg(g.operations().size())
                               .arg(inspection_->issuesPanel()->summary()));
}

void MainWindow::updateFileActions() {
    const bool has_graph = doc_->isOpen() && doc_->graph().node_count() > 0;
    save_as_action_->setEnabled(has_graph);
    reload_action_->setEnabled(!doc_->source().path.isEmpty());
    export_svg_action_->setEnabled(canvas_->scene()->hasLayout());
    export_png_action_->setEnabled(canvas_->scene()->hasLayout());
}

// ---- files and the session -------------------------------------------------------------

void MainWindow::openProject(const QString &path) {
    if (ProjectController::isPlanFile(path))
        openPlan(path);
    else
        project_->openProject(path);
}

void MainWindow::openPlan(const QString &path) {
    plan_->planDock()->show();
    plan_->planDock()->raise();
    if (!plan_->openPlan(path)) statusBar()->showMessage(tr("Plan not opened: a plan is being made; try again when it is done"), 10000);
}

QString MainWindow::openSession(const QString &path, bool show_last_project) {
    const QString why = session_->open(path);
    if (!why.isEmpty() || !show_last_project) return why;
    if (const qint64 last = session_->lastProject(); last != 0) {
        QString error;
        if (auto p = session_->readProject(last, &error))
            project_->showSessionProject(*p);
        else
            statusBar()->showMessage(tr("Could not read project %1 of the session: %2").arg(last).arg(error), 15000);
        return {};
    }
    // A fresh session starts on the example project, saved into it.
    if (!views::findExampleProject().isEmpty())
        project_->openDefaultProject();
    else
        project_->newProject();
    return {};
}

QString MainWindow::defaultSessionPath() {
    return SessionController::defaultPath();
}

QString MainWindow::lastSessionPath() {
    return SessionController::lastPath();
}

bool MainWindow::save() {
    if (!session_->session()) return project_->saveAsDialog();
    session_->save(false);
    return true;
}

void MainWindow::exportCanvasDialog(const QString &format) {
    const QFileInfo source(doc_->source().path);
    const QString base = source.completeBaseName().remove(QLatin1String(".tapestry"));
    const QString suggested = source.absoluteDir().filePath(base + QLatin1Char('.') + format);
    const QString filter = format == QLatin1String("svg") ? tr("SVG drawings (*.svg)") : tr("PNG images (*.png)");
    QString path = QFileDialog::getSaveFileName(this, tr("Export Canvas"), suggested, filter);
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1Char('.') + format, Qt::CaseInsensitive)) path += QLatin1Char('.') + format;
    ExportRequest request{path, format, false, 2.0, canvas_->view()->isDark(), doc_->source().name};
    const QString error = exportCanvas(*canvas_->scene(), doc_->graph(), request);
    if (error.isEmpty())
        statusBar()->showMessage(tr("Exported %1").arg(path), 6000);
    else
        QMessageBox::warning(this, tr("Export failed"), tr("Could not export the canvas: %1").arg(error));
}

// ---- settings, theme, startup ----------------------------------------------------

void MainWindow::restoreSettings() {
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) resize(1360, 860);
    if (!restoreState(settings.value(QStringLiteral("window/state")).toByteArray()))
        QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
    if (settings.value(QStringLiteral("ui/dark"), false).toBool())
        QTimer::singleShot(0, this, [this] { setDarkTheme(true); });
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("recentFiles"), project_->recentFiles());
}

void MainWindow::setDarkTheme(bool dark) {
    if (dark_action_ && dark_action_->isChecked() != dark) dark_action_->setChecked(dark);
    QPalette p;
    if (dark) {
        p.setColor(QPalette::Window, QColor(0x1f, 0x24, 0x2b));
        p.setColor(QPalette::WindowText, QColor(0xe5, 0xe7, 0xeb));
        p.setColor(QPalette::Base, QColor(0x16, 0x1a, 0x20));
        p.setColor(QPalette::AlternateBase, QColor(0x23, 0x29, 0x31));
        p.setColor(QPalette::Text, QColor(0xe5, 0xe7, 0xeb));
        p.setColor(QPalette::Button, QColor(0x2a, 0x30, 0x38));
        p.setColor(QPalette::ButtonText, QColor(0xe5, 0xe7, 0xeb));
        p.setColor(QPalette::Highlight, QColor(0x25, 0x63, 0xeb));
        p.setColor(QPalette::HighlightedText, Qt::white);
        p.setColor(QPalette::ToolTipBase, QColor(0x2a, 0x30, 0x38));
        p.setColor(QPalette::ToolTipText, QColor(0xe5, 0xe7, 0xeb));
        p.setColor(QPalette::PlaceholderText, QColor(0x9c, 0xa3, 0xaf));
        p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x6b, 0x72, 0x80));
        p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x6b, 0x72, 0x80));
    } else {
        p = QApplication::style()->standardPalette();
    }
    QApplication::setPalette(p);
    canvas_->view()->setDark(dark);
    QSettings().setValue(QStringLiteral("ui/dark"), dark);
}

void MainWindow::finishStartup() {
    if (startup_done_) return;
    startup_done_ = true;
    if (screenshot_path_.isEmpty()) return;
    // Let the window paint once with its final geometry before grabbing it.
    QTimer::singleShot(150, this, [this] {
        const QPixmap shot = grab();
        const bool ok = !shot.isNull() && shot.save(screenshot_path_);
        if (!ok) qWarning("tapestry-studio: could not write the screenshot to %s", qPrintable(screenshot_path_));
        QCoreApplication::exit(ok ? 0 : 1);
    });
}

void MainWindow::closeEvent(QCloseEvent *event) {
    // Nothing edited is lost: a pending autosave is written now.
    session_->flush();
    saveSettings();
    event->accept();
}

// ---- drag and drop -------------------------------------------------------------

void MainWindow::dragEnterEvent(QDragEnterEvent *event) {
    if (!droppedProject(event->mimeData()).isEmpty())
        event->acceptProposedAction();
    else
        event->ignore();
}

void MainWindow::dragMoveEvent(QDragMoveEvent *event) {
    if (!droppedProject(event->mimeData()).isEmpty())
        event->acceptProposedAction();
    else
        event->ignore();
}

void MainWindow::dropEvent(QDropEvent *event) {
    const QString path = droppedProject(event->mimeData());
    if (path.isEmpty()) {
        event->ignore();
        return;
    }
    event->acceptProposedAction();
    project_->openAny(path);
}

}  // namespace tapestry::studio
