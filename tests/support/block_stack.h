// Graph generators shared by the benchmarks: tensors and port bindings in one
// line, and a GPT-2 block project stacked into a deep chain (the 24-layer stack of
// bench_passes, the 5,000-node layout rows of bench_foundation).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapestry::testing {

inline Tensor make_tensor(const std::string &id, std::initializer_list<Coord> shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    return t;
}

inline PortBinding port(const std::string &name, const Tensor &t) { return PortBinding{name, {TensorSelection{t.id, t.range}}}; }

inline // `blocks` copies of a one-block project chained into one graph: copy i's ids get
// the prefix "b<i>_", and its `input` tensor is copy i-1's `output` tensor.
// With `shared` (an op kind), one extra tensor "shared_mask" is read by every
// operation of that kind (port "mask"), as an exported model's one attention
// mask is: edges that span the whole stack, so it cannot be cut anywhere.
Graph stack_blocks(const Graph &block, const std::string &input, const std::string &output, int blocks,
                   const std::string &shared = "") {
    Graph g;
    g.name = block.name + " x" + std::to_string(blocks);
    Tensor mask;
    if (!shared.empty()) {
        mask = make_tensor("shared_mask", {256, 256}, TensorRole::input);
        g.put_tensor(mask);
    }
    std::string previous;  // id of the previous copy's output
    for (int b = 0; b < blocks; ++b) {
        const std::string prefix = "b" + std::to_string(b) + "_";
        auto rename = [&](const TensorId &id) {
            return TensorId(id.value == input && b > 0 ? previous : prefix + id.value);
        };
        for (const TensorPtr &tp : block.tensors()) {
            if (tp->id.value == input && b > 0) continue;
            Tensor t = *tp;
            t.id = rename(t.id);
            t.name = prefix + t.name;
            if (tp->id.value == output && b + 1 < blocks) t.role = TensorRole::intermediate;
            g.put_tensor(t);
        }
        for (const OpPtr &opp : block.operations()) {
            Operation op = *opp;
            op.id = OpId(prefix + op.id.value);
            op.name = prefix + op.name;
            auto rename_ports = [&](std::vector<PortBinding> &ports) {
                for (PortBinding &p : ports)
                    for (TensorSelection &sel : p.selections) sel.tensor = rename(sel.tensor);
            };
            rename_ports(op.inputs);
            rename_ports(op.outputs);
            if (!shared.empty() && op.kind == shared) op.inputs.push_back(port("mask", mask));
            for (Shard &shard : op.shards) {
                rename_ports(shard.inputs);
                rename_ports(shard.outputs);
            }
            g.put_op(op);
        }
        previous = prefix + output;
    }
    return g;
}

// projects/gpt2_block.tapestry.json: --project, then $TAPESTRY_SOURCE_DIR, the
// working directory and this file's checkout.
inline std::filesystem::path find_block_project(const std::string &given) {
    if (!given.empty()) return given;
    const std::filesystem::path rel = "projects/gpt2_block.tapestry.json";
    std::vector<std::filesystem::path> roots;
    if (const char *dir = std::getenv("TAPESTRY_SOURCE_DIR")) roots.emplace_back(dir);
    roots.emplace_back(".");
    roots.push_back(std::filesystem::path(__FILE__).parent_path() / ".." / "..");
    for (const auto &root : roots)
        if (std::filesystem::exists(root / rel)) return root / rel;
    return rel;
}

}  // namespace tapestry::testing
