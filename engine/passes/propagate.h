// Sharding propagation (issue 5, Tapestry's forward(Z)): extends the shardings of
// sharded operations to unsharded neighbours whose index dims map one-to-one onto
// the split dims of the tensor they share, so that each shard of the neighbour
// reads (or writes) exactly what one shard of the sharded op writes (or reads).
#pragma once

#include <vector>

#include "graph/delta.h"
#include "graph/signature.h"

namespace tapestry {

// Gives unsharded operations of rw.graph() the split boundaries of their sharded
// neighbours, transitively, until nothing changes. A neighbour shares a tensor with
// a sharded op (it consumes what the op writes, or produces what the op reads);
// each split index dim of the sharded op must reach the tensor through a row with a
// single unit coefficient and window 1, and that tensor dim must reach one index dim
// of the neighbour the same way (unclipped, and not a reduction dim of either).
// The neighbour's shards are the grid of the mapped cut points, named OP/K in
// row-major order. Only ops whose shards form a grid propagate. Ops that have
// shards are never changed. Visits ops breadth-first from the sharded ones in
// graph order (consumers before producers), so the result is deterministic.
// Returns the ids of the ops that got a sharding, in the order they got it.
std::vector<OpId> propagate_shardings(RecordingRewriter &rw, const SignatureSource &lib);

}  // namespace tapestry
