#include "views/plan_worker.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "launch/host_target.h"
#include "launch/records.h"

namespace tapestry::views {

PlanWorker::PlanWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::PlanOutcome>();
    qRegisterMetaType<tapestry::views::HostOutcome>();
    // One job at a time on a thread of its own: a large plan never starves the
    // loader and the layout of the global pool.
    pool_.setMaxThreadCount(1);
}

PlanWorker::~PlanWorker() {
    if (cancel_) cancel_->store(true);
    pool_.waitForDone();
}

PlanOutcome PlanWorker::execute(const PlanJob &job, const std::function<bool()> &cancelled) {
    PlanOutcome out;
    QElapsedTimer clock;
    clock.start();
    try {
        plan::PlanRequest request = job.request;
        request.cancelled = cancelled;
        if (job.session) {
            // What the session measured of the target (its calibration points, and the
            // wake fitted on its launches for a cpu target): read here, off the GUI thread.
            auto calibration = launch::session_calibration(*job.session, request.target);
            if (!calibration) {
                out.error = tr("Reading the session's measurements of %1: %2")
                                .arg(QString::fromStdString(request.target.name), QString::fromStdString(calibration.error()));
                out.milliseconds = static_cast<double>(clock.nsecsElapsed()) / 1e6;
                return out;
            }
            request.calibration = calibration->samples();
            request.wake = calibration->wake();
            request.wake_launches = calibration->wake_launches();
        }
        auto result = plan::make_plan(job.graph, request);
        if (cancelled && cancelled()) {
            out.cancelled = true;
        } else if (!result) {
            out.error = QString::fromStdString(result.error());
            out.cancelled = out.error == QLatin1String("cancelled");
        } else {
            out.result = std::make_shared<const plan::PlanResult>(std::move(result).value());
            out.ok = true;
        }
    } catch (const std::exception &e) {
        out = PlanOutcome();
        out.error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    }
    out.milliseconds = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    return out;
}

HostOutcome PlanWorker::measure(int threads, const cpu::ProbeProgress &progress) {
    HostOutcome out;
    QElapsedTimer clock;
    clock.start();
    try {
        if (auto t = launch::measure_host_target(threads, progress); !t) {
            out.cancelled = t.error() == "cancelled";
            out.error =
                out.cancelled ? tr("cancelled") : tr("measuring the host: %1").arg(QString::fromStdString(t.error()));
        } else {
            out.target = std::move(t).value();
            out.ok = true;
        }
    } catch (const std::exception &e) {
        out = HostOutcome();
        out.error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    }
    out.milliseconds = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    return out;
}

quint64 PlanWorker::start(PlanJob job) {
    if (running_) return 0;
    const quint64 id = ++job_;
    running_ = true;
    measuring_ = false;
    auto flag = std::make_shared<std::atomic_bool>(false);
    cancel_ = flag;
    auto *watcher = new QFutureWatcher<PlanOutcome>(this);
    connect(watcher, &QFutureWatcher<PlanOutcome>::finished, this, [this, watcher, id] {
        watcher->deleteLater();
        if (id != job_ || !running_) return;  // cancelled (already reported) or superseded
        PlanOutcome outcome = watcher->result();
        outcome.job = id;
        running_ = false;
        cancel_.reset();
        emit finished(id, outcome);
    });
    watcher->setFuture(QtConcurrent::run(&pool_, [job = std::move(job), flag] {
        return execute(job, [flag] { return flag->load(std::memory_order_relaxed); });
    }));
    return id;
}

quint64 PlanWorker::measureHost(int threads) {
    if (running_) return 0;
    const quint64 id = ++job_;
    running_ = true;
    measuring_ = true;
    auto flag = std::make_shared<std::atomic_bool>(false);
    cancel_ = flag;
    auto *watcher = new QFutureWatcher<HostOutcome>(this);
    connect(watcher, &QFutureWatcher<HostOutcome>::finished, this, [this, watcher, id] {
        watcher->deleteLater();
        if (id != job_ || !running_) return;  // cancelled (already reported) or superseded
        HostOutcome outcome = watcher->result();
        outcome.job = id;
        running_ = false;
        measuring_ = false;
        cancel_.reset();
        emit hostMeasured(id, outcome);
    });
    // Progress is posted to this object (the destructor drains the pool first, so
    // it is alive) and dropped there once the job is no longer the window's.
    auto progress = [this, id, flag](double fraction, const std::string &what) {
        if (flag->load(std::memory_order_relaxed)) return false;
        QMetaObject::invokeMethod(
            this,
            [this, id, fraction, what = QString::fromStdString(what)] {
                if (id == job_ && running_) emit measureProgress(id, fraction, what);
            },
            Qt::QueuedConnection);
        return true;
    };
    watcher->setFuture(QtConcurrent::run(&pool_, [threads, progress] { return measure(threads, progress); }));
    return id;
}

void PlanWorker::cancel() {
    if (!running_) return;
    if (cancel_) cancel_->store(true);
    cancel_.reset();
    running_ = false;
    if (measuring_) {
        measuring_ = false;
        HostOutcome outcome;
        outcome.job = job_;
        outcome.cancelled = true;
        outcome.error = tr("cancelled");
        emit hostMeasured(job_, outcome);
        return;
    }
    PlanOutcome outcome;
    outcome.job = job_;
    outcome.cancelled = true;
    outcome.error = tr("cancelled");
    emit finished(job_, outcome);
}

}  // namespace tapestry::views
