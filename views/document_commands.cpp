#include "views/document_commands.h"

#include <QObject>

#include "views/graph_document.h"

namespace tapestry::views {

EditCommand::EditCommand(GraphDocument *doc, const QString &text, GraphDelta delta, QHash<QString, QPointF> place)
    : QUndoCommand(text), doc_(doc), delta_(std::move(delta)), place_(std::move(place)) {}

void EditCommand::redo() {
    if (first_) {
        first_ = false;
        return;
    }
    doc_->applyDelta(delta_, true, place_);
}

void EditCommand::undo() {
    doc_->applyDelta(delta_, false, place_);
}

MoveCommand::MoveCommand(GraphDocument *doc, QHash<QString, QPointF> from, QHash<QString, QPointF> to)
    : doc_(doc), from_(std::move(from)), to_(std::move(to)) {
    setText(to_.size() == 1 ? QObject::tr("Move %1").arg(to_.cbegin().key())
                            : QObject::tr("Move %n nodes", nullptr, static_cast<int>(to_.size())));
}

void MoveCommand::redo() {
    if (first_) {
        first_ = false;
        return;
    }
    doc_->applyMove(to_);
}

void MoveCommand::undo() {
    doc_->applyMove(from_);
}

ApplyStageCommand::ApplyStageCommand(GraphDocument *doc, const QString &text, GraphDelta delta)
    : QUndoCommand(text), doc_(doc), delta_(std::move(delta)) {}

void ApplyStageCommand::redo() {
    doc_->applyDelta(delta_, true, {});
}

void ApplyStageCommand::undo() {
    doc_->applyDelta(delta_, false, {});
}

}  // namespace tapestry::views
