// The Launch dock (issue 17, docs/launch.md, docs/user-guide.md "Launching a
// plan"): Launch Plan… (Ctrl+Alt+L) opens a dialog on the plan the Plan dock
// shows — backend, inputs, oracle, wait timeout — and launches it off the GUI
// thread (views/launch_worker.h) with progress and a Cancel that works at once.
// The dock then shows what ran, every figure labelled measured or prediction: the
// status and fault (step, device) or the output check, the Gantt with the
// measured bars under the predicted ones, the scatter of predicted against
// measured step times with the median relative error and Kendall's τ, a row per
// device (measured peak against predicted peak, and the arena), and — with a
// session open, where every launch is recorded — the plan's launch history.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <memory>

#include "plan/planner.h"
#include "store/session.h"
#include "views/launch_dialog.h"
#include "views/launch_worker.h"

class QAction;
class QDockWidget;
class QLabel;
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

class PlanController;
class SessionController;

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

signals:
    // A launch ended: "ok", "failed", "cancelled" (launch::LaunchResult::status) or
    // "refused" (nothing ran; the dialog says why).
    void launchFinished(const QString &status);

private:
    void createActions();
    void createDock(QWidget *window);
    QWidget *createHeader(QWidget *parent);
    void onProgress(quint64 job, int done, int total, const QString &phase);
    void onFinished(quint64 job, const views::LaunchOutcome &outcome);
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
    views::PlanGantt *gantt_ = nullptr;
    views::LaunchScatter *scatter_ = nullptr;

    std::shared_ptr<const plan::PlanResult> pending_;   // the plan being launched
    std::shared_ptr<const plan::PlanResult> launched_;  // the plan the dock shows a launch of
    views::LaunchOutcome outcome_;
    // The plan as saved in the session by an earlier launch (reused by the next of it).
    std::weak_ptr<const plan::PlanResult> saved_plan_;
    store::PlanId saved_plan_id_ = 0;
    std::weak_ptr<store::Session> saved_in_;
    int fail_step_ = -1;
    bool dock_sized_ = false;
    bool tables_fitted_ = false;  // the tables got the width of the device table's columns
};

}  // namespace tapestry::studio
