// The Launch dock driven through the real window (issue 17 item 5): the MLP
// example planned in the Plan dock on 4 devices, Launch Plan… opened from the
// Plan dock, the plan launched on the cpu backend — the Gantt draws a measured bar
// under every predicted one, the scatter has a point per measured step, the
// outputs pass the check, and the session holds the launch and its steps (a second
// launch reuses the saved plan and lists both); Cancel during a launch ends it as
// cancelled at once and the launch stops promptly; an injected fault names its
// step and device in the dock.
//
// With TAPESTRY_SCREENSHOT_DIR set it saves docs/screenshots/studio-launch.png.
#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QLabel>
#include <QListWidget>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QToolButton>
#include <QtTest/QtTest>
#include <atomic>
#include <memory>

#include "app/studio/launch_controller.h"
#include "app/studio/main_window.h"
#include "app/studio/plan_controller.h"
#include "store/session.h"
#include "studio_support.h"
#include "views/launch_dialog.h"
#include "views/launch_scatter.h"
#include "views/launch_worker.h"
#include "views/plan_gantt.h"

using namespace tapestry;
using namespace tapestry::views;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 180000;

// A window showing the MLP example (in a new session at `session`, or from its
// file), planned on 4 devices of `target` in the Plan dock.
struct LaunchWindow {
    MainWindow w;

    PlanController *plans() const { return w.plans(); }
    LaunchController *launches() const { return w.launches(); }

    bool open(const QString &session = {}) {
        w.resize(1600, 1000);
        w.show();
        if (!QTest::qWaitForWindowExposed(&w)) return false;
        if (session.isEmpty()) return openAndWait(w, examplePath(QStringLiteral("mlp")));
        return openSessionAndWait(w, session, kTimeoutMs);
    }

    bool plan(const QString &target, const QString &baseline) {
        PlanController *pc = plans();
        pc->planDock()->show();
        pc->planDock()->raise();
        if (!pc->selectTarget(target)) return false;
        pc->devicesBox()->setValue(4);
        pc->nodesBox()->setValue(0);
        pc->baselineBox()->setCurrentText(baseline);
        QSignalSpy finished(pc, &PlanController::planFinished);
        pc->planAction()->trigger();
        if (finished.count() == 0 && !finished.wait(kTimeoutMs)) return false;
        return finished.front().front().toBool();
    }

    // Opens Launch Plan… from the Plan dock's button, as a user would.
    LaunchDialog *openDialog() {
        auto *button = plans()->planDock()->findChild<QToolButton *>(QStringLiteral("planLaunch"));
        if (!button || !button->isVisible() || !button->isEnabled()) return nullptr;
        QTest::mouseClick(button, Qt::LeftButton);
        return launches()->launchDialog();
    }

    // Clicks Launch in the dialog and waits for the launch's end; its status ("" if none came).
    QString launch(LaunchDialog *dialog) {
        QSignalSpy finished(launches(), &LaunchController::launchFinished);
        QTest::mouseClick(dialog->launchButton(), Qt::LeftButton);
        if (finished.count() == 0 && !finished.wait(kTimeoutMs)) return {};
        return finished.front().front().toString();
    }
};

// The measured bars of every lane, as many as the predicted ones.
int measuredBars(const PlanGantt &g) {
    int n = 0;
    for (int d = 0; d < g.rowCount(); ++d)
        for (plan::Stream s : {plan::Stream::compute, plan::Stream::communication}) n += g.measuredBarCount(d, s);
    return n;
}

}  // namespace

class TestLaunchDock : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        lookLikeTheStudioForScreenshots();
        QSettings().remove(QStringLiteral("window"));  // the default dock layout, not a saved one
        QSettings().remove(QStringLiteral("plan"));
        QSettings().remove(QStringLiteral("launch"));
        if (qEnvironmentVariableIsEmpty("TAPESTRY_SOURCE_DIR")) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    }

    void launchTheMlpOnFourDevices() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        LaunchWindow lw;
        QVERIFY(lw.open(dir.filePath(QStringLiteral("launch.tapestry-session"))));
        LaunchController *lc = lw.launches();
        QVERIFY2(!lc->launchAction()->isEnabled(), "nothing to launch before a plan is shown");
        QCOMPARE(lc->launchAction()->shortcut(), QKeySequence(QStringLiteral("Ctrl+Alt+L")));
        int holders = 0;  // no other action of the window has that shortcut
        for (const QAction *a : lw.w.findChildren<QAction *>())
            holders += a->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+Alt+L"))) ? 1 : 0;
        QCOMPARE(holders, 1);
        // The host, measured on first use: its launch on the cpu backend measures the
        // target it was predicted for. tp: kernels, copies and all-reduces.
        QVERIFY2(lw.plan(QStringLiteral("host"), QStringLiteral("tp")), qPrintable(lw.plans()->lastError()));
        const std::shared_ptr<const plan::PlanResult> shown = lw.plans()->result();
        QVERIFY(shown);
        QVERIFY(lc->launchAction()->isEnabled());

        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QVERIFY(dialog->isVisible());
        QCOMPARE(dialog->backendList()->count(), 1);
        QVERIFY2(dialog->backendList()->item(0)->text().startsWith(QStringLiteral("cpu — cpu: ")),
                 qPrintable(dialog->backendList()->item(0)->text()));
        QVERIFY2(dialog->planLabel()->text().contains(QStringLiteral("4 × host")),
                 qPrintable(dialog->planLabel()->text()));
        QVERIFY(dialog->randomInputsButton()->isChecked());
        dialog->seedBox()->setValue(7);
        QVERIFY(dialog->launchButton()->isEnabled());
        QVERIFY(!dialog->cancelButton()->isEnabled());

        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        QVERIFY2(!dialog || !dialog->isVisible(), "the dialog closes once the launch has run");
        QVERIFY(lc->launchDock()->isVisible());
        const LaunchOutcome &o = lc->lastOutcome();
        QVERIFY(o.launched);
        const launch::LaunchResult &r = o.result;
        QCOMPARE(r.steps.size(), shown->plan.steps.size());
        QCOMPARE(o.inputs_text, QStringLiteral("random inputs, seed 7"));

        // The Gantt: the plan's bars, and a measured bar in each lane for each predicted one, below it.
        PlanGantt *g = lc->gantt();
        QCOMPARE(g->rowCount(), 4);
        QVERIFY(g->hasMeasured());
        for (int d = 0; d < 4; ++d)
            for (plan::Stream s : {plan::Stream::compute, plan::Stream::communication}) {
                QCOMPARE(g->measuredBarCount(d, s), g->barCount(d, s));
                for (int i = 0; i < g->measuredBarCount(d, s); ++i) {
                    const int step = g->measuredBarStep(d, s, i);
                    QVERIFY(step >= 0);
                    int predicted = -1;
                    for (int j = 0; j < g->barCount(d, s) && predicted < 0; ++j)
                        if (g->barStep(d, s, j) == step) predicted = j;
                    QVERIFY2(predicted >= 0, "a measured bar has its predicted one in the same lane");
                    QVERIFY(g->measuredBarRect(d, s, i).top() > g->barRect(d, s, predicted).bottom());
                }
            }
        QVERIFY(measuredBars(*g) >= static_cast<int>(r.steps.size()));
        double last_end = 0;
        for (const launch::MeasuredStep &m : r.steps) last_end = std::max(last_end, m.end);
        QCOMPARE(g->measuredEnd(), last_end);
        QVERIFY(g->visibleEnd() >= g->measuredEnd());  // fitted over what ran and what was predicted
        QVERIFY2(g->stepToolTip(g->measuredBarStep(0, plan::Stream::compute, 0)).contains(QStringLiteral("measured")),
                 "a step's hover text gives its measured time");

        // The scatter: a point per measured step, titled with the two accuracy figures.
        LaunchScatter *scatter = lc->scatter();
        QCOMPARE(scatter->omitted(), 0);
        QCOMPARE(scatter->pointCount(), static_cast<int>(r.steps.size()));
        QVERIFY(scatter->pointCount(plan::StepKind::kernel) > 0);
        QVERIFY(scatter->pointCount(plan::StepKind::collective) > 0);  // tp's all-reduces
        QVERIFY2(scatter->titleText().contains(QStringLiteral("Median relative error")) &&
                     scatter->titleText().contains(QStringLiteral("Kendall τ")),
                 qPrintable(scatter->titleText()));
        QVERIFY(scatter->kendallTau() >= -1 && scatter->kendallTau() <= 1);
        QVERIFY(scatter->medianRelativeError() > 0);

        // The output check passes, output by output, and the dock says so.
        QVERIFY(o.check);
        QVERIFY2(o.check->pass(), o.check->summary().c_str());
        const QString equivalence = lc->equivalenceLabel()->text();
        QVERIFY2(equivalence.contains(QStringLiteral("PASS")) && !equivalence.contains(QStringLiteral("FAIL")),
                 qPrintable(equivalence));
        QVERIFY2(lc->statusLabel()->text().contains(QStringLiteral("(measured)")) &&
                     lc->statusLabel()->text().contains(QStringLiteral("(prediction)")),
                 qPrintable(lc->statusLabel()->text()));
        QCOMPARE(lc->deviceTable()->rowCount(), 4);
        QCOMPARE(lc->deviceTable()->horizontalHeaderItem(1)->text(), QStringLiteral("Peak (measured)"));
        QCOMPARE(lc->deviceTable()->horizontalHeaderItem(2)->text(), QStringLiteral("Peak (prediction)"));
        QCOMPARE(lc->deviceTable()->item(0, 0)->text(), QString::fromStdString(r.devices[0].name));

        // The session holds the plan, the launch and its measured steps.
        store::Session *session = lw.w.sessions()->session();
        QVERIFY(session);
        QVERIFY2(o.plan_id != 0, qPrintable(o.record_error));
        auto kept = session->launches(o.plan_id);
        QVERIFY(kept);
        QCOMPARE(kept->size(), size_t{1});
        QCOMPARE(kept->front().status, std::string("ok"));
        QCOMPARE(kept->front().backend, std::string("cpu"));
        auto steps = session->step_measurements(o.launch_id);
        QVERIFY(steps);
        QCOMPARE(steps->size(), r.steps.size());
        QVERIFY2(o.calibration_points > 0, "a host plan launched on the cpu calibrates the host");
        QCOMPARE(lc->historyTable()->rowCount(), 1);

        // Launched again: the same saved plan, both launches listed, the newest first.
        dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(dialog->seedBox()->value(), 7);  // the last launch's settings
        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        QCOMPARE(lc->lastOutcome().plan_id, o.plan_id);
        QCOMPARE(session->launches(o.plan_id)->size(), size_t{2});
        QCOMPARE(lc->historyTable()->rowCount(), 2);
        QCOMPARE(lc->historyTable()->item(0, 2)->text(), QStringLiteral("ok"));
        QVERIFY(lc->historyTable()->item(0, 3)->text() != QStringLiteral("—"));

        const QString shots = screenshotDir();
        if (!shots.isEmpty()) {
            for (const char *name : {"paletteDock", "minimapDock"})
                if (auto *dock = lw.w.findChild<QDockWidget *>(QString::fromLatin1(name))) dock->close();
            lw.w.resizeDocks({lc->launchDock()}, {500}, Qt::Vertical);
            QTest::qWait(100);
            lw.w.view()->resetZoom();
            lw.w.view()->centerOn(lw.w.scene()->nodeItem(QStringLiteral("fc2")));
            g->fit();
            QTest::qWait(200);
            QVERIFY(lw.w.grab().save(QDir(shots).filePath(QStringLiteral("studio-launch.png"))));
        }
    }

    void cancelEndsTheLaunchAtOnce() {
        LaunchWindow lw;
        QVERIFY(lw.open());
        QVERIFY(lw.plan(QStringLiteral("h100-sxm"), QStringLiteral("dp")));
        LaunchController *lc = lw.launches();
        // Hold the launch at its first progress report until Cancel has been pressed:
        // a launch this small can otherwise finish before the click lands.
        auto pressed = std::make_shared<std::atomic_bool>(false);
        lc->launchWorker()->setProgressHook([pressed](int, int) {
            QElapsedTimer waited;
            waited.start();
            while (!pressed->load() && waited.elapsed() < 10000) QThread::msleep(1);
            return false;
        });
        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QSignalSpy finished(lc, &LaunchController::launchFinished);
        QTest::mouseClick(dialog->launchButton(), Qt::LeftButton);
        QVERIFY(lc->isLaunching());
        QVERIFY(!lc->launchAction()->isEnabled());
        QVERIFY(dialog->cancelButton()->isEnabled());
        QVERIFY(!dialog->launchButton()->isEnabled());
        QVERIFY(dialog->progressBar()->isVisible());
        QTest::mouseClick(dialog->cancelButton(), Qt::LeftButton);
        // At once: the outcome is reported before the launch's thread has stopped.
        QCOMPARE(finished.count(), 1);
        pressed->store(true);
        lc->launchWorker()->setProgressHook({});
        QCOMPARE(finished.front().front().toString(), QStringLiteral("cancelled"));
        QVERIFY(!lc->isLaunching());
        QVERIFY(lc->launchAction()->isEnabled());
        QVERIFY(dialog && dialog->isVisible());
        QVERIFY(dialog->launchButton()->isEnabled());
        QVERIFY(!dialog->cancelButton()->isEnabled());
        QCOMPARE(dialog->statusLabel()->text(), QStringLiteral("Launch cancelled."));
        QVERIFY(lc->statusLabel()->text().startsWith(QStringLiteral("Launch cancelled")));
        // Promptly: the launch polls the flag between steps and while waiting.
        QElapsedTimer stopping;
        stopping.start();
        QTRY_VERIFY_WITH_TIMEOUT(!lc->launchWorker()->isWorking(), 10000);
        QVERIFY2(stopping.elapsed() < 10000, "the cancelled launch stopped");
        dialog->reject();
    }

    void faultNamesItsStepAndDevice() {
        LaunchWindow lw;
        QVERIFY(lw.open());
        QVERIFY(lw.plan(QStringLiteral("h100-sxm"), QStringLiteral("dp")));
        const plan::Plan &p = lw.plans()->result()->plan;
        int step = -1;
        for (int s = 0; s < static_cast<int>(p.steps.size()) && step < 0; ++s)
            if (p.steps[static_cast<size_t>(s)].kind == plan::StepKind::kernel &&
                p.steps[static_cast<size_t>(s)].device == 2)
                step = s;
        QVERIFY(step >= 0);
        LaunchController *lc = lw.launches();
        lc->setFailStepForTests(step);
        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("failed"));
        const launch::LaunchResult &r = lc->lastOutcome().result;
        QCOMPARE(r.fault.step, step);
        QCOMPARE(r.fault.device, 2);
        const QString status = lc->statusLabel()->text();
        const QString device = QString::fromStdString(p.devices[2].name);
        QVERIFY2(status.contains(QStringLiteral("Failed</b> at step %1 (%2)")
                                     .arg(step)
                                     .arg(QString::fromStdString(p.steps[static_cast<size_t>(step)].op))),
                 qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("on device %1").arg(device)), qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("injected fault")), qPrintable(status));
        QVERIFY(lc->equivalenceLabel()->isHidden());  // no outputs to compare
        // What ran before the fault is measured and drawn.
        QCOMPARE(lc->scatter()->pointCount() + lc->scatter()->omitted(), static_cast<int>(r.steps.size()));
        QCOMPARE(measuredBars(*lc->gantt()) > 0, !r.steps.empty());
    }
};

QTEST_MAIN(TestLaunchDock)
#include "test_launch_dock.moc"
