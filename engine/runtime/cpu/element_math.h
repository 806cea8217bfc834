// The elementwise kinds as scalar functions in double precision: the fused
// chain loop and the epilogues of our own kernels (Winograd convolution) compute
// an element with these, so both agree with each other and follow the op
// library's definitions (constants from unary_constants in dnnl_util.h).
#pragma once

#include <optional>
#include <string>

#include "graph/params.h"

namespace tapestry::cpu {

enum class Fn {
    relu, sigmoid, tanh_, exp_, erf_, sqrt_, pow_, gelu_erf, gelu_tanh, neg, abs_, log_, reciprocal, leaky_relu, elu,
    selu, softplus, softsign, hard_sigmoid, hard_swish, clip, add, sub, mul, div, max_, min_
};

// The function of an elementwise kind (`params` with defaults filled); none for
// other kinds and for a gelu approximation the library does not define.
std::optional<Fn> fn_of(const std::string &kind, const Params &params);
// A unary function of x with its two constants (unary_constants(kind, params)).
double apply1(Fn f, double x, double a, double b);
// A binary function (add, sub, mul, div; max and min propagate NaN).
double apply2(Fn f, double a, double b);
bool binary(Fn f);

}  // namespace tapestry::cpu
