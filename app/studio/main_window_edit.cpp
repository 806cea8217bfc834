// The editing and session half of the main window: palette, ports, undo/redo,
// clipboard, find, minimap, re-layout with pins, and the SQLite session with its
// background autosave (DESIGN.md §8–§9).
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QCursor>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGraphicsView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPalette>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyleFactory>
#include <QThreadPool>
#include <QTime>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QToolTip>
#include <QUndoView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "graph/validate.h"
#include "io/project_file.h"
#include "main_window.h"
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
#include "views/palette.h"
#include "views/project_locator.h"
#include "views/studio_resources.h"

namespace tapestry::studio {

namespace {

constexpr const char *kFragmentMime = "application/x-tapestry-fragment+json";
constexpr int kAutosaveDelayMs = 1200;

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

std::optional<ZPoint> parseShape(const QString &text) {
    QString t = text.trimmed();
    if (t.startsWith(QLatin1Char('['))) t.remove(0, 1);
    if (t.endsWith(QLatin1Char(']'))) t.chop(1);
    std::vector<Coord> dims;
    if (t.trimmed().isEmpty()) return ZPoint(dims);  // a scalar
    for (const QString &part : t.split(QRegularExpression(QStringLiteral("[,x×\\s]+")), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qlonglong v = part.toLongLong(&ok);
        if (!ok || v < 0) return std::nullopt;
        dims.push_back(v);
    }
    return ZPoint(dims);
}

}  // namespace

QPair<qint64, QString> MainWindow::saveSnapshot(store::Session &session, qint64 project, const Graph &graph,
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

store::Placements MainWindow::placementsOf(const QHash<QString, QPointF> &pos, const QSet<QString> &pinned,
                                           const Graph &g) {
    store::Placements out;
    for (auto it = pos.cbegin(); it != pos.cend(); ++it) {
        if (!g.has_id(it.key().toStdString())) continue;
        out[it.key().toStdString()] = store::NodePlacement{it.value().x(), it.value().y(), pinned.contains(it.key())};
    }
    return out;
}

// ---- construction --------------------------------------------------------------

void MainWindow::createEditing() {
    doc_ = new views::GraphDocument(this);
    connect(doc_, &views::GraphDocument::edited, this, &MainWindow::onDocumentEdited);
    connect(doc_, &views::GraphDocument::moved, this, [this](const QHash<QString, QPointF> &to) {
        scene_->setPositions(to);
        scheduleAutosave();
    });
    connect(doc_->undoStack(), &QUndoStack::cleanChanged, this, [this] { updateTitle(); });
    connect(scene_, &views::GraphScene::nodesMoved, this,
            [this](const QHash<QString, QPointF> &from, const QHash<QString, QPointF> &to) {
                doc_->recordMove(from, to);
                scheduleAutosave();
            });
    connect(scene_, &views::GraphScene::connectRequested, this,
            [this](const views::PortRef &from, const views::PortRef &to) { connectPorts(from, to); });
    connect(scene_, &views::GraphScene::connectionDropped, this, [this](const views::PortRef &, const QPointF &) {
        statusBar()->showMessage(tr("Drop the connection on an operation's input port (the dots on its top edge)"),
                                 5000);
    });
    connect(scene_, &QGraphicsScene::selectionChanged, this, [this] { updateEditActions(); });

    // The inspector's form: each change is one edit; a refusal is shown under the
    // form and the fields go back to what the graph says.
    auto after = [this](const QString &why) {
        if (!why.isEmpty()) node_editor_->showError(why);
        node_editor_->setGraph(doc_->graph());
    };
    connect(node_editor_, &views::NodeEditor::renameRequested, this,
            [this, after](const QString &id, const QString &name) {
                after(applyEdit(tr("Rename %1").arg(id),
                                [&](edit::Editor &e) { return e.rename(id.toStdString(), name.toStdString()); }));
            });
    connect(node_editor_, &views::NodeEditor::tensorTypeRequested, this,
            [this, after](const QString &id, const QString &dtype, const QString &shape_text) {
                QString bad;
                const auto shape = views::NodeEditor::parseShape(shape_text, &bad);
                const auto type = parse_dtype(dtype.toStdString());
                if (!shape || !type) {
                    after(!shape ? bad : tr("unknown dtype '%1'").arg(dtype));
                    return;
                }
                after(applyEdit(tr("Set type of %1").arg(id), [&](edit::Editor &e) {
                    return e.set_tensor_type(TensorId(id.toStdString()), *type, *shape);
                }));
            });
    connect(node_editor_, &views::NodeEditor::roleRequested, this,
            [this, after](const QString &id, const QString &role) {
                const auto r = parse_role(role.toStdString());
                if (!r) {
                    after(tr("unknown role '%1'").arg(role));
                    return;
                }
                after(applyEdit(tr("Make %1 %2").arg(id, role),
                                [&](edit::Editor &e) { return e.set_role(TensorId(id.toStdString()), *r); }));
            });
    connect(node_editor_, &views::NodeEditor::paramsRequested, this,
            [this, after](const QString &id, const Params &params) {
                after(applyEdit(tr("Set parameters of %1").arg(id),
                                [&](edit::Editor &e) { return e.set_params(OpId(id.toStdString()), params); }));
            });

    palette_ = new views::OpPalette(this);
    palette_dock_ = new QDockWidget(tr("Palette"), this);
    palette_dock_->setObjectName(QStringLiteral("paletteDock"));
    palette_dock_->setWidget(palette_);
    addDockWidget(Qt::LeftDockWidgetArea, palette_dock_);
    connect(palette_, &views::OpPalette::activated, this, [this](const QString &entry) {
        onPaletteActivated(entry, view_->mapToScene(view_->viewport()->rect().center()));
    });
    connect(view_, &views::GraphView::paletteDropped, this, &MainWindow::onPaletteActivated);
    auto *palette_search = new QAction(tr("Search Operations"), this);
    palette_search->setShortcut(QKeySequence(tr("Ctrl+Shift+P")));
    connect(palette_search, &QAction::triggered, this, [this] {
        palette_dock_->show();
        palette_dock_->raise();
        palette_->focusSearch();
    });
    addAction(palette_search);

    minimap_ = new views::Minimap(view_, this);
    minimap_dock_ = new QDockWidget(tr("Overview"), this);
    minimap_dock_->setObjectName(QStringLiteral("minimapDock"));
    minimap_dock_->setWidget(minimap_);
    addDockWidget(Qt::LeftDockWidgetArea, minimap_dock_);
    splitDockWidget(palette_dock_, minimap_dock_, Qt::Vertical);
    connect(view_, &views::GraphView::zoomChanged, minimap_, &views::Minimap::viewChanged);

    undo_view_ = new QUndoView(doc_->undoStack(), this);
    undo_view_->setEmptyLabel(tr("<opened>"));
    history_dock_ = new QDockWidget(tr("History"), this);
    history_dock_->setObjectName(QStringLiteral("historyDock"));
    history_dock_->setWidget(undo_view_);
    addDockWidget(Qt::BottomDockWidgetArea, history_dock_);
    tabifyDockWidget(issues_dock_, history_dock_);
    issues_dock_->raise();

    // The find bar sits above the canvas.
    find_bar_ = new views::FindBar(this);
    find_bar_->setScene(scene_);
    // The Edit menu owns Ctrl+F and F3 / Shift+F3 for the whole window; the bar's
    // own copies would make those shortcuts ambiguous once it is shown.
    for (QAction *a : find_bar_->findChildren<QAction *>())
        if (a->shortcut() == QKeySequence(QKeySequence::Find) ||
            a->shortcut() == QKeySequence(QKeySequence::FindNext) ||
            a->shortcut() == QKeySequence(QKeySequence::FindPrevious))
            a->setShortcut(QKeySequence());
    find_bar_->hide();
    auto *centre = new QWidget(this);
    auto *column = new QVBoxLayout(centre);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    column->addWidget(find_bar_);
    takeCentralWidget();
    column->addWidget(view_, 1);
    setCentralWidget(centre);
    connect(find_bar_, &views::FindBar::revealRequested, this, [this](const QString &id) { revealNode(id, false); });
    connect(find_bar_, &views::FindBar::closed, view_, [this] { view_->setFocus(); });

    autosave_timer_ = new QTimer(this);
    autosave_timer_->setSingleShot(true);
    autosave_timer_->setInterval(kAutosaveDelayMs);
    connect(autosave_timer_, &QTimer::timeout, this, [this] { saveToSession(true); });

    cancel_layout_button_ = new QToolButton(this);
    cancel_layout_button_->setObjectName(QStringLiteral("cancelLayoutButton"));
    cancel_layout_button_->setText(tr("Cancel layout"));
    cancel_layout_button_->setAutoRaise(true);
    cancel_layout_button_->hide();
    statusBar()->insertPermanentWidget(0, cancel_layout_button_);
    connect(cancel_layout_button_, &QToolButton::clicked, this, [this] {
        layout_->cancel();
        relayout_pending_ = false;
        cancel_layout_button_->hide();
        setBusy(false);
        statusBar()->showMessage(tr("Layout cancelled: the canvas keeps its arrangement"), 6000);
    });

    save_label_ = new QLabel(this);
    save_label_->setObjectName(QStringLiteral("saveLabel"));
    statusBar()->insertPermanentWidget(0, save_label_);

    // ---- menus
    QMenu *file = nullptr;
    for (QAction *a : menuBar()->actions())
        if (a->menu() && a->text() == tr("&File")) file = a->menu();
    QAction *first = file ? file->actions().value(0) : nullptr;
    new_action_ = new QAction(views::studioIcon(QStringLiteral("open")), tr("&New Graph"), this);
    new_action_->setShortcut(QKeySequence::New);
    new_action_->setStatusTip(tr("Start an empty graph in the session"));
    connect(new_action_, &QAction::triggered, this, &MainWindow::newProject);
    save_action_ = new QAction(tr("&Save"), this);
    save_action_->setShortcut(QKeySequence::Save);
    save_action_->setStatusTip(tr("Save the graph as a new version in the session"));
    connect(save_action_, &QAction::triggered, this, [this] {
        if (!session_) {
            saveAsDialog();
            return;
        }
        saveToSession(false);
    });
    open_session_action_ = new QAction(tr("Open &Session…"), this);
    open_session_action_->setStatusTip(tr("Open or create a session file (.tapestry-session)"));
    connect(open_session_action_, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Open or Create Session"), QFileInfo(sessionPath()).absolutePath(),
            tr("Tapestry sessions (*.tapestry-session)"), nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty()) openSession(path);
    });
    if (file) {
        file->insertAction(first, new_action_);
        file->insertAction(save_as_action_, save_action_);
        file->insertAction(first, open_session_action_);
    }

    QMenu *editMenu = new QMenu(tr("&Edit"), this);
    menuBar()->insertMenu(menuBar()->actions().value(1), editMenu);
    undo_action_ = doc_->undoStack()->createUndoAction(this, tr("&Undo"));
    undo_action_->setShortcut(QKeySequence::Undo);
    redo_action_ = doc_->undoStack()->createRedoAction(this, tr("&Redo"));
    redo_action_->setShortcuts({QKeySequence(tr("Ctrl+Y")), QKeySequence(tr("Ctrl+Shift+Z"))});
    editMenu->addAction(undo_action_);
    editMenu->addAction(redo_action_);
    editMenu->addSeparator();
    cut_action_ = editMenu->addAction(tr("Cu&t"), this, &MainWindow::cutSelection);
    cut_action_->setShortcut(QKeySequence::Cut);
    copy_action_ = editMenu->addAction(tr("&Copy"), this, &MainWindow::copySelection);
    copy_action_->setShortcut(QKeySequence::Copy);
    paste_action_ = editMenu->addAction(tr("&Paste"), this, &MainWindow::pasteClipboard);
    paste_action_->setShortcut(QKeySequence::Paste);
    duplicate_action_ = editMenu->addAction(tr("&Duplicate"), this, &MainWindow::duplicateSelection);
    duplicate_action_->setShortcut(QKeySequence(tr("Ctrl+D")));
    delete_action_ = editMenu->addAction(tr("De&lete"), this, &MainWindow::deleteSelection);
    delete_action_->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
    editMenu->addSeparator();
    select_all_action_ = editMenu->addAction(tr("Select &All"), this, [this] {
        QStringList all;
        for (views::NodeItem *n : scene_->nodeItems()) all << n->nodeId();
        scene_->selectNodes(all);
    });
    select_all_action_->setShortcut(QKeySequence::SelectAll);
    find_action_ = editMenu->addAction(tr("&Find…"), this, [this] {
        find_bar_->show();
        find_bar_->activate();
    });
    find_action_->setShortcut(QKeySequence::Find);
    QAction *next = editMenu->addAction(tr("Find &Next"), find_bar_, &views::FindBar::findNext);
    next->setShortcut(QKeySequence::FindNext);
    QAction *prev = editMenu->addAction(tr("Find Pre&vious"), find_bar_, &views::FindBar::findPrevious);
    prev->setShortcut(QKeySequence::FindPrevious);
    editMenu->addSeparator();
    QAction *producers = editMenu->addAction(tr("Go to &Producers"), this, [this] { selectNeighbours(true); });
    producers->setShortcut(QKeySequence(tr("Alt+Up")));
    QAction *consumers = editMenu->addAction(tr("Go to C&onsumers"), this, [this] { selectNeighbours(false); });
    consumers->setShortcut(QKeySequence(tr("Alt+Down")));
    pin_action_ = editMenu->addAction(tr("&Pin Position"), this, [this] {
        const QStringList ids = scene_->selectedNodeIds();
        bool all_pinned = !ids.isEmpty();
        for (const QString &id : ids) all_pinned &= doc_->pinned().contains(id);
        doc_->setPinned(ids, !all_pinned);
        statusBar()->showMessage(all_pinned ? tr("Unpinned %n node(s)", nullptr, static_cast<int>(ids.size()))
                                            : tr("Pinned %n node(s): a re-layout keeps them where they are", nullptr,
                                                 static_cast<int>(ids.size())),
                                 5000);
        scheduleAutosave();
    });
    pin_action_->setShortcut(QKeySequence(tr("Ctrl+P")));

    QMenu *view = nullptr;
    for (QAction *a : menuBar()->actions())
        if (a->menu() && a->text() == tr("&View")) view = a->menu();
    if (view) {
        // F fits, as in every node editor; Ctrl+0 stays on Actual Size.
        fit_action_->setShortcuts({QKeySequence(Qt::Key_F), QKeySequence(tr("Ctrl+Shift+F"))});
        QAction *to_selection = new QAction(tr("Zoom to &Selection"), this);
        to_selection->setShortcut(QKeySequence(tr("Shift+F")));
        connect(to_selection, &QAction::triggered, this, &MainWindow::zoomToSelection);
        view->insertAction(zoom_in_action_, to_selection);
        relayout_action_ = new QAction(tr("Re-&layout"), this);
        relayout_action_->setShortcut(QKeySequence(tr("Ctrl+L")));
        relayout_action_->setStatusTip(tr("Lay the graph out again with Graphviz, keeping pinned nodes in place"));
        connect(relayout_action_, &QAction::triggered, this, &MainWindow::relayout);
        view->insertAction(zoom_in_action_, relayout_action_);
        view->insertSeparator(zoom_in_action_);
        view->addSeparator();
        view->addAction(palette_dock_->toggleViewAction());
        view->addAction(minimap_dock_->toggleViewAction());
        view->addAction(history_dock_->toggleViewAction());
        view->addSeparator();
        dark_action_ = view->addAction(tr("&Dark Theme"));
        dark_action_->setCheckable(true);
        connect(dark_action_, &QAction::toggled, this, &MainWindow::setDarkTheme);
    }
    if (QToolBar *bar = findChild<QToolBar *>()) {
        // Short buttons on the toolbar; the step they undo is in their tooltip
        // (the menu items carry the full "Undo Rename fc1").
        QAction *before = bar->actions().value(0);
        auto proxy = [&](QAction *target, const QString &text, bool undo) {
            auto *a = new QAction(text, this);
            a->setObjectName(undo ? QStringLiteral("toolbarUndo") : QStringLiteral("toolbarRedo"));
            connect(a, &QAction::triggered, target, &QAction::trigger);
            auto sync = [a, target] {
                a->setEnabled(target->isEnabled());
                a->setToolTip(target->text());
            };
            connect(target, &QAction::changed, a, sync);
            sync();
            bar->insertAction(before, a);
        };
        proxy(undo_action_, tr("Undo"), true);
        proxy(redo_action_, tr("Redo"), false);
        bar->insertSeparator(before);
    }
    updateEditActions();
}

void MainWindow::applyDefaultDockSizes() {
    // Default proportions (a saved window state replaces them): the inspector
    // gets the height, the bottom docks a strip. Only effective once the window
    // has its geometry, hence called after the first show.
    resizeDocks({palette_dock_}, {250}, Qt::Horizontal);
    resizeDocks({palette_dock_, minimap_dock_}, {420, 200}, Qt::Vertical);
    resizeDocks({inspector_dock_, run_dock_}, {600, 250}, Qt::Vertical);
    resizeDocks({issues_dock_}, {180}, Qt::Vertical);
}

void MainWindow::updateEditActions() {
    if (!doc_) return;
    const bool has_selection = !scene_->selectedItems().isEmpty();
    cut_action_->setEnabled(has_selection);
    copy_action_->setEnabled(has_selection);
    duplicate_action_->setEnabled(has_selection);
    delete_action_->setEnabled(has_selection);
    pin_action_->setEnabled(has_selection);
}

void MainWindow::selectNeighbours(bool upstream) {
    // An operation's neighbours are the tensors it reads (writes); a tensor's are
    // the operations that write (read) it.
    const Graph &g = doc_->graph();
    QStringList ids;
    for (const QString &id : scene_->selectedNodeIds()) {
        if (const Operation *op = g.find_op(OpId(id.toStdString()))) {
            for (const TensorId &t : upstream ? op->input_tensors() : op->output_tensors()) ids << qs(t.value);
        } else {
            const TensorId t(id.toStdString());
            for (const OpId &o : upstream ? g.producers(t) : g.consumers(t)) ids << qs(o.value);
        }
    }
    scene_->selectNodes(ids);
    zoomToSelection();
}

bool MainWindow::isModified() const {
    return doc_ && !doc_->undoStack()->isClean();
}

// ---- edits ---------------------------------------------------------------------

QString MainWindow::applyEdit(const QString &text, const std::function<edit::EditResult(edit::Editor &)> &fn,
                              const QHash<QString, QPointF> &place) {
    const QString why = doc_->edit(text, fn, place);
    last_edit_error_ = why;
    if (!why.isEmpty()) {
        statusBar()->showMessage(tr("%1 refused: %2").arg(text, why), 10000);
        return why;
    }
    if (!doc_->lastNotes().isEmpty()) statusBar()->showMessage(doc_->lastNotes().join(QStringLiteral("; ")), 10000);
    return {};
}

void MainWindow::onDocumentEdited(const QStringList &touched, const QHash<QString, QPointF> &place) {
    scene_->applyEdit(doc_->graph(), doc_->issues(), touched, place);
    doc_->setPositions(scene_->positions());
    refreshAfterEdit();
    scheduleAutosave();
    emit graphEdited();
}

void MainWindow::refreshAfterEdit() {
    project_.graph = doc_->graph();
    project_.validation_issues = doc_->issues();
    project_.load_issues.clear();
    project_.opened = true;
    const std::vector<Issue> issues = project_.allIssues();
    const QString selected = scene_->selectedNodeId();
    inspector_->setGraph(project_.graph, issues, display_name_);
    inspector_->showNode(selected);
    node_editor_->setGraph(project_.graph);
    node_editor_->showNode(selected);
    issues_->setIssuesOfProject(issues);
    issues_dock_->setWindowTitle(issues.empty() ? tr("Issues") : tr("Issues (%1)").arg(issues_->summary()));
    find_bar_->refresh();
    minimap_->sceneChanged();
    view_->setPlaceholderText(
        project_.graph.node_count() == 0 ? tr("Drag an operation or a tensor from the palette to start.") : QString());
    save_as_action_->setEnabled(true);
    export_png_action_->setEnabled(true);
    export_svg_action_->setEnabled(true);
    updateCounts();
    updateTitle();
    updateRunActions();
    updateEditActions();
}

QString MainWindow::addOperationAt(const QString &kind, const QPointF &scene_pos) {
    QString id;
    const QString why = applyEdit(tr("Add %1").arg(kind),
                                  [&](edit::Editor &e) -> edit::EditResult {
                                      auto r = e.add_operation(kind.toStdString());
                                      if (!r) return unexpected(r.error());
                                      id = qs(r->value);
                                      return edit::Done{};
                                  },
                                  {});
    if (!why.isEmpty()) return {};
    // Placed where it was dropped (set after the edit knows the id).
    scene_->setPositions({{id, scene_pos}});
    doc_->setPositions({{id, scene_pos}});
    scene_->selectNode(id);
    return id;
}

QString MainWindow::addTensorAt(const edit::TensorSpec &spec, const QPointF &scene_pos) {
    QString id;
    const QString why = applyEdit(tr("Add tensor %1").arg(qs(spec.name)), [&](edit::Editor &e) -> edit::EditResult {
        auto r = e.add_tensor(spec);
        if (!r) return unexpected(r.error());
        id = qs(r->value);
        return edit::Done{};
    });
    if (!why.isEmpty()) return {};
    scene_->setPositions({{id, scene_pos}});
    doc_->setPositions({{id, scene_pos}});
    scene_->selectNode(id);
    return id;
}

void MainWindow::newTensorDialog(TensorRole role, const QPointF &scene_pos) {
    auto *dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("newTensorDialog"));
    dialog->setWindowTitle(role == TensorRole::parameter ? tr("New Parameter") : tr("New Input"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    auto *form = new QFormLayout(dialog);
    auto *name = new QLineEdit(role == TensorRole::parameter ? QStringLiteral("w") : QStringLiteral("x"), dialog);
    name->setObjectName(QStringLiteral("tensorName"));
    auto *dtype = new QComboBox(dialog);
    dtype->setObjectName(QStringLiteral("tensorDtype"));
    for (const char *d : {"f32", "f16", "bf16", "i32", "i64", "bool"}) dtype->addItem(QString::fromLatin1(d));
    auto *shape = new QLineEdit(QStringLiteral("64, 64"), dialog);
    shape->setObjectName(QStringLiteral("tensorShape"));
    shape->setPlaceholderText(tr("e.g. 512, 1024"));
    auto *error = new QLabel(dialog);
    error->setObjectName(QStringLiteral("tensorError"));
    error->setStyleSheet(QStringLiteral("color: #dc2626"));
    form->addRow(tr("&Name:"), name);
    form->addRow(tr("&Type:"), dtype);
    form->addRow(tr("&Shape:"), shape);
    form->addRow(error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, dialog, [=, this] {
        const auto dims = parseShape(shape->text());
        if (!dims) {
            error->setText(tr("The shape is a list of non-negative integers, such as 512, 1024."));
            return;
        }
        if (name->text().trimmed().isEmpty()) {
            error->setText(tr("The tensor needs a name."));
            return;
        }
        edit::TensorSpec spec;
        spec.name = name->text().trimmed().toStdString();
        spec.dtype = parse_dtype(dtype->currentText().toStdString()).value_or(DType::f32);
        spec.shape = *dims;
        spec.role = role;
        if (addTensorAt(spec, scene_pos).isEmpty()) {
            error->setText(last_edit_error_);
            return;
        }
        dialog->accept();
    });
    dialog->open();
}

void MainWindow::onPaletteActivated(const QString &entry, const QPointF &scene_pos) {
    if (!project_.opened) newProject();
    if (entry == QLatin1String(views::OpPalette::kTensorInput))
        newTensorDialog(TensorRole::input, scene_pos);
    else if (entry == QLatin1String(views::OpPalette::kTensorParameter))
        newTensorDialog(TensorRole::parameter, scene_pos);
    else
        addOperationAt(entry, scene_pos);
}

QString MainWindow::connectPorts(const views::PortRef &from, const views::PortRef &to) {
    const Graph &g = doc_->graph();
    QString why;
    if (to.output || !g.find_op(OpId(to.node.toStdString()))) {
        why = tr("connect to an operation's input port: a tensor's value comes from the operation that computes it");
    } else if (!from.output) {
        why = tr("start the connection at an output: a tensor's bottom dot or an operation's output port");
    } else {
        const OpId target(to.node.toStdString());
        const std::string port = to.port.toStdString();
        const QString text = tr("Connect %1 → %2.%3")
                                 .arg(from.port.isEmpty() ? from.node : from.node + "." + from.port, to.node, to.port);
        why = applyEdit(text, [&](edit::Editor &e) {
            if (g.find_tensor(TensorId(from.node.toStdString())))
                return e.connect(TensorId(from.node.toStdString()), target, port);
            return e.connect_output(OpId(from.node.toStdString()), from.port.toStdString(), target, port);
        });
        if (why.isEmpty()) {
            statusBar()->showMessage(tr("Connected %1 to %2.%3").arg(from.node, to.node, to.port), 4000);
            return {};
        }
    }
    last_edit_error_ = why;
    statusBar()->showMessage(tr("Connection refused: %1").arg(why), 12000);
    const QPointF at = scene_->portScenePos(to);
    QToolTip::showText(view_->viewport()->mapToGlobal(view_->mapFromScene(at)),
                       tr("<b>Connection refused</b><br/>%1").arg(why.toHtmlEscaped()), view_);
    return why;
}

void MainWindow::copySelection() {
    const QStringList ids = scene_->selectedNodeIds();
    if (ids.isEmpty()) return;
    std::vector<std::string> wanted;
    for (const QString &id : ids) wanted.push_back(id.toStdString());
    const Graph fragment = edit::extract(doc_->graph(), wanted);
    QJsonObject where;
    const QHash<QString, QPointF> pos = scene_->positions();
    for (const TensorPtr &t : fragment.tensors())
        if (pos.contains(qs(t->id.value)))
            where.insert(qs(t->id.value), QJsonArray{pos.value(qs(t->id.value)).x(), pos.value(qs(t->id.value)).y()});
    for (const OpPtr &op : fragment.operations())
        if (pos.contains(qs(op->id.value)))
            where.insert(qs(op->id.value),
                         QJsonArray{pos.value(qs(op->id.value)).x(), pos.value(qs(op->id.value)).y()});
    QJsonObject clip;
    clip.insert(QStringLiteral("project"), QString::fromStdString(serialize_project(fragment)));
    clip.insert(QStringLiteral("positions"), where);
    auto *mime = new QMimeData;
    mime->setData(QString::fromLatin1(kFragmentMime), QJsonDocument(clip).toJson(QJsonDocument::Compact));
    mime->setText(QString::fromStdString(serialize_project(fragment)));
    QGuiApplication::clipboard()->setMimeData(mime);
    statusBar()->showMessage(tr("Copied %n node(s)", nullptr, static_cast<int>(fragment.node_count())), 4000);
}

void MainWindow::cutSelection() {
    copySelection();
    deleteSelection();
}

void MainWindow::pasteClipboard() {
    const QMimeData *mime = QGuiApplication::clipboard()->mimeData();
    if (!mime) return;
    QJsonObject where;
    std::string text;
    if (mime->hasFormat(QString::fromLatin1(kFragmentMime))) {
        const QJsonObject clip = QJsonDocument::fromJson(mime->data(QString::fromLatin1(kFragmentMime))).object();
        text = clip.value(QStringLiteral("project")).toString().toStdString();
        where = clip.value(QStringLiteral("positions")).toObject();
    } else if (mime->hasText()) {
        text = mime->text().toStdString();  // project JSON pasted as text
    }
    if (text.empty()) {
        statusBar()->showMessage(tr("Nothing to paste: the clipboard holds no graph"), 5000);
        return;
    }
    LoadResult parsed = parse_project(text, "clipboard");
    if (!parsed.ok()) {
        statusBar()->showMessage(
            tr("Cannot paste: %1").arg(qs(parsed.issues.empty() ? "not a graph" : parsed.issues.front().message)),
            8000);
        return;
    }
    if (!project_.opened) newProject();
    std::map<std::string, std::string> ids;
    const QString why = applyEdit(tr("Paste %n node(s)", nullptr, static_cast<int>(parsed.graph.node_count())),
                                  [&](edit::Editor &e) -> edit::EditResult {
                                      auto r = e.paste(parsed.graph);
                                      if (!r) return unexpected(r.error());
                                      ids = *r;
                                      return edit::Done{};
                                  });
    if (!why.isEmpty()) return;
    // Keep the copied arrangement, offset so the copy does not hide the original.
    QHash<QString, QPointF> pos;
    const QPointF offset(40, 40);
    for (const auto &[old_id, new_id] : ids) {
        const QJsonArray p = where.value(qs(old_id)).toArray();
        if (p.size() == 2) pos.insert(qs(new_id), QPointF(p[0].toDouble(), p[1].toDouble()) + offset);
    }
    scene_->setPositions(pos);
    doc_->setPositions(pos);
    QStringList selected;
    for (const auto &[old_id, new_id] : ids) selected << qs(new_id);
    scene_->selectNodes(selected);
}

void MainWindow::duplicateSelection() {
    copySelection();
    pasteClipboard();
}

void MainWindow::deleteSelection() {
    const QStringList ids = scene_->selectedNodeIds();
    if (ids.isEmpty()) return;
    std::vector<std::string> doomed;
    for (const QString &id : ids) doomed.push_back(id.toStdString());
    applyEdit(ids.size() == 1 ? tr("Delete %1").arg(ids.front())
                              : tr("Delete %n nodes", nullptr, static_cast<int>(ids.size())),
              [&](edit::Editor &e) { return e.remove(doomed); });
}

void MainWindow::zoomToSelection() {
    QRectF r;
    for (QGraphicsItem *i : scene_->selectedItems()) r |= i->sceneBoundingRect();
    if (r.isEmpty()) {
        view_->fitToGraph();
        return;
    }
    view_->fitInView(r.adjusted(-60, -60, 60, 60), Qt::KeepAspectRatio);
    if (view_->zoom() > 1.5) view_->resetZoom(), view_->centerOn(r.center());
    emit view_->zoomChanged(view_->zoom());
}

void MainWindow::relayout() {
    if (project_.graph.node_count() == 0) return;
    setBusy(true, tr("Laying out %1 (%2 nodes)…").arg(display_name_).arg(project_.graph.node_count()));
    relayout_pending_ = true;
    cancel_layout_button_->show();
    layout_->start(project_.graph);
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
    view_->setDark(dark);
    QSettings().setValue(QStringLiteral("ui/dark"), dark);
}

// ---- sessions ------------------------------------------------------------------

QString MainWindow::defaultSessionPath() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    return QDir(dir).filePath(QStringLiteral("default.tapestry-session"));
}

QString MainWindow::lastSessionPath() {
    const QString last = QSettings().value(QStringLiteral("session/last")).toString();
    return !last.isEmpty() && QFileInfo::exists(last) ? last : defaultSessionPath();
}

QString MainWindow::sessionPath() const {
    return session_ ? QString::fromStdString(session_->path().string()) : QString();
}

QString MainWindow::openSession(const QString &path, bool show_last_project) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    auto opened = store::Session::open(path.toStdString(), store::OpenMode::read_write);
    if (!opened) {
        const QString why = qs(opened.error().message);
        last_edit_error_ = why;
        statusBar()->showMessage(why, 15000);
        auto *box = new QMessageBox(QMessageBox::Warning, tr("Session not opened"), why, QMessageBox::Ok, this);
        box->setObjectName(QStringLiteral("sessionErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setInformativeText(tr("The file was left exactly as it was."));
        box->open();
        return why;
    }
    session_ = std::shared_ptr<store::Session>(std::move(opened).value().release());
    QSettings().setValue(QStringLiteral("session/last"), QFileInfo(path).absoluteFilePath());
    statusBar()->showMessage(tr("Session %1").arg(QDir::toNativeSeparators(path)), 6000);
    if (!show_last_project) return {};
    auto projects = session_->projects();
    qint64 wanted = 0;
    if (auto current = session_->state(store::kSessionScope, "current_project"); current && current->has_value())
        wanted = QString::fromStdString(**current).toLongLong();
    if (projects && !projects->empty()) {
        bool found = false;
        for (const store::ProjectInfo &p : *projects) found |= p.id == wanted;
        showProjectInSession(found ? wanted : projects->back().id);
        return {};
    }
    // A fresh session starts on the example project, saved into it.
    project_id_ = 0;
    const QString example = views::findExampleProject();
    if (!example.isEmpty())
        openProject(example);
    else
        newProject();
    return {};
}

void MainWindow::showProjectInSession(qint64 project_id) {
    auto graph = session_->load_latest(project_id);
    auto info = session_->project(project_id);
    if (!graph || !info) {
        statusBar()->showMessage(tr("Could not read project %1 of the session: %2")
                                     .arg(project_id)
                                     .arg(qs(!graph ? graph.error().message : info.error().message)),
                                 15000);
        return;
    }
    project_id_ = project_id;
    session_->set_state(store::kSessionScope, "current_project", std::to_string(project_id));
    views::LoadedProject p;
    p.path = QString();
    p.opened = true;
    p.graph = *graph;
    p.validation_issues = validate(p.graph, OpLibrary::standard());
    path_.clear();
    display_name_ = qs(info->name);
    imported_ = false;
    session_placements_.clear();
    pinned_from_session_.clear();
    if (auto placements = session_->placements(project_id)) {
        for (const auto &[id, pl] : *placements) {
            session_placements_.insert(qs(id), QPointF(pl.x, pl.y));
            if (pl.pinned) pinned_from_session_ << qs(id);
        }
    }
    showProject(p);
}

void MainWindow::newProject() {
    Graph g;
    g.name = "untitled";
    views::LoadedProject p;
    p.opened = true;
    p.graph = g;
    path_.clear();
    display_name_ = tr("untitled");
    imported_ = false;
    project_id_ = 0;
    session_placements_.clear();
    pinned_from_session_.clear();
    showProject(p);
}

void MainWindow::scheduleAutosave() {
    if (session_) autosave_timer_->start();
}

void MainWindow::saveToSession(bool autosave) {
    if (!session_ || !project_.opened) return;
    if (save_in_flight_) {
        save_again_ = true;
        return;
    }
    autosave_timer_->stop();
    // The graph is copied by pointer (nodes are shared and immutable), so the
    // worker reads a snapshot while the user keeps editing.
    const Graph snapshot = doc_->graph();
    const store::Placements placements = placementsOf(scene_->positions(), doc_->pinned(), snapshot);
    const QString name = display_name_.isEmpty() ? tr("untitled") : display_name_;
    std::shared_ptr<store::Session> session = session_;
    const qint64 known_project = project_id_;
    save_in_flight_ = true;
    save_label_->setText(autosave ? tr("Autosaving…") : tr("Saving…"));
    auto *watcher = new QFutureWatcher<QPair<qint64, QString>>(this);
    connect(watcher, &QFutureWatcher<QPair<qint64, QString>>::finished, this, [this, watcher, autosave] {
        const auto [project, error] = watcher->result();
        watcher->deleteLater();
        save_in_flight_ = false;
        if (error.isEmpty()) {
            if (project_id_ == 0) project_id_ = project;
            if (!autosave) doc_->undoStack()->setClean();
            save_label_->setText(autosave
                                     ? tr("Autosaved %1").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")))
                                     : tr("Saved %1").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss"))));
            if (!autosave)
                statusBar()->showMessage(tr("Saved %1 in %2").arg(display_name_, QFileInfo(sessionPath()).fileName()),
                                         5000);
        } else {
            save_label_->setText(tr("Not saved"));
            statusBar()->showMessage(tr("Could not save into the session: %1").arg(error), 15000);
        }
        emit sessionSaved(error);
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

}  // namespace tapestry::studio
