// GUI tests of the canvas find bar (label gui, offscreen) on the MLP example laid
// out by Graphviz: matches by op kind, name and tensor dtype/shape; Next and
// Previous cycle in reading order, selecting the node and asking the window to
// reveal it; Select all selects every match with one selection change; text that
// finds nothing says so; the keyboard (Enter, Shift+Enter, Esc, Ctrl+F, F3) drives
// the bar; refresh() follows a changed graph.
#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QTest>
#include <QToolButton>
#include <QVBoxLayout>

#include "io/graphviz.h"
#include "io/project_file.h"
#include "views/find_bar.h"
#include "views/graph_scene.h"

using namespace tapestry;
using namespace tapestry::views;

Q_DECLARE_METATYPE(tapestry::views::FindScope)

namespace {

QString mlpPath() {
    return qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + QStringLiteral("/projects/mlp.tapestry.json");
}

bool buildScene(GraphScene &scene, const Graph &g) {
    auto layout = layout_graph(g);
    if (!layout) return false;
    scene.setGraph(g, {});
    scene.setLayout(*layout);
    return true;
}

QSet<QString> selectedIds(const GraphScene &scene) {
    QSet<QString> ids;
    for (QGraphicsItem *i : scene.selectedItems())
        if (auto *n = dynamic_cast<NodeItem *>(i)) ids.insert(n->nodeId());
    return ids;
}

QSet<QString> setOf(const QStringList &l) {
    return QSet<QString>(l.begin(), l.end());
}

}  // namespace

class TestFindBar : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();

    void opKindLinearCyclesFc1ToFc4InReadingOrder();
    void previousGoesBackwardsAndWraps();
    void selectAllSelectsEveryMatchInOneChange();
    void scopesDecideWhatMatches_data();
    void scopesDecideWhatMatches();
    void nonsenseSaysNoMatchesInAnErrorTint();
    void keyboardDrivesTheBar();
    void ctrlFAndF3WorkFromTheWindow();
    void refreshFollowsAChangedGraph();

private:
    Graph mlp_;
    GraphScene scene_;
};

void TestFindBar::initTestCase() {
    QVERIFY2(!qEnvironmentVariable("TAPESTRY_SOURCE_DIR").isEmpty(), "TAPESTRY_SOURCE_DIR must name the repository");
    LoadResult loaded = load_project(mlpPath().toStdString());
    QVERIFY2(loaded.ok(), qPrintable(mlpPath()));
    mlp_ = loaded.graph;
    QVERIFY(buildScene(scene_, mlp_));
    QCOMPARE(scene_.nodeItems().size(), static_cast<qsizetype>(mlp_.node_count()));
}

void TestFindBar::init() {
    scene_.clearSelection();
}

void TestFindBar::opKindLinearCyclesFc1ToFc4InReadingOrder() {
    FindBar bar(&scene_);
    QSignalSpy reveal(&bar, &FindBar::revealRequested);
    bar.setScope(FindScope::op_kind);
    bar.setText(QStringLiteral("linear"));
    const QStringList expected{"fc1", "fc2", "fc3", "fc4"};
    QCOMPARE(bar.matches(), expected);
    QCOMPARE(bar.statusLabel()->text(), QStringLiteral("4 matches"));

    // The layout really is top to bottom: each match lies below the previous one.
    for (int i = 1; i < 4; ++i)
        QVERIFY(scene_.nodeItem(expected[i])->pos().y() > scene_.nodeItem(expected[i - 1])->pos().y());

    const QStringList cycle{"fc1", "fc2", "fc3", "fc4", "fc1"};
    for (int i = 0; i < cycle.size(); ++i) {
        bar.findNext();
        QCOMPARE(scene_.selectedNodeId(), cycle[i]);
        QCOMPARE(reveal.count(), i + 1);
        QCOMPARE(reveal.last().at(0).toString(), cycle[i]);
        QCOMPARE(bar.statusLabel()->text(), QStringLiteral("%1 of 4").arg(i % 4 + 1));
    }
}

void TestFindBar::previousGoesBackwardsAndWraps() {
    FindBar bar(&scene_);
    bar.setScope(FindScope::op_kind);
    bar.setText(QStringLiteral("linear"));
    bar.findPrevious();  // before any step, Previous starts from the last match
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc4"));
    bar.findPrevious();
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc3"));
    bar.findNext();
    bar.findNext();
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc1"));  // wrapped forwards
    bar.findPrevious();
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc4"));  // and backwards
}

void TestFindBar::selectAllSelectsEveryMatchInOneChange() {
    FindBar bar(&scene_);
    scene_.selectNode(QStringLiteral("x"));  // replaced by the matches
    bar.setScope(FindScope::op_kind);
    bar.setText(QStringLiteral("linear"));
    QSignalSpy changes(&scene_, &QGraphicsScene::selectionChanged);
    QSignalSpy selected(&bar, &FindBar::matchesSelected);
    QTest::mouseClick(bar.selectAllButton(), Qt::LeftButton);
    QCOMPARE(selectedIds(scene_), (QSet<QString>{"fc1", "fc2", "fc3", "fc4"}));
    QCOMPARE(changes.count(), 1);
    QCOMPARE(selected.count(), 1);
    // The canvas highlights the edges of every selected node.
    int highlighted = 0;
    for (const EdgeItem *e : scene_.edgeItems()) highlighted += e->highlighted() ? 1 : 0;
    QCOMPARE(highlighted, 4 * 4);  // x, w and bias in, y out of each linear; no edge joins two of them
}

void TestFindBar::scopesDecideWhatMatches_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<FindScope>("scope");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("bias: the 4 bias tensors")
        << QStringLiteral("bias") << FindScope::all << QStringList{"b1", "b2", "b3", "b4"};
    QTest::newRow("BIAS, case-insensitive")
        << QStringLiteral("BIAS") << FindScope::name << QStringList{"b1", "b2", "b3", "b4"};
    QTest::newRow("bias is no op kind") << QStringLiteral("bias") << FindScope::op_kind << QStringList{};
    QTest::newRow("name fc1: op and its tensors")
        << QStringLiteral("fc1") << FindScope::name << QStringList{"fc1", "w1", "b1", "h1"};
    QTest::newRow("gelu in all: ops and their outputs")
        << QStringLiteral("gelu") << FindScope::all << QStringList{"gelu1", "gelu3", "a1", "a3"};
    QTest::newRow("gelu as op kind") << QStringLiteral("gelu") << FindScope::op_kind << QStringList{"gelu1", "gelu3"};
    QTest::newRow("tensor shape") << QStringLiteral("[512, 4096]") << FindScope::tensor
                                  << QStringList{"h1", "a1", "h2", "a2", "h3", "a3"};
    QTest::newRow("tensor dtype") << QStringLiteral("f32") << FindScope::tensor
                                  << QStringList{"x",  "w1", "b1", "h1", "a1", "w2", "b2", "h2",
                                                 "a2", "w3", "b3", "h3", "a3", "w4", "b4", "y"};
    QTest::newRow("tensor scope skips ops") << QStringLiteral("relu") << FindScope::tensor << QStringList{"a2"};
}

void TestFindBar::scopesDecideWhatMatches() {
    QFETCH(QString, text);
    QFETCH(FindScope, scope);
    QFETCH(QStringList, expected);
    FindBar bar(&scene_);
    bar.setScope(scope);
    bar.setText(text);
    QCOMPARE(setOf(bar.matches()), setOf(expected));
    QCOMPARE(bar.matches().size(), expected.size());
    QCOMPARE(find_nodes(scene_, text, scope), bar.matches());
    // Operations first; then, among matches as good as each other (all of each
    // kind in these rows), reading order: never upwards, left to right within a rank.
    for (qsizetype i = 1; i < bar.matches().size(); ++i) {
        const NodeItem *first = scene_.nodeItem(bar.matches()[i - 1]), *second = scene_.nodeItem(bar.matches()[i]);
        QVERIFY(!(first->nodeKind() == NodeKind::tensor && second->nodeKind() == NodeKind::operation));
        if (first->nodeKind() != second->nodeKind()) continue;
        const QPointF a = first->pos(), b = second->pos();
        QVERIFY(qRound(a.y()) < qRound(b.y()) || (qRound(a.y()) == qRound(b.y()) && a.x() <= b.x()));
    }
}

void TestFindBar::nonsenseSaysNoMatchesInAnErrorTint() {
    FindBar bar(&scene_);
    QSignalSpy reveal(&bar, &FindBar::revealRequested);
    bar.setText(QStringLiteral("linear"));
    QVERIFY(!bar.hasNoMatches());
    QVERIFY(bar.lineEdit()->styleSheet().isEmpty());
    bar.setText(QStringLiteral("qwertyuiop"));
    QVERIFY(bar.matches().isEmpty());
    QCOMPARE(bar.statusLabel()->text(), QStringLiteral("No matches"));
    QVERIFY(bar.hasNoMatches());
    QVERIFY(bar.lineEdit()->property("noMatches").toBool());
    QVERIFY(bar.lineEdit()->styleSheet().contains(QStringLiteral("background")));
    QVERIFY(!bar.nextButton()->isEnabled());
    QVERIFY(!bar.selectAllButton()->isEnabled());
    bar.findNext();
    QCOMPARE(reveal.count(), 0);
    QCOMPARE(scene_.selectedItems().size(), 0);
    // Clearing the text clears the tint and the status.
    bar.setText(QString());
    QVERIFY(!bar.hasNoMatches());
    QVERIFY(bar.lineEdit()->styleSheet().isEmpty());
    QCOMPARE(bar.statusLabel()->text(), QString());
}

void TestFindBar::keyboardDrivesTheBar() {
    FindBar bar(&scene_);
    bar.show();
    QVERIFY(QTest::qWaitForWindowExposed(&bar));
    QSignalSpy closed(&bar, &FindBar::closed);
    bar.setScope(FindScope::op_kind);
    bar.lineEdit()->setFocus();
    QTest::keyClicks(bar.lineEdit(), QStringLiteral("linear"));
    QCOMPARE(bar.matches().size(), 4);
    QTest::keyClick(bar.lineEdit(), Qt::Key_Return);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc1"));
    QTest::keyClick(bar.lineEdit(), Qt::Key_Enter);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc2"));
    QTest::keyClick(bar.lineEdit(), Qt::Key_Return, Qt::ShiftModifier);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc1"));
    // F3 works inside the bar even when no window action owns it.
    QTest::keyClick(bar.lineEdit(), Qt::Key_F3);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc2"));
    QTest::keyClick(bar.lineEdit(), Qt::Key_F3, Qt::ShiftModifier);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc1"));
    QTest::keyClick(bar.lineEdit(), Qt::Key_Escape);
    QVERIFY(bar.isHidden());
    QCOMPARE(closed.count(), 1);
}

void TestFindBar::ctrlFAndF3WorkFromTheWindow() {
    QWidget window;
    auto *layout = new QVBoxLayout(&window);
    auto *bar = new FindBar(&window);
    bar->setScene(&scene_);
    auto *canvas = new QLineEdit(&window);  // stands in for the canvas holding the focus
    layout->addWidget(bar);
    layout->addWidget(canvas);
    window.addAction(bar->findAction());
    window.addAction(bar->findNextAction());
    window.addAction(bar->findPreviousAction());
    bar->hide();
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    canvas->setFocus();
    QVERIFY(bar->isHidden());

    QTest::keyClick(canvas, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(bar->isVisible());
    QVERIFY(bar->lineEdit()->hasFocus());
    bar->setScope(FindScope::op_kind);
    QTest::keyClicks(bar->lineEdit(), QStringLiteral("linear"));

    canvas->setFocus();
    QTest::keyClick(canvas, Qt::Key_F3);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc1"));
    QTest::keyClick(canvas, Qt::Key_F3);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc2"));
    QTest::keyClick(canvas, Qt::Key_F3, Qt::ShiftModifier);
    QCOMPARE(scene_.selectedNodeId(), QStringLiteral("fc1"));

    // Ctrl+F again selects the text, ready to be replaced.
    canvas->setFocus();
    QTest::keyClick(canvas, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(bar->lineEdit()->hasFocus());
    QCOMPARE(bar->lineEdit()->selectedText(), QStringLiteral("linear"));
}

void TestFindBar::refreshFollowsAChangedGraph() {
    GraphScene scene;
    QVERIFY(buildScene(scene, mlp_));
    FindBar bar(&scene);
    bar.setScope(FindScope::op_kind);
    bar.setText(QStringLiteral("linear"));
    bar.findNext();
    bar.findNext();
    QCOMPARE(bar.currentMatch(), QStringLiteral("fc2"));

    // fc4 and its output disappear; fc2 stays the current match.
    Graph smaller = mlp_;
    QVERIFY(smaller.remove_op(OpId("fc4")));
    QVERIFY(buildScene(scene, smaller));
    bar.refresh();
    QCOMPARE(bar.matches(), (QStringList{"fc1", "fc2", "fc3"}));
    QCOMPARE(bar.currentMatch(), QStringLiteral("fc2"));
    QCOMPARE(bar.statusLabel()->text(), QStringLiteral("2 of 3"));
    bar.findNext();
    bar.findNext();
    QCOMPARE(scene.selectedNodeId(), QStringLiteral("fc1"));  // wraps after fc3 now

    // A graph without the current match: the search restarts from the top.
    Graph no_fc1 = smaller;
    QVERIFY(no_fc1.remove_op(OpId("fc1")));
    QVERIFY(buildScene(scene, no_fc1));
    bar.refresh();
    QCOMPARE(bar.currentIndex(), -1);
    QCOMPARE(bar.statusLabel()->text(), QStringLiteral("2 matches"));
}

QTEST_MAIN(TestFindBar)
#include "test_find_bar.moc"
