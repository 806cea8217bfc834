// Runs the Graphviz layout of a graph off the GUI thread (DESIGN.md §2, §9): one
// job at a time, a new job cancels the previous one, and the result arrives on
// the GUI thread through a queued signal. Stale results are never delivered.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>

#include "graph/graph.h"
#include "io/graphviz.h"

namespace tapestry::views {

class LayoutWorker : public QObject {
    Q_OBJECT
public:
    explicit LayoutWorker(QObject *parent = nullptr);
    ~LayoutWorker() override;

    // Starts laying out `graph` (a copy is taken) and cancels any running job.
    // Returns the job's number, echoed by finished()/failed().
    quint64 start(const Graph &graph);
    // Cancels the running job, if any; it reports nothing.
    void cancel();
    bool isRunning() const { return running_; }

signals:
    void started(quint64 job);
    void finished(quint64 job, const tapestry::Layout &layout);
    void failed(quint64 job, const QString &message);

private:
    struct Outcome {
        bool ok = false;
        Layout layout;
        std::string error;
    };
    void onJobFinished(QFutureWatcher<Outcome> *watcher, quint64 job);

    std::shared_ptr<std::atomic_bool> cancel_flag_;
    quint64 job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::Layout)
