// The issues dock: every load and validation issue of the open project
// (severity, code, message, node, JSON path). Activating one — a click, a
// double-click or Enter — asks the window to select, centre and mark its node.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "graph/issue.h"

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace tapestry::views {

class IssuesPanel : public QWidget {
    Q_OBJECT
public:
    enum Column { SeverityColumn, CodeColumn, NodeColumn, MessageColumn, PathColumn, ColumnCount };

    explicit IssuesPanel(QWidget *parent = nullptr);

    // `headline` says where the issues come from ("Could not open x.json", …).
    void setIssues(const std::vector<Issue> &issues, const QString &headline = {});
    // The same for a project that was read: no issues shows "No issues".
    void setIssuesOfProject(const std::vector<Issue> &issues, const QString &headline = {});
    void clear();

    int count() const;
    const std::vector<Issue> &issues() const { return issues_; }
    QTreeWidget *tree() const { return tree_; }
    // Highlights (selects) the rows about these nodes, without activating them.
    void highlightNodes(const QStringList &nodes);
    // A one-line summary: "2 errors, 1 warning" or "No issues".
    QString summary() const;

signals:
    // The user picked an issue; `node` is the issue's node id (may be empty).
    void issueActivated(int index, const QString &node);

private:
    void activate(QTreeWidgetItem *item);

    QLabel *headline_ = nullptr;
    QLabel *empty_ = nullptr;
    QTreeWidget *tree_ = nullptr;
    std::vector<Issue> issues_;
    bool has_project_ = false;
};

}  // namespace tapestry::views
