// Compiling a placed stage into a plan (docs/plans.md): kernels per piece,
// moves lowered to copies, point-to-point transfers and collectives, buffers per
// device with arena offsets by lifetime, dependencies from the regions steps
// touch, and each step's predicted time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/expected.h"
#include "common/node_memo.h"
#include "cost/model.h"
#include "passes/stage.h"
#include "plan/plan.h"

namespace tapestry::plan {

// Builds the plan of `g` (a placed graph: every piece's Shard::device a device of
// the model's cluster; an unplaced graph runs shard k on device k, an unsharded op
// on device 0). Lowering:
//  * a move feeding the reduce_sum of partials (over axis 0) becomes, per group of
//    devices holding the partials of one output box, one all_reduce (the reduce
//    unsharded in the group) or one reduce_scatter (the reduce sharded over the
//    group's devices); the reduce runs no kernel of its own;
//  * other moves: per device that reads the moved tensor, the boxes it needs; a
//    set of devices that all need the same box, written there as equal contiguous
//    pieces one per device, becomes one all_gather; the rest are local copies
//    (same device, or a box a collective already left on the device) and
//    send_recv transfers (uneven, halo, re-partitioning);
//  * every other piece is one kernel step.
// Fails naming the op and shard placed on a device the cluster lacks, or an op
// that does not resolve. `signatures` (null: the standard library) derives the
// ops' signatures — the search passes a memo (graph/derivation_cache.h).
// `memo` (null: none) keeps what the compiler derives of each operation, for the
// search (PieceMemo below).
class PieceMemo;
Expected<Plan, std::string> compile_plan(const Graph &g, const cost::Model &model, const PlanSource &source = {},
                                         const SignatureSource *signatures = nullptr, PieceMemo *memo = nullptr);
// The same, the plan taking the graph over instead of a copy of it.
Expected<Plan, std::string> compile_plan(Graph &&g, const cost::Model &model, const PlanSource &source = {},
                                         const SignatureSource *signatures = nullptr, PieceMemo *memo = nullptr);
// The same for a stage (the plan remembers its pass, options and certificate).
Expected<Plan, std::string> compile_plan(const Stage &stage, const cost::Model &model, PlanSource source = {},
                                         const SignatureSource *signatures = nullptr);

// What the compiler derives of each operation — its pieces (device, index box, the
// boxes each reads and writes) and each piece's kernel cost — kept by the
// operation's node for the search, whose candidates compile the same nodes again
// and again: by pointer (nodes are immutable, and the memo holds the ones it keeps,
// so no address is reused while an entry lives), for graphs in which a tensor id
// always names the same tensor (a search's). Kept for one cluster (another starts
// it over). Exact: a plan is the same with or without it. Past `pieces` pieces
// held it starts over. Not thread-safe: one per thread.
struct PieceTables;  // compile.cpp
class PieceMemo : public NodeMemo<PieceTables> {
public:
    explicit PieceMemo(std::size_t pieces = 1 << 18);
};

// Each step's predicted seconds under `model` (kernels by roofline, copies at
// memory bandwidth, transfers and collectives by α–β): what compile_plan stores
// in Step::predicted.
void predict_steps(Plan &plan, const cost::Model &model);

}  // namespace tapestry::plan
