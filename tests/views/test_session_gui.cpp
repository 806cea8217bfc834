// The studio's session as a user meets it, through the real window: a project
// file opened again goes on with the session project it made (no new project, and
// no new version while the file is the same, its saved node arrangement back; a
// new version, the earlier kept, when the file changed); File ▸ Session
// Projects… lists the projects, opens one, renames one in place (F2) and deletes
// one after asking — never the one the window shows.
#include <QAbstractItemView>
#include <QFile>
#include <QFileInfo>
#include <QGraphicsItem>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest/QtTest>
#include <chrono>
#include <algorithm>
#include <latch>
#include <thread>
#include <vector>

#include "app/studio/session_projects_dialog.h"
#include "store/session.h"
#include "views/project_loader.h"
#include "views/session_versions.h"
#include "studio_support.h"

using namespace tapestry;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 60000;

// Opens `path` and waits for it to be laid out and its join of the session saved.
bool openAndJoin(MainWindow &w, const QString &path) {
    QSignalSpy saved(w.sessions(), &SessionController::saved);
    if (!openAndWait(w, path)) return false;
    if (saved.count() == 0 && !saved.wait(kTimeoutMs)) return false;
    return saved.back().front().toString().isEmpty();
}

// The window shown on a new session in `dir`, with `file` a copy of the MLP example.
bool startOnACopy(MainWindow &w, const QTemporaryDir &dir, const QString &file) {
    if (!QFile::copy(examplePath("mlp"), file)) return false;
    w.show();
    return openSessionAndWait(w, dir.filePath("work.tapestry-session"));
}

// Edits the MLP project file as another editor would: its input tensor renamed.
bool renameTheInputOnDisk(const QString &file) {
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) return false;
    QByteArray text = f.readAll();
    f.close();
    if (!text.contains("\"name\": \"activations\"")) return false;
    text.replace("\"name\": \"activations\"", "\"name\": \"inputs\"");
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == text.size();
}

store::ProjectInfo projectInfo(MainWindow &w, qint64 id) {
    auto p = w.sessions()->session()->project(id);
    return p ? *p : store::ProjectInfo{};
}

size_t projectCount(MainWindow &w) {
    auto all = w.sessions()->session()->projects();
    return all ? all->size() : 0;
}

// The dialog, opened from the File menu's action, once it has listed the session.
SessionProjectsDialog *openProjectsDialog(MainWindow &w) {
    w.sessions()->projectsAction()->trigger();
    SessionProjectsDialog *d = w.sessions()->projectsDialog();
    if (!d) return nullptr;
    QSignalSpy listed(d, &SessionProjectsDialog::listed);
    if (d->isBusy() && !listed.wait(kTimeoutMs)) return nullptr;
    return d;
}

// The name editor F2 opened (an earlier one may linger, hidden, until deleted later).
QLineEdit *nameEditor(SessionProjectsDialog *d) {
    for (QLineEdit *e : d->list()->viewport()->findChildren<QLineEdit *>())
        if (e->isVisible()) return e;
    return nullptr;
}

QTreeWidgetItem *rowOf(SessionProjectsDialog *d, qint64 id) {
    for (int i = 0; i < d->list()->topLevelItemCount(); ++i)
        if (SessionProjectsDialog::projectOf(d->list()->topLevelItem(i)) == id) return d->list()->topLevelItem(i);
    return nullptr;
}

}  // namespace

class TestSessionGui : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        lookLikeTheStudioForScreenshots();
        QSettings().remove(QStringLiteral("window"));
        if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    }

    void reopeningAFileGoesOnWithItsProject() {
        QTemporaryDir dir;
        const QString file = dir.filePath("mlp.tapestry.json");
        MainWindow w;
        QVERIFY(startOnACopy(w, dir, file));  // the example joins the new session
        const qint64 example = w.sessions()->projectId();
        QVERIFY(example != 0);

        QVERIFY(openAndJoin(w, file));
        const qint64 made = w.sessions()->projectId();
        QVERIFY(made != 0 && made != example);
        QCOMPARE(projectCount(w), size_t{2});
        QCOMPARE(projectInfo(w, made).version_count, 1);

        // The example, then the copy, again: each goes on with its own project,
        // and neither gets a version it already has.
        QVERIFY(openAndJoin(w, examplePath("mlp")));
        QCOMPARE(w.sessions()->projectId(), example);
        QVERIFY(openAndJoin(w, file));
        QCOMPARE(w.sessions()->projectId(), made);
        QCOMPARE(projectCount(w), size_t{2});
        QCOMPARE(projectInfo(w, made).version_count, 1);
        QCOMPARE(projectInfo(w, example).version_count, 1);
        const QString said = w.statusBar()->currentMessage();
        QVERIFY2(said.contains("goes on with its project in the session, whose latest version it is"),
                 qPrintable(said));
        QCOMPARE(w.findChild<QLabel *>(QStringLiteral("saveLabel"))->text(), QStringLiteral("In the session"));

        // Changed on disk: the same project, a new version; the first is kept.
        QVERIFY(renameTheInputOnDisk(file));
        QVERIFY(openAndJoin(w, file));
        QCOMPARE(w.sessions()->projectId(), made);
        QCOMPARE(projectCount(w), size_t{2});
        QCOMPARE(projectInfo(w, made).version_count, 2);
        auto latest = w.sessions()->session()->load_latest(made);
        QVERIFY(latest);
        QCOMPARE(latest->find_tensor(TensorId("x"))->name, std::string("inputs"));
        auto first = w.sessions()->session()->version_by_number(made, 1);
        QVERIFY(first);
        QCOMPARE(w.sessions()->session()->load_version(first->id)->find_tensor(TensorId("x"))->name,
                 std::string("activations"));
        QVERIFY2(w.statusBar()->currentMessage().contains("as a new version (the earlier ones are kept)"),
                 qPrintable(w.statusBar()->currentMessage()));
    }

    // A session file not named *.tapestry-session, given to File ▸ Open, opens as
    // the session (its SQLite header says what it is).
    void openingASessionFileByAnyNameOpensTheSession() {
        QTemporaryDir dir;
        const QString other = QFileInfo(dir.filePath("archive.db")).absoluteFilePath();
        {
            auto made = store::Session::open(other.toStdString(), store::OpenMode::read_write,
                                             std::chrono::milliseconds(0));
            QVERIFY(made);
            const views::LoadedProject attention = views::load_and_validate(examplePath("attention"));
            QVERIFY(attention.opened);
            auto p = (*made)->create_project("attention kept");
            QVERIFY(p);
            QVERIFY((*made)->save_version(*p, attention.graph, "save"));
        }
        MainWindow w;
        QVERIFY(startOnACopy(w, dir, dir.filePath("mlp.tapestry.json")));
        w.openProject(other);
        QTRY_COMPARE_WITH_TIMEOUT(QFileInfo(w.sessions()->path()).absoluteFilePath(), other, kTimeoutMs);
        // … on its last project, as File ▸ Open Session… would.
        QTRY_COMPARE_WITH_TIMEOUT(w.sessions()->projectId(), qint64{1}, kTimeoutMs);
        QCOMPARE(projectInfo(w, 1).name, std::string("attention kept"));
    }

    // Save As moves the project to the new file: opening that file goes on with
    // it, and the old file, opened again, is a project of its own.
    void saveAsMovesTheProjectToTheNewFile() {
        QTemporaryDir dir;
        const QString file = dir.filePath("mlp.tapestry.json");
        const QString renamed = QFileInfo(dir.filePath("mlp-v2.tapestry.json")).absoluteFilePath();
        MainWindow w;
        QVERIFY(startOnACopy(w, dir, file));
        QVERIFY(openAndJoin(w, file));
        const qint64 made = w.sessions()->projectId();
        const size_t projects = projectCount(w);

        QSignalSpy saved(w.project(), &ProjectController::projectSaved);
        w.project()->saveProjectAs(renamed);
        QVERIFY(saved.count() > 0 || saved.wait(kTimeoutMs));
        QCOMPARE(saved.back().at(1).toString(), QString());
        QCOMPARE(w.document()->source().path, renamed);
        // Recorded off the GUI thread: wait until the session says so.
        QTRY_COMPARE_WITH_TIMEOUT(views::fileOfProject(*w.sessions()->session(), made), renamed, kTimeoutMs);
        QCOMPARE(views::projectOfFile(*w.sessions()->session(), renamed), made);

        QVERIFY(openAndJoin(w, examplePath("attention")));
        QVERIFY(openAndJoin(w, renamed));
        QCOMPARE(w.sessions()->projectId(), made);
        QCOMPARE(projectCount(w), projects + 1);  // only the attention example's
        QCOMPARE(projectInfo(w, made).version_count, 1);
        // The old file no longer continues it: opened, it makes a project of its own.
        QVERIFY(openAndJoin(w, file));
        QVERIFY(w.sessions()->projectId() != made);
        QCOMPARE(projectCount(w), projects + 2);
    }

    void reopeningAFileBringsBackItsArrangement() {
        QTemporaryDir dir;
        const QString file = dir.filePath("mlp.tapestry.json");
        MainWindow w;
        QVERIFY(startOnACopy(w, dir, file));
        QVERIFY(openAndJoin(w, file));
        const qint64 made = w.sessions()->projectId();

        // Drag x somewhere the layout would never put it, pin h1, and save (Ctrl+S:
        // with a session, File ▸ Save saves into it).
        QGraphicsItem *x = w.scene()->nodeItem(QStringLiteral("x"));
        QVERIFY(x);
        const QPointF from = x->pos();
        const QPointF to = from + QPointF(-640, 480);
        x->setPos(to);
        emit w.scene()->nodesMoved({{QStringLiteral("x"), from}}, {{QStringLiteral("x"), to}});
        w.document()->setPinned({QStringLiteral("h1")}, true);
        QVERIFY(w.document()->isModified());
        QSignalSpy saved(w.sessions(), &SessionController::saved);
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QTest::keyClick(&w, Qt::Key_S, Qt::ControlModifier);
        QVERIFY(saved.count() > 0 || saved.wait(kTimeoutMs));
        QCOMPARE(saved.back().front().toString(), QString());
        QVERIFY(!w.document()->isModified());

        // Another project, then the file again: x is where it was dragged, h1 pinned.
        QVERIFY(openAndJoin(w, examplePath("attention")));
        QVERIFY(openAndJoin(w, file));
        QCOMPARE(w.sessions()->projectId(), made);
        QCOMPARE(w.scene()->nodeItem(QStringLiteral("x"))->pos(), to);
        QCOMPARE(w.document()->positions().value(QStringLiteral("x")), to);
        QVERIFY(w.document()->pinned().contains(QStringLiteral("h1")));
        QVERIFY(!w.document()->isModified());

        // Changed on disk: a new version, laid out afresh (the old arrangement may not fit).
        QVERIFY(renameTheInputOnDisk(file));
        QVERIFY(openAndJoin(w, file));
        QCOMPARE(w.sessions()->projectId(), made);
        QVERIFY(w.scene()->nodeItem(QStringLiteral("x"))->pos() != to);
        QVERIFY(w.document()->pinned().isEmpty());
    }

    // An ONNX model imported again goes on with its project, and its nodes come
    // back where they were saved.
    void reimportingAModelBringsBackItsArrangement() {
        QTemporaryDir dir;
        const QString model = dir.filePath("gemm.onnx");
        const QString source = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") +
                               QStringLiteral("/tests/fuzz/onnx_corpus/test_gemm_all_attributes.onnx");
        QVERIFY(QFile::copy(source, model));
        MainWindow w;
        QVERIFY(startOnACopy(w, dir, dir.filePath("mlp.tapestry.json")));
        auto import = [&w](const QString &path) {
            QSignalSpy imported(w.project(), &ProjectController::importFinished);
            QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
            QSignalSpy saved(w.sessions(), &SessionController::saved);
            w.project()->importOnnx(path);
            return (imported.count() > 0 || imported.wait(kTimeoutMs)) && imported.front().front().toBool() &&
                   (ready.count() > 0 || ready.wait(kTimeoutMs)) && (saved.count() > 0 || saved.wait(kTimeoutMs));
        };
        QVERIFY(import(model));
        const qint64 made = w.sessions()->projectId();
        QVERIFY(made != 0);
        QVERIFY(!w.document()->positions().isEmpty());
        const QString node = w.document()->positions().cbegin().key();
        QGraphicsItem *item = w.scene()->nodeItem(node);
        QVERIFY(item);
        const QPointF from = item->pos();
        const QPointF to = from + QPointF(520, -360);
        item->setPos(to);
        emit w.scene()->nodesMoved({{node, from}}, {{node, to}});
        w.document()->setPinned({node}, true);
        QSignalSpy saved(w.sessions(), &SessionController::saved);
        w.sessions()->save(false);
        QVERIFY(saved.count() > 0 || saved.wait(kTimeoutMs));
        QCOMPARE(saved.back().front().toString(), QString());

        QVERIFY(openAndJoin(w, examplePath("attention")));
        QVERIFY(import(model));
        QCOMPARE(w.sessions()->projectId(), made);
        QCOMPARE(projectInfo(w, made).version_count, 2);  // the import, the save: no third
        QCOMPARE(w.scene()->nodeItem(node)->pos(), to);
        QVERIFY(w.document()->pinned().contains(node));
    }

    // A save, a Stages run and a launch of a document just opened all ask, on
    // worker threads, which project its file goes into: they get one, never two,
    // and one version of the graph (a join save that lost the race to a Stages
    // run used to write a second, identical one).
    void racingWritersOfAFileMakeOneProject() {
        QTemporaryDir dir;
        const views::LoadedProject mlp = views::load_and_validate(examplePath("mlp"));
        QVERIFY(mlp.opened);
        const QString file = QFileInfo(examplePath("mlp")).absoluteFilePath();
        const store::Placements arrangement{{"x", store::NodePlacement{10, 20, true}}};
        constexpr int kWriters = 9;
        // Rounds of writers let go at once, each round on a fresh session: who wins
        // differs from round to round.
        for (int round = 0; round < 40; ++round) {
            auto opened = store::Session::open(dir.filePath(QStringLiteral("race-%1.tapestry-session").arg(round)).toStdString(),
                                               store::OpenMode::read_write, std::chrono::milliseconds(0));
            QVERIFY(opened);
            std::shared_ptr<store::Session> session(std::move(opened).value().release());
            std::vector<qint64> got(kWriters, 0);
            std::vector<QString> errors(kWriters);
            std::vector<int> continued(kWriters, -1);  // the join saves' say
            std::vector<std::thread> writers;
            std::latch go(kWriters);
            for (int i = 0; i < kWriters; ++i)
                writers.emplace_back([&, i] {
                    go.arrive_and_wait();
                    const size_t k = static_cast<size_t>(i);
                    if (i % 3 == 0) {  // a Stages run, a launch, a search
                        const views::VersionHolding held = views::versionHolding(*session, 0, "mlp", file, mlp.graph);
                        got[k] = held.project;
                        errors[k] = held.error;
                    } else if (i % 3 == 1) {  // the studio's join save of the document just opened
                        const views::SavedSnapshot saved =
                            views::saveSnapshot(*session, 0, mlp.graph, arrangement, "mlp", file, true, true);
                        got[k] = saved.project;
                        errors[k] = saved.error;
                        continued[k] = saved.continued ? 1 : 0;
                    } else {
                        const views::FileProject found = views::projectForFile(*session, file, "mlp");
                        got[k] = found.project;
                        errors[k] = found.error;
                    }
                });
            for (std::thread &t : writers) t.join();
            for (int i = 0; i < kWriters; ++i) {
                QVERIFY2(errors[static_cast<size_t>(i)].isEmpty(), qPrintable(errors[static_cast<size_t>(i)]));
                QCOMPARE(got[static_cast<size_t>(i)], got.front());
            }
            // One join save met the project new — made by itself or, a moment
            // before, by another writer for the same document — and the others as
            // the one the file goes on with.
            QCOMPARE(std::count(continued.begin(), continued.end(), 0), 1);
            auto projects = session->projects();
            QVERIFY(projects);
            QCOMPARE(projects->size(), size_t{1});
            QCOMPARE(projects->front().version_count, 1);  // the same graph: one version, held by all
            QCOMPARE(views::projectOfFile(*session, file), got.front());
            // The saves' arrangement is kept, whoever wrote the version.
            auto kept = session->placements(got.front());
            QVERIFY(kept);
            QCOMPARE(kept->size(), size_t{1});
            QVERIFY(kept->at("x").pinned);
            QCOMPARE(kept->at("x").y, 20.0);
        }
        // In order: a Stages run held the version before the join save came; the
        // save writes none, says so, and gives the project its arrangement. The
        // project is the document's own, made a moment before, not one its file
        // goes on with (the studio says nothing of continuing).
        auto opened = store::Session::open(dir.filePath("ordered.tapestry-session").toStdString(),
                                           store::OpenMode::read_write, std::chrono::milliseconds(0));
        QVERIFY(opened);
        std::unique_ptr<store::Session> session = std::move(opened).value();
        const views::VersionHolding held = views::versionHolding(*session, 0, "mlp", file, mlp.graph);
        QVERIFY2(held.error.isEmpty(), qPrintable(held.error));
        QVERIFY(session->placements(held.project)->empty());
        const views::SavedSnapshot saved = views::saveSnapshot(*session, 0, mlp.graph, arrangement, "mlp", file, true, true);
        QVERIFY2(saved.error.isEmpty(), qPrintable(saved.error));
        QCOMPARE(saved.project, held.project);
        QVERIFY(saved.unchanged);
        QVERIFY(!saved.continued);
        QCOMPARE(session->project(held.project)->version_count, 1);
        QCOMPARE(*session->placements(held.project), arrangement);
        // A later join of the same file (the project saved its own arrangement since) keeps it.
        const store::Placements moved{{"x", store::NodePlacement{-5, 7, false}}};
        QVERIFY(session->set_placements(held.project, moved));
        const views::SavedSnapshot again = views::saveSnapshot(*session, 0, mlp.graph, arrangement, "mlp", file, true, true);
        QVERIFY(again.unchanged);
        QVERIFY(again.continued);  // this time the file goes on with it
        QCOMPARE(*session->placements(held.project), moved);
    }

    void sessionProjectsOpensRenamesAndDeletes() {
        QTemporaryDir dir;
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(!w.sessions()->projectsAction()->isEnabled());  // no session yet
        QVERIFY(openSessionAndWait(w, dir.filePath("work.tapestry-session")));
        QVERIFY(w.sessions()->projectsAction()->isEnabled());
        const qint64 mlp = w.sessions()->projectId();
        QVERIFY(openAndJoin(w, examplePath("attention")));
        const qint64 attention = w.sessions()->projectId();
        QVERIFY(attention != mlp);

        SessionProjectsDialog *d = openProjectsDialog(w);
        QVERIFY(d);
        QVERIFY(d->isVisible());
        QCOMPARE(d->list()->topLevelItemCount(), 2);
        // Newest first, by the time kept (both were saved within the same minute).
        QCOMPARE(SessionProjectsDialog::projectOf(d->list()->topLevelItem(0)), attention);
        QVERIFY2(d->statusLabel()->text().contains("2 projects in work.tapestry-session"),
                 qPrintable(d->statusLabel()->text()));
        QTreeWidgetItem *shown = rowOf(d, attention);
        QVERIFY(shown);
        QVERIFY(shown->font(0).bold());  // the one the window shows
        QCOMPARE(shown->text(1), QStringLiteral("1"));
        QVERIFY2(shown->text(5).endsWith("attention.tapestry.json"), qPrintable(shown->text(5)));
        d->list()->setCurrentItem(shown);
        QVERIFY(d->openButton()->isEnabled());
        QVERIFY(!d->deleteButton()->isEnabled());  // never the window's own
        QVERIFY(d->deleteButton()->toolTip().contains("open another one before deleting it"));

        // The filter hides what does not match.
        QTest::keyClicks(d->filterEdit(), "atten");
        QVERIFY(rowOf(d, mlp)->isHidden());
        QVERIFY(!rowOf(d, attention)->isHidden());
        d->filterEdit()->clear();
        QVERIFY(!rowOf(d, mlp)->isHidden());
        screenshot(*d, QStringLiteral("session-projects.png"));

        // Open the MLP: the dialog closes, the window shows it, read in the background.
        d->list()->setCurrentItem(rowOf(d, mlp));
        QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
        d->openButton()->click();
        QVERIFY(ready.wait(kTimeoutMs) || ready.count() > 0);
        QVERIFY(!w.sessions()->projectsDialog() || !w.sessions()->projectsDialog()->isVisible());
        QCOMPARE(w.sessions()->projectId(), mlp);
        QCOMPARE(w.document()->graph().name, std::string("mlp"));
        QVERIFY(w.document()->source().path.isEmpty());  // the session's project, not the file

        // Rename the window's project in place (F2, type, Enter): the title follows.
        QTest::qWait(50);
        d = openProjectsDialog(w);
        QVERIFY(d);
        d->list()->setCurrentItem(rowOf(d, mlp));
        QVERIFY(d->renameButton()->isEnabled());
        QSignalSpy renamed(d, &SessionProjectsDialog::renamed);
        QTest::keyClick(d->list(), Qt::Key_F2);
        QLineEdit *editor = nameEditor(d);
        QVERIFY(editor);
        editor->selectAll();
        QTest::keyClicks(editor, "MLP, tuned");
        QTest::keyClick(editor, Qt::Key_Return);
        QVERIFY(renamed.wait(kTimeoutMs));
        QCOMPARE(renamed.front().at(1).toString(), QStringLiteral("MLP, tuned"));
        QCOMPARE(QString::fromStdString(projectInfo(w, mlp).name), QStringLiteral("MLP, tuned"));
        QCOMPARE(w.document()->source().name, QStringLiteral("MLP, tuned"));
        QVERIFY2(w.windowTitle().contains("MLP, tuned"), qPrintable(w.windowTitle()));
        QSignalSpy listed(d, &SessionProjectsDialog::listed);
        if (d->isBusy()) QVERIFY(listed.wait(kTimeoutMs));
        QCOMPARE(rowOf(d, mlp)->text(0), QStringLiteral("MLP, tuned"));

        // An empty name is refused, the name kept.
        d->list()->setCurrentItem(rowOf(d, attention));
        QTest::keyClick(d->list(), Qt::Key_F2);
        editor = nameEditor(d);
        QVERIFY(editor);
        editor->selectAll();
        QTest::keyClick(editor, Qt::Key_Delete);
        QTest::keyClick(editor, Qt::Key_Return);
        // The delegate commits on Return once the event loop runs.
        QTRY_VERIFY2(d->statusLabel()->text().contains("A project needs a name"), qPrintable(d->statusLabel()->text()));
        QCOMPARE(rowOf(d, attention)->text(0), QStringLiteral("attention.tapestry.json"));
        if (d->isBusy()) QVERIFY(listed.wait(kTimeoutMs));
        QCOMPARE(QString::fromStdString(projectInfo(w, attention).name), QStringLiteral("attention.tapestry.json"));

        // Delete the attention project (now not the window's): asked first; Cancel keeps it.
        d->list()->setCurrentItem(rowOf(d, attention));
        QVERIFY(d->deleteButton()->isEnabled());
        d->deleteButton()->click();
        auto *box = d->findChild<QMessageBox *>(QStringLiteral("deleteProjectBox"));
        QVERIFY(box && box->isVisible());
        QVERIFY2(box->text().contains("with its 1 version"), qPrintable(box->text()));
        box->button(QMessageBox::Cancel)->click();
        QTest::qWait(20);
        QCOMPARE(projectCount(w), size_t{2});
        QSignalSpy deleted(d, &SessionProjectsDialog::deleted);
        QTest::keyClick(d->list(), Qt::Key_Delete);
        box = d->findChild<QMessageBox *>(QStringLiteral("deleteProjectBox"));
        QVERIFY(box && box->isVisible());
        QPushButton *yes = nullptr;
        for (QAbstractButton *b : box->buttons())
            if (b->text() == QStringLiteral("Delete")) yes = qobject_cast<QPushButton *>(b);
        QVERIFY(yes);
        yes->click();
        QVERIFY(deleted.wait(kTimeoutMs));
        QCOMPARE(deleted.front().front().toLongLong(), attention);
        QVERIFY(listed.wait(kTimeoutMs));
        QCOMPARE(projectCount(w), size_t{1});
        QCOMPARE(d->list()->topLevelItemCount(), 1);
        QVERIFY2(d->statusLabel()->text().startsWith("Deleted attention.tapestry.json; 1 project in"),
                 qPrintable(d->statusLabel()->text()));
        QCOMPARE(w.sessions()->projectId(), mlp);  // the window's project is untouched
        d->close();
    }
};

QTEST_MAIN(TestSessionGui)
#include "test_session_gui.moc"
