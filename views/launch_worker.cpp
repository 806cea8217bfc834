#include "views/launch_worker.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "cost/model.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "launch/check.h"
#include "launch/cpu_backend.h"
#include "launch/cuda_backend.h"
#include "launch/records.h"
#include "plan/plan_file.h"
#include "plan/simulate.h"
#include "views/session_versions.h"

namespace tapestry::views {

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// The inputs of a launch: the folder's values, random ones (seeded) for the rest —
// as `tapestry launch --inputs DIR --seed N` gives them.
Expected<std::map<TensorId, TensorData>, std::string> launchInputs(const LaunchJob &job, QString *text) {
    const Graph &g = job.plan->plan.graph;
    std::map<TensorId, TensorData> inputs;
    if (!job.inputs_dir.isEmpty()) {
        auto read = read_inputs_dir(g, job.inputs_dir.toStdString());
        if (!read) return unexpected(read.error());
        inputs = std::move(read).value();
        *text = LaunchWorker::tr("inputs from %1 (random, seed %2, for the rest)")
                    .arg(QDir::toNativeSeparators(job.inputs_dir))
                    .arg(job.seed);
    } else {
        *text = LaunchWorker::tr("random inputs, seed %1").arg(job.seed);
    }
    for (auto &[id, value] : make_random_inputs(g, job.seed))
        if (!inputs.count(id)) inputs.emplace(id, std::move(value));
    return inputs;
}

// Keeps the launch in the session: on the editor version holding the document's
// graph, the plan saved once — or, for a plan read from a file, as `tapestry
// launch --session` keeps it (launch::record_plan_file_launch) — then reads the
// plan's launches back.
void recordLaunch(const LaunchJob &job, const launch::LaunchResult &result, const launch::LaunchCheck *check,
                  LaunchOutcome &out) {
    store::Session &session = *job.session;
    std::optional<cost::Model> model;
    if (job.target) model.emplace(*job.target, job.plan->plan.cluster);
    Expected<launch::RecordedLaunch, std::string> recorded = unexpected(std::string());
    if (job.plan_file) {
        recorded = launch::record_plan_file_launch(session, job.plan->plan, result, check, model ? &*model : nullptr);
    } else {
        const VersionHolding held = versionHolding(session, job.project, job.project_name, job.project_file, job.document);
        out.project = held.project;
        if (!held.error.isEmpty()) {
            out.record_error = held.error;
            return;
        }
        std::optional<store::PlanId> reuse;
        if (job.plan_id != 0) reuse = job.plan_id;
        recorded = launch::record_launch(session, held.version, std::nullopt, reuse, job.plan->plan, result, check,
                                         model ? &*model : nullptr);
    }
    if (!recorded) {
        out.record_error = qs(recorded.error());
        return;
    }
    out.plan_id = recorded->plan_id;
    out.launch_id = recorded->launch_id;
    out.calibration_points = recorded->calibration_points;
    if (out.calibration_points == 0) {
        const std::string why = launch::target_not_measured(job.plan->plan, result.backend, result.hardware);
        out.calibration_note = why.empty() ? LaunchWorker::tr("no step it measured is a kernel or copy") : qs(why);
    }
    if (auto history = session.launches(out.plan_id))
        out.history = std::move(history).value();
    else
        out.record_error = qs(history.error().message);
}

}  // namespace

SavedPlanLaunches findSavedPlan(const store::Session &session, qint64 project, const plan::Plan &plan, bool plan_file) {
    SavedPlanLaunches out;
    if (plan_file) {
        auto found = launch::find_launched_plans_project(session, plan);
        if (!found) {
            out.error = qs(found.error());
            return out;
        }
        project = *found;
        if (project == 0) return out;
    }
    auto saved = launch::find_saved_plan(session, project, plan);
    if (!saved) {
        out.error = qs(saved.error());
        return out;
    }
    out.plan_id = *saved;
    if (out.plan_id == 0) return out;
    if (auto history = session.launches(out.plan_id))
        out.history = std::move(history).value();
    else
        out.error = qs(history.error().message);
    return out;
}

LaunchWorker::LaunchWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::LaunchOutcome>();
    // One launch at a time on a thread of its own; the launcher starts its own
    // workers (one per device stream) from there.
    pool_.setMaxThreadCount(1);
}

LaunchWorker::~LaunchWorker() {
    if (cancel_) cancel_->store(true);
    pool_.waitForDone();
}

LaunchOutcome LaunchWorker::execute(const LaunchJob &job, const std::function<bool()> &cancelled,
                                    const std::function<void(int, int, const QString &)> &progress) {
    LaunchOutcome out;
    QElapsedTimer clock;
    clock.start();
    auto phase = [&progress](int done, int total, const QString &what) {
        if (progress) progress(done, total, what);
    };
    try {
        if (!job.plan) {
            out.error = tr("no plan to launch");
            return out;
        }
        const plan::Plan &p = job.plan->plan;
        std::unique_ptr<launch::Backend> backend;
        if (job.backend == QLatin1String("cuda")) {
            launch::CudaBackendOptions co;
            const auto transport = launch::transport_from_name(job.transport.toStdString());
            if (!transport) {
                out.error = tr("unknown GPU transport '%1' (auto, peer, nccl)").arg(job.transport);
                return out;
            }
            co.transport = *transport;
            co.tf32 = job.tf32;
            auto made = launch::make_cuda_backend(co);
            if (!made) {
                out.error = tr("the cuda backend: %1").arg(qs(made.error()));
                return out;
            }
            backend = std::move(made).value();
        } else {
            backend = launch::make_cpu_backend();
        }
        out.backend_description = qs(backend->describe());
        // Before any input is made: the plan against the backend and this
        // machine's memory (a graph too large is refused by name, nothing allocated).
        if (auto fits = launch::check_launchable(p, *backend, job.oracle); !fits) {
            out.error = qs(fits.error());
            return out;
        }
        phase(0, 0, tr("preparing the inputs"));
        auto inputs = launchInputs(job, &out.inputs_text);
        if (!inputs) {
            out.error = qs(inputs.error());
            return out;
        }
        launch::LaunchOptions options;
        options.wait_timeout_seconds = job.wait_timeout_seconds;
        options.cancelled = cancelled;
        options.fail_step = job.fail_step;
        const QString launching = tr("launching");
        options.progress = [&phase, &launching](int done, int total) { phase(done, total, launching); };
        phase(0, static_cast<int>(p.steps.size()), launching);
        auto result = launch::launch_plan(p, *backend, *inputs, options);
        if (!result) {
            out.error = qs(result.error());
            out.cancelled = cancelled && cancelled();
            return out;
        }
        out.launched = true;
        out.cancelled = result->status == "cancelled";
        out.result = std::move(result).value();
        if (out.result.ok() && !(cancelled && cancelled())) {
            phase(0, 0, tr("checking the outputs"));
            launch::CheckOptions check;
            check.oracle = job.oracle;
            auto compared = launch::check_outputs(p, *inputs, out.result.outputs, check);
            if (compared)
                out.check = std::move(compared).value();
            else
                out.check_error = qs(compared.error());
        }
        // A cancelled launch is kept too: the history says what was tried.
        if (job.session) {
            phase(0, 0, tr("recording the launch"));
            recordLaunch(job, out.result, out.check ? &*out.check : nullptr, out);
        }
        out.result.outputs.clear();  // checked and not shown: no reason to carry them to the GUI
    } catch (const std::exception &e) {
        out = LaunchOutcome();
        out.error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    }
    out.milliseconds = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    return out;
}

quint64 LaunchWorker::start(LaunchJob job) {
    if (running_) return 0;
    const quint64 id = ++job_;
    running_ = true;
    auto flag = std::make_shared<std::atomic_bool>(false);
    cancel_ = flag;
    auto *watcher = new QFutureWatcher<LaunchOutcome>(this);
    connect(watcher, &QFutureWatcher<LaunchOutcome>::finished, this, [this, watcher, id] {
        watcher->deleteLater();
        LaunchOutcome outcome = watcher->result();
        outcome.job = id;
        if (id != job_ || !running_) {
            // Cancelled (reported already): only what it kept in the session is news.
            if (outcome.plan_id != 0) emit recorded(id, outcome);
            return;
        }
        running_ = false;
        cancel_.reset();
        emit finished(id, outcome);
    });
    // Progress is posted to this object (the destructor drains the pool first, so it
    // is alive), at most once per thousandth of the steps, and dropped there once the
    // job is no longer the window's.
    auto last = std::make_shared<std::atomic_int>(-1);
    const std::function<bool(int, int)> hook = hook_;
    auto report = [this, id, flag, last, hook](int done, int total, const QString &phase) {
        if (total > 0) {
            if (hook && hook(done, total)) flag->store(true);
            const int permille = static_cast<int>(1000LL * done / total);
            if (last->exchange(permille) == permille) return;
        } else {
            last->store(-1);  // a phase of its own: the next step count is news again
        }
        QMetaObject::invokeMethod(
            this,
            [this, id, done, total, phase] {
                if (id == job_ && running_) emit progress(id, done, total, phase);
            },
            Qt::QueuedConnection);
    };
    watcher->setFuture(QtConcurrent::run(&pool_, [job = std::move(job), flag, report, saved = last_saved_]() mutable {
        if (job.session && job.plan_id == 0) {
            const std::lock_guard<std::mutex> lock(saved->mutex);
            if (saved->id != 0 && saved->plan.lock() == job.plan && saved->session.lock() == job.session)
                job.plan_id = saved->id;
        }
        LaunchOutcome out = execute(
            job, [flag] { return flag->load(std::memory_order_relaxed); }, report);
        if (out.plan_id != 0) {
            const std::lock_guard<std::mutex> lock(saved->mutex);
            saved->plan = job.plan;
            saved->session = job.session;
            saved->id = out.plan_id;
        }
        return out;
    }));
    return id;
}

void LaunchWorker::cancel() {
    if (!running_) return;
    if (cancel_) cancel_->store(true);
    cancel_.reset();
    running_ = false;
    LaunchOutcome outcome;
    outcome.job = job_;
    outcome.cancelled = true;
    outcome.error = tr("cancelled");
    emit finished(job_, outcome);
}

}  // namespace tapestry::views
