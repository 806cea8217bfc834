#include "views/graph_view.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QKeyEvent>
#include <QMimeData>
#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>
#include <QtMath>
#include <algorithm>
#include <cmath>

#include "views/graph_scene.h"
#include "views/palette.h"

namespace tapestry::views {

namespace {
const QColor kCanvas(0xf3, 0xf5, 0xf8);
const QColor kGridDot(0xd3, 0xd9, 0xe1);
const QColor kDarkCanvas(0x14, 0x18, 0x1e);
const QColor kDarkGridDot(0x2e, 0x36, 0x42);
constexpr double kGridStep = 24.0;
}  // namespace

GraphView::GraphView(QWidget *parent) : QGraphicsView(parent) {
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
    setTransformationAnchor(AnchorUnderMouse);
    setResizeAnchor(AnchorViewCenter);
    setViewportUpdateMode(SmartViewportUpdate);
    setDragMode(NoDrag);
    setRubberBandSelectionMode(Qt::IntersectsItemShape);
    setFrameShape(QFrame::NoFrame);
    setFocusPolicy(Qt::StrongFocus);
    // Navigation is by dragging and the wheel; the scene keeps wide margins so any
    // node can be centred, which would make scroll bars meaningless.
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Palette entries are dropped here; project files are ignored here and reach
    // the main window, which opens them.
    setAcceptDrops(true);
    setObjectName(QStringLiteral("graphView"));
}

double GraphView::zoom() const {
    return transform().m11();
}

QRectF GraphView::graphRect() const {
    if (auto *s = qobject_cast<GraphScene *>(scene()); s && s->hasLayout()) return s->graphBounds();
    return scene() ? scene()->itemsBoundingRect() : QRectF();
}

void GraphView::setScaleClamped(double scale) {
    scale = std::clamp(scale, kMinScale, kMaxScale);
    QTransform t;
    t.scale(scale, scale);
    setTransform(t);
    emit zoomChanged(scale);
}

void GraphView::scaleBy(double factor) {
    setScaleClamped(zoom() * factor);
}

void GraphView::fitToGraph() {
    showGraph(kReadableScale);
}

void GraphView::showGraph(double min_scale) {
    const QRectF r = graphRect();
    const QRectF view = viewport()->rect();
    if (r.isEmpty() || view.isEmpty()) return;
    const QRectF target = r.adjusted(-24, -24, 24, 24);
    // Fit, but never blow a small graph up past 100 %, nor shrink a big one below
    // `min_scale`: then its top shows, centred, and the rest is a pan away.
    const double fit = std::min({view.width() / target.width(), view.height() / target.height(), 1.0});
    const double scale = std::max(fit, std::min(min_scale, 1.0));
    setScaleClamped(scale);
    if (scale <= fit) {
        centerOn(target.center());
        return;
    }
    const double half_height = view.height() / (2 * scale);
    centerOn(QPointF(target.center().x(), std::min(target.top() + half_height, target.center().y())));
}

void GraphView::zoomIn() {
    const ViewportAnchor anchor = transformationAnchor();
    setTransformationAnchor(AnchorViewCenter);
    scaleBy(kZoomStep);
    setTransformationAnchor(anchor);
}

void GraphView::zoomOut() {
    const ViewportAnchor anchor = transformationAnchor();
    setTransformationAnchor(AnchorViewCenter);
    scaleBy(1.0 / kZoomStep);
    setTransformationAnchor(anchor);
}

void GraphView::resetZoom() {
    const ViewportAnchor anchor = transformationAnchor();
    setTransformationAnchor(AnchorViewCenter);
    setScaleClamped(1.0);
    setTransformationAnchor(anchor);
}

void GraphView::focusOn(const QRectF &scene_rect) {
    if (zoom() < kReadableScale) {
        const ViewportAnchor anchor = transformationAnchor();
        setTransformationAnchor(AnchorViewCenter);
        setScaleClamped(kReadableScale);
        setTransformationAnchor(anchor);
    }
    centerOn(scene_rect.center());
}

void GraphView::setPlaceholderText(const QString &text) {
    placeholder_ = text;
    viewport()->update();
}

void GraphView::wheelEvent(QWheelEvent *event) {
    const int delta = event->angleDelta().y();
    if (delta == 0) {
        QGraphicsView::wheelEvent(event);  // horizontal wheels scroll
        return;
    }
    // 120 units per notch: one notch zooms by ~12 %, smooth on touchpads.
    scaleBy(std::pow(1.0012, delta));
    event->accept();
}

void GraphView::mousePressEvent(QMouseEvent *event) {
    if (event->button() == Qt::MiddleButton) {
        middle_panning_ = true;
        last_pan_pos_ = event->position().toPoint();
        viewport()->setCursor(Qt::ClosedHandCursor);
        event->accept();
        return;
    }
    if (event->button() == Qt::LeftButton && !space_held_) {
        const bool on_item = itemAt(event->position().toPoint()) != nullptr;
        if (event->modifiers() & (Qt::ShiftModifier | Qt::ControlModifier))
            setDragMode(on_item ? NoDrag : RubberBandDrag);
        else
            setDragMode(on_item ? NoDrag : ScrollHandDrag);
    }
    QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent *event) {
    if (middle_panning_) {
        const QPoint pos = event->position().toPoint();
        const QPoint d = pos - last_pan_pos_;
        last_pan_pos_ = pos;
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - d.x());
        verticalScrollBar()->setValue(verticalScrollBar()->value() - d.y());
        event->accept();
        return;
    }
    QGraphicsView::mouseMoveEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent *event) {
    if (event->button() == Qt::MiddleButton && middle_panning_) {
        middle_panning_ = false;
        viewport()->unsetCursor();
        event->accept();
        return;
    }
    QGraphicsView::mouseReleaseEvent(event);
    if (!space_held_) setDragMode(NoDrag);
}

void GraphView::keyPressEvent(QKeyEvent *event) {
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
        space_held_ = true;
        setDragMode(ScrollHandDrag);
        setInteractive(false);  // clicks on nodes pan too while Space is held
        event->accept();
        return;
    }
    QGraphicsView::keyPressEvent(event);
}

void GraphView::keyReleaseEvent(QKeyEvent *event) {
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
        space_held_ = false;
        setInteractive(true);
        setDragMode(NoDrag);
        event->accept();
        return;
    }
    QGraphicsView::keyReleaseEvent(event);
}

void GraphView::drawBackground(QPainter *painter, const QRectF &rect) {
    painter->fillRect(rect, dark_ ? kDarkCanvas : kCanvas);
    // A dot grid, only where it is dense enough to read as texture. Drawn as one
    // fill with a cached tile in device pixels: stroking thousands of round dots
    // cost more than the whole graph at 100 % (bench_canvas).
    if (zoom() < 0.45) return;
    const int step = std::max(4, qRound(kGridStep * zoom()));
    if (grid_tile_.isNull() || grid_tile_.width() != step || grid_tile_dark_ != dark_) {
        QPixmap tile(step, step);
        tile.fill(Qt::transparent);
        QPainter p(&tile);
        p.setRenderHint(QPainter::Antialiasing);
        p.setPen(Qt::NoPen);
        p.setBrush(dark_ ? kDarkGridDot : kGridDot);
        const double r = std::clamp(0.8 * zoom(), 0.6, 1.6);
        p.drawEllipse(QPointF(step / 2.0, step / 2.0), r, r);
        p.end();
        grid_tile_ = tile;
        grid_tile_dark_ = dark_;
    }
    painter->save();
    const QRect device = painter->worldTransform().mapRect(rect).toAlignedRect();
    const QPointF origin = painter->worldTransform().map(QPointF(0, 0));
    painter->resetTransform();
    QBrush brush(grid_tile_);
    brush.setTransform(QTransform::fromTranslate(origin.x() - step / 2.0, origin.y() - step / 2.0));
    painter->fillRect(device, brush);
    painter->restore();
}

void GraphView::drawForeground(QPainter *painter, const QRectF &rect) {
    QGraphicsView::drawForeground(painter, rect);
    if (placeholder_.isEmpty()) return;
    painter->save();
    painter->resetTransform();
    QFont f = font();
    f.setPixelSize(15);
    painter->setFont(f);
    painter->setPen(QColor(0x6b, 0x72, 0x80));
    painter->drawText(viewport()->rect().adjusted(40, 40, -40, -40), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    painter->restore();
}

}  // namespace tapestry::views

namespace tapestry::views {

void GraphView::dragEnterEvent(QDragEnterEvent *event) {
    if (!OpPalette::entryFromMimeData(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
        return;
    }
    event->ignore();  // files dropped on the canvas go to the window
}

void GraphView::dragMoveEvent(QDragMoveEvent *event) {
    if (!OpPalette::entryFromMimeData(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
        return;
    }
    event->ignore();
}

void GraphView::dropEvent(QDropEvent *event) {
    const QString entry = OpPalette::entryFromMimeData(event->mimeData());
    if (entry.isEmpty()) {
        event->ignore();
        return;
    }
    event->acceptProposedAction();
    emit paletteDropped(entry, mapToScene(event->position().toPoint()));
}

}  // namespace tapestry::views

namespace tapestry::views {

void GraphView::setDark(bool dark) {
    if (dark == dark_) return;
    dark_ = dark;
    resetCachedContent();
    viewport()->update();
}

}  // namespace tapestry::views
