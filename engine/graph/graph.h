// Graph: tensors and operations with stable ids, built for rewriting. Nodes are
// immutable and shared between graph versions: copying a Graph copies pointers,
// and replacing one operation allocates one operation (DESIGN.md §5, STYLE.md).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/operation.h"
#include "graph/tensor.h"

namespace tapestry {

class Graph {
public:
    std::string name;
    std::string description;

    // Nodes in insertion order (the order of the project file).
    const std::vector<TensorPtr> &tensors() const { return tensors_; }
    const std::vector<OpPtr> &operations() const { return ops_; }
    size_t node_count() const { return tensors_.size() + ops_.size(); }

    const Tensor *find_tensor(const TensorId &id) const;
    const Operation *find_op(const OpId &id) const;
    TensorPtr tensor_ptr(const TensorId &id) const;
    OpPtr op_ptr(const OpId &id) const;
    // Position in tensors() / operations(), or -1.
    int tensor_index(const TensorId &id) const;
    int op_index(const OpId &id) const;
    // True when some tensor or operation already uses this id.
    bool has_id(const std::string &id) const;

    // Appends, or replaces the node with the same id in place (keeping its position).
    void put_tensor(TensorPtr t);
    void put_tensor(Tensor t) { put_tensor(std::make_shared<const Tensor>(std::move(t))); }
    void put_op(OpPtr op);
    void put_op(Operation op) { put_op(std::make_shared<const Operation>(std::move(op))); }
    bool remove_tensor(const TensorId &id);
    bool remove_op(const OpId &id);
    // Inserts a node whose id is not in the graph at `index` (clamped to the end);
    // undo uses it to put a removed node back where it was.
    void insert_tensor(size_t index, TensorPtr t);
    void insert_op(size_t index, OpPtr op);

    // Operations writing / reading a tensor, in operation order.
    std::vector<OpId> producers(const TensorId &id) const;
    std::vector<OpId> consumers(const TensorId &id) const;

    // Same nodes (by pointer) as `other`: nothing was rewritten between the two.
    bool shares_all_nodes(const Graph &other) const;

private:
    void reindex();
    std::vector<TensorPtr> tensors_;
    std::vector<OpPtr> ops_;
    std::unordered_map<TensorId, size_t> tensor_pos_;
    std::unordered_map<OpId, size_t> op_pos_;
};

}  // namespace tapestry
