#include "views/graph_document.h"

#include "graph/validate.h"
#include "ops/library.h"
#include "views/document_commands.h"
#include "views/graph_diff.h"

namespace tapestry::views {

namespace {

// Structure when nodes come or go or an operation's connections change; Params
// when only what a node says about itself changes.
GraphDocument::Changes kindsOf(const GraphDelta &delta) {
    GraphDocument::Changes out;
    for (const NodeChange &c : delta.changes()) {
        if (c.added() || c.removed()) {
            out |= GraphDocument::Structure;
        } else if (c.kind == NodeChange::Kind::operation &&
                   (c.op_before->inputs != c.op_after->inputs || c.op_before->outputs != c.op_after->outputs)) {
            out |= GraphDocument::Structure;
        } else {
            out |= GraphDocument::Params;
        }
    }
    return out;
}

}  // namespace

std::vector<Issue> certificateIssues(const Certificate &certificate) {
    std::vector<Issue> out;
    for (const CertificateCheck &check : certificate.checks) {
        if (check.pass) continue;
        for (size_t i = 0; i < check.findings.size(); ++i) {
            Issue issue;
            issue.severity = Severity::error;
            issue.code = check.name;
            issue.message = check.findings[i];
            if (i < check.nodes.size()) issue.node = check.nodes[i];
            out.push_back(std::move(issue));
        }
    }
    return out;
}

GraphDocument::GraphDocument(QObject *parent) : QObject(parent) {
    undo_.setUndoLimit(0);
}

void GraphDocument::setSource(const DocumentSource &source) {
    source_ = source;
    emit changed(Source, {}, {});
}

void GraphDocument::replace(DocumentSource source, Graph graph, std::vector<Issue> load_issues,
                            std::vector<Issue> validation_issues, QHash<QString, QPointF> positions,
                            QSet<QString> pinned) {
    open_ = true;
    source_ = std::move(source);
    graph_ = std::move(graph);
    load_issues_ = std::move(load_issues);
    issues_ = load_issues_;
    issues_.insert(issues_.end(), validation_issues.begin(), validation_issues.end());
    positions_ = std::move(positions);
    pinned_ = std::move(pinned);
    stages_.clear();
    shown_ = held_ = -1;
    ++revision_;
    undo_.clear();
    undo_.setClean();
    emit changed(Replaced | Structure | Params | Positions | Stages | Pins | Source, {}, positions_);
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
    open_ = true;
    // Pushed before the notice, so that listeners see the step in the history.
    undo_.push(new EditCommand(this, text, delta, place));
    graphChanged(delta, place);
    return {};
}

void GraphDocument::applyDelta(const GraphDelta &delta, bool forward, const QHash<QString, QPointF> &place) {
    if (forward)
        delta.apply(graph_);
    else
        delta.revert(graph_);
    // Nodes come back where they were last seen.
    QHash<QString, QPointF> where = place;
    for (const QString &id : touchedIds(delta))
        if (!where.contains(id) && positions_.contains(id)) where.insert(id, positions_.value(id));
    graphChanged(delta, where);
}

void GraphDocument::graphChanged(const GraphDelta &delta, const QHash<QString, QPointF> &place) {
    // Problems of reading the file described the file; from now on the graph is the
    // document's, and validation speaks for it.
    ++revision_;
    load_issues_.clear();
    issues_ = validate(graph_, OpLibrary::standard());
    Changes what = kindsOf(delta);
    if (!stages_.empty()) {
        // The canvas follows the document: to the stage it now holds, or to no stage.
        const int held = findHeldStage();
        if (held != held_ || shown_ != held) what |= Stages;
        held_ = held;
        shown_ = held;
    }
    emit changed(what, touchedIds(delta), place);
}

void GraphDocument::recordMove(const QHash<QString, QPointF> &from, const QHash<QString, QPointF> &to) {
    for (auto it = to.cbegin(); it != to.cend(); ++it) positions_.insert(it.key(), it.value());
    undo_.push(new MoveCommand(this, from, to));
    emit changed(Positions, to.keys(), to);
}

void GraphDocument::applyMove(const QHash<QString, QPointF> &to) {
    for (auto it = to.cbegin(); it != to.cend(); ++it) positions_.insert(it.key(), it.value());
    emit changed(Positions, to.keys(), to);
}

void GraphDocument::placeNodes(const QHash<QString, QPointF> &positions) {
    if (positions.isEmpty()) return;
    for (auto it = positions.cbegin(); it != positions.cend(); ++it) positions_.insert(it.key(), it.value());
    emit changed(Positions, positions.keys(), positions);
}

void GraphDocument::adoptLayout(const QHash<QString, QPointF> &positions) {
    for (auto it = positions.cbegin(); it != positions.cend(); ++it) positions_.insert(it.key(), it.value());
}

void GraphDocument::setPinned(const QStringList &ids, bool pinned) {
    for (const QString &id : ids) {
        if (pinned)
            pinned_.insert(id);
        else
            pinned_.remove(id);
    }
    emit changed(Pins, ids, {});
}

// ---- stages ---------------------------------------------------------------------

int GraphDocument::findHeldStage() const {
    for (size_t k = 0; k < stages_.size(); ++k)
        if (sameGraph(stages_[k].graph, graph_)) return static_cast<int>(k);
    return -1;
}

void GraphDocument::setStages(std::vector<Stage> stages, int show) {
    stages_ = std::move(stages);
    held_ = findHeldStage();
    shown_ = show >= 0 && show < static_cast<int>(stages_.size()) ? show : held_;
    emit changed(Stages, {}, {});
}

bool GraphDocument::showStage(int k) {
    if (k < 0 || k >= static_cast<int>(stages_.size())) return false;
    shown_ = k;
    emit changed(Stages, {}, {});
    return true;
}

const Graph &GraphDocument::shownGraph() const {
    return showsDocument() ? graph_ : stages_[static_cast<size_t>(shown_)].graph;
}

std::vector<Issue> GraphDocument::shownIssues() const {
    return showsDocument() ? issues_ : certificateIssues(stages_[static_cast<size_t>(shown_)].certificate);
}

QHash<QString, DiffMark> GraphDocument::shownDiffMarks() const {
    if (shown_ <= 0) return {};
    return diffMarks(stages_[static_cast<size_t>(shown_) - 1].graph, stages_[static_cast<size_t>(shown_)].graph);
}

QString GraphDocument::applyStage(int k) {
    if (k < 0 || k >= static_cast<int>(stages_.size())) return tr("there is no stage %1").arg(k);
    if (held_ < 0) return tr("the graph was edited after the pipeline ran; run it again");
    const Stage &stage = stages_[static_cast<size_t>(k)];
    if (k == held_) {
        showStage(k);
        return {};
    }
    undo_.push(new ApplyStageCommand(this, tr("Apply stage %1 (%2)").arg(k).arg(QString::fromStdString(stage.pass)),
                                     deltaBetween(graph_, stage.graph)));
    return {};
}

}  // namespace tapestry::views
