// Stage compare: two GraphScene/GraphView pairs fed by their own LayoutWorker,
// diff marks added after each layout (GraphScene::setLayout clears the scene),
// and a re-entrancy guard so that the followed view's own scrolling does not
// echo back.
#include "views/stage_compare.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QScrollBar>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>
#include <limits>

#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/layout_worker.h"

namespace tapestry::views {
namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

constexpr double kMarkMargin = 7.0;

}  // namespace

// ---- DiffMarkItem ---------------------------------------------------------------

DiffMarkItem::DiffMarkItem(QString node, StageChange change, const QRectF &around)
    : node_(std::move(node)),
      change_(change),
      rect_(around.adjusted(-kMarkMargin, -kMarkMargin, kMarkMargin, kMarkMargin)) {
    setZValue(-1);  // behind edges (0) and nodes (1–2)
    setAcceptedMouseButtons(Qt::NoButton);
    setToolTip(change == StageChange::added     ? QObject::tr("Added in this stage")
               : change == StageChange::removed ? QObject::tr("Removed in the other stage")
                                                : QObject::tr("Changed between the two stages"));
}

QColor DiffMarkItem::colorOf(StageChange change) {
    switch (change) {
        case StageChange::added: return QColor("#2e9d4b");
        case StageChange::removed: return QColor("#d64541");
        case StageChange::changed: return QColor("#e69a17");
        case StageChange::none: break;
    }
    return QColor(Qt::transparent);
}

QRectF DiffMarkItem::boundingRect() const {
    return rect_.adjusted(-2, -2, 2, 2);
}

void DiffMarkItem::paint(QPainter *painter, const QStyleOptionGraphicsItem *, QWidget *) {
    const QColor c = colorOf(change_);
    QColor fill = c;
    fill.setAlpha(60);
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setBrush(fill);
    QPen pen(c, 2.5);
    if (change_ == StageChange::removed) pen.setStyle(Qt::DashLine);
    painter->setPen(pen);
    painter->drawRoundedRect(rect_, 9, 9);
}

// ---- StageCompareView -----------------------------------------------------------

StageCompareView::StageCompareView(QWidget *parent) : QWidget(parent) {
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->setSpacing(0);

    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(8, 4, 8, 4);
    summary_ = new QLabel(this);
    summary_->setTextFormat(Qt::RichText);
    bar->addWidget(summary_, 1);
    sync_button_ = new QToolButton(this);
    sync_button_->setText(tr("Sync pan && zoom"));
    sync_button_->setCheckable(true);
    sync_button_->setChecked(true);
    sync_button_->setToolTip(tr("Scroll and zoom both views together, aligned on the node nearest the centre"));
    bar->addWidget(sync_button_);
    outer->addLayout(bar);

    auto *split = new QSplitter(Qt::Horizontal, this);
    split->setChildrenCollapsible(false);
    for (int i = 0; i < 2; ++i) {
        const Side side = i == 0 ? Side::left : Side::right;
        Pane &p = pane(side);
        auto *box = new QWidget(split);
        auto *v = new QVBoxLayout(box);
        v->setContentsMargins(0, 0, 0, 0);
        v->setSpacing(0);
        p.title = new QLabel(box);
        p.title->setObjectName(QStringLiteral("stageCompareTitle"));
        p.title->setContentsMargins(10, 5, 10, 5);
        QFont f = p.title->font();
        f.setBold(true);
        p.title->setFont(f);
        v->addWidget(p.title);
        p.scene = new GraphScene(this);
        p.scene->setEditable(false);
        p.view = new GraphView(box);
        p.view->setScene(p.scene);
        p.view->setAcceptDrops(false);
        v->addWidget(p.view, 1);
        split->addWidget(box);
        p.layout = new LayoutWorker(this);
        connect(p.layout, &LayoutWorker::finished, this,
                [this, side](quint64 job, const Layout &layout) { onLayout(side, job, layout); });
        connect(p.layout, &LayoutWorker::failed, this, [this, side](quint64 job, const QString &message) {
            if (job != pane(side).job) return;
            pane(side).view->setPlaceholderText(tr("Layout failed: %1").arg(message));
            emit layoutFailed(message);
        });
        auto follow = [this, side] {
            if (synchronized_ && !syncing_ && isReady()) syncFrom(side);
        };
        connect(p.view->horizontalScrollBar(), &QScrollBar::valueChanged, this, follow);
        connect(p.view->verticalScrollBar(), &QScrollBar::valueChanged, this, follow);
        connect(p.view, &GraphView::zoomChanged, this, follow);
    }
    split->setSizes({1, 1});
    outer->addWidget(split, 1);
    connect(sync_button_, &QToolButton::toggled, this, &StageCompareView::setSynchronized);
    refreshSummary();
}

StageCompareView::~StageCompareView() {
    for (Pane &p : panes_) p.layout->cancel();
}

QString StageCompareView::stageTitle(const Stage &stage, int number) {
    return tr("Stage %1 · %2").arg(number).arg(qs(stage.pass));
}

void StageCompareView::setStages(const Stage &left, int left_number, const Stage &right, int right_number) {
    setGraphs(left.graph, stageTitle(left, left_number), right.graph, stageTitle(right, right_number));
}

void StageCompareView::setGraphs(const Graph &left, const QString &left_title, const Graph &right,
                                 const QString &right_title) {
    const Graph *graphs[2] = {&left, &right};
    const QString titles[2] = {left_title, right_title};
    for (int i = 0; i < 2; ++i) {
        Pane &p = panes_[i];
        ready_[i] = false;
        p.marks.clear();
        p.title->setText(titles[i]);
        p.scene->setGraph(*graphs[i], {});  // items appear with the layout
        p.view->setPlaceholderText(tr("Laying out…"));
        p.job = p.layout->start(*graphs[i]);
    }
    computeDiff();
    refreshSummary();
}

void StageCompareView::clear() {
    for (int i = 0; i < 2; ++i) {
        Pane &p = panes_[i];
        p.layout->cancel();
        p.job = 0;
        ready_[i] = false;
        p.marks.clear();
        p.title->clear();
        p.scene->clearGraph();
        p.view->setPlaceholderText(QString());
    }
    added_.clear();
    removed_.clear();
    changed_.clear();
    changes_.clear();
    refreshSummary();
}

QString StageCompareView::title(Side side) const {
    return pane(side).title->text();
}
GraphView *StageCompareView::view(Side side) const {
    return pane(side).view;
}
GraphScene *StageCompareView::scene(Side side) const {
    return pane(side).scene;
}

DiffMarkItem *StageCompareView::markItem(Side side, const QString &id) const {
    return pane(side).marks.value(id, nullptr);
}

void StageCompareView::computeDiff() {
    added_.clear();
    removed_.clear();
    changed_.clear();
    changes_.clear();
    const Graph &a = pane(Side::left).scene->graph();
    const Graph &b = pane(Side::right).scene->graph();
    auto note = [this](const std::string &id, StageChange c) {
        const QString q = qs(id);
        (c == StageChange::added ? added_ : c == StageChange::removed ? removed_ : changed_) << q;
        changes_.insert(q, c);
    };
    // Nodes are shared between stages: the same pointer is the same node; otherwise
    // compare contents (a pass may rebuild an equal node).
    for (const TensorPtr &t : a.tensors()) {
        const TensorPtr other = b.tensor_ptr(t->id);
        if (!other)
            note(t->id.value, StageChange::removed);
        else if (other != t && !(*other == *t))
            note(t->id.value, StageChange::changed);
    }
    for (const OpPtr &o : a.operations()) {
        const OpPtr other = b.op_ptr(o->id);
        if (!other)
            note(o->id.value, StageChange::removed);
        else if (other != o && !(*other == *o))
            note(o->id.value, StageChange::changed);
    }
    for (const TensorPtr &t : b.tensors())
        if (!a.find_tensor(t->id)) note(t->id.value, StageChange::added);
    for (const OpPtr &o : b.operations())
        if (!a.find_op(o->id)) note(o->id.value, StageChange::added);
}

void StageCompareView::onLayout(Side side, quint64 job, const Layout &layout) {
    Pane &p = pane(side);
    if (job != p.job) return;
    p.scene->setLayout(layout);
    p.view->setPlaceholderText(QString());
    addMarks(side);
    ready_[side == Side::left ? 0 : 1] = true;
    if (isReady()) {
        showBoth();
        emit ready();
    }
}

void StageCompareView::addMarks(Side side) {
    Pane &p = pane(side);
    p.marks.clear();  // setLayout deleted the old ones with the scene's items
    // Added and changed nodes: the canvas's own diff colouring (as the Stages dock
    // shows a stage). Removed nodes: the canvas draws no such mark (its graph
    // normally no longer has them), so the left view gets a DiffMarkItem behind them.
    QHash<QString, DiffMark> native;
    for (auto it = changes_.constBegin(); it != changes_.constEnd(); ++it) {
        const StageChange c = it.value();
        if (c == StageChange::changed || (c == StageChange::added && side == Side::right))
            native.insert(it.key(), c == StageChange::added ? DiffMark::added : DiffMark::changed);
        if (c != StageChange::removed || side != Side::left) continue;
        NodeItem *node = p.scene->nodeItem(it.key());
        if (!node) continue;
        auto *mark = new DiffMarkItem(it.key(), c, node->box().translated(node->pos()));
        p.scene->addItem(mark);
        p.marks.insert(it.key(), mark);
    }
    p.scene->setDiffMarks(native);
}

void StageCompareView::showBoth() {
    const bool was = syncing_;
    syncing_ = true;
    GraphView *l = pane(Side::left).view, *r = pane(Side::right).view;
    l->fitToGraph();
    r->fitToGraph();
    // One zoom for both, the one at which both graphs fit.
    const double zoom = std::min(l->zoom(), r->zoom());
    for (GraphView *v : {l, r}) {
        const QPointF centre = v->mapToScene(v->viewport()->rect().center());
        v->setTransform(QTransform::fromScale(zoom, zoom));
        v->centerOn(centre);
    }
    syncing_ = was;
    if (synchronized_) syncFrom(Side::left);
}

QString StageCompareView::nearestSharedNode(Side side, const QPointF &scene_pos) const {
    const GraphScene *mine = pane(side).scene;
    const GraphScene *theirs = pane(side == Side::left ? Side::right : Side::left).scene;
    QString best;
    double best_d = std::numeric_limits<double>::infinity();
    for (NodeItem *item : mine->nodeItems()) {
        if (!theirs->nodeItem(item->nodeId())) continue;
        const QPointF d = item->pos() - scene_pos;
        const double dist = d.x() * d.x() + d.y() * d.y();
        // Ties (equal distance) go to the smaller id, so the choice is stable.
        if (dist < best_d || (dist == best_d && item->nodeId() < best)) {
            best_d = dist;
            best = item->nodeId();
        }
    }
    return best;
}

void StageCompareView::syncFrom(Side side) {
    if (syncing_ || !isReady()) return;
    syncing_ = true;
    const Side other = side == Side::left ? Side::right : Side::left;
    GraphView *from = pane(side).view, *to = pane(other).view;
    const QPointF centre = from->mapToScene(from->viewport()->rect().center());
    last_anchor_ = nearestSharedNode(side, centre);
    QPointF target = centre;
    if (!last_anchor_.isEmpty())
        target = pane(other).scene->nodeItem(last_anchor_)->pos() +
                 (centre - pane(side).scene->nodeItem(last_anchor_)->pos());
    to->setTransform(from->transform());
    to->centerOn(target);
    syncing_ = false;
}

void StageCompareView::setSynchronized(bool on) {
    if (on == synchronized_) return;
    synchronized_ = on;
    {
        const QSignalBlocker block(sync_button_);
        sync_button_->setChecked(on);
    }
    if (on) syncFrom(Side::left);
    emit synchronizedChanged(on);
}

void StageCompareView::refreshSummary() {
    if (added_.isEmpty() && removed_.isEmpty() && changed_.isEmpty()) {
        const bool any = !pane(Side::left).scene->graph().operations().empty() ||
                         !pane(Side::right).scene->graph().operations().empty();
        summary_->setText(any ? tr("The two stages have the same nodes") : QString());
        return;
    }
    auto chip = [](StageChange c, const QString &text, qsizetype n) {
        return QStringLiteral("<span style='color:%1'>■</span> %2 %3")
            .arg(DiffMarkItem::colorOf(c).name())
            .arg(n)
            .arg(text);
    };
    summary_->setText(chip(StageChange::added, tr("added"), added_.size()) + QStringLiteral(" &nbsp; ") +
                      chip(StageChange::removed, tr("removed"), removed_.size()) + QStringLiteral(" &nbsp; ") +
                      chip(StageChange::changed, tr("changed"), changed_.size()));
}

}  // namespace tapestry::views
