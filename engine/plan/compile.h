// Compiling a placed stage into a plan (docs/plans.md): kernels per piece,
// moves lowered to copies, point-to-point transfers and collectives, buffers per
// device with arena offsets by lifetime, dependencies from the regions steps
// touch, and each step's predicted time.
#pragma once

#include <string>

#include "common/expected.h"
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
Expected<Plan, std::string> compile_plan(const Graph &g, const cost::Model &model, const PlanSource &source = {},
                                         const SignatureSource *signatures = nullptr);
// The same, the plan taking the graph over instead of a copy of it.
Expected<Plan, std::string> compile_plan(Graph &&g, const cost::Model &model, const PlanSource &source = {},
                                         const SignatureSource *signatures = nullptr);
// The same for a stage (the plan remembers its pass, options and certificate).
Expected<Plan, std::string> compile_plan(const Stage &stage, const cost::Model &model, PlanSource source = {},
                                         const SignatureSource *signatures = nullptr);

// Each step's predicted seconds under `model` (kernels by roofline, copies at
// memory bandwidth, transfers and collectives by α–β): what compile_plan stores
// in Step::predicted.
void predict_steps(Plan &plan, const cost::Model &model);

}  // namespace tapestry::plan
