#include "views/graph_scene.h"

#include <QFontMetricsF>
#include <QGraphicsSceneContextMenuEvent>
#include <QGraphicsSceneHoverEvent>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QMenu>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <QtMath>
#include <algorithm>

#include "ops/library.h"

namespace tapestry::views {

namespace {

// Palette (BACKGROUND §5 colours, toned for a light canvas).
const QColor kSelection(0x25, 0x63, 0xeb);
const QColor kError(0xdc, 0x26, 0x26);
const QColor kWarning(0xea, 0x8a, 0x0c);
const QColor kEdge(0x8c, 0x97, 0xa6);
const QColor kHalo(0xf5, 0x9e, 0x0b);
const QColor kText(0x1f, 0x29, 0x37);
const QColor kSubtleText(0x5b, 0x65, 0x73);
const QColor kAdded(0x16, 0xa3, 0x4a);
const QColor kChanged(0xd9, 0x77, 0x06);

constexpr double kDecorationMargin = 12.0;
// Below this level of detail a node is one flat rectangle and an edge a straight
// line: at "fit all" on thousands of nodes the details are sub-pixel anyway.
constexpr double kFlatLevelOfDetail = 0.2;

QFont titleFont() {
    QFont f;
    f.setPixelSize(12);
    f.setBold(true);
    return f;
}

QFont detailFont() {
    QFont f(QStringLiteral("DejaVu Sans Mono"));
    f.setStyleHint(QFont::Monospace);
    f.setPixelSize(11);
    return f;
}

QFont badgeFont() {
    QFont f;
    f.setPixelSize(10);
    f.setBold(true);
    return f;
}

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

QString shapeText(const ZPoint &shape) {
    QStringList dims;
    for (Coord c : shape.coords()) dims << QString::number(c);
    return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

double levelOfDetail(const QStyleOptionGraphicsItem *option, const QPainter *painter) {
    return option ? option->levelOfDetailFromTransform(painter->worldTransform()) : 1.0;
}

void drawElided(QPainter *p, const QRectF &rect, const QString &text, const QFont &font, Qt::Alignment align) {
    p->setFont(font);
    const QFontMetricsF fm(font);
    p->drawText(rect, align, fm.elidedText(text, Qt::ElideMiddle, rect.width()));
}

// Parameter t in [0, 1] along `path` where it leaves `outline` coming from the
// start: the point an arrow should touch. Binary search on path length.
double exitPercent(const QPainterPath &path, const QPainterPath &outline, bool from_end) {
    const double inside_t = from_end ? 1.0 : 0.0;
    if (!outline.contains(path.pointAtPercent(inside_t))) return inside_t;
    double outside = from_end ? 0.0 : 1.0, inside = inside_t;
    if (outline.contains(path.pointAtPercent(outside))) return inside_t;  // degenerate: both ends inside
    for (int i = 0; i < 24; ++i) {
        const double mid = (outside + inside) / 2;
        (outline.contains(path.pointAtPercent(mid)) ? inside : outside) = mid;
    }
    return outside;
}

}  // namespace

QColor categoryColor(const QString &category) {
    if (category == QLatin1String("linear algebra")) return QColor(0x08, 0x7c, 0xd4);
    if (category == QLatin1String("elementwise")) return QColor(0x0f, 0x9f, 0x5a);
    if (category == QLatin1String("reduction")) return QColor(0x7a, 0x50, 0xf0);
    if (category == QLatin1String("normalization")) return QColor(0xa9, 0x38, 0xbc);
    if (category == QLatin1String("shape")) return QColor(0x45, 0x5d, 0x75);
    if (category == QLatin1String("convolution")) return QColor(0xd9, 0x46, 0x83);
    if (category == QLatin1String("attention")) return QColor(0x0d, 0x94, 0x88);
    if (category == QLatin1String("embedding")) return QColor(0xb4, 0x6b, 0x12);
    return QColor(0x6b, 0x72, 0x80);  // unknown kinds
}

QColor roleColor(TensorRole role) {
    switch (role) {
        case TensorRole::input: return QColor(0x08, 0x8c, 0xe4);
        case TensorRole::parameter: return QColor(0x7a, 0x50, 0xf0);
        case TensorRole::intermediate: return QColor(0x94, 0xa3, 0xb8);
        case TensorRole::output: return QColor(0x01, 0xa8, 0x56);
    }
    return Qt::gray;
}

// ---- NodeItem ------------------------------------------------------------------

NodeItem::NodeItem(QString id, NodeKind kind, const QRectF &box) : id_(std::move(id)), kind_(kind), box_(box) {
    setFlag(ItemIsSelectable);
    setFlag(ItemIsMovable);
    setFlag(ItemSendsScenePositionChanges);
    setAcceptHoverEvents(true);
    setZValue(2);
    setData(kNodeIdRole, id_);
    setData(kNodeKindRole, kind == NodeKind::tensor ? QStringLiteral("tensor") : QStringLiteral("operation"));
}

void NodeItem::setBox(const QRectF &box) {
    if (box == box_) return;
    prepareGeometryChange();
    box_ = box;
}

const NodeItem::Port *NodeItem::portAt(const QPointF &local) const {
    const Port *best = nullptr;
    double best_d = 9.0;
    for (const Port &p : ports_) {
        const double d = std::hypot(p.pos.x() - local.x(), p.pos.y() - local.y());
        if (d <= best_d) {
            best_d = d;
            best = &p;
        }
    }
    return best;
}

QPointF NodeItem::portPos(const QString &name, bool output) const {
    for (const Port &p : ports_)
        if (p.output == output && p.name == name) return p.pos;
    return output ? QPointF(box_.center().x(), box_.bottom()) : QPointF(box_.center().x(), box_.top());
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant &value) {
    if (change == ItemScenePositionHasChanged)
        if (auto *s = qobject_cast<GraphScene *>(scene())) s->nodeMoved(this);
    return QGraphicsItem::itemChange(change, value);
}

void NodeItem::hoverMoveEvent(QGraphicsSceneHoverEvent *event) {
    if (base_tooltip_.isEmpty()) base_tooltip_ = toolTip();
    const Port *p = portAt(event->pos());
    QString tip = base_tooltip_;
    if (p && kind_ == NodeKind::operation)
        tip = QStringLiteral("<b>%1</b> port <b>%2</b><br/>%3")
                  .arg(p->output ? QStringLiteral("output") : QStringLiteral("input"), p->name,
                       p->output ? QStringLiteral("Drag to an input port to connect")
                                 : QStringLiteral("Drop a tensor or an output here"));
    else if (p && p->output)
        tip = base_tooltip_ + QStringLiteral("<br/><i>Drag from here to an input port to connect</i>");
    if (tip != toolTip()) setToolTip(tip);
    QGraphicsItem::hoverMoveEvent(event);
}

void NodeItem::setDiffMark(DiffMark mark) {
    if (mark == diff_mark_) return;
    prepareGeometryChange();  // the pill sits outside the box, on the left
    diff_mark_ = mark;
    update();
}

void NodeItem::setHealth(NodeHealth health, int issue_count) {
    if (health == health_ && issue_count == issue_count_) return;
    health_ = health;
    issue_count_ = issue_count;
    update();
}

QRectF NodeItem::boundingRect() const {
    const bool pill = diff_mark_ == DiffMark::added || diff_mark_ == DiffMark::changed;
    return box_.adjusted(-kDecorationMargin - (pill ? 72 : 0), -kDecorationMargin, kDecorationMargin,
                         kDecorationMargin);
}

QPainterPath NodeItem::shape() const {
    return outline();
}

void NodeItem::paintDecorations(QPainter *p, double lod) const {
    const bool marked = diff_mark_ == DiffMark::added || diff_mark_ == DiffMark::changed;
    if (health_ == NodeHealth::ok && !isSelected() && !marked && lod < kLabelLevelOfDetail) return;
    const QPainterPath ring = outline();
    if (marked) {
        // The stage diff: a ring just outside the node and a pill to its left.
        const QColor c = diff_mark_ == DiffMark::added ? kAdded : kChanged;
        QPainterPathStroker stroker;
        stroker.setWidth(6);
        p->setPen(Qt::NoPen);
        p->setBrush(c);
        p->drawPath(stroker.createStroke(ring) - ring);
        if (lod >= kLabelLevelOfDetail) {
            const QString label = diff_mark_ == DiffMark::added ? QStringLiteral("new") : QStringLiteral("changed");
            const QFontMetricsF fm(badgeFont());
            const double w = fm.horizontalAdvance(label) + 12;
            const QRectF pill(box_.left() - 8 - w, box_.center().y() - 8, w, 16);
            p->setPen(QPen(Qt::white, 1.5));
            p->setBrush(c);
            p->drawRoundedRect(pill, 8, 8);
            p->setPen(Qt::white);
            p->setFont(badgeFont());
            p->drawText(pill, Qt::AlignCenter, label);
        }
    }
    if (lod >= kLabelLevelOfDetail) {
        for (const Port &port : ports_) {
            p->setPen(QPen(QColor(0x47, 0x55, 0x69), 1.2));
            p->setBrush(port.output ? QColor(0xf8, 0xfa, 0xfc) : QColor(0xe2, 0xe8, 0xf0));
            p->drawEllipse(port.pos, 4.0, 4.0);
        }
    }
    p->setBrush(Qt::NoBrush);
    if (health_ != NodeHealth::ok) {
        const QColor c = health_ == NodeHealth::error ? kError : kWarning;
        p->setPen(QPen(c, 2.5));
        p->drawPath(ring);
        if (lod >= kLabelLevelOfDetail && issue_count_ > 0) {
            // A count badge on the top-left corner.
            const QRectF badge(box_.left() - 7, box_.top() - 7, 16, 16);
            p->setPen(QPen(Qt::white, 1.5));
            p->setBrush(c);
            p->drawEllipse(badge);
            p->setPen(Qt::white);
            p->setFont(badgeFont());
            p->drawText(badge, Qt::AlignCenter,
                        issue_count_ > 9 ? QStringLiteral("9+") : QString::number(issue_count_));
        }
    }
    if (isSelected()) {
        QPainterPathStroker stroker;
        stroker.setWidth(health_ == NodeHealth::ok ? 7 : 10);
        const QPainterPath halo = stroker.createStroke(ring) - ring;
        p->setPen(Qt::NoPen);
        QColor c = kSelection;
        c.setAlpha(150);
        p->setBrush(c);
        p->drawPath(halo);
    }
}

// ---- TensorItem ----------------------------------------------------------------

TensorItem::TensorItem(const Tensor &tensor, const QRectF &box)
    : NodeItem(qs(tensor.id.value), NodeKind::tensor, box),
      title_(qs(tensor.name.empty() ? tensor.id.value : tensor.name)),
      detail_(qs(std::string(dtype_name(tensor.dtype))) + QLatin1Char(' ') + shapeText(tensor.shape())),
      role_(tensor.role) {
    setToolTip(QStringLiteral("<b>%1</b> (%2)<br/>%3<br/>range %4")
                   .arg(title_.toHtmlEscaped(), qs(std::string(role_name(tensor.role))), detail_,
                        qs(tensor.range.to_string())));
    QList<Port> ports{Port{QString(), true, QPointF(box.center().x(), box.bottom())}};
    if (tensor.role == TensorRole::intermediate || tensor.role == TensorRole::output)
        ports.append(Port{QString(), false, QPointF(box.center().x(), box.top())});
    setPorts(ports);
}

QPainterPath TensorItem::outline() const {
    QPainterPath p;
    p.addRoundedRect(box(), 4, 4);
    return p;
}

void TensorItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *) {
    const double lod = levelOfDetail(option, p);
    const QRectF r = box();
    if (lod < kFlatLevelOfDetail) {
        p->fillRect(r, health() == NodeHealth::error ? kError : isSelected() ? kSelection : QColor(0xc8, 0xd0, 0xdb));
        p->fillRect(QRectF(r.left(), r.top(), r.width() * 0.12, r.height()), roleColor(role_));
        return;
    }
    p->setRenderHint(QPainter::Antialiasing);
    // A hint of Tapestry's box3d: a flat offset "back" of the box.
    p->setPen(Qt::NoPen);
    p->setBrush(QColor(0xd5, 0xdb, 0xe3));
    p->drawRoundedRect(r.translated(3, 3), 4, 4);

    p->setPen(QPen(QColor(0xa8, 0xb3, 0xc2), 1));
    p->setBrush(Qt::white);
    p->drawRoundedRect(r, 4, 4);

    // Role stripe on the left (its path is built once per box).
    if (stripe_box_ != r) {
        QPainterPath stripe;
        stripe.addRoundedRect(QRectF(r.left(), r.top(), 10, r.height()), 4, 4);
        QPainterPath clip;
        clip.addRect(QRectF(r.left(), r.top(), 5, r.height()));
        stripe_ = stripe.intersected(clip);
        stripe_box_ = r;
    }
    p->setPen(Qt::NoPen);
    p->setBrush(roleColor(role_));
    p->drawPath(stripe_);

    if (lod >= kLabelLevelOfDetail) {
        const QRectF text = r.adjusted(10, 4, -6, -4);
        const QRectF top(text.left(), text.top(), text.width(), text.height() / 2 + 1);
        const QRectF bottom(text.left(), text.center().y() + 1, text.width(), text.height() / 2 - 1);
        p->setPen(kText);
        drawElided(p, top, title_, titleFont(), Qt::AlignLeft | Qt::AlignVCenter);
        p->setPen(kSubtleText);
        drawElided(p, bottom, detail_, detailFont(), Qt::AlignLeft | Qt::AlignVCenter);
    }
    paintDecorations(p, lod);
}

// ---- OperationItem -------------------------------------------------------------

OperationItem::OperationItem(const Operation &op, const QString &category, const QRectF &box, bool expanded)
    : NodeItem(qs(op.id.value), NodeKind::operation, box),
      kind_(qs(op.kind)),
      name_(qs(op.name.empty() ? op.id.value : op.name)),
      category_(category),
      shard_count_(static_cast<int>(op.shards.size())),
      expanded_(expanded && !op.shards.empty()) {
    if (expanded_) {
        // The shards in a row along the bottom of the widened pill.
        const double n = static_cast<double>(op.shards.size());
        const double row = n * ShardItem::kWidth + (n - 1) * ShardItem::kGap;
        double x = box.center().x() - row / 2;
        const double y = box.bottom() - ShardItem::kHeight - 8;
        for (const Shard &s : op.shards) {
            new ShardItem(s, QRectF(x, y, ShardItem::kWidth, ShardItem::kHeight), this);
            x += ShardItem::kWidth + ShardItem::kGap;
        }
    }
    QString tip = QStringLiteral("<b>%1</b> — %2").arg(name_.toHtmlEscaped(), kind_.toHtmlEscaped());
    if (shard_count_ > 0) tip += QStringLiteral("<br/>%1 shards").arg(shard_count_);
    setToolTip(tip);
    // Input ports spread along the top edge, outputs along the bottom, in the
    // library's order.
    QList<Port> ports;
    if (const OpDef *def = OpLibrary::standard().find(op.kind)) {
        auto spread = [&](const std::vector<PortSpec> &specs, bool output) {
            const double n = static_cast<double>(specs.size());
            for (size_t i = 0; i < specs.size(); ++i) {
                const double x = box.left() + box.width() * (static_cast<double>(i) + 1) / (n + 1);
                ports.append(Port{qs(specs[i].name), output, QPointF(x, output ? box.bottom() : box.top())});
            }
        };
        spread(def->input_ports(), false);
        spread(def->output_ports(), true);
    }
    setPorts(ports);
}

QPainterPath OperationItem::outline() const {
    QPainterPath p;
    const double radius = std::min(box().height() / 2, 14.0);
    p.addRoundedRect(box(), radius, radius);
    return p;
}

QRectF OperationItem::boundingRect() const {
    // Room for the shard badge on the top-right corner.
    return NodeItem::boundingRect().adjusted(0, -6, 64, 0);
}

void OperationItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *) {
    const double lod = levelOfDetail(option, p);
    const QRectF r = box();
    const QColor base = categoryColor(category_);
    if (lod < kFlatLevelOfDetail) {
        p->fillRect(r, health() == NodeHealth::error ? kError : isSelected() ? kSelection : base);
        return;
    }
    p->setRenderHint(QPainter::Antialiasing);
    QLinearGradient fill(r.topLeft(), r.bottomLeft());
    fill.setColorAt(0, base.lighter(112));
    fill.setColorAt(1, base.darker(106));
    p->setPen(QPen(base.darker(125), 1));
    p->setBrush(fill);
    p->drawPath(outline());

    if (lod >= kLabelLevelOfDetail) {
        // Expanded, the name sits above the row of shards.
        const QRectF text =
            expanded_ ? QRectF(r.left() + 12, r.top() + 4, r.width() - 24, 34) : r.adjusted(12, 4, -12, -4);
        const QRectF top(text.left(), text.top(), text.width(), text.height() / 2 + 1);
        const QRectF bottom(text.left(), text.center().y() + 1, text.width(), text.height() / 2 - 1);
        p->setPen(Qt::white);
        drawElided(p, top, kind_, titleFont(), Qt::AlignHCenter | Qt::AlignVCenter);
        p->setPen(QColor(255, 255, 255, 215));
        QFont nameFont;
        nameFont.setPixelSize(11);
        drawElided(p, bottom, name_, nameFont, Qt::AlignHCenter | Qt::AlignVCenter);

        if (shard_count_ > 0) {
            const QString label = QStringLiteral("×%1 shards").arg(shard_count_);
            const QFontMetricsF fm(badgeFont());
            const double w = fm.horizontalAdvance(label) + 10;
            // Mostly right of the pill, so that it does not cover a short name.
            const QRectF badge(r.right() - 14, r.top() - 8, w, 16);
            p->setPen(QPen(Qt::white, 1.5));
            p->setBrush(QColor(0x33, 0x41, 0x55));
            p->drawRoundedRect(badge, 8, 8);
            p->setPen(Qt::white);
            p->setFont(badgeFont());
            p->drawText(badge, Qt::AlignCenter, label);
        }
    }
    if (auto *s = qobject_cast<GraphScene *>(scene()); s && s->deviceColours().contains(nodeId())) {
        // The devices of its pieces, side by side along the bottom edge.
        const QList<QColor> devices = s->deviceColours().value(nodeId());
        const QRectF band(r.left(), r.bottom() - 6, r.width(), 6);
        p->save();
        p->setClipPath(outline());
        for (qsizetype i = 0; i < devices.size(); ++i) {
            const double w = band.width() / static_cast<double>(devices.size());
            p->fillRect(QRectF(band.left() + w * static_cast<double>(i), band.top(), w + 0.5, band.height()),
                        devices[i]);
        }
        p->restore();
    }
    paintDecorations(p, lod);
}

// ---- ShardItem -----------------------------------------------------------------

ShardItem::ShardItem(const Shard &shard, const QRectF &box, QGraphicsItem *parent)
    : QGraphicsItem(parent), id_(qs(shard.id.value)), box_(box) {
    QStringList dims;
    for (int d = 0; d < shard.index.rank(); ++d)
        dims << QStringLiteral("[%1,%2)").arg(shard.index.start()[d]).arg(shard.index.end()[d]);
    range_ = dims.isEmpty() ? QStringLiteral("[]") : dims.join(QStringLiteral("×"));
    QString tip = QStringLiteral("<b>%1</b><br/>index %2").arg(id_.toHtmlEscaped(), range_);
    if (!shard.device.empty()) tip += QStringLiteral("<br/>on %1").arg(qs(shard.device).toHtmlEscaped());
    setToolTip(tip);
    setData(NodeItem::kNodeIdRole, id_);
    setAcceptedMouseButtons(Qt::NoButton);  // clicks select the operation
}

void ShardItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *) {
    const double lod = levelOfDetail(option, p);
    p->setRenderHint(QPainter::Antialiasing);
    p->setPen(QPen(QColor(255, 255, 255, 200), 1));
    p->setBrush(QColor(0, 0, 0, 45));
    if (auto *s = qobject_cast<GraphScene *>(scene()); s && !s->deviceColours().value(id_).isEmpty())
        p->setBrush(s->deviceColours().value(id_).front());  // the device a plan puts it on
    p->drawRoundedRect(box_, 6, 6);
    if (lod < kLabelLevelOfDetail) return;
    const QRectF text = box_.adjusted(6, 2, -6, -2);
    p->setPen(Qt::white);
    drawElided(p, QRectF(text.left(), text.top(), text.width(), text.height() / 2), id_, badgeFont(),
               Qt::AlignHCenter | Qt::AlignVCenter);
    QFont range = detailFont();
    range.setPixelSize(10);
    p->setPen(QColor(255, 255, 255, 225));
    drawElided(p, QRectF(text.left(), text.center().y(), text.width(), text.height() / 2), range_, range,
               Qt::AlignHCenter | Qt::AlignVCenter);
}

// ---- EdgeItem ------------------------------------------------------------------

EdgeItem::EdgeItem(QString from, QString to, const QPainterPath &path, const QPointF &tip, const QPointF &direction)
    : from_(std::move(from)), to_(std::move(to)), path_(path), tip_(tip), direction_(direction) {
    setZValue(0);
    setFlag(ItemIsSelectable, false);
}

void EdgeItem::reroute(const QPointF &start, const QPointF &end) {
    prepareGeometryChange();
    const double bend = std::clamp(std::abs(end.y() - start.y()) * 0.5, 24.0, 120.0);
    QPainterPath path(start);
    path.cubicTo(start + QPointF(0, bend), end - QPointF(0, bend), end);
    path_ = path;
    tip_ = end;
    direction_ = end - path.pointAtPercent(0.97);
    update();
}

void EdgeItem::setHighlighted(bool on) {
    if (on == highlighted_) return;
    highlighted_ = on;
    setZValue(on ? 1 : 0);
    update();
}

QPolygonF EdgeItem::arrowHead() const {
    const double len = std::hypot(direction_.x(), direction_.y());
    const QPointF d = len > 0 ? direction_ / len : QPointF(0, 1);
    const QPointF n(-d.y(), d.x());
    const double length = 9, half_width = 4.5;
    const QPointF back = tip_ - d * length;
    return QPolygonF({tip_, back + n * half_width, back - n * half_width});
}

QRectF EdgeItem::boundingRect() const {
    return path_.boundingRect().united(arrowHead().boundingRect()).adjusted(-3, -3, 3, 3);
}

QPainterPath EdgeItem::shape() const {
    QPainterPathStroker stroker;
    stroker.setWidth(6);
    return stroker.createStroke(path_);
}

void EdgeItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *) {
    const QColor c = highlighted_ ? kSelection : kEdge;
    if (levelOfDetail(option, p) < kFlatLevelOfDetail) {
        p->setRenderHint(QPainter::Antialiasing, false);
        p->setPen(QPen(c, 0));
        p->drawLine(path_.elementCount() > 0 ? QPointF(path_.elementAt(0)) : tip_, tip_);
        return;
    }
    p->setRenderHint(QPainter::Antialiasing);
    p->setPen(QPen(c, highlighted_ ? 2.0 : 1.4, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    p->setBrush(Qt::NoBrush);
    p->drawPath(path_);
    p->setPen(Qt::NoPen);
    p->setBrush(c);
    p->drawPolygon(arrowHead());
}

// ---- HaloItem ------------------------------------------------------------------

HaloItem::HaloItem(const QRectF &around) : around_(around) {
    setZValue(1);
}

QRectF HaloItem::boundingRect() const {
    return around_.adjusted(-16, -16, 16, 16);
}

void HaloItem::paint(QPainter *p, const QStyleOptionGraphicsItem *, QWidget *) {
    p->setRenderHint(QPainter::Antialiasing);
    QColor fill = kHalo;
    fill.setAlpha(60);
    QColor ring = kHalo;
    ring.setAlpha(220);
    p->setBrush(fill);
    p->setPen(QPen(ring, 3, Qt::DashLine));
    p->drawRoundedRect(around_.adjusted(-11, -11, 11, 11), 14, 14);
}

// ---- GraphScene ----------------------------------------------------------------

GraphScene::GraphScene(QObject *parent) : QGraphicsScene(parent) {
    setItemIndexMethod(BspTreeIndex);
    setBackgroundBrush(Qt::NoBrush);  // the view paints the canvas background
    connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::onSelectionChanged);
}

GraphScene::~GraphScene() {
    // Deleting selected items emits selectionChanged; the slot must not run on a
    // half-destroyed scene.
    blockSignals(true);
    clear();
}

void GraphScene::clearGraph() {
    const QSignalBlocker block(this);
    clear();  // deletes every item, the halo included
    nodes_.clear();
    edges_.clear();
    edges_at_.clear();
    drag_line_ = nullptr;
    halo_ = nullptr;
    marked_.clear();
    graph_ = Graph();
    issues_.clear();
    shard_owner_.clear();
    diff_marks_.clear();
    expanded_.clear();
    graph_bounds_ = QRectF();
    has_layout_ = false;
    setSceneRect(QRectF());
    emit nodeSelected(QString());
}

void GraphScene::setGraph(const Graph &graph, const std::vector<Issue> &issues) {
    clearGraph();
    graph_ = graph;
    issues_ = issues;
    for (const OpPtr &op : graph_.operations())
        for (const Shard &s : op->shards) shard_owner_.insert(qs(s.id.value), qs(op->id.value));
}

QString GraphScene::canvasNodeFor(const QString &issue_node) const {
    if (issue_node.isEmpty()) return {};
    if (nodes_.contains(issue_node)) return issue_node;
    return shard_owner_.value(issue_node);
}

NodeItem *GraphScene::makeNodeItem(const QString &id, const QRectF &local) {
    NodeItem *item = nullptr;
    if (const Tensor *t = graph_.find_tensor(TensorId(id.toStdString()))) {
        item = new TensorItem(*t, local);
    } else if (const Operation *op = graph_.find_op(OpId(id.toStdString()))) {
        const OpDef *def = OpLibrary::standard().find(op->kind);
        const bool expanded = !op->shards.empty() && expanded_.contains(id);
        QRectF box = local;
        if (expanded) {
            // Wide enough for the row of shards, tall enough for the name above it.
            const double n = static_cast<double>(op->shards.size());
            const double w = std::max(local.width(), n * ShardItem::kWidth + (n - 1) * ShardItem::kGap + 24);
            const double h = 38 + ShardItem::kHeight + 8;
            box = QRectF(local.center().x() - w / 2, local.center().y() - h / 2, w, h);
        }
        item = new OperationItem(*op, def ? qs(std::string(def->category())) : QString(), box, expanded);
    }
    if (item) {
        item->setFlag(QGraphicsItem::ItemIsMovable, editable_);
        item->setDiffMark(diff_marks_.value(id, DiffMark::none));
    }
    return item;
}

QRectF GraphScene::defaultBox(const Graph &graph, const QString &id) {
    QStringList lines;
    if (const Tensor *t = graph.find_tensor(TensorId(id.toStdString()))) {
        lines << qs(t->name.empty() ? t->id.value : t->name)
              << qs(std::string(dtype_name(t->dtype))) + QLatin1Char(' ') + shapeText(t->shape());
    } else if (const Operation *op = graph.find_op(OpId(id.toStdString()))) {
        lines << qs(op->kind) << qs(op->name.empty() ? op->id.value : op->name);
    }
    qsizetype longest = 0;
    for (const QString &l : lines) longest = std::max(longest, l.size());
    // The layout's estimate (io/graphviz.cpp): Helvetica 11pt, about 6.2pt a character.
    const double w = std::max(54.0, static_cast<double>(longest) * 6.2 + 20.0) * kSceneScale;
    const double h = std::max(28.0, static_cast<double>(lines.size()) * 14.0 + 12.0) * kSceneScale;
    return QRectF(-w / 2, -h / 2, w, h);
}

void GraphScene::setLayout(const Layout &layout) {
    {
        const QSignalBlocker block(this);
        clear();
    }
    nodes_.clear();
    edges_.clear();
    edges_at_.clear();
    halo_ = nullptr;
    drag_line_ = nullptr;
    marked_.clear();

    rerouting_blocked_ = true;
    for (const NodeBox &box : layout.nodes) {
        const QString id = qs(box.id);
        if (nodes_.contains(id)) continue;
        const QRectF local(-box.width * kSceneScale / 2, -box.height * kSceneScale / 2, box.width * kSceneScale,
                           box.height * kSceneScale);
        NodeItem *item = makeNodeItem(id, local);
        if (!item) continue;  // a layout node the graph does not know (stale layout)
        item->setPos(box.x * kSceneScale, box.y * kSceneScale);
        addItem(item);
        nodes_.insert(id, item);
    }

    for (const EdgePath &e : layout.edges) {
        if (e.points.size() < 2) continue;
        const QString from = qs(e.from), to = qs(e.to);
        auto point = [&](size_t i) { return QPointF(e.points[i].first, e.points[i].second) * kSceneScale; };
        QPainterPath path(point(0));
        if ((e.points.size() - 1) % 3 == 0) {
            for (size_t i = 1; i + 2 < e.points.size(); i += 3) path.cubicTo(point(i), point(i + 1), point(i + 2));
        } else {
            for (size_t i = 1; i < e.points.size(); ++i) path.lineTo(point(i));
        }
        // End the arrow on the outline the canvas draws, which may differ from the
        // shape Graphviz routed to. Only the last curve segment is searched (each
        // pointAtPercent on the whole path re-measures it: that made scene
        // building quadratic-looking on big graphs); the whole path only when the
        // last segment starts inside the node already.
        QPainterPath tail = path;
        if ((e.points.size() - 1) % 3 == 0 && e.points.size() > 4) {
            const size_t n = e.points.size();
            tail = QPainterPath(point(n - 4));
            tail.cubicTo(point(n - 3), point(n - 2), point(n - 1));
        }
        double end_t = 1.0;
        if (NodeItem *target = nodes_.value(to)) {
            const QPainterPath outline = target->outline().translated(target->pos());
            if (outline.contains(tail.pointAtPercent(0.0))) tail = path;
            end_t = exitPercent(tail, outline, true);
        }
        const QPointF tip = tail.pointAtPercent(end_t);
        const QPointF before = tail.pointAtPercent(std::max(0.0, end_t - 0.02));
        auto *edge = new EdgeItem(from, to, path, tip, tip - before);
        // Which operation port the edge belongs to.
        if (const Operation *op = graph_.find_op(OpId(e.to))) {
            for (const PortBinding &b : op->inputs)
                for (const TensorSelection &sel : b.selections)
                    if (sel.tensor.value == e.from && edge->port.isEmpty()) edge->port = qs(b.name);
        } else if (const Operation *src = graph_.find_op(OpId(e.from))) {
            for (const PortBinding &b : src->outputs)
                for (const TensorSelection &sel : b.selections)
                    if (sel.tensor.value == e.to && edge->port.isEmpty()) edge->port = qs(b.name);
        }
        addItem(edge);
        edges_.append(edge);
        edges_at_.insert(from, edge);
        edges_at_.insert(to, edge);
    }
    rerouting_blocked_ = false;

    graph_bounds_ = QRectF();
    updateBounds();
    has_layout_ = true;
    applyHealth();
}

void GraphScene::updateBounds() {
    QRectF bounds;
    for (NodeItem *n : std::as_const(nodes_)) bounds |= n->sceneBoundingRect();
    for (EdgeItem *e : std::as_const(edges_)) bounds |= e->sceneBoundingRect();
    graph_bounds_ = bounds;
    // Generous margins so that any node can be centred in the view; the scene
    // only grows while editing, so the view does not jump.
    const double margin = std::max({bounds.width(), bounds.height(), 800.0});
    const QRectF wanted = bounds.adjusted(-margin, -margin, margin, margin);
    setSceneRect(has_layout_ ? sceneRect().united(wanted) : wanted);
}

void GraphScene::removeEdgesOf(const QString &id) {
    const QList<EdgeItem *> mine = edges_at_.values(id);
    for (EdgeItem *e : mine) {
        edges_at_.remove(e->from(), e);
        edges_at_.remove(e->to(), e);
        edges_.removeOne(e);
        removeItem(e);
        delete e;
    }
}

void GraphScene::addEdgesOf(const QString &id, QSet<QString> &done) {
    auto add = [&](const QString &from, const QString &to, const QString &port) {
        const QString key = from + QChar(1) + to + QChar(1) + port;
        if (done.contains(key) || !nodes_.contains(from) || !nodes_.contains(to)) return;
        done.insert(key);
        auto *edge = new EdgeItem(from, to, QPainterPath(), QPointF(), QPointF(0, 1));
        edge->port = port;
        addItem(edge);
        edges_.append(edge);
        edges_at_.insert(from, edge);
        edges_at_.insert(to, edge);
        rerouteEdge(edge);
    };
    auto op_edges = [&](const Operation &op) {
        const QString oid = qs(op.id.value);
        for (const PortBinding &b : op.inputs)
            for (const TensorSelection &sel : b.selections) add(qs(sel.tensor.value), oid, qs(b.name));
        for (const PortBinding &b : op.outputs)
            for (const TensorSelection &sel : b.selections) add(oid, qs(sel.tensor.value), qs(b.name));
    };
    if (const Operation *op = graph_.find_op(OpId(id.toStdString()))) {
        op_edges(*op);
    } else if (graph_.find_tensor(TensorId(id.toStdString()))) {
        const TensorId t(id.toStdString());
        for (const OpId &p : graph_.producers(t)) op_edges(*graph_.find_op(p));
        for (const OpId &c : graph_.consumers(t)) op_edges(*graph_.find_op(c));
    }
}

void GraphScene::rerouteEdge(EdgeItem *edge) {
    NodeItem *from = nodes_.value(edge->from());
    NodeItem *to = nodes_.value(edge->to());
    if (!from || !to) return;
    const bool from_op = from->nodeKind() == NodeKind::operation;
    const QPointF start = from->mapToScene(from->portPos(from_op ? edge->port : QString(), true));
    const QPointF end = to->mapToScene(to->portPos(from_op ? QString() : edge->port, false));
    edge->reroute(start, end);
}

void GraphScene::nodeMoved(NodeItem *item) {
    if (rerouting_blocked_) return;
    const QList<EdgeItem *> mine = edges_at_.values(item->nodeId());
    for (EdgeItem *e : mine) rerouteEdge(e);
    if (marked_ == item->nodeId() && halo_) markNode(marked_);
}

void GraphScene::applyEdit(const Graph &graph, const std::vector<Issue> &issues, const QStringList &touched,
                           const QHash<QString, QPointF> &positions) {
    const QStringList was_selected = selectedNodeIds();
    graph_ = graph;
    issues_ = issues;
    shard_owner_.clear();
    for (const OpPtr &op : graph_.operations())
        for (const Shard &sh : op->shards) shard_owner_.insert(qs(sh.id.value), qs(op->id.value));
    for (auto it = expanded_.begin(); it != expanded_.end();) {
        const Operation *op = graph_.find_op(OpId(it->toStdString()));
        it = op && !op->shards.empty() ? std::next(it) : expanded_.erase(it);
    }

    QHash<QString, QPointF> old_pos;
    {
        const QSignalBlocker block(this);
        for (const QString &id : touched) {
            removeEdgesOf(id);
            if (NodeItem *item = nodes_.take(id)) {
                old_pos.insert(id, item->pos());
                removeItem(item);
                delete item;
            }
            if (marked_ == id) markNode(QString());
        }
    }
    rerouting_blocked_ = true;
    QStringList created;
    // Operations before tensors: a new output tensor is placed below its producer.
    QStringList ordered;
    for (const QString &id : touched)
        if (graph_.find_op(OpId(id.toStdString()))) ordered << id;
    for (const QString &id : touched)
        if (graph_.find_tensor(TensorId(id.toStdString()))) ordered << id;
    for (const QString &id : std::as_const(ordered)) {
        NodeItem *item = makeNodeItem(id, defaultBox(graph_, id));
        if (!item) continue;
        QPointF pos;
        if (positions.contains(id)) {
            pos = positions.value(id);
        } else if (old_pos.contains(id)) {
            pos = old_pos.value(id);
        } else {
            pos = QPointF(0, 0);
            const TensorId tid(id.toStdString());
            if (graph_.find_tensor(tid)) {
                for (const OpId &p : graph_.producers(tid))
                    if (NodeItem *producer = nodes_.value(qs(p.value))) {
                        pos = producer->pos() + QPointF(0, 90);
                        break;
                    }
            }
        }
        item->setPos(pos);
        addItem(item);
        nodes_.insert(id, item);
        created << id;
    }
    rerouting_blocked_ = false;
    QSet<QString> done;
    for (const QString &id : std::as_const(created)) addEdgesOf(id, done);
    has_layout_ = true;
    applyHealth();
    updateBounds();
    {
        const QSignalBlocker block(this);
        for (const QString &id : was_selected)
            if (NodeItem *n = nodes_.value(id)) n->setSelected(true);
    }
    onSelectionChanged();
}

QHash<QString, QPointF> GraphScene::positions() const {
    QHash<QString, QPointF> out;
    for (auto it = nodes_.cbegin(); it != nodes_.cend(); ++it) out.insert(it.key(), it.value()->pos());
    return out;
}

void GraphScene::setPositions(const QHash<QString, QPointF> &positions) {
    for (auto it = positions.cbegin(); it != positions.cend(); ++it)
        if (NodeItem *n = nodes_.value(it.key())) n->setPos(it.value());
    updateBounds();
}

QStringList GraphScene::selectedNodeIds() const {
    QSet<QString> selected;
    for (QGraphicsItem *i : selectedItems())
        if (auto *n = dynamic_cast<NodeItem *>(i)) selected.insert(n->nodeId());
    QStringList out;
    for (const TensorPtr &t : graph_.tensors())
        if (selected.contains(qs(t->id.value))) out << qs(t->id.value);
    for (const OpPtr &op : graph_.operations())
        if (selected.contains(qs(op->id.value))) out << qs(op->id.value);
    return out;
}

void GraphScene::selectNodes(const QStringList &ids) {
    {
        const QSignalBlocker block(this);
        clearSelection();
        for (const QString &id : ids)
            if (NodeItem *n = nodes_.value(id)) n->setSelected(true);
    }
    emit selectionChanged();  // one notification for the whole change
}

PortRef GraphScene::portAt(const QPointF &scene_pos) const {
    const QRectF around(scene_pos - QPointF(10, 10), QSizeF(20, 20));
    for (QGraphicsItem *i : items(around)) {
        auto *n = dynamic_cast<NodeItem *>(i);
        if (!n) continue;
        if (const NodeItem::Port *p = n->portAt(n->mapFromScene(scene_pos)))
            return PortRef{n->nodeId(), p->name, p->output};
    }
    return {};
}

QPointF GraphScene::portScenePos(const PortRef &port) const {
    NodeItem *n = nodes_.value(port.node);
    return n ? n->mapToScene(n->portPos(port.port, port.output)) : QPointF();
}

void GraphScene::setEditable(bool on) {
    editable_ = on;
    for (NodeItem *n : std::as_const(nodes_)) n->setFlag(QGraphicsItem::ItemIsMovable, on);
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent *event) {
    if (editable_ && event->button() == Qt::LeftButton) {
        const PortRef port = portAt(event->scenePos());
        if (port.valid() && port.output) {
            drag_from_ = port;
            drag_line_ = new DragLineItem;
            drag_line_->setPen(QPen(kSelection, 2, Qt::DashLine, Qt::RoundCap));
            drag_line_->setZValue(5);
            addItem(drag_line_);
            event->accept();
            return;
        }
    }
    QGraphicsScene::mousePressEvent(event);
    move_start_.clear();
    if (editable_ && event->button() == Qt::LeftButton)
        for (QGraphicsItem *i : selectedItems())
            if (auto *n = dynamic_cast<NodeItem *>(i)) move_start_.insert(n->nodeId(), n->pos());
}

void GraphScene::mouseMoveEvent(QGraphicsSceneMouseEvent *event) {
    if (drag_line_) {
        const QPointF start = portScenePos(drag_from_);
        const QPointF end = event->scenePos();
        const double bend = std::clamp(std::abs(end.y() - start.y()) * 0.5, 24.0, 120.0);
        QPainterPath path(start);
        path.cubicTo(start + QPointF(0, bend), end - QPointF(0, bend), end);
        drag_line_->setPath(path);
        event->accept();
        return;
    }
    QGraphicsScene::mouseMoveEvent(event);
}

void GraphScene::mouseReleaseEvent(QGraphicsSceneMouseEvent *event) {
    if (drag_line_) {
        removeItem(drag_line_);
        delete drag_line_;
        drag_line_ = nullptr;
        const PortRef from = drag_from_;
        drag_from_ = {};
        const PortRef to = portAt(event->scenePos());
        event->accept();
        if (to.valid() && !(to == from))
            emit connectRequested(from, to);
        else if (!to.valid())
            emit connectionDropped(from, event->scenePos());
        return;
    }
    QGraphicsScene::mouseReleaseEvent(event);
    if (move_start_.isEmpty()) return;
    QHash<QString, QPointF> from, to;
    for (auto it = move_start_.cbegin(); it != move_start_.cend(); ++it) {
        NodeItem *n = nodes_.value(it.key());
        if (!n || n->pos() == it.value()) continue;
        from.insert(it.key(), it.value());
        to.insert(it.key(), n->pos());
    }
    move_start_.clear();
    if (!from.isEmpty()) {
        updateBounds();
        emit nodesMoved(from, to);
    }
}

void GraphScene::applyHealth() {
    QHash<QString, std::pair<NodeHealth, int>> health;
    for (const Issue &issue : issues_) {
        const QString node = canvasNodeFor(qs(issue.node));
        if (node.isEmpty() || issue.severity == Severity::info) continue;
        auto &[h, count] = health[node];
        ++count;
        if (issue.severity == Severity::error)
            h = NodeHealth::error;
        else if (h == NodeHealth::ok)
            h = NodeHealth::warning;
    }
    for (auto it = nodes_.cbegin(); it != nodes_.cend(); ++it) {
        const auto found = health.constFind(it.key());
        if (found == health.cend())
            it.value()->setHealth(NodeHealth::ok, 0);
        else
            it.value()->setHealth(found->first, found->second);
    }
}

bool GraphScene::selectNode(const QString &id) {
    NodeItem *item = nodes_.value(id, nullptr);
    {
        const QSignalBlocker block(this);
        clearSelection();
        if (item) item->setSelected(true);
    }
    emit selectionChanged();
    return item != nullptr || id.isEmpty();
}

QString GraphScene::selectedNodeId() const {
    const QList<QGraphicsItem *> selected = selectedItems();
    if (selected.size() != 1) return {};
    if (auto *n = dynamic_cast<NodeItem *>(selected.front())) return n->nodeId();
    return {};
}

void GraphScene::markNode(const QString &id) {
    if (halo_) {
        removeItem(halo_);
        delete halo_;
        halo_ = nullptr;
    }
    marked_.clear();
    NodeItem *item = nodes_.value(id, nullptr);
    if (!item) return;
    halo_ = new HaloItem(item->mapRectToScene(item->box()));
    addItem(halo_);
    marked_ = id;
}

void GraphScene::onSelectionChanged() {
    QSet<QString> selected;
    for (QGraphicsItem *i : selectedItems())
        if (auto *n = dynamic_cast<NodeItem *>(i)) selected.insert(n->nodeId());
    for (EdgeItem *e : std::as_const(edges_))
        e->setHighlighted(selected.contains(e->from()) || selected.contains(e->to()));
    emit nodeSelected(selected.size() == 1 ? *selected.cbegin() : QString());
}

// ---- stages ----------------------------------------------------------------------

void GraphScene::setDiffMarks(const QHash<QString, DiffMark> &marks) {
    diff_marks_ = marks;
    for (auto it = nodes_.cbegin(); it != nodes_.cend(); ++it)
        it.value()->setDiffMark(diff_marks_.value(it.key(), DiffMark::none));
}

void GraphScene::setDeviceColours(const QHash<QString, QList<QColor>> &colours) {
    if (colours == device_colours_) return;
    device_colours_ = colours;
    update();
}

QStringList GraphScene::shardedOperations() const {
    QStringList out;
    for (const OpPtr &op : graph_.operations())
        if (!op->shards.empty()) out << qs(op->id.value);
    return out;
}

void GraphScene::setShardsExpanded(const QString &op_id, bool expanded) {
    const Operation *op = graph_.find_op(OpId(op_id.toStdString()));
    if (!op || op->shards.empty() || expanded_.contains(op_id) == expanded) return;
    if (expanded)
        expanded_.insert(op_id);
    else
        expanded_.remove(op_id);
    if (!nodes_.contains(op_id)) return;
    // Redrawn in place (same centre), its edges re-routed to the new box.
    const Graph g = graph_;
    const std::vector<Issue> issues = issues_;
    applyEdit(g, issues, {op_id}, {});
}

void GraphScene::setAllShardsExpanded(bool expanded) {
    QStringList touched;
    for (const QString &id : shardedOperations()) {
        if (expanded_.contains(id) == expanded) continue;
        if (expanded)
            expanded_.insert(id);
        else
            expanded_.remove(id);
        if (nodes_.contains(id)) touched << id;
    }
    if (touched.isEmpty()) return;
    const Graph g = graph_;
    const std::vector<Issue> issues = issues_;
    applyEdit(g, issues, touched, {});
}

void GraphScene::contextMenuEvent(QGraphicsSceneContextMenuEvent *event) {
    QString op_id;
    for (QGraphicsItem *i : items(event->scenePos())) {
        QGraphicsItem *top = i->parentItem() ? i->parentItem() : i;
        if (auto *o = dynamic_cast<OperationItem *>(top)) {
            op_id = o->nodeId();
            break;
        }
    }
    const QStringList sharded = shardedOperations();
    if (sharded.isEmpty()) {
        QGraphicsScene::contextMenuEvent(event);
        return;
    }
    QMenu menu;
    const Operation *op = op_id.isEmpty() ? nullptr : graph_.find_op(OpId(op_id.toStdString()));
    if (op && !op->shards.empty()) {
        const bool on = expanded_.contains(op_id);
        menu.addAction(on ? tr("Collapse Shards of %1").arg(op_id)
                          : (op->shards.size() == 1 ? tr("Expand the Shard of %1").arg(op_id)
                                                 : tr("Expand %1 Shards of %2").arg(op->shards.size()).arg(op_id)),
                       this, [this, op_id, on] { setShardsExpanded(op_id, !on); });
        menu.addSeparator();
    }
    menu.addAction(tr("Expand All Sharded Operations"), this, [this] { setAllShardsExpanded(true); });
    menu.addAction(tr("Collapse All Sharded Operations"), this, [this] { setAllShardsExpanded(false); });
    menu.exec(event->screenPos());
    event->accept();
}

}  // namespace tapestry::views
