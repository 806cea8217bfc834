// The element math of the CUDA kernels (issue 18): every elementwise kind as an
// f32 function, and the bf16/f16 storage conversions, in one header compiled three
// ways - by nvcc (our .cu kernels), by NVRTC at plan time (its text is prepended to
// the fused-chain kernels: element_math_source(), runtime/cuda/nvrtc.h) and by the
// host compiler (tests/engine/test_cuda_element_math.cpp checks it on the host
// against the op library's double-precision reference).
//
// namespace tapestry::cuda::element, every function TAPESTRY_HD inline:
//   unary, named like the op kind (parameters and defaults as `tapestry ops KIND`):
//     relu(x)                  x > 0 ? x : 0; NaN gives 0 (as the CPU kernels, oneDNN)
//     gelu(x, tanh_form)       false: 0.5 x (1 + erf(x/sqrt2)); true: the tanh form
//     sigmoid, tanh, exp, log, neg, abs, erf, sqrt, reciprocal, softplus, softsign,
//     hard_swish (x)
//     leaky_relu(x, alpha = 0.01)        x >= 0 ? x : alpha x
//     elu(x, alpha = 1)                  x > 0 ? x : alpha (e^x - 1)
//     selu(x, alpha = 1.67326..., gamma = 1.05070...)  gamma elu(x, alpha)
//     hard_sigmoid(x, alpha = 0.2, beta = 0.5)         max(0, min(1, alpha x + beta)); NaN stays NaN
//     clip(x, lo = -FLT_MAX, hi = FLT_MAX)  a bound at or beyond +-FLT_MAX is none; NaN stays NaN
//     pow(x, exponent)
//   binary: add, sub, mul, div, max, min (max and min give NaN when either is NaN)
//   storage: bf16_to_float, float_to_bf16, f16_to_float, float_to_f16 - bit for bit
//     those of runtime/cpu/float_formats.h (round to nearest even, NaN stays NaN,
//     f16 overflow to +-inf, f16 subnormals exact)
//
// Accuracy: the functions use the CUDA math library's IEEE-accurate calls (no
// -use_fast_math: expf and exp2f 2 ulp, erfcf 4, powf 4, ... ) and forms without
// cancellation (gelu as x erfc(-x/sqrt2)/2 and x sigmoid(2u)), so results are
// within a few ulp of the oracle times the function's own condition number.
//
// Under __CUDACC_RTC__ (NVRTC) this file includes nothing: NVRTC declares the math
// functions itself, and the text is compiled as part of a generated source, so it
// uses include guards rather than #pragma once and plain unsigned types.
#ifndef TAPESTRY_RUNTIME_CUDA_ELEMENT_MATH_H
#define TAPESTRY_RUNTIME_CUDA_ELEMENT_MATH_H

#if !defined(__CUDACC_RTC__)
#include <math.h>
#endif

#ifndef TAPESTRY_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TAPESTRY_HD __host__ __device__
#else
#define TAPESTRY_HD
#endif
#endif

namespace tapestry::cuda::element {

// ---- bits -----------------------------------------------------------------------

TAPESTRY_HD inline unsigned int float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    unsigned int u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
#endif
}

TAPESTRY_HD inline float bits_float(unsigned int u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
#endif
}

TAPESTRY_HD inline bool is_nan(float x) {
    return x != x;
}
// The quiet NaN the CPU kernels produce (std::numeric_limits<float>::quiet_NaN()).
TAPESTRY_HD inline float quiet_nan() {
    return bits_float(0x7fc00000u);
}

constexpr float kFloatMax = 3.40282346638528859811704183484516925e+38f;

// std::max / std::min exactly (the first argument wins ties and NaN comparisons),
// so that clamps agree with the CPU kernels bit for bit, signed zeros included.
TAPESTRY_HD inline float std_max(float a, float b) {
    return a < b ? b : a;
}
TAPESTRY_HD inline float std_min(float a, float b) {
    return b < a ? b : a;
}

// ---- 16-bit storage ---------------------------------------------------------------

TAPESTRY_HD inline float bf16_to_float(unsigned short h) {
    return bits_float(static_cast<unsigned int>(h) << 16);
}

TAPESTRY_HD inline unsigned short float_to_bf16(float f) {
    unsigned int x = float_bits(f);
    if (is_nan(f)) return static_cast<unsigned short>((x >> 16) | 0x40u);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // The hardware conversion rounds to nearest even too (subnormals kept, overflow
    // to inf): the same bits as below in one instruction; NaN keeps its payload above.
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<unsigned short>(x >> 16);
#endif
}

TAPESTRY_HD inline float f16_to_float(unsigned short h) {
    const unsigned int sign = static_cast<unsigned int>(h & 0x8000u) << 16;
    const unsigned int e = (h >> 10) & 0x1fu;
    const unsigned int m = h & 0x3ffu;
    if (e == 0) {
        const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
        return sign ? -v : v;
    }
    if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

TAPESTRY_HD inline unsigned short float_to_f16(float f) {
    unsigned int x = float_bits(f);
    const unsigned int sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) return static_cast<unsigned short>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (x >= 0x477ff000u) return static_cast<unsigned short>(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (x < 0x38800000u) {  // below 2^-14: subnormal steps of 2^-24, exact scaling, nearest even
        const float steps = rintf(bits_float(x) * 16777216.0f);
        return static_cast<unsigned short>(sign | static_cast<unsigned int>(steps));
    }
    x += 0xfffu + ((x >> 13) & 1u);
    x -= (127u - 15u) << 23;
    return static_cast<unsigned short>(sign | (x >> 13));
}

// ---- unary --------------------------------------------------------------------------

TAPESTRY_HD inline float relu(float x) {
    return x > 0.0f ? x : 0.0f;
}

TAPESTRY_HD inline float gelu(float x, bool tanh_form = false) {
    if (tanh_form) {
        // 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): no
        // cancellation of 1 + tanh(u) for negative x. With z = -2u log2(e) and
        // t = 2^-|z| in (0, 1], sigmoid(2u) = 1 / (1 + t) for z <= 0 and t / (1 + t)
        // for z > 0: one exp2f (a single MUFU.EX2 on the GPU, where expf needs a
        // range reduction) and a reciprocal of a value in [1, 2] (never the slow
        // path of an IEEE division), so the bf16 kernels run at memory speed.
        const float z = x * (-2.3022082f + -0.10294324f * (x * x));  // -2 sqrt(2/pi) log2(e) (1 + 0.044715 x^2)
        const float t = exp2f(-fabsf(z));
        const float r = 1.0f / (1.0f + t);
        return x * (z > 0.0f ? t * r : r);
    }
    // 0.5 x (1 + erf(x/sqrt2)) = 0.5 x erfc(-x/sqrt2), exact for negative x too.
    return 0.5f * x * erfcf(x * -0.70710678118654752f);
}

TAPESTRY_HD inline float sigmoid(float x) {
    return 1.0f / (1.0f + expf(-x));
}
TAPESTRY_HD inline float tanh(float x) {
    return tanhf(x);
}
TAPESTRY_HD inline float exp(float x) {
    return expf(x);
}
TAPESTRY_HD inline float log(float x) {
    return logf(x);
}
TAPESTRY_HD inline float neg(float x) {
    return -x;
}
TAPESTRY_HD inline float abs(float x) {
    return fabsf(x);
}
TAPESTRY_HD inline float erf(float x) {
    return erff(x);
}
TAPESTRY_HD inline float sqrt(float x) {
    return sqrtf(x);
}
TAPESTRY_HD inline float reciprocal(float x) {
    return 1.0f / x;
}

TAPESTRY_HD inline float softplus(float x) {
    return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
TAPESTRY_HD inline float softsign(float x) {
    return x / (1.0f + fabsf(x));
}
TAPESTRY_HD inline float hard_swish(float x) {
    return x * std_max(0.0f, std_min(1.0f, x / 6.0f + 0.5f));
}

TAPESTRY_HD inline float leaky_relu(float x, float alpha = 0.01f) {
    return x >= 0.0f ? x : alpha * x;
}
TAPESTRY_HD inline float elu(float x, float alpha = 1.0f) {
    return x > 0.0f ? x : alpha * expm1f(x);
}
TAPESTRY_HD inline float selu(float x, float alpha = 1.6732632423543772f, float gamma = 1.0507009873554805f) {
    return x > 0.0f ? gamma * x : gamma * alpha * expm1f(x);
}
TAPESTRY_HD inline float hard_sigmoid(float x, float alpha = 0.2f, float beta = 0.5f) {
    return is_nan(x) ? x : std_max(0.0f, std_min(1.0f, alpha * x + beta));
}
TAPESTRY_HD inline float clip(float x, float lo = -kFloatMax, float hi = kFloatMax) {
    if (is_nan(x)) return x;
    if (lo > -kFloatMax) x = std_max(x, lo);
    if (hi < kFloatMax) x = std_min(x, hi);
    return x;
}
TAPESTRY_HD inline float pow(float x, float exponent) {
    return powf(x, exponent);
}

// ---- binary -------------------------------------------------------------------------

TAPESTRY_HD inline float add(float a, float b) {
    return a + b;
}
TAPESTRY_HD inline float sub(float a, float b) {
    return a - b;
}
TAPESTRY_HD inline float mul(float a, float b) {
    return a * b;
}
TAPESTRY_HD inline float div(float a, float b) {
    return a / b;
}
TAPESTRY_HD inline float max(float a, float b) {
    return is_nan(a) || is_nan(b) ? quiet_nan() : std_max(a, b);
}
TAPESTRY_HD inline float min(float a, float b) {
    return is_nan(a) || is_nan(b) ? quiet_nan() : std_min(a, b);
}

}  // namespace tapestry::cuda::element

#endif  // TAPESTRY_RUNTIME_CUDA_ELEMENT_MATH_H
