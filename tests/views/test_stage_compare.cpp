// GUI tests of the side-by-side stage compare (views/stage_compare.h; label gui,
// offscreen) over the MLP: the original and a sharded stage are both laid out
// and drawn; panning or zooming either view moves the other to the same place,
// aligned on the node nearest the centre; un-syncing stops that; changed,
// added and removed nodes are marked. With TAPESTRY_SCREENSHOT_DIR=DIR it saves
// docs/screenshots/studio-stage-compare.png.
#include <QApplication>
#include <QDir>
#include <QSignalSpy>
#include <QTest>
#include <QToolButton>
#include <QWheelEvent>

#include "io/project_file.h"
#include "passes/shard.h"
#include "studio_support.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/stage_compare.h"

using namespace tapestry;
using namespace tapestry::views;
using Side = StageCompareView::Side;

namespace {

Graph load(const char *name) {
    const QString path = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects/" + name + ".tapestry.json";
    LoadResult r = load_project(path.toStdString());
    TAPESTRY_CHECK(r.ok(), "example project does not load");
    return r.graph;
}

QPointF centreOf(const GraphView *v) {
    return v->mapToScene(v->viewport()->rect().center());
}

double distance(const QPointF &a, const QPointF &b) {
    return std::hypot(a.x() - b.x(), a.y() - b.y());
}

// One viewport pixel in scene units, plus rounding of the scroll bars.
double tolerance(const GraphView *v) {
    return 1.5 / v->zoom() + 1.0;
}

}  // namespace

class TestStageCompare : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanup();

    void bothStagesAreLaidOutAndTitled();
    void changedOpsAreMarkedInBothViews();
    void addedAndRemovedNodesAreMarked();
    void panningOneViewMovesTheOther_data();
    void panningOneViewMovesTheOther();
    void zoomingOneViewZoomsTheOther();
    void unsyncStopsFollowing();

private:
    void show(const Graph &left, const Graph &right);

    Graph mlp_;
    Stage original_, sharded_;
    StageCompareView *view_ = nullptr;
};

void TestStageCompare::initTestCase() {
    mlp_ = load("mlp");
    original_ = original_stage(mlp_);
    auto options = parse_shard_options({"fc2:0=4", "fc3:1=2"});
    QVERIFY(options.has_value());
    auto stage = shard(mlp_, *options);
    QVERIFY(stage.has_value());
    sharded_ = *stage;
}

void TestStageCompare::init() {
    view_ = new StageCompareView;
    view_->resize(1100, 640);
    view_->show();
    QVERIFY(QTest::qWaitForWindowExposed(view_));
}

void TestStageCompare::cleanup() {
    delete view_;
    view_ = nullptr;
}

void TestStageCompare::show(const Graph &left, const Graph &right) {
    QSignalSpy ready(view_, &StageCompareView::ready);
    view_->setGraphs(left, "left", right, "right");
    QVERIFY(!view_->isReady());
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 20000);
    QVERIFY(view_->isReady());
}

void TestStageCompare::bothStagesAreLaidOutAndTitled() {
    QSignalSpy ready(view_, &StageCompareView::ready);
    view_->setStages(original_, 0, sharded_, 1);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 20000);
    QCOMPARE(view_->title(Side::left), QString("Stage 0 · original"));
    QCOMPARE(view_->title(Side::right), QString("Stage 1 · shard"));
    for (Side side : {Side::left, Side::right}) {
        GraphScene *s = view_->scene(side);
        QVERIFY(s->hasLayout());
        const Graph &g = side == Side::left ? original_.graph : sharded_.graph;
        QCOMPARE(s->nodeItems().size(), static_cast<qsizetype>(g.node_count()));
        QVERIFY(!s->editable());
        // The whole graph is in view after the layout.
        const QRectF visible = view_->view(side)->mapToScene(view_->view(side)->viewport()->rect()).boundingRect();
        QVERIFY(visible.intersects(s->graphBounds()));
    }
    // Both at one zoom.
    QCOMPARE(view_->view(Side::left)->zoom(), view_->view(Side::right)->zoom());
    auto *right_fc2 = static_cast<OperationItem *>(view_->scene(Side::right)->nodeItem("fc2"));
    QCOMPARE(right_fc2->shardCount(), 4);
}

void TestStageCompare::changedOpsAreMarkedInBothViews() {
    QSignalSpy ready(view_, &StageCompareView::ready);
    view_->setStages(original_, 0, sharded_, 1);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 20000);
    // The widget's own diff of the two graphs is the pass's recorded diff.
    const GraphDelta::Summary recorded = sharded_.diff.summary();
    auto sorted = [](QStringList l) {
        l.sort();
        return l;
    };
    auto listOf = [&](const std::vector<std::string> &ids) {
        QStringList out;
        for (const std::string &id : ids) out << QString::fromStdString(id);
        return sorted(out);
    };
    QCOMPARE(sorted(view_->changedIds()), listOf(recorded.changed));
    QCOMPARE(sorted(view_->addedIds()), listOf(recorded.added));
    QCOMPARE(sorted(view_->removedIds()), listOf(recorded.removed));
    QVERIFY(view_->changedIds().contains("fc2") && view_->changedIds().contains("fc3"));
    for (const QString &id : view_->addedIds()) QCOMPARE(view_->scene(Side::right)->diffMark(id), DiffMark::added);
    for (Side side : {Side::left, Side::right}) {
        QCOMPARE(view_->scene(side)->diffMark("fc2"), DiffMark::changed);
        QCOMPARE(view_->scene(side)->diffMark("fc3"), DiffMark::changed);
        QCOMPARE(view_->scene(side)->nodeItem("fc2")->diffMark(), DiffMark::changed);
        // Every other node of the left graph is unmarked.
        for (NodeItem *item : view_->scene(Side::left)->nodeItems())
            if (!view_->changedIds().contains(item->nodeId()) && !view_->removedIds().contains(item->nodeId()))
                QCOMPARE(view_->scene(side)->diffMark(item->nodeId()), DiffMark::none);
    }
    QCOMPARE(view_->changeOf("fc3"), StageChange::changed);
    QCOMPARE(view_->changeOf("x"), StageChange::none);  // the input is never rewritten

    const QString shots = tapestry::studio::testing::screenshotDir();
    if (!shots.isEmpty()) {
        GraphView *left = view_->view(Side::left);
        left->resetZoom();
        left->zoomOut();
        left->centerOn(view_->scene(Side::left)->nodeItem("fc2")->pos());
        QTest::qWait(50);
        QVERIFY(view_->grab().save(QDir(shots).filePath("studio-stage-compare.png")));
    }
}

void TestStageCompare::addedAndRemovedNodesAreMarked() {
    Graph right = mlp_;
    right.remove_op(OpId("gelu3"));
    right.put_tensor(Tensor{TensorId("scratch"), "scratch", DType::f32, ZRange::of_shape({4, 4}),
                            TensorRole::intermediate, std::nullopt, nullptr});
    show(mlp_, right);
    QCOMPARE(view_->removedIds(), QStringList({"gelu3"}));
    QCOMPARE(view_->addedIds(), QStringList({"scratch"}));
    QVERIFY(view_->changedIds().isEmpty());
    // Added: the canvas's own mark in the right view; removed: an overlay behind
    // the node in the left view, covering it.
    QCOMPARE(view_->scene(Side::right)->diffMark("scratch"), DiffMark::added);
    DiffMarkItem *mark = view_->markItem(Side::left, "gelu3");
    QVERIFY(mark);
    QCOMPARE(mark->scene(), view_->scene(Side::left));
    QCOMPARE(mark->change(), StageChange::removed);
    NodeItem *node = view_->scene(Side::left)->nodeItem("gelu3");
    QVERIFY(mark->sceneBoundingRect().contains(node->sceneBoundingRect().center()));
    QVERIFY(mark->zValue() < node->zValue());
    QVERIFY(!view_->markItem(Side::right, "gelu3"));
    QVERIFY(!view_->markItem(Side::left, "fc1"));
}

void TestStageCompare::panningOneViewMovesTheOther_data() {
    QTest::addColumn<bool>("from_left");
    QTest::addColumn<QString>("node");
    QTest::newRow("left, at relu2") << true << "relu2";
    QTest::newRow("right, at fc3") << false << "fc3";
    QTest::newRow("left, at the input") << true << "x";
}

void TestStageCompare::panningOneViewMovesTheOther() {
    QFETCH(bool, from_left);
    QFETCH(QString, node);
    QSignalSpy ready(view_, &StageCompareView::ready);
    view_->setStages(original_, 0, sharded_, 1);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 20000);
    const Side from = from_left ? Side::left : Side::right, to = from_left ? Side::right : Side::left;
    GraphView *a = view_->view(from), *b = view_->view(to);
    a->resetZoom();  // 100 %: the graph is taller than the view
    const QPointF offset(12, -8);
    a->centerOn(view_->scene(from)->nodeItem(node)->pos() + offset);
    QCOMPARE(view_->lastAnchor(), node);
    QCOMPARE(b->transform(), a->transform());
    const QPointF want =
        view_->scene(to)->nodeItem(node)->pos() + (centreOf(a) - view_->scene(from)->nodeItem(node)->pos());
    QVERIFY2(distance(centreOf(b), want) < tolerance(b), qPrintable(QString("centre (%1, %2), want (%3, %4)")
                                                                        .arg(centreOf(b).x())
                                                                        .arg(centreOf(b).y())
                                                                        .arg(want.x())
                                                                        .arg(want.y())));
}

void TestStageCompare::zoomingOneViewZoomsTheOther() {
    QSignalSpy ready(view_, &StageCompareView::ready);
    view_->setStages(original_, 0, sharded_, 1);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 20000);
    GraphView *left = view_->view(Side::left), *right = view_->view(Side::right);
    left->resetZoom();
    left->centerOn(view_->scene(Side::left)->nodeItem("fc2")->pos());
    const double before = right->zoom();
    // Two wheel notches over the left view's centre.
    const QPointF at = left->viewport()->rect().center();
    for (int i = 0; i < 2; ++i) {
        QWheelEvent wheel(at, left->viewport()->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(left->viewport(), &wheel);
    }
    QVERIFY(left->zoom() > before * 1.2);
    QCOMPARE(right->zoom(), left->zoom());
    QCOMPARE(view_->lastAnchor(), QString("fc2"));
    const QPointF want = view_->scene(Side::right)->nodeItem("fc2")->pos() +
                         (centreOf(left) - view_->scene(Side::left)->nodeItem("fc2")->pos());
    QVERIFY(distance(centreOf(right), want) < tolerance(right));
    // Zoom buttons of the right view drive the left one too.
    right->zoomOut();
    QCOMPARE(left->zoom(), right->zoom());
}

void TestStageCompare::unsyncStopsFollowing() {
    QSignalSpy ready(view_, &StageCompareView::ready);
    view_->setStages(original_, 0, sharded_, 1);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 20000);
    GraphView *left = view_->view(Side::left), *right = view_->view(Side::right);
    left->resetZoom();
    QVERIFY(view_->isSynchronized());

    // The Sync button un-syncs.
    QToolButton *sync = nullptr;
    for (QToolButton *b : view_->findChildren<QToolButton *>())
        if (b->isCheckable()) sync = b;
    QVERIFY(sync && sync->isChecked());
    QSignalSpy toggled(view_, &StageCompareView::synchronizedChanged);
    sync->click();
    QVERIFY(!view_->isSynchronized());
    QCOMPARE(toggled.count(), 1);

    const QPointF right_before = centreOf(right);
    const double right_zoom = right->zoom();
    left->centerOn(view_->scene(Side::left)->nodeItem("y")->pos());
    left->zoomIn();
    QVERIFY(distance(centreOf(right), right_before) < 0.5);
    QCOMPARE(right->zoom(), right_zoom);

    // Syncing again makes the right view catch up at once.
    view_->setSynchronized(true);
    QVERIFY(sync->isChecked());
    QCOMPARE(right->zoom(), left->zoom());
    const QPointF want = view_->scene(Side::right)->nodeItem(view_->lastAnchor())->pos() +
                         (centreOf(left) - view_->scene(Side::left)->nodeItem(view_->lastAnchor())->pos());
    QVERIFY(distance(centreOf(right), want) < tolerance(right));
}

QTEST_MAIN(TestStageCompare)
#include "test_stage_compare.moc"
