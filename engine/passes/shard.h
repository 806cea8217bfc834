// The sharding pass (issue 5): split operations along index dimensions that are not
// reductions, evenly (uneven remainders allowed) or by explicit sizes, product-
// splitting ops that are already sharded. Specs come from the CLI as "op:dim=4".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/signature.h"
#include "passes/certificate.h"
#include "passes/stage.h"

namespace tapestry {

class MovementMemo;  // passes/movement.h

// Split op `op` along index dim `dim` into `count` even parts (the remainder spread
// over the first ones: 10 into 4 → 3,3,2,2) or into parts of the given `sizes`.
struct ShardSpec {
    OpId op;
    int dim = 0;
    int count = 0;             // > 0 for an even split
    std::vector<Coord> sizes;  // non-empty for explicit sizes
    std::string text;          // the spec as written, for messages
};

// "fc1:0=4" or "fc1:0=3+5+2". Errors name the spec: "shard spec 'fc1:x=4': …".
Expected<ShardSpec, std::string> parse_shard_spec(const std::string &text);

struct ShardOptions {
    std::vector<ShardSpec> specs;              // applied in order; a later spec on the same op splits its shards again
    const SignatureSource *library = nullptr;  // null: OpLibrary::standard()
    // Extend the shardings to unsharded neighbours (passes/propagate.h), then insert
    // explicit `move` nodes where consumer shards read other shards' data
    // (passes/movement.h); the summary says how many ops got a sharding and what moves.
    bool propagate = true;
    bool movement = true;
    // Count what the moves carry for the summary (the search's evaluations leave it out).
    bool describe_movement = true;
    // Keeps the movement walk's decisions (passes/movement.h; null: none). The search's.
    MovementMemo *movement_memo = nullptr;
    // Certify the stage against the input graph when set.
    std::optional<CertifyOptions> certify;
};

// Parses each spec; the first bad one is the error.
Expected<ShardOptions, std::string> parse_shard_options(const std::vector<std::string> &specs);

// The sharding stage. Refuses (as a value, naming the spec) unknown ops, dims out of
// range, bad part counts, sizes that do not sum to the extent, and reduction dims.
// A dim past the index dims names a contraction (matmul's k, linear's in, a reduced
// axis) and splits it by the monoid rewrite (passes/monoid_split.h).
// Untouched nodes are the input's own pointers.
Expected<Stage, std::string> shard(const Graph &g, const ShardOptions &options);

}  // namespace tapestry
