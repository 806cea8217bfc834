#include "views/optimize_worker.h"

#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <mutex>
#include <optional>

#include "launch/records.h"
#include "passes/substitute.h"
#include "plan/baselines.h"
#include "plan/certify.h"
#include "runtime/cpu/fusion_backend.h"
#include "views/session_versions.h"

namespace tapestry::views {

QString ParetoPoint::brief() const {
    if (!summary.isEmpty()) return summary;
    constexpr int kMost = 160;
    return description.size() <= kMost ? description : description.left(kMost - 1) + QStringLiteral("…");
}


namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

QString internalError(const std::exception &e) {
    return QStringLiteral("internal error: %1").arg(QString::fromUtf8(e.what()));
}

// A rule by the name search::rule_name gives it: every rule the engine has (the
// names are the engine's; no list here to fall behind it).

ParetoPoint pointOf(const search::Scored &s, const search::Evaluator &evaluator) {
    ParetoPoint p;
    p.key = qs(s.candidate.key());
    p.description = qs(evaluator.describe(s.candidate));
    p.summary = qs(evaluator.summary(s.candidate));
    p.mutator = qs(s.mutator);
    p.candidate = s.candidate;
    p.figures = s.evaluation.figures;
    p.generation = s.generation;
    p.index = s.index;
    return p;
}

Expected<ParetoPoint, std::string> pointOf(const store::SearchCandidateRecord &r) {
    auto candidate = search::candidate_of(r);
    if (!candidate) return unexpected(candidate.error());
    ParetoPoint p;
    p.key = qs(r.key);
    p.description = qs(r.description);
    p.mutator = qs(r.mutator);
    p.candidate = std::move(candidate).value();
    p.figures = search::figures_of(r);
    p.generation = r.generation;
    p.index = static_cast<long>(r.index);
    return p;
}

QStringList keysOf(const std::vector<search::Scored> &front) {
    QStringList keys;
    for (const search::Scored &s : front) keys << qs(s.candidate.key());
    return keys;
}

std::vector<std::string> stdKeys(const QStringList &keys) {
    std::vector<std::string> out;
    for (const QString &k : keys) out.push_back(k.toStdString());
    return out;
}

// The engine's RunKeeper for a studio job: the run hangs off the editor version
// of the job's graph (made by versionHolding when the document has none yet).
struct JobRun {
    search::RunKeeper keeper;
    qint64 project = 0;
};

JobRun startRun(const SearchJob &job, const RunSettings &settings) {
    JobRun out;
    if (!job.session) return out;
    const QString name = job.project_name.isEmpty() ? QStringLiteral("untitled") : job.project_name;
    const VersionHolding held = versionHolding(*job.session, job.project, name, job.project_file, job.setup.graph);
    out.project = held.project;
    if (!held.error.isEmpty()) {
        out.keeper.fail(held.error.toStdString());
        return out;
    }
    out.keeper = search::RunKeeper(*job.session, held.version, job.setup.target.name, settings, job.options.seed);
    return out;
}

}  // namespace

// ---- setups, figures, settings --------------------------------------------------------------

Expected<std::shared_ptr<const search::Evaluator>, std::string> makeEvaluator(const SearchSetup &setup) {
    if (setup.objectives.empty()) return unexpected(std::string("no objective is chosen"));
    if (std::find(setup.objectives.begin(), setup.objectives.end(), search::Objective::energy) != setup.objectives.end() &&
        !setup.target.device.power.present)
        return unexpected("target '" + setup.target.name +
                          "' gives no device power (device.power), so there is no energy to predict");
    if (const std::string missing = setup.target.missing_figures(); !missing.empty())
        return unexpected("target '" + setup.target.name + "' lacks " + missing);
    auto shape = cost::cluster_shape(setup.target, setup.devices, setup.nodes);
    if (!shape) return unexpected(shape.error());
    // The search decides the whole sharding, as a baseline does.
    const Graph g = plan::without_shards(setup.graph);
    auto space = search::Space::of(g, shape->devices());
    if (!space) return unexpected(space.error());
    space->allow_maps(setup.maps);
    space->allow_cuts(setup.cuts);
    auto calibration = setup.calibration ? launch::session_calibration(*setup.calibration, setup.target)
                                         : Expected<cost::Calibration, std::string>(cost::Calibration{});
    if (!calibration) return unexpected(calibration.error());
    std::vector<const FusionBackend *> fusion;
    if (setup.fusion) fusion.push_back(&cpu::fusion_backend());
    auto evaluator = std::make_shared<search::Evaluator>(g, *space, setup.target, *shape, setup.objectives,
                                                         setup.constraints, std::move(calibration).value(), fusion);
    if (setup.substitute)
        if (auto offered = evaluator->offer_substitutions(substitution_goals()); !offered) return unexpected(offered.error());
    return std::shared_ptr<const search::Evaluator>(std::move(evaluator));
}


// ---- the search ----------------------------------------------------------------------------

// What the search thread has for the GUI; drained every kStreamIntervalMs.
struct OptimizeWorker::Stream {
    std::mutex mutex;
    bool dirty = false;
    std::vector<ParetoPoint> fresh;
    bool front_moved = false;
    QStringList front;
    long evaluations = 0, invalid = 0;
    int generation = 0;
    QElapsedTimer clock;
};

OptimizeWorker::OptimizeWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::SearchUpdate>();
    qRegisterMetaType<tapestry::views::SearchOutcome>();
    qRegisterMetaType<tapestry::views::PlansOutcome>();
    qRegisterMetaType<tapestry::views::BaselinesOutcome>();
    qRegisterMetaType<tapestry::views::SearchRunsOutcome>();
    qRegisterMetaType<tapestry::views::SearchRunOutcome>();
    // The search's own evaluation threads do the work; this one drives them.
    search_pool_.setMaxThreadCount(1);
    aside_pool_.setMaxThreadCount(1);
    timer_ = new QTimer(this);
    timer_->setInterval(kStreamIntervalMs);
    timer_->setTimerType(Qt::PreciseTimer);  // the cadence is the promise: ≥ 12 updates a second
    connect(timer_, &QTimer::timeout, this, &OptimizeWorker::drain);
}

OptimizeWorker::~OptimizeWorker() {
    if (stop_) stop_->store(true);
    search_pool_.waitForDone();
    aside_pool_.waitForDone();
}

quint64 OptimizeWorker::start(SearchJob job) {
    if (running_) return 0;
    const quint64 id = ++search_job_;
    running_ = true;
    auto stream = std::make_shared<Stream>();
    stream->clock.start();
    stream_ = stream;
    auto stop = std::make_shared<std::atomic_bool>(false);
    stop_ = stop;
    auto *watcher = new QFutureWatcher<SearchOutcome>(this);
    connect(watcher, &QFutureWatcher<SearchOutcome>::finished, this, [this, watcher, id] {
        SearchOutcome outcome = watcher->result();
        watcher->deleteLater();
        drain();  // the last candidates before the outcome
        timer_->stop();
        running_ = false;
        outcome.job = id;
        emit finished(outcome);
    });
    watcher->setFuture(QtConcurrent::run(
        &search_pool_, [job = std::move(job), stream, stop] { return runSearch(job, *stream, *stop); }));
    timer_->start();
    return id;
}

void OptimizeWorker::stop() {
    if (running_ && stop_) stop_->store(true);
}

void OptimizeWorker::drain() {
    if (!stream_) return;
    SearchUpdate update;
    {
        std::lock_guard lock(stream_->mutex);
        if (!stream_->dirty) return;
        stream_->dirty = false;
        update.fresh.swap(stream_->fresh);
        update.front_moved = std::exchange(stream_->front_moved, false);
        if (update.front_moved) update.front = stream_->front;
        update.evaluations = stream_->evaluations;
        update.invalid = stream_->invalid;
        update.generation = stream_->generation;
        update.seconds = static_cast<double>(stream_->clock.nsecsElapsed()) / 1e9;
    }
    update.job = search_job_;
    emit updated(update);
}

SearchOutcome OptimizeWorker::runSearch(const SearchJob &job, Stream &stream, const std::atomic_bool &stop) {
    SearchOutcome out;
    try {
        auto evaluator = makeEvaluator(job.setup);
        if (!evaluator) {
            out.error = qs(evaluator.error());
            return out;
        }
        const search::Evaluator &ev = **evaluator;
        search::SearchOptions options = job.options;
        if (job.warm_run != 0 && job.session) {
            auto warm = search::warm_start_from_session(*job.session, job.warm_run, ev);
            if (!warm) {
                out.error = QStringLiteral("starting from run #%1's front: %2").arg(job.warm_run).arg(qs(warm.error()));
                return out;
            }
            out.warm_start = QStringLiteral("started from run #%1's front: %2 of its %3 plans carried over")
                                 .arg(job.warm_run)
                                 .arg(warm->candidates.size())
                                 .arg(warm->front);
            out.warm_start += qs(search::warm_start_losses(*warm));
            options.warm_start = std::move(warm->candidates);
        }
        JobRun kept = startRun(job, RunSettings{job.setup.devices, job.setup.nodes, job.setup.objectives,
                                                job.setup.constraints, job.options, job.setup.fusion, job.setup.maps,
                                                job.setup.cuts, job.setup.substitute, job.warm_run});
        search::RunKeeper &keeper = kept.keeper;
        search::SearchHooks hooks;
        hooks.stop = &stop;
        // Every candidate, on this thread: kept for the session, queued for the GUI.
        hooks.candidate = [&](const search::Scored &s) {
            std::optional<ParetoPoint> p;
            if (s.evaluation.ok) {
                p = pointOf(s, ev);
                keeper.add(s, ev);
            }
            std::lock_guard lock(stream.mutex);
            ++stream.evaluations;
            if (!p) ++stream.invalid;
            if (p) stream.fresh.push_back(std::move(*p));
            stream.dirty = true;
        };
        QStringList last_front;
        hooks.generation = [&](const search::Progress &p) {
            const QStringList front = keysOf(p.front);
            const bool moved = front != last_front;
            keeper.flush(search::front_keys(p.front), moved);
            std::lock_guard lock(stream.mutex);
            if (moved) {
                last_front = front;
                stream.front = front;
                stream.front_moved = true;
            }
            stream.generation = p.generation;
            stream.evaluations = p.evaluations;
            stream.invalid = p.invalid;
            stream.dirty = true;
        };
        auto result = search::optimize(ev, options, hooks);
        if (!result) {
            keeper.finish(stdKeys(last_front), "failed");
            out.error = qs(result.error());
        } else {
            out.ok = true;
            out.front = keysOf(result->front);
            out.stopped = qs(result->stopped);
            out.evaluations = result->evaluations;
            out.invalid = result->invalid;
            out.generations = result->generations;
            out.seconds = result->seconds;
            keeper.finish(search::front_keys(result->front), result->stopped == "stopped" ? "stopped" : "finished");
            std::lock_guard lock(stream.mutex);
            stream.front = out.front;
            stream.front_moved = true;
            stream.dirty = true;
        }
        out.run = keeper.run();
        out.project = kept.project;
        out.store_error = qs(keeper.error());
    } catch (const std::exception &e) {
        out = SearchOutcome();
        out.error = internalError(e);
    }
    return out;
}

// ---- work aside: plans, baselines, the session's runs -----------------------------------------

template <typename Outcome, typename Work>
quint64 OptimizeWorker::runAside(Work work, void (OptimizeWorker::*signal)(const Outcome &)) {
    const quint64 id = ++aside_job_;
    auto *watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, id, signal] {
        Outcome outcome = watcher->result();
        watcher->deleteLater();
        outcome.job = id;
        emit(this->*signal)(outcome);
    });
    watcher->setFuture(QtConcurrent::run(&aside_pool_, std::move(work)));
    return id;
}

quint64 OptimizeWorker::makePlans(const SearchSetup &setup, const std::vector<search::Candidate> &candidates) {
    return runAside<PlansOutcome>([setup, candidates] { return plans(setup, candidates); },
                                  &OptimizeWorker::plansReady);
}

quint64 OptimizeWorker::makeBaselines(const SearchSetup &setup) {
    return runAside<BaselinesOutcome>([setup] { return baselines(setup); }, &OptimizeWorker::baselinesReady);
}

quint64 OptimizeWorker::listRuns(std::shared_ptr<store::Session> session, qint64 project) {
    return runAside<SearchRunsOutcome>(
        [session, project] {
            SearchRunsOutcome out;
            try {
                auto runs = session->search_runs(project);
                if (runs)
                    out.runs = std::move(runs).value();
                else
                    out.error = qs(runs.error().message);
            } catch (const std::exception &e) {
                out.error = internalError(e);
            }
            return out;
        },
        &OptimizeWorker::runsListed);
}

quint64 OptimizeWorker::loadRun(std::shared_ptr<store::Session> session, store::SearchRunId run) {
    return runAside<SearchRunOutcome>([session, run] { return readRun(*session, run); }, &OptimizeWorker::runLoaded);
}

PlansOutcome OptimizeWorker::plans(const SearchSetup &setup, const std::vector<search::Candidate> &candidates) {
    PlansOutcome out;
    try {
        auto evaluator = makeEvaluator(setup);
        if (!evaluator) {
            out.error = qs(evaluator.error());
            return out;
        }
        const search::Evaluator &ev = **evaluator;
        for (const search::Candidate &c : candidates) {
            if (const search::Space *own = ev.space_of(c); !own || !own->valid(c)) {
                out.error = QStringLiteral("the candidate '%1' does not fit the graph's search space").arg(qs(c.key()));
                return out;
            }
            auto m = ev.materialize(c, true);
            if (!m) {
                out.error = qs(m.error());
                return out;
            }
            auto r = std::make_shared<plan::PlanResult>();
            r->stages = std::move(m->stages);
            r->plan = std::move(m->plan);
            r->prediction = std::move(m->prediction);
            r->certificate = plan::certify_plan(r->plan);
            r->cluster = r->plan.cluster;
            // A plan that fails a certificate is a bug of the passes or the compiler:
            // reported, never shown (docs/search.md, "Trust").
            std::string why;
            for (const Stage &st : r->stages)
                if (!st.certificate.pass()) why = "stage '" + st.pass + "': " + st.certificate.badge();
            if (why.empty() && !r->certificate.pass()) why = "plan: " + r->certificate.badge();
            if (!why.empty()) {
                out.error = QStringLiteral("internal error: the plan '%1' fails its certificate (%2); please report it")
                                .arg(qs(ev.describe(c)), qs(why));
                return out;
            }
            out.plans.push_back(std::move(r));
        }
        out.ok = true;
    } catch (const std::exception &e) {
        out = PlansOutcome();
        out.error = internalError(e);
    }
    return out;
}

BaselinesOutcome OptimizeWorker::baselines(const SearchSetup &setup) {
    BaselinesOutcome out;
    try {
        auto evaluator = makeEvaluator(setup);
        if (!evaluator) return out;
        const cost::Calibration &calibration = (*evaluator)->model().calibration();
        const Graph g = plan::without_shards(setup.graph);
        for (plan::Baseline b : {plan::Baseline::dp, plan::Baseline::tp, plan::Baseline::pp, plan::Baseline::dp_tp}) {
            BaselinePoint p;
            p.name = QString::fromUtf8(plan::baseline_name(b));
            plan::PlanRequest request;
            request.target = setup.target;
            request.devices = setup.devices;
            request.nodes = setup.nodes;
            request.baseline = b;
            request.calibration = calibration.samples();  // the same model as the front's
            request.wake = calibration.wake();
            request.wake_launches = calibration.wake_launches();
            auto r = plan::make_plan(g, request);
            if (!r)
                p.refused = qs(r.error());
            else
                p.figures = (*evaluator)->score(r->plan, r->prediction).figures;
            out.baselines.push_back(std::move(p));
        }
    } catch (const std::exception &) {
        out.baselines.clear();  // the chart goes without them
    }
    return out;
}

SearchRunOutcome OptimizeWorker::readRun(store::Session &session, store::SearchRunId id) {
    SearchRunOutcome out;
    try {
        auto run = session.load_search_run(id);
        if (!run) {
            out.error = qs(run.error().message);
            return out;
        }
        out.run = run->run;
        const QString of_run = QStringLiteral("search run %1: ").arg(id);
        auto settings = search::parse_settings(run->run.settings_json);
        if (!settings) {
            out.error = of_run + qs(settings.error());
            return out;
        }
        out.settings = *settings;
        out.settings.options.seed = run->run.seed;
        auto graph = session.load_version(run->run.version_id);
        if (!graph) {
            out.error = of_run + qs(graph.error().message);
            return out;
        }
        out.graph = std::move(graph).value();
        for (const store::SearchCandidateRecord &r : run->candidates) {
            auto p = pointOf(r);
            if (!p) {
                out.error = of_run + QStringLiteral("candidate row %1: %2").arg(r.row).arg(qs(p.error()));
                return out;
            }
            if (r.on_front) out.front << p->key;
            out.points.push_back(std::move(p).value());
        }
    } catch (const std::exception &e) {
        out = SearchRunOutcome();
        out.error = internalError(e);
    }
    return out;
}

}  // namespace tapestry::views
