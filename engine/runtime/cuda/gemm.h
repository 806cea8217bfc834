// One cuBLASLt matrix product on strided row-major device operands (issue 18):
// y[b, m, n] = epilogue(Σ_k a[b, m, k]·w[b, k, n] + bias[n]), planned once (the
// heuristic's algorithm cached per shape, layout, dtype and epilogue) and enqueued
// per run. Used by gemm.cpp's matmul/linear/partial_matmul kernels and fused.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/dtype.h"
#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

// What follows the product (and the bias add, when there is one), in f32 before
// the output is rounded to its dtype. gelu_tanh is cuBLASLt's GELU, the tanh
// approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))): cuBLASLt has no erf form,
// so an erf-GELU must not be mapped here — apply it with an elementwise kernel.
enum class GemmEpilogue { none, relu, gelu_tanh };

std::string_view gemm_epilogue_name(GemmEpilogue e);  // "none", "relu", "gelu_tanh"

// One operand of the product: element strides of its two matrix dims and of the
// batch. For a and w one of row_stride/col_stride must be 1 (row-major, or
// transposed in memory); y needs col_stride 1. A dim of extent 1 may have any
// stride. batch_stride 0 broadcasts a or w over the batch (not y).
struct GemmOperand {
    DType dtype = DType::f32;
    std::int64_t row_stride = 0, col_stride = 1, batch_stride = 0;
};

struct GemmDesc {
    std::int64_t batch = 1, m = 0, n = 0, k = 0;
    GemmOperand a, w, y;  // a [m, k], w [k, n], y [m, n]
    // bias[n], contiguous, the same for every batch; added before the epilogue.
    // Its dtype is y's (cuBLASLt's rule for non-FP8 products).
    bool bias = false;
    GemmEpilogue epilogue = GemmEpilogue::none;
    // y = a·w (+ bias) + y before the epilogue, instead of overwriting y (beta = 1).
    bool accumulate = false;
    // y = a·w (+ bias) + c before the epilogue, c an [m, n] operand read in place
    // (cuBLASLt's C with beta = 1, D = y): a residual add in the same pass as the
    // product. c.dtype must be y's; its columns contiguous; not with accumulate.
    bool addend = false;
    GemmOperand c;
    // f32 operands may use TF32 tensor cores (opt-in).
    bool tf32 = false;
};

// Supported dtypes (a.dtype == w.dtype, f32 accumulation and scaling):
//   f32 → f32 (exact f32, or TF32 when tf32), bf16 → bf16 or f32, f16 → f16 or f32.
// Anything else (i32, mixed a/w, f32 → bf16, ...) is refused by make, named.
struct GemmCache;
std::shared_ptr<GemmCache> make_gemm_cache();

class GemmPlan {
public:
    // Validates the descriptor, maps it to cuBLASLt's column-major form (row-major
    // y = a·w is column-major yᵀ = wᵀ·aᵀ) and picks algorithms with the heuristic
    // (cublasLtMatmulAlgoGetHeuristic; cached in context.gemm_cache()): one for
    // 16-byte aligned pointers and one for any element-aligned pointers, chosen
    // per enqueue. Needs only the handle (no device memory, no launch).
    // Errors name the unsupported dtype, layout or the heuristic's refusal.
    static Expected<GemmPlan, std::string> make(const GemmDesc &desc, Context &context);

    // Enqueues the product on `stream`. bias is null unless desc.bias, c null unless
    // desc.addend (element (0, 0) of its batch 0); workspace
    // holds workspace_bytes() bytes (null when 0). Pointers are the operands'
    // element (0, 0) of batch 0. An empty product (m or n or batch 0) enqueues
    // nothing; k == 0 (no bias, no accumulate: make refuses the others) zeroes y.
    Status enqueue(const void *a, const void *w, const void *bias, void *y, void *workspace, cudaStream_t stream,
                   const void *c = nullptr) const;

    // Device scratch the chosen algorithms need (at most 32 MiB on sm_90, the
    // figure cuBLAS documents for Hopper; 4 MiB elsewhere).
    std::size_t workspace_bytes() const;
    // "cuBLASLt bf16→bf16 [2x128x512 k=64], epilogue GELU_BIAS (tanh), workspace 4 MiB"
    // (", adding c" with an addend).
    std::string note() const;
    const GemmDesc &desc() const;

private:
    struct State;
    explicit GemmPlan(std::shared_ptr<const State> state) : state_(std::move(state)) {}
    std::shared_ptr<const State> state_;
};

}  // namespace tapestry::cuda
