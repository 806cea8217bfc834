// The Launch dock driven through the real window (issue 17 item 5): the MLP
// example planned in the Plan dock on 4 devices, Launch Plan… opened from the
// Plan dock, the plan launched on the cpu backend — the Gantt draws a measured bar
// under every predicted one, the scatter has a point per measured step, the
// outputs pass the check, and the session holds the launch and its steps (a second
// launch reuses the saved plan and lists both); Cancel during a launch ends it as
// cancelled at once and the launch stops promptly, and what it kept in the session
// reaches the history (and its plan is not saved twice, even by a launch queued
// behind it); an injected fault names its step and device in the dock and offers
// to re-plan without that device (in the Plan dock, with the launched plan's
// settings); a plan shown again — in this window or after the session is opened
// anew — lists its earlier launches, found in the session by content.
//
// With TAPESTRY_SCREENSHOT_DIR set it saves docs/screenshots/studio-launch.png,
// studio-replan.png and studio-launch-dialog.png.
#include <QAction>
#include <QCheckBox>
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
#include <QStatusBar>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QToolButton>
#include <QtTest/QtTest>

#include "launch/cuda_backend.h"
#include <atomic>
#include <memory>

#include "app/studio/dock.h"
#include "app/studio/launch_controller.h"
#include "app/studio/main_window.h"
#include "app/studio/optimize_controller.h"
#include "app/studio/plan_controller.h"
#include "cli_run.h"
#include "store/session.h"
#include "studio_support.h"
#include "views/launch_dialog.h"
#include "views/launch_scatter.h"
#include "views/optimize_worker.h"
#include "views/pareto_chart.h"
#include "views/launch_worker.h"
#include "views/plan_gantt.h"

using namespace tapestry;
using namespace tapestry::views;
using namespace tapestry::studio;
using namespace tapestry::studio::testing;

namespace {

constexpr int kTimeoutMs = 180000;

// The first kernel step on `device` (-1: none).
int kernelStepOn(const plan::Plan &p, int device) {
    for (int s = 0; s < static_cast<int>(p.steps.size()); ++s)
        if (p.steps[static_cast<size_t>(s)].kind == plan::StepKind::kernel &&
            p.steps[static_cast<size_t>(s)].device == device)
            return s;
    return -1;
}

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

    bool plan(const QString &target, const QString &baseline, int devices = 4) {
        PlanController *pc = plans();
        pc->planDock()->show();
        pc->planDock()->raise();
        if (!pc->selectTarget(target)) return false;
        pc->devicesBox()->setValue(devices);
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

    // Launches the plan the Plan dock shows with a fault injected in the first
    // kernel step on `device`; whether the launch failed.
    bool launchFailingOn(int device) {
        const int step = kernelStepOn(plans()->result()->plan, device);
        if (step < 0) return false;
        launches()->setFailStepForTests(step);
        LaunchDialog *dialog = openDialog();
        return dialog && launch(dialog) == QStringLiteral("failed");
    }

    // Plans the MLP on 4 × h100-sxm by dp and launches it with a fault injected in
    // a kernel step of device 2; the plan, once the launch failed there and the
    // Re-plan button offers itself (null otherwise).
    std::shared_ptr<const plan::PlanResult> failOnDevice2() {
        if (!plan(QStringLiteral("h100-sxm"), QStringLiteral("dp"))) return nullptr;
        std::shared_ptr<const plan::PlanResult> p = plans()->result();
        const int step = kernelStepOn(p->plan, 2);
        QPushButton *replan = launches()->replanButton();
        if (step < 0 || !replan->isHidden()) return nullptr;
        launches()->setFailStepForTests(step);
        LaunchDialog *dialog = openDialog();
        if (!dialog || launch(dialog) != QStringLiteral("failed")) return nullptr;
        const QString device = QString::fromStdString(p->plan.devices[2].name);
        if (!replan->isVisible() || !replan->isEnabled() || replan->text() != QStringLiteral("Re-plan without %1").arg(device))
            return nullptr;
        return p;
    }

    // Plans, then waits for the Launch dock to have read the plan's history from
    // the session; the launches it lists (-1: none came).
    int planAndReadHistory(const QString &target, const QString &baseline, int devices = 4) {
        QSignalSpy loaded(launches(), &LaunchController::historyLoaded);
        if (!plan(target, baseline, devices)) return -1;
        if (loaded.count() == 0 && !loaded.wait(kTimeoutMs)) return -1;
        return loaded.back().front().toInt();
    }

    store::Session *session() const { return w.sessions()->session(); }
    qint64 project() const { return w.sessions()->projectId(); }
};

// Holds every launch started afterwards at its first progress report until
// release(): a launch this small can otherwise end before a click lands.
struct HeldLaunches {
    std::shared_ptr<std::atomic_bool> released = std::make_shared<std::atomic_bool>(false);
    explicit HeldLaunches(LaunchWorker *worker) {
        worker->setProgressHook([flag = released](int, int) {
            QElapsedTimer waited;
            waited.start();
            while (!flag->load() && waited.elapsed() < 10000) QThread::msleep(1);
            return false;
        });
    }
    void release() { released->store(true); }
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
        // The Plan dock says how the host's devices share its cores, as `tapestry plan` does.
        QVERIFY2(lw.plans()->summaryLabel()->text().contains(QStringLiteral("cores: the 4 devices share ")) &&
                     lw.plans()->summaryLabel()->text().contains(QStringLiteral("at once, in plan order")),
                 qPrintable(lw.plans()->summaryLabel()->text()));
        const std::shared_ptr<const plan::PlanResult> shown = lw.plans()->result();
        QVERIFY(shown);
        QVERIFY(lc->launchAction()->isEnabled());

        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QVERIFY(dialog->isVisible());
        // The cpu backend, and with a CUDA build the cuda backend: its GPUs, or why it has none.
        QCOMPARE(dialog->backendList()->count(), launch::cuda_backend_built() ? 2 : 1);
        QVERIFY2(dialog->backendList()->item(0)->text().startsWith(QStringLiteral("cpu — cpu: ")),
                 qPrintable(dialog->backendList()->item(0)->text()));
        if (launch::cuda_backend_built()) {
            // The GPUs are looked for off the GUI thread: the row says so until the
            // probe answers, then holds the answer.
            const auto cudaRow = [&] { return dialog->backendList()->item(1)->text(); };
            QVERIFY2(cudaRow().startsWith(QStringLiteral("cuda — ")), qPrintable(cudaRow()));
            QTRY_VERIFY_WITH_TIMEOUT(!cudaRow().contains(QStringLiteral("looking for GPUs")), 20000);
            QVERIFY2(cudaRow().startsWith(QStringLiteral("cuda — ")), qPrintable(cudaRow()));
            if (!launch::cuda_gpus()) QVERIFY2(cudaRow().contains(QStringLiteral("no GPU")), qPrintable(cudaRow()));
        }
        QCOMPARE(dialog->backendList()->currentRow(), 0);
        if (const QString shots = screenshotDir(); !shots.isEmpty()) {
            QTest::qWait(100);
            QVERIFY(dialog->grab().save(QDir(shots).filePath(QStringLiteral("studio-launch-dialog.png"))));
        }
        // The cuda backend's settings (as tapestry launch --transport, --tf32): offered
        // only while it is the backend picked, and carried into its launch.
        QCOMPARE(dialog->transportBox()->count(), 3);
        QVERIFY(!dialog->transportBox()->isEnabled() && !dialog->tf32Box()->isEnabled());
        if (launch::cuda_backend_built()) {
            dialog->backendList()->setCurrentRow(1);
            QVERIFY(dialog->transportBox()->isEnabled() && dialog->tf32Box()->isEnabled());
            dialog->transportBox()->setCurrentIndex(dialog->transportBox()->findData(QStringLiteral("nccl")));
            dialog->tf32Box()->setChecked(true);
            const LaunchSettings picked = dialog->settings();
            QCOMPARE(picked.backend, QStringLiteral("cuda"));
            QCOMPARE(picked.transport, QStringLiteral("nccl"));
            QVERIFY(picked.tf32);
            if (!launch::cuda_gpus()) {
                // No GPU here: refused, saying why, in the dialog (which stays open).
                QCOMPARE(lw.launch(dialog), QStringLiteral("refused"));
                QVERIFY(dialog && dialog->isVisible());
                QVERIFY2(dialog->statusLabel()->text().contains(QStringLiteral("the cuda backend")),
                         qPrintable(dialog->statusLabel()->text()));
            }
            dialog->transportBox()->setCurrentIndex(0);
            dialog->tf32Box()->setChecked(false);
            dialog->backendList()->setCurrentRow(0);
            QVERIFY(!dialog->transportBox()->isEnabled());
        }
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
        const int step = kernelStepOn(p, 2);
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

    // Issue 17: after a fault on a device, the studio offers a plan for the
    // survivors — through the search: the Optimize dock searches again on one
    // device fewer and its fastest feasible plan opens in the Plan dock.
    void replanWithoutTheFailedDevice() {
        LaunchWindow lw;
        QVERIFY(lw.open());
        const std::shared_ptr<const plan::PlanResult> failed_plan = lw.failOnDevice2();
        QVERIFY(failed_plan);
        LaunchController *lc = lw.launches();
        QPushButton *replan = lc->replanButton();
        QPointer<LaunchDialog> dialog;
        QVERIFY2(replan->toolTip().contains(QStringLiteral("Search again on 3 devices of h100-sxm")),
                 qPrintable(replan->toolTip()));

        OptimizeController *oc = lw.w.optimizer();
        oc->budgetBox()->setValue(2);  // seconds: a short search
        oc->evaluationsBox()->setValue(0);
        oc->devicesBox()->setValue(7);  // what the dock said before: the re-plan sets its own
        QVERIFY(oc->selectTarget(QStringLiteral("a100-80gb")));
        PlanController *pc = lw.plans();
        QSignalSpy opened(oc, &OptimizeController::replanOpened);
        QSignalSpy planned(oc, &OptimizeController::pointOpened);
        QTest::mouseClick(replan, Qt::LeftButton);
        QVERIFY(oc->isSearching());
        QVERIFY(oc->isReplanning());
        QVERIFY2(!replan->isEnabled(), "one re-plan at a time");
        QCOMPARE(oc->devicesBox()->value(), 3);
        QVERIFY2(oc->targetBox()->currentText().contains(QStringLiteral("h100-sxm")),
                 qPrintable(oc->targetBox()->currentText()));
        QVERIFY(opened.count() > 0 || opened.wait(kTimeoutMs));
        QVERIFY2(opened.front().at(1).toString().isEmpty(), qPrintable(opened.front().at(1).toString()));
        const QString key = opened.front().at(0).toString();
        QVERIFY(!key.isEmpty());
        // The point opened is the fastest feasible one on the front.
        const views::ParetoPoint *best = oc->chart()->point(key);
        QVERIFY(best);
        for (const views::ParetoPoint *p : oc->chart()->frontPoints())
            if (p->figures.violation == 0) QVERIFY(best->figures.makespan <= p->figures.makespan);
        QVERIFY(planned.count() > 0 || planned.wait(kTimeoutMs));
        QVERIFY2(planned.front().at(1).toString().isEmpty(), qPrintable(planned.front().at(1).toString()));
        const std::shared_ptr<const plan::PlanResult> survivors = pc->result();
        QVERIFY(survivors && survivors != failed_plan);
        QCOMPARE(survivors->plan.devices.size(), size_t{3});
        QCOMPARE(survivors->plan.target, std::string("h100-sxm"));
        QVERIFY(replan->isEnabled() || replan->isHidden());
        if (const QString shots = screenshotDir(); !shots.isEmpty()) {
            // The search's front for the survivors beside the plan it opened, the
            // failed launch still in the Launch dock.
            for (const char *name : {"paletteDock", "minimapDock"})
                if (auto *dock = lw.w.findChild<QDockWidget *>(QString::fromLatin1(name))) dock->close();
            oc->optimizeDock()->show();
            oc->optimizeDock()->raise();
            lw.w.resizeDocks({pc->planDock(), oc->optimizeDock()}, {640, 960}, Qt::Horizontal);
            lw.w.resizeDocks({oc->optimizeDock()}, {520}, Qt::Vertical);
            QTest::qWait(300);
            QVERIFY(lw.w.grab().save(QDir(shots).filePath(QStringLiteral("studio-replan.png"))));
        }
        // The survivors' plan is launchable, and runs.
        lc->setFailStepForTests(-1);
        dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        QVERIFY(replan->isHidden());
    }

    // A plan opened from a kept search run lost a device: the survivors' search
    // starts from that run's front — its plans on 3 devices or fewer are the first
    // generation, as they were — and the dock shows Start from checked.
    void replanStartsFromTheShownRunsFront() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        LaunchWindow lw;
        QVERIFY(lw.open(dir.filePath(QStringLiteral("replan.tapestry-session"))));
        OptimizeController *oc = lw.w.optimizer();
        QVERIFY(oc->selectTarget(QStringLiteral("h100-sxm")));
        oc->devicesBox()->setValue(4);
        oc->nodesBox()->setValue(0);
        oc->budgetBox()->setValue(0);
        oc->evaluationsBox()->setValue(150);
        oc->stallBox()->setValue(0);
        oc->warmStartBox()->setChecked(false);
        QSignalSpy searched(oc, &OptimizeController::searchFinished);
        QTest::mouseClick(oc->startButton(), Qt::LeftButton);
        QVERIFY(searched.count() > 0 || searched.wait(kTimeoutMs));
        QVERIFY2(searched.front().front().toBool(), qPrintable(oc->lastError()));
        QString on_four;
        QSet<QString> on_three;
        for (const views::ParetoPoint *p : oc->chart()->frontPoints()) {
            if (p->figures.devices == 4 && on_four.isEmpty()) on_four = p->key;
            if (p->figures.devices <= 3) on_three.insert(p->description);
        }
        QVERIFY2(!on_four.isEmpty(), "no plan of the front uses all 4 devices");
        QVERIFY(!on_three.isEmpty());
        QSignalSpy opened(oc, &OptimizeController::pointOpened);
        QVERIFY(oc->openPoint(on_four));
        QVERIFY(opened.count() > 0 || opened.wait(kTimeoutMs));
        QVERIFY2(opened.front().at(1).toString().isEmpty(), qPrintable(opened.front().at(1).toString()));
        QVERIFY(lw.launchFailingOn(2));
        LaunchController *lc = lw.launches();

        QSignalSpy replanned(oc, &OptimizeController::replanOpened);
        QSignalSpy planned(oc, &OptimizeController::pointOpened);
        QVERIFY(lc->replanWithoutFailedDevice());
        QVERIFY(oc->warmStartBox()->isChecked());
        QVERIFY2(oc->progressLabel()->text().contains(QStringLiteral("from run #1's front")),
                 qPrintable(oc->progressLabel()->text()));
        QVERIFY(replanned.count() > 0 || replanned.wait(kTimeoutMs));
        QVERIFY2(replanned.front().at(1).toString().isEmpty(), qPrintable(replanned.front().at(1).toString()));
        // Each is evaluated in the first generation (as a warm start, or as the
        // seed it equals: the unsplit plan is both).
        QSet<QString> first_generation;
        int warm = 0;
        for (const views::ParetoPoint &p : oc->chart()->points()) {
            if (p.generation == 0) first_generation.insert(p.description);
            if (p.mutator == QStringLiteral("warm start")) ++warm;
        }
        QVERIFY(warm > 0);
        for (const QString &plan : on_three) QVERIFY2(first_generation.contains(plan), qPrintable(plan));
        QVERIFY(planned.count() > 0 || planned.wait(kTimeoutMs));
        QVERIFY2(planned.front().at(1).toString().isEmpty(), qPrintable(planned.front().at(1).toString()));
        QCOMPARE(lw.plans()->result()->plan.devices.size(), size_t{3});
        oc->warmStartBox()->setChecked(false);
    }

    // A plan of a graph too large (rows 2^32, a valid graph) is refused in the
    // dialog before its inputs are made: the allocation used to end the studio.
    void aPlanTooLargeIsRefusedBeforeItsInputs() {
        QTemporaryDir dir;
        const QString huge = dir.filePath(QStringLiteral("huge.tapestry.json"));
        QVERIFY(tapestry::test::write_huge_mlp(huge, qint64{1} << 32));
        LaunchWindow lw;
        QVERIFY(lw.open());
        QVERIFY(openAndWait(lw.w, huge));
        QVERIFY(lw.plan(QStringLiteral("h100-sxm"), QStringLiteral("dp"), 2));
        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("refused"));
        const QString said = lw.w.statusBar()->currentMessage();
        QVERIFY2(said.startsWith(QStringLiteral("Not launched: device 0:0 needs")) && said.contains(QStringLiteral("more than the")),
                 qPrintable(said));
        QVERIFY(dialog);
        QVERIFY2(dialog->statusLabel()->text().startsWith(QStringLiteral("Not launched: device 0:0 needs")),
                 qPrintable(dialog->statusLabel()->text()));
    }

    // Without a search to go through, the Plan dock plans the survivors by the
    // launched plan's own baseline.
    void replanByTheBaselineWithoutASearch() {
        LaunchWindow lw;
        QVERIFY(lw.open());
        lw.launches()->setOptimizer(nullptr);
        const std::shared_ptr<const plan::PlanResult> failed_plan = lw.failOnDevice2();
        QVERIFY(failed_plan);
        LaunchController *lc = lw.launches();
        QPushButton *replan = lc->replanButton();
        QPointer<LaunchDialog> dialog;
        QVERIFY2(replan->toolTip().contains(QStringLiteral("baseline (dp) on 3 devices instead of 4")),
                 qPrintable(replan->toolTip()));

        // The launched plan's settings, not what the dock's widgets say since.
        PlanController *pc = lw.plans();
        pc->devicesBox()->setValue(7);
        pc->baselineBox()->setCurrentText(QStringLiteral("tp"));
        QVERIFY(pc->selectTarget(QStringLiteral("a100-80gb")));
        QSignalSpy planned(pc, &PlanController::planFinished);
        QTest::mouseClick(replan, Qt::LeftButton);
        QVERIFY(pc->isPlanning());
        QVERIFY2(!replan->isEnabled(), "one re-plan at a time");
        QVERIFY(planned.count() > 0 || planned.wait(kTimeoutMs));
        QVERIFY2(planned.front().front().toBool(), qPrintable(pc->lastError()));
        const std::shared_ptr<const plan::PlanResult> survivors = pc->result();
        QVERIFY(survivors && survivors != failed_plan);
        QCOMPARE(survivors->plan.devices.size(), size_t{3});
        QCOMPARE(survivors->plan.target, std::string("h100-sxm"));
        QCOMPARE(pc->devicesBox()->value(), 3);  // as if the user had set it and pressed Plan
        QCOMPARE(pc->baselineBox()->currentText(), QStringLiteral("dp"));
        QVERIFY(pc->shownSettings());
        QCOMPARE(pc->shownSettings()->devices, 3);
        QVERIFY(pc->planDock()->isVisible());
        // The survivors' plan is launchable, and runs.
        lc->setFailStepForTests(-1);
        dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        QVERIFY(replan->isHidden());
    }

    void replanIsRefusedOnOneDevice() {
        LaunchWindow lw;
        QVERIFY(lw.open());
        QVERIFY(lw.plan(QStringLiteral("h100-sxm"), QStringLiteral("none"), 1));
        const int step = kernelStepOn(lw.plans()->result()->plan, 0);
        QVERIFY(step >= 0);
        LaunchController *lc = lw.launches();
        lc->setFailStepForTests(step);
        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("failed"));
        QCOMPARE(lc->lastOutcome().result.fault.device, 0);
        QVERIFY(lc->replanButton()->isVisible());
        QVERIFY(!lc->replanButton()->isEnabled());
        QCOMPARE(lc->replanButton()->toolTip(),
                 QStringLiteral("The plan ran on one device: no device is left to plan on"));
        QVERIFY(!lc->replanWithoutFailedDevice());
        QVERIFY(!lw.plans()->isPlanning());
    }

    // Planned on 4 devices over 2 nodes, the survivors do not spread over them: the
    // Plan dock refuses as it would had the user asked for 3 devices on 2 nodes.
    void replanRefusalShowsInThePlanDock() {
        LaunchWindow lw;
        QVERIFY(lw.open());
        lw.launches()->setOptimizer(nullptr);  // the Plan dock's path
        PlanController *pc = lw.plans();
        pc->nodesBox()->setValue(2);
        QVERIFY(pc->selectTarget(QStringLiteral("h100-sxm")));
        pc->devicesBox()->setValue(4);
        pc->baselineBox()->setCurrentText(QStringLiteral("dp"));
        QSignalSpy first(pc, &PlanController::planFinished);
        pc->planAction()->trigger();
        QVERIFY(first.count() > 0 || first.wait(kTimeoutMs));
        QVERIFY2(first.front().front().toBool(), qPrintable(pc->lastError()));
        const std::shared_ptr<const plan::PlanResult> shown = pc->result();
        QVERIFY(lw.launchFailingOn(2));
        LaunchController *lc = lw.launches();
        QSignalSpy planned(pc, &PlanController::planFinished);
        QVERIFY(lc->replanWithoutFailedDevice());
        QVERIFY(planned.count() > 0 || planned.wait(kTimeoutMs));
        QCOMPARE(planned.front().front().toBool(), false);
        QVERIFY2(pc->summaryLabel()->text().contains(QStringLiteral("Not planned:")) &&
                     pc->summaryLabel()->text().contains(QStringLiteral("3 devices do not spread evenly over 2 nodes")),
                 qPrintable(pc->summaryLabel()->text()));
        QCOMPARE(pc->result(), shown);  // the plan shown stays
        QVERIFY(lc->replanButton()->isEnabled());
    }

    // Issue 17: the history was filled only by launches made in this window.
    void historyIsReadBackFromTheSession() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("history.tapestry-session"));
        store::PlanId first = 0;
        {
            LaunchWindow lw;
            QVERIFY(lw.open(path));
            LaunchController *lc = lw.launches();
            QCOMPARE(lw.planAndReadHistory(QStringLiteral("h100-sxm"), QStringLiteral("dp")), 0);
            QCOMPARE(lc->historyTable()->rowCount(), 0);
            QCOMPARE(lc->historyCaption()->text(), QStringLiteral("The plan shown has not been launched in this session"));
            QPointer<LaunchDialog> dialog = lw.openDialog();
            QVERIFY(dialog);
            QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
            first = lc->lastOutcome().plan_id;
            QVERIFY2(first != 0, qPrintable(lc->lastOutcome().record_error));
            QCOMPARE(lc->historyTable()->rowCount(), 1);
            // Kept with no calibration points, and the status says why: an H100 plan run on this CPU.
            QVERIFY2(lc->statusLabel()->text().contains(
                         QStringLiteral("no calibration points: the cpu backend does not measure target h100-sxm")),
                     qPrintable(lc->statusLabel()->text()));

            // Another plan: its own (empty) history; the first one again: its launch.
            QCOMPARE(lw.planAndReadHistory(QStringLiteral("h100-sxm"), QStringLiteral("dp"), 2), 0);
            QCOMPARE(lc->historyTable()->rowCount(), 0);
            QCOMPARE(lw.planAndReadHistory(QStringLiteral("h100-sxm"), QStringLiteral("dp")), 1);
            QCOMPARE(lc->historyTable()->rowCount(), 1);
            QCOMPARE(lc->historyTable()->item(0, 2)->text(), QStringLiteral("ok"));
            QCOMPARE(lc->historyCaption()->text(), QStringLiteral("Launches of the plan shown kept in the session: 1"));
            // Its next launch adds to the plan found instead of saving it again.
            dialog = lw.openDialog();
            QVERIFY(dialog);
            QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
            QCOMPARE(lc->lastOutcome().plan_id, first);
            QCOMPARE(lw.session()->plans(lw.project())->size(), size_t{1});
            QCOMPARE(lc->historyTable()->rowCount(), 2);
        }
        // The session opened anew: the same plan lists both launches, newest first.
        LaunchWindow lw;
        QVERIFY(lw.open(path));
        QCOMPARE(lw.planAndReadHistory(QStringLiteral("h100-sxm"), QStringLiteral("dp")), 2);
        QTableWidget *history = lw.launches()->historyTable();
        QCOMPARE(history->rowCount(), 2);
        const auto kept = lw.session()->launches(first);
        QVERIFY(kept);
        QCOMPARE(history->item(0, 0)->text(), localTimeText(kept->back().started_at));
        QCOMPARE(history->item(1, 0)->text(), localTimeText(kept->front().started_at));
    }

    // A plan opened from a file is not the document's: its launches are kept as
    // `tapestry launch --session` keeps them, under "<graph> (launched plans)",
    // one plan however often it is launched — not on the canvas project's version
    // (it was kept there, even with another project on the canvas).
    void planFileLaunchesAreKeptApart() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("files.tapestry-session"));
        const QString file = dir.filePath(QStringLiteral("mlp-dp.plan.json"));
        LaunchWindow lw;
        QVERIFY(lw.open(path));
        LaunchController *lc = lw.launches();
        PlanController *pc = lw.plans();
        QVERIFY(lw.plan(QStringLiteral("h100-sxm"), QStringLiteral("dp")));
        QSignalSpy exported(pc, &PlanController::planExported);
        QVERIFY(pc->exportPlan(file));
        QVERIFY(exported.count() > 0 || exported.wait(kTimeoutMs));
        const qint64 canvas = lw.project();
        QVERIFY(canvas != 0);
        const size_t canvas_plans = lw.session()->plans(canvas)->size();

        // Another project on the canvas, then the MLP's plan file opened.
        QVERIFY(openAndWait(lw.w, examplePath(QStringLiteral("attention"))));
        QSignalSpy opened(pc, &PlanController::planOpened), loaded(lc, &LaunchController::historyLoaded);
        QVERIFY(pc->openPlan(file));
        QVERIFY(opened.count() > 0 || opened.wait(kTimeoutMs));
        QCOMPARE(opened.front().at(1).toString(), QString());
        QVERIFY(loaded.count() > 0 || loaded.wait(kTimeoutMs));
        QCOMPARE(loaded.back().front().toInt(), 0);
        QCOMPARE(lc->historyCaption()->text(), QStringLiteral("The plan shown has not been launched in this session"));

        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        const store::PlanId kept = lc->lastOutcome().plan_id;
        QVERIFY2(kept != 0, qPrintable(lc->lastOutcome().record_error));
        auto projects = lw.session()->projects();
        QVERIFY(projects);
        qint64 launched = 0;
        for (const store::ProjectInfo &info : *projects)
            if (info.name == "mlp (launched plans)") launched = info.id;
        QVERIFY(launched != 0);
        QVERIFY(launched != lw.project());
        QCOMPARE(lw.session()->plans(launched)->size(), size_t{1});
        QCOMPARE(lw.session()->plans(launched)->front().id, kept);
        QCOMPARE(lw.session()->plans(canvas)->size(), canvas_plans);  // the MLP's own project: untouched
        // Nor the attention project's, on the canvas when the plan was launched.
        QVERIFY(lw.project() != 0 && lw.project() != canvas && lw.project() != launched);
        QCOMPARE(lw.session()->plans(lw.project())->size(), size_t{0});

        // Launched again: the same plan's second launch.
        dialog = lw.openDialog();
        QVERIFY(dialog);
        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        QCOMPARE(lc->lastOutcome().plan_id, kept);
        QCOMPARE(lc->historyTable()->rowCount(), 2);

        // Planned here, then the file opened again: its history is read back from there.
        QVERIFY(lw.plan(QStringLiteral("h100-sxm"), QStringLiteral("dp"), 2));
        loaded.clear();
        QVERIFY(pc->openPlan(file));
        QVERIFY(loaded.count() > 0 || loaded.wait(kTimeoutMs));
        QCOMPARE(loaded.back().front().toInt(), 2);
        QCOMPARE(lc->historyCaption()->text(), QStringLiteral("Launches of the plan shown kept in the session: 2"));
    }

    // Regression: the worker recorded a cancelled launch after the window had
    // dropped its outcome — the history missed it and the next launch saved the
    // plan a second time.
    void cancelledLaunchReachesTheHistory() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        LaunchWindow lw;
        QVERIFY(lw.open(dir.filePath(QStringLiteral("cancel.tapestry-session"))));
        QCOMPARE(lw.planAndReadHistory(QStringLiteral("h100-sxm"), QStringLiteral("dp")), 0);
        LaunchController *lc = lw.launches();
        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        {
            HeldLaunches held(lc->launchWorker());
            QSignalSpy recorded(lc->launchWorker(), &LaunchWorker::recorded);
            QTest::mouseClick(dialog->launchButton(), Qt::LeftButton);
            QVERIFY(lc->isLaunching());
            QTest::mouseClick(dialog->cancelButton(), Qt::LeftButton);
            QVERIFY(!lc->isLaunching());
            lc->launchWorker()->setProgressHook({});
            held.release();
            QVERIFY(recorded.count() > 0 || recorded.wait(kTimeoutMs));
        }
        QCOMPARE(lc->historyTable()->rowCount(), 1);
        QCOMPARE(lc->historyTable()->item(0, 2)->text(), QStringLiteral("cancelled"));
        QVERIFY2(lc->statusLabel()->text().contains(QStringLiteral("Kept in the session as cancelled")),
                 qPrintable(lc->statusLabel()->text()));
        auto plans = lw.session()->plans(lw.project());
        QVERIFY(plans);
        QCOMPARE(plans->size(), size_t{1});

        QCOMPARE(lw.launch(dialog), QStringLiteral("ok"));
        QCOMPARE(lc->lastOutcome().plan_id, plans->front().id);
        QCOMPARE(lw.session()->plans(lw.project())->size(), size_t{1});
        QCOMPARE(lc->historyTable()->rowCount(), 2);
        QCOMPARE(lc->historyTable()->item(1, 2)->text(), QStringLiteral("cancelled"));
    }

    // The same, with the next launch started before the cancelled one has stopped.
    void launchQueuedBehindACancelledOneReusesItsPlan() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        LaunchWindow lw;
        QVERIFY(lw.open(dir.filePath(QStringLiteral("queued.tapestry-session"))));
        QCOMPARE(lw.planAndReadHistory(QStringLiteral("h100-sxm"), QStringLiteral("dp")), 0);
        LaunchController *lc = lw.launches();
        QPointer<LaunchDialog> dialog = lw.openDialog();
        QVERIFY(dialog);
        HeldLaunches held(lc->launchWorker());
        QTest::mouseClick(dialog->launchButton(), Qt::LeftButton);
        QTest::mouseClick(dialog->cancelButton(), Qt::LeftButton);
        QVERIFY(lc->launchWorker()->isWorking());  // still held: it has recorded nothing yet
        lc->launchWorker()->setProgressHook({});
        QSignalSpy finished(lc, &LaunchController::launchFinished);
        QTest::mouseClick(dialog->launchButton(), Qt::LeftButton);
        QVERIFY(lc->isLaunching());
        held.release();
        QVERIFY(finished.count() > 0 || finished.wait(kTimeoutMs));
        QCOMPARE(finished.front().front().toString(), QStringLiteral("ok"));
        auto plans = lw.session()->plans(lw.project());
        QVERIFY(plans);
        QCOMPARE(plans->size(), size_t{1});
        QCOMPARE(lc->lastOutcome().plan_id, plans->front().id);
        auto kept = lw.session()->launches(plans->front().id);
        QVERIFY(kept);
        QCOMPARE(kept->size(), size_t{2});
        QCOMPARE(kept->front().status, std::string("cancelled"));
        QCOMPARE(kept->back().status, std::string("ok"));
        QCOMPARE(lc->historyTable()->rowCount(), 2);
    }
};

QTEST_MAIN(TestLaunchDock)
#include "test_launch_dock.moc"
