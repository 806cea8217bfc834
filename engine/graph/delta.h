// GraphDelta and RecordingRewriter: every change to a graph as a reversible list
// of node replacements (DESIGN.md §5). The studio's undo commands replay deltas;
// the passes' stage diffs are the same records. Nodes are shared, so a delta holds
// only the pointers of the nodes it touched.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapestry {

// One node change: `before` → `after` (a null pointer = absent). `index` is the
// node's position when it was removed or inserted, so a revert puts it back there.
struct NodeChange {
    enum class Kind { tensor, operation };
    Kind kind = Kind::tensor;
    std::string id;
    TensorPtr tensor_before, tensor_after;
    OpPtr op_before, op_after;
    size_t index = 0;

    bool added() const { return kind == Kind::tensor ? !tensor_before && tensor_after : !op_before && op_after; }
    bool removed() const { return kind == Kind::tensor ? tensor_before && !tensor_after : op_before && !op_after; }
};

class GraphDelta {
public:
    const std::vector<NodeChange> &changes() const { return changes_; }
    bool empty() const { return changes_.empty(); }
    size_t size() const { return changes_.size(); }

    // Replays the changes in order (redo) / undoes them in reverse order (undo).
    // The graph must be in the state the delta starts from / ends in.
    void apply(Graph &g) const;
    void revert(Graph &g) const;

    // Net effect per node id, comparing its first `before` with its last `after`:
    // ids added, removed, and changed (present before and after, different node).
    struct Summary {
        std::vector<std::string> added, removed, changed;
    };
    Summary summary() const;

    void append(const GraphDelta &later);
    void push(NodeChange c) { changes_.push_back(std::move(c)); }
    // Reverts and drops the changes after the first `count`.
    void truncate(Graph &g, size_t count);

private:
    std::vector<NodeChange> changes_;
};

// Edits a graph in place and records each change. Putting a node equal to the
// one present (same pointer or same content) records nothing and keeps the old
// pointer, so a rewrite that changes nothing allocates nothing.
class RecordingRewriter {
public:
    explicit RecordingRewriter(Graph &g) : g_(g) {}

    const Graph &graph() const { return g_; }
    void put_tensor(TensorPtr t);
    void put_tensor(Tensor t) { put_tensor(std::make_shared<const Tensor>(std::move(t))); }
    void put_op(OpPtr op);
    void put_op(Operation op) { put_op(std::make_shared<const Operation>(std::move(op))); }
    // put_op for a node the caller knows differs from the node of its id, if any (a
    // memo's node, made once from that node): recorded without comparing contents.
    void put_changed_op(OpPtr op);
    bool remove_tensor(const TensorId &id);
    bool remove_op(const OpId &id);

    const GraphDelta &delta() const { return delta_; }
    // Undoes everything recorded so far and forgets it.
    void rollback();
    // Undoes the changes recorded after the first `count` (an edit that failed
    // halfway puts the graph back as it was before the edit).
    void rollback_to(size_t count);
    // Hands over the record (the rewriter starts a fresh one).
    GraphDelta take();

private:
    Graph &g_;
    GraphDelta delta_;
};

}  // namespace tapestry
