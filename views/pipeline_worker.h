// Runs a pass pipeline (engine/passes, DESIGN.md §5) off the GUI thread for the
// Stages dock: each pass, then each stage's certificate against the original, on a
// worker thread of its own. Cancellable between passes and between a stage's
// structural checks and its numeric run; the outcome arrives through a queued signal.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "passes/stage.h"

namespace tapestry::views {

struct PipelineRequest {
    Graph graph;           // the original (stage 0)
    QStringList passes;    // pass names in order, e.g. {"shard", "fuse"} (see PipelineWorker::knownPasses)
    QString shard_specs;   // "fc1:0=4 fc2:0=4", for the shard pass
    bool numeric = false;  // add the randomized numeric check to every certificate but stage 0's
    quint64 seed = 1;
    int threads = 2;
};

struct PipelineOutcome {
    quint64 job = 0;
    bool ok = false;
    bool cancelled = false;
    QString error;              // "pass 1 (shard): …" when a pass refused
    std::vector<Stage> stages;  // stage 0 = the original, then one per pass (empty unless ok)
    QString options;            // the options as run ("shard · fc1:0=4 · numeric")
    double milliseconds = 0;
};

class PipelineWorker : public QObject {
    Q_OBJECT
public:
    explicit PipelineWorker(QObject *parent = nullptr);
    // Cancels the running job and waits for its current step to end.
    ~PipelineWorker() override;

    // The passes a pipeline can name today.
    static QStringList knownPasses();
    // The passes run with their default options (the substitution's default rules
    // and "expand" goal, fusion of every fusable kind); shard with the specs.
    // Parses "shard" / "substitute, shard, fuse" into pass names; "" or an error naming the
    // unknown pass ("unknown pass 'fuse' (known: shard)"); `out` gets the names.
    static QString parsePasses(const QString &text, QStringList *out);
    // Checks the shard specs against a graph without running anything: "" or the
    // first error, worded as the shard pass words it ("shard spec 'fc1=4': …",
    // "shard spec 'fc9:0=4': unknown operation 'fc9'"). Empty specs are an error
    // when `passes` contains "shard".
    static QString checkSpecs(const QString &specs, const Graph &graph, const QStringList &passes);

    // Starts a job; refused (returns 0) while one is running.
    quint64 start(PipelineRequest request);
    // Stops the job at its next polling point. The window is idle at once: the
    // worker emits `finished` with `cancelled` now, and drops the late result.
    void cancel();
    bool isRunning() const { return running_; }
    quint64 currentJob() const { return job_; }

    // The job itself, synchronously (the worker thread runs this; tests may too).
    // `cancelled` is polled before each pass, before each certificate and before
    // each numeric run; `phase` reports progress ("pass 1/1: shard", "certifying stage 1").
    static PipelineOutcome execute(const PipelineRequest &request, const std::function<bool()> &cancelled = {},
                                   const std::function<void(int done, int total, const QString &phase)> &phase = {});

signals:
    void progress(quint64 job, int done, int total, const QString &phase);
    void finished(quint64 job, const tapestry::views::PipelineOutcome &outcome);

private:
    QThreadPool pool_;
    std::shared_ptr<std::atomic_bool> cancel_;
    quint64 job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::PipelineOutcome)
