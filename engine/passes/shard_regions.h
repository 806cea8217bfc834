// Which shard writes, and which shard reads, each region of a tensor — the data
// behind the studio's tensor shard map (issue 5, DESIGN.md §3, §9): boxes in
// tensor coordinates derived from the shards' index ranges, exact element counts,
// and the regions read by more than one shard (convolution halos, replicated reads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/signature.h"

namespace tapestry {

// One box of the tensor a shard (or an unsharded operation as a whole) writes or
// reads through one operand of one port. An operation reading the tensor through
// two ports gives its shard two regions.
struct ShardRegion {
    OpId op;
    ShardId shard;     // empty when the operation is not sharded: the whole op
    std::string port;  // the op's port, e.g. "y", "x"
    ZRange box;        // tensor coordinates; never empty
    // "fc1/2", or the op id when not sharded.
    std::string label() const { return shard.empty() ? op.value : shard.value; }
};

// Points of the tensor that two regions of different shards both touch.
struct RegionOverlap {
    size_t first = 0, second = 0;  // indices into TensorShardMap::regions, first < second
    ZRange box;                    // their intersection
};

struct TensorShardMap {
    TensorId tensor;
    ZRange extent;                     // the tensor's range
    std::vector<ShardRegion> regions;  // in op order, then shard order, then port order
    std::vector<RegionOverlap> overlaps;
    // Exact counts (ISL): elements touched by at least one region, and by regions of
    // two or more different shards (the halo / replicated elements).
    std::int64_t covered = 0;
    std::int64_t shared = 0;
    // Disjoint boxes whose union is the set counted by `shared`.
    std::vector<ZRange> shared_boxes;
    // Whether any region comes from a sharded operation.
    bool sharded() const;
    // The distinct labels of the regions, in order ("fc1/0", "fc1/1", …).
    std::vector<std::string> labels() const;
};

// The regions the producers of `tensor` write: each shard's output selections of
// it (the whole operation's selection when it has no shards). An input or a
// parameter has no regions. Errors (as values) name the tensor or the operation
// that does not resolve. `library` null: OpLibrary::standard().
Expected<TensorShardMap, std::string> tensor_writers(const Graph &g, const TensorId &tensor,
                                                     const SignatureSource *library = nullptr);

// The regions that operation `consumer` reads of `tensor`, per shard. Refuses an
// operation that does not read the tensor.
Expected<TensorShardMap, std::string> tensor_readers(const Graph &g, const TensorId &tensor, const OpId &consumer,
                                                     const SignatureSource *library = nullptr);

// "3×(8×16×2×32) = 12288" style description of overlaps: the overlap boxes
// grouped by shape ("2×(1×64×32) + 1×(1×64×16)"), without the total.
std::string overlap_shapes_text(const std::vector<RegionOverlap> &overlaps);

}  // namespace tapestry
