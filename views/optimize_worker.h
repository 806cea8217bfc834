// The Optimize dock's work off the GUI thread (docs/search.md): the Pareto-front
// search (search::optimize) on a thread of its own, streaming what it evaluates
// to the GUI at most every kStreamIntervalMs — coalesced, so a fast search never
// floods the event loop — and keeping the run in the session as it goes; Stop
// through the search's stop flag. A second thread builds the plans of chosen
// candidates (certified), the hand baselines beside the front, and reads runs
// back from the session. Every outcome arrives through a queued signal tagged
// with its job.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <atomic>
#include <memory>
#include <vector>

#include "common/expected.h"
#include "cost/target.h"
#include "graph/graph.h"
#include "plan/planner.h"
#include "search/optimizer.h"
#include "search/session_runs.h"
#include "store/session.h"

class QTimer;

namespace tapestry::views {

// What a search needs, and what its candidates' plans are made again from.
struct SearchSetup {
    Graph graph;  // the document's graph; its shards are dropped (the search decides the sharding)
    cost::Target target;
    int devices = 1;
    int nodes = 0;  // 0: as the target's clusters suggest
    std::vector<search::Objective> objectives;
    search::Constraints constraints;
    // Whether each candidate may fuse (the CPU executor's fused kernels decide what
    // fuses, as the Pipeline dock's fuse pass), as `tapestry optimize` does unless
    // --no-fusion.
    bool fusion = true;
    // Whether a candidate may place an op by a device map (search::Candidate::at),
    // as `tapestry optimize --maps`.
    bool maps = false;
    // Whether a pipeline candidate may cut its stages where it says
    // (search::Candidate::cuts), as `tapestry optimize --cuts`.
    bool cuts = false;
    // Whether a candidate may start from a substitution's graph (goals expand and
    // fuse; search::Candidate::substitution), as `tapestry optimize --substitute`.
    bool substitute = false;
    // The session whose launches on the target calibrate every figure — the
    // search's, its plans' and the baselines' — as `tapestry optimize --session`
    // (read on the worker: the wake reads plans back); null: uncalibrated.
    std::shared_ptr<store::Session> calibration = {};
};

// The evaluator of a setup, as `tapestry optimize` builds it: the graph without
// its shards, the space of its operations on the cluster's devices, the model
// calibrated by the setup's session.
Expected<std::shared_ptr<const search::Evaluator>, std::string> makeEvaluator(const SearchSetup &setup);

// One evaluated candidate as the dock draws and keeps it.
struct ParetoPoint {
    QString key;          // search::Candidate::key(), unique within a run
    QString description;  // Evaluator::describe: "fc1:0=4 … · shard" (exports, the session)
    QString summary;      // Evaluator::summary: "n92 … n175:1=8 (44 ops) · shard"; empty for a kept row
    // What a tooltip, a status line or a table cell shows: the summary, else the
    // description (a kept row's) cut at 160 characters with "…".
    QString brief() const;
    QString mutator;      // what made it
    search::Candidate candidate;
    search::Figures figures;  // predictions
    int generation = 0;
    long index = 0;  // evaluation order
};


// A hand baseline beside the front (plan/baselines.h), through the same model.
struct BaselinePoint {
    QString name;     // "dp", "tp", "pp", "dp×tp"
    QString refused;  // why it does not fit; empty when planned
    search::Figures figures;
};

// The settings a run keeps in the session (search/session_runs.h).
using search::RunSettings;

// A search to run, and where it is kept (no session: not kept).
struct SearchJob {
    SearchSetup setup;
    search::SearchOptions options;
    std::shared_ptr<store::Session> session;
    qint64 project = 0;    // the session project the graph is of (0: made by the first save)
    QString project_name;  // its name, should it have to be made
    QString project_file;  // the file the document was read from ("" none)
    // A run of `session` whose front, carried to this graph by op id, joins the
    // first population (search::warm_start_from_run; 0: none): re-planning after an edit.
    store::SearchRunId warm_run = 0;
};

// What a search has done since the last update.
struct SearchUpdate {
    quint64 job = 0;
    std::vector<ParetoPoint> fresh;  // candidates with a plan, in evaluation order
    bool front_moved = false;
    QStringList front;  // the keys of the front, when it moved
    long evaluations = 0;
    long invalid = 0;  // candidates with no plan
    int generation = 0;
    double seconds = 0;
};

struct SearchOutcome {
    quint64 job = 0;
    bool ok = false;
    QString error;    // why the search failed (no candidate has a plan, …)
    QString stopped;  // "budget", "evaluations", "generations", "stalled", "stopped"
    long evaluations = 0;
    long invalid = 0;
    int generations = 0;
    double seconds = 0;
    QStringList front;
    store::SearchRunId run = 0;  // the run kept in the session (0: none)
    qint64 project = 0;          // the session project it hangs off
    QString store_error;         // why the run is not (all) kept; the search went on
    QString warm_start;          // "started from run #3's front: 8 of its 8 plans carried over" ("" none)
};

struct PlansOutcome {
    quint64 job = 0;
    bool ok = false;
    QString error;  // materialize's, or an internal error when a certificate fails
    std::vector<std::shared_ptr<const plan::PlanResult>> plans;  // per candidate asked for
};

struct BaselinesOutcome {
    quint64 job = 0;
    std::vector<BaselinePoint> baselines;
};

struct SearchRunsOutcome {
    quint64 job = 0;
    QString error;
    std::vector<store::SearchRunRecord> runs;  // oldest first
};

struct SearchRunOutcome {
    quint64 job = 0;
    QString error;  // the store's (a damaged row names run and row), or the settings'
    store::SearchRunRecord run;
    RunSettings settings;
    Graph graph;  // the version searched
    std::vector<ParetoPoint> points;
    QStringList front;
};

class OptimizeWorker : public QObject {
    Q_OBJECT
public:
    static constexpr int kStreamIntervalMs = 80;  // ≥ 12 updates a second while candidates come

    explicit OptimizeWorker(QObject *parent = nullptr);
    // Stops the search and waits for both threads.
    ~OptimizeWorker() override;

    // Starts a search; refused (0) while one runs. See updated and finished.
    quint64 start(SearchJob job);
    // Asks the search to stop; it ends at its next polling point (between
    // evaluations) with what it has, reported by finished as "stopped".
    void stop();
    bool isRunning() const { return running_; }
    quint64 currentSearch() const { return search_job_; }

    // The plans of candidates (stages certified, plan certified); see plansReady.
    quint64 makePlans(const SearchSetup &setup, const std::vector<search::Candidate> &candidates);
    // The hand baselines of a setup; see baselinesReady.
    quint64 makeBaselines(const SearchSetup &setup);
    // The search runs of a session project; see runsListed.
    quint64 listRuns(std::shared_ptr<store::Session> session, qint64 project);
    // A run with its candidates and the graph version it searched; see runLoaded.
    quint64 loadRun(std::shared_ptr<store::Session> session, store::SearchRunId run);

    // Synchronous forms (the worker threads run these; tests may too). No
    // exception escapes: one becomes an "internal error" outcome.
    static PlansOutcome plans(const SearchSetup &setup, const std::vector<search::Candidate> &candidates);
    static BaselinesOutcome baselines(const SearchSetup &setup);
    static SearchRunOutcome readRun(store::Session &session, store::SearchRunId run);

signals:
    void updated(const tapestry::views::SearchUpdate &update);
    void finished(const tapestry::views::SearchOutcome &outcome);
    void plansReady(const tapestry::views::PlansOutcome &outcome);
    void baselinesReady(const tapestry::views::BaselinesOutcome &outcome);
    void runsListed(const tapestry::views::SearchRunsOutcome &outcome);
    void runLoaded(const tapestry::views::SearchRunOutcome &outcome);

private:
    struct Stream;
    // The search itself, on its thread: candidates into `stream`, the run into the session.
    static SearchOutcome runSearch(const SearchJob &job, Stream &stream, const std::atomic_bool &stop);
    void drain();
    template <typename Outcome, typename Work>
    quint64 runAside(Work work, void (OptimizeWorker::*signal)(const Outcome &));

    QThreadPool search_pool_;
    QThreadPool aside_pool_;  // plans, baselines, session reads
    std::shared_ptr<Stream> stream_;
    std::shared_ptr<std::atomic_bool> stop_;
    QTimer *timer_ = nullptr;
    quint64 search_job_ = 0;
    quint64 aside_job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::SearchUpdate)
Q_DECLARE_METATYPE(tapestry::views::SearchOutcome)
Q_DECLARE_METATYPE(tapestry::views::PlansOutcome)
Q_DECLARE_METATYPE(tapestry::views::BaselinesOutcome)
Q_DECLARE_METATYPE(tapestry::views::SearchRunsOutcome)
Q_DECLARE_METATYPE(tapestry::views::SearchRunOutcome)
