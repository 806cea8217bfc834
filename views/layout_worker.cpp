#include "views/layout_worker.h"

#include <QtConcurrent/QtConcurrentRun>
#include <exception>

namespace tapestry::views {

LayoutWorker::LayoutWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::Layout>();
}

LayoutWorker::~LayoutWorker() {
    cancel();
}

quint64 LayoutWorker::start(const Graph &graph) {
    cancel();
    const quint64 job = ++job_;
    auto flag = std::make_shared<std::atomic_bool>(false);
    cancel_flag_ = flag;
    running_ = true;

    auto *watcher = new QFutureWatcher<Outcome>(this);
    // The watcher lives on the GUI thread: finished() is queued to it.
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, job] { onJobFinished(watcher, job); });
    watcher->setFuture(QtConcurrent::run([graph, flag]() -> Outcome {
        Outcome out;
        // No exception may cross the thread boundary (STYLE.md).
        try {
            auto result = layout_graph(graph, [flag] { return flag->load(std::memory_order_relaxed); });
            if (result) {
                out.ok = true;
                out.layout = std::move(result).value();
            } else {
                out.error = result.error();
            }
        } catch (const std::exception &e) {
            out.error = std::string("layout failed: ") + e.what();
        } catch (...) {
            out.error = "layout failed: unknown error";
        }
        return out;
    }));
    emit started(job);
    return job;
}

void LayoutWorker::cancel() {
    if (cancel_flag_) cancel_flag_->store(true);
    cancel_flag_.reset();
    running_ = false;
}

void LayoutWorker::onJobFinished(QFutureWatcher<Outcome> *watcher, quint64 job) {
    watcher->deleteLater();
    if (job != job_ || !running_) return;  // superseded or cancelled: drop silently
    running_ = false;
    cancel_flag_.reset();
    const Outcome out = watcher->result();
    if (out.ok)
        emit finished(job, out.layout);
    else
        emit failed(job, QString::fromStdString(out.error));
}

}  // namespace tapestry::views
