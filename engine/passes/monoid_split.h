// The monoid split of a contraction (issue 5, DESIGN.md §3): a matmul or linear
// sharded on the dim it sums over becomes partial products over blocks of that dim
// (partial_matmul, the block an index dim) and a reduce_sum of the partials — the
// "reduction of partials" that becomes an all-reduce or reduce-scatter across devices.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/delta.h"
#include "graph/graph.h"
#include "graph/signature.h"
#include "passes/shard.h"

namespace tapestry {

// A contraction an op's index space leaves out (a window of its input projections):
// the `k` of matmul, the `in` of linear, each reduced axis of reduce_sum/mean/max. A
// shard spec names them by the dim numbers past the op's index dims, in order
// (`dim` = index rank + j): `fc1:2=4` for a linear over [batch, out], `r:3=2` for the
// first reduced axis of a reduce over a rank-3 index space.
struct Contraction {
    int dim = 0;
    std::string name;  // "k" (matmul), "in" (linear), "axis 1" (reduce_*)
    Coord extent = 0;
    int axis = -1;     // reduce_*: the axis of x it reduces
};

// The contractions of `op` when its kind has a monoid split (matmul, linear,
// reduce_sum, reduce_mean, reduce_max), in dim order; empty for other kinds.
std::vector<Contraction> contractions_of(const Graph &g, const Operation &op, const SignatureSource &lib);

// A reduction dim splits into blocks of equal size B = ceil(extent / parts), the last
// one clipped (10 into 4 → 3, 3, 3, 1). Explicit sizes must have that form. Errors
// (prefixed by the caller) say why: more parts than points, a block left empty
// (10 into 6: blocks of 2 cover it in 5), sizes of another form.
Expected<std::vector<Coord>, std::string> reduction_blocks(Coord extent, int parts, const std::string &where);
Expected<std::vector<Coord>, std::string> reduction_blocks(Coord extent, const std::vector<Coord> &sizes,
                                                           const std::string &where);

// Rewrites operation `spec.op` (`spec.dim` one of its contractions) into partial
// reductions over blocks of the contraction and a second reduction of the partials.
// A matmul or linear becomes
//   <op>.partial  partial_matmul (parts = the block count) writing <op>.partials
//                 [parts, *y] (intermediate), sharded on its block dim p: shards <op>/p,
//                 or, for an op already sharded, <shard>.p for each of its shards
//                 (product split; devices and stated selections carried over);
//   <op>.reduce   reduce_sum over axis 0 (keepdims false) writing the op's output
//                 selection — or, for a linear with bias, <op>.reduced — carrying the
//                 op's own shards (ids <op>.reduce/…);
//   <op>.bias     (linear with bias) add(<op>.reduced, bias) writing the output,
//                 sharded like the reduce.
// A reduce_sum/max/mean over axes A becomes one op of its kind per block,
// <op>.partial.p, reducing the axes A of block p (keepdims) into <op>.partials[…, p, …]
// (x's shape with the reduced axes 1, the split one `parts`), carrying the op's shards
// as <shard>.p; and <op>.reduce, the same kind over A with the op's keepdims, writing
// its output. reduce_mean splits only into equal blocks (a mean of means).
// Consumers of the output are untouched. Ids that are taken get a numeric suffix.
// Every change goes through `rw`. Returns the phrase for the stage summary, or an
// error prefixed "shard spec '<text>': ".
Expected<std::string, std::string> split_contraction(RecordingRewriter &rw, const ShardSpec &spec,
                                                     const SignatureSource &lib);

// The collective a reduction of partials becomes once its partials sit on devices:
// "all_reduce" (an unsharded reduce whose partials sit on more than one device),
// "reduce_scatter" (a sharded reduce, some shard of which combines partials from more
// than one device), "none" (every reduce shard's partials sit on one device), or ""
// when `op` is not a reduce_* reading partials (a partial_matmul's output, or the
// outputs of several reduces of its kind). Unplaced shards are taken to sit on devices
// of their own (shard k on virtual device k; an unsharded producer is one shard), as
// the data movement pass assumes.
std::string collective_of(const Graph &g, const Operation &op);

}  // namespace tapestry
