#include "canvas_controller.h"

#include <QAction>
#include <QDockWidget>
#include <QLabel>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "dock.h"
#include "io/graphviz.h"
#include "views/find_bar.h"
#include "views/graph_diff.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/layout_worker.h"
#include "views/minimap.h"
#include "views/studio_resources.h"

namespace tapestry::studio {

using views::GraphDocument;

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// Ids of every node of `g` (tensors, then operations).
QStringList nodeIds(const Graph &g) {
    QStringList ids;
    for (const TensorPtr &t : g.tensors()) ids << qs(t->id.value);
    for (const OpPtr &op : g.operations()) ids << qs(op->id.value);
    return ids;
}

}  // namespace

CanvasController::CanvasController(GraphDocument *doc, QStatusBar *status, QWidget *window)
    : QObject(window), doc_(doc), status_(status) {
    scene_ = new views::GraphScene(this);
    view_ = new views::GraphView(window);
    view_->setScene(scene_);
    layout_ = new views::LayoutWorker(this);

    // The find bar sits above the canvas. The Edit menu owns Ctrl+F and F3 /
    // Shift+F3 for the whole window; the bar's own copies would make those
    // shortcuts ambiguous once it is shown.
    find_bar_ = new views::FindBar(window);
    find_bar_->setScene(scene_);
    for (QAction *a : find_bar_->findChildren<QAction *>())
        if (a->shortcut() == QKeySequence(QKeySequence::Find) ||
            a->shortcut() == QKeySequence(QKeySequence::FindNext) ||
            a->shortcut() == QKeySequence(QKeySequence::FindPrevious))
            a->setShortcut(QKeySequence());
    find_bar_->hide();
    centre_ = new QWidget(window);
    auto *column = new QVBoxLayout(centre_);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    column->addWidget(find_bar_);
    column->addWidget(view_, 1);

    minimap_ = new views::Minimap(view_, window);
    overview_dock_ = makeDock(tr("Overview"), "minimapDock", minimap_, window);

    cancel_layout_button_ = new QToolButton(window);
    cancel_layout_button_->setObjectName(QStringLiteral("cancelLayoutButton"));
    cancel_layout_button_->setText(tr("Cancel layout"));
    cancel_layout_button_->setAutoRaise(true);
    cancel_layout_button_->hide();
    status_->insertPermanentWidget(0, cancel_layout_button_);
    zoom_label_ = new QLabel(QStringLiteral("100 %"), window);
    zoom_label_->setObjectName(QStringLiteral("zoomLabel"));
    zoom_label_->setMinimumWidth(56);
    zoom_label_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);

    createActions();
    view_->setPlaceholderText(
        tr("Open a project with File ▸ Open… or drop a .tapestry.json file (or an .onnx model) here."));

    connect(doc_, &GraphDocument::changed, this, &CanvasController::onDocumentChanged);
    connect(layout_, &views::LayoutWorker::finished, this, &CanvasController::onLayoutFinished);
    connect(layout_, &views::LayoutWorker::failed, this, &CanvasController::onLayoutFailed);
    connect(view_, &views::GraphView::zoomChanged, minimap_, &views::Minimap::viewChanged);
    connect(view_, &views::GraphView::zoomChanged, this,
            [this](double z) { zoom_label_->setText(QStringLiteral("%1 %").arg(qRound(z * 100))); });
    connect(find_bar_, &views::FindBar::revealRequested, this, [this](const QString &id) { revealNode(id, false); });
    connect(find_bar_, &views::FindBar::closed, view_, [this] { view_->setFocus(); });
    connect(cancel_layout_button_, &QToolButton::clicked, this, [this] {
        layout_->cancel();
        setLayingOut(false);
        status_->showMessage(tr("Layout cancelled: the canvas keeps its arrangement"), 6000);
    });
    // Drags are the document's (one undo step each); the scene only reports them.
    connect(scene_, &views::GraphScene::nodesMoved, doc_, &GraphDocument::recordMove);
}

CanvasController::~CanvasController() {
    layout_->cancel();
}

void CanvasController::createActions() {
    auto icon = [](const char *name) { return views::studioIcon(QString::fromLatin1(name)); };
    auto make = [this](const QIcon &image, const QString &text, const char *name) {
        auto *a = new QAction(image, text, this);
        if (name) a->setObjectName(QString::fromLatin1(name));
        return a;
    };
    fit_action_ = make(icon("fit"), tr("&Fit to Window"), "actionFit");
    // F fits, as in every node editor; Ctrl+0 stays on Actual Size.
    fit_action_->setShortcuts({QKeySequence(Qt::Key_F), QKeySequence(tr("Ctrl+Shift+F"))});
    connect(fit_action_, &QAction::triggered, view_, &views::GraphView::fitToGraph);
    zoom_in_action_ = make(icon("zoom-in"), tr("Zoom &In"), "actionZoomIn");
    zoom_in_action_->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::Key_Plus), QKeySequence(Qt::Key_Equal)});
    connect(zoom_in_action_, &QAction::triggered, view_, &views::GraphView::zoomIn);
    zoom_out_action_ = make(icon("zoom-out"), tr("Zoom &Out"), "actionZoomOut");
    zoom_out_action_->setShortcuts({QKeySequence::ZoomOut, QKeySequence(Qt::Key_Minus)});
    connect(zoom_out_action_, &QAction::triggered, view_, &views::GraphView::zoomOut);
    reset_zoom_action_ = make(icon("zoom-reset"), tr("&Actual Size"), "actionResetZoom");
    reset_zoom_action_->setShortcut(QKeySequence(tr("Ctrl+0")));
    connect(reset_zoom_action_, &QAction::triggered, view_, &views::GraphView::resetZoom);
    zoom_to_selection_action_ = make({}, tr("Zoom to &Selection"), nullptr);
    zoom_to_selection_action_->setShortcut(QKeySequence(tr("Shift+F")));
    connect(zoom_to_selection_action_, &QAction::triggered, this, &CanvasController::zoomToSelection);
    relayout_action_ = make({}, tr("Re-&layout"), nullptr);
    relayout_action_->setShortcut(QKeySequence(tr("Ctrl+L")));
    relayout_action_->setStatusTip(tr("Lay the graph out again with Graphviz, keeping pinned nodes in place"));
    connect(relayout_action_, &QAction::triggered, this, &CanvasController::relayout);

    find_action_ = make({}, tr("&Find…"), nullptr);
    find_action_->setShortcut(QKeySequence::Find);
    connect(find_action_, &QAction::triggered, this, [this] {
        find_bar_->show();
        find_bar_->activate();
    });
    find_next_action_ = make({}, tr("Find &Next"), nullptr);
    find_next_action_->setShortcut(QKeySequence::FindNext);
    connect(find_next_action_, &QAction::triggered, find_bar_, &views::FindBar::findNext);
    find_previous_action_ = make({}, tr("Find Pre&vious"), nullptr);
    find_previous_action_->setShortcut(QKeySequence::FindPrevious);
    connect(find_previous_action_, &QAction::triggered, find_bar_, &views::FindBar::findPrevious);
    producers_action_ = make({}, tr("Go to &Producers"), nullptr);
    producers_action_->setShortcut(QKeySequence(tr("Alt+Up")));
    connect(producers_action_, &QAction::triggered, this, [this] { selectNeighbours(true); });
    consumers_action_ = make({}, tr("Go to C&onsumers"), nullptr);
    consumers_action_->setShortcut(QKeySequence(tr("Alt+Down")));
    connect(consumers_action_, &QAction::triggered, this, [this] { selectNeighbours(false); });
}

// ---- following the document ------------------------------------------------------

void CanvasController::onDocumentChanged(GraphDocument::Changes what, const QStringList &ids,
                                         const QHash<QString, QPointF> &place) {
    if (what & GraphDocument::Replaced) {
        showNewDocument();
        return;
    }
    if (what & GraphDocument::Stages) {
        // Another graph on the canvas (a stage, or back to the document): only the
        // nodes that differ from what it draws are redrawn, where they were.
        scene_->applyEdit(doc_->shownGraph(), doc_->shownIssues(),
                          views::touchedIds(views::diffGraphs(scene_->graph(), doc_->shownGraph())), place);
        scene_->setDiffMarks(doc_->shownDiffMarks());
        scene_->setEditable(doc_->showsDocument());
    } else if (what & (GraphDocument::Structure | GraphDocument::Params)) {
        scene_->applyEdit(doc_->graph(), doc_->issues(), ids, place);
    } else if (what & GraphDocument::Positions) {
        scene_->setPositions(place);
    }
    if ((what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages)) && doc_->showsDocument()) {
        // Where the new nodes were drawn is where undo brings them back.
        QHash<QString, QPointF> drawn;
        for (const QString &id : ids)
            if (views::NodeItem *n = scene_->nodeItem(id)) drawn.insert(id, n->pos());
        doc_->adoptLayout(drawn);
    }
    if (what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages | GraphDocument::Positions))
        minimap_->sceneChanged();
    if (what & (GraphDocument::Structure | GraphDocument::Params | GraphDocument::Stages)) {
        find_bar_->refresh();
        updatePlaceholder();
    }
}

void CanvasController::showNewDocument() {
    scene_->setGraph(doc_->shownGraph(), doc_->shownIssues());
    scene_->setEditable(true);
    view_->setPlaceholderText(QString());
    find_bar_->refresh();
    startLayout(false);
}

void CanvasController::updatePlaceholder() {
    if (!doc_->isOpen()) return;
    if (doc_->graph().node_count() > 0)
        view_->setPlaceholderText(QString());
    else
        view_->setPlaceholderText(doc_->source().path.isEmpty()
                                      ? tr("Drag an operation or a tensor from the palette to start.")
                                      : tr("This project has no tensors or operations."));
}

// ---- layout ------------------------------------------------------------------------

void CanvasController::setLayingOut(bool on, const QString &message) {
    cancel_layout_button_->setVisible(on && relayout_);
    if (!message.isEmpty()) status_->showMessage(message);
    if (laying_out_ == on) return;
    laying_out_ = on;
    emit busyChanged();
}

void CanvasController::startLayout(bool again) {
    const Graph &g = doc_->shownGraph();
    relayout_ = again;
    setLayingOut(true, tr("Laying out %1 (%2 nodes)…").arg(doc_->source().name).arg(g.node_count()));
    layout_->start(g);
}

void CanvasController::relayout() {
    if (doc_->shownGraph().node_count() == 0) return;
    startLayout(true);
}

void CanvasController::onLayoutFinished(quint64, const Layout &layout) {
    const bool again = relayout_;
    const QHash<QString, QPointF> before = scene_->positions();
    const QStringList was_selected = scene_->selectedNodeIds();
    scene_->setLayout(layout);
    // Nodes added while the layout ran (the user did not wait) keep the places
    // they were given.
    QSet<QString> laid_out;
    for (const NodeBox &box : layout.nodes) laid_out.insert(qs(box.id));
    QStringList missing;
    for (const QString &id : nodeIds(doc_->shownGraph()))
        if (!laid_out.contains(id)) missing << id;
    if (!missing.isEmpty()) scene_->applyEdit(doc_->shownGraph(), doc_->shownIssues(), missing, doc_->positions());
    if (!was_selected.isEmpty()) scene_->selectNodes(was_selected);
    scene_->setDiffMarks(doc_->shownDiffMarks());
    setLayingOut(false);
    if (again) {
        // A re-layout keeps the nodes the user pinned where they were.
        QHash<QString, QPointF> keep;
        for (const QString &id : doc_->pinned())
            if (before.contains(id)) keep.insert(id, before.value(id));
        scene_->setPositions(keep);
        if (doc_->showsDocument()) doc_->placeNodes(scene_->positions());
        minimap_->sceneChanged();
        status_->showMessage(
            tr("Laid out again; %1 kept in place")
                .arg(countText(static_cast<qint64>(keep.size()), tr("pinned node"), tr("pinned nodes"))), 6000);
        emit layoutReady(true);
        return;
    }
    // The positions the document brought (a session's) win over the layout's.
    scene_->setPositions(doc_->positions());
    doc_->adoptLayout(scene_->positions());
    minimap_->sceneChanged();
    find_bar_->refresh();
    updatePlaceholder();
    view_->showGraph();
    emit layoutReady(false);
}

void CanvasController::onLayoutFailed(quint64, const QString &message) {
    setLayingOut(false);
    const QString why = tr("Layout of %1 failed: %2").arg(doc_->source().name, message);
    view_->setPlaceholderText(why);
    status_->showMessage(why);
    emit layoutFailed(why);
}

// ---- navigation --------------------------------------------------------------------

bool CanvasController::revealNode(const QString &id, bool mark) {
    const QString node = scene_->canvasNodeFor(id);
    views::NodeItem *item = scene_->nodeItem(node);
    if (!item) return false;
    scene_->selectNode(node);
    if (mark) scene_->markNode(node);
    view_->focusOn(item->mapRectToScene(item->box()));
    return true;
}

void CanvasController::zoomToSelection() {
    QRectF r;
    for (QGraphicsItem *i : scene_->selectedItems()) r |= i->sceneBoundingRect();
    if (r.isEmpty()) {
        view_->fitToGraph();
        return;
    }
    view_->fitInView(r.adjusted(-60, -60, 60, 60), Qt::KeepAspectRatio);
    if (view_->zoom() > 1.5) {
        view_->resetZoom();
        view_->centerOn(r.center());
    }
    emit view_->zoomChanged(view_->zoom());
}

void CanvasController::selectNeighbours(bool upstream) {
    // An operation's neighbours are the tensors it reads (writes); a tensor's are
    // the operations that write (read) it.
    const Graph &g = scene_->graph();
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

QPointF CanvasController::viewCentre() const {
    return view_->mapToScene(view_->viewport()->rect().center());
}

QPointF CanvasController::freeSpotNear(const QPointF &scene_pos, const QSizeF &size) const {
    const double gap = 24;
    // Free: no node's box within the gap; at first no edge's line either, then,
    // if that finds nothing, edges allowed.
    auto free = [&](const QPointF &centre, bool over_edges) {
        const QRectF box(centre.x() - size.width() / 2 - gap, centre.y() - size.height() / 2 - gap,
                         size.width() + 2 * gap, size.height() + 2 * gap);
        for (QGraphicsItem *i : scene_->items(box, Qt::IntersectsItemBoundingRect))
            if (auto *n = dynamic_cast<views::NodeItem *>(i); n && n->mapRectToScene(n->box()).intersects(box))
                return false;
        if (over_edges) return true;
        for (QGraphicsItem *i : scene_->items(box, Qt::IntersectsItemShape))
            if (i->type() == views::EdgeItem::Type) return false;
        return true;
    };
    // Rings of candidate spots around the point, nearest first.
    const double step_x = size.width() / 2 + gap, step_y = size.height() + 2 * gap;
    for (bool over_edges : {false, true}) {
        for (int ring = 0; ring <= 12; ++ring) {
            std::vector<QPointF> candidates;
            for (int dy = -ring; dy <= ring; ++dy)
                for (int dx = -ring; dx <= ring; ++dx)
                    if (std::max(std::abs(dx), std::abs(dy)) == ring)
                        candidates.push_back(scene_pos + QPointF(dx * step_x, dy * step_y));
            std::sort(candidates.begin(), candidates.end(), [&](const QPointF &a, const QPointF &b) {
                return QLineF(a, scene_pos).length() < QLineF(b, scene_pos).length();
            });
            for (const QPointF &c : candidates)
                if (free(c, over_edges)) return c;
        }
    }
    return scene_pos;
}

}  // namespace tapestry::studio
