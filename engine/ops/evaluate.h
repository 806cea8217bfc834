// The graph-level numeric oracle: evaluates a whole graph with the op library's
// double-precision reference kernels, operation by operation in dependency
// order — shard by shard where an operation has shards, each shard seeing only
// the elements its own selections hold. Every pass's result is checked against it.
//
// Each operation's index space (each shard's, when sharded) is cut into chunks
// that a pool of threads evaluates; output projections are injective, so chunks
// write disjoint elements. Kernels take their fast paths (blocked loops over the
// arrays, RefContext::fast) unless told not to. Neither changes a value: every
// kernel computes an element the same way whatever chunk it lies in, so the
// outputs do not depend on the number of threads, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "common/expected.h"
#include "graph/graph.h"
#include "ops/library.h"
#include "ops/reference.h"

namespace tapestry {

struct EvaluationOptions {
    // Run each sharded operation shard by shard (each over its own index sub-range,
    // with inputs holding only that shard's selections; other elements are NaN, so
    // a read outside a shard's selection poisons its result). When false, every
    // operation runs once over its whole index space. Either way the chunks of
    // one shard (or of the whole space) run in parallel, the shards one after the other.
    bool run_shards = true;

    // Threads evaluating the chunks, the calling thread included; below 1 means 1.
    // Workers start only for an operation with more than one chunk.
    int threads = static_cast<int>(std::thread::hardware_concurrency());

    // Let kernels take their fast paths (RefContext::fast_kernels). false runs
    // every naive loop: the baseline of tests/bench/bench_oracle and the
    // cross-check of the fast paths.
    bool fast_kernels = true;

    // Progress in work units: a chunk of n index points of an operation with f
    // FLOPs per point (OpDef::flops_per_point) is n·max(1, f) units, and `total`
    // is the sum over every chunk of the evaluation, known before the first.
    // Called after each chunk from the thread that ran it; calls never overlap
    // (they are serialised with each other and with `cancelled`), `done` grows
    // strictly, and the last call has done == total (a single (0, 0) call when
    // there is no work). Not called once `cancelled` has returned true.
    std::function<void(std::int64_t done, std::int64_t total)> progress = {};

    // Polled before every chunk, from the thread about to run it, never
    // concurrently with itself or `progress`. Once it returns true no chunk
    // starts and the evaluation returns the error "cancelled". A chunk holds at
    // most 2^28 work units and 2^16 index points, which the fast kernels finish
    // within tens of milliseconds; naive loops that re-read a window per point
    // (softmax, reductions and pools, which have no fast path, or every kernel
    // with fast_kernels off) may take seconds per chunk.
    std::function<bool()> cancelled = {};
};

// Values of every tensor — those given plus all computed — keyed by id. Each array
// spans its tensor's range (which may have a non-zero origin). `inputs_and_params`
// must hold every tensor that no operation writes, each array spanning exactly its
// tensor's range. Output elements no operation writes are NaN.
//
// Errors (one sentence): a missing input ("tensor 'w' has no value: it is not
// given and no operation writes it"), an array of the wrong range, an operation
// the library rejects ("operation 'fc1': linear: w has 64 rows but x has 32
// features (inputs.w[0])"), a cycle, "cancelled". Every operation is checked
// before the first one runs, so an error costs no evaluation.
Expected<std::map<TensorId, RefArray>, std::string> evaluate_reference(
    const Graph &g, const std::map<TensorId, RefArray> &inputs_and_params, const OpLibrary &library,
    const EvaluationOptions &options = {});

}  // namespace tapestry
