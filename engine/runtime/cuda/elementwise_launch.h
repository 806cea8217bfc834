// The launch arguments of the elementwise CUDA kernels (issue 18): the factories in
// kernels_elementwise.cpp read a KernelSpec and fill these plain structs;
// kernels_elementwise.cu launches the device code with them. Every value is
// computed in f32 with runtime/cuda/element_math.h (casts from integers in double,
// as the CPU cast kernel); bf16/f16 are converted on load and store.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "graph/dtype.h"
#include "runtime/cuda/kernel.h"
#include "runtime/cuda/kernel_args.h"

namespace tapestry::cuda {

// The unary kinds (gelu split by its form); a and b of UnaryArgs are the
// parameters of the element function in its order (leaky_relu/elu: a = alpha;
// selu: alpha, gamma; hard_sigmoid: alpha, beta; clip: lo, hi; pow: exponent).
enum class UnaryFn : int {
    relu,
    gelu_erf,
    gelu_tanh,
    sigmoid,
    tanh,
    exp,
    log,
    neg,
    abs,
    erf,
    sqrt,
    reciprocal,
    softplus,
    softsign,
    hard_swish,
    leaky_relu,
    elu,
    selu,
    hard_sigmoid,
    clip,
    pow
};
enum class BinaryFn : int { add, sub, mul, div, max, min };

// y = fn(x) over the points of `loop` (set 0: x, set 1: y); x and y f32, bf16 or f16.
struct UnaryArgs {
    UnaryFn fn = UnaryFn::relu;
    DType x = DType::f32, y = DType::f32;
    float a = 0, b = 0;
    Loop<2> loop;
};
Status launch_unary(const UnaryArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream);

// y = fn(a, b) over `loop` (set 0: a, 1: b, 2: y; a broadcast operand has stride 0).
struct BinaryArgs {
    BinaryFn fn = BinaryFn::add;
    DType a = DType::f32, b = DType::f32, y = DType::f32;
    Loop<3> loop;
};
Status launch_binary(const BinaryArgs &args, const std::byte *a, const std::byte *b, std::byte *y, cudaStream_t stream);

// y = x converted from `from` to `to` (any dtypes) over `loop` (set 0: x, 1: y):
// floats round to nearest even, integers truncate toward zero and saturate (NaN
// gives 0), bool is x != 0 — the CPU cast kernel's values, bit for bit.
struct CastArgs {
    DType from = DType::f32, to = DType::f32;
    Loop<2> loop;
};
Status launch_cast(const CastArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream);

}  // namespace tapestry::cuda
