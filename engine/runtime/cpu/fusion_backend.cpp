// The CPU's fusion capability (see fusion_backend.h).
#include "runtime/cpu/fusion_backend.h"

#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {
namespace {

class CpuFusionBackend final : public FusionBackend {
public:
    std::string name() const override { return "cpu"; }
    std::string refusal(const FusedPiece &piece) const override {
        const KernelFactory *factory = find_kernel("fused");
        if (!factory) return "no CPU kernel for fused operations";
        KernelSpec spec;
        spec.def = piece.def;
        spec.params = piece.params;
        spec.derivation = piece.derivation;
        spec.operands = piece.operands;
        spec.index_range = piece.index_range;
        spec.input_shapes = piece.input_shapes;
        spec.output_shapes = piece.output_shapes;
        spec.input_strides = piece.input_strides;
        spec.output_strides = piece.output_strides;
        auto kernel = make_kernel(*factory, spec);
        return kernel ? std::string() : "the CPU kernel cannot run the chain (" + kernel.error() + ")";
    }
};

}  // namespace

const FusionBackend &fusion_backend() {
    static const CpuFusionBackend backend;
    return backend;
}

}  // namespace tapestry::cpu
