// The inspector dock: everything about the selected node (DESIGN.md §9). For a
// tensor: id, name, dtype, role, range, shape, bytes, producers and consumers.
// For an operation: kind and summary, parameters (defaults marked), selections
// with shapes, index space, FLOPs and bytes, each operand's projection as
// [A | b | window], shards with their ranges and devices. Resolution errors and
// the node's validation issues are shown inline. With nothing selected it
// summarises the graph.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"

class QLabel;
class QTextBrowser;

namespace tapestry::views {

class Inspector : public QWidget {
    Q_OBJECT
public:
    explicit Inspector(QWidget *parent = nullptr);

    // The graph the details come from (a snapshot sharing nodes; the window feeds
    // it from GraphDocument::changed). The shown node stays; the text is rendered
    // again only when `rerender` (the window knows whether the node shown changed).
    void setGraph(const Graph &graph, const std::vector<Issue> &issues, const QString &source_name,
                  bool rerender = true);
    void clearGraph();
    // Shows one node ("" shows the graph summary; an unknown id says so).
    void showNode(const QString &id);
    QString shownNode() const { return shown_; }

    // The displayed text (plain), for tests and copy.
    QString plainText() const;
    QTextBrowser *browser() const { return browser_; }

    // The HTML the inspector shows for a node (exposed for reuse in tool tips).
    static QString nodeHtml(const Graph &graph, const std::vector<Issue> &issues, const QString &id);
    static QString graphHtml(const Graph &graph, const std::vector<Issue> &issues, const QString &source_name);

signals:
    // A link to another node was clicked (a producer, a consumer, a tensor).
    void nodeActivated(const QString &id);

private:
    void render();

    QLabel *title_ = nullptr;
    QTextBrowser *browser_ = nullptr;
    Graph graph_;
    std::vector<Issue> issues_;
    QString source_name_;
    QString shown_;
    bool has_graph_ = false;
};

}  // namespace tapestry::views
