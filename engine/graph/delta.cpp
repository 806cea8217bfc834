#include "graph/delta.h"

#include <map>

#include "common/check.h"

namespace tapestry {

namespace {

void set_node(Graph &g, const NodeChange &c, bool forward) {
    if (c.kind == NodeChange::Kind::tensor) {
        const TensorPtr &from = forward ? c.tensor_before : c.tensor_after;
        const TensorPtr &to = forward ? c.tensor_after : c.tensor_before;
        if (!to) {
            const bool removed = g.remove_tensor(TensorId(c.id));
            TAPESTRY_CHECK(removed, "GraphDelta: tensor to remove is absent");
        } else if (!from) {
            g.insert_tensor(c.index, to);
        } else {
            g.put_tensor(to);
        }
    } else {
        const OpPtr &from = forward ? c.op_before : c.op_after;
        const OpPtr &to = forward ? c.op_after : c.op_before;
        if (!to) {
            const bool removed = g.remove_op(OpId(c.id));
            TAPESTRY_CHECK(removed, "GraphDelta: operation to remove is absent");
        } else if (!from) {
            g.insert_op(c.index, to);
        } else {
            g.put_op(to);
        }
    }
}

}  // namespace

void GraphDelta::apply(Graph &g) const {
    for (const NodeChange &c : changes_) set_node(g, c, true);
}

void GraphDelta::revert(Graph &g) const {
    for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) set_node(g, *it, false);
}

GraphDelta::Summary GraphDelta::summary() const {
    struct Ends {
        bool before = false, after = false;
        const void *first = nullptr, *last = nullptr;
    };
    std::map<std::pair<int, std::string>, Ends> ends;
    std::vector<std::pair<int, std::string>> order;
    for (const NodeChange &c : changes_) {
        const bool tensor = c.kind == NodeChange::Kind::tensor;
        const void *before = tensor ? static_cast<const void *>(c.tensor_before.get()) : c.op_before.get();
        const void *after = tensor ? static_cast<const void *>(c.tensor_after.get()) : c.op_after.get();
        const auto key = std::make_pair(tensor ? 0 : 1, c.id);
        auto [it, fresh] = ends.try_emplace(key);
        if (fresh) {
            order.push_back(key);
            it->second.before = before != nullptr;
            it->second.first = before;
        }
        it->second.after = after != nullptr;
        it->second.last = after;
    }
    Summary s;
    for (const auto &key : order) {
        const Ends &e = ends.at(key);
        if (!e.before && e.after)
            s.added.push_back(key.second);
        else if (e.before && !e.after)
            s.removed.push_back(key.second);
        else if (e.before && e.after && e.first != e.last)
            s.changed.push_back(key.second);
    }
    return s;
}

void GraphDelta::append(const GraphDelta &later) {
    changes_.insert(changes_.end(), later.changes_.begin(), later.changes_.end());
}

void RecordingRewriter::put_tensor(TensorPtr t) {
    TAPESTRY_CHECK(t != nullptr, "RecordingRewriter::put_tensor: null tensor");
    NodeChange c;
    c.kind = NodeChange::Kind::tensor;
    c.id = t->id.str();
    c.tensor_before = g_.tensor_ptr(t->id);
    if (c.tensor_before && (c.tensor_before == t || *c.tensor_before == *t)) return;
    c.tensor_after = std::move(t);
    c.index = c.tensor_before ? static_cast<size_t>(g_.tensor_index(TensorId(c.id))) : g_.tensors().size();
    g_.put_tensor(c.tensor_after);
    delta_.push(std::move(c));
}

void RecordingRewriter::put_op(OpPtr op) {
    TAPESTRY_CHECK(op != nullptr, "RecordingRewriter::put_op: null operation");
    const OpPtr before = g_.op_ptr(op->id);
    if (before && (before == op || *before == *op)) return;
    put_changed_op(std::move(op));
}

void RecordingRewriter::put_changed_op(OpPtr op) {
    TAPESTRY_CHECK(op != nullptr, "RecordingRewriter::put_changed_op: null operation");
    NodeChange c;
    c.kind = NodeChange::Kind::operation;
    c.id = op->id.str();
    c.op_before = g_.op_ptr(op->id);
    if (c.op_before == op) return;
    c.op_after = std::move(op);
    c.index = c.op_before ? static_cast<size_t>(g_.op_index(OpId(c.id))) : g_.operations().size();
    g_.put_op(c.op_after);
    delta_.push(std::move(c));
}

bool RecordingRewriter::remove_tensor(const TensorId &id) {
    const int index = g_.tensor_index(id);
    if (index < 0) return false;
    NodeChange c;
    c.kind = NodeChange::Kind::tensor;
    c.id = id.str();
    c.tensor_before = g_.tensor_ptr(id);
    c.index = static_cast<size_t>(index);
    g_.remove_tensor(id);
    delta_.push(std::move(c));
    return true;
}

bool RecordingRewriter::remove_op(const OpId &id) {
    const int index = g_.op_index(id);
    if (index < 0) return false;
    NodeChange c;
    c.kind = NodeChange::Kind::operation;
    c.id = id.str();
    c.op_before = g_.op_ptr(id);
    c.index = static_cast<size_t>(index);
    g_.remove_op(id);
    delta_.push(std::move(c));
    return true;
}

void GraphDelta::truncate(Graph &g, size_t count) {
    while (changes_.size() > count) {
        set_node(g, changes_.back(), false);
        changes_.pop_back();
    }
}

void RecordingRewriter::rollback_to(size_t count) {
    delta_.truncate(g_, count);
}

void RecordingRewriter::rollback() {
    delta_.revert(g_);
    delta_ = GraphDelta{};
}

GraphDelta RecordingRewriter::take() {
    GraphDelta d = std::move(delta_);
    delta_ = GraphDelta{};
    return d;
}

}  // namespace tapestry
