// Launches a compiled plan off the GUI thread for the Launch dock (engine/launch,
// docs/launch.md): the inputs (seeded random, or a folder of .npy files with
// random values for the rest), launch::launch_plan on the cpu backend, the check
// of its outputs against the unsharded run (and, on request, the oracle), and —
// with a session open — the record of the launch and the plan's launch history.
// One job at a time, on a thread of its own; progress arrives through queued
// calls. Cancel makes the window idle at once: `finished` is emitted with
// `cancelled` then and the launch stops at its next polling point; what it keeps
// in the session on its way out arrives later through `recorded`.
#pragma once

#include <QObject>
#include <QString>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cost/target.h"
#include "graph/graph.h"
#include "launch/check.h"
#include "launch/launch.h"
#include "plan/planner.h"
#include "store/session.h"

namespace tapestry::views {

struct LaunchJob {
    std::shared_ptr<const plan::PlanResult> plan;  // the plan shown in the Plan dock
    QString backend = QStringLiteral("cpu");       // cpu, or cuda (this machine's GPUs)
    QString inputs_dir;                            // a folder of <name>.npy inputs; "" = random inputs
    quint64 seed = 1;                              // random values for every input not read from the folder
    bool oracle = false;                           // also compare the outputs with the oracle
    double wait_timeout_seconds = 120;             // launch::LaunchOptions::wait_timeout_seconds
    int fail_step = -1;                            // tests: launch::LaunchOptions::fail_step
    QString transport = QStringLiteral("auto");    // cuda: launch::CudaBackendOptions::transport by name
    bool tf32 = false;                             // cuda: launch::CudaBackendOptions::tf32
    // Where the launch is kept (none: not kept): the session, the document's
    // project there (0: the one `project_file` continues, else made, named
    // `project_name`) and the document's graph, the editor version the plan hangs off.
    std::shared_ptr<store::Session> session;
    qint64 project = 0;
    QString project_name;
    QString project_file;
    Graph document;
    store::PlanId plan_id = 0;  // the plan as saved before (0: save it)
    // The plan was read from a file, not made from the document: kept as `tapestry
    // launch --session` keeps it (launch::record_plan_file_launch), not on the
    // document's version; project, project_name and document are not read.
    bool plan_file = false;
    // The plan's target without calibration, for the calibration points of a launch
    // that measures it (launch::record_launch); none: no points.
    std::optional<cost::Target> target;
};

struct LaunchOutcome {
    quint64 job = 0;
    bool launched = false;  // launch_plan ran (its status says how it ended)
    bool cancelled = false;
    QString error;                // why nothing ran ("not launched: device 0:1 needs …"), or the internal error
    QString backend_description;  // "cpu: 2 cores (avx512_core), …"
    QString inputs_text;          // "random inputs, seed 1" or "inputs from /x/y"
    launch::LaunchResult result;
    std::optional<launch::LaunchCheck> check;  // when the launch ended ok and its outputs could be compared
    QString check_error;                       // why they could not be
    // What the session keeps (plan_id 0: not kept; record_error says why when it was tried).
    qint64 project = 0;
    store::PlanId plan_id = 0;
    store::LaunchId launch_id = 0;
    int calibration_points = 0;
    QString calibration_note;  // with none: why ("the cpu backend does not measure target h100-sxm")
    QString record_error;
    std::vector<store::LaunchRecord> history;  // the plan's launches, oldest first, this one last
    double milliseconds = 0;                   // request to outcome
};

// The plan a launch saved, found by content among the project's plans in
// `session` (launch::find_saved_plan: the same plan file but for its provenance),
// and its launches (oldest first): how the Launch dock lists the history of a plan
// it did not launch itself. A plan read from a file (`plan_file`) is looked for
// where its launches are kept, launch::launched_plans_project, and `project` is
// not read. plan_id 0: none is kept (or `error`, the store's message).
struct SavedPlanLaunches {
    store::PlanId plan_id = 0;
    std::vector<store::LaunchRecord> history;
    QString error;
};
SavedPlanLaunches findSavedPlan(const store::Session &session, qint64 project, const plan::Plan &plan,
                                bool plan_file = false);

class LaunchWorker : public QObject {
    Q_OBJECT
public:
    explicit LaunchWorker(QObject *parent = nullptr);
    // Cancels the running job and waits for it to stop.
    ~LaunchWorker() override;

    // Starts a launch; refused (returns 0) while one runs.
    quint64 start(LaunchJob job);
    // The window is idle at once (see the file comment).
    void cancel();
    bool isRunning() const { return running_; }
    // The worker's thread is busy — a cancelled launch that has not stopped yet included.
    bool isWorking() const { return pool_.activeThreadCount() > 0; }
    quint64 currentJob() const { return job_; }

    // Test hook for jobs started afterwards: called on the launch's worker threads
    // with each progress report; returning true cancels the launch there.
    void setProgressHook(std::function<bool(int done, int total)> hook) { hook_ = std::move(hook); }

    // The job itself, synchronously (the worker thread runs this; tests may too).
    // No exception escapes: one becomes an "internal error" outcome.
    static LaunchOutcome execute(const LaunchJob &job, const std::function<bool()> &cancelled,
                                 const std::function<void(int done, int total, const QString &phase)> &progress = {});

signals:
    // `total` 0: a phase without steps (the check, the record).
    void progress(quint64 job, int done, int total, const QString &phase);
    void finished(quint64 job, const tapestry::views::LaunchOutcome &outcome);
    // A job whose `finished` went out early (cancelled) has ended and kept itself in
    // the session: `outcome` carries its plan_id, launch_id and the plan's history.
    void recorded(quint64 job, const tapestry::views::LaunchOutcome &outcome);

private:
    // The plan the last job saved, so that a job queued behind a cancelled one
    // (whose plan id the window has not heard of yet) reuses it instead of saving
    // the same plan again. Read and written on the worker's thread, one job after
    // another; the mutex is for the destructor's sake.
    struct LastSaved {
        std::mutex mutex;
        std::weak_ptr<const plan::PlanResult> plan;
        std::weak_ptr<store::Session> session;
        store::PlanId id = 0;
    };
    QThreadPool pool_;
    std::shared_ptr<LastSaved> last_saved_ = std::make_shared<LastSaved>();
    std::shared_ptr<std::atomic_bool> cancel_;
    std::function<bool(int, int)> hook_;
    quint64 job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::LaunchOutcome)
