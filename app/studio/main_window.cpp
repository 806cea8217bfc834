#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QImage>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QScopeGuard>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QThreadPool>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "io/atomic_file.h"
#include "io/graphviz.h"
#include "io/onnx_import.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "store/session.h"
#include "views/find_bar.h"
#include "views/graph_document.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/inspector.h"
#include "views/issues_panel.h"
#include "views/layout_worker.h"
#include "views/minimap.h"
#include "views/node_editor.h"
#include "views/outputs_panel.h"
#include "views/project_locator.h"
#include "views/run_panel.h"
#include "views/studio_resources.h"

namespace tapestry::studio {

namespace {
constexpr int kMaxRecent = 8;

bool isOnnxFile(const QString &path) {
    return path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive);
}

bool isProjectFile(const QString &path) {
    return (path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive) || isOnnxFile(path) ||
            path.endsWith(QLatin1String(".tapestry-session"), Qt::CaseInsensitive)) &&
           QFileInfo(path).isFile();
}

// The first local project file (or ONNX model) among dropped URLs, or "".
QString droppedProject(const QMimeData *mime) {
    if (!mime || !mime->hasUrls()) return {};
    for (const QUrl &url : mime->urls())
        if (url.isLocalFile() && isProjectFile(url.toLocalFile())) return url.toLocalFile();
    return {};
}
}  // namespace

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent) {
    views::initResources();
    setObjectName(QStringLiteral("studioMainWindow"));
    setWindowIcon(views::studioIcon(QStringLiteral("tapestry")));
    setAcceptDrops(true);
    setDockOptions(AnimatedDocks | AllowTabbedDocks);

    scene_ = new views::GraphScene(this);
    view_ = new views::GraphView(this);
    view_->setScene(scene_);
    setCentralWidget(view_);
    loader_ = new views::ProjectLoader(this);
    layout_ = new views::LayoutWorker(this);
    import_ = new views::OnnxImportWorker(this);
    run_worker_ = new views::RunWorker(this);

    createDocks();
    createActions();
    createStatusBar();
    createEditing();
    createStages();

    connect(loader_, &views::ProjectLoader::loaded, this, &MainWindow::onProjectLoaded);
    connect(import_, &views::OnnxImportWorker::finished, this, &MainWindow::onImportFinished);
    connect(run_worker_, &views::RunWorker::progress, this, &MainWindow::onRunProgress);
    connect(run_worker_, &views::RunWorker::finished, this, &MainWindow::onRunFinished);
    connect(outputs_, &views::OutputsPanel::saveRequested, this, &MainWindow::saveOutputsDialog);
    connect(layout_, &views::LayoutWorker::finished, this, &MainWindow::onLayoutFinished);
    connect(layout_, &views::LayoutWorker::failed, this, &MainWindow::onLayoutFailed);
    connect(scene_, &views::GraphScene::nodeSelected, this, &MainWindow::onNodeSelected);
    connect(issues_, &views::IssuesPanel::issueActivated, this, &MainWindow::onIssueActivated);
    connect(inspector_, &views::Inspector::nodeActivated, this, [this](const QString &id) { revealNode(id, false); });
    connect(view_, &views::GraphView::zoomChanged, this,
            [this](double z) { zoom_label_->setText(QStringLiteral("%1 %").arg(qRound(z * 100))); });

    restoreSettings();
    updateTitle();
    view_->setPlaceholderText(
        tr("Open a project with File ▸ Open… or drop a .tapestry.json file (or an .onnx model) here."));
    updateRunActions();
}

MainWindow::~MainWindow() {
    layout_->cancel();
    loader_->cancel();
    import_->cancel();
    run_worker_->cancel();
}

// ---- construction --------------------------------------------------------------

void MainWindow::createDocks() {
    inspector_ = new views::Inspector(this);
    inspector_dock_ = new QDockWidget(tr("Inspector"), this);
    inspector_dock_->setObjectName(QStringLiteral("inspectorDock"));
    // The editing form above the details (name, type, shape, role, parameters).
    node_editor_ = new views::NodeEditor(this);
    auto *inspector_column = new QWidget(this);
    auto *inspector_layout = new QVBoxLayout(inspector_column);
    inspector_layout->setContentsMargins(0, 0, 0, 0);
    inspector_layout->setSpacing(0);
    inspector_layout->addWidget(node_editor_);
    inspector_layout->addWidget(inspector_, 1);
    inspector_dock_->setWidget(inspector_column);
    inspector_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                                 QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::RightDockWidgetArea, inspector_dock_);

    issues_ = new views::IssuesPanel(this);
    issues_dock_ = new QDockWidget(tr("Issues"), this);
    issues_dock_->setObjectName(QStringLiteral("issuesDock"));
    issues_dock_->setWidget(issues_);
    addDockWidget(Qt::BottomDockWidgetArea, issues_dock_);

    run_panel_ = new views::RunPanel(this);
    run_dock_ = new QDockWidget(tr("Run"), this);
    run_dock_->setObjectName(QStringLiteral("runDock"));
    run_dock_->setWidget(run_panel_);
    addDockWidget(Qt::RightDockWidgetArea, run_dock_);
    splitDockWidget(inspector_dock_, run_dock_, Qt::Vertical);

    outputs_ = new views::OutputsPanel(this);
    outputs_dock_ = new QDockWidget(tr("Outputs"), this);
    outputs_dock_->setObjectName(QStringLiteral("outputsDock"));
    outputs_dock_->setWidget(outputs_);
    addDockWidget(Qt::BottomDockWidgetArea, outputs_dock_);
    tabifyDockWidget(issues_dock_, outputs_dock_);
    issues_dock_->raise();

    resizeDocks({inspector_dock_}, {450}, Qt::Horizontal);
    resizeDocks({inspector_dock_, run_dock_}, {520, 300}, Qt::Vertical);
    resizeDocks({issues_dock_}, {260}, Qt::Vertical);
}

void MainWindow::createActions() {
    auto icon = [](const char *name) { return views::studioIcon(QString::fromLatin1(name)); };

    QMenu *file = menuBar()->addMenu(tr("&File"));
    open_action_ = file->addAction(icon("open"), tr("&Open…"), this, &MainWindow::openDialog);
    open_action_->setShortcut(QKeySequence::Open);
    open_action_->setStatusTip(tr("Open a .tapestry.json project"));
    recent_menu_ = file->addMenu(tr("Open &Recent"));
    import_onnx_action_ = file->addAction(views::runActionIcon(QStringLiteral("import")), tr("&Import ONNX…"), this,
                                          &MainWindow::importDialog);
    import_onnx_action_->setShortcut(QKeySequence(tr("Ctrl+I")));
    import_onnx_action_->setObjectName(QStringLiteral("actionImportOnnx"));
    import_onnx_action_->setStatusTip(tr("Import an ONNX model (opsets 13–17; older ones are converted) as a graph"));
    reload_action_ = file->addAction(icon("reload"), tr("&Reload"), this, &MainWindow::reload);
    // F5 only: Ctrl+R is Run (QKeySequence::Refresh includes Ctrl+R on some desktops).
    reload_action_->setShortcut(QKeySequence(Qt::Key_F5));
    reload_action_->setEnabled(false);
    file->addSeparator();
    save_as_action_ =
        file->addAction(views::runActionIcon(QStringLiteral("save")), tr("Save &As…"), this, &MainWindow::saveAsDialog);
    save_as_action_->setShortcut(QKeySequence::SaveAs);
    save_as_action_->setObjectName(QStringLiteral("actionSaveAs"));
    save_as_action_->setStatusTip(tr("Save the graph as a .tapestry.json project, with its values"));
    save_as_action_->setEnabled(false);
    file->addSeparator();
    export_svg_action_ =
        file->addAction(icon("export"), tr("Export as &SVG…"), this, [this] { exportDialog(QStringLiteral("svg")); });
    export_png_action_ = file->addAction(tr("Export as &PNG…"), this, [this] { exportDialog(QStringLiteral("png")); });
    QAction *export_any = file->addAction(tr("&Export…"), this, &MainWindow::exportSelectionDialog);
    export_any->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));  // Ctrl+E shows the issues
    export_any->setStatusTip(
        tr("Export the graph or the selection as SVG, PNG (at a chosen scale), DOT or project JSON"));
    export_svg_action_->setEnabled(false);
    export_png_action_->setEnabled(false);
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence(tr("Ctrl+Q")));
    quit->setMenuRole(QAction::QuitRole);

    QMenu *run = menuBar()->addMenu(tr("&Run"));
    run_action_ = run->addAction(views::runActionIcon(QStringLiteral("run")), tr("&Run"), this,
                                 [this] { startRun(views::RunMode::run); });
    run_action_->setShortcut(QKeySequence(tr("Ctrl+R")));
    run_action_->setObjectName(QStringLiteral("actionRun"));
    run_action_->setStatusTip(tr("Run the graph on the CPU with the Run panel's inputs"));
    verify_action_ = run->addAction(views::runActionIcon(QStringLiteral("verify")), tr("&Verify"), this,
                                    [this] { startRun(views::RunMode::verify); });
    verify_action_->setShortcut(QKeySequence(tr("Ctrl+Shift+R")));
    verify_action_->setObjectName(QStringLiteral("actionVerify"));
    verify_action_->setStatusTip(tr("Compare the sharded run with the unsharded run and the double-precision oracle"));
    cancel_run_action_ =
        run->addAction(views::runActionIcon(QStringLiteral("stop")), tr("&Cancel"), this, &MainWindow::cancelRun);
    cancel_run_action_->setShortcut(QKeySequence(Qt::Key_Escape));
    cancel_run_action_->setObjectName(QStringLiteral("actionCancelRun"));
    cancel_run_action_->setStatusTip(tr("Stop the run at its next step"));
    run->addSeparator();
    use_shards_action_ = run->addAction(tr("Use &Shards"));
    use_shards_action_->setCheckable(true);
    use_shards_action_->setChecked(run_panel_->useShards());
    connect(use_shards_action_, &QAction::toggled, run_panel_, &views::RunPanel::setUseShards);
    connect(run_panel_, &views::RunPanel::useShardsChanged, use_shards_action_, &QAction::setChecked);
    run->addAction(tr("Random &Inputs"), run_panel_, &views::RunPanel::setRandomInputs);
    run->addAction(tr("Inputs from &Folder…"), this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Folder of .npy Inputs"), run_panel_->inputsDir());
        if (!dir.isEmpty()) run_panel_->setInputsDir(dir);
    });
    run->addSeparator();
    save_outputs_action_ = run->addAction(views::runActionIcon(QStringLiteral("save")), tr("Save &Outputs…"), this,
                                          &MainWindow::saveOutputsDialog);
    save_outputs_action_->setObjectName(QStringLiteral("actionSaveOutputs"));
    save_outputs_action_->setEnabled(false);
    run_panel_->setActions(run_action_, verify_action_, cancel_run_action_);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    fit_action_ = view->addAction(icon("fit"), tr("&Fit to Window"), view_, &views::GraphView::fitToGraph);
    fit_action_->setShortcut(QKeySequence(Qt::Key_F));
    fit_action_->setObjectName(QStringLiteral("actionFit"));
    zoom_in_action_ = view->addAction(icon("zoom-in"), tr("Zoom &In"), view_, &views::GraphView::zoomIn);
    zoom_in_action_->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::Key_Plus), QKeySequence(Qt::Key_Equal)});
    zoom_in_action_->setObjectName(QStringLiteral("actionZoomIn"));
    zoom_out_action_ = view->addAction(icon("zoom-out"), tr("Zoom &Out"), view_, &views::GraphView::zoomOut);
    zoom_out_action_->setShortcuts({QKeySequence::ZoomOut, QKeySequence(Qt::Key_Minus)});
    zoom_out_action_->setObjectName(QStringLiteral("actionZoomOut"));
    reset_zoom_action_ = view->addAction(icon("zoom-reset"), tr("&Actual Size"), view_, &views::GraphView::resetZoom);
    reset_zoom_action_->setShortcut(QKeySequence(tr("Ctrl+0")));
    reset_zoom_action_->setObjectName(QStringLiteral("actionResetZoom"));
    view->addSeparator();
    QAction *toggle_inspector = inspector_dock_->toggleViewAction();
    toggle_inspector->setShortcut(QKeySequence(tr("Ctrl+Shift+I")));  // Ctrl+I is Import ONNX
    view->addAction(toggle_inspector);
    QAction *toggle_issues = issues_dock_->toggleViewAction();
    toggle_issues->setShortcut(QKeySequence(tr("Ctrl+E")));
    view->addAction(toggle_issues);
    view->addAction(run_dock_->toggleViewAction());
    QAction *toggle_outputs = outputs_dock_->toggleViewAction();
    toggle_outputs->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
    view->addAction(toggle_outputs);

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *about_action = help->addAction(tr("&About Tapestry Studio"), this, &MainWindow::about);
    about_action->setMenuRole(QAction::AboutRole);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

    QToolBar *bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setMovable(false);
    bar->setIconSize(QSize(20, 20));
    bar->addAction(open_action_);
    bar->addAction(reload_action_);
    bar->addAction(export_svg_action_);
    bar->addSeparator();
    bar->addAction(fit_action_);
    bar->addAction(zoom_in_action_);
    bar->addAction(zoom_out_action_);
    bar->addAction(reset_zoom_action_);
    bar->addSeparator();
    bar->addAction(run_action_);
    bar->addAction(verify_action_);
    bar->addAction(cancel_run_action_);
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
    zoom_label_ = new QLabel(QStringLiteral("100 %"), this);
    zoom_label_->setObjectName(QStringLiteral("zoomLabel"));
    zoom_label_->setMinimumWidth(56);
    zoom_label_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    run_progress_ = new QProgressBar(this);
    run_progress_->setObjectName(QStringLiteral("runStatusProgress"));
    run_progress_->setFixedWidth(150);
    run_progress_->setMaximumHeight(14);
    run_progress_->setTextVisible(false);
    run_progress_->hide();
    run_cancel_button_ = new QToolButton(this);
    run_cancel_button_->setObjectName(QStringLiteral("runStatusCancel"));
    run_cancel_button_->setDefaultAction(cancel_run_action_);
    run_cancel_button_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    run_cancel_button_->setAutoRaise(true);
    run_cancel_button_->hide();
    statusBar()->addPermanentWidget(run_progress_);
    statusBar()->addPermanentWidget(run_cancel_button_);
    statusBar()->addPermanentWidget(busy_indicator_);
    statusBar()->addPermanentWidget(counts_label_);
    statusBar()->addPermanentWidget(zoom_label_);
    statusBar()->setSizeGripEnabled(true);
}

void MainWindow::restoreSettings() {
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) resize(1360, 860);
    if (!restoreState(settings.value(QStringLiteral("window/state")).toByteArray()))
        QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
    recent_ = settings.value(QStringLiteral("recentFiles")).toStringList();
    rebuildRecentMenu();
    if (settings.value(QStringLiteral("ui/dark"), false).toBool())
        QTimer::singleShot(0, this, [this] { setDarkTheme(true); });
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("recentFiles"), recent_);
}

void MainWindow::closeEvent(QCloseEvent *event) {
    layout_->cancel();
    loader_->cancel();
    import_->cancel();
    run_worker_->cancel();
    // Nothing edited is lost: a pending autosave is written now (the one moment
    // the GUI waits for the store).
    if (session_ && (autosave_timer_->isActive() || save_in_flight_)) {
        if (save_in_flight_) {
            // Only the save is waited for, not a running layout or run; a project
            // it just created is the one to save into.
            save_future_.waitForFinished();
            if (project_id_ == 0) project_id_ = save_future_.result().first;
        }
        autosave_timer_->stop();
        const Graph snapshot = doc_->graph();
        project_id_ =
            saveSnapshot(*session_, project_id_, snapshot, placementsOf(scene_->positions(), doc_->pinned(), snapshot),
                         display_name_.isEmpty() ? tr("untitled") : display_name_, true)
                .first;
    }
    if (session_) session_->set_state(store::kSessionScope, "current_project", std::to_string(project_id_));
    saveSettings();
    event->accept();
}

// ---- opening -------------------------------------------------------------------

void MainWindow::openProject(const QString &path) {
    const QFileInfo info(path);
    path_ = info.absoluteFilePath();
    display_name_ = info.fileName();
    imported_ = false;
    import_->cancel();
    layout_->cancel();  // a new load supersedes the old layout
    setBusy(true, tr("Opening %1…").arg(display_name_));
    if (!scene_->hasLayout()) view_->setPlaceholderText(tr("Opening %1…").arg(display_name_));
    loader_->start(path_);
}

void MainWindow::reload() {
    if (path_.isEmpty()) return;
    if (imported_)
        importOnnx(path_, import_dims_);
    else
        openProject(path_);
}

void MainWindow::openAny(const QString &path) {
    if (path.endsWith(QLatin1String(".tapestry-session"), Qt::CaseInsensitive))
        openSession(path);
    else if (isOnnxFile(path))
        importOnnx(path);
    else
        openProject(path);
}

void MainWindow::openDefaultProject() {
    const QString found = views::findExampleProject();
    if (!found.isEmpty()) {
        openProject(found);
        return;
    }
    const QString where = views::exampleProjectDirs().join(QStringLiteral("\n  "));
    const QString message =
        tr("No project open: the example project mlp.tapestry.json was not found.\n"
           "Looked in:\n  %1\nOpen a project with File ▸ Open… (Ctrl+O), or set TAPESTRY_SOURCE_DIR.")
            .arg(where);
    view_->setPlaceholderText(message);
    statusBar()->showMessage(tr("No example project found; open one with File ▸ Open…"));
    finishStartup();
}

void MainWindow::onProjectLoaded(quint64, const views::LoadedProject &project) {
    if (project.path != path_) return;  // a stale answer for a file no longer wanted
    load_ms_ = project.elapsed_ms;
    if (!project.opened) {
        project_ = views::LoadedProject();
        last_outcome_ = views::RunOutcome();
        outputs_->clear();
        scene_->clearGraph();
        inspector_->clearGraph();
        const QString why = tr("Could not open %1: %2").arg(display_name_, project.error);
        issues_->clear();
        issues_->setIssues(project.load_issues, why);
        issues_dock_->setWindowTitle(tr("Issues"));
        issues_dock_->show();
        view_->setPlaceholderText(why);
        setBusy(false);
        statusBar()->showMessage(why);
        updateTitle();
        updateCounts();
        reload_action_->setEnabled(true);
        export_png_action_->setEnabled(false);
        export_svg_action_->setEnabled(false);
        updateRunActions();
        emit projectLoaded(false);
        finishStartup();
        return;
    }
    showProject(project);
    emit projectLoaded(true);
}

void MainWindow::showProject(const views::LoadedProject &project) {
    project_ = project;
    run_error_shown_ = false;
    last_outcome_ = views::RunOutcome();  // outputs belong to the graph they came from
    outputs_->clear();
    if (!run_worker_->isRunning()) run_panel_->reset();
    const std::vector<Issue> issues = project.allIssues();
    doc_->reset(project.graph, project.validation_issues);
    node_editor_->setGraph(project.graph);
    node_editor_->showNode(QString());
    scene_->setGraph(project.graph, issues);
    inspector_->setGraph(project.graph, issues, display_name_);
    QString headline;
    if (has_errors(project.load_issues))
        headline = tr("%1 was read only in part; the graph shows what could be read.").arg(display_name_);
    issues_->setIssuesOfProject(issues, headline);
    issues_dock_->setWindowTitle(issues.empty() ? tr("Issues") : tr("Issues (%1)").arg(issues_->summary()));
    addRecent(path_);
    updateTitle();
    updateCounts();
    reload_action_->setEnabled(true);
    view_->setPlaceholderText(QString());
    setBusy(true, tr("Laying out %1 (%2 nodes)…").arg(display_name_).arg(project.graph.node_count()));
    updateRunActions();
    layout_->start(project.graph);
}

void MainWindow::onLayoutFinished(quint64, const tapestry::Layout &layout) {
    const QHash<QString, QPointF> before = scene_->positions();
    const QStringList was_selected = scene_->selectedNodeIds();
    scene_->setLayout(layout);
    {
        // Nodes added while the layout ran (the user did not wait) keep the places
        // they were given.
        QSet<QString> laid_out;
        for (const NodeBox &box : layout.nodes) laid_out.insert(QString::fromStdString(box.id));
        QStringList missing;
        for (const TensorPtr &t : doc_->graph().tensors())
            if (!laid_out.contains(QString::fromStdString(t->id.value))) missing << QString::fromStdString(t->id.value);
        for (const OpPtr &op : doc_->graph().operations())
            if (!laid_out.contains(QString::fromStdString(op->id.value)))
                missing << QString::fromStdString(op->id.value);
        if (!missing.isEmpty()) scene_->applyEdit(doc_->graph(), doc_->issues(), missing, doc_->positions());
        if (!was_selected.isEmpty()) scene_->selectNodes(was_selected);
    }
    if (relayout_pending_) {
        // A re-layout keeps the nodes the user pinned where they were.
        relayout_pending_ = false;
        cancel_layout_button_->hide();
        QHash<QString, QPointF> keep;
        for (const QString &id : doc_->pinned())
            if (before.contains(id)) keep.insert(id, before.value(id));
        scene_->setPositions(keep);
        doc_->setPositions(scene_->positions());
        minimap_->sceneChanged();
        setBusy(false);
        statusBar()->showMessage(
            tr("Laid out again; %n pinned node(s) kept in place", nullptr, static_cast<int>(keep.size())), 6000);
        scheduleAutosave();
        emit layoutReady();
        return;
    }
    if (!session_placements_.isEmpty()) {
        scene_->setPositions(session_placements_);
        doc_->setPinned(pinned_from_session_, true);
        session_placements_.clear();
        pinned_from_session_.clear();
    }
    doc_->setPositions(scene_->positions());
    minimap_->sceneChanged();
    find_bar_->refresh();
    // A project opened from a file joins the session (so autosave has a home).
    if (session_ && project_id_ == 0 && project_.graph.node_count() > 0) saveToSession(true);
    view_->setPlaceholderText(project_.graph.node_count() == 0 ? tr("This project has no tensors or operations.")
                                                               : QString());
    view_->showGraph();
    setBusy(false);
    export_png_action_->setEnabled(true);
    export_svg_action_->setEnabled(true);
    statusBar()->showMessage(tr("Opened %1 — %2 tensors, %3 operations; %4")
                                 .arg(display_name_)
                                 .arg(project_.graph.tensors().size())
                                 .arg(project_.graph.operations().size())
                                 .arg(issues_->summary().toLower()),
                             8000);
    if (!preselect_.isEmpty()) {
        // Marked like a clicked issue when the node has issues; plainly selected otherwise.
        views::NodeItem *item = scene_->nodeItem(scene_->canvasNodeFor(preselect_));
        const bool mark = item && item->health() != views::NodeHealth::ok;
        if (!revealNode(preselect_, mark))
            statusBar()->showMessage(tr("No node %1 in %2").arg(preselect_, display_name_));
        preselect_.clear();
    }
    emit layoutReady();
    finishStartup();
}

void MainWindow::onLayoutFailed(quint64, const QString &message) {
    setBusy(false);
    relayout_pending_ = false;
    cancel_layout_button_->hide();
    const QString why = tr("Layout of %1 failed: %2").arg(display_name_, message);
    view_->setPlaceholderText(why);
    statusBar()->showMessage(why);
    finishStartup();
}

void MainWindow::finishStartup() {
    if (startup_done_) return;
    startup_done_ = true;
    if (!screenshot_path_.isEmpty()) {
        // Let the window paint once with its final geometry before grabbing it.
        QTimer::singleShot(150, this, &MainWindow::takeScreenshot);
    }
}

void MainWindow::takeScreenshot() {
    const QPixmap shot = grab();
    const bool ok = !shot.isNull() && shot.save(screenshot_path_);
    if (!ok) qWarning("tapestry-studio: could not write the screenshot to %s", qPrintable(screenshot_path_));
    QCoreApplication::exit(ok ? 0 : 1);
}

// ---- selection and issues ------------------------------------------------------

bool MainWindow::revealNode(const QString &id, bool mark) {
    const QString node = scene_->canvasNodeFor(id);
    views::NodeItem *item = scene_->nodeItem(node);
    if (!item) return false;
    scene_->selectNode(node);
    if (mark) scene_->markNode(node);
    view_->focusOn(item->mapRectToScene(item->box()));
    return true;
}

void MainWindow::onIssueActivated(int, const QString &node) {
    if (node.isEmpty()) {
        statusBar()->showMessage(tr("This issue concerns the whole graph"), 4000);
        return;
    }
    if (!revealNode(node)) statusBar()->showMessage(tr("%1 is not on the canvas").arg(node), 4000);
}

void MainWindow::onNodeSelected(const QString &id) {
    inspector_->showNode(id);
    node_editor_->showNode(id);
    QStringList about{id};
    if (const Operation *op = project_.graph.find_op(OpId(id.toStdString())))
        for (const Shard &s : op->shards) about << QString::fromStdString(s.id.value);
    if (!id.isEmpty()) issues_->highlightNodes(about);
    if (id != scene_->markedNode()) scene_->markNode(QString());
}

// ---- dialogs and export --------------------------------------------------------

void MainWindow::openDialog() {
    const QString start =
        path_.isEmpty() ? QFileInfo(views::findExampleProject()).absolutePath() : QFileInfo(path_).absolutePath();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open Project"), start, tr("Tapestry projects (*.tapestry.json);;JSON files (*.json);;All files (*)"));
    if (!path.isEmpty()) openProject(path);
}

QString MainWindow::exportCanvas(const QString &path) {
    const bool svg = path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive);
    return exportTo(path, svg ? QStringLiteral("svg") : QStringLiteral("png"), false, 2.0);
}

QString MainWindow::exportTo(const QString &path, const QString &format, bool selection_only, double scale) {
    const QStringList selected = scene_->selectedNodeIds();
    if (selection_only && selected.isEmpty()) return tr("nothing is selected");
    if (format == QLatin1String("dot") || format == QLatin1String("json")) {
        Graph g = project_.graph;
        if (selection_only) {
            std::vector<std::string> ids;
            for (const QString &id : selected) ids.push_back(id.toStdString());
            g = edit::extract(project_.graph, ids);
        }
        if (format == QLatin1String("json"))
            return QString::fromStdString(save_project_with_values(g, path.toStdString()));
        const std::string dot = to_dot(g, OpLibrary::standard());
        const std::string error = write_file_atomically(path.toStdString(), dot);
        return QString::fromStdString(error);
    }
    if (!scene_->hasLayout()) return tr("nothing is laid out yet");
    QRectF source;
    if (selection_only) {
        for (const QString &id : selected)
            if (views::NodeItem *n = scene_->nodeItem(id)) source |= n->sceneBoundingRect();
    } else {
        source = scene_->graphBounds();
    }
    source = source.adjusted(-24, -24, 24, 24);
    const QColor background = view_->isDark() ? QColor(0x14, 0x18, 0x1e) : QColor(0xf3, 0xf5, 0xf8);
    // Selection rings are not part of a drawing.
    const QStringList keep_selected = selected;
    scene_->selectNodes({});
    auto restore = qScopeGuard([&] { scene_->selectNodes(keep_selected); });
    if (format == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(source.size().toSize());
        svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
        svg.setTitle(windowTitle());
        svg.setDescription(tr("Tapestry Studio export of %1").arg(display_name_));
        QPainter painter;
        if (!painter.begin(&svg)) return tr("cannot write %1").arg(path);
        painter.fillRect(QRectF(QPointF(0, 0), source.size()), background);
        scene_->render(&painter, QRectF(QPointF(0, 0), source.size()), source);
        painter.end();
        return QFileInfo(path).size() > 0 ? QString() : tr("cannot write %1").arg(path);
    }
    if (format != QLatin1String("png")) return tr("unknown export format '%1'").arg(format);
    if (!(scale > 0) || scale > 8) return tr("the scale must be between 0 and 8, not %1").arg(scale);
    const QSizeF pixels = source.size() * scale;
    if (pixels.width() * pixels.height() > 400e6)
        return tr("the drawing is too large for an image at this scale; export SVG instead");
    QImage image(pixels.toSize(), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return tr("the drawing is too large for an image; export SVG instead");
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene_->render(&painter, QRectF(QPointF(0, 0), pixels), source);
    painter.end();
    return image.save(path) ? QString() : tr("cannot write %1").arg(path);
}

void MainWindow::exportSelectionDialog() {
    QDialog dialog(this);
    dialog.setObjectName(QStringLiteral("exportDialog"));
    dialog.setWindowTitle(tr("Export"));
    auto *form = new QFormLayout(&dialog);
    auto *format = new QComboBox(&dialog);
    format->addItem(tr("SVG drawing"), QStringLiteral("svg"));
    format->addItem(tr("PNG image"), QStringLiteral("png"));
    format->addItem(tr("Graphviz DOT"), QStringLiteral("dot"));
    format->addItem(tr("Project JSON"), QStringLiteral("json"));
    auto *scope = new QComboBox(&dialog);
    scope->addItem(tr("Whole graph"));
    scope->addItem(tr("Selection (%n node(s))", nullptr, static_cast<int>(scene_->selectedNodeIds().size())));
    scope->setCurrentIndex(scene_->selectedNodeIds().isEmpty() ? 0 : 1);
    scope->setEnabled(!scene_->selectedNodeIds().isEmpty());
    auto *scale = new QDoubleSpinBox(&dialog);
    scale->setRange(0.25, 8.0);
    scale->setSingleStep(0.5);
    scale->setValue(2.0);
    scale->setSuffix(QStringLiteral(" ×"));
    form->addRow(tr("&Format:"), format);
    form->addRow(tr("&What:"), scope);
    form->addRow(tr("PNG &scale:"), scale);
    connect(format, &QComboBox::currentIndexChanged, scale,
            [=] { scale->setEnabled(format->currentData().toString() == QLatin1String("png")); });
    scale->setEnabled(false);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted) return;
    const QString ext = format->currentData().toString();
    const QString base = display_name_.isEmpty()
                             ? QStringLiteral("graph")
                             : QFileInfo(display_name_).completeBaseName().remove(QLatin1String(".tapestry"));
    const QString suffix = ext == QLatin1String("json") ? QStringLiteral(".tapestry.json") : QLatin1Char('.') + ext;
    QString path = QFileDialog::getSaveFileName(this, tr("Export"), QDir::home().filePath(base + suffix));
    if (path.isEmpty()) return;
    if (!path.endsWith(suffix, Qt::CaseInsensitive)) path += suffix;
    const QString error = exportTo(path, ext, scope->currentIndex() == 1, scale->value());
    if (error.isEmpty())
        statusBar()->showMessage(tr("Exported %1").arg(path), 6000);
    else
        QMessageBox::warning(this, tr("Export failed"), tr("Could not export: %1").arg(error));
}

void MainWindow::exportDialog(const QString &format) {
    const QString base = QFileInfo(path_).completeBaseName().remove(QLatin1String(".tapestry"));
    const QString suggested = QFileInfo(path_).absoluteDir().filePath(base + QLatin1Char('.') + format);
    const QString filter = format == QLatin1String("svg") ? tr("SVG drawings (*.svg)") : tr("PNG images (*.png)");
    QString path = QFileDialog::getSaveFileName(this, tr("Export Canvas"), suggested, filter);
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1Char('.') + format, Qt::CaseInsensitive)) path += QLatin1Char('.') + format;
    const QString error = exportCanvas(path);
    if (error.isEmpty())
        statusBar()->showMessage(tr("Exported %1").arg(path), 6000);
    else
        QMessageBox::warning(this, tr("Export failed"), tr("Could not export the canvas: %1").arg(error));
}

void MainWindow::about() {
    QMessageBox::about(this, tr("About Tapestry Studio"),
                       tr("<h3>Tapestry Studio %1</h3>"
                          "<p>A workbench for block tensor operation graphs: Tapestry's block operations with "
                          "index projection functions, laid out by Graphviz and checked live.</p>"
                          "<p>Qt %2</p>")
                           .arg(QCoreApplication::applicationVersion(), QString::fromLatin1(qVersion())));
}

// ---- ONNX import and saving ----------------------------------------------------

void MainWindow::importDialog() {
    QSettings settings;
    const QString start = settings.value(QStringLiteral("onnx/lastDir"), QFileInfo(path_).absolutePath()).toString();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import ONNX Model"), start, tr("ONNX models (*.onnx);;All files (*)"));
    if (path.isEmpty()) return;
    settings.setValue(QStringLiteral("onnx/lastDir"), QFileInfo(path).absolutePath());
    importOnnx(path);
}

void MainWindow::importOnnx(const QString &path, const QMap<QString, qint64> &dim_values) {
    loader_->cancel();  // an import supersedes a load in flight, and vice versa
    setBusy(true, tr("Importing %1…").arg(QFileInfo(path).fileName()));
    import_->start(QFileInfo(path).absoluteFilePath(), dim_values);
}

void MainWindow::onImportFinished(quint64, const views::OnnxImportOutcome &outcome) {
    const QString name = QFileInfo(outcome.path).fileName();
    if (!outcome.missing_dims.isEmpty()) {
        setBusy(false, tr("%1 has symbolic dimensions; give them values to import it.").arg(name));
        askDimensions(outcome.path, outcome.missing_dims, outcome.dim_values);
        return;
    }
    if (!outcome.ok) {
        const QString why = tr("Could not import %1: %2").arg(name, outcome.error);
        setBusy(false);
        statusBar()->showMessage(why.section(QLatin1Char('\n'), 0, 0));
        auto *box = new QMessageBox(QMessageBox::Warning, tr("Import failed"), QString(), QMessageBox::Ok, this);
        box->setObjectName(QStringLiteral("importErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        if (!outcome.unsupported.isEmpty()) {
            box->setText(tr("%1 uses %n operator(s) the importer does not support; nothing was imported.", nullptr,
                            static_cast<int>(outcome.unsupported.size()))
                             .arg(name));
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
    path_ = outcome.path;
    display_name_ = tr("%1 (imported)").arg(name);
    imported_ = true;
    import_dims_ = outcome.dim_values;
    views::LoadedProject project;
    project.path = outcome.path;
    project.opened = true;
    project.graph = outcome.graph;
    project.validation_issues = outcome.validation_issues;
    project.elapsed_ms = outcome.elapsed_ms;
    load_ms_ = outcome.elapsed_ms;
    showProject(project);
    // An older model went through ONNX's version converter: say so.
    if (const std::string note = onnx_conversion_note(project_.graph); !note.empty())
        statusBar()->showMessage(statusBar()->currentMessage() + QStringLiteral("; ") + QString::fromStdString(note),
                                 12000);
    emit importFinished(true);
}

void MainWindow::askDimensions(const QString &path, const QStringList &names, const QMap<QString, qint64> &known) {
    auto *dialog = new QDialog(this);
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
        statusBar()->showMessage(tr("Import of %1 abandoned").arg(QFileInfo(path).fileName()), 6000);
        emit importFinished(false);
    });
    dialog->open();  // window-modal, without a nested event loop
}

void MainWindow::saveAsDialog() {
    QString base = QFileInfo(path_).completeBaseName();
    base.remove(QLatin1String(".tapestry"));
    const QString suggested = QFileInfo(path_).absoluteDir().filePath(base + QStringLiteral(".tapestry.json"));
    QString path =
        QFileDialog::getSaveFileName(this, tr("Save Project As"), suggested, tr("Tapestry projects (*.tapestry.json)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)) path += QStringLiteral(".tapestry.json");
    saveProjectAs(path);
}

void MainWindow::saveProjectAs(const QString &path) {
    const QString target = QFileInfo(path).absoluteFilePath();
    setBusy(true, tr("Saving %1…").arg(QFileInfo(target).fileName()));
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, target] {
        watcher->deleteLater();
        const QString error = watcher->result();
        setBusy(false);
        if (error.isEmpty()) {
            path_ = target;
            display_name_ = QFileInfo(target).fileName();
            imported_ = false;
            project_.path = target;
            addRecent(target);
            updateTitle();
            statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(target)), 6000);
        } else {
            statusBar()->showMessage(tr("Could not save %1: %2").arg(QFileInfo(target).fileName(), error));
            auto *box = new QMessageBox(QMessageBox::Warning, tr("Save failed"),
                                        tr("Could not save the project: %1").arg(error), QMessageBox::Ok, this);
            box->setAttribute(Qt::WA_DeleteOnClose);
            box->open();
        }
        emit projectSaved(target, error);
    });
    watcher->setFuture(QtConcurrent::run([graph = project_.graph, target] {
        try {
            return QString::fromStdString(save_project_with_values(graph, std::filesystem::path(target.toStdString())));
        } catch (const std::exception &e) {
            return QStringLiteral("internal error: %1").arg(QString::fromUtf8(e.what()));
        }
    }));
}

// ---- running -------------------------------------------------------------------

bool MainWindow::isRunning() const {
    return run_worker_->isRunning();
}

bool MainWindow::startRun(views::RunMode mode) {
    if (run_worker_->isRunning() || !project_.opened || project_.graph.node_count() == 0) return false;
    views::RunRequest request;
    request.mode = mode;
    request.graph = project_.graph;
    request.source_name = display_name_;
    if (!imported_) request.project_dir = QFileInfo(path_).absolutePath();
    run_panel_->fillRequest(request);
    if (run_worker_->start(std::move(request)) == 0) return false;
    run_panel_->runStarted(mode, display_name_);
    run_progress_->setRange(0, 0);
    run_progress_->show();
    run_cancel_button_->show();
    outputs_dock_->show();
    statusBar()->showMessage(mode == views::RunMode::verify ? tr("Verifying %1…").arg(display_name_)
                                                            : tr("Running %1…").arg(display_name_));
    updateRunActions();
    return true;
}

void MainWindow::cancelRun() {
    if (!run_worker_->isRunning()) return;
    run_worker_->cancel();
    cancel_run_action_->setEnabled(false);  // once is enough; the run stops at its next step
    statusBar()->showMessage(tr("Cancelling…"));
}

void MainWindow::onRunProgress(quint64 job, int done, int total, const QString &phase) {
    if (job != run_worker_->currentJob()) return;
    run_panel_->setProgress(done, total, phase);
    if (total <= 0) {
        run_progress_->setRange(0, 0);
        if (!phase.isEmpty()) statusBar()->showMessage(tr("%1: %2…").arg(display_name_, phase));
    } else {
        run_progress_->setRange(0, total);
        run_progress_->setValue(done);
    }
}

void MainWindow::onRunFinished(quint64, const views::RunOutcome &outcome) {
    last_outcome_ = outcome;
    run_progress_->hide();
    run_cancel_button_->hide();
    run_panel_->runFinished(outcome);
    if (outcome.cancelled) {
        statusBar()->showMessage(tr("Run cancelled"), 8000);
    } else if (!outcome.ok) {
        showRunError(outcome.error);
    } else {
        if (run_error_shown_) {  // the last run's error no longer applies
            issues_->setIssuesOfProject(project_.allIssues());
            run_error_shown_ = false;
        }
        outputs_->showOutcome(outcome);
        outputs_dock_->show();
        outputs_dock_->raise();
        if (outcome.mode == views::RunMode::verify)
            statusBar()->showMessage(
                outcome.report.pass()
                    ? tr("Verification passed: %1 comparisons agree").arg(outcome.report.comparisons.size())
                    : tr("Verification FAILED — see the Outputs dock"),
                10000);
        else
            statusBar()->showMessage(tr("Ran %1 in %2 ms (%3)")
                                         .arg(outcome.source_name)
                                         .arg(outcome.run_ms, 0, 'f', 1)
                                         .arg(outcome.inputs_text),
                                     10000);
    }
    updateRunActions();
    emit runFinished(outcome.ok);
}

void MainWindow::showRunError(const QString &message) {
    const QString line = message.section(QLatin1Char('\n'), 0, 0);
    statusBar()->showMessage(tr("Run failed: %1").arg(line));
    outputs_->showError(tr("Run failed: %1").arg(line));
    std::vector<Issue> issues = project_.allIssues();
    Issue run_issue;
    run_issue.severity = Severity::error;
    run_issue.code = "run-failed";
    run_issue.message = message.toStdString();
    issues.insert(issues.begin(), run_issue);
    issues_->setIssuesOfProject(issues, tr("The last run failed; the graph is unchanged."));
    issues_dock_->setWindowTitle(tr("Issues (%1)").arg(issues_->summary()));
    issues_dock_->show();
    issues_dock_->raise();
    run_error_shown_ = true;
}

void MainWindow::updateRunActions() {
    const bool running = run_worker_->isRunning();
    const bool has_graph = project_.opened && project_.graph.node_count() > 0;
    run_action_->setEnabled(has_graph && !running);
    verify_action_->setEnabled(has_graph && !running);
    cancel_run_action_->setEnabled(running);
    save_as_action_->setEnabled(has_graph);
    save_outputs_action_->setEnabled(!running && last_outcome_.ok && !last_outcome_.output_values.empty());
}

void MainWindow::saveOutputsDialog() {
    if (last_outcome_.output_values.empty()) return;
    const QString start =
        QSettings().value(QStringLiteral("run/outputsDir"), QFileInfo(path_).absolutePath()).toString();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Save Outputs to Folder"), start);
    if (dir.isEmpty()) return;
    QSettings().setValue(QStringLiteral("run/outputsDir"), dir);
    saveOutputs(dir);
}

void MainWindow::saveOutputs(const QString &dir) {
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, dir] {
        watcher->deleteLater();
        const QString error = watcher->result();
        if (error.isEmpty())
            statusBar()->showMessage(
                tr("Saved %1 outputs to %2").arg(last_outcome_.output_values.size()).arg(QDir::toNativeSeparators(dir)),
                6000);
        else
            statusBar()->showMessage(tr("Could not save the outputs: %1").arg(error));
        emit outputsSaved(dir, error);
    });
    watcher->setFuture(QtConcurrent::run([graph = project_.graph, values = last_outcome_.output_values, dir] {
        try {
            return QString::fromStdString(write_outputs_dir(graph, values, std::filesystem::path(dir.toStdString())));
        } catch (const std::exception &e) {
            return QStringLiteral("internal error: %1").arg(QString::fromUtf8(e.what()));
        }
    }));
}

// ---- recent files, status ------------------------------------------------------

void MainWindow::addRecent(const QString &path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent) recent_.removeLast();
    rebuildRecentMenu();
    QSettings().setValue(QStringLiteral("recentFiles"), recent_);
}

void MainWindow::rebuildRecentMenu() {
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

void MainWindow::setBusy(bool busy, const QString &message) {
    busy_indicator_->setVisible(busy);
    if (!message.isEmpty()) statusBar()->showMessage(message);
    if (busy_ != busy) {
        busy_ = busy;
        emit busyChanged(busy);
    }
}

void MainWindow::updateTitle() {
    const QString app = QStringLiteral("Tapestry Studio");
    const QString name = display_name_ + (isModified() ? QStringLiteral(" •") : QString());
    setWindowTitle(display_name_.isEmpty() ? app : QStringLiteral("%1 — %2").arg(name, app));
}

void MainWindow::updateCounts() {
    const Graph &g = project_.graph;
    if (g.node_count() == 0) {
        counts_label_->clear();
        return;
    }
    counts_label_->setText(
        tr("%1 tensors · %2 ops · %3").arg(g.tensors().size()).arg(g.operations().size()).arg(issues_->summary()));
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
    openAny(path);
}

}  // namespace tapestry::studio
