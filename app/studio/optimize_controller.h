// The Optimize dock (issue 16, docs/search.md, user guide "Optimizing"): the
// Pareto-front search of the document's graph on a target — devices, nodes,
// objectives, a memory cap and a maximum step time, a time or evaluation budget,
// a seed — run off the GUI thread (views/optimize_worker.h) with Stop, drawn live
// on the Pareto chart (views/pareto_chart.h) with the hand baselines beside it,
// and a progress line (plans per second, the front's size, the best of each
// objective). A point clicked opens its plan in the Plan dock, built and
// certified off the GUI thread, the canvas coloured by device; two points
// selected compare side by side. Every run is kept in the open session as it
// goes and listed again when the session is reopened; the front exports as CSV or
// JSON and the chart as PNG or SVG. Every figure is a prediction of the cost model.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <optional>
#include <vector>

#include "cost/target.h"
#include "search/evaluate.h"
#include "store/session.h"
#include "views/graph_document.h"
#include "views/optimize_worker.h"

class QAction;
class QCheckBox;
class QComboBox;
class QDialog;
class QDockWidget;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QStatusBar;
class QToolButton;
class QWidget;

namespace tapestry::views {
class ParetoChart;
}

namespace tapestry::studio {

class PlanController;
class SessionController;

class OptimizeController : public QObject {
    Q_OBJECT
public:
    OptimizeController(views::GraphDocument *doc, SessionController *session, PlanController *plans, QStatusBar *status,
                       QWidget *window);
    ~OptimizeController() override;

    QDockWidget *optimizeDock() const { return dock_; }
    QAction *startAction() const { return start_action_; }  // Ctrl+Alt+O
    QAction *stopAction() const { return stop_action_; }
    QAction *compareAction() const { return compare_action_; }
    views::OptimizeWorker *worker() const { return worker_; }

    // The dock's widgets (the GUI suites drive them).
    QComboBox *targetBox() const { return target_box_; }
    QSpinBox *devicesBox() const { return devices_box_; }
    QSpinBox *nodesBox() const { return nodes_box_; }
    QCheckBox *objectiveBox(search::Objective o) const;
    QDoubleSpinBox *memoryCapBox() const { return memory_cap_box_; }  // GiB per device (0: the target's)
    QDoubleSpinBox *maxTimeBox() const { return max_time_box_; }      // ms (0: none)
    QDoubleSpinBox *budgetBox() const { return budget_box_; }         // seconds (0: none)
    QSpinBox *evaluationsBox() const { return evaluations_box_; }     // 0: no limit
    QSpinBox *seedBox() const { return seed_box_; }
    QSpinBox *stallBox() const { return stall_box_; }  // generations without a move (0: never stop for it)
    QCheckBox *fusionBox() const { return fusion_box_; }  // candidates may fuse
    QCheckBox *mapsBox() const { return maps_box_; }
    QCheckBox *cutsBox() const { return cuts_box_; }      // pipeline candidates may cut their stages at chosen ops
    QCheckBox *substituteBox() const { return substitute_box_; }  // candidates may start from substituted graphs
    QCheckBox *warmStartBox() const { return warm_box_; }  // the next search starts from the shown run's front
    QPushButton *startButton() const { return start_button_; }
    QPushButton *stopButton() const { return stop_button_; }
    QPushButton *compareButton() const { return compare_button_; }
    QLabel *progressLabel() const { return progress_; }
    QComboBox *runBox() const { return run_box_; }
    views::ParetoChart *chart() const { return chart_; }

    // Picks a target by the name the list shows ("h100-sxm", "mine (user)") or a
    // bare name; false when there is none.
    bool selectTarget(const QString &name);
    // Searches the document's graph with the dock's settings, off the GUI thread;
    // false (the status bar says why) when nothing is open, a search runs or a
    // setting is refused. A document not in the open session yet is saved into it
    // first (the run hangs off its project). See searchFinished.
    bool startSearch();
    // The search stops at its next polling point and reports what it found (one
    // waiting for the document's first save does not start).
    void stopSearch();
    bool isSearching() const;  // running, or waiting to start
    QString lastError() const { return last_error_; }

    // Builds the plan of a point off the GUI thread and shows it in the Plan dock;
    // false when there is no such point. See pointOpened.
    bool openPoint(const QString &key);
    // Builds the plans of the two selected points and compares them side by side;
    // false unless two are selected. See compared.
    bool compareSelected();
    QDialog *compareDialog() const;

    // The front as CSV (.csv) or JSON, written off the GUI thread (see
    // frontExported); the chart as PNG (.png) or SVG, now: "" or the error.
    bool exportFront(const QString &path);
    QString exportChart(const QString &path);

    // Re-plans after a launch lost a device (the launch dock's offer): searches
    // again with the dock's settings on `devices` devices of `target` (nodes as
    // the target suggests) and, when the search ends, opens the fastest feasible
    // plan of its front in the Plan dock (see replanOpened). While the chart shows
    // a kept run, the search starts from its front (Start from). False, with the reason
    // in lastError(), when a search runs, the target is not listed or the search
    // cannot start.
    bool replanOn(const QString &target, int devices);
    bool isReplanning() const { return replan_pending_; }

    // The runs of the session's project as listed, and the one the chart shows (0:
    // a search of this window not kept, or none).
    const std::vector<store::SearchRunRecord> &runs() const { return runs_; }
    store::SearchRunId shownRun() const { return shown_run_; }
    // Shows a run kept in the session (read off the GUI thread); see runShown.
    bool showRun(store::SearchRunId run);

signals:
    void searchFinished(bool ok);
    void pointOpened(const QString &key, const QString &error);
    void compared(const QString &error);
    void frontExported(const QString &path, const QString &error);
    void runsListed(int count, const QString &error);
    void runShown(qint64 run, const QString &error);
    // A re-plan's search ended: the point opened (its key), or why none was.
    void replanOpened(const QString &key, const QString &error);

private:
    void createActions();
    void createDock(QWidget *window);
    QWidget *createSettings(QWidget *parent);  // the form on the left
    QWidget *createRunBar(QWidget *parent);    // progress, runs, Compare, Export above the chart
    void fillTargets();
    Expected<cost::Target, std::string> targetNamed(const std::string &name, bool user) const;
    std::vector<search::Objective> chosenObjectives() const;
    void rememberSettings() const;
    void restoreSettings();
    void updateActions();
    void fail(const QString &why);
    void showProgress(long evaluations, long invalid, int generation, double seconds);
    void onSessionSaved(const QString &error);
    void launch(views::SearchJob job);
    void onUpdated(const views::SearchUpdate &update);
    void onFinished(const views::SearchOutcome &outcome);
    void onPlansReady(const views::PlansOutcome &outcome);
    void onRunsListed(const views::SearchRunsOutcome &outcome);
    void onRunLoaded(const views::SearchRunOutcome &outcome);
    void onDocumentChanged(views::GraphDocument::Changes what);
    // Shows, under the run bar, whether the document's graph is no longer the one the
    // chart's search was of (an edit since), hides it otherwise.
    void showWhetherTheGraphChanged();
    void listRuns();
    void fillRunBox();
    void showSettings(const views::SearchRunOutcome &o);
    void showComparison(const views::PlansOutcome &outcome);
    void exportDialog(const QString &what);
    void giveDockRoom();

    views::GraphDocument *doc_;
    SessionController *session_;
    PlanController *plans_;
    QStatusBar *status_;
    QWidget *window_;
    views::OptimizeWorker *worker_ = nullptr;
    views::ParetoChart *chart_ = nullptr;
    QDockWidget *dock_ = nullptr;
    QComboBox *target_box_ = nullptr;
    QSpinBox *devices_box_ = nullptr;
    QSpinBox *nodes_box_ = nullptr;
    std::vector<QCheckBox *> objective_boxes_;  // time, memory, devices, communication
    QDoubleSpinBox *memory_cap_box_ = nullptr;
    QDoubleSpinBox *max_time_box_ = nullptr;
    QDoubleSpinBox *budget_box_ = nullptr;
    QSpinBox *evaluations_box_ = nullptr;
    QSpinBox *seed_box_ = nullptr;
    QSpinBox *stall_box_ = nullptr;
    QCheckBox *fusion_box_ = nullptr;
    QCheckBox *maps_box_ = nullptr;
    QCheckBox *cuts_box_ = nullptr;
    QCheckBox *substitute_box_ = nullptr;
    QCheckBox *warm_box_ = nullptr;
    QLabel *graph_changed_ = nullptr;  // the chart shows a search of the graph before an edit
    QPushButton *start_button_ = nullptr;
    QPushButton *stop_button_ = nullptr;
    QPushButton *compare_button_ = nullptr;
    QToolButton *export_button_ = nullptr;
    QLabel *prediction_badge_ = nullptr;
    QLabel *progress_ = nullptr;
    QComboBox *run_box_ = nullptr;
    QAction *start_action_ = nullptr;
    QAction *stop_action_ = nullptr;
    QAction *compare_action_ = nullptr;
    QPointer<QDialog> compare_;

    // What the chart shows: the setup its plans are made again from (none: a run
    // whose target is not known here — setup_error_ says so), its target as listed
    // and a device's memory.
    std::optional<views::SearchJob> waiting_job_;  // started, waiting for the document's first save
    std::optional<views::SearchSetup> setup_;
    QString setup_error_;
    QString target_label_;
    std::uint64_t seed_ = 0;
    store::SearchRunId shown_run_ = 0;
    std::vector<store::SearchRunRecord> runs_;
    quint64 abandoned_job_ = 0;  // a search of a document no longer shown: kept, not drawn
    quint64 baselines_job_ = 0, open_job_ = 0, compare_job_ = 0, runs_job_ = 0, run_job_ = 0;
    QString open_key_;
    QStringList compare_keys_;
    QString last_error_;
    bool dock_sized_ = false;
    bool replan_pending_ = false;  // replanOn: open the fastest feasible point when the search ends
};

}  // namespace tapestry::studio
