// What a backend can run as one fused kernel: the op-level capability the fusion
// pass (passes/fuse.h) asks before it fuses a chain. A fused node must map to a
// real fused kernel on each backend it may run on (DESIGN.md §5), so each runtime
// answers for its own kernels (runtime/cpu/fusion_backend.h); the passes are
// given the backends and never reach into a runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/signature.h"
#include "ops/op_def.h"

namespace tapestry {

// One piece of a `fused` operation (a shard, or the whole op) as a backend would
// run it: the op's definition, params (defaults filled), relative derivation and
// operand types, the piece's index range, and the views of its selections —
// shapes and element strides inside row-major tensor buffers, inputs in port
// order then outputs.
struct FusedPiece {
    const OpDef *def = nullptr;
    Params params;
    Derivation derivation;
    std::vector<PortTypes> operands;
    ZRange index_range;
    std::vector<ZPoint> input_shapes, output_shapes;
    std::vector<std::vector<std::int64_t>> input_strides, output_strides;
};

class FusionBackend {
public:
    virtual ~FusionBackend() = default;
    virtual std::string name() const = 0;  // "cpu"
    // Why this backend cannot run `piece`, or "" when it can.
    virtual std::string refusal(const FusedPiece &piece) const = 0;
};

}  // namespace tapestry
