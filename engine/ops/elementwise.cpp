// Elementwise operations: binary arithmetic with NumPy broadcasting (add, sub,
// mul, div, max, min), unary activations and functions (relu, gelu, sigmoid, tanh, exp,
// erf, sqrt, pow, neg, abs, log, reciprocal, leaky_relu, elu, selu, softplus,
// softsign, hard_sigmoid, hard_swish, clip) and the dtype conversion cast.
//
// FLOP convention (shared by every op family of this library): each arithmetic
// operation, comparison and elementary function evaluation (exp, erf, tanh,
// sqrt, pow) counts 1; a multiply-add counts 2.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>

#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

using namespace op_util;

constexpr double kFloatMax = 3.4028234663852886e38;  // the largest finite float

// ---- binary ---------------------------------------------------------------------

class BinaryOp : public OpDef {
public:
    BinaryOp(std::string kind, std::string summary, std::function<double(double, double)> f)
        : kind_(std::move(kind)), summary_(std::move(summary)), f_(std::move(f)) {}

    std::string_view kind() const override { return kind_; }
    std::string_view category() const override { return "elementwise"; }
    std::string_view summary() const override { return summary_; }
    std::vector<PortSpec> input_ports() const override {
        return {{"a", "left operand", false, false}, {"b", "right operand (broadcast with a, NumPy rules)", false, false}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "the broadcast result", false, false}}; }
    std::vector<ParamSpec> params() const override { return {}; }

    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &inputs) const override {
        const OperandType &a = *find_operand(inputs, "a");
        const OperandType &b = *find_operand(inputs, "b");
        if (auto e = require_float(kind_, "a", a)) return unexpected(*e);
        if (auto e = require_same_dtype(kind_, "b", b, "a", a.dtype)) return unexpected(*e);
        std::optional<ZPoint> y = broadcast_shapes(a.shape, b.shape);
        if (!y)
            return unexpected(derivation_error("shape-mismatch", input_field("b"),
                                               kind_ + ": b " + shape_string(b.shape) + " does not broadcast with a " +
                                                   shape_string(a.shape)));
        return single_output(a.dtype, *y, ZRange::of_shape(*y),
                             {port_projection("a", broadcast_projection(a.shape, *y)),
                              port_projection("b", broadcast_projection(b.shape, *y))});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 1; }

    void reference(const RefContext &ctx) const override {
        const IndexProjection &pa = input_projection(ctx.derivation, "a");
        const IndexProjection &pb = input_projection(ctx.derivation, "b");
        const IndexProjection &py = output_projection(ctx.derivation);
        if (ctx.fast()) return map_elements<2>(ctx, {&pa, &pb}, py, f_);
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            const double a = ctx.read(0, pa.map().apply(i));
            const double b = ctx.read(1, pb.map().apply(i));
            ctx.write(0, py.map().apply(i), f_(a, b));
        });
    }

private:
    std::string kind_, summary_;
    std::function<double(double, double)> f_;
};

// ---- unary ----------------------------------------------------------------------

class UnaryOp : public OpDef {
public:
    // The function of x an op computes for given parameters: they are read once per
    // kernel call, not once per element.
    using Function = std::function<double(double)>;
    using Binder = std::function<Function(const Params &)>;
    UnaryOp(std::string kind, std::string summary, std::vector<ParamSpec> params, Binder f,
            std::function<double(const Params &)> flops)
        : kind_(std::move(kind)),
          summary_(std::move(summary)),
          params_(std::move(params)),
          f_(std::move(f)),
          flops_(std::move(flops)) {}

    std::string_view kind() const override { return kind_; }
    std::string_view category() const override { return "elementwise"; }
    std::string_view summary() const override { return summary_; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "the input", false, false}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "shaped like x", false, false}}; }
    std::vector<ParamSpec> params() const override { return params_; }

    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        if (auto e = require_float(kind_, "x", x)) return unexpected(*e);
        return single_output(x.dtype, x.shape, ZRange::of_shape(x.shape),
                             {port_projection("x", IndexProjection::identity(x.shape.rank()))});
    }

    double flops_per_point(const Params &params, const Derivation &) const override { return flops_(params); }

    void reference(const RefContext &ctx) const override {
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &py = output_projection(ctx.derivation);
        const Function f = f_(ctx.params);
        if (ctx.fast()) return map_elements<1>(ctx, {&px}, py, f);
        ctx.index_range.for_each_point(
            [&](const ZPoint &i) { ctx.write(0, py.map().apply(i), f(ctx.read(0, px.map().apply(i)))); });
    }

private:
    std::string kind_, summary_;
    std::vector<ParamSpec> params_;
    Binder f_;
    std::function<double(const Params &)> flops_;
};

std::function<double(const Params &)> constant(double flops) {
    return [flops](const Params &) { return flops; };
}

UnaryOp::Function gelu(const Params &p) {
    if (p.get_string("approximate", "none") == "tanh")
        return [](double x) {
            const double c = std::sqrt(2.0 / std::numbers::pi);
            return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
        };
    return [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); };
}

// A function without parameters.
UnaryOp::Binder plain(double (*f)(double)) {
    return [f](const Params &) { return UnaryOp::Function(f); };
}

// ---- cast -------------------------------------------------------------------------

// Rounds v to the nearest value of a binary floating format with `mantissa_bits`
// explicit fraction bits, minimum normal exponent `min_exponent` and largest
// finite value `max_finite` (ties to even; overflow to ±∞), as IEEE conversion does.
double round_to_format(double v, int mantissa_bits, int min_exponent, double max_finite) {
    if (!std::isfinite(v) || v == 0.0) return v;
    int e = 0;
    std::frexp(v, &e);  // |v| = m·2^e, m in [0.5, 1)
    const int exponent = std::max(e - 1, min_exponent);
    const double quantum = std::ldexp(1.0, exponent - mantissa_bits);
    const double r = std::nearbyint(v / quantum) * quantum;  // the default rounding mode is to nearest-even
    if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
    return r;
}

// The value `v` becomes when stored as `t`: floats round to their precision,
// integers truncate toward zero (as C and NumPy do; NaN and out-of-range values
// have no integer and stay NaN so that they stand out), bool is v ≠ 0.
double convert_to(double v, DType t) {
    switch (t) {
        case DType::f32: return static_cast<double>(static_cast<float>(v));
        case DType::f16: return round_to_format(v, 10, -14, 65504.0);
        case DType::bf16: return round_to_format(v, 7, -126, 3.3895313892515355e38);
        case DType::i32:
        case DType::i64: {
            if (std::isnan(v)) return v;
            const double r = std::trunc(v);
            const double limit = t == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
            return r >= -limit && r < limit ? r : std::numeric_limits<double>::quiet_NaN();
        }
        case DType::boolean: return v != 0.0 ? 1.0 : 0.0;
    }
    return v;
}

std::vector<std::string> dtype_names() {
    std::vector<std::string> out;
    for (DType t : kAllDTypes) out.emplace_back(dtype_name(t));
    return out;
}

class CastOp : public OpDef {
public:
    std::string_view kind() const override { return "cast"; }
    std::string_view category() const override { return "elementwise"; }
    std::string_view summary() const override { return "y = x converted to dtype `to` (any dtype in and out)"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "the input (any dtype)", false, false}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "shaped like x, dtype `to`", false, false}}; }
    std::vector<ParamSpec> params() const override {
        ParamSpec to = required_param("to", ParamKind::string,
                                      "the output dtype: floats round to nearest-even, integers truncate toward zero, "
                                      "bool is x ≠ 0");
        to.choices = dtype_names();
        return {to};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        const std::optional<DType> to = parse_dtype(params.get_string("to", ""));
        if (!to)
            return unexpected(derivation_error("bad-param", param_field("to"),
                                               "cast: to must name a dtype, got \"" + params.get_string("to", "") + "\""));
        return single_output(*to, x.shape, ZRange::of_shape(x.shape),
                             {port_projection("x", IndexProjection::identity(x.shape.rank()))});
    }

    // A conversion is one instruction.
    double flops_per_point(const Params &, const Derivation &) const override { return 1; }

    void reference(const RefContext &ctx) const override {
        const DType to = *parse_dtype(ctx.params.get_string("to", "f32"));
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &py = output_projection(ctx.derivation);
        if (ctx.fast()) return map_elements<1>(ctx, {&px}, py, [&](double x) { return convert_to(x, to); });
        ctx.index_range.for_each_point(
            [&](const ZPoint &i) { ctx.write(0, py.map().apply(i), convert_to(ctx.read(0, px.map().apply(i)), to)); });
    }
};

}  // namespace

void register_elementwise_ops(OpLibrary &lib) {
    lib.add(std::make_unique<BinaryOp>("add", "y = a + b, broadcasting", [](double a, double b) { return a + b; }));
    lib.add(std::make_unique<BinaryOp>("sub", "y = a − b, broadcasting", [](double a, double b) { return a - b; }));
    lib.add(std::make_unique<BinaryOp>("mul", "y = a · b, broadcasting", [](double a, double b) { return a * b; }));
    lib.add(std::make_unique<BinaryOp>("div", "y = a / b, broadcasting", [](double a, double b) { return a / b; }));
    // max/min propagate NaN, as ONNX Max/Min and NumPy maximum/minimum do.
    lib.add(std::make_unique<BinaryOp>("max", "y = max(a, b), broadcasting; NaN if either is", [](double a, double b) {
        return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
    }));
    lib.add(std::make_unique<BinaryOp>("min", "y = min(a, b), broadcasting; NaN if either is", [](double a, double b) {
        return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
    }));

    // relu: one comparison.
    lib.add(std::make_unique<UnaryOp>("relu", "y = max(x, 0); NaN gives 0 (as oneDNN's relu, also as a post-op)",
                                      std::vector<ParamSpec>{}, plain([](double x) { return x > 0 ? x : 0.0; }),
                                      constant(1)));
    // gelu "none": x/√2, erf, +1, ·x, ·0.5 = 5; "tanh": x³ (2), ·0.044715, +x,
    // ·√(2/π), tanh, +1, ·x, ·0.5 = 9.
    lib.add(std::make_unique<UnaryOp>(
        "gelu", "Gaussian error linear unit (erf form, or its tanh approximation)",
        std::vector<ParamSpec>{choice_param("approximate", "none", {"none", "tanh"},
                                            "\"none\": exact 0.5·x·(1 + erf(x/√2)); \"tanh\": the tanh approximation")},
        gelu, [](const Params &p) { return p.get_string("approximate", "none") == "tanh" ? 9.0 : 5.0; }));
    // sigmoid: negate, exp, +1, reciprocal = 4.
    lib.add(std::make_unique<UnaryOp>("sigmoid", "y = 1 / (1 + exp(−x))", std::vector<ParamSpec>{},
                                      plain([](double x) { return 1.0 / (1.0 + std::exp(-x)); }), constant(4)));
    lib.add(std::make_unique<UnaryOp>("tanh", "y = tanh(x)", std::vector<ParamSpec>{},
                                      plain([](double x) { return std::tanh(x); }), constant(1)));
    lib.add(std::make_unique<UnaryOp>("exp", "y = exp(x)", std::vector<ParamSpec>{},
                                      plain([](double x) { return std::exp(x); }), constant(1)));
    lib.add(std::make_unique<UnaryOp>("erf", "y = erf(x), the Gauss error function", std::vector<ParamSpec>{},
                                      plain([](double x) { return std::erf(x); }), constant(1)));
    lib.add(std::make_unique<UnaryOp>("sqrt", "y = √x", std::vector<ParamSpec>{},
                                      plain([](double x) { return std::sqrt(x); }), constant(1)));
    lib.add(std::make_unique<UnaryOp>(
        "pow", "y = x^exponent for a constant exponent",
        std::vector<ParamSpec>{required_param("exponent", ParamKind::number, "the constant exponent (float)")},
        [](const Params &p) -> UnaryOp::Function {
            const double e = p.get_float("exponent", 1.0);
            return [e](double x) { return std::pow(x, e); };
        },
        constant(1)));
    lib.add(std::make_unique<UnaryOp>("neg", "y = −x", std::vector<ParamSpec>{}, plain([](double x) { return -x; }),
                                      constant(1)));
    lib.add(std::make_unique<UnaryOp>("abs", "y = |x|", std::vector<ParamSpec>{},
                                      plain([](double x) { return std::fabs(x); }), constant(1)));
    lib.add(std::make_unique<UnaryOp>("log", "y = ln x, the natural logarithm", std::vector<ParamSpec>{},
                                      plain([](double x) { return std::log(x); }), constant(1)));
    lib.add(std::make_unique<UnaryOp>("reciprocal", "y = 1 / x", std::vector<ParamSpec>{},
                                      plain([](double x) { return 1.0 / x; }), constant(1)));
    // leaky_relu: a comparison and a multiply.
    lib.add(std::make_unique<UnaryOp>(
        "leaky_relu", "y = x for x ≥ 0, alpha·x below",
        std::vector<ParamSpec>{float_param("alpha", 0.01, "the slope below 0")},
        [](const Params &p) -> UnaryOp::Function {
            const double alpha = p.get_float("alpha", 0.01);
            return [alpha](double x) { return x >= 0 ? x : alpha * x; };
        },
        constant(2)));
    // elu: a comparison, exp, −1, ·alpha.
    lib.add(std::make_unique<UnaryOp>(
        "elu", "y = x for x > 0, alpha·(exp(x) − 1) below",
        std::vector<ParamSpec>{float_param("alpha", 1.0, "the scale of the negative part")},
        [](const Params &p) -> UnaryOp::Function {
            const double alpha = p.get_float("alpha", 1.0);
            return [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x); };
        },
        constant(4)));
    // selu: elu and ·gamma.
    lib.add(std::make_unique<UnaryOp>(
        "selu", "y = gamma·x for x > 0, gamma·alpha·(exp(x) − 1) below (scaled ELU)",
        std::vector<ParamSpec>{float_param("alpha", 1.6732632423543772, "the scale of the negative part"),
                               float_param("gamma", 1.0507009873554805, "the overall scale")},
        [](const Params &p) -> UnaryOp::Function {
            const double g = p.get_float("gamma", 1.0507009873554805), alpha = p.get_float("alpha", 1.6732632423543772);
            return [g, alpha](double x) { return x > 0 ? g * x : g * alpha * std::expm1(x); };
        },
        constant(5)));
    // softplus: exp, +1, log.
    lib.add(std::make_unique<UnaryOp>(
        "softplus", "y = ln(1 + exp(x))", std::vector<ParamSpec>{},
        plain([](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }), constant(3)));
    // softsign: abs, +1, divide.
    lib.add(std::make_unique<UnaryOp>("softsign", "y = x / (1 + |x|)", std::vector<ParamSpec>{},
                                      plain([](double x) { return x / (1.0 + std::fabs(x)); }), constant(3)));
    // hard_sigmoid: a multiply-add and two comparisons.
    lib.add(std::make_unique<UnaryOp>(
        "hard_sigmoid", "y = max(0, min(1, alpha·x + beta))",
        std::vector<ParamSpec>{float_param("alpha", 0.2, "the slope"), float_param("beta", 0.5, "the offset")},
        [](const Params &p) -> UnaryOp::Function {
            const double alpha = p.get_float("alpha", 0.2), beta = p.get_float("beta", 0.5);
            return
                [alpha, beta](double x) { return std::isnan(x) ? x : std::max(0.0, std::min(1.0, alpha * x + beta)); };
        },
        constant(4)));
    // hard_swish: hard_sigmoid (alpha 1/6, beta 1/2) and ·x.
    lib.add(std::make_unique<UnaryOp>("hard_swish", "y = x · max(0, min(1, x/6 + 1/2))", std::vector<ParamSpec>{},
                                      plain([](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); }),
                                      constant(5)));
    // clip: two comparisons. A bound at ±FLT_MAX (the defaults) or beyond is none.
    lib.add(std::make_unique<UnaryOp>(
        "clip", "y = min(max(x, min), max)",
        std::vector<ParamSpec>{float_param("min", -kFloatMax, "the lower bound (the default, −FLT_MAX or below: none)"),
                               float_param("max", kFloatMax, "the upper bound (the default, FLT_MAX or above: none)")},
        [](const Params &p) -> UnaryOp::Function {
            const double lo = p.get_float("min", -kFloatMax), hi = p.get_float("max", kFloatMax);
            return [lo, hi](double x) {
                if (std::isnan(x)) return x;
                if (lo > -kFloatMax) x = std::max(x, lo);
                if (hi < kFloatMax) x = std::min(x, hi);
                return x;
            };
        },
        constant(2)));
    lib.add(std::make_unique<CastOp>());
}

}  // namespace tapestry
