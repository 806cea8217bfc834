// Runs or verifies a graph on the CPU executor off the GUI thread (DESIGN.md §2,
// §9): inputs (seeded random, or a folder of .npy files), Program::compile + run
// or verify::check_equivalence, and the summaries the outputs panel shows — all on a worker
// thread of its own. Progress arrives on the GUI thread through queued calls,
// named by phase (a verification: the unsharded run, the sharded run, the
// oracle). A job can be cancelled at any time: it reports `cancelled` — never a
// result — as soon as it stops, or after a short grace if it does not (its late
// result is then dropped).
#pragma once

#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor_data.h"
#include "runtime/cpu/executor.h"
#include "verify/verify.h"
#include "views/tensor_stats.h"

namespace tapestry::views {

enum class RunMode { run, verify };

struct RunRequest {
    RunMode mode = RunMode::run;
    Graph graph;
    QString source_name;  // what the window shows ("mlp.tapestry.json")
    QString project_dir;  // where parameters' .npy files live ("" for none)
    bool allow_outside_data = false;  // `data` outside project_dir may be read (the user agreed)
    QString inputs_dir;   // a folder of <name>.npy inputs; "" = random inputs
    quint64 seed = 1;
    int threads = 2;
    bool use_shards = true;
    bool fuse_epilogues = true;
    bool bf16_matmul = false;         // run mode only: verify always computes in f32
    double atol = 1e-4, rtol = 1e-3;  // verify tolerances
};

struct RunOutcome {
    quint64 job = 0;
    RunMode mode = RunMode::run;
    bool ok = false;
    bool cancelled = false;
    QString error;  // why it failed (empty when ok or cancelled)
    QString source_name;
    QString inputs_text;  // "random inputs, seed 1" or "inputs from /x/y"
    int threads = 0;
    bool use_shards = false;
    bool bf16_matmul = false;
    std::vector<TensorSummary> inputs;   // role input, in graph order
    std::vector<TensorSummary> outputs;  // role output, in graph order
    QHash<QString, QString> names;       // id → name of every output tensor (the id when it has none)
    std::map<TensorId, TensorData> output_values;
    std::vector<cpu::StepTiming> steps;
    double run_ms = 0;  // the executor's wall time
    double compile_ms = 0;
    double total_ms = 0;  // request to outcome, everything included
    std::size_t arena_bytes = 0;
    std::vector<std::string> notices;  // cpu::Program::notices() (verify: the report's)
    QString isa;                       // the instruction set oneDNN ran on ("avx2", …)
    verify::VerifyReport report;       // verify mode
};

class RunWorker : public QObject {
    Q_OBJECT
public:
    explicit RunWorker(QObject *parent = nullptr);
    // Cancels the running job and waits for it to stop.
    ~RunWorker() override;

    // How long a cancelled job may take to stop before the worker reports it
    // cancelled anyway (and drops whatever it returns later).
    static constexpr int kCancelGraceMs = 1500;

    // Starts a job; refused (returns 0) while one is running. A job started while
    // a cancelled one still winds down waits for it (its phase says so).
    quint64 start(RunRequest request);
    // Asks the running job to stop at its next polling point; it then reports
    // cancelled (within kCancelGraceMs).
    void cancel();
    // A job is under way for the window (a cancelled one is not, once reported).
    bool isRunning() const { return running_; }
    // The worker thread is busy — a cancelled job that has not stopped yet included.
    bool isWorking() const;
    quint64 currentJob() const { return job_; }

    // The phases of a verification of `g`, in the order verify::check_equivalence
    // runs them: the unsharded run, the sharded run (when `g` has shards), the oracle.
    static QStringList verifyPhases(const Graph &g);
    static QString phaseName(verify::VerifyPhase phase);

    // Test hook for jobs started afterwards: called on the worker thread with each
    // progress report of the executor; returning true cancels the job there, as
    // Cancel pressed at that moment would.
    void setProgressHook(std::function<bool(int done, int total)> hook) { hook_ = std::move(hook); }

    // Synchronous form of a job (used by the worker thread and by tests).
    static RunOutcome execute(const RunRequest &request, const cpu::RunControl &control,
                              const std::function<void(const QString &phase)> &phase = {});

signals:
    // `total` 0 means indeterminate (a phase without steps).
    void progress(quint64 job, int done, int total, const QString &phase);
    void finished(quint64 job, const tapestry::views::RunOutcome &outcome);

private:
    struct Job;
    QThreadPool pool_;
    std::shared_ptr<Job> current_;
    std::function<bool(int, int)> hook_;
    quint64 job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::RunOutcome)
