#include "views/find_bar.h"

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QToolButton>
#include <algorithm>
#include <cmath>

#include "views/graph_scene.h"

namespace tapestry::views {

namespace {

const char *kErrorTint = "QLineEdit { background-color: #fee2e2; color: #991b1b; }";

QString opName(const GraphScene &scene, const QString &id) {
    const Operation *op = scene.graph().find_op(OpId(id.toStdString()));
    if (!op) return id;
    return QString::fromStdString(op->name.empty() ? op->id.value : op->name);
}

// How well a node matches, best first; none when it does not match at all.
enum class Match { exact, prefix, partial, none };

Match matchOf(const QString &candidate, const QString &text) {
    if (candidate.compare(text, Qt::CaseInsensitive) == 0) return Match::exact;
    if (candidate.startsWith(text, Qt::CaseInsensitive)) return Match::prefix;
    if (candidate.contains(text, Qt::CaseInsensitive)) return Match::partial;
    return Match::none;
}

Match best(std::initializer_list<Match> matches) {
    return std::min(matches);
}

Match nodeMatch(const GraphScene &scene, const NodeItem &node, const QString &text, FindScope scope) {
    const QString &id = node.nodeId();
    if (node.nodeKind() == NodeKind::tensor) {
        const auto &t = static_cast<const TensorItem &>(node);
        switch (scope) {
            case FindScope::all:
            case FindScope::tensor:
                return best({matchOf(id, text), matchOf(t.title(), text), matchOf(t.detail(), text)});
            case FindScope::name: return best({matchOf(id, text), matchOf(t.title(), text)});
            case FindScope::op_kind: return Match::none;
        }
        return Match::none;
    }
    const auto &op = static_cast<const OperationItem &>(node);
    switch (scope) {
        case FindScope::all:
            return best({matchOf(id, text), matchOf(opName(scene, id), text), matchOf(op.kind(), text)});
        case FindScope::name: return best({matchOf(id, text), matchOf(opName(scene, id), text)});
        case FindScope::op_kind: return matchOf(op.kind(), text);
        case FindScope::tensor: return Match::none;
    }
    return Match::none;
}

}  // namespace

QStringList find_nodes(const GraphScene &scene, const QString &text, FindScope scope) {
    const QString needle = text.trimmed();
    if (needle.isEmpty()) return {};
    struct Found {
        const NodeItem *node;
        bool tensor;
        Match match;
        long y;
    };
    std::vector<Found> found;
    for (const NodeItem *n : scene.nodeItems()) {
        const Match m = nodeMatch(scene, *n, needle, scope);
        // Graphviz centres the nodes of one rank on one y; rounding to whole scene
        // units keeps a rank one line despite floating-point noise.
        if (m != Match::none) found.push_back({n, n->nodeKind() == NodeKind::tensor, m, std::lround(n->pos().y())});
    }
    // Operations first, exact matches of an id or name before prefixes before the
    // rest; then reading order: top to bottom, left to right.
    std::sort(found.begin(), found.end(), [](const Found &a, const Found &b) {
        if (a.tensor != b.tensor) return !a.tensor;
        if (a.match != b.match) return a.match < b.match;
        if (a.y != b.y) return a.y < b.y;
        if (a.node->pos().x() != b.node->pos().x()) return a.node->pos().x() < b.node->pos().x();
        return a.node->nodeId() < b.node->nodeId();
    });
    QStringList ids;
    ids.reserve(static_cast<qsizetype>(found.size()));
    for (const Found &f : found) ids << f.node->nodeId();
    return ids;
}

FindBar::FindBar(QWidget *parent) : FindBar(nullptr, parent) {}

FindBar::FindBar(GraphScene *scene, QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("findBar"));
    edit_ = new QLineEdit(this);
    edit_->setObjectName(QStringLiteral("findText"));
    edit_->setPlaceholderText(tr("Find nodes (Ctrl+F)"));
    edit_->setClearButtonEnabled(true);
    edit_->setMinimumWidth(200);
    edit_->installEventFilter(this);

    scope_box_ = new QComboBox(this);
    scope_box_->setObjectName(QStringLiteral("findScope"));
    scope_box_->addItem(tr("All"), static_cast<int>(FindScope::all));
    scope_box_->addItem(tr("Name"), static_cast<int>(FindScope::name));
    scope_box_->addItem(tr("Op kind"), static_cast<int>(FindScope::op_kind));
    scope_box_->addItem(tr("Tensor"), static_cast<int>(FindScope::tensor));
    scope_box_->setToolTip(tr("Where to look: ids and names, operation kinds, or tensor dtypes and shapes"));

    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("findStatus"));
    status_->setMinimumWidth(80);

    previous_ = new QToolButton(this);
    previous_->setText(QStringLiteral("▲"));
    previous_->setToolTip(tr("Previous match (Shift+Enter, Shift+F3)"));
    next_ = new QToolButton(this);
    next_->setText(QStringLiteral("▼"));
    next_->setToolTip(tr("Next match (Enter, F3)"));
    select_all_ = new QPushButton(tr("Select all"), this);
    select_all_->setToolTip(tr("Select every match on the canvas"));
    close_ = new QToolButton(this);
    close_->setText(QStringLiteral("✕"));
    close_->setAutoRaise(true);
    close_->setToolTip(tr("Close (Esc)"));

    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 3, 6, 3);
    layout->setSpacing(4);
    layout->addWidget(edit_, 1);
    layout->addWidget(scope_box_);
    layout->addWidget(status_);
    layout->addWidget(previous_);
    layout->addWidget(next_);
    layout->addWidget(select_all_);
    layout->addStretch(0);
    layout->addWidget(close_);

    find_action_ = new QAction(tr("&Find…"), this);
    find_action_->setShortcut(QKeySequence::Find);
    find_action_->setShortcutContext(Qt::WindowShortcut);
    find_next_action_ = new QAction(tr("Find &Next"), this);
    find_next_action_->setShortcut(QKeySequence::FindNext);
    find_next_action_->setShortcutContext(Qt::WindowShortcut);
    find_previous_action_ = new QAction(tr("Find Pre&vious"), this);
    find_previous_action_->setShortcut(QKeySequence::FindPrevious);
    find_previous_action_->setShortcutContext(Qt::WindowShortcut);

    connect(find_action_, &QAction::triggered, this, &FindBar::activate);
    connect(find_next_action_, &QAction::triggered, this, &FindBar::findNext);
    connect(find_previous_action_, &QAction::triggered, this, &FindBar::findPrevious);
    connect(edit_, &QLineEdit::textChanged, this, &FindBar::search);
    connect(scope_box_, &QComboBox::currentIndexChanged, this, &FindBar::search);
    connect(previous_, &QToolButton::clicked, this, &FindBar::findPrevious);
    connect(next_, &QToolButton::clicked, this, &FindBar::findNext);
    connect(select_all_, &QPushButton::clicked, this, &FindBar::selectAllMatches);
    connect(close_, &QToolButton::clicked, this, &FindBar::dismiss);

    setScene(scene);
    search();
}

void FindBar::setScene(GraphScene *scene) {
    if (scene_ == scene) return;
    if (scene_) disconnect(scene_, nullptr, this, nullptr);
    scene_ = scene;
    // A new layout (or a cleared graph) rebuilds the items: search them again.
    if (scene_) connect(scene_, &QGraphicsScene::sceneRectChanged, this, &FindBar::refresh);
    current_ = -1;
    search();
}

QString FindBar::text() const {
    return edit_->text();
}

void FindBar::setText(const QString &text) {
    edit_->setText(text);
}

FindScope FindBar::scope() const {
    return static_cast<FindScope>(scope_box_->currentData().toInt());
}

void FindBar::setScope(FindScope scope) {
    scope_box_->setCurrentIndex(scope_box_->findData(static_cast<int>(scope)));
}

void FindBar::search() {
    matches_ = scene_ ? find_nodes(*scene_, edit_->text(), scope()) : QStringList();
    current_ = -1;
    updateStatus();
}

void FindBar::refresh() {
    const QString current = currentMatch();
    matches_ = scene_ ? find_nodes(*scene_, edit_->text(), scope()) : QStringList();
    current_ = current.isEmpty() ? -1 : static_cast<int>(matches_.indexOf(current));
    updateStatus();
}

bool FindBar::hasNoMatches() const {
    return !edit_->text().trimmed().isEmpty() && matches_.isEmpty();
}

QString FindBar::statusText() const {
    if (edit_->text().trimmed().isEmpty()) return {};
    if (matches_.isEmpty()) return tr("No matches");
    if (current_ < 0) return matches_.size() == 1 ? tr("1 match") : tr("%1 matches").arg(matches_.size());
    return tr("%1 of %2").arg(current_ + 1).arg(matches_.size());
}

void FindBar::updateStatus() {
    const bool none = hasNoMatches();
    status_->setText(statusText());
    edit_->setStyleSheet(none ? QString::fromLatin1(kErrorTint) : QString());
    edit_->setProperty("noMatches", none);
    const bool any = !matches_.isEmpty();
    previous_->setEnabled(any);
    next_->setEnabled(any);
    select_all_->setEnabled(any);
}

void FindBar::step(int delta) {
    if (!scene_) return;
    // The graph may have changed since the search (an edit without refresh()).
    if (!matches_.isEmpty() && !scene_->nodeItem(matches_.value(std::max(current_, 0)))) refresh();
    if (matches_.isEmpty()) {
        updateStatus();
        return;
    }
    const int n = static_cast<int>(matches_.size());
    if (current_ < 0)
        current_ = delta > 0 ? 0 : n - 1;
    else
        current_ = ((current_ + delta) % n + n) % n;
    const QString id = matches_.at(current_);
    scene_->selectNode(id);
    updateStatus();
    emit revealRequested(id);
}

void FindBar::findNext() {
    step(+1);
}

void FindBar::findPrevious() {
    step(-1);
}

void FindBar::selectAllMatches() {
    if (!scene_ || matches_.isEmpty()) return;
    QList<NodeItem *> items;
    for (const QString &id : std::as_const(matches_))
        if (NodeItem *item = scene_->nodeItem(id)) items << item;
    if (items.isEmpty()) return;
    {
        // One selectionChanged for the whole set, not one per item (each makes
        // the scene re-highlight every edge).
        const QSignalBlocker block(scene_);
        scene_->clearSelection();
        for (qsizetype i = 0; i + 1 < items.size(); ++i) items[i]->setSelected(true);
    }
    items.back()->setSelected(true);
    emit matchesSelected(matches_);
}

void FindBar::activate() {
    show();
    edit_->setFocus(Qt::ShortcutFocusReason);
    edit_->selectAll();
}

void FindBar::dismiss() {
    hide();
    emit closed();
}

bool FindBar::eventFilter(QObject *watched, QEvent *event) {
    if (watched == edit_ && event->type() == QEvent::KeyPress) {
        const auto *key = static_cast<QKeyEvent *>(event);
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
            (key->modifiers() & Qt::ShiftModifier) ? findPrevious() : findNext();
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            dismiss();
            return true;
        }
        if (key->key() == Qt::Key_F3) {
            (key->modifiers() & Qt::ShiftModifier) ? findPrevious() : findNext();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void FindBar::keyPressEvent(QKeyEvent *event) {
    if (event->key() == Qt::Key_Escape) {
        dismiss();
        return;
    }
    QWidget::keyPressEvent(event);
}

}  // namespace tapestry::views
