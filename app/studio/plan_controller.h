// The Plan dock (issue 15, DESIGN.md §6, §9): plans the graph the canvas shows —
// the stage the Stages dock shows, else the document's graph — on a hardware
// target, off the GUI thread (views/plan_worker.h) with Cancel: a target, a device
// and node count, and a placement rule or a hand baseline. It shows what the plan
// predicts (every figure labelled a prediction) with the plan certificate's badge,
// a row per device, the Gantt chart of the steps and the memory chart, and colours
// the canvas's operations and shards by device. A bar's click selects its node.
// Export Plan… writes the plan file, Open Plan… shows one (as exported here, by
// `tapestry plan -o` or `optimize --export-plan`), ready to launch; Copy Target… edits a copy of a target as JSON,
// a user target kept in the session (or in this window when none is open).
//
// The host CPU's target is measured on first use (a oneDNN GEMM and a memory
// bandwidth probe, views/plan_worker.h) with progress and Cancel, kept in the
// session as its "measured" target and listed as "host (measured <date>)";
// Measure Host Again replaces it. Opening a session lists its targets.
#pragma once

#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cost/target.h"
#include "plan/planner.h"
#include "store/session.h"
#include "views/file_kind.h"
#include "views/graph_document.h"

class QAction;
class QComboBox;
class QDialog;
class QDockWidget;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QStatusBar;
class QTableWidget;
class QToolButton;
class QWidget;

namespace tapestry::views {
class MemoryChart;
class PlanGantt;
class PlanWorker;
struct HostOutcome;
struct PlanOutcome;
}  // namespace tapestry::views

namespace tapestry::studio {

class CanvasController;
class SessionController;

// What the Plan dock planned a plan with: its widgets' settings when Plan was
// pressed, and the graph the canvas showed.
struct PlanSettings {
    QString target;      // as selectTarget takes it: a built-in's name, or "name (user)"
    int devices = 1;
    int nodes = 0;       // 0: auto
    QString placement;   // the placement rule
    QString baseline;    // the baseline box's text ("none": the placement rules)
    QString order;       // the order box's text ("auto": by readiness for a pipeline)
    Graph graph;         // the graph planned
};

class PlanController : public QObject {
    Q_OBJECT
public:
    PlanController(views::GraphDocument *doc, CanvasController *canvas, SessionController *session, QStatusBar *status,
                   QWidget *window);
    ~PlanController() override;

    QDockWidget *planDock() const { return dock_; }
    QAction *planAction() const { return plan_action_; }  // Ctrl+Alt+P: Ctrl+Shift+P searches the palette
    QAction *cancelAction() const { return cancel_action_; }
    QAction *exportAction() const { return export_action_; }
    QAction *openAction() const { return open_action_; }
    QAction *copyTargetAction() const { return copy_target_action_; }
    QAction *measureHostAction() const { return measure_host_action_; }
    views::PlanWorker *planWorker() const { return worker_; }
    // Puts a button for `action` (the Launch dock's Launch Plan…) beside Export Plan….
    void addLaunchAction(QAction *action);

    // The dock's widgets (the GUI suites drive them).
    QComboBox *targetBox() const { return target_box_; }
    QSpinBox *devicesBox() const { return devices_box_; }
    QSpinBox *nodesBox() const { return nodes_box_; }
    QComboBox *placementBox() const { return placement_box_; }
    QComboBox *baselineBox() const { return baseline_box_; }
    QComboBox *orderBox() const { return order_box_; }
    QPushButton *planButton() const { return plan_button_; }
    QPushButton *cancelButton() const { return cancel_button_; }
    QPushButton *exportButton() const { return export_button_; }
    QPushButton *openButton() const { return open_button_; }
    QProgressBar *progressBar() const { return busy_; }  // shown while planning or measuring
    QLabel *summaryLabel() const { return summary_; }
    QLabel *certificateLabel() const { return certificate_; }
    QTableWidget *deviceTable() const { return table_; }
    views::PlanGantt *gantt() const { return gantt_; }
    views::MemoryChart *memoryChart() const { return memory_; }

    // Picks a target: a built-in name ("h100-sxm") or a user copy ("mine (user)"
    // or "mine"); false when there is none.
    bool selectTarget(const QString &name);
    // Plans the graph the canvas shows with the dock's settings, off the GUI
    // thread; false when nothing is open or a plan is running. With the host
    // target not yet measured, it measures first (see hostMeasured), then plans.
    // See planFinished.
    bool startPlan();
    // The dock is idle at once; the planner or the probe stops at its next polling point.
    void cancelPlan();
    bool isPlanning() const;  // a plan, or the measurement before one, is under way
    bool isMeasuring() const;
    // Measures the host CPU off the GUI thread (about a second) and keeps it in the
    // session; `then_plan`: plans afterwards. False while a plan or measurement runs.
    bool measureHost(bool then_plan = false);
    // The host's measured target (none: not measured in this session or window).
    const std::optional<cost::Target> &measuredHost() const { return host_; }
    // The plan shown (null: none yet, or the document was replaced) and the last error.
    std::shared_ptr<const plan::PlanResult> result() const { return result_; }
    QString lastError() const { return last_error_; }
    // The memory of one device of the planned target, in bytes.
    double capacity() const { return capacity_; }
    // The settings the plan shown was made with; none when it was made elsewhere
    // (showPlan: the Optimize dock's search) or no plan is shown.
    const std::optional<PlanSettings> &shownSettings() const { return shown_settings_; }
    // Plans again as `settings` say but on `devices` devices, as if the user had set
    // the dock's widgets so and pressed Plan (the Launch dock's "Re-plan without
    // <device>"). False, with the reason in the dock's summary and lastError(), when
    // the canvas shows another graph than `settings.graph` or the target is gone;
    // false while a plan runs. A refusal of the planner itself arrives as usual.
    bool replanWithDevices(const PlanSettings &settings, int devices);

    // Shows a plan made elsewhere (a point of the Optimize dock's front) as a plan
    // of this dock: summary, certificate, device table, Gantt, memory chart and the
    // canvas coloured by device. `planned` is the graph it was made from, `target`
    // its target as the list names it, `capacity` a device's memory in bytes,
    // `openedFrom` the plan file it was read from (openedFrom()). A plan under way
    // is cancelled.
    void showPlan(std::shared_ptr<const plan::PlanResult> result, const Graph &planned, const QString &target,
                  double capacity, const QString &openedFrom = QString());

    // Writes the plan shown, with its prediction, to `path` off the GUI thread;
    // false when there is none. See planExported.
    bool exportPlan(const QString &path);
    void exportPlanDialog();
    // Reads the plan file at `path` off the GUI thread (plan::read_plan_result: its
    // prediction simulated again from its steps, the plan certificate made afresh)
    // and shows it as a plan of this dock, which the Launch dock can then launch;
    // its target's device memory, where the dock knows the target, for the memory
    // figures. False while a plan runs. See planOpened.
    bool openPlan(const QString &path);
    void openPlanDialog();
    // After a file that is no plan: when it is a project, a model or a session, asks
    // (window-modal, not blocking) whether to open it as that — see openElsewhereRequested.
    void offerToOpenAs(const QString &path, views::FileKind kind);
    // saveUserTarget's keeping of a parsed target: "" or why not.
    QString keepUserTarget(cost::Target t);
    // The plan file the plan shown was read from (empty: planned here or by a search).
    const QString &openedFrom() const { return opened_; }
    // Opens the editor on a copy of the selected target (returned for tests).
    QDialog *openTargetEditor();
    // Keeps a user target given as JSON (replacing one of the same name) and
    // selects it: "" or why not — parse_target's message with its JSON path. It is
    // saved in the session off the GUI thread (see targetStored).
    QString saveUserTarget(const QString &json);
    // Reads a target file (tapestry-target JSON) off the GUI thread and keeps it
    // as a user target, selected (a built-in target's own file selects that
    // target); see targetFileOpened. File ▸ Open, a drop and Open Plan… route
    // target files here.
    bool openTargetFile(const QString &path);
    // Removes a user target from the list and the session: "" or why not.
    QString deleteUserTarget(const QString &name);
    const std::vector<cost::Target> &userTargets() const { return user_targets_; }

signals:
    void planFinished(bool ok);
    void planExported(const QString &path, const QString &error);
    // A plan file was read and shown, or not: "" or the error (the file and field).
    void planOpened(const QString &path, const QString &error);
    // The file given to Open Plan was a project, a model or a session, and the user
    // chose to open it as that (the main window's open, with its questions).
    void openElsewhereRequested(const QString &path);
    // A target file was added (or its built-in target selected): "" or why not.
    void targetFileOpened(const QString &path, const QString &error);
    // A measurement of the host ended: ok, or failed / cancelled (the status bar says which).
    void hostMeasured(bool ok);
    // A target was saved into (or deleted from) the session: "" or the error.
    void targetStored(const QString &name, const QString &error);
    // The targets of the session just opened are listed (user copies, measured host).
    void targetsLoaded(const QString &error);
    // The plan shown changed: a new one, or none (result() says which).
    void resultChanged();

private:
    void createDock(QWidget *window);
    QWidget *createSettingsRow(QWidget *parent);
    QWidget *createSummaryRow(QWidget *parent);
    void createActions();
    void fillTargets(const QString &select);
    QString selectionName() const;  // what fillTargets reselects: "name (user)", or a built-in's name
    Expected<cost::Target, std::string> selectedTarget() const;
    bool selectedNeedsMeasuring() const;  // the built-in host, not measured yet
    // The session's targets, read off the GUI thread when another session is open.
    void loadSessionTargets();
    void showSessionTargets(const std::vector<cost::Target> &user, const std::optional<cost::Target> &host,
                            const QString &host_when);
    // Changes the session's target `name` off the GUI thread (see targetStored).
    void writeTarget(const QString &name, std::function<store::Status(store::Session &)> write);
    void onMeasureProgress(quint64 job, double fraction, const QString &what);
    void onHostMeasured(quint64 job, const views::HostOutcome &outcome);
    void onDocumentChanged(views::GraphDocument::Changes what);
    void onPlanFinished(quint64 job, const views::PlanOutcome &outcome);
    void showResult();
    void showSummary();
    void fillDeviceTable();
    void fitDeviceTable();
    // The device table's width with every column whole; the panes' heights for
    // the splitter's orientation (stackWhenNarrow).
    int tableWidth() const;
    void fitToOrientation();
    static constexpr int kChartsWidth = 820;   // the Gantt and the memory chart, beside the table, to read whole
    static constexpr int kChartsHeight = 240;  // the charts under the table, when stacked
    void showError(const QString &error);
    void colourCanvas();
    void onBarClicked(const QString &op);
    // The canvas operation a plan's operation comes from ("" for none).
    static QString canvasOpFor(const QString &plan_op, const Graph &shown);
    void giveDockRoom();
    void updateActions();

    views::GraphDocument *doc_;
    CanvasController *canvas_;
    SessionController *session_;
    QStatusBar *status_;
    QWidget *window_;
    views::PlanWorker *worker_ = nullptr;
    QDockWidget *dock_ = nullptr;
    QComboBox *target_box_ = nullptr;
    QSpinBox *devices_box_ = nullptr;
    QSpinBox *nodes_box_ = nullptr;
    QComboBox *placement_box_ = nullptr;
    QComboBox *baseline_box_ = nullptr;
    QComboBox *order_box_ = nullptr;
    QPushButton *plan_button_ = nullptr;
    QPushButton *cancel_button_ = nullptr;
    QPushButton *export_button_ = nullptr;
    QPushButton *open_button_ = nullptr;
    QToolButton *launch_button_ = nullptr;  // Launch Plan…, once the Launch dock gives its action
    QProgressBar *busy_ = nullptr;
    QLabel *progress_label_ = nullptr;  // what the host probe runs now
    QToolButton *measure_button_ = nullptr;
    QLabel *prediction_badge_ = nullptr;
    QLabel *summary_ = nullptr;
    QLabel *certificate_ = nullptr;
    QTableWidget *table_ = nullptr;
    QSplitter *splitter_ = nullptr;  // the device table | the charts, or one above the other
    QSplitter *charts_ = nullptr;    // the Gantt | the memory chart
    std::function<void()> arrange_panes_;  // side by side or stacked, as the dock's width allows (stackWhenNarrow)
    views::PlanGantt *gantt_ = nullptr;
    views::MemoryChart *memory_ = nullptr;
    QAction *plan_action_ = nullptr;
    QAction *cancel_action_ = nullptr;
    QAction *export_action_ = nullptr;
    QAction *open_action_ = nullptr;
    QAction *copy_target_action_ = nullptr;
    QAction *measure_host_action_ = nullptr;
    QPointer<QDialog> editor_;

    std::vector<cost::Target> user_targets_;
    QSet<QString> window_only_;                 // user copies made with no session open
    std::optional<cost::Target> host_;          // the host as measured
    QString host_when_;                         // when, as the list shows it
    std::weak_ptr<store::Session> targets_of_;  // the session whose targets are listed
    bool plan_after_measuring_ = false;         // the measurement running was asked for by Plan
    std::shared_ptr<const plan::PlanResult> result_;
    Graph planned_;           // the graph the plan shown was made from
    QString planned_target_;  // its target's name, as the combo shows it
    QString opened_;          // the plan file it was read from (openPlan), or empty
    double capacity_ = 0;     // its target's memory per device
    std::optional<PlanSettings> shown_settings_;  // what it was planned with here
    struct Planned {
        Graph graph;
        QString target;
        double capacity = 0;
        PlanSettings settings;
    };
    Planned pending_;  // the same of the plan being made
    QString last_error_;
    bool dock_sized_ = false;    // the dock got room for its first plan
    bool table_fitted_ = false;  // the table got the width of its columns
};

}  // namespace tapestry::studio
