// Normalization: layernorm (normalizes over axes axis…end, optional gamma/beta
// shaped like those axes) and rmsnorm. Like softmax, each index point reads its
// whole normalized block (zero rows with full windows); the statistics are the
// monoids (n, Σx, Σx²) and (n, Σx²). batchnorm (inference) normalizes with
// given per-channel statistics, so it is elementwise along x.
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

using namespace op_util;

class NormOp : public OpDef {
public:
    explicit NormOp(bool rms) : rms_(rms) {}

    std::string_view kind() const override { return rms_ ? "rmsnorm" : "layernorm"; }
    std::string_view category() const override { return "normalization"; }
    std::string_view summary() const override {
        return rms_ ? "y = x / √(mean(x²) + ε) · gamma over axes axis…end"
                    : "y = (x − mean) / √(var + ε) · gamma + beta over axes axis…end";
    }
    std::vector<PortSpec> input_ports() const override {
        std::vector<PortSpec> p{{"x", "the input", false, false},
                                {"gamma", "scale, shaped like the normalized axes (optional)", true, false}};
        if (!rms_) p.push_back({"beta", "shift, shaped like the normalized axes (optional)", true, false});
        return p;
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "shaped like x", false, false}}; }
    std::vector<ParamSpec> params() const override {
        return {int_param("axis", -1, "first normalized axis; axes axis…end are normalized together"),
                float_param("epsilon", rms_ ? 1e-6 : 1e-5, "added to the variance (mean square) before the root")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const std::string k(kind());
        const OperandType &x = *find_operand(inputs, "x");
        if (auto e = require_float(k, "x", x)) return unexpected(*e);
        auto axis = checked_axis(k, "axis", params.get_int("axis", -1), x.shape.rank());
        if (!axis) return unexpected(axis.error());
        const double eps = params.get_float("epsilon", 0);
        if (eps < 0)
            return unexpected(derivation_error("bad-param", param_field("epsilon"),
                                               k + ": epsilon must not be negative, got " +
                                                   param_to_string(ParamValue(eps))));
        const int rank = x.shape.rank();
        const ZPoint normalized(std::vector<Coord>(x.shape.coords().begin() + *axis, x.shape.coords().end()));

        ProjectionBuilder px(rank);
        for (int d = 0; d < rank; ++d)
            if (d < *axis) px.follow(d);
            else px.fixed(x.shape[d]);
        std::vector<PortProjections> ins{port_projection("x", px.build())};
        for (const char *port : {"gamma", "beta"}) {
            const OperandType *t = find_operand(inputs, port);
            if (!t) continue;
            if (auto e = require_same_dtype(k, port, *t, "x", x.dtype)) return unexpected(*e);
            if (t->shape != normalized)
                return unexpected(derivation_error("shape-mismatch", input_field(port),
                                                   k + ": " + port + " has shape " + shape_string(t->shape) +
                                                       " but the normalized shape of x is " +
                                                       shape_string(normalized)));
            ProjectionBuilder pp(rank);
            for (int d = *axis; d < rank; ++d) pp.follow(d);
            ins.push_back(port_projection(port, pp.build()));
        }
        return single_output(x.dtype, x.shape, ZRange::of_shape(x.shape), std::move(ins));
    }

    // Amortised per element (statistics once per block): layernorm Σx (1), Σx² (2),
    // subtract the mean and multiply by 1/σ (2) = 5; rmsnorm Σx² (2) and the scale
    // (1) = 3; plus 1 for gamma and 1 for beta when present.
    double flops_per_point(const Params &, const Derivation &d) const override {
        double f = rms_ ? 3 : 5;
        if (d.signature.input("gamma", 0)) f += 1;
        if (d.signature.input("beta", 0)) f += 1;
        return f;
    }

    std::optional<ReductionMonoid> monoid(const Params &) const override {
        return rms_ ? mean_square_monoid() : moments_monoid();
    }

    void reference(const RefContext &ctx) const override {
        const ReductionMonoid m = *monoid(ctx.params);
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &py = output_projection(ctx.derivation);
        const int rank = px.tensor_rank();
        const int axis = *normalize_axis(ctx.params.get_int("axis", -1), rank);
        const double eps = ctx.params.get_float("epsilon", rms_ ? 1e-6 : 1e-5);
        const bool has_gamma = ctx.has_input(1), has_beta = !rms_ && ctx.has_input(2);
        if (ctx.fast()) return normalize_fast(ctx, m, eps);
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            std::vector<double> acc = m.identity;
            for_each_window_element(px, i, [&](const ZPoint &e) { m.lift_into(acc, ctx.read(0, e)); });
            ZPoint own = px.map().apply(i);
            for (int d = axis; d < rank; ++d) own[d] += i[d];  // this point's element inside its block
            double y = normalized(ctx.read(0, own), acc, m, eps);
            if (has_gamma) y *= ctx.read(1, input_projection(ctx.derivation, "gamma").map().apply(i));
            if (has_beta) y += ctx.read(2, input_projection(ctx.derivation, "beta").map().apply(i));
            ctx.write(0, py.map().apply(i), y);
        });
    }

private:
    // x normalized by the statistics `acc` of its block (before gamma and beta).
    double normalized(double x, const std::vector<double> &acc, const ReductionMonoid &m, double eps) const {
        return rms_ ? x / std::sqrt(m.lower(acc) + eps) : (x - acc[1] / acc[0]) / std::sqrt(m.lower(acc) + eps);
    }

    // The fast path (RefContext::fast): the statistics of a block once per row of
    // the index range instead of once per point. x's projection sends a row to the
    // start of its block, which is contiguous (the normalized axes are the last
    // ones) and folded in the naive loop's order; x and y are shaped alike, so a
    // point's own element of x has its flat offset in y.
    void normalize_fast(const RefContext &ctx, const ReductionMonoid &m, double eps) const {
        const ZPoint &xs = ctx.input_shape(0);
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const Coord block = window_size(px);
        const FlatOffset block_at(px, xs), own_at(output_projection(ctx.derivation), xs);
        const bool has_gamma = ctx.has_input(1), has_beta = !rms_ && ctx.has_input(2);
        const std::optional<FlatOffset> gamma_at =
            has_gamma ? std::optional(FlatOffset(input_projection(ctx.derivation, "gamma"), ctx.input_shape(1)))
                      : std::nullopt;
        const std::optional<FlatOffset> beta_at =
            has_beta ? std::optional(FlatOffset(input_projection(ctx.derivation, "beta"), ctx.input_shape(2)))
                     : std::nullopt;
        const int last = ctx.index_range.rank() - 1;
        const double *x = ctx.input(0).data.data();
        std::vector<double> acc;
        Coord current = -1;  // the block `acc` holds the statistics of
        for_each_row(ctx.index_range, [&](const ZPoint &start, Coord length) {
            if (const Coord first = block_at.at(start); first != current) {
                acc = m.identity;
                for (Coord k = 0; k < block; ++k) m.lift_into(acc, x[first + k]);
                current = first;
            }
            for (Coord j = 0; j < length; ++j) {
                const Coord own = own_at.at(start) + j * own_at.step(last);
                double y = normalized(x[own], acc, m, eps);
                if (gamma_at)
                    y *= ctx.input(1).data[static_cast<size_t>(gamma_at->at(start) + j * gamma_at->step(last))];
                if (beta_at) y += ctx.input(2).data[static_cast<size_t>(beta_at->at(start) + j * beta_at->step(last))];
                ctx.output(0).data[static_cast<size_t>(own)] = y;
            }
        });
    }

    bool rms_;
};

// Inference batch normalization (ONNX BatchNormalization with training_mode 0):
// y = (x − mean[c]) / √(var[c] + ε) · scale[c] + bias[c], channel c = dim 1 of x.
class BatchNormOp : public OpDef {
public:
    std::string_view kind() const override { return "batchnorm"; }
    std::string_view category() const override { return "normalization"; }
    std::string_view summary() const override {
        return "y = (x − mean) / √(var + ε) · scale + bias per channel (dim 1), given statistics";
    }
    std::vector<PortSpec> input_ports() const override {
        return {{"x", "the input [N, C, …]", false, false},
                {"scale", "per-channel scale [C]", false, false},
                {"bias", "per-channel shift [C]", false, false},
                {"mean", "per-channel mean [C]", false, false},
                {"var", "per-channel variance [C]", false, false}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "shaped like x", false, false}}; }
    std::vector<ParamSpec> params() const override {
        return {float_param("epsilon", 1e-5, "added to the variance before the root")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        if (auto e = require_float("batchnorm", "x", x)) return unexpected(*e);
        if (auto e = require_min_rank("batchnorm", "x", x, 2)) return unexpected(*e);
        const double eps = params.get_float("epsilon", 0);
        if (eps < 0)
            return unexpected(derivation_error("bad-param", param_field("epsilon"),
                                               "batchnorm: epsilon must not be negative, got " +
                                                   param_to_string(ParamValue(eps))));
        const int rank = x.shape.rank();
        const ZPoint channels{x.shape[1]};
        std::vector<PortProjections> ins{port_projection("x", IndexProjection::identity(rank))};
        for (const char *port : {"scale", "bias", "mean", "var"}) {
            const OperandType &t = *find_operand(inputs, port);
            if (auto e = require_same_dtype("batchnorm", port, t, "x", x.dtype)) return unexpected(*e);
            if (t.shape != channels)
                return unexpected(derivation_error("shape-mismatch", input_field(port),
                                                   std::string("batchnorm: ") + port + " has shape " +
                                                       shape_string(t.shape) + " but x has " +
                                                       std::to_string(x.shape[1]) + " channels (dim 1)"));
            ProjectionBuilder pc(rank);
            pc.follow(1);
            ins.push_back(port_projection(port, pc.build()));
        }
        return single_output(x.dtype, x.shape, ZRange::of_shape(x.shape), std::move(ins));
    }

    // Per element a multiply and an add: the factor scale/√(var + ε) and the shift
    // bias − mean·factor are per channel, computed once by an efficient kernel.
    double flops_per_point(const Params &, const Derivation &) const override { return 2; }

    void reference(const RefContext &ctx) const override {
        const double eps = ctx.params.get_float("epsilon", 1e-5);
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &pc = input_projection(ctx.derivation, "scale");
        const IndexProjection &py = output_projection(ctx.derivation);
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            const ZPoint c = pc.map().apply(i);
            const double x = ctx.read(0, px.map().apply(i));
            const double y = (x - ctx.read(3, c)) / std::sqrt(ctx.read(4, c) + eps) * ctx.read(1, c) + ctx.read(2, c);
            ctx.write(0, py.map().apply(i), y);
        });
    }
};

}  // namespace

void register_normalization_ops(OpLibrary &lib) {
    lib.add(std::make_unique<NormOp>(false));
    lib.add(std::make_unique<NormOp>(true));
    lib.add(std::make_unique<BatchNormOp>());
}

}  // namespace tapestry
