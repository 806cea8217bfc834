#include "graph/graph.h"

#include <algorithm>

#include "common/check.h"

namespace tapestry {

bool Signature::is_reduction_dim(int dim) const {
    for (const PortProjections &pp : outputs)
        for (const OperandProjection &p : pp.operands) {
            const ZMatrix &a = p.projection.map().matrix();
            for (int r = 0; r < a.rows(); ++r)
                if (a.at(r, dim) != 0) return false;
        }
    return true;
}

const OperandProjection *Signature::input(const std::string &port, size_t i) const {
    for (const PortProjections &p : inputs)
        if (p.port == port) return i < p.operands.size() ? &p.operands[i] : nullptr;
    return nullptr;
}

const OperandProjection *Signature::output(const std::string &port, size_t i) const {
    for (const PortProjections &p : outputs)
        if (p.port == port) return i < p.operands.size() ? &p.operands[i] : nullptr;
    return nullptr;
}

const PortBinding *Operation::input(const std::string &port) const {
    for (const PortBinding &b : inputs)
        if (b.name == port) return &b;
    return nullptr;
}

const PortBinding *Operation::output(const std::string &port) const {
    for (const PortBinding &b : outputs)
        if (b.name == port) return &b;
    return nullptr;
}

static std::vector<TensorId> tensors_of(const std::vector<PortBinding> &ports) {
    std::vector<TensorId> out;
    for (const PortBinding &b : ports)
        for (const TensorSelection &s : b.selections) out.push_back(s.tensor);
    return out;
}

std::vector<TensorId> Operation::input_tensors() const { return tensors_of(inputs); }
std::vector<TensorId> Operation::output_tensors() const { return tensors_of(outputs); }

const Tensor *Graph::find_tensor(const TensorId &id) const {
    auto it = tensor_pos_.find(id);
    return it == tensor_pos_.end() ? nullptr : tensors_[it->second].get();
}

const Operation *Graph::find_op(const OpId &id) const {
    auto it = op_pos_.find(id);
    return it == op_pos_.end() ? nullptr : ops_[it->second].get();
}

TensorPtr Graph::tensor_ptr(const TensorId &id) const {
    auto it = tensor_pos_.find(id);
    return it == tensor_pos_.end() ? nullptr : tensors_[it->second];
}

OpPtr Graph::op_ptr(const OpId &id) const {
    auto it = op_pos_.find(id);
    return it == op_pos_.end() ? nullptr : ops_[it->second];
}

int Graph::tensor_index(const TensorId &id) const {
    auto it = tensor_pos_.find(id);
    return it == tensor_pos_.end() ? -1 : static_cast<int>(it->second);
}

int Graph::op_index(const OpId &id) const {
    auto it = op_pos_.find(id);
    return it == op_pos_.end() ? -1 : static_cast<int>(it->second);
}

bool Graph::has_id(const std::string &id) const {
    return tensor_pos_.count(TensorId(id)) != 0 || op_pos_.count(OpId(id)) != 0;
}

void Graph::put_tensor(TensorPtr t) {
    TAPESTRY_CHECK(t != nullptr, "Graph::put_tensor: null tensor");
    auto it = tensor_pos_.find(t->id);
    if (it != tensor_pos_.end()) {
        tensors_[it->second] = std::move(t);
        return;
    }
    tensor_pos_.emplace(t->id, tensors_.size());
    tensors_.push_back(std::move(t));
}

void Graph::put_op(OpPtr op) {
    TAPESTRY_CHECK(op != nullptr, "Graph::put_op: null operation");
    auto it = op_pos_.find(op->id);
    if (it != op_pos_.end()) {
        ops_[it->second] = std::move(op);
        return;
    }
    op_pos_.emplace(op->id, ops_.size());
    ops_.push_back(std::move(op));
}

bool Graph::remove_tensor(const TensorId &id) {
    auto it = tensor_pos_.find(id);
    if (it == tensor_pos_.end()) return false;
    tensors_.erase(tensors_.begin() + static_cast<std::ptrdiff_t>(it->second));
    reindex();
    return true;
}

bool Graph::remove_op(const OpId &id) {
    auto it = op_pos_.find(id);
    if (it == op_pos_.end()) return false;
    ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(it->second));
    reindex();
    return true;
}

void Graph::insert_tensor(size_t index, TensorPtr t) {
    TAPESTRY_CHECK(t != nullptr, "Graph::insert_tensor: null tensor");
    TAPESTRY_CHECK(tensor_pos_.count(t->id) == 0, "Graph::insert_tensor: id already present");
    index = std::min(index, tensors_.size());
    tensors_.insert(tensors_.begin() + static_cast<std::ptrdiff_t>(index), std::move(t));
    reindex();
}

void Graph::insert_op(size_t index, OpPtr op) {
    TAPESTRY_CHECK(op != nullptr, "Graph::insert_op: null operation");
    TAPESTRY_CHECK(op_pos_.count(op->id) == 0, "Graph::insert_op: id already present");
    index = std::min(index, ops_.size());
    ops_.insert(ops_.begin() + static_cast<std::ptrdiff_t>(index), std::move(op));
    reindex();
}

void Graph::reindex() {
    tensor_pos_.clear();
    op_pos_.clear();
    for (size_t i = 0; i < tensors_.size(); ++i) tensor_pos_.emplace(tensors_[i]->id, i);
    for (size_t i = 0; i < ops_.size(); ++i) op_pos_.emplace(ops_[i]->id, i);
}

// Whether one of `ports`' selections names `id` (no list built: producers and
// consumers scan every operation, and the passes ask per tensor).
static bool binds(const std::vector<PortBinding> &ports, const TensorId &id) {
    for (const PortBinding &b : ports)
        for (const TensorSelection &s : b.selections)
            if (s.tensor == id) return true;
    return false;
}

std::vector<OpId> Graph::producers(const TensorId &id) const {
    std::vector<OpId> out;
    for (const OpPtr &op : ops_)
        if (binds(op->outputs, id)) out.push_back(op->id);
    return out;
}

std::vector<OpId> Graph::consumers(const TensorId &id) const {
    std::vector<OpId> out;
    for (const OpPtr &op : ops_)
        if (binds(op->inputs, id)) out.push_back(op->id);
    return out;
}

bool Graph::shares_all_nodes(const Graph &other) const {
    if (tensors_.size() != other.tensors_.size() || ops_.size() != other.ops_.size()) return false;
    for (size_t i = 0; i < tensors_.size(); ++i)
        if (tensors_[i] != other.tensors_[i]) return false;
    for (size_t i = 0; i < ops_.size(); ++i)
        if (ops_[i] != other.ops_[i]) return false;
    return true;
}

}  // namespace tapestry
