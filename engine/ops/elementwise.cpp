// Elementwise operations: binary arithmetic with NumPy broadcasting (add, sub,
// mul, div) and unary activations and functions (relu, gelu, sigmoid, tanh, exp,
// sqrt, pow).
//
// FLOP convention (shared by every op family of this library): each arithmetic
// operation, comparison and elementary function evaluation (exp, erf, tanh,
// sqrt, pow) counts 1; a multiply-add counts 2.
#include <cmath>
#include <functional>
#include <memory>
#include <numbers>

#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

using namespace op_util;

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
    using Function = std::function<double(double, const Params &)>;
    UnaryOp(std::string kind, std::string summary, std::vector<ParamSpec> params, Function f,
            std::function<double(const Params &)> flops)
        : kind_(std::move(kind)), summary_(std::move(summary)), params_(std::move(params)), f_(std::move(f)),
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
        ctx.index_range.for_each_point(
            [&](const ZPoint &i) { ctx.write(0, py.map().apply(i), f_(ctx.read(0, px.map().apply(i)), ctx.params)); });
    }

private:
    std::string kind_, summary_;
    std::vector<ParamSpec> params_;
    Function f_;
    std::function<double(const Params &)> flops_;
};

std::function<double(const Params &)> constant(double flops) {
    return [flops](const Params &) { return flops; };
}

double gelu(double x, const Params &p) {
    if (p.get_string("approximate", "none") == "tanh") {
        const double c = std::sqrt(2.0 / std::numbers::pi);
        return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

}  // namespace

void register_elementwise_ops(OpLibrary &lib) {
    lib.add(std::make_unique<BinaryOp>("add", "y = a + b, broadcasting", [](double a, double b) { return a + b; }));
    lib.add(std::make_unique<BinaryOp>("sub", "y = a − b, broadcasting", [](double a, double b) { return a - b; }));
    lib.add(std::make_unique<BinaryOp>("mul", "y = a · b, broadcasting", [](double a, double b) { return a * b; }));
    lib.add(std::make_unique<BinaryOp>("div", "y = a / b, broadcasting", [](double a, double b) { return a / b; }));

    // relu: one comparison.
    lib.add(std::make_unique<UnaryOp>(
        "relu", "y = max(x, 0)", std::vector<ParamSpec>{}, [](double x, const Params &) { return x > 0 ? x : 0.0; },
        constant(1)));
    // gelu "none": x/√2, erf, +1, ·x, ·0.5 = 5; "tanh": x³ (2), ·0.044715, +x,
    // ·√(2/π), tanh, +1, ·x, ·0.5 = 9.
    lib.add(std::make_unique<UnaryOp>(
        "gelu", "Gaussian error linear unit (erf form, or its tanh approximation)",
        std::vector<ParamSpec>{choice_param("approximate", "none", {"none", "tanh"},
                                            "\"none\": exact 0.5·x·(1 + erf(x/√2)); \"tanh\": the tanh approximation")},
        gelu, [](const Params &p) { return p.get_string("approximate", "none") == "tanh" ? 9.0 : 5.0; }));
    // sigmoid: negate, exp, +1, reciprocal = 4.
    lib.add(std::make_unique<UnaryOp>(
        "sigmoid", "y = 1 / (1 + exp(−x))", std::vector<ParamSpec>{},
        [](double x, const Params &) { return 1.0 / (1.0 + std::exp(-x)); }, constant(4)));
    lib.add(std::make_unique<UnaryOp>(
        "tanh", "y = tanh(x)", std::vector<ParamSpec>{}, [](double x, const Params &) { return std::tanh(x); },
        constant(1)));
    lib.add(std::make_unique<UnaryOp>(
        "exp", "y = exp(x)", std::vector<ParamSpec>{}, [](double x, const Params &) { return std::exp(x); },
        constant(1)));
    lib.add(std::make_unique<UnaryOp>(
        "sqrt", "y = √x", std::vector<ParamSpec>{}, [](double x, const Params &) { return std::sqrt(x); },
        constant(1)));
    lib.add(std::make_unique<UnaryOp>(
        "pow", "y = x^exponent for a constant exponent",
        std::vector<ParamSpec>{required_param("exponent", ParamKind::number, "the constant exponent (float)")},
        [](double x, const Params &p) { return std::pow(x, p.get_float("exponent", 1.0)); }, constant(1)));
}

}  // namespace tapestry
