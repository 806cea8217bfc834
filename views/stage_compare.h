// Side-by-side compare of two pipeline stages (issue 5, DESIGN.md §9): two
// read-only canvases, each laid out off the GUI thread, with synchronized pan and
// zoom and the nodes added, removed or changed between them marked.
//
// Synchronization rule: when one view scrolls or zooms, the other takes the same
// zoom, and its centre is placed relative to the *anchor* — the node present in
// both graphs whose centre is nearest the moved view's centre — exactly as the
// moved view's centre sits relative to that node. Layouts of two stages differ,
// so aligning on a shared node keeps "the same place in the graph" side by side;
// when the graphs share no node the same scene point is centred. Syncing can be
// switched off (the "Sync" button or setSynchronized(false)).
//
// Marking: ids only in the right graph are "added" (green, in the right view),
// ids in both whose node differs are "changed" (amber, in both) — drawn by the
// canvas's own diff colouring (GraphScene::setDiffMarks); ids only in the left
// are "removed" (red, dashed, in the left view), drawn by this widget as a
// DiffMarkItem behind the node, since the canvas has no mark for those.
#pragma once

#include <QGraphicsItem>
#include <QHash>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "graph/graph.h"
#include "io/graphviz.h"
#include "passes/stage.h"

class QLabel;
class QToolButton;

namespace tapestry::views {

class GraphScene;
class GraphView;
class LayoutWorker;

enum class StageChange { none, added, removed, changed };

// The mark behind a node that differs between the two compared stages.
class DiffMarkItem : public QGraphicsItem {
public:
    enum { Type = UserType + 40 };
    DiffMarkItem(QString node, StageChange change, const QRectF &around);
    int type() const override { return Type; }
    const QString &nodeId() const { return node_; }
    StageChange change() const { return change_; }
    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;
    static QColor colorOf(StageChange change);

private:
    QString node_;
    StageChange change_;
    QRectF rect_;
};

class StageCompareView : public QWidget {
    Q_OBJECT
public:
    enum class Side { left, right };

    explicit StageCompareView(QWidget *parent = nullptr);
    ~StageCompareView() override;

    // Shows two graphs (copies sharing nodes are kept) under the given titles and
    // starts their layouts; ready() follows when both are drawn.
    void setGraphs(const Graph &left, const QString &left_title, const Graph &right, const QString &right_title);
    // The same for two stages of a pipeline, titled "Stage 1 · shard".
    void setStages(const Stage &left, int left_number, const Stage &right, int right_number);
    static QString stageTitle(const Stage &stage, int number);
    void clear();

    // Both layouts arrived and the views show them.
    bool isReady() const { return ready_[0] && ready_[1]; }
    QString title(Side side) const;
    GraphView *view(Side side) const;
    GraphScene *scene(Side side) const;

    bool isSynchronized() const { return synchronized_; }
    // The anchor node of the last synchronization ("" when none was shared).
    QString lastAnchor() const { return last_anchor_; }

    // Ids added (right only), removed (left only) and changed (in both, differing),
    // in graph order.
    const QStringList &addedIds() const { return added_; }
    const QStringList &removedIds() const { return removed_; }
    const QStringList &changedIds() const { return changed_; }
    StageChange changeOf(const QString &id) const { return changes_.value(id, StageChange::none); }
    // The removed-node mark drawn behind a node of the left view (null when none;
    // added/changed nodes are marked through GraphScene::diffMark()).
    DiffMarkItem *markItem(Side side, const QString &id) const;

public slots:
    void setSynchronized(bool on);
    // Makes the other view follow `side` now (what scrolling `side` does when synced).
    void syncFrom(Side side);

signals:
    void ready();
    void layoutFailed(const QString &message);
    void synchronizedChanged(bool on);

private:
    struct Pane {
        QLabel *title = nullptr;
        GraphView *view = nullptr;
        GraphScene *scene = nullptr;
        LayoutWorker *layout = nullptr;
        quint64 job = 0;
        QHash<QString, DiffMarkItem *> marks;
    };
    Pane &pane(Side side) { return panes_[side == Side::left ? 0 : 1]; }
    const Pane &pane(Side side) const { return panes_[side == Side::left ? 0 : 1]; }
    void computeDiff();
    void onLayout(Side side, quint64 job, const Layout &layout);
    void addMarks(Side side);
    void showBoth();
    void refreshSummary();
    QString nearestSharedNode(Side side, const QPointF &scene_pos) const;

    Pane panes_[2];
    bool ready_[2] = {false, false};
    QLabel *summary_ = nullptr;
    QToolButton *sync_button_ = nullptr;
    bool synchronized_ = true;
    bool syncing_ = false;
    QString last_anchor_;
    QStringList added_, removed_, changed_;
    QHash<QString, StageChange> changes_;
};

}  // namespace tapestry::views
