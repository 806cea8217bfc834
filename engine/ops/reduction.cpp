// Reductions: reduce_sum, reduce_mean, reduce_max over a list of axes, and
// softmax along one axis. A reduced dim is a zero row of P_x whose window is the
// dim's extent; the reference kernels fold that window through the op's monoid,
// so the monoid the passes split by is the one the oracle computes with.
#include <algorithm>
#include <cmath>
#include <memory>

#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

using namespace op_util;

enum class ReduceKind { sum, mean, max };

class ReduceOp : public OpDef {
public:
    explicit ReduceOp(ReduceKind r) : r_(r) {}

    std::string_view kind() const override {
        switch (r_) {
            case ReduceKind::sum: return "reduce_sum";
            case ReduceKind::mean: return "reduce_mean";
            case ReduceKind::max: return "reduce_max";
        }
        return "?";
    }
    std::string_view category() const override { return "reduction"; }
    std::string_view summary() const override {
        switch (r_) {
            case ReduceKind::sum: return "sum over axes";
            case ReduceKind::mean: return "mean over axes";
            case ReduceKind::max: return "maximum over axes";
        }
        return "?";
    }
    std::vector<PortSpec> input_ports() const override { return {{"x", "the input", false, false}}; }
    std::vector<PortSpec> output_ports() const override {
        return {{"y", "x with the reduced axes of size 1 (keepdims) or removed", false, false}};
    }
    std::vector<ParamSpec> params() const override {
        return {required_param("axes", ParamKind::int_list,
                               "axes to reduce (negative counts from the end; at least one, no repeats)"),
                bool_param("keepdims", true, "keep each reduced axis as a dimension of size 1")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const std::string k(kind());
        const OperandType &x = *find_operand(inputs, "x");
        if (auto e = require_float(k, "x", x)) return unexpected(*e);
        auto axes = checked_axes(k, "axes", params.get_ints("axes", {}), x.shape.rank());
        if (!axes) return unexpected(axes.error());
        const bool keep = params.get_bool("keepdims", true);

        auto reduced = [&](int d) { return std::find(axes->begin(), axes->end(), d) != axes->end(); };
        std::vector<Coord> y;
        for (int d = 0; d < x.shape.rank(); ++d)
            if (!reduced(d)) y.push_back(x.shape[d]);
            else if (keep) y.push_back(1);
        const ZPoint ys(y);
        ProjectionBuilder px(ys.rank());
        int col = 0;
        for (int d = 0; d < x.shape.rank(); ++d) {
            if (reduced(d)) {
                px.fixed(x.shape[d]);
                if (keep) ++col;
            } else {
                px.follow(col++);
            }
        }
        return single_output(x.dtype, ys, ZRange::of_shape(ys), {port_projection("x", px.build())});
    }

    // One add (sum, mean) or comparison (max) per element of the window; mean
    // divides once more.
    double flops_per_point(const Params &, const Derivation &d) const override {
        const double n = static_cast<double>(window_size(input_projection(d, "x")));
        return r_ == ReduceKind::mean ? n + 1 : n;
    }

    std::optional<ReductionMonoid> monoid(const Params &) const override {
        switch (r_) {
            case ReduceKind::sum: return sum_monoid();
            case ReduceKind::mean: return mean_monoid();
            case ReduceKind::max: return max_monoid();
        }
        return std::nullopt;
    }

    void reference(const RefContext &ctx) const override {
        const ReductionMonoid m = *monoid(ctx.params);
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &py = output_projection(ctx.derivation);
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            std::vector<double> acc = m.identity;
            for_each_window_element(px, i, [&](const ZPoint &e) { m.lift_into(acc, ctx.read(0, e)); });
            ctx.write(0, py.map().apply(i), m.lower(acc));
        });
    }

private:
    ReduceKind r_;
};

class SoftmaxOp : public OpDef {
public:
    std::string_view kind() const override { return "softmax"; }
    std::string_view category() const override { return "reduction"; }
    std::string_view summary() const override { return "y = exp(x − max) / Σ exp(x − max) along one axis"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "the input (logits)", false, false}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "shaped like x", false, false}}; }
    std::vector<ParamSpec> params() const override {
        return {int_param("axis", -1, "the axis to normalize along (negative counts from the end)")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        if (auto e = require_float("softmax", "x", x)) return unexpected(*e);
        auto axis = checked_axis("softmax", "axis", params.get_int("axis", -1), x.shape.rank());
        if (!axis) return unexpected(axis.error());
        ProjectionBuilder px(x.shape.rank());
        for (int d = 0; d < x.shape.rank(); ++d)
            if (d == *axis) px.fixed(x.shape[d]);
            else px.follow(d);
        return single_output(x.dtype, x.shape, ZRange::of_shape(x.shape), {port_projection("x", px.build())});
    }

    // Amortised per output element (an efficient kernel computes the row
    // statistics once per row): max compare, subtract, exp, sum add, divide.
    double flops_per_point(const Params &, const Derivation &) const override { return 5; }

    // The online-softmax monoid (m, s) = (max x, Σ exp(x − m)): max first, then the
    // rescaled sum; lower is log-sum-exp and y = exp(x − lower).
    std::optional<ReductionMonoid> monoid(const Params &) const override { return logsumexp_monoid(); }

    void reference(const RefContext &ctx) const override {
        const ReductionMonoid m = logsumexp_monoid();
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &py = output_projection(ctx.derivation);
        const int axis = *normalize_axis(ctx.params.get_int("axis", -1), px.tensor_rank());
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            std::vector<double> acc = m.identity;
            for_each_window_element(px, i, [&](const ZPoint &e) { m.lift_into(acc, ctx.read(0, e)); });
            ZPoint own = px.map().apply(i);
            own[axis] += i[axis];  // the element of this point inside its row
            ctx.write(0, py.map().apply(i), std::exp(ctx.read(0, own) - m.lower(acc)));
        });
    }
};

}  // namespace

void register_reduction_ops(OpLibrary &lib) {
    lib.add(std::make_unique<ReduceOp>(ReduceKind::sum));
    lib.add(std::make_unique<ReduceOp>(ReduceKind::mean));
    lib.add(std::make_unique<ReduceOp>(ReduceKind::max));
    lib.add(std::make_unique<SoftmaxOp>());
}

}  // namespace tapestry
