#include "views/graph_document.h"

#include <QUndoCommand>

#include "graph/validate.h"
#include "ops/library.h"

namespace tapestry::views {

namespace {

QStringList touched_ids(const GraphDelta &d) {
    const GraphDelta::Summary s = d.summary();
    QStringList out;
    for (const auto *list : {&s.added, &s.removed, &s.changed})
        for (const std::string &id : *list) out << QString::fromStdString(id);
    return out;
}

// One edit: a recorded GraphDelta. The edit is already applied when the command
// is pushed, so the first redo() does nothing.
class EditCommand : public QUndoCommand {
public:
    EditCommand(GraphDocument *doc, const QString &text, GraphDelta delta, QHash<QString, QPointF> place)
        : QUndoCommand(text), doc_(doc), delta_(std::move(delta)), place_(std::move(place)) {}
    void redo() override {
        if (first_) {
            first_ = false;
            return;
        }
        doc_->applyDelta(delta_, true, place_);
    }
    void undo() override { doc_->applyDelta(delta_, false, place_); }

private:
    GraphDocument *doc_;
    GraphDelta delta_;
    QHash<QString, QPointF> place_;
    bool first_ = true;
};

// One drag. Consecutive drags of the same nodes stay separate steps: a drag is
// what the user thinks of as one move.
class MoveCommand : public QUndoCommand {
public:
    MoveCommand(GraphDocument *doc, QHash<QString, QPointF> from, QHash<QString, QPointF> to)
        : doc_(doc), from_(std::move(from)), to_(std::move(to)) {
        setText(to_.size() == 1 ? QObject::tr("Move %1").arg(to_.cbegin().key())
                                : QObject::tr("Move %n nodes", nullptr, static_cast<int>(to_.size())));
    }
    void redo() override {
        if (first_) {
            first_ = false;
            return;
        }
        doc_->applyMove(to_);
    }
    void undo() override { doc_->applyMove(from_); }

private:
    GraphDocument *doc_;
    QHash<QString, QPointF> from_, to_;
    bool first_ = true;
};

}  // namespace

GraphDocument::GraphDocument(QObject *parent) : QObject(parent) {
    undo_.setUndoLimit(0);
}

void GraphDocument::reset(const Graph &graph, const std::vector<Issue> &issues) {
    graph_ = graph;
    issues_ = issues;
    positions_.clear();
    pinned_.clear();
    undo_.clear();
    undo_.setClean();
    emit documentReset();
}

void GraphDocument::revalidate() {
    issues_ = validate(graph_, OpLibrary::standard());
}

QString GraphDocument::edit(const QString &text, const EditFn &fn, const QHash<QString, QPointF> &place) {
    last_added_.clear();
    last_notes_.clear();
    edit::Editor editor(graph_);
    const edit::EditResult r = fn(editor);
    GraphDelta delta = editor.take();
    if (!r) {
        delta.revert(graph_);  // the Editor undid the failed step; earlier steps of `fn` go too
        return QString::fromStdString(r.error().message);
    }
    for (const std::string &n : editor.notes()) last_notes_ << QString::fromStdString(n);
    if (delta.empty()) return {};
    for (const std::string &id : delta.summary().added) last_added_ << QString::fromStdString(id);
    for (auto it = place.cbegin(); it != place.cend(); ++it) positions_.insert(it.key(), it.value());
    revalidate();
    const QStringList touched = touched_ids(delta);
    undo_.push(new EditCommand(this, text, std::move(delta), place));
    emit edited(touched, place);
    return {};
}

void GraphDocument::applyDelta(const GraphDelta &delta, bool forward, const QHash<QString, QPointF> &place) {
    if (forward)
        delta.apply(graph_);
    else
        delta.revert(graph_);
    revalidate();
    // Nodes come back where they were last seen.
    QHash<QString, QPointF> where = place;
    const QStringList touched = touched_ids(delta);
    for (const QString &id : touched)
        if (!where.contains(id) && positions_.contains(id)) where.insert(id, positions_.value(id));
    emit edited(touched, where);
}

void GraphDocument::recordMove(const QHash<QString, QPointF> &from, const QHash<QString, QPointF> &to) {
    for (auto it = to.cbegin(); it != to.cend(); ++it) positions_.insert(it.key(), it.value());
    undo_.push(new MoveCommand(this, from, to));
}

void GraphDocument::applyMove(const QHash<QString, QPointF> &to) {
    for (auto it = to.cbegin(); it != to.cend(); ++it) positions_.insert(it.key(), it.value());
    emit moved(to);
}

void GraphDocument::setPositions(const QHash<QString, QPointF> &positions) {
    for (auto it = positions.cbegin(); it != positions.cend(); ++it) positions_.insert(it.key(), it.value());
}

void GraphDocument::setPinned(const QStringList &ids, bool pinned) {
    for (const QString &id : ids) {
        if (pinned)
            pinned_.insert(id);
        else
            pinned_.remove(id);
    }
    emit pinsChanged();
}

}  // namespace tapestry::views
