#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTimer>
#include <QToolBar>

#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/inspector.h"
#include "views/issues_panel.h"
#include "views/layout_worker.h"
#include "views/project_locator.h"
#include "views/studio_resources.h"

namespace tapestry::studio {

namespace {
constexpr int kMaxRecent = 8;

bool isProjectFile(const QString &path) {
    return path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive) && QFileInfo(path).isFile();
}

// The first local project file among dropped URLs, or "".
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

    createDocks();
    createActions();
    createStatusBar();

    connect(loader_, &views::ProjectLoader::loaded, this, &MainWindow::onProjectLoaded);
    connect(layout_, &views::LayoutWorker::finished, this, &MainWindow::onLayoutFinished);
    connect(layout_, &views::LayoutWorker::failed, this, &MainWindow::onLayoutFailed);
    connect(scene_, &views::GraphScene::nodeSelected, this, &MainWindow::onNodeSelected);
    connect(issues_, &views::IssuesPanel::issueActivated, this, &MainWindow::onIssueActivated);
    connect(inspector_, &views::Inspector::nodeActivated, this, [this](const QString &id) { revealNode(id, false); });
    connect(view_, &views::GraphView::zoomChanged, this,
            [this](double z) { zoom_label_->setText(QStringLiteral("%1 %").arg(qRound(z * 100))); });

    restoreSettings();
    updateTitle();
    view_->setPlaceholderText(tr("Open a project with File ▸ Open… or drop a .tapestry.json file here."));
}

MainWindow::~MainWindow() {
    layout_->cancel();
    loader_->cancel();
}

// ---- construction --------------------------------------------------------------

void MainWindow::createDocks() {
    inspector_ = new views::Inspector(this);
    inspector_dock_ = new QDockWidget(tr("Inspector"), this);
    inspector_dock_->setObjectName(QStringLiteral("inspectorDock"));
    inspector_dock_->setWidget(inspector_);
    inspector_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                                 QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::RightDockWidgetArea, inspector_dock_);

    issues_ = new views::IssuesPanel(this);
    issues_dock_ = new QDockWidget(tr("Issues"), this);
    issues_dock_->setObjectName(QStringLiteral("issuesDock"));
    issues_dock_->setWidget(issues_);
    addDockWidget(Qt::BottomDockWidgetArea, issues_dock_);
    resizeDocks({inspector_dock_}, {450}, Qt::Horizontal);
    resizeDocks({issues_dock_}, {150}, Qt::Vertical);
}

void MainWindow::createActions() {
    auto icon = [](const char *name) { return views::studioIcon(QString::fromLatin1(name)); };

    QMenu *file = menuBar()->addMenu(tr("&File"));
    open_action_ = file->addAction(icon("open"), tr("&Open…"), this, &MainWindow::openDialog);
    open_action_->setShortcut(QKeySequence::Open);
    open_action_->setStatusTip(tr("Open a .tapestry.json project"));
    recent_menu_ = file->addMenu(tr("Open &Recent"));
    reload_action_ = file->addAction(icon("reload"), tr("&Reload"), this, &MainWindow::reload);
    reload_action_->setShortcuts({QKeySequence::Refresh, QKeySequence(tr("Ctrl+R"))});
    reload_action_->setEnabled(false);
    file->addSeparator();
    export_svg_action_ =
        file->addAction(icon("export"), tr("Export as &SVG…"), this, [this] { exportDialog(QStringLiteral("svg")); });
    export_png_action_ = file->addAction(tr("Export as &PNG…"), this, [this] { exportDialog(QStringLiteral("png")); });
    export_svg_action_->setEnabled(false);
    export_png_action_->setEnabled(false);
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence(tr("Ctrl+Q")));
    quit->setMenuRole(QAction::QuitRole);

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
    toggle_inspector->setShortcut(QKeySequence(tr("Ctrl+I")));
    view->addAction(toggle_inspector);
    QAction *toggle_issues = issues_dock_->toggleViewAction();
    toggle_issues->setShortcut(QKeySequence(tr("Ctrl+E")));
    view->addAction(toggle_issues);

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
    statusBar()->addPermanentWidget(busy_indicator_);
    statusBar()->addPermanentWidget(counts_label_);
    statusBar()->addPermanentWidget(zoom_label_);
    statusBar()->setSizeGripEnabled(true);
}

void MainWindow::restoreSettings() {
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) resize(1360, 860);
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    recent_ = settings.value(QStringLiteral("recentFiles")).toStringList();
    rebuildRecentMenu();
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
    saveSettings();
    event->accept();
}

// ---- opening -------------------------------------------------------------------

void MainWindow::openProject(const QString &path) {
    const QFileInfo info(path);
    path_ = info.absoluteFilePath();
    display_name_ = info.fileName();
    layout_->cancel();  // a new load supersedes the old layout
    setBusy(true, tr("Opening %1…").arg(display_name_));
    if (!scene_->hasLayout()) view_->setPlaceholderText(tr("Opening %1…").arg(display_name_));
    loader_->start(path_);
}

void MainWindow::reload() {
    if (!path_.isEmpty()) openProject(path_);
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
        emit projectLoaded(false);
        finishStartup();
        return;
    }
    project_ = project;
    const std::vector<Issue> issues = project.allIssues();
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
    layout_->start(project.graph);
    emit projectLoaded(true);
}

void MainWindow::onLayoutFinished(quint64, const tapestry::Layout &layout) {
    scene_->setLayout(layout);
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
    if (!scene_->hasLayout()) return tr("nothing is laid out yet");
    const QRectF source = scene_->graphBounds().adjusted(-24, -24, 24, 24);
    const QColor background(0xf3, 0xf5, 0xf8);
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
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
    const double scale = 2.0;  // crisp on high-density screens and in documents
    QImage image((source.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return tr("the drawing is too large for an image; export SVG instead");
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene_->render(&painter, QRectF(QPointF(0, 0), source.size() * scale), source);
    painter.end();
    return image.save(path) ? QString() : tr("cannot write %1").arg(path);
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
        QAction *a = recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openProject(path); });
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
    setWindowTitle(display_name_.isEmpty() ? app : QStringLiteral("%1 — %2").arg(display_name_, app));
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
    openProject(path);
}

}  // namespace tapestry::studio
