// Running and verifying the document's graph on the CPU (DESIGN.md §7, §9): the
// Run dock (settings and buttons), the Outputs dock, the Run menu's actions, the
// progress bar and Cancel button in the status bar, and the RunWorker that does
// the work off the GUI thread. Outputs belong to the graph they came from: a new
// document clears them.
#pragma once

#include <functional>

#include <QObject>
#include <QString>

#include "views/graph_document.h"
#include "views/run_worker.h"

class QAction;
class QDockWidget;
class QProgressBar;
class QStatusBar;
class QToolButton;
class QWidget;

namespace tapestry::views {
class OutputsPanel;
class RunPanel;
}  // namespace tapestry::views

namespace tapestry::studio {

class RunController : public QObject {
    Q_OBJECT
public:
    RunController(views::GraphDocument *doc, QStatusBar *status, QWidget *window);
    ~RunController() override;

    views::RunPanel *runPanel() const { return run_panel_; }
    views::OutputsPanel *outputsPanel() const { return outputs_; }
    views::RunWorker *runWorker() const { return worker_; }
    QDockWidget *runDock() const { return run_dock_; }
    QDockWidget *outputsDock() const { return outputs_dock_; }

    QAction *runAction() const { return run_action_; }
    QAction *verifyAction() const { return verify_action_; }
    QAction *cancelAction() const { return cancel_action_; }
    QAction *saveOutputsAction() const { return save_outputs_action_; }
    QAction *useShardsAction() const { return use_shards_action_; }
    QAction *randomInputsAction() const { return random_inputs_action_; }
    QAction *inputsFolderAction() const { return inputs_folder_action_; }

    // Runs or verifies the document's graph with the Run panel's settings; false
    // when nothing is open or a job is going. Results arrive in the Outputs dock.
    // A project whose `data` paths lead outside its folder is read only after the
    // user agrees (once per project file); declined, nothing runs.
    bool start(views::RunMode mode);
    void cancel();
    // Asks whether the values outside the project's folder may be read; by
    // default a question box. Tests answer it themselves.
    void setOutsideDataQuestion(std::function<bool(const QStringList &paths)> ask) { ask_outside_ = std::move(ask); }
    bool isRunning() const;
    // The last finished run or verification (cancelled and failed ones included).
    const views::RunOutcome &lastOutcome() const { return last_outcome_; }
    // Writes the last run's outputs as <name>.npy into `dir` (see outputsSaved).
    void saveOutputs(const QString &dir);
    void saveOutputsDialog();

signals:
    // A run or verification ended: ok, failed or cancelled (see lastOutcome()).
    void runFinished(bool ok);
    // The run failed (the issues list shows `message` at its top), or a later one went well.
    void runFailed(const QString &message);
    void runSucceeded();
    // Results arrived in the Outputs dock (raised).
    void outputsShown();
    void outputsSaved(const QString &dir, const QString &error);

private:
    bool askOutsideData(const QStringList &paths);
    void createActions(QWidget *window);
    void onDocumentChanged(views::GraphDocument::Changes what);
    void onProgress(quint64 job, int done, int total, const QString &phase);
    void onFinished(quint64 job, const views::RunOutcome &outcome);
    void showSuccess(const views::RunOutcome &outcome);
    void updateActions();

    views::GraphDocument *doc_;
    QStatusBar *status_;
    QWidget *window_;
    views::RunWorker *worker_ = nullptr;
    views::RunPanel *run_panel_ = nullptr;
    views::OutputsPanel *outputs_ = nullptr;
    QDockWidget *run_dock_ = nullptr;
    QDockWidget *outputs_dock_ = nullptr;
    QProgressBar *progress_ = nullptr;
    QToolButton *cancel_button_ = nullptr;
    QAction *run_action_ = nullptr;
    QAction *verify_action_ = nullptr;
    QAction *cancel_action_ = nullptr;
    QAction *save_outputs_action_ = nullptr;
    QAction *use_shards_action_ = nullptr;
    QAction *random_inputs_action_ = nullptr;
    QAction *inputs_folder_action_ = nullptr;
    views::RunOutcome last_outcome_;
    quint64 ran_revision_ = 0;  // the document's revision the last job ran on
    std::function<bool(const QStringList &)> ask_outside_;
    QString outside_allowed_for_;  // the project file whose outside data the user agreed to read
};

}  // namespace tapestry::studio
