#include "views/run_worker.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>
#include <mutex>

#include "graph/issue.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::views {

namespace {

std::filesystem::path toPath(const QString &s) {
    return std::filesystem::path(s.toStdString());
}

QString joinErrors(const std::vector<Issue> &issues) {
    QStringList lines;
    for (const Issue &i : issues)
        if (i.severity == Severity::error) lines << QString::fromStdString(format_issue(i));
    return lines.join(QLatin1Char('\n'));
}

// Summaries of the tensors with `role` that `values` holds, in graph order.
std::vector<TensorSummary> summarize(const Graph &g, const std::map<TensorId, TensorData> &values, TensorRole role) {
    std::vector<TensorSummary> out;
    for (const TensorPtr &t : g.tensors()) {
        if (t->role != role) continue;
        const auto it = values.find(t->id);
        if (it == values.end()) continue;
        TensorSummary s = summarize_tensor(it->second);
        s.id = QString::fromStdString(t->id.value);
        s.name = QString::fromStdString(t->name.empty() ? t->id.value : t->name);
        s.role = QString::fromLatin1(role_name(role).data(), static_cast<qsizetype>(role_name(role).size()));
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace

// What one job shares between the GUI thread, its worker thread and the
// executor's threads.
struct RunWorker::Job {
    RunMode mode = RunMode::run;
    std::atomic_bool cancel{false};
    std::atomic_bool reported{false};  // `finished` went out already: the job was declared cancelled
    std::atomic<qint64> last_report_ms{-1000};
    QElapsedTimer started;
    // The phase progress belongs to: the one the job entered last (a
    // verification's phases are announced by verify::check_equivalence).
    std::mutex phase_mutex;
    QString phase_name;
};

QString RunWorker::phaseName(verify::VerifyPhase phase) {
    switch (phase) {
        case verify::VerifyPhase::unsharded_run: return tr("Unsharded run");
        case verify::VerifyPhase::sharded_run: return tr("Sharded run");
        case verify::VerifyPhase::oracle: return tr("Oracle (double precision)");
    }
    return {};
}

QStringList RunWorker::verifyPhases(const Graph &g) {
    const bool sharded =
        std::any_of(g.operations().begin(), g.operations().end(), [](const OpPtr &op) { return !op->shards.empty(); });
    QStringList phases{phaseName(verify::VerifyPhase::unsharded_run)};
    if (sharded) phases << phaseName(verify::VerifyPhase::sharded_run);
    phases << phaseName(verify::VerifyPhase::oracle);
    return phases;
}

RunWorker::RunWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::RunOutcome>();
    // One job at a time, on a thread of its own: a long verification never
    // starves the loader and layout workers of the global pool.
    pool_.setMaxThreadCount(1);
}

RunWorker::~RunWorker() {
    cancel();
    pool_.waitForDone();
}

RunOutcome RunWorker::execute(const RunRequest &request, const cpu::RunControl &control,
                              const std::function<void(const QString &)> &phase) {
    QElapsedTimer total;
    total.start();
    RunOutcome out;
    out.mode = request.mode;
    out.source_name = request.source_name;
    out.threads = request.threads;
    out.isa = QString::fromStdString(cpu::cpu_isa().name);
    out.use_shards = request.use_shards;
    out.bf16_matmul = request.bf16_matmul && request.mode == RunMode::run;
    auto enter = [&](const QString &name) {
        if (phase) phase(name);
    };
    auto stopped = [&] {
        if (control.cancelled && control.cancelled()) {
            out.cancelled = true;
            return true;
        }
        return false;
    };
    auto finish = [&] {
        out.total_ms = static_cast<double>(total.nsecsElapsed()) / 1e6;
        return out;
    };
    // No exception may cross into the GUI (STYLE.md); the engine promises none,
    // this guards against allocation failures on absurd graphs.
    try {
        Graph g = request.graph;
        for (const TensorPtr &t : g.tensors())
            if (t->role == TensorRole::output)
                out.names.insert(QString::fromStdString(t->id.value),
                                 QString::fromStdString(t->name.empty() ? t->id.value : t->name));
        enter(QObject::tr("Preparing inputs"));
        // Sizes before any value is read or made: a graph too large for this
        // machine is refused with its largest tensors named.
        if (auto fits = cpu::check_memory(g, request.mode == RunMode::verify); !fits) {
            out.error = QString::fromStdString(fits.error());
            return finish();
        }
        if (!request.project_dir.isEmpty()) {
            const std::vector<Issue> issues =
                load_tensor_values(g, toPath(request.project_dir), DataPathPolicy{request.allow_outside_data});
            if (has_errors(issues)) {
                out.error = QObject::tr("Parameter values could not be loaded:\n%1").arg(joinErrors(issues));
                return finish();
            }
        }
        // Parameters without values are random in every case; inputs come from the
        // folder when one is chosen.
        std::map<TensorId, TensorData> inputs = make_random_inputs(g, request.seed);
        if (request.inputs_dir.isEmpty()) {
            out.inputs_text = QObject::tr("random inputs, seed %1").arg(request.seed);
        } else {
            auto read = read_inputs_dir(g, toPath(request.inputs_dir));
            if (!read) {
                out.error =
                    QObject::tr("Inputs from %1: %2")
                        .arg(QDir::toNativeSeparators(request.inputs_dir), QString::fromStdString(read.error()));
                return finish();
            }
            for (auto &[id, value] : *read) inputs[id] = std::move(value);
            out.inputs_text = QObject::tr("inputs from %1").arg(QDir(request.inputs_dir).dirName());
        }
        out.inputs = summarize(g, inputs, TensorRole::input);
        if (stopped()) return finish();

        const OpLibrary &lib = OpLibrary::standard();
        if (request.mode == RunMode::verify) {
            verify::VerifyOptions options;
            options.threads = request.threads;
            options.atol = request.atol;
            options.rtol = request.rtol;
            options.control = control;
            options.phase = [&](verify::VerifyPhase p) { enter(phaseName(p)); };
            auto report = verify::check_equivalence(g, lib, inputs, options);
            // A cancelled verification has no verdict, even one that finished anyway.
            if (stopped()) return finish();
            if (!report) {
                if (report.error() == "cancelled")
                    out.cancelled = true;
                else
                    out.error = QString::fromStdString(report.error());
                return finish();
            }
            out.report = std::move(*report);
            out.notices = out.report.notices;
            out.ok = true;
            return finish();
        }

        enter(QObject::tr("Compiling"));
        cpu::CpuOptions options;
        options.threads = request.threads;
        options.run_shards = request.use_shards;
        options.fuse_epilogues = request.fuse_epilogues;
        options.bf16_matmul = request.bf16_matmul;
        QElapsedTimer compile;
        compile.start();
        auto program = cpu::Program::compile(g, lib, options);
        out.compile_ms = static_cast<double>(compile.nsecsElapsed()) / 1e6;
        if (!program) {
            out.error = QString::fromStdString(program.error());
            return finish();
        }
        if (stopped()) return finish();
        enter(QObject::tr("Running"));
        auto result = (*program)->run(inputs, control);
        if (!result) {
            if (result.error() == "cancelled" || stopped())
                out.cancelled = true;
            else
                out.error = QString::fromStdString(result.error());
            return finish();
        }
        enter(QObject::tr("Summarising outputs"));
        out.outputs = summarize(g, result->outputs, TensorRole::output);
        out.output_values = std::move(result->outputs);
        out.steps = std::move(result->steps);
        out.notices = std::move(result->notices);
        out.run_ms = result->wall_milliseconds;
        out.arena_bytes = result->arena_bytes;
        out.ok = true;
    } catch (const std::bad_alloc &) {
        out.ok = false;
        out.error = QObject::tr("Out of memory: an allocation failed (this machine has %1 available)")
                        .arg(QString::fromStdString(byte_text(cpu::available_memory())));
    } catch (const std::exception &e) {
        out.ok = false;
        out.error = QObject::tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    }
    return finish();
}

quint64 RunWorker::start(RunRequest request) {
    if (running_) return 0;
    const quint64 job = ++job_;
    running_ = true;
    auto state = std::make_shared<Job>();
    state->mode = request.mode;
    state->started.start();
    current_ = state;

    // Progress comes from the executor's worker threads, possibly several at
    // once; forward at most ~30 reports a second plus the last of each phase, by
    // queued calls (dropped by Qt if this object is gone).
    auto forward = [this, job](int done, int total, const QString &phase) {
        QMetaObject::invokeMethod(
            this, [this, job, done, total, phase] { emit progress(job, done, total, phase); }, Qt::QueuedConnection);
    };
    if (isWorking()) forward(0, 0, tr("Waiting for the cancelled job to stop"));
    const std::function<bool(int, int)> hook = hook_;
    cpu::RunControl control;
    control.cancelled = [state] { return state->cancel.load(std::memory_order_relaxed); };
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    control.progress = [state, hook, forward, clock](int done, int total) {
        if (hook && hook(done, total)) state->cancel.store(true);
        QString name;
        {
            std::lock_guard lock(state->phase_mutex);
            name = state->phase_name;
        }
        const qint64 now = clock->elapsed();
        qint64 last = state->last_report_ms.load();
        if (done < total && now - last < 33) return;
        if (!state->last_report_ms.compare_exchange_strong(last, now) && done < total) return;
        forward(done, total, name);
    };
    auto phase = [state, forward](const QString &name) {
        {
            std::lock_guard lock(state->phase_mutex);
            state->phase_name = name;
        }
        forward(0, 0, name);
    };

    auto *watcher = new QFutureWatcher<RunOutcome>(this);
    connect(watcher, &QFutureWatcher<RunOutcome>::finished, this, [this, watcher, job, state] {
        watcher->deleteLater();
        if (state->reported) return;  // declared cancelled already; the late result is dropped
        RunOutcome outcome = watcher->result();
        outcome.job = job;
        if (state->cancel && !outcome.cancelled) {
            // Cancel was pressed: no result counts, however far the job got.
            RunOutcome cancelled;
            cancelled.job = job;
            cancelled.mode = outcome.mode;
            cancelled.cancelled = true;
            cancelled.source_name = outcome.source_name;
            cancelled.total_ms = outcome.total_ms;
            outcome = std::move(cancelled);
        }
        if (job == job_) {
            running_ = false;
            current_.reset();
        }
        emit finished(job, outcome);
    });
    watcher->setFuture(QtConcurrent::run(
        &pool_, [request = std::move(request), control, phase] { return execute(request, control, phase); }));
    return job;
}

bool RunWorker::isWorking() const {
    return pool_.activeThreadCount() > 0;
}

void RunWorker::cancel() {
    if (!current_) return;
    current_->cancel.store(true);
    // Give the job a moment to stop by itself; then the window is idle regardless.
    const quint64 job = job_;
    QTimer::singleShot(kCancelGraceMs, this, [this, job] {
        if (job != job_ || !running_ || !current_) return;  // it stopped in time
        RunOutcome outcome;
        outcome.job = job;
        outcome.mode = current_->mode;
        outcome.cancelled = true;
        outcome.total_ms = static_cast<double>(current_->started.elapsed());
        current_->reported = true;
        current_.reset();
        running_ = false;
        emit finished(job, outcome);
    });
}

}  // namespace tapestry::views
