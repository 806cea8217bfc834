#include "views/issues_panel.h"

#include <QHeaderView>
#include <QIcon>
#include <QKeyEvent>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "views/studio_resources.h"

namespace tapestry::views {

namespace {
constexpr int kIndexRole = Qt::UserRole + 1;

QIcon severityIcon(Severity s) {
    switch (s) {
        case Severity::error: return studioIcon(QStringLiteral("error"));
        case Severity::warning: return studioIcon(QStringLiteral("warning"));
        case Severity::info: return studioIcon(QStringLiteral("info"));
    }
    return {};
}
}  // namespace

IssuesPanel::IssuesPanel(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("issuesPanel"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    headline_ = new QLabel(this);
    headline_->setObjectName(QStringLiteral("issuesHeadline"));
    headline_->setWordWrap(true);
    headline_->hide();
    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("issuesTree"));
    tree_->setColumnCount(ColumnCount);
    tree_->setHeaderLabels({tr("Severity"), tr("Code"), tr("Node"), tr("Message"), tr("Path")});
    tree_->setRootIsDecorated(false);
    tree_->setUniformRowHeights(true);
    tree_->setAlternatingRowColors(true);
    tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    tree_->setFrameShape(QFrame::NoFrame);
    tree_->header()->setStretchLastSection(false);
    tree_->header()->setSectionResizeMode(MessageColumn, QHeaderView::Stretch);
    tree_->header()->setSectionResizeMode(SeverityColumn, QHeaderView::ResizeToContents);
    tree_->header()->setSectionResizeMode(CodeColumn, QHeaderView::ResizeToContents);
    tree_->header()->setSectionResizeMode(NodeColumn, QHeaderView::ResizeToContents);
    tree_->header()->setSectionResizeMode(PathColumn, QHeaderView::Interactive);
    tree_->setColumnWidth(PathColumn, 240);
    empty_ = new QLabel(tr("No issues: every reference, shape and projection checks out."), this);
    empty_->setObjectName(QStringLiteral("issuesEmpty"));
    empty_->setAlignment(Qt::AlignCenter);
    empty_->hide();
    layout->addWidget(headline_);
    layout->addWidget(tree_, 1);
    layout->addWidget(empty_, 1);

    connect(tree_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem *item) { activate(item); });
    connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem *item) { activate(item); });
}

void IssuesPanel::activate(QTreeWidgetItem *item) {
    if (!item) return;
    const int index = item->data(0, kIndexRole).toInt();
    if (index < 0 || index >= static_cast<int>(issues_.size())) return;
    emit issueActivated(index, QString::fromStdString(issues_[static_cast<size_t>(index)].node));
}

void IssuesPanel::setIssues(const std::vector<Issue> &issues, const QString &headline) {
    issues_ = issues;
    tree_->clear();
    QList<QTreeWidgetItem *> items;
    for (size_t i = 0; i < issues_.size(); ++i) {
        const Issue &issue = issues_[i];
        auto *item = new QTreeWidgetItem;
        item->setIcon(SeverityColumn, severityIcon(issue.severity));
        item->setText(SeverityColumn, QString::fromUtf8(severity_name(issue.severity).data(),
                                                        static_cast<qsizetype>(severity_name(issue.severity).size())));
        item->setText(CodeColumn, QString::fromStdString(issue.code));
        item->setText(NodeColumn, QString::fromStdString(issue.node));
        item->setText(MessageColumn, QString::fromStdString(issue.message));
        item->setText(PathColumn, QString::fromStdString(issue.json_path));
        item->setToolTip(MessageColumn, QString::fromStdString(format_issue(issue)));
        item->setData(0, kIndexRole, static_cast<int>(i));
        QFont mono(QStringLiteral("DejaVu Sans Mono"));
        mono.setStyleHint(QFont::Monospace);
        item->setFont(PathColumn, mono);
        items.append(item);
    }
    tree_->addTopLevelItems(items);
    headline_->setText(headline);
    headline_->setVisible(!headline.isEmpty());
    // The empty state only speaks for a project that was read.
    const bool nothing = issues_.empty() && headline.isEmpty() && has_project_;
    tree_->setVisible(!nothing);
    empty_->setVisible(nothing);
}

void IssuesPanel::highlightNodes(const QStringList &nodes) {
    const QSignalBlocker block(tree_);
    tree_->clearSelection();
    QTreeWidgetItem *first = nullptr;
    for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = tree_->topLevelItem(i);
        if (!nodes.contains(item->text(NodeColumn))) continue;
        item->setSelected(true);
        if (!first) first = item;
    }
    if (first) tree_->scrollToItem(first);
}

void IssuesPanel::clear() {
    has_project_ = false;
    setIssues({}, {});
}

void IssuesPanel::setIssuesOfProject(const std::vector<Issue> &issues, const QString &headline) {
    has_project_ = true;
    setIssues(issues, headline);
}

int IssuesPanel::count() const {
    return static_cast<int>(issues_.size());
}

QString IssuesPanel::summary() const {
    int errors = 0, warnings = 0, infos = 0;
    for (const Issue &i : issues_) {
        if (i.severity == Severity::error)
            ++errors;
        else if (i.severity == Severity::warning)
            ++warnings;
        else
            ++infos;
    }
    if (errors + warnings + infos == 0) return tr("No issues");
    QStringList parts;
    auto count = [](int n, const char *one, const char *many) {
        return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? one : many));
    };
    if (errors) parts << count(errors, "error", "errors");
    if (warnings) parts << count(warnings, "warning", "warnings");
    if (infos) parts << count(infos, "note", "notes");
    return parts.join(QStringLiteral(", "));
}

}  // namespace tapestry::views
