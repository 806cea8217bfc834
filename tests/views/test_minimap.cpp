// GUI tests of the canvas minimap (label gui, offscreen) over the MLP example:
// the frame is the main view's visible scene rectangle and follows scrolling;
// clicking or dragging centres the main view on the point under the mouse; the
// minimap selects nothing; the cached overview is re-rendered when the scene
// changes, not when the main view scrolls; a new layout refits it.
#include <QApplication>
#include <QImage>
#include <QMouseEvent>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>

#include "io/graphviz.h"
#include "io/project_file.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/minimap.h"

using namespace tapestry;
using namespace tapestry::views;

namespace {

bool buildScene(GraphScene &scene, const Graph &g) {
    auto layout = layout_graph(g);
    if (!layout) return false;
    scene.setGraph(g, {});
    scene.setLayout(*layout);
    return true;
}

// Scene point at the centre of the main view's viewport.
QPointF mainCentre(const QGraphicsView &view) {
    return view.mapToScene(view.viewport()->rect().center());
}

double distance(const QPointF &a, const QPointF &b) {
    return std::hypot(a.x() - b.x(), a.y() - b.y());
}

void sendMove(QWidget *w, const QPoint &pos, Qt::MouseButtons buttons) {
    QMouseEvent move(QEvent::MouseMove, QPointF(pos), QPointF(w->mapToGlobal(pos)), Qt::NoButton, buttons,
                     Qt::NoModifier);
    QApplication::sendEvent(w, &move);
}

}  // namespace

class TestMinimap : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanup();

    void frameIsTheMainViewportAndFollowsScrolling();
    void clickCentresTheMainViewThere_data();
    void clickCentresTheMainViewThere();
    void dragKeepsCentringTheMainView();
    void clicksSelectNothing();
    void scrollingMovesTheFrameWithoutReRendering();
    void sceneChangesReRenderTheOverview();
    void newLayoutRefits();

private:
    // The minimap's viewport point over a scene point, and its tolerance in scene
    // units (one minimap pixel, plus rounding of the main view's scroll bars).
    QPoint minimapPointOf(const QPointF &scene_point) const { return minimap_->mapFromScene(scene_point); }
    double tolerance() const { return 1.5 / minimap_->transform().m11() + 2.0; }

    Graph mlp_;
    GraphScene *scene_ = nullptr;
    GraphView *main_ = nullptr;
    Minimap *minimap_ = nullptr;
};

void TestMinimap::initTestCase() {
    const QString path = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + QStringLiteral("/projects/mlp.tapestry.json");
    LoadResult loaded = load_project(path.toStdString());
    QVERIFY2(loaded.ok(), qPrintable(path));
    mlp_ = loaded.graph;
}

void TestMinimap::init() {
    scene_ = new GraphScene;
    QVERIFY(buildScene(*scene_, mlp_));
    main_ = new GraphView;
    main_->setScene(scene_);
    main_->resize(420, 300);
    main_->show();
    QVERIFY(QTest::qWaitForWindowExposed(main_));
    main_->resetZoom();  // 100 %: the graph is bigger than the view
    minimap_ = new Minimap(main_);
    minimap_->resize(200, 260);
    minimap_->show();
    QVERIFY(QTest::qWaitForWindowExposed(minimap_));
    QCoreApplication::processEvents();
}

void TestMinimap::cleanup() {
    delete minimap_;
    delete main_;
    delete scene_;
    minimap_ = nullptr;
    main_ = nullptr;
    scene_ = nullptr;
}

void TestMinimap::frameIsTheMainViewportAndFollowsScrolling() {
    QCOMPARE(minimap_->frameRect(), main_->mapToScene(main_->viewport()->rect()).boundingRect());
    // The overview shows the whole graph.
    QVERIFY(minimap_->mapToScene(minimap_->viewport()->rect()).boundingRect().contains(scene_->graphBounds()));
    QVERIFY(main_->verticalScrollBar()->maximum() > 0);

    const QRectF before = minimap_->frameRect();
    main_->verticalScrollBar()->setValue(main_->verticalScrollBar()->value() + 150);
    main_->horizontalScrollBar()->setValue(main_->horizontalScrollBar()->value() - 40);
    const QRectF after = minimap_->frameRect();
    QCOMPARE(after, main_->mapToScene(main_->viewport()->rect()).boundingRect());
    QVERIFY(qAbs(after.top() - before.top() - 150) < 1.0);
    QVERIFY(qAbs(after.left() - before.left() + 40) < 1.0);

    // The frame is drawn: its centre is tinted compared with the bare overview.
    main_->centerOn(scene_->nodeItem(QStringLiteral("fc2"))->pos());
    QCoreApplication::processEvents();
    const QImage shown = minimap_->viewport()->grab().toImage();
    const QImage bare =
        Minimap::renderOverview(*scene_, minimap_->mapToScene(minimap_->viewport()->rect()).boundingRect(),
                                minimap_->viewport()->size(), shown.devicePixelRatio());
    const QRect frame = minimap_->mapFromScene(minimap_->frameRect()).boundingRect();
    const QPoint inside = frame.center() + QPoint(0, frame.height() / 4);
    QVERIFY(minimap_->viewport()->rect().contains(inside));
    const QColor tinted = shown.pixelColor(inside), plain = bare.pixelColor(inside);
    QVERIFY2(tinted != plain && tinted.blue() - tinted.red() > plain.blue() - plain.red(),
             qPrintable(QStringLiteral("frame fill %1 over %2").arg(tinted.name(), plain.name())));
}

void TestMinimap::clickCentresTheMainViewThere_data() {
    QTest::addColumn<QString>("node");
    QTest::newRow("top: the input") << QStringLiteral("x");
    QTest::newRow("middle: fc2") << QStringLiteral("fc2");
    QTest::newRow("bottom: the logits") << QStringLiteral("y");
}

void TestMinimap::clickCentresTheMainViewThere() {
    QFETCH(QString, node);
    const QPointF target = scene_->nodeItem(node)->pos();
    const QPoint at = minimapPointOf(target);
    QVERIFY(minimap_->viewport()->rect().contains(at));
    QTest::mouseClick(minimap_->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    const QPointF centre = mainCentre(*main_);
    QVERIFY2(distance(centre, minimap_->mapToScene(at)) < tolerance(),
             qPrintable(QStringLiteral("main view centred at (%1, %2), clicked (%3, %4)")
                            .arg(centre.x())
                            .arg(centre.y())
                            .arg(minimap_->mapToScene(at).x())
                            .arg(minimap_->mapToScene(at).y())));
    QVERIFY(distance(centre, target) < tolerance());
    // The node is now in the main view, and the frame moved with it.
    QVERIFY(main_->mapToScene(main_->viewport()->rect()).boundingRect().contains(target));
    QVERIFY(minimap_->frameRect().contains(target));
}

void TestMinimap::dragKeepsCentringTheMainView() {
    const QPoint from = minimapPointOf(scene_->nodeItem(QStringLiteral("x"))->pos());
    const QPoint to = minimapPointOf(scene_->nodeItem(QStringLiteral("fc3"))->pos());
    QWidget *vp = minimap_->viewport();
    QTest::mousePress(vp, Qt::LeftButton, Qt::NoModifier, from);
    QVERIFY(distance(mainCentre(*main_), minimap_->mapToScene(from)) < tolerance());
    const QPoint mid = (from + to) / 2;
    sendMove(vp, mid, Qt::LeftButton);
    QVERIFY(distance(mainCentre(*main_), minimap_->mapToScene(mid)) < tolerance());
    sendMove(vp, to, Qt::LeftButton);
    QVERIFY(distance(mainCentre(*main_), minimap_->mapToScene(to)) < tolerance());
    QTest::mouseRelease(vp, Qt::LeftButton, Qt::NoModifier, to);
    // Moving without the button does not move the main view.
    const QPointF rest = mainCentre(*main_);
    sendMove(vp, from, Qt::NoButton);
    QVERIFY(distance(mainCentre(*main_), rest) < 1.0);
}

void TestMinimap::clicksSelectNothing() {
    QTest::mouseClick(minimap_->viewport(), Qt::LeftButton, Qt::NoModifier,
                      minimapPointOf(scene_->nodeItem(QStringLiteral("fc1"))->pos()));
    QCOMPARE(scene_->selectedItems().size(), 0);
    QVERIFY(!minimap_->isInteractive());
}

void TestMinimap::scrollingMovesTheFrameWithoutReRendering() {
    QTRY_VERIFY(minimap_->renderCount() > 0);
    QTest::qWait(200);  // let any pending re-render run
    const int renders = minimap_->renderCount();
    for (int i = 0; i < 5; ++i) {
        main_->verticalScrollBar()->setValue(main_->verticalScrollBar()->value() + 30);
        QCoreApplication::processEvents();
    }
    main_->zoomOut();
    QCoreApplication::processEvents();
    QTest::qWait(200);
    QCOMPARE(minimap_->renderCount(), renders);
    QCOMPARE(minimap_->frameRect(), main_->mapToScene(main_->viewport()->rect()).boundingRect());
}

void TestMinimap::sceneChangesReRenderTheOverview() {
    QTest::qWait(200);
    const int renders = minimap_->renderCount();
    NodeItem *fc2 = scene_->nodeItem(QStringLiteral("fc2"));
    const QPoint at = minimapPointOf(fc2->pos());
    const QColor before = minimap_->viewport()->grab().toImage().pixelColor(at);

    scene_->selectNode(QStringLiteral("fc2"));
    QTRY_VERIFY(minimap_->renderCount() > renders);
    QTRY_VERIFY(minimap_->viewport()->grab().toImage().pixelColor(at) != before);  // drawn in the selection colour

    // An item moved by an edit repaints it in every view: the minimap notices.
    const int after_select = minimap_->renderCount();
    fc2->setPos(fc2->pos() + QPointF(0, 40));
    QTRY_VERIFY(minimap_->renderCount() > after_select);
}

void TestMinimap::newLayoutRefits() {
    // A graph twice as tall (two MLPs one after the other) makes the overview
    // zoom out to keep showing all of it.
    const double scale_before = minimap_->transform().m11();
    Graph longer = mlp_;
    for (const TensorPtr &t : mlp_.tensors()) {
        Tensor copy = *t;
        copy.id = TensorId(t->id.value + "_2");
        if (t->id.value == "x") copy.id = TensorId("y");  // the second MLP reads the first's logits
        if (t->id.value != "x") longer.put_tensor(copy);
    }
    for (const OpPtr &op : mlp_.operations()) {
        Operation copy = *op;
        copy.id = OpId(op->id.value + "_2");
        copy.shards.clear();
        for (std::vector<PortBinding> *ports : {&copy.inputs, &copy.outputs})
            for (PortBinding &p : *ports)
                for (TensorSelection &s : p.selections)
                    s.tensor = TensorId(s.tensor.value == "x" ? std::string("y") : s.tensor.value + "_2");
        longer.put_op(copy);
    }
    QVERIFY(buildScene(*scene_, longer));
    QCoreApplication::processEvents();
    QVERIFY(minimap_->mapToScene(minimap_->viewport()->rect()).boundingRect().contains(scene_->graphBounds()));
    QVERIFY(minimap_->transform().m11() < scale_before * 0.8);
    QTRY_VERIFY(!minimap_->frameRect().isEmpty());
}

QTEST_MAIN(TestMinimap)
#include "test_minimap.moc"
