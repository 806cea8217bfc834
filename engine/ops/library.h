// The operation library: every OpDef by kind, parameter and port checking, and
// the SignatureSource the graph layer validates against.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/signature.h"
#include "ops/op_def.h"

namespace tapestry {

struct OpCost {
    double flops = 0;
    double bytes_read = 0;
    double bytes_written = 0;
};

class OpLibrary : public SignatureSource {
public:
    // The built-in library with every kind (built once, immutable, thread-safe).
    static const OpLibrary &standard();

    void add(std::unique_ptr<OpDef> def);
    const OpDef *find(const std::string &kind) const;
    std::vector<const OpDef *> all() const;  // sorted by kind

    bool knows(const std::string &kind) const override { return find(kind) != nullptr; }
    // Checks kind, parameter names, types, choices and required ones, port names and
    // arity, then asks the OpDef. Defaults are NOT filled into `params`.
    Expected<Derivation, DerivationError> derive(const std::string &kind, const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override;

    // `params` with every absent optional parameter set to its default.
    Params with_defaults(const OpDef &def, const Params &params) const;

    // Cost of computing `index_range` of an op: FLOPs from the op, bytes from the
    // sizes of the selections read and written (relative derivation).
    OpCost cost(const OpDef &def, const Params &params, const Derivation &d, const std::vector<PortTypes> &inputs,
                const ZRange &index_range) const;

private:
    std::map<std::string, std::unique_ptr<OpDef>, std::less<>> defs_;
};

// Registration functions, one per family file (ops/<family>.cpp).
void register_elementwise_ops(OpLibrary &lib);  // add sub mul div max min relu gelu sigmoid tanh exp
                                                 // erf sqrt pow neg abs log reciprocal leaky_relu elu selu
                                                 // softplus softsign hard_sigmoid hard_swish clip cast
void register_linear_algebra_ops(OpLibrary &lib);  // matmul linear partial_matmul
void register_reduction_ops(OpLibrary &lib);  // reduce_sum reduce_mean reduce_max softmax
void register_normalization_ops(OpLibrary &lib);  // layernorm rmsnorm batchnorm
void register_shape_ops(OpLibrary &lib);  // transpose reshape concat slice
void register_convolution_ops(OpLibrary &lib);  // conv2d max_pool2d avg_pool2d
void register_embedding_ops(OpLibrary &lib);  // embedding gather
void register_attention_ops(OpLibrary &lib);  // attention
void register_data_movement_ops(OpLibrary &lib);  // move
void register_fused_ops(OpLibrary &lib);  // fused (ops/fused.h)

}  // namespace tapestry
