// Loads and validates a project file off the GUI thread: parsing
// (io/project_file.h) and validation against the standard op library
// (graph/validate.h) run in the thread pool; the outcome arrives on the GUI
// thread through a queued signal. A newer load supersedes an older one.
#pragma once

#include <QObject>
#include <QString>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"

namespace tapestry::views {

struct LoadedProject {
    QString path;
    bool opened = false;  // false: nothing could be read (see load_issues / error)
    QString error;        // one line saying why the file could not be opened
    Graph graph;
    std::vector<Issue> load_issues;        // syntax and schema problems
    std::vector<Issue> validation_issues;  // semantic findings of validate()
    qint64 elapsed_ms = 0;

    std::vector<Issue> allIssues() const;
};

// Synchronous form, used by the worker (and by tests that need no thread).
LoadedProject load_and_validate(const QString &path);

class ProjectLoader : public QObject {
    Q_OBJECT
public:
    explicit ProjectLoader(QObject *parent = nullptr);
    // Starts loading `path`; a running load is superseded (its result dropped).
    quint64 start(const QString &path);
    void cancel();
    bool isRunning() const { return running_; }

signals:
    void loaded(quint64 job, const tapestry::views::LoadedProject &project);

private:
    quint64 job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::LoadedProject)
