#include "views/minimap.h"

#include <QEvent>
#include <QHash>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>
#include <vector>

#include "ops/library.h"
#include "views/graph_scene.h"

namespace tapestry::views {

namespace {

const QColor kOverviewBackground(0xf4, 0xf6, 0xf9);
const QColor kOverviewEdge(0x8c, 0x97, 0xa6, 150);
const QColor kOverviewTensor(0xcb, 0xd3, 0xde);
const QColor kOverviewSelection(0x25, 0x63, 0xeb);
const QColor kOverviewError(0xdc, 0x26, 0x26);
const QColor kFrame(0x25, 0x63, 0xeb);

// Re-rendering waits this long after a change so that a burst of changes (a
// drag, a multi-select) costs one render.
constexpr int kRerenderDelayMs = 120;

}  // namespace

Minimap::Minimap(QGraphicsView *main_view, QWidget *parent) : QGraphicsView(parent), main_view_(main_view) {
    setObjectName(QStringLiteral("minimap"));
    setInteractive(false);  // items are neither selectable nor movable here
    setDragMode(NoDrag);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setAlignment(Qt::AlignCenter);
    setTransformationAnchor(AnchorViewCenter);
    setFrameShape(QFrame::NoFrame);
    setCursor(Qt::PointingHandCursor);
    setToolTip(tr("Click or drag to move the canvas view"));
    setMinimumSize(80, 60);

    rerender_.setSingleShot(true);
    rerender_.setInterval(kRerenderDelayMs);
    connect(&rerender_, &QTimer::timeout, this, [this] {
        regenerate();
        viewport()->update();
    });

    if (main_view_) {
        for (QScrollBar *bar : {main_view_->horizontalScrollBar(), main_view_->verticalScrollBar()}) {
            connect(bar, &QScrollBar::valueChanged, this, &Minimap::viewChanged);
            connect(bar, &QScrollBar::rangeChanged, this, &Minimap::viewChanged);
        }
        main_view_->viewport()->installEventFilter(this);
        adoptScene();
    }
}

QRectF Minimap::frameRect() const {
    if (!main_view_) return {};
    return main_view_->mapToScene(main_view_->viewport()->rect()).boundingRect();
}

void Minimap::adoptScene() {
    GraphScene *scene = main_view_ ? qobject_cast<GraphScene *>(main_view_->scene()) : nullptr;
    if (scene == followed_ && QGraphicsView::scene() == scene) return;
    if (followed_) disconnect(followed_, nullptr, this, nullptr);
    followed_ = scene;
    setScene(scene);
    if (scene) {
        connect(scene, &QGraphicsScene::sceneRectChanged, this, &Minimap::refit);
        connect(scene, &QGraphicsScene::selectionChanged, this, &Minimap::sceneChanged);
    }
    refit();
}

void Minimap::viewChanged() {
    adoptScene();
    frame_only_paint_ = true;
    viewport()->update();
}

void Minimap::sceneChanged() {
    rerender_.start();
}

void Minimap::refit() {
    QRectF bounds = followed_ ? followed_->graphBounds() : QRectF();
    if (bounds.isEmpty()) {
        setSceneRect(QRectF(0, 0, 1, 1));
        resetTransform();
    } else {
        const double margin = std::max(bounds.width(), bounds.height()) * 0.02;
        bounds.adjust(-margin, -margin, margin, margin);
        setSceneRect(bounds);
        fitInView(bounds, Qt::KeepAspectRatio);
    }
    dirty_ = true;
    rerender_.stop();
    viewport()->update();
}

void Minimap::regenerate() {
    rerender_.stop();
    dirty_ = false;
    ++render_count_;
    if (!followed_ || followed_->graphBounds().isEmpty() || viewport()->width() <= 0 || viewport()->height() <= 0) {
        overview_ = QImage();
        return;
    }
    const QRectF source = mapToScene(viewport()->rect()).boundingRect();
    overview_ = renderOverview(*followed_, source, viewport()->size(), devicePixelRatioF());
}

QImage Minimap::renderOverview(const GraphScene &scene, const QRectF &source, const QSize &size,
                               qreal device_pixel_ratio) {
    QImage image((QSizeF(size) * device_pixel_ratio).toSize(), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(device_pixel_ratio);
    image.fill(kOverviewBackground);
    if (source.isEmpty() || size.isEmpty()) return image;

    QPainter p(&image);
    // Scene → image, keeping the aspect ratio and centring like fitInView.
    const double scale = std::min(size.width() / source.width(), size.height() / source.height());
    p.translate(size.width() / 2.0, size.height() / 2.0);
    p.scale(scale, scale);
    p.translate(-source.center());

    // Edges as straight lines between node centres: at overview scale a spline and
    // a line are the same few pixels, and one drawLines call is far cheaper.
    std::vector<QLineF> lines;
    lines.reserve(static_cast<size_t>(scene.edgeItems().size()));
    for (const EdgeItem *e : scene.edgeItems()) {
        const NodeItem *from = scene.nodeItem(e->from());
        const NodeItem *to = scene.nodeItem(e->to());
        if (from && to) lines.emplace_back(from->pos(), to->pos());
    }
    p.setPen(QPen(kOverviewEdge, 0));  // cosmetic: one device pixel whatever the scale
    p.drawLines(lines.data(), static_cast<int>(lines.size()));

    // Nodes as filled boxes in their kind's colour; selected ones in the selection
    // colour and nodes with errors in red, so both stand out at any size. A box is
    // at least one device pixel so that nothing vanishes from a big graph.
    const OpLibrary &lib = OpLibrary::standard();
    QHash<QString, QColor> kind_colors;
    const double min_extent = 1.0 / (scale * device_pixel_ratio);
    p.setPen(Qt::NoPen);
    for (const NodeItem *n : scene.nodeItems()) {
        QRectF r = n->box().translated(n->pos());
        if (r.width() < min_extent) r.setWidth(min_extent);
        if (r.height() < min_extent) r.setHeight(min_extent);
        QColor c;
        if (n->isSelected()) {
            c = kOverviewSelection;
        } else if (n->health() == NodeHealth::error) {
            c = kOverviewError;
        } else if (n->nodeKind() == NodeKind::operation) {
            const QString &kind = static_cast<const OperationItem *>(n)->kind();
            auto it = kind_colors.constFind(kind);
            if (it == kind_colors.cend()) {
                const OpDef *def = lib.find(kind.toStdString());
                const std::string_view category = def ? def->category() : std::string_view();
                it = kind_colors.insert(
                    kind, categoryColor(QString::fromUtf8(category.data(), static_cast<qsizetype>(category.size()))));
            }
            c = *it;
        } else {
            c = kOverviewTensor;
        }
        p.fillRect(r, c);
    }
    return image;
}

void Minimap::paintEvent(QPaintEvent *) {
    // A paint this widget did not ask for means the scene repainted items in this
    // view (an edit, a move, a selection): the cached overview is stale.
    if (!frame_only_paint_ && !dirty_) sceneChanged();
    frame_only_paint_ = false;
    if (dirty_) regenerate();

    QPainter p(viewport());
    p.fillRect(viewport()->rect(), kOverviewBackground);
    if (!overview_.isNull()) p.drawImage(QPointF(0, 0), overview_);

    if (!main_view_ || !followed_ || followed_->graphBounds().isEmpty()) return;
    const QRectF frame = mapFromScene(frameRect()).boundingRect().adjusted(0.5, 0.5, -0.5, -0.5);
    QColor fill = kFrame;
    fill.setAlpha(40);
    p.setPen(QPen(kFrame, 1.5));
    p.setBrush(fill);
    p.drawRect(frame.intersected(QRectF(viewport()->rect()).adjusted(-2, -2, 2, 2)));
}

void Minimap::resizeEvent(QResizeEvent *event) {
    QGraphicsView::resizeEvent(event);
    refit();
}

void Minimap::centreMainViewAt(const QPoint &minimap_pos) {
    if (!main_view_ || !followed_ || followed_->graphBounds().isEmpty()) return;
    main_view_->centerOn(mapToScene(minimap_pos));
    viewChanged();
}

void Minimap::mousePressEvent(QMouseEvent *event) {
    if (event->button() != Qt::LeftButton) {
        event->ignore();
        return;
    }
    dragging_ = true;
    centreMainViewAt(event->position().toPoint());
    event->accept();
}

void Minimap::mouseMoveEvent(QMouseEvent *event) {
    if (dragging_ && (event->buttons() & Qt::LeftButton)) centreMainViewAt(event->position().toPoint());
    event->accept();
}

void Minimap::mouseReleaseEvent(QMouseEvent *event) {
    dragging_ = false;
    event->accept();
}

void Minimap::wheelEvent(QWheelEvent *event) {
    event->accept();  // the overview always shows the whole graph
}

bool Minimap::eventFilter(QObject *watched, QEvent *event) {
    if (main_view_ && watched == main_view_->viewport() && event->type() == QEvent::Resize) viewChanged();
    return QGraphicsView::eventFilter(watched, event);
}

}  // namespace tapestry::views
