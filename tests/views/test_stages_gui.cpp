// The Stages dock driven through the real window (issue 5): the MLP sharded 4-way
// on the batch dim with a numeric certificate, stepping back and forth with
// Alt+Left / Alt+Right, diff colouring, expanding a sharded op into its shards,
// applying the stage as one undo step, the stages kept in the session and listed
// again on reopening; a bad spec refused with its message; Cancel back to idle.
#include <QAbstractItemView>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QUndoStack>
#include <QtTest/QtTest>

#include "app/studio/main_window.h"
#include "io/project_file.h"
#include "store/session.h"
#include "studio_support.h"
#include "views/graph_document.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/shard_map.h"
#include "views/stage_compare.h"
#include "views/stage_timeline.h"

using namespace tapestry;
using namespace tapestry::views;
using tapestry::studio::MainWindow;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 120000;

// The linears of the MLP 4-way on dim 0, the batch dim of linear's [*batch, out]
// (fc1 comes 4-way sharded in the example already); the shard pass propagates the
// split to the activations between them.
const QString kAllOps = QStringLiteral("fc2:0=4 fc3:0=4 fc4:0=4");
// The ops the pass changes: all but fc1.
const QStringList kOps{"gelu1", "fc2", "relu2", "fc3", "gelu3", "fc4"};

void typeSpecs(MainWindow &w, const QString &text) {
    QLineEdit *edit = w.stages()->timeline()->specsEdit();
    edit->setFocus();
    edit->selectAll();
    QTest::keyClick(edit, Qt::Key_Backspace);
    QTest::keyClicks(edit, text);
}

QStringList shardChildren(MainWindow &w, const QString &op) {
    QStringList out;
    NodeItem *item = w.scene()->nodeItem(op);
    if (!item) return out;
    for (QGraphicsItem *child : item->childItems())
        if (auto *s = qgraphicsitem_cast<ShardItem *>(child)) out << s->shardId() + " " + s->rangeText();
    return out;
}

int shardsOf(const Graph &g, const QString &op) {
    const Operation *o = g.find_op(OpId(op.toStdString()));
    return o ? static_cast<int>(o->shards.size()) : -1;
}

}  // namespace

class TestStagesGui : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        lookLikeTheStudioForScreenshots();
        QSettings().remove(QStringLiteral("window"));  // the default dock layout, not a saved one
        if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    }

    void shardTheMlpStepApplyUndoAndReopenTheSession() {
        QTemporaryDir dir;
        const QString path = dir.filePath("stages.tapestry-session");
        const LoadResult original = load_project(examplePath("mlp").toStdString());
        QVERIFY(original.ok());
        {
            MainWindow w;
            w.resize(1500, 950);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
            QSignalSpy saved(w.sessions(), &SessionController::saved);
            QVERIFY(w.openSession(path).isEmpty());  // a fresh session starts on the MLP example
            QVERIFY(ready.count() > 0 || ready.wait(kTimeoutMs));
            QVERIFY(saved.count() > 0 || saved.wait(kTimeoutMs));
            QVERIFY(w.sessions()->projectId() != 0);

            StageTimeline *t = w.stages()->timeline();
            w.stages()->stagesDock()->show();
            w.stages()->stagesDock()->raise();
            typeSpecs(w, kAllOps);
            QCOMPARE(t->errorText(), QString());
            QTest::mouseClick(t->numericBox(), Qt::LeftButton, Qt::NoModifier,
                              QPoint(6, t->numericBox()->height() / 2));
            QVERIFY(t->numeric());
            QSignalSpy finished(w.stages(), &StagesController::pipelineFinished);
            QSignalSpy stored(w.stages(), &StagesController::stagesSaved);
            QTest::mouseClick(t->runButton(), Qt::LeftButton);
            QVERIFY(w.stages()->isPipelineRunning());
            QVERIFY(!t->runButton()->isEnabled());
            QVERIFY(t->cancelButton()->isEnabled());
            // The GUI thread stays free while the worker runs: events are processed.
            QElapsedTimer responsive;
            responsive.start();
            QTest::qWait(20);
            QVERIFY(responsive.elapsed() < 2000);
            QVERIFY(finished.count() > 0 || finished.wait(kTimeoutMs));
            QVERIFY2(finished.front().front().toBool(), qPrintable(t->message()));
            qInfo("pipeline: %s", qPrintable(t->message()));

            // Two stages, both certified, the numeric check included.
            QCOMPARE(t->stageCount(), 2);
            QCOMPARE(t->list()->topLevelItemCount(), 2);
            for (int k = 0; k < 2; ++k) {
                const Stage &s = t->stages()[static_cast<size_t>(k)];
                QVERIFY2(s.certificate.pass(), s.certificate.text().c_str());
                QCOMPARE(t->list()->topLevelItem(k)->text(2), QStringLiteral("✓ PASS"));
            }
            QCOMPARE(t->stages()[0].pass, std::string("original"));
            QCOMPARE(t->stages()[1].pass, std::string("shard"));
            QVERIFY(t->stages()[1].certificate.find("numeric"));
            QVERIFY(t->stages()[1].certificate.find("numeric")->pass);
            QVERIFY(t->details()->toPlainText().contains("certificate: PASS"));

            // The canvas shows the last stage, read-only, every sharded op marked changed.
            const std::string stage_text_1 = stage_text(t->stages()[1], 1);
            for (const QString &op : kOps) QVERIFY2(shardsOf(t->stages()[1].graph, op) == 4, stage_text_1.c_str());
            QCOMPARE(w.stages()->shownStage(), 1);
            QVERIFY(!w.scene()->editable());
            for (const QString &op : kOps) {
                QCOMPARE(shardsOf(w.scene()->graph(), op), 4);
                QCOMPARE(w.scene()->diffMark(op), DiffMark::changed);
                QCOMPARE(w.scene()->nodeItem(op)->diffMark(), DiffMark::changed);
            }
            QCOMPARE(w.scene()->diffMark("x"), DiffMark::none);
            QCOMPARE(w.scene()->diffMark("fc1"), DiffMark::none);  // sharded before the pass, untouched
            QCOMPARE(shardsOf(w.scene()->graph(), "fc1"), 4);
            QCOMPARE(t->stages()[1].diff.summary().added.size(), size_t{0});  // shards agree: nothing moves
            QVERIFY(w.statusBar()->currentMessage().startsWith("Stage 1/1 — shard:"));

            // Alt+Left: the original, no marks; Alt+Right: the sharded stage again.
            w.view()->setFocus();
            QTest::keyClick(w.view(), Qt::Key_Left, Qt::AltModifier);
            QCOMPARE(w.stages()->shownStage(), 0);
            QCOMPARE(t->currentStage(), 0);
            QVERIFY(w.statusBar()->currentMessage().startsWith("Stage 0/1 — original:"));
            QVERIFY(w.scene()->editable());  // stage 0 is the document's graph
            for (const QString &op : kOps) {
                QCOMPARE(shardsOf(w.scene()->graph(), op), 0);
                QCOMPARE(w.scene()->nodeItem(op)->diffMark(), DiffMark::none);
                QCOMPARE(static_cast<OperationItem *>(w.scene()->nodeItem(op))->shardCount(), 0);
            }
            QTest::keyClick(w.view(), Qt::Key_Left, Qt::AltModifier);  // nothing before stage 0
            QCOMPARE(w.stages()->shownStage(), 0);
            QTest::keyClick(w.view(), Qt::Key_Right, Qt::AltModifier);
            QCOMPARE(w.stages()->shownStage(), 1);
            QCOMPARE(static_cast<OperationItem *>(w.scene()->nodeItem("fc2"))->shardCount(), 4);
            QCOMPARE(w.scene()->nodeItem("fc2")->diffMark(), DiffMark::changed);

            // Expand fc2 with X: four shard nodes side by side, each with its range; X again collapses.
            QVERIFY(w.scene()->selectNode("fc2"));
            QTest::keyClick(w.view(), Qt::Key_X);
            QVERIFY(w.scene()->shardsExpanded("fc2"));
            const QStringList shards = shardChildren(w, "fc2");
            QCOMPARE(shards.size(), 4);
            QCOMPARE(shards.front(), QStringLiteral("fc2/0 [0,128)×[0,4096)"));
            QCOMPARE(shards.back(), QStringLiteral("fc2/3 [384,512)×[0,4096)"));
            QVERIFY(w.scene()->nodeItem("fc2")->box().width() > 4 * ShardItem::kWidth);
            // Edges still reach the expanded node.
            int fc2_edges = 0;
            for (EdgeItem *e : w.scene()->edgeItems()) fc2_edges += e->from() == "fc2" || e->to() == "fc2";
            QCOMPARE(fc2_edges, 4);  // a2, w2, b2 in; h2 out

            const QString shots = tapestry::studio::testing::screenshotDir();
            if (!shots.isEmpty()) {
                // The dock given room to read; the bottom docks (empty here) closed.
                for (const char *name : {"issuesDock", "outputsDock", "historyDock"})
                    if (auto *dock = w.findChild<QDockWidget *>(QString::fromLatin1(name))) dock->close();
                w.resizeDocks({w.inspection()->inspectorDock(), w.stages()->stagesDock()}, {240, 640}, Qt::Vertical);
                t->list()->setCurrentItem(t->list()->topLevelItem(1));
                w.scene()->selectNodes({});
                w.view()->resetZoom();
                w.view()->zoomOut();
                w.view()->centerOn(w.scene()->nodeItem("fc2"));
                QTest::qWait(100);
                QVERIFY(w.grab().save(QDir(shots).filePath("studio-stages.png")));
            }
            QVERIFY(w.scene()->selectNode("fc2"));
            QTest::keyClick(w.view(), Qt::Key_X);
            QVERIFY(!w.scene()->shardsExpanded("fc2"));
            QCOMPARE(shardChildren(w, "fc2").size(), 0);

            // The shard map follows the tensor selected on the canvas; Compare… opens
            // the two stages side by side, fc2 changed between them.
            QVERIFY(w.scene()->selectNode("h2"));  // fc2's output
            QCOMPARE(w.stages()->shardMap()->tensor(), w.scene()->selectedNodeId());
            QCOMPARE(w.stages()->shardMap()->map().regions.size(), size_t{4});
            QTest::mouseClick(t->compareButton(), Qt::LeftButton);
            StageCompareView *compare = w.stages()->compareView();
            QVERIFY(compare);
            QTRY_VERIFY_WITH_TIMEOUT(compare->isReady(), 30000);
            QVERIFY(compare->changedIds().contains("fc2"));
            QVERIFY(!compare->changedIds().contains("fc1"));
            w.findChild<QDialog *>("stageCompareDialog")->close();

            // Apply the stage: one undo step; undo gives the original graph exactly.
            QUndoStack *undo = w.document()->undoStack();
            const int steps = undo->count();
            const std::string before = serialize_project(w.document()->graph());
            QCOMPARE(before, serialize_project(original.graph));
            QVERIFY(t->applyButton()->isEnabled());
            QTest::mouseClick(t->applyButton(), Qt::LeftButton);
            QCOMPARE(undo->count(), steps + 1);
            QVERIFY(sameGraph(w.document()->graph(), t->stages()[1].graph));
            QCOMPARE(shardsOf(w.document()->graph(), "fc3"), 4);
            QVERIFY(w.scene()->editable());
            QCOMPARE(w.scene()->nodeItem("fc3")->diffMark(), DiffMark::changed);
            QVERIFY(!t->applyButton()->isEnabled());  // the document holds it already
            w.editing()->undoAction()->trigger();
            QCOMPARE(serialize_project(w.document()->graph()), before);
            QVERIFY(sameGraph(w.document()->graph(), original.graph));
            QCOMPARE(static_cast<OperationItem *>(w.scene()->nodeItem("fc3"))->shardCount(), 0);
            QCOMPARE(w.stages()->shownStage(), 0);
            w.editing()->redoAction()->trigger();
            QVERIFY(sameGraph(w.document()->graph(), t->stages()[1].graph));
            w.editing()->undoAction()->trigger();
            QVERIFY(sameGraph(w.document()->graph(), original.graph));

            // The stages went into the session, on the version the pipeline ran on.
            QVERIFY(stored.count() > 0 || stored.wait(kTimeoutMs));
            QCOMPARE(stored.front().front().toString(), QString());
            QVERIFY(w.close());
        }
        {
            auto s = store::Session::open(path.toStdString(), store::OpenMode::read_only);
            QVERIFY(s);
            auto projects = (*s)->projects();
            QVERIFY(projects && projects->size() == 1);
            auto versions = (*s)->versions(projects->front().id);
            QVERIFY(versions);
            std::vector<store::StageRecord> records;
            for (const store::VersionInfo &v : *versions)
                if (auto r = (*s)->stages(v.id); r && !r->empty()) records = *r;
            QCOMPARE(records.size(), size_t{2});
            QCOMPARE(records[1].pass_name, std::string("shard"));
            QVERIFY(records[1].certificate_json.find("\"numeric\"") != std::string::npos);
            QVERIFY(records[1].diff_json.find("\"fc2\"") != std::string::npos);
            auto g = (*s)->load_version(records[1].graph_version_id);
            QVERIFY(g);
            QCOMPARE(shardsOf(*g, "fc4"), 4);
        }
        // Reopened: the last pipeline is listed again.
        MainWindow again;
        again.show();
        QSignalSpy restored(again.stages(), &StagesController::stagesRestored);
        QVERIFY(again.openSession(path).isEmpty());
        QVERIFY(restored.count() > 0 || restored.wait(kTimeoutMs));
        QCOMPARE(again.stages()->timeline()->stageCount(), 2);
        QVERIFY(again.stages()->timeline()->stages()[1].certificate.pass());
        QCOMPARE(again.stages()->timeline()->specsText(), kAllOps);
        QVERIFY(again.stages()->timeline()->numeric());
        QCOMPARE(again.stages()->timeline()->list()->topLevelItem(1)->text(2), QStringLiteral("✓ PASS"));
        QVERIFY(again.stages()->showStage(1));
        QCOMPARE(again.scene()->nodeItem("fc2")->diffMark(), DiffMark::changed);
        QCOMPARE(again.scene()->nodeItem("fc1")->diffMark(), DiffMark::none);
    }

    void aBadSpecShowsItsErrorAndRunDoesNothing_data() {
        QTest::addColumn<QString>("specs");
        QTest::addColumn<QString>("error");
        QTest::newRow("not op:dim=parts") << "fc1=4"
                                          << "shard spec 'fc1=4': expected op:dim=parts, e.g. fc1:0=4 or fc1:0=3+5+2";
        QTest::newRow("unknown op") << "fc1:0=4 fc9:0=4"
                                    << "shard spec 'fc9:0=4': unknown operation 'fc9'; did you mean 'fc1', 'fc2', "
                                       "'fc3' or …?";
        QTest::newRow("a typo") << "gleu1:0=4"
                                << "shard spec 'gleu1:0=4': unknown operation 'gleu1'; did you mean 'gelu1'?";
        QTest::newRow("nothing near") << "softmax:0=2"
                                      << "shard spec 'softmax:0=2': unknown operation 'softmax'";
        QTest::newRow("zero parts") << "fc1:0=0"
                                    << "shard spec 'fc1:0=0': part count '0' is not a whole number 1 … 65536";
    }

    void aBadSpecShowsItsErrorAndRunDoesNothing() {
        QFETCH(QString, specs);
        QFETCH(QString, error);
        MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        StageTimeline *t = w.stages()->timeline();
        w.stages()->stagesDock()->show();
        typeSpecs(w, specs);
        QCOMPARE(t->errorText(), error);
        QSignalSpy finished(w.stages(), &StagesController::pipelineFinished);
        QTest::mouseClick(t->runButton(), Qt::LeftButton);
        QVERIFY(!w.stages()->isPipelineRunning());
        QCOMPARE(t->errorText(), error);
        QVERIFY(!w.stages()->startPipeline());
        QTest::qWait(50);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(t->stageCount(), 0);
        // Fixed, the error goes.
        typeSpecs(w, "fc1:0=4");
        QCOMPARE(t->errorText(), QString());
    }

    // The shard-spec field's placeholder named ops the project did not have
    // (fc1, fc2 for the GPT-2 block): it names the project's, and typing an id
    // offers the project's operations.
    void shardSpecPlaceholderNamesOpsTheProjectLacks_regression() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(openAndWait(w, examplePath("gpt2_block")));
        StageTimeline *t = w.stages()->timeline();
        w.stages()->stagesDock()->show();
        w.stages()->stagesDock()->raise();
        const QString placeholder = t->specsEdit()->placeholderText();
        QVERIFY2(placeholder.contains("ln_1:0=4") && !placeholder.contains("fc1"), qPrintable(placeholder));
        QVERIFY(t->specsEdit()->toolTip().contains("c_fc"));
        t->specsEdit()->setFocus();
        t->specsEdit()->clear();
        QTest::keyClicks(t->specsEdit(), "c_");
        QCompleter *completer = t->specsCompleter();
        QTRY_VERIFY(completer->popup()->isVisible());
        QStringList offered;
        for (int i = 0; i < completer->completionCount(); ++i) {
            completer->setCurrentRow(i);
            offered << completer->currentCompletion();
        }
        QCOMPARE(offered, (QStringList{"c_attn:", "c_proj:", "c_fc:"}));
        // Picking one completes the word, for the dim and parts to follow.
        emit completer->activated(QStringLiteral("c_fc:"));
        QCOMPARE(t->specsText(), QStringLiteral("c_fc:"));
        QTest::keyClicks(t->specsEdit(), "0=4");
        QCOMPARE(t->errorText(), QString());
        // A typo is answered with the nearest operation.
        t->specsEdit()->clear();
        QTest::keyClicks(t->specsEdit(), "c_fx:0=4");
        QCOMPARE(t->errorText(),
                 QStringLiteral("shard spec 'c_fx:0=4': unknown operation 'c_fx'; did you mean 'c_fc'?"));
    }

    void shardThenFuseListsEveryStageAndMarksTheFusedNodes() {
        MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        StageTimeline *t = w.stages()->timeline();
        t->setPasses("shard, fuse");
        typeSpecs(w, kAllOps);
        QSignalSpy finished(w.stages(), &StagesController::pipelineFinished);
        QTest::mouseClick(t->runButton(), Qt::LeftButton);
        QVERIFY(finished.count() > 0 || finished.wait(kTimeoutMs));
        QVERIFY2(finished.front().front().toBool(), qPrintable(t->message()));
        QCOMPARE(t->stageCount(), 3);
        QCOMPARE(t->stages()[2].pass, std::string("fuse"));
        for (const Stage &s : t->stages()) QVERIFY2(s.certificate.pass(), s.certificate.text().c_str());
        // The canvas shows the fused stage: the fused intermediates are gone from it,
        // and every node the fusion replaced is marked.
        QCOMPARE(w.stages()->shownStage(), 2);
        const GraphDelta::Summary fused = t->stages()[2].diff.summary();
        QVERIFY(!fused.removed.empty());
        for (const std::string &id : fused.removed) QVERIFY(!w.scene()->nodeItem(QString::fromStdString(id)));
        for (const std::string &id : fused.changed)
            QCOMPARE(w.scene()->diffMark(QString::fromStdString(id)), DiffMark::changed);
        QVERIFY(t->details()->toPlainText().contains("removed"));
        // One step back: the sharded stage, its nodes drawn again.
        QTest::keyClick(w.view(), Qt::Key_Left, Qt::AltModifier);
        QCOMPARE(w.stages()->shownStage(), 1);
        for (const std::string &id : fused.removed) QVERIFY(w.scene()->nodeItem(QString::fromStdString(id)));
    }

    // The Shard Map opened on the last two dims: a 4-way split of dim 0 showed as
    // one block, and the boxes naming the axes were cut off at the dock's edge.
    void shardMapHidesTheSplit_regression() {
        MainWindow w;
        w.resize(1360, 928);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(openAndWait(w, examplePath("gpt2_block")));
        typeSpecs(w, "c_fc:0=4");
        QSignalSpy finished(w.stages(), &StagesController::pipelineFinished);
        QVERIFY(w.stages()->startPipeline());
        QVERIFY(finished.count() > 0 || finished.wait(kTimeoutMs));
        QVERIFY2(finished.front().front().toBool(), qPrintable(w.stages()->timeline()->message()));
        w.stages()->shardMapDock()->show();
        w.stages()->shardMapDock()->raise();
        QVERIFY(w.scene()->selectNode("fc"));  // c_fc's output [8, 256, 3072]
        ShardMapWidget *map = w.stages()->shardMap();
        QCOMPARE(map->tensor(), QStringLiteral("fc"));
        QCOMPARE(map->splitDims(), QList<int>{0});
        QVERIFY(map->rowDim() == 0 || map->colDim() == 0);
        QSet<int> regions;
        for (const ShardMapWidget::SliceBox &b : map->sliceBoxes()) regions.insert(b.region);
        QCOMPARE(regions.size(), 4);
        // Every box of the slice bar (the axes, the fixed dim's coordinate) in view.
        QTest::qWait(50);
        const QWidget *viewport = map->parentWidget();  // the dock's scroll area viewport
        QVERIFY(viewport);
        const QRect visible = viewport->rect();
        for (QWidget *box : map->findChildren<QWidget *>()) {
            if (!qobject_cast<QComboBox *>(box) && !qobject_cast<QSpinBox *>(box)) continue;
            if (!box->isVisibleTo(map)) continue;
            const QRect at(box->mapTo(viewport, QPoint(0, 0)), box->size());
            QVERIFY2(visible.contains(at), qPrintable(QStringLiteral("%1 at %2,%3 %4x%5 outside %6x%7")
                                                          .arg(box->objectName())
                                                          .arg(at.x())
                                                          .arg(at.y())
                                                          .arg(at.width())
                                                          .arg(at.height())
                                                          .arg(visible.width())
                                                          .arg(visible.height())));
            if (auto *combo = qobject_cast<QComboBox *>(box))
                QVERIFY(combo->width() >= combo->sizeHint().width());  // its text not elided
        }
    }

    void cancelReturnsTheWindowToIdle() {
        MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        StageTimeline *t = w.stages()->timeline();
        typeSpecs(w, kAllOps);
        t->setNumeric(true);  // the numeric runs of the MLP make this a long pipeline
        QSignalSpy finished(w.stages(), &StagesController::pipelineFinished);
        QTest::mouseClick(t->runButton(), Qt::LeftButton);
        QVERIFY(w.stages()->isPipelineRunning());
        QElapsedTimer clock;
        clock.start();
        QTest::mouseClick(t->cancelButton(), Qt::LeftButton);
        // Idle at once: no waiting for the worker.
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.front().front().toBool(), false);
        QVERIFY(clock.elapsed() < 500);
        QVERIFY(!w.stages()->isPipelineRunning());
        QVERIFY(t->runButton()->isEnabled());
        QVERIFY(!t->cancelButton()->isEnabled());
        QVERIFY(t->message().contains("cancelled"));
        QCOMPARE(t->stageCount(), 0);
        QVERIFY(w.statusBar()->currentMessage().contains("cancelled"));
        // The cancelled job's late result is dropped: nothing is listed afterwards.
        QTest::qWait(300);
        QCOMPARE(finished.count(), 1);
        QCOMPARE(t->stageCount(), 0);
        // A new run (structural certificates only) still works after a cancel.
        t->setNumeric(false);
        QTest::mouseClick(t->runButton(), Qt::LeftButton);
        QVERIFY(finished.count() > 1 || finished.wait(kTimeoutMs));
        QVERIFY2(finished.back().front().toBool(), qPrintable(t->message()));
        QCOMPARE(t->stageCount(), 2);
    }
};

QTEST_MAIN(TestStagesGui)
#include "test_stages_gui.moc"
