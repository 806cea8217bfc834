// The studio as an editor, driven through its real widgets: the MLP example built
// from an empty canvas with palette drops, the new-tensor dialog and port drags;
// undo back to empty and redo; a refused connection and its message; search;
// paste between two windows; autosave into a session and a locked session.
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDropEvent>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest/QtTest>

#include "app/studio/main_window.h"
#include "edit/editor.h"
#include "io/project_file.h"
#include "store/session.h"
#include "studio_support.h"
#include "views/find_bar.h"
#include "views/graph_document.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/node_editor.h"
#include "views/palette.h"

using namespace tapestry;
using namespace tapestry::views;
using tapestry::studio::MainWindow;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 30000;

// Drops a palette entry on the canvas at a scene point, as a drag from the palette ends.
void dropEntry(MainWindow &w, const QString &entry, const QPointF &scene_pos) {
    GraphView *view = w.view();
    view->centerOn(scene_pos);
    std::unique_ptr<QMimeData> mime(OpPalette::mimeDataFor(entry));
    const QPointF at = view->mapFromScene(scene_pos);
    QDragEnterEvent enter(at.toPoint(), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &enter);
    QDropEvent drop(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &drop);
}

// Fills and accepts the new-tensor dialog the palette's tensor entries open.
bool fillTensorDialog(MainWindow &w, const QString &name, const QString &shape) {
    QDialog *dialog = w.findChild<QDialog *>(QStringLiteral("newTensorDialog"));
    if (!dialog || !dialog->isVisible()) return false;
    auto *n = dialog->findChild<QLineEdit *>(QStringLiteral("tensorName"));
    auto *s = dialog->findChild<QLineEdit *>(QStringLiteral("tensorShape"));
    n->selectAll();
    QTest::keyClicks(n, name);
    s->selectAll();
    QTest::keyClicks(s, shape);
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
    return dialog->result() == QDialog::Accepted || !w.findChild<QDialog *>(QStringLiteral("newTensorDialog"));
}

QString addTensor(MainWindow &w, const QString &entry, const QString &name, const QString &shape, const QPointF &pos) {
    dropEntry(w, entry, pos);
    if (!fillTensorDialog(w, name, shape)) {
        qWarning("no new-tensor dialog after dropping %s", qPrintable(entry));
        return {};
    }
    QCoreApplication::processEvents();
    if (w.scene()->selectedNodeId().isEmpty())
        qWarning("after the dialog: %s; %lld nodes", qPrintable(w.editing()->lastEditError()),
                 static_cast<long long>(w.document()->graph().node_count()));
    return w.scene()->selectedNodeId();
}

// Drags from one port to another with the mouse, on the canvas.
void dragPort(MainWindow &w, const PortRef &from, const PortRef &to) {
    GraphView *view = w.view();
    const QPointF a = w.scene()->portScenePos(from), b = w.scene()->portScenePos(to);
    view->centerOn((a + b) / 2);
    const QPoint pa = view->mapFromScene(a), pb = view->mapFromScene(b);
    QTest::mousePress(view->viewport(), Qt::LeftButton, Qt::NoModifier, pa);
    QTest::mouseMove(view->viewport(), (pa + pb) / 2);
    QTest::mouseMove(view->viewport(), pb);
    QTest::mouseRelease(view->viewport(), Qt::LeftButton, Qt::NoModifier, pb);
}

// Renames a node the way a user does: select it, type in the inspector's Name field, Enter.
bool renameInInspector(MainWindow &w, const QString &id, const QString &name) {
    w.scene()->selectNode(id);
    auto *edit = w.inspection()->nodeEditor()->findChild<QLineEdit *>(QStringLiteral("nodeName"));
    if (!edit || !edit->isVisible()) return false;
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, name);
    QTest::keyClick(edit, Qt::Key_Return);
    const Graph &g = w.document()->graph();
    const Tensor *t = g.find_tensor(TensorId(id.toStdString()));
    const Operation *o = g.find_op(OpId(id.toStdString()));
    return (t && t->name == name.toStdString()) || (o && o->name == name.toStdString());
}

QString outputOf(MainWindow &w, const QString &op) {
    const Operation *o = w.document()->graph().find_op(OpId(op.toStdString()));
    return o && !o->output_tensors().empty() ? QString::fromStdString(o->output_tensors().front().value) : QString();
}

}  // namespace

class TestEditorGui : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        lookLikeTheStudioForScreenshots();
        QSettings().remove(QStringLiteral("window"));  // the default dock layout, not a saved one
        if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    }

    void buildTheMlpFromAnEmptyCanvasThenUndoAndRedo() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.project()->newProject();
        QCOMPARE(w.document()->graph().node_count(), size_t{0});

        const QStringList acts{"gelu", "relu", "gelu", ""};
        const QList<int> widths{1024, 4096, 4096, 4096, 1024};
        const double dx = 260, dy = 150;
        QString prev = addTensor(w, OpPalette::kTensorInput, "activations", "512, 1024", QPointF(-dx, 0));
        QVERIFY(!prev.isEmpty());
        for (int i = 0; i < 4; ++i) {
            const QString n = QString::number(i + 1);
            const double y = i * 3 * dy;
            const QString wt =
                addTensor(w, OpPalette::kTensorParameter, "fc" + n + ".weight",
                          QStringLiteral("%1, %2").arg(widths[i]).arg(widths[i + 1]), QPointF(dx * 0.8, y));
            const QString b = addTensor(w, OpPalette::kTensorParameter, "fc" + n + ".bias",
                                        QString::number(widths[i + 1]), QPointF(dx * 1.8, y));
            QVERIFY(!wt.isEmpty() && !b.isEmpty());
            dropEntry(w, "linear", QPointF(0, y + dy));
            const QString fc = w.scene()->selectedNodeId();
            QCOMPARE(w.document()->graph().find_op(OpId(fc.toStdString()))->kind, std::string("linear"));
            QVERIFY(renameInInspector(w, fc, "fc" + n));
            dragPort(w, PortRef{prev, {}, true}, PortRef{fc, "x", false});
            QVERIFY2(w.editing()->lastEditError().isEmpty(), qPrintable(w.editing()->lastEditError()));
            dragPort(w, PortRef{wt, {}, true}, PortRef{fc, "w", false});
            dragPort(w, PortRef{b, {}, true}, PortRef{fc, "bias", false});
            QVERIFY2(w.editing()->lastEditError().isEmpty(), qPrintable(w.editing()->lastEditError()));
            const QString h = outputOf(w, fc);
            QVERIFY2(!h.isEmpty(), "the linear's output appears once its inputs are connected");
            QVERIFY(renameInInspector(w, h, i == 3 ? QStringLiteral("logits") : "fc" + n + ".out"));
            if (i == 3) break;
            dropEntry(w, acts[i], QPointF(0, y + 2 * dy));
            const QString act = w.scene()->selectedNodeId();
            QVERIFY(renameInInspector(w, act, acts[i] + n));
            // From the linear's output port straight to the activation's input.
            dragPort(w, PortRef{fc, "y", true}, PortRef{act, "x", false});
            QVERIFY2(w.editing()->lastEditError().isEmpty(), qPrintable(w.editing()->lastEditError()));
            prev = outputOf(w, act);
            QVERIFY(renameInInspector(w, prev, acts[i] + n + ".out"));
        }
        // With TAPESTRY_SCREENSHOT_DIR=DIR the suite also saves the screenshots of
        // docs/user-guide.md (the real window, as the user left it).
        const QString shots = tapestry::studio::testing::screenshotDir();
        if (!shots.isEmpty()) {
            auto id_of = [&](const std::string &name) {
                for (const TensorPtr &t : w.document()->graph().tensors())
                    if (t->name == name) return QString::fromStdString(t->id.value);
                for (const OpPtr &o : w.document()->graph().operations())
                    if (o->name == name) return QString::fromStdString(o->id.value);
                return QString();
            };
            w.editing()->palette()->setFilterText("norm");
            // Refused: the reason is shown in the status bar.
            dragPort(w, PortRef{id_of("fc3.weight"), {}, true}, PortRef{id_of("fc1"), "w", false});
            QVERIFY2(w.editing()->lastEditError().startsWith("cannot connect"),
                     qPrintable(w.editing()->lastEditError()));
            w.scene()->selectNode(id_of("fc2"));
            w.view()->resetZoom();
            w.view()->zoomOut();
            w.view()->centerOn(w.scene()->nodeItem(id_of("fc2")));
            QTest::qWait(50);
            QVERIFY(w.grab().save(QDir(shots).filePath("studio-editor.png")));
        }
        LoadResult mlp = load_project(examplePath("mlp").toStdString());
        QVERIFY(mlp.ok());
        auto diff = edit::content_difference(w.document()->graph(), mlp.graph);
        QVERIFY2(!diff, diff ? diff->c_str() : "");
        QVERIFY(w.document()->issues().empty());

        // Everything undone → empty; everything redone → the same graph.
        const std::string built = serialize_project(w.document()->graph());
        QUndoStack *undo = w.document()->undoStack();
        QVERIFY(undo->count() > 20);
        while (undo->canUndo()) w.editing()->undoAction()->trigger();
        QCOMPARE(w.document()->graph().node_count(), size_t{0});
        QCOMPARE(w.scene()->nodeItems().size(), 0);
        while (undo->canRedo()) w.editing()->redoAction()->trigger();
        QCOMPARE(serialize_project(w.document()->graph()), built);
        QCOMPARE(w.scene()->nodeItems().size(), static_cast<qsizetype>(w.document()->graph().node_count()));
    }

    void inspectorShapeEditsPropagateAndOneUndoRestores() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        w.scene()->selectNode("x");
        auto *shape = w.inspection()->nodeEditor()->findChild<QLineEdit *>(QStringLiteral("tensorShape"));
        QVERIFY(shape && shape->isEnabled());
        shape->setFocus();
        shape->selectAll();
        QTest::keyClicks(shape, "64, 1024");
        QTest::keyClick(shape, Qt::Key_Return);
        const Graph &g = w.document()->graph();
        QCOMPARE(g.find_tensor(TensorId("h2"))->shape(), (ZPoint{64, 4096}));
        QCOMPARE(g.find_tensor(TensorId("y"))->shape(), (ZPoint{64, 1024}));
        // fc1's shards split the old batch: removed, and the status bar says so.
        QVERIFY(g.find_op(OpId("fc1"))->shards.empty());
        QVERIFY2(w.statusBar()->currentMessage().contains("shards removed"),
                 qPrintable(w.statusBar()->currentMessage()));
        // The inferred tensors show their new shape on the canvas.
        auto *h2 = dynamic_cast<TensorItem *>(w.scene()->nodeItem("h2"));
        QCOMPARE(h2->detail(), QString("f32 [64, 4096]"));
        // A produced tensor's type is read-only in the form.
        w.scene()->selectNode("h1");
        QVERIFY(!w.inspection()->nodeEditor()->findChild<QLineEdit *>(QStringLiteral("tensorShape"))->isEnabled());
        // One undo restores every shape and the shards.
        w.editing()->undoAction()->trigger();
        QCOMPARE(w.document()->graph().find_tensor(TensorId("y"))->shape(), (ZPoint{512, 1024}));
        QCOMPARE(w.document()->graph().find_op(OpId("fc1"))->shards.size(), size_t{4});
    }

    void anInvalidConnectionIsRefusedWithItsReason() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        const std::string before = serialize_project(w.document()->graph());
        dragPort(w, PortRef{"w3", {}, true}, PortRef{"fc1", "w", false});
        QVERIFY2(w.editing()->lastEditError().startsWith("cannot connect fc3.weight (f32 [4096, 4096]) to fc1.w"),
                 qPrintable(w.editing()->lastEditError()));
        QVERIFY(w.statusBar()->currentMessage().startsWith("Connection refused: cannot connect"));
        QCOMPARE(serialize_project(w.document()->graph()), before);
        QCOMPARE(w.document()->undoStack()->count(), 0);
    }

    void deleteIsOneStepAndUndoBringsNodesBackInPlace() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        const QPointF fc3 = w.scene()->nodeItem("fc3")->pos();
        w.scene()->selectNodes({"fc3", "w3", "b3"});
        w.view()->setFocus();
        QTest::keyClick(w.view(), Qt::Key_Delete);
        QVERIFY(!w.scene()->nodeItem("fc3"));
        QVERIFY(!w.scene()->nodeItem("h3"));
        QCOMPARE(w.document()->undoStack()->count(), 1);
        QTest::keyClick(&w, Qt::Key_Z, Qt::ControlModifier);
        QVERIFY(w.scene()->nodeItem("fc3"));
        QCOMPARE(w.scene()->nodeItem("fc3")->pos(), fc3);
        QVERIFY(w.document()->issues().empty());
    }

    void dragsAreOneUndoStep() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        NodeItem *item = w.scene()->nodeItem("relu2");
        const QPointF start = item->pos();
        GraphView *view = w.view();
        view->centerOn(item);
        const QPoint p = view->mapFromScene(item->pos() + QPointF(item->box().width() / 4, 0));
        QTest::mousePress(view->viewport(), Qt::LeftButton, Qt::NoModifier, p);
        for (int i = 1; i <= 5; ++i) QTest::mouseMove(view->viewport(), p + QPoint(20 * i, 10 * i));
        QTest::mouseRelease(view->viewport(), Qt::LeftButton, Qt::NoModifier, p + QPoint(100, 50));
        QVERIFY(item->pos() != start);
        QCOMPARE(w.document()->undoStack()->count(), 1);
        w.editing()->undoAction()->trigger();
        QCOMPARE(w.scene()->nodeItem("relu2")->pos(), start);
    }

    void searchFindsAndSelectsAllOfAKind() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
        FindBar *bar = w.canvas()->findBar();
        QVERIFY(bar->isVisible());
        bar->setScope(FindScope::op_kind);
        bar->setText("linear");
        // F3 steps through the matches while the bar is open (one owner of the shortcut).
        QTest::keyClick(&w, Qt::Key_F3);
        QCOMPARE(w.scene()->selectedNodeIds(), QStringList{"fc1"});
        QTest::keyClick(&w, Qt::Key_F3);
        QCOMPARE(w.scene()->selectedNodeIds(), QStringList{"fc2"});
        bar->selectAllMatches();
        QCOMPARE(w.scene()->selectedNodeIds(), (QStringList{"fc1", "fc2", "fc3", "fc4"}));
    }

    // Find's first hit for "fc" in the GPT-2 block was a weight tensor, not the
    // operation, and it jumped to 100 %. Operations come first, exact matches
    // before partial ones, and the zoom stays readable without jumping.
    void findFirstHitWasAWeightAndJumpedTo100_regression() {
        MainWindow w;
        w.resize(1360, 928);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(openAndWait(w, examplePath("gpt2_block")));
        w.view()->resetZoom();
        for (int i = 0; i < 6; ++i) w.view()->zoomOut();  // 26 %: far out
        QVERIFY(w.view()->zoom() < GraphView::kReadableScale);
        QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
        FindBar *bar = w.canvas()->findBar();
        bar->setText("fc");
        QCOMPARE(bar->matches().value(0), QStringLiteral("c_fc"));  // the operation
        QCOMPARE(bar->matches().value(1), QStringLiteral("fc"));    // then the tensor named exactly so
        QTest::keyClick(&w, Qt::Key_F3);
        QCOMPARE(w.scene()->selectedNodeId(), QStringLiteral("c_fc"));
        QCOMPARE(w.view()->zoom(), GraphView::kReadableScale);  // readable, not 100 %
        // At a readable zoom the next hit keeps it.
        w.view()->zoomIn();
        const double zoom = w.view()->zoom();
        QTest::keyClick(&w, Qt::Key_F3);
        QCOMPARE(w.scene()->selectedNodeId(), QStringLiteral("fc"));
        QCOMPARE(w.view()->zoom(), zoom);
        const QPoint at = w.view()->mapFromScene(w.scene()->nodeItem("fc")->pos());
        QVERIFY(w.view()->viewport()->rect().contains(at));
    }

    // New palette operations landed on top of the nodes in the middle of the view;
    // they go to free space near the view's centre.
    void newPaletteOpsLandOnTopOfNodes_regression() {
        MainWindow w;
        w.resize(1360, 928);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(openAndWait(w, examplePath("gpt2_block")));
        w.view()->centerOn(w.scene()->nodeItem("attention"));
        QStringList added;
        for (const char *kind : {"gelu", "relu", "gelu"}) {
            w.editing()->palette()->setFilterText(QString::fromLatin1(kind));
            QTest::keyClick(w.editing()->palette()->searchBox(), Qt::Key_Return);
            const QString id = w.scene()->selectedNodeId();
            QVERIFY2(!id.isEmpty() && !added.contains(id), qPrintable(id));
            QCOMPARE(w.document()->graph().find_op(OpId(id.toStdString()))->kind, std::string(kind));
            added << id;
            NodeItem *item = w.scene()->nodeItem(id);
            const QRectF box = item->mapRectToScene(item->box());
            for (NodeItem *other : w.scene()->nodeItems())
                if (other->nodeId() != id)
                    QVERIFY2(!box.intersects(other->mapRectToScene(other->box())),
                             qPrintable(id + " lies on " + other->nodeId()));
            QVERIFY(w.view()->viewport()->rect().contains(w.view()->mapFromScene(box.center())));
        }
        // Undo and redo put them back where they were placed.
        const QPointF placed = w.scene()->nodeItem(added.back())->pos();
        w.editing()->undoAction()->trigger();
        QVERIFY(!w.scene()->nodeItem(added.back()));
        w.editing()->redoAction()->trigger();
        QCOMPARE(w.scene()->nodeItem(added.back())->pos(), placed);
    }

    void pasteBetweenTwoWindows() {
        MainWindow a, b;
        a.show();
        b.show();
        QVERIFY(openAndWait(a, examplePath("mlp")));
        b.project()->newProject();
        a.scene()->selectNodes({"w2", "b2", "fc2", "relu2"});
        a.editing()->copySelection();
        b.editing()->pasteClipboard();
        const Graph &g = b.document()->graph();
        QCOMPARE(g.operations().size(), size_t{2});
        QCOMPARE(g.tensors().size(), size_t{4});
        QVERIFY(g.find_op(OpId("fc2")) && g.find_op(OpId("relu2")));
        QCOMPARE(b.scene()->nodeItems().size(), 6);
        QCOMPARE(b.document()->undoStack()->count(), 1);  // a paste is one step
        // Pasting again in the same window makes fresh ids.
        b.editing()->pasteClipboard();
        QVERIFY(b.document()->graph().find_op(OpId("fc2_2")));
    }

    void exportsTheSelectionAsPngDotAndJson() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        QTemporaryDir dir;
        w.scene()->selectNodes({"x", "w1", "b1", "fc1"});
        QRectF bounds;
        for (const QString &id : w.scene()->selectedNodeIds()) bounds |= w.scene()->nodeItem(id)->sceneBoundingRect();
        QCOMPARE(exportTo(w, dir.filePath("one.png"), "png", true, 1.0), QString());
        QCOMPARE(exportTo(w, dir.filePath("two.png"), "png", true, 2.0), QString());
        const QImage one(dir.filePath("one.png")), two(dir.filePath("two.png"));
        QCOMPARE(one.width(), qRound(bounds.width() + 48));
        QVERIFY(qAbs(two.width() - 2 * one.width()) <= 1);
        QCOMPARE(w.scene()->selectedNodeIds().size(), 4);  // the selection survives the export
        QCOMPARE(exportTo(w, dir.filePath("sel.dot"), "dot", true), QString());
        QFile dot(dir.filePath("sel.dot"));
        QVERIFY(dot.open(QIODevice::ReadOnly));
        const QByteArray text = dot.readAll();
        QVERIFY(text.startsWith("digraph"));
        QVERIFY(text.contains("fc1") && !text.contains("fc2"));
        QCOMPARE(exportTo(w, dir.filePath("sel.tapestry.json"), "json", true), QString());
        LoadResult back = load_project(dir.filePath("sel.tapestry.json").toStdString());
        QVERIFY(back.ok());
        QCOMPARE(back.graph.operations().size(), size_t{1});
        QCOMPARE(back.graph.tensors().size(), size_t{4});  // x, w1, b1 and fc1's output
        QCOMPARE(exportTo(w, dir.filePath("all.svg"), "svg", false), QString());
        QVERIFY(QFileInfo(dir.filePath("all.svg")).size() > 1000);
        w.scene()->selectNodes({});
        QCOMPARE(exportTo(w, dir.filePath("none.png"), "png", true), QString("nothing is selected"));
    }

    void relayoutKeepsPinnedNodes() {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, examplePath("mlp")));
        const QPointF far(3000, -2000);
        const QPointF relu_before = w.scene()->nodeItem("relu2")->pos();
        w.scene()->nodeItem("gelu1")->setPos(far);
        w.scene()->nodeItem("relu2")->setPos(far + QPointF(0, 400));
        w.scene()->selectNodes({"gelu1"});
        w.document()->setPinned({"gelu1"}, true);
        QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
        w.canvas()->relayout();
        QVERIFY(ready.wait(kTimeoutMs) || ready.count() > 0);
        QCOMPARE(w.scene()->nodeItem("gelu1")->pos(), far);          // pinned: kept
        QCOMPARE(w.scene()->nodeItem("relu2")->pos(), relu_before);  // not pinned: laid out again
    }

    void aDamagedSessionIsReportedAndLeftAsItWas() {
        QTemporaryDir dir;
        const QString path = dir.filePath("broken.tapestry-session");
        QByteArray garbage(8192, '\0');
        for (int i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919) % 251);
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(garbage);
        }
        MainWindow w;
        w.show();
        const QString why = w.openSession(path);
        QVERIFY2(why.contains("is damaged or not a Tapestry session"), qPrintable(why));
        QVERIFY(!w.sessions()->session());
        QVERIFY(w.findChild<QMessageBox *>(QStringLiteral("sessionErrorBox")));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), garbage);
        QVERIFY(!QFileInfo::exists(path + "-wal"));
    }

    void editsAreAutosavedIntoTheSessionAndASecondWindowIsToldItIsInUse() {
        QTemporaryDir dir;
        const QString path = dir.filePath("work.tapestry-session");
        QString example;
        {
            MainWindow w;
            w.show();
            QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
            QVERIFY(w.openSession(path).isEmpty());
            QVERIFY(ready.wait(kTimeoutMs) || ready.count() > 0);
            QSignalSpy saved(w.sessions(), &SessionController::saved);
            QVERIFY(saved.wait(kTimeoutMs));  // the example joins the session
            QCOMPARE(saved.front().front().toString(), QString());
            QVERIFY(w.sessions()->projectId() != 0);
            // A second window on the same session is told it is in use.
            MainWindow other;
            const QString why = other.openSession(path);
            QVERIFY2(why.contains("open in another"), qPrintable(why));
            // An edit is autosaved in the background.
            QVERIFY(
                w.editing()->applyEdit("Rename", [](edit::Editor &e) { return e.rename("relu2", "act2"); }).isEmpty());
            QVERIFY(saved.wait(kTimeoutMs));
            QCOMPARE(saved.back().front().toString(), QString());
            // An edit made just before closing is not lost: closing writes it.
            QVERIFY(
                w.editing()->applyEdit("Rename", [](edit::Editor &e) { return e.rename("gelu3", "act3"); }).isEmpty());
            QVERIFY(w.close());
        }
        // Reopened: the session holds the edit and shows it.
        auto s = store::Session::open(path.toStdString(), store::OpenMode::read_only);
        QVERIFY(s);
        auto projects = (*s)->projects();
        QVERIFY(projects && projects->size() == 1);
        auto g = (*s)->load_latest(projects->front().id);
        QVERIFY(g);
        QCOMPARE(g->find_op(OpId("relu2"))->name, std::string("act2"));
        QCOMPARE(g->find_op(OpId("gelu3"))->name, std::string("act3"));
        s->reset();
        MainWindow again;
        again.show();
        QSignalSpy ready(again.canvas(), &CanvasController::layoutReady);
        QVERIFY(again.openSession(path).isEmpty());
        QVERIFY(ready.wait(kTimeoutMs) || ready.count() > 0);
        QCOMPARE(again.document()->graph().find_op(OpId("relu2"))->name, std::string("act2"));
    }
};

QTEST_MAIN(TestEditorGui)
#include "test_editor_gui.moc"
