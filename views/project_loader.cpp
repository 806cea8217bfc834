#include "views/project_loader.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "views/session_versions.h"

namespace tapestry::views {

std::vector<Issue> LoadedProject::allIssues() const {
    std::vector<Issue> all = load_issues;
    all.insert(all.end(), validation_issues.begin(), validation_issues.end());
    return all;
}

LoadedProject load_and_validate(const QString &path) {
    LoadedProject out;
    out.path = path;
    QElapsedTimer timer;
    timer.start();
    const QFileInfo info(path);
    if (!info.exists()) {
        out.error = QStringLiteral("%1 does not exist").arg(path);
        return out;
    }
    if (!info.isFile() || !info.isReadable()) {
        out.error = QStringLiteral("%1 is not a readable file").arg(path);
        return out;
    }
    // No exception may cross into the GUI (STYLE.md); the engine promises none,
    // this guards against allocation failures on absurd files.
    try {
        LoadResult loaded = load_project(std::filesystem::path(path.toStdString()));
        out.load_issues = std::move(loaded.issues);
        out.graph = std::move(loaded.graph);
        out.opened = out.graph.node_count() > 0 || !has_errors(out.load_issues);
        if (!out.opened) {
            const auto first = std::find_if(out.load_issues.begin(), out.load_issues.end(),
                                            [](const Issue &i) { return i.severity == Severity::error; });
            out.error = first != out.load_issues.end() ? QString::fromStdString(first->message)
                                                       : QStringLiteral("the file could not be read");
            out.kind = kindOfFile(path);
        } else {
            out.validation_issues = validate(out.graph, OpLibrary::standard());
        }
    } catch (const std::exception &e) {
        out.opened = false;
        out.graph = Graph();
        out.error = QStringLiteral("internal error while loading: %1").arg(QString::fromUtf8(e.what()));
    }
    out.elapsed_ms = timer.elapsed();
    return out;
}

ProjectLoader::ProjectLoader(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::LoadedProject>();
}

quint64 ProjectLoader::start(const QString &path, std::shared_ptr<store::Session> session) {
    const quint64 job = ++job_;
    running_ = true;
    auto *watcher = new QFutureWatcher<LoadedProject>(this);
    connect(watcher, &QFutureWatcher<LoadedProject>::finished, this, [this, watcher, job] {
        watcher->deleteLater();
        if (job != job_ || !running_) return;  // superseded
        running_ = false;
        emit loaded(job, watcher->result());
    });
    watcher->setFuture(QtConcurrent::run([path, session] {
        LoadedProject out = load_and_validate(path);
        if (session && out.opened) {
            FileArrangement kept = arrangementOfFile(*session, path, out.graph);
            out.positions = std::move(kept.positions);
            out.pinned = std::move(kept.pinned);
        }
        return out;
    }));
    return job;
}

void ProjectLoader::cancel() {
    ++job_;
    running_ = false;
}

}  // namespace tapestry::views
