// The Launch dock (issue 17, docs/launch.md, docs/user-guide.md "Launching a
// plan"): Launch Plan… (Ctrl+Alt+L) opens a dialog on the plan the Plan dock
// shows — backend, inputs, oracle, wait timeout — and launches it off the GUI
// thread (views/launch_worker.h) with progress and a Cancel that works at once.
// The dock then shows what ran, every figure labelled measured or prediction: the
// status and fault (step, device) or the output check, the Gantt with the
// measured bars under the predicted ones, the scatter of predicted against
// measured step times with the median relative error and Kendall's τ, a row per
// device (measured peak against predicted peak, and the arena), and — with a
// session open, where every launch is recorded — the launch history of the plan
// the Plan dock shows, read back from the session (the plan found there by its
// content) whenever the Plan dock shows another plan. A launch that failed on a
// device offers "Re-plan without <device>": the same graph, target and rule or
// baseline planned in the Plan dock on one device fewer.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QPointer>
#include <QString>
#include <memory>

#include "plan/planner.h"
#include "plan_controller.h"
#include "store/session.h"
#include "views/launch_dialog.h"
#include "views/launch_worker.h"

class QAction;
class QDockWidget;
class QLabel;
class QPushButton;
class QSplitter;
class QStatusBar;
class QTableWidget;
class QWidget;

namespace tapestry::views {
class GraphDocument;
class LaunchScatter;
class PlanGantt;
}  // namespace tapestry::views

namespace tapestry::studio {

class SessionController;
class OptimizeController;

class LaunchController : public QObject {
    Q_OBJECT
public:
    LaunchController(views::GraphDocument *doc, SessionController *session, PlanController *plans, QStatusBar *status,
                     QWidget *window);
    ~LaunchController() override;

    QDockWidget *launchDock() const { return dock_; }
    QAction *launchAction() const { return launch_action_; }  // enabled while the Plan dock shows a plan
    views::LaunchWorker *launchWorker() const { return worker_; }

    // Opens the dialog on the plan shown (null: none is); it stays open while the
    // launch runs and closes when one has run.
    views::LaunchDialog *openLaunchDialog();
    views::LaunchDialog *launchDialog() const { return dialog_; }
    // Launches the plan shown with `settings`, off the GUI thread; false when there
    // is no plan or a launch runs. See launchFinished.
    bool startLaunch(const views::LaunchSettings &settings);
    // The dock is idle at once; the launch stops at its next polling point.
    void cancelLaunch();
    bool isLaunching() const;
    // The last launch's outcome (what the dock shows).
    const views::LaunchOutcome &lastOutcome() const { return outcome_; }
    // The plan that launch ran (null: none yet).
    std::shared_ptr<const plan::PlanResult> launchedPlan() const { return launched_; }

    // Tests: later launches fail step `step` as a kernel fault would (-1: none).
    void setFailStepForTests(int step) { fail_step_ = step; }

    // The dock's widgets (the GUI suites read them).
    QLabel *statusLabel() const { return status_label_; }
    QLabel *equivalenceLabel() const { return equivalence_; }
    views::PlanGantt *gantt() const { return gantt_; }
    views::LaunchScatter *scatter() const { return scatter_; }
    QTableWidget *deviceTable() const { return devices_; }
    QTableWidget *historyTable() const { return history_; }
    QLabel *historyCaption() const { return history_caption_; }
    // "Re-plan without <device>": shown after a launch that failed on a device.
    QPushButton *replanButton() const { return replan_button_; }

    // Plans the last launch's graph again without the device its fault names:
    // through the Optimize dock's search on one device fewer, opening its fastest
    // feasible plan (OptimizeController::replanOn); without a search (none given,
    // or its target not listed there), by the Plan dock's rule or baseline of the
    // launched plan (PlanController::replanWithDevices). False when neither starts.
    bool replanWithoutFailedDevice();
    // The Optimize dock re-plans go through (null: the Plan dock's rule only).
    void setOptimizer(OptimizeController *optimizer);

signals:
    // A launch ended: "ok", "failed", "cancelled" (launch::LaunchResult::status) or
    // "refused" (nothing ran; the dialog says why).
    void launchFinished(const QString &status);
    // The history table was read back from the session for the plan shown.
    void historyLoaded(int launches);
    // The cuda backend answered the probe the launch dialog started (its row is filled in).
    void backendsProbed();

private:
    void createActions();
    void createDock(QWidget *window);
    QWidget *createHeader(QWidget *parent);
    void onProgress(quint64 job, int done, int total, const QString &phase);
    void onFinished(quint64 job, const views::LaunchOutcome &outcome);
    void onRecorded(quint64 job, const views::LaunchOutcome &outcome);
    void lookUpHistory();
    void showBackends();
    void probeCuda();
    void setHistory(std::vector<store::LaunchRecord> records, store::LaunchId current);
    void updateReplanButton();
    void showOutcome();
    void showStatus();
    void showEquivalence();
    void fillDeviceTable();
    void fillHistory();
    void fitTables();
    std::optional<cost::Target> uncalibratedTarget(const plan::Plan &plan) const;
    void updateActions();

    views::GraphDocument *doc_;
    SessionController *session_;
    PlanController *plans_;
    OptimizeController *optimizer_ = nullptr;
    QStatusBar *status_;
    QWidget *window_;
    views::LaunchWorker *worker_ = nullptr;
    QPointer<views::LaunchDialog> dialog_;
    views::LaunchSettings settings_;  // the dialog's last settings
    QDockWidget *dock_ = nullptr;
    QAction *launch_action_ = nullptr;
    QLabel *measured_badge_ = nullptr;
    QLabel *status_label_ = nullptr;
    QLabel *verdict_ = nullptr;
    QLabel *equivalence_ = nullptr;
    QSplitter *splitter_ = nullptr;
    QTableWidget *devices_ = nullptr;
    QTableWidget *history_ = nullptr;
    QLabel *history_caption_ = nullptr;
    QPushButton *replan_button_ = nullptr;
    views::PlanGantt *gantt_ = nullptr;
    views::LaunchScatter *scatter_ = nullptr;

    std::shared_ptr<const plan::PlanResult> pending_;   // the plan being launched
    std::weak_ptr<store::Session> pending_in_;          // the session it is kept in
    std::optional<PlanSettings> pending_settings_;      // what the Plan dock planned it with
    std::shared_ptr<const plan::PlanResult> launched_;  // the plan the dock shows a launch of
    std::optional<PlanSettings> launched_settings_;
    views::LaunchOutcome outcome_;
    // A cancelled launch still on its way to the session (see onRecorded).
    quint64 cancelled_job_ = 0;
    std::weak_ptr<const plan::PlanResult> cancelled_plan_;
    std::weak_ptr<store::Session> cancelled_in_;
    // The history table: the launches of the plan the Plan dock shows, oldest first,
    // the one this window launched last in bold; a session read under way is
    // dropped when the generation has moved on.
    std::vector<store::LaunchRecord> history_records_;
    store::LaunchId history_current_ = 0;
    quint64 history_generation_ = 0;
    // The plan as saved in the session by an earlier launch (reused by the next of it).
    std::weak_ptr<const plan::PlanResult> saved_plan_;
    store::PlanId saved_plan_id_ = 0;
    std::weak_ptr<store::Session> saved_in_;
    int fail_step_ = -1;
    // The cuda backend's answer (its GPUs, or why it has none), once asked off the
    // GUI thread; the probe under way.
    std::optional<views::LaunchBackendInfo> cuda_info_;
    QFutureWatcher<views::LaunchBackendInfo> *cuda_probe_ = nullptr;
    bool dock_sized_ = false;
    bool tables_fitted_ = false;  // the tables got the width of the device table's columns
};

}  // namespace tapestry::studio
