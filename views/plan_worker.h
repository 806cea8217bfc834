// Plans a graph off the GUI thread for the Plan dock (engine/plan/planner.h,
// docs/plans.md): placement or a hand baseline, compilation, simulation and the
// plan certificate, in one job on a thread of its own. The same thread measures
// the host CPU for its target (runtime/cpu/host_probe.h), with progress. Jobs are
// cancellable between the planner's stages and the probe's steps; the outcome
// arrives through a queued signal tagged with its job.
#pragma once

#include <QObject>
#include <QString>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <memory>

#include "cost/target.h"
#include "graph/graph.h"
#include "plan/planner.h"
#include "store/session.h"
#include "runtime/cpu/host_probe.h"

namespace tapestry::views {

struct PlanJob {
    Graph graph;                // what the canvas shows: the document, or a stage of it
    plan::PlanRequest request;  // target, devices, nodes, placement or baseline, source
    // The session whose measurements of the target calibrate the plan: its
    // calibration points and, for a cpu target, the shared-core wake fitted on its
    // launches (launch::session_calibration, plans read back: so read by the
    // worker, off the GUI thread). None: the prediction is uncalibrated.
    std::shared_ptr<store::Session> session;
};

struct PlanOutcome {
    quint64 job = 0;
    bool ok = false;
    bool cancelled = false;
    QString error;  // make_plan's message ("target 'host' lacks …"), or why the job stopped
    std::shared_ptr<const plan::PlanResult> result;  // set when ok
    double milliseconds = 0;
};

struct HostOutcome {
    quint64 job = 0;
    bool ok = false;
    bool cancelled = false;
    QString error;        // "measuring the host: …" (the probe's or oneDNN's words)
    cost::Target target;  // when ok: the built-in "host" with the measured figures (origin "measured")
    double milliseconds = 0;
};

class PlanWorker : public QObject {
    Q_OBJECT
public:
    explicit PlanWorker(QObject *parent = nullptr);
    // Cancels the running job and waits for it to reach its next polling point.
    ~PlanWorker() override;

    // Starts a plan; refused (returns 0) while a job (a plan or a measurement) runs.
    quint64 start(PlanJob job);
    // Starts measuring the host CPU with `threads` threads (about a second; see
    // measureProgress and hostMeasured); refused (returns 0) while a job runs.
    quint64 measureHost(int threads);
    // The window is idle at once: `finished` or `hostMeasured` is emitted now with
    // `cancelled`, the job stops at its next polling point and its late result is dropped.
    void cancel();
    bool isRunning() const { return running_; }
    bool isMeasuring() const { return running_ && measuring_; }
    // The worker's thread is busy — a cancelled job that has not stopped yet included.
    bool isWorking() const { return pool_.activeThreadCount() > 0; }
    quint64 currentJob() const { return job_; }

    // The job itself, synchronously (the worker thread runs this; tests may too).
    // No exception escapes: one becomes an "internal error" outcome.
    static PlanOutcome execute(const PlanJob &job, const std::function<bool()> &cancelled = {});
    // Measures the host and makes its target, as `tapestry targets measure` does
    // (launch::measure_host_target, which the CLI calls too); `progress` returning false cancels.
    static HostOutcome measure(int threads, const cpu::ProbeProgress &progress = {});

signals:
    void finished(quint64 job, const tapestry::views::PlanOutcome &outcome);
    // The probe's progress: the fraction done (0..1) and what runs now ("f32 GEMM 1024³").
    void measureProgress(quint64 job, double fraction, const QString &what);
    void hostMeasured(quint64 job, const tapestry::views::HostOutcome &outcome);

private:
    QThreadPool pool_;
    std::shared_ptr<std::atomic_bool> cancel_;
    quint64 job_ = 0;
    bool running_ = false;
    bool measuring_ = false;  // the running job is a measurement
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::PlanOutcome)
Q_DECLARE_METATYPE(tapestry::views::HostOutcome)
