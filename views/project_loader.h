// Loads and validates a project file off the GUI thread: parsing
// (io/project_file.h) and validation against the standard op library
// (graph/validate.h) run in the thread pool; the outcome arrives on the GUI
// thread through a queued signal. A newer load supersedes an older one. Given the
// open session, the same job reads how it keeps the file's nodes (positions, pins).
#pragma once

#include <QHash>
#include <QObject>
#include <QPointF>
#include <QSet>
#include <QString>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"
#include "store/session.h"
#include "views/file_kind.h"

namespace tapestry::views {

struct LoadedProject {
    QString path;
    bool opened = false;  // false: nothing could be read (see load_issues / error)
    QString error;        // one line saying why the file could not be opened
    // When it could not: what the file is instead, where it is one of ours (a plan
    // or a session file not named so: the studio opens it as that).
    FileKind kind = FileKind::unknown;
    Graph graph;
    std::vector<Issue> load_issues;        // syntax and schema problems
    std::vector<Issue> validation_issues;  // semantic findings of validate()
    qint64 elapsed_ms = 0;
    // With a session: the arrangement the project this file continues keeps
    // (views::arrangementOfFile), empty when there is none.
    QHash<QString, QPointF> positions;
    QSet<QString> pinned;

    std::vector<Issue> allIssues() const;
};

// Synchronous form, used by the worker (and by tests that need no thread).
LoadedProject load_and_validate(const QString &path);

class ProjectLoader : public QObject {
    Q_OBJECT
public:
    explicit ProjectLoader(QObject *parent = nullptr);
    // Starts loading `path`; a running load is superseded (its result dropped).
    // With `session`, the node arrangement it keeps for the file comes too.
    quint64 start(const QString &path, std::shared_ptr<store::Session> session = nullptr);
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
