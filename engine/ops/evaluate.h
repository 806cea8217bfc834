// The graph-level numeric oracle: evaluates a whole graph with the op library's
// naive double-precision reference kernels, operation by operation in dependency
// order — shard by shard where an operation has shards, each shard seeing only
// the elements its own selections hold. Every pass's result is checked against it.
#pragma once

#include <map>
#include <string>

#include "common/expected.h"
#include "graph/graph.h"
#include "ops/library.h"
#include "ops/reference.h"

namespace tapestry {

struct EvaluationOptions {
    // Run each sharded operation shard by shard (each over its own index sub-range,
    // with inputs holding only that shard's selections; other elements are NaN, so
    // a read outside a shard's selection poisons its result). When false, every
    // operation runs once over its whole index space.
    bool run_shards = true;
};

// Values of every tensor — those given plus all computed — keyed by id. Each array
// spans its tensor's range (which may have a non-zero origin). `inputs_and_params`
// must hold every tensor that no operation writes, each array spanning exactly its
// tensor's range. Output elements no operation writes are NaN.
//
// Errors (one sentence): a missing input ("tensor 'w' has no value: it is not
// given and no operation writes it"), an array of the wrong range, an operation
// the library rejects ("operation 'fc1': linear: w has 64 rows but x has 32
// features (inputs.w[0])"), a cycle.
Expected<std::map<TensorId, RefArray>, std::string> evaluate_reference(
    const Graph &g, const std::map<TensorId, RefArray> &inputs_and_params, const OpLibrary &library,
    const EvaluationOptions &options = {});

}  // namespace tapestry
