// The graph canvas model: a QGraphicsScene adapter over an engine Graph laid out
// by Graphviz (DESIGN.md §9). The scene draws what the graph and its layout say;
// it never owns graph truth — it keeps a Graph copy (shared nodes) and ids.
#pragma once

#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QHash>
#include <QPainterPath>
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

    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    // The outline edges end on, in local coordinates.
    virtual QPainterPath outline() const = 0;

protected:
    // Red (error) or orange (warning) ring, the selection ring and the issue badge.
    void paintDecorations(QPainter *painter, double level_of_detail) const;

private:
    QString id_;
    NodeKind kind_;
    QRectF box_;
    NodeHealth health_ = NodeHealth::ok;
    int issue_count_ = 0;
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
};

// An operation: kind and name in a pill coloured by the kind's category; a shard
// count badge when sharded.
class OperationItem : public NodeItem {
public:
    enum { Type = UserType + 2 };
    OperationItem(const Operation &op, const QString &category, const QRectF &box);
    int type() const override { return Type; }
    QPainterPath outline() const override;
    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

    const QString &kind() const { return kind_; }
    int shardCount() const { return shard_count_; }

private:
    QString kind_;
    QString name_;
    QString category_;
    int shard_count_ = 0;
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

class GraphScene : public QGraphicsScene {
    Q_OBJECT
public:
    explicit GraphScene(QObject *parent = nullptr);
    ~GraphScene() override;

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

signals:
    void nodeSelected(const QString &id);  // "" when nothing or several are selected

private:
    void onSelectionChanged();
    void applyHealth();

    Graph graph_;
    std::vector<Issue> issues_;
    QHash<QString, QString> shard_owner_;  // shard id → operation id
    QHash<QString, NodeItem *> nodes_;
    QList<EdgeItem *> edges_;
    HaloItem *halo_ = nullptr;
    QString marked_;
    QRectF graph_bounds_;
    bool has_layout_ = false;
};

// Category colours shared by the canvas and the inspector.
QColor categoryColor(const QString &category);
QColor roleColor(TensorRole role);

}  // namespace tapestry::views
