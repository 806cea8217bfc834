// Operation and Shard (Tapestry's Operation and Application nodes). An operation
// binds tensor selections to the named ports of an op-library kind; its shards
// are sub-ranges of its index space (DESIGN.md §4).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/ids.h"
#include "graph/params.h"
#include "graph/signature.h"
#include "graph/tensor.h"

namespace tapestry {

// The selections bound to one named port, in order.
struct PortBinding {
    std::string name;
    std::vector<TensorSelection> selections;
    friend bool operator==(const PortBinding &, const PortBinding &) = default;
};

// A shard: a sub-range of its operation's index space, optionally placed on a
// device. Its selections are derived from the operation's projections; a file may
// state them too (`inputs`/`outputs` non-empty), and validation checks they agree.
struct Shard {
    ShardId id;
    ZRange index;
    std::string device;  // empty until placement
    std::vector<PortBinding> inputs;
    std::vector<PortBinding> outputs;
    friend bool operator==(const Shard &, const Shard &) = default;
};

struct Operation {
    OpId id;
    std::string name;  // display name; defaults to the id
    std::string kind;  // op-library kind: "matmul", "relu", …
    Params params;
    std::vector<PortBinding> inputs;
    std::vector<PortBinding> outputs;
    // Index space and projections as stated by a file, if it states them; the op
    // library derives both, and validation reports disagreement.
    std::optional<ZRange> index_space;
    std::optional<Signature> signature;
    std::vector<Shard> shards;

    const PortBinding *input(const std::string &port) const;
    const PortBinding *output(const std::string &port) const;
    // Every tensor read / written, in port order (duplicates possible).
    std::vector<TensorId> input_tensors() const;
    std::vector<TensorId> output_tensors() const;
    // The same, each passed to f(const TensorId &) without making a list.
    template <class F>
    void for_each_input_tensor(F &&f) const {
        for (const PortBinding &b : inputs)
            for (const TensorSelection &s : b.selections) f(s.tensor);
    }
    template <class F>
    void for_each_output_tensor(F &&f) const {
        for (const PortBinding &b : outputs)
            for (const TensorSelection &s : b.selections) f(s.tensor);
    }
    friend bool operator==(const Operation &, const Operation &) = default;
};

using OpPtr = std::shared_ptr<const Operation>;

}  // namespace tapestry
