// What a plan's kernel step computes and where its operands lie (internal to
// engine/launch; both the cpu and the cuda backends make their kernels from it):
// the operation resolved against the op library (params with defaults, its
// projections), the step's index range (its shard's, or the whole space), and each
// operand — the op's selections of that range flattened in port order — as the
// box of the plan buffer the step reads or writes it in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/signature.h"
#include "ops/library.h"
#include "ops/port_order.h"
#include "plan/plan.h"

namespace tapestry::launch {

struct ResolvedPlanOp : OpResolution {
    const Operation *op = nullptr;
};

// Every operation of the plan's graph, by id; fails naming the operation.
Expected<std::map<OpId, ResolvedPlanOp>, std::string> resolve_plan_ops(const Graph &g, const OpLibrary &lib);

struct StepOperand {
    TensorId tensor;
    ZRange range;           // the selection (tensor coordinates)
    int buffer = -1;        // the plan buffer holding it; -1: an empty selection, touching nothing
    DType dtype = DType::f32;
};

struct StepOperands {
    const ResolvedPlanOp *op = nullptr;
    ZRange index;                      // the points the step computes
    std::vector<StepOperand> inputs;   // port order, absent optional ports omitted
    std::vector<StepOperand> outputs;
};

// The operands of kernel step `s` on its own device's buffers. Fails naming what
// the step lacks (an unknown op or shard, no region for a selection, a buffer of
// another device).
Expected<StepOperands, std::string> bind_kernel_step(const plan::Plan &plan, const plan::Step &s,
                                                     const std::map<OpId, ResolvedPlanOp> &ops);

}  // namespace tapestry::launch
