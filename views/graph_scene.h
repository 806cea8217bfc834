// The graph canvas model: a QGraphicsScene adapter over an engine Graph laid out
// by Graphviz (DESIGN.md §9). The scene draws what the graph and its layout say;
// it never owns graph truth — it keeps a Graph copy (shared nodes) and ids.
#pragma once

#include <QColor>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QHash>
#include <QList>
#include <QPainterPath>
#include <QSet>
#include <QString>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"
#include "io/graphviz.h"

namespace tapestry::views {

// Scene units per Graphviz point: the layout is in points (1/72 in); the canvas
// draws at roughly screen pixels so that 100 % zoom reads like the rest of the UI.
inline constexpr double kSceneScale = 1.35;

// Below this level of detail (view scale) items draw boxes without text.
inline constexpr double kLabelLevelOfDetail = 0.38;

enum class NodeKind { tensor, operation };

// Worst severity of the issues pinned to a node.
enum class NodeHealth { ok, warning, error };

// How a node differs from the previous stage (the stage timeline's diff colouring):
// added nodes get a green outline and a "new" badge, changed ones an amber outline
// and a "changed" badge. Removed nodes are not on the canvas (their graph no longer
// has them); the Stages dock lists them. `removed` is kept for such lists.
enum class DiffMark { none, added, removed, changed };

// A connection point: an operation's named input or output port, or a tensor's
// value (port "" — out at the bottom, in at the top). Positions are local.
struct PortRef {
    QString node;
    QString port;
    bool output = false;
    bool valid() const { return !node.isEmpty(); }
    friend bool operator==(const PortRef &, const PortRef &) = default;
};

// Base of the two node items: holds the node id (also in data(kNodeIdRole)) and
// its box; tests and the issues panel find items through these.
class NodeItem : public QGraphicsItem {
public:
    static constexpr int kNodeIdRole = 0;
    static constexpr int kNodeKindRole = 1;

    NodeItem(QString id, NodeKind kind, const QRectF &box);

    const QString &nodeId() const { return id_; }
    NodeKind nodeKind() const { return kind_; }
    const QRectF &box() const { return box_; }
    void setBox(const QRectF &box);  // local coordinates, centred on the item's position

    NodeHealth health() const { return health_; }
    void setHealth(NodeHealth health, int issue_count);
    int issueCount() const { return issue_count_; }
    DiffMark diffMark() const { return diff_mark_; }
    void setDiffMark(DiffMark mark);

    struct Port {
        QString name;
        bool output = false;
        QPointF pos;  // local
    };
    const QList<Port> &ports() const { return ports_; }
    // The port within a few pixels of `local`, if any.
    const Port *portAt(const QPointF &local) const;
    // Local position of a port (the box's top/bottom centre when unknown).
    QPointF portPos(const QString &name, bool output) const;

    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    // The outline edges end on, in local coordinates.
    virtual QPainterPath outline() const = 0;

protected:
    // Red (error) or orange (warning) ring, the selection ring, the issue badge and
    // the ports.
    void paintDecorations(QPainter *painter, double level_of_detail) const;
    void setPorts(QList<Port> ports) { ports_ = std::move(ports); }
    QVariant itemChange(GraphicsItemChange change, const QVariant &value) override;
    void hoverMoveEvent(QGraphicsSceneHoverEvent *event) override;

private:
    QList<Port> ports_;
    QString base_tooltip_;
    QString id_;
    NodeKind kind_;
    QRectF box_;
    NodeHealth health_ = NodeHealth::ok;
    int issue_count_ = 0;
    DiffMark diff_mark_ = DiffMark::none;
};

// A tensor: name, dtype and shape; a stripe coloured by role.
class TensorItem : public NodeItem {
public:
    enum { Type = UserType + 1 };
    TensorItem(const Tensor &tensor, const QRectF &box);
    int type() const override { return Type; }
    QPainterPath outline() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

    const QString &title() const { return title_; }
    const QString &detail() const { return detail_; }

private:
    QString title_;   // name
    QString detail_;  // "f32 [64, 256]"
    TensorRole role_;
    QPainterPath stripe_;
    QRectF stripe_box_;
};

// An operation: kind and name in a pill coloured by the kind's category; a
// "×N shards" badge when sharded (collapsed, the default). Expanded, the pill is
// wide enough to hold its shards side by side as ShardItem children.
class OperationItem : public NodeItem {
public:
    enum { Type = UserType + 2 };
    OperationItem(const Operation &op, const QString &category, const QRectF &box, bool expanded = false);
    int type() const override { return Type; }
    QPainterPath outline() const override;
    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

    const QString &kind() const { return kind_; }
    int shardCount() const { return shard_count_; }
    bool expanded() const { return expanded_; }

private:
    QString kind_;
    QString name_;
    QString category_;
    int shard_count_ = 0;
    bool expanded_ = false;
};

// One shard of an expanded operation, drawn inside it: the shard id and its index
// range ("fc1/2", "[256,384)x[0,4096)").
class ShardItem : public QGraphicsItem {
public:
    enum { Type = UserType + 6 };
    static constexpr double kWidth = 150.0, kHeight = 34.0, kGap = 6.0;
    ShardItem(const Shard &shard, const QRectF &box, QGraphicsItem *parent);
    int type() const override { return Type; }
    const QString &shardId() const { return id_; }
    const QString &rangeText() const { return range_; }
    QRectF boundingRect() const override { return box_; }
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QString id_, range_;
    QRectF box_;
};

// A directed edge tensor → operation (an input selection) or operation → tensor
// (an output), drawn through Graphviz's B-spline control points.
class EdgeItem : public QGraphicsItem {
public:
    enum { Type = UserType + 3 };
    EdgeItem(QString from, QString to, const QPainterPath &path, const QPointF &tip, const QPointF &direction);
    int type() const override { return Type; }
    const QString &from() const { return from_; }
    const QString &to() const { return to_; }
    // The operation port at the operation's end ("" for none known).
    QString port;
    // Redraws the edge as a smooth curve from `start` to `end` (scene coordinates).
    void reroute(const QPointF &start, const QPointF &end);
    void setHighlighted(bool on);
    bool highlighted() const { return highlighted_; }

    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QPolygonF arrowHead() const;
    QString from_, to_;
    QPainterPath path_;
    QPointF tip_, direction_;
    bool highlighted_ = false;
};

// The halo marking the node an issue points at.
class HaloItem : public QGraphicsItem {
public:
    enum { Type = UserType + 4 };
    explicit HaloItem(const QRectF &around);
    int type() const override { return Type; }
    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QRectF around_;
};

// The connection being dragged from a port.
class DragLineItem : public QGraphicsPathItem {
public:
    enum { Type = UserType + 5 };
    int type() const override { return Type; }
};

class GraphScene : public QGraphicsScene {
    Q_OBJECT
public:
    explicit GraphScene(QObject *parent = nullptr);
    ~GraphScene() override;

    // ---- editing -----------------------------------------------------------
    // Shows an edited graph without a new layout: removed nodes go, added and
    // changed ones are (re)drawn — at `positions` when given there, else where they
    // were, else beside a neighbour — and the edges of every touched node re-routed.
    void applyEdit(const Graph &graph, const std::vector<Issue> &issues, const QStringList &touched,
                   const QHash<QString, QPointF> &positions);
    // Node centres (scene coordinates).
    QHash<QString, QPointF> positions() const;
    void setPositions(const QHash<QString, QPointF> &positions);
    // Ids of the selected nodes, in graph order.
    QStringList selectedNodeIds() const;
    void selectNodes(const QStringList &ids);
    // The port under a scene point, if any.
    PortRef portAt(const QPointF &scene_pos) const;
    // Scene position of a port.
    QPointF portScenePos(const PortRef &port) const;
    // Default size of a node's box, as the layout would give it.
    static QRectF defaultBox(const Graph &graph, const QString &id);
    bool editable() const { return editable_; }
    void setEditable(bool on);

    // Replaces the graph and its issues; items appear when a layout arrives.
    void setGraph(const Graph &graph, const std::vector<Issue> &issues);
    // Builds the items from a layout of the current graph.
    void setLayout(const Layout &layout);
    void clearGraph();

    const Graph &graph() const { return graph_; }
    bool hasLayout() const { return has_layout_; }

    NodeItem *nodeItem(const QString &id) const { return nodes_.value(id, nullptr); }
    QList<NodeItem *> nodeItems() const { return nodes_.values(); }
    const QList<EdgeItem *> &edgeItems() const { return edges_; }
    // The canvas node an issue's node id refers to (a shard maps to its operation).
    QString canvasNodeFor(const QString &issue_node) const;
    // Bounding rectangle of the node items (empty without a layout).
    QRectF graphBounds() const { return graph_bounds_; }

    // Selects exactly this node (empty: clears); returns false if it is not drawn.
    bool selectNode(const QString &id);
    QString selectedNodeId() const;  // "" unless exactly one node is selected
    // Draws the halo around a node (empty id removes it).
    void markNode(const QString &id);
    QString markedNode() const { return marked_; }

    // ---- stages (the Stages dock) ------------------------------------------
    // Colours nodes by how they differ from the previous stage (replacing the old
    // marks; ids not drawn are kept and applied when their node appears).
    void setDiffMarks(const QHash<QString, DiffMark> &marks);
    const QHash<QString, DiffMark> &diffMarks() const { return diff_marks_; }
    DiffMark diffMark(const QString &id) const { return diff_marks_.value(id, DiffMark::none); }
    // Draws a sharded operation as its shards side by side (expanded) or as one
    // node with a shard-count badge (collapsed, the default). Unsharded ops and
    // unknown ids are ignored; the choice is kept while the op stays in the graph.
    void setShardsExpanded(const QString &op, bool expanded);
    bool shardsExpanded(const QString &op) const { return expanded_.contains(op); }
    void setAllShardsExpanded(bool expanded);
    QStringList shardedOperations() const;

    // ---- devices (the Plan dock) -------------------------------------------
    // Colours nodes by the devices a plan puts them on: an operation or shard id →
    // the colours of the devices holding its pieces, in shard order. An operation
    // draws them as a band along its bottom edge; a shard is filled with its colour.
    void setDeviceColours(const QHash<QString, QList<QColor>> &colours);
    void clearDeviceColours() { setDeviceColours({}); }
    const QHash<QString, QList<QColor>> &deviceColours() const { return device_colours_; }

signals:
    void nodeSelected(const QString &id);  // "" when nothing or several are selected
    // The user dragged a connection from an output to an input port.
    void connectRequested(const PortRef &from, const PortRef &to);
    // The user dragged a connection from an output port and let go over nothing.
    void connectionDropped(const PortRef &from, const QPointF &scene_pos);
    // The user moved nodes (one drag: from → to).
    void nodesMoved(const QHash<QString, QPointF> &from, const QHash<QString, QPointF> &to);

protected:
    void contextMenuEvent(QGraphicsSceneContextMenuEvent *event) override;
    void mousePressEvent(QGraphicsSceneMouseEvent *event) override;
    void mouseMoveEvent(QGraphicsSceneMouseEvent *event) override;
    void mouseReleaseEvent(QGraphicsSceneMouseEvent *event) override;

private:
    friend class NodeItem;
    void onSelectionChanged();
    void applyHealth();
    NodeItem *makeNodeItem(const QString &id, const QRectF &box);
    void addEdgesOf(const QString &id, QSet<QString> &done);
    void removeEdgesOf(const QString &id);
    void rerouteEdge(EdgeItem *edge);
    void nodeMoved(NodeItem *item);
    void updateBounds();

    QMultiHash<QString, EdgeItem *> edges_at_;  // node id → its edges
    bool editable_ = true;
    PortRef drag_from_;
    DragLineItem *drag_line_ = nullptr;
    QHash<QString, QPointF> move_start_;
    bool rerouting_blocked_ = false;

    Graph graph_;
    std::vector<Issue> issues_;
    QHash<QString, QString> shard_owner_;  // shard id → operation id
    QHash<QString, NodeItem *> nodes_;
    QList<EdgeItem *> edges_;
    HaloItem *halo_ = nullptr;
    QString marked_;
    QRectF graph_bounds_;
    bool has_layout_ = false;
    QHash<QString, DiffMark> diff_marks_;
    QSet<QString> expanded_;
    QHash<QString, QList<QColor>> device_colours_;
};

// Category colours shared by the canvas and the inspector.
QColor categoryColor(const QString &category);
QColor roleColor(TensorRole role);

}  // namespace tapestry::views
