#include "views/graph_diff.h"

#include <map>

namespace tapestry::views {

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

}  // namespace

GraphDelta diffGraphs(const Graph &before, const Graph &after) {
    GraphDelta delta;
    std::map<std::string, std::pair<TensorPtr, size_t>> tensors_before;
    std::map<std::string, std::pair<OpPtr, size_t>> ops_before;
    for (size_t i = 0; i < before.tensors().size(); ++i)
        tensors_before[before.tensors()[i]->id.value] = {before.tensors()[i], i};
    for (size_t i = 0; i < before.operations().size(); ++i)
        ops_before[before.operations()[i]->id.value] = {before.operations()[i], i};
    auto push_tensor = [&](const std::string &id, TensorPtr was, TensorPtr now, size_t index) {
        NodeChange c;
        c.kind = NodeChange::Kind::tensor;
        c.id = id;
        c.tensor_before = std::move(was);
        c.tensor_after = std::move(now);
        c.index = index;
        delta.push(std::move(c));
    };
    auto push_op = [&](const std::string &id, OpPtr was, OpPtr now, size_t index) {
        NodeChange c;
        c.kind = NodeChange::Kind::operation;
        c.id = id;
        c.op_before = std::move(was);
        c.op_after = std::move(now);
        c.index = index;
        delta.push(std::move(c));
    };
    for (size_t i = 0; i < after.tensors().size(); ++i) {
        const TensorPtr &t = after.tensors()[i];
        const auto it = tensors_before.find(t->id.value);
        if (it == tensors_before.end())
            push_tensor(t->id.value, nullptr, t, i);
        else if (it->second.first != t && !(*it->second.first == *t))
            push_tensor(t->id.value, it->second.first, t, i);
        if (it != tensors_before.end()) tensors_before.erase(it);
    }
    for (size_t i = 0; i < after.operations().size(); ++i) {
        const OpPtr &op = after.operations()[i];
        const auto it = ops_before.find(op->id.value);
        if (it == ops_before.end())
            push_op(op->id.value, nullptr, op, i);
        else if (it->second.first != op && !(*it->second.first == *op))
            push_op(op->id.value, it->second.first, op, i);
        if (it != ops_before.end()) ops_before.erase(it);
    }
    for (const auto &[id, entry] : ops_before) push_op(id, entry.first, nullptr, entry.second);
    for (const auto &[id, entry] : tensors_before) push_tensor(id, entry.first, nullptr, entry.second);
    return delta;
}

QHash<QString, DiffMark> diffMarks(const Graph &before, const Graph &after) {
    QHash<QString, DiffMark> marks;
    const GraphDelta::Summary s = diffGraphs(before, after).summary();
    for (const std::string &id : s.added) marks.insert(qs(id), DiffMark::added);
    for (const std::string &id : s.removed) marks.insert(qs(id), DiffMark::removed);
    for (const std::string &id : s.changed) marks.insert(qs(id), DiffMark::changed);
    return marks;
}

bool sameGraph(const Graph &a, const Graph &b) {
    if (a.tensors().size() != b.tensors().size() || a.operations().size() != b.operations().size()) return false;
    for (size_t i = 0; i < a.tensors().size(); ++i)
        if (a.tensors()[i] != b.tensors()[i] && !(*a.tensors()[i] == *b.tensors()[i])) return false;
    for (size_t i = 0; i < a.operations().size(); ++i)
        if (a.operations()[i] != b.operations()[i] && !(*a.operations()[i] == *b.operations()[i])) return false;
    return true;
}

GraphDelta deltaBetween(const Graph &from, const Graph &to) {
    Graph g = from;
    RecordingRewriter rw(g);
    for (const OpPtr &op : from.operations())
        if (!to.find_op(op->id)) rw.remove_op(op->id);
    for (const TensorPtr &t : from.tensors())
        if (!to.find_tensor(t->id)) rw.remove_tensor(t->id);
    for (const TensorPtr &t : to.tensors()) rw.put_tensor(t);
    for (const OpPtr &op : to.operations()) rw.put_op(op);
    return rw.take();
}

QStringList touchedIds(const GraphDelta &delta) {
    const GraphDelta::Summary s = delta.summary();
    QStringList out;
    for (const auto *list : {&s.added, &s.removed, &s.changed})
        for (const std::string &id : *list) out << qs(id);
    return out;
}

}  // namespace tapestry::views
