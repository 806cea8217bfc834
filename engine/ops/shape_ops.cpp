// Shape operations: transpose, reshape, concat, slice (docs/ops.md). They move
// elements without arithmetic; their projections are permutations, mixed-radix
// regroupings, translations and strides.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.h"
#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {

namespace {

using namespace op_util;

// Shape ops accept any dtype (ids can be reshaped before an embedding); the
// output has the input's dtype.

// ---- transpose -----------------------------------------------------------------

// perm normalised to [0, rank), the default (empty list) reversing the axes.
Expected<std::vector<int>, DerivationError> transpose_perm(const std::vector<std::int64_t> &perm, int rank) {
    std::vector<int> out;
    if (perm.empty()) {
        for (int d = rank - 1; d >= 0; --d) out.push_back(d);
        return out;
    }
    if (static_cast<int>(perm.size()) != rank)
        return unexpected(derivation_error("bad-param", param_field("perm"),
                                           "transpose: perm " + param_to_string(ParamValue(perm)) +
                                               " must name each of the " + std::to_string(rank) + " axes of x once"));
    for (std::int64_t p : perm) {
        Expected<int, DerivationError> a = checked_axis("transpose", "perm", p, rank);
        if (!a) return unexpected(a.error());
        if (std::find(out.begin(), out.end(), *a) != out.end())
            return unexpected(derivation_error("bad-param", param_field("perm"),
                                               "transpose: axis " + std::to_string(*a) + " is named twice in perm"));
        out.push_back(*a);
    }
    return out;
}

class TransposeOp final : public OpDef {
public:
    std::string_view kind() const override { return "transpose"; }
    std::string_view category() const override { return "shape"; }
    std::string_view summary() const override { return "Permute the axes: y[i0, i1, …] = x[i_perm⁻¹…]"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "tensor to permute"}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "x with its axes permuted"}}; }
    std::vector<ParamSpec> params() const override {
        return {ints_param("perm", {},
                           "output axis k is input axis perm[k] (negative axes count from the end); empty "
                           "(the default) reverses the axes")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        const int rank = x.shape.rank();
        auto perm = transpose_perm(params.get_ints("perm", {}), rank);
        if (!perm) return unexpected(perm.error());
        ZPoint shape = ZPoint::zeros(rank);
        for (int k = 0; k < rank; ++k) shape[k] = x.shape[(*perm)[static_cast<size_t>(k)]];
        // Row r (tensor dim r of x) follows the index dim k with perm[k] = r.
        ProjectionBuilder px(rank);
        for (int r = 0; r < rank; ++r) {
            const auto it = std::find(perm->begin(), perm->end(), r);
            px.follow(static_cast<int>(it - perm->begin()));
        }
        return single_output(x.dtype, shape, ZRange::of_shape(shape), {port_projection("x", px.build())});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }

    void reference(const RefContext &ctx) const override {
        const int rank = ctx.input_shape(0).rank();
        const std::vector<int> perm = transpose_perm(ctx.params.get_ints("perm", {}), rank).value();
        if (ctx.fast())
            return map_elements<1>(ctx, {&input_projection(ctx.derivation, "x")}, output_projection(ctx.derivation),
                                   [](double x) { return x; });
        ZPoint src = ZPoint::zeros(rank);
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            for (int k = 0; k < rank; ++k) src[perm[static_cast<size_t>(k)]] = i[k];
            ctx.write(0, i, ctx.read(0, src));
        });
    }
};

// ---- reshape ---------------------------------------------------------------------

// The target shape with its -1 resolved against `count` elements.
Expected<ZPoint, DerivationError> reshape_target(const std::vector<std::int64_t> &shape, const ZPoint &x_shape) {
    const Coord count = x_shape.product();
    int inferred = -1;
    Coord known = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
        const std::int64_t s = shape[d];
        if (s == -1) {
            if (inferred >= 0)
                return unexpected(derivation_error(
                    "bad-param", param_field("shape"),
                    "reshape: shape may contain only one -1, got " + param_to_string(ParamValue(shape))));
            inferred = static_cast<int>(d);
        } else if (s < 1) {
            return unexpected(derivation_error("bad-param", param_field("shape"),
                                               "reshape: shape entries must be positive or -1, got " +
                                                   std::to_string(s) + " in " + param_to_string(ParamValue(shape))));
        } else if (s > kMaxCoordinate || known > kMaxCoordinate / s) {
            return unexpected(
                derivation_error("bad-param", param_field("shape"),
                                 "reshape: shape " + param_to_string(ParamValue(shape)) + " has too many elements"));
        } else {
            known *= s;
        }
    }
    ZPoint out(std::vector<Coord>(shape.begin(), shape.end()));
    if (inferred >= 0) {
        if (count == 0 || count % known != 0)
            return unexpected(derivation_error("shape-mismatch", input_field("x"),
                                               "reshape: cannot reshape x " + shape_string(x_shape) + " (" +
                                                   std::to_string(count) + " elements) into " +
                                                   param_to_string(ParamValue(shape))));
        out[inferred] = count / known;
    } else if (known != count) {
        return unexpected(derivation_error("shape-mismatch", input_field("x"),
                                           "reshape: cannot reshape x " + shape_string(x_shape) + " (" +
                                               std::to_string(count) + " elements) into " + shape_string(out) + " (" +
                                               std::to_string(known) + " elements)"));
    }
    return out;
}

// Rows of the dims of one side of a group [first, last) over the group's refined
// dims: dim k spans the suffix products [lo, hi) and reads Σ z_t·(u_t / lo) over
// the breakpoints lo ≤ u_t < hi.
void refined_rows(const ZPoint &dims, int first, int last, const std::vector<Coord> &breaks, int index_base,
                  int index_rank, std::vector<std::vector<Coord>> &rows) {
    for (int k = first; k < last; ++k) {
        Coord lo = 1;
        for (int l = k + 1; l < last; ++l) lo *= dims[l];
        const Coord hi = lo * dims[k];
        std::vector<Coord> row(static_cast<size_t>(index_rank), 0);
        // breaks[0] is the group total T; refined dim t (0-based) has stride breaks[t + 1].
        for (size_t t = 0; t + 1 < breaks.size(); ++t) {
            const Coord u = breaks[t + 1];
            if (u >= lo && u < hi) row[static_cast<size_t>(index_base) + t] = u / lo;
        }
        rows.push_back(std::move(row));
    }
}

// The suffix products of dims [first, last): T, …, dims[last-1], 1.
std::vector<Coord> suffix_products(const ZPoint &dims, int first, int last) {
    std::vector<Coord> out{1};
    Coord p = 1;
    for (int k = last - 1; k >= first; --k) {
        p *= dims[k];
        out.push_back(p);
    }
    return out;
}

struct ReshapePlan {
    ZRange index_space;
    IndexProjection x;
    IndexProjection y;
};

// The grouping scheme of docs/ops.md. Groups are the shortest runs of input and
// output dims with equal products (a size-1 dim at a group boundary is a group
// of its own). Within a group the index space is the common refinement of both
// sides — the union of their suffix products, when each divides the next — so
// both x and y are affine in it (a split [a·b] → [a, b] reads x through [b 1], a
// merge writes y through [b 1], [64, 64] → [32, 128] iterates [32, 2, 64]). A
// group with no common refinement ([2, 3] → [3, 2]) iterates the output dims and
// reads its whole input block.
ReshapePlan plan_reshape(const ZPoint &in, const ZPoint &out) {
    struct Group {
        int i0, i1, o0, o1;  // input dims [i0, i1), output dims [o0, o1)
    };
    std::vector<Group> groups;
    int i = 0, j = 0;
    while (i < in.rank() || j < out.rank()) {
        if (i < in.rank() && in[i] == 1) {
            groups.push_back({i, i + 1, j, j});
            ++i;
            continue;
        }
        if (j < out.rank() && out[j] == 1) {
            groups.push_back({i, i, j, j + 1});
            ++j;
            continue;
        }
        TAPESTRY_CHECK(i < in.rank() && j < out.rank(), "reshape: element counts differ");
        Group g{i, i + 1, j, j + 1};
        Coord pi = in[i++], po = out[j++];
        while (pi != po) {
            if (pi < po) {
                TAPESTRY_CHECK(i < in.rank(), "reshape: element counts differ");
                pi *= in[i++];
            } else {
                TAPESTRY_CHECK(j < out.rank(), "reshape: element counts differ");
                po *= out[j++];
            }
        }
        g.i1 = i;
        g.o1 = j;
        groups.push_back(g);
    }

    // First pass: the index dims of each group.
    struct GroupIndex {
        int base = 0;
        std::vector<Coord> breaks;  // refinable: descending union of suffix products
        bool refinable = false;
    };
    std::vector<GroupIndex> gi;
    std::vector<Coord> index_extents;
    for (const Group &g : groups) {
        GroupIndex x;
        x.base = static_cast<int>(index_extents.size());
        if (g.i0 == g.i1) {  // a lone output dim of size 1
            index_extents.push_back(1);
        } else if (g.o0 != g.o1) {
            std::vector<Coord> u = suffix_products(in, g.i0, g.i1);
            const std::vector<Coord> v = suffix_products(out, g.o0, g.o1);
            u.insert(u.end(), v.begin(), v.end());
            std::sort(u.begin(), u.end(), std::greater<>());
            u.erase(std::unique(u.begin(), u.end()), u.end());
            x.refinable = true;
            for (size_t t = 0; t + 1 < u.size(); ++t)
                if (u[t] % u[t + 1] != 0) x.refinable = false;
            if (x.refinable) {
                for (size_t t = 0; t + 1 < u.size(); ++t) index_extents.push_back(u[t] / u[t + 1]);
                x.breaks = std::move(u);
            } else {
                for (int o = g.o0; o < g.o1; ++o) index_extents.push_back(out[o]);
            }
        }
        gi.push_back(std::move(x));
    }
    const int rank = static_cast<int>(index_extents.size());

    std::vector<std::vector<Coord>> xrows, yrows;
    std::vector<Coord> xwindows;
    for (size_t n = 0; n < groups.size(); ++n) {
        const Group &g = groups[n];
        const GroupIndex &x = gi[n];
        if (g.i0 == g.i1) {
            std::vector<Coord> row(static_cast<size_t>(rank), 0);
            row[static_cast<size_t>(x.base)] = 1;
            yrows.push_back(std::move(row));
        } else if (g.o0 == g.o1) {
            xrows.emplace_back(static_cast<size_t>(rank), 0);
        } else if (x.refinable) {
            refined_rows(in, g.i0, g.i1, x.breaks, x.base, rank, xrows);
            refined_rows(out, g.o0, g.o1, x.breaks, x.base, rank, yrows);
        } else {
            for (int k = g.i0; k < g.i1; ++k) xrows.emplace_back(static_cast<size_t>(rank), 0);
            for (int o = g.o0; o < g.o1; ++o) {
                std::vector<Coord> row(static_cast<size_t>(rank), 0);
                row[static_cast<size_t>(x.base + o - g.o0)] = 1;
                yrows.push_back(std::move(row));
            }
        }
        for (int k = g.i0; k < g.i1; ++k) xwindows.push_back(x.refinable ? 1 : in[k]);
    }
    ReshapePlan plan;
    plan.index_space = ZRange::of_shape(ZPoint(index_extents));
    plan.x = IndexProjection(AffineMap(ZMatrix::from_rows(xrows, rank), ZPoint::zeros(in.rank())), ZPoint(xwindows));
    plan.y = IndexProjection(AffineMap(ZMatrix::from_rows(yrows, rank), ZPoint::zeros(out.rank())),
                             ZPoint::filled(out.rank(), 1));
    return plan;
}

// The fast path of reshape (RefContext::fast): the element of x an index point
// reads has the row-major rank of the element of y it writes, which in
// zero-origin row-major arrays is the same flat offset.
void copy_by_rank(const RefContext &ctx, const IndexProjection &py, const ZPoint &out_shape) {
    const FlatOffset fy(py, out_shape);
    const Coord step = fy.step(ctx.index_range.rank() - 1);
    const double *x = ctx.input(0).data.data();
    double *y = ctx.output(0).data.data();
    for_each_row(ctx.index_range, [&](const ZPoint &start, Coord length) {
        for (Coord j = 0, at = fy.at(start); j < length; ++j, at += step) y[at] = x[at];
    });
}

class ReshapeOp final : public OpDef {
public:
    std::string_view kind() const override { return "reshape"; }
    std::string_view category() const override { return "shape"; }
    std::string_view summary() const override { return "Reinterpret the row-major elements of x in a new shape"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "tensor to reshape"}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "x's elements in the new shape"}}; }
    std::vector<ParamSpec> params() const override {
        return {required_param("shape", ParamKind::int_list,
                               "the new shape: positive sizes, at most one -1 (inferred from the element count)")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        auto target = reshape_target(params.get_ints("shape", {}), x.shape);
        if (!target) return unexpected(target.error());
        ReshapePlan plan = plan_reshape(x.shape, *target);
        return single_output(x.dtype, *target, plan.index_space, {port_projection("x", std::move(plan.x))},
                             std::move(plan.y));
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }
    // A sub-range of a split or merged group reads x (or writes y) with holes:
    // [6] → [2, 3] over index rows 0:2 and columns 0:2 reads x {0, 1, 3, 4}; and
    // a group with no common refinement reads one element of the whole block its
    // projection names. Which case applies depends on the shape of x, which
    // read_pattern does not see; the projection tests check the exact images.
    ReadPattern read_pattern(const Params &) const override { return ReadPattern::subset; }

    void reference(const RefContext &ctx) const override {
        // Independent of the grouping: the element of y an index point writes is
        // found through y's projection, the element of x by the row-major rank.
        const ZPoint &in_shape = ctx.input_shape(0);
        const IndexProjection &py = ctx.derivation.signature.outputs.at(0).operands.at(0).projection;
        const ZPoint &out_shape = ctx.derivation.outputs.at(0).operands.at(0).shape;
        if (ctx.fast()) return copy_by_rank(ctx, py, out_shape);
        ZPoint src = ZPoint::zeros(in_shape.rank());
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            const ZPoint dst = py.map().apply(i);
            Coord linear = 0;
            for (int d = 0; d < out_shape.rank(); ++d) linear = linear * out_shape[d] + dst[d];
            for (int d = in_shape.rank() - 1; d >= 0; --d) {
                src[d] = linear % in_shape[d];
                linear /= in_shape[d];
            }
            ctx.write(0, dst, ctx.read(0, src));
        });
    }
};

// ---- concat ---------------------------------------------------------------------

class ConcatOp final : public OpDef {
public:
    std::string_view kind() const override { return "concat"; }
    std::string_view category() const override { return "shape"; }
    std::string_view summary() const override { return "Join tensors along one axis"; }
    std::vector<PortSpec> input_ports() const override {
        return {{"inputs", "tensors to join, in order; equal in every dim but axis", false, true}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "the inputs joined along axis"}}; }
    std::vector<ParamSpec> params() const override {
        return {required_param("axis", ParamKind::integer, "the axis to join along (negative counts from the end)")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const PortTypes &port = *find_port(inputs, "inputs");
        const OperandType &first = port.operands.front();
        const int rank = first.shape.rank();
        auto axis = checked_axis("concat", "axis", params.get_int("axis", 0), rank, "inputs[0]");
        if (!axis) return unexpected(axis.error());
        ZPoint shape = first.shape;
        shape[*axis] = 0;
        std::vector<Coord> offsets;
        for (size_t k = 0; k < port.operands.size(); ++k) {
            const OperandType &t = port.operands[k];
            if (t.dtype != first.dtype)
                return unexpected(derivation_error("dtype-mismatch", input_field("inputs", k),
                                                   "concat: inputs[" + std::to_string(k) + "] is " +
                                                       std::string(dtype_name(t.dtype)) + " but inputs[0] is " +
                                                       std::string(dtype_name(first.dtype))));
            bool same = t.shape.rank() == rank;
            for (int d = 0; same && d < rank; ++d) same = d == *axis || t.shape[d] == first.shape[d];
            if (!same)
                return unexpected(derivation_error(
                    t.shape.rank() == rank ? "shape-mismatch" : "rank-mismatch", input_field("inputs", k),
                    "concat: inputs[" + std::to_string(k) + "] " + shape_string(t.shape) +
                        " does not match inputs[0] " + shape_string(first.shape) + " outside axis " +
                        std::to_string(*axis)));
            offsets.push_back(shape[*axis]);
            shape[*axis] += t.shape[*axis];
        }
        PortProjections pp{"inputs", {}};
        for (Coord off : offsets) {
            ProjectionBuilder b(rank);
            for (int d = 0; d < rank; ++d) b.follow(d, d == *axis ? -off : 0);
            pp.operands.push_back(OperandProjection{b.build(), true});
        }
        return single_output(first.dtype, shape, ZRange::of_shape(shape), {std::move(pp)});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }

    void reference(const RefContext &ctx) const override {
        const int rank = ctx.input_shape(0).rank();
        const int axis = normalize_axis(ctx.params.get_int("axis", 0), rank).value();
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            ZPoint src = i;
            for (int k = 0; k < ctx.operand_count(0); ++k) {
                const Coord len = ctx.input_shape(0, k)[axis];
                if (src[axis] < len) {
                    ctx.write(0, i, ctx.read(0, k, src));
                    return;
                }
                src[axis] -= len;
            }
            TAPESTRY_CHECK(false, "concat: index point beyond the inputs");
        });
    }
};

// ---- slice -----------------------------------------------------------------------

// "1 entry", "3 entries".
std::string entries(size_t n) {
    return std::to_string(n) + (n == 1 ? " entry" : " entries");
}

struct SliceAxis {
    Coord start = 0;  // first element read
    Coord step = 1;   // coefficient of the row (±1 when at most one element is read)
    Coord length = 0;
};

// Per axis of x: where the slice starts, its step and its length (ONNX Slice
// semantics: negative starts/ends count from the end and are clamped; with a
// negative step, start is clamped to [0, dim − 1] and end to [−1, dim − 1]).
Expected<std::vector<SliceAxis>, DerivationError> slice_axes(const Params &params, const ZPoint &shape) {
    const std::vector<std::int64_t> starts = params.get_ints("starts", {});
    const std::vector<std::int64_t> ends = params.get_ints("ends", {});
    std::vector<std::int64_t> axes = params.get_ints("axes", {});
    std::vector<std::int64_t> steps = params.get_ints("steps", {});
    const int rank = shape.rank();
    if (ends.size() != starts.size())
        return unexpected(
            derivation_error("bad-param", param_field("ends"),
                             "slice: ends has " + entries(ends.size()) + " but starts has " + entries(starts.size())));
    if (axes.empty()) {
        if (static_cast<int>(starts.size()) > rank)
            return unexpected(derivation_error(
                "bad-param", param_field("starts"),
                "slice: starts has " + entries(starts.size()) + " but x has rank " + std::to_string(rank)));
        for (size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<std::int64_t>(a));
    } else if (axes.size() != starts.size()) {
        return unexpected(
            derivation_error("bad-param", param_field("axes"),
                             "slice: axes has " + entries(axes.size()) + " but starts has " + entries(starts.size())));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (steps.size() != starts.size())
        return unexpected(derivation_error(
            "bad-param", param_field("steps"),
            "slice: steps has " + entries(steps.size()) + " but starts has " + entries(starts.size())));

    std::vector<SliceAxis> out;
    for (int d = 0; d < rank; ++d) out.push_back({0, 1, shape[d]});
    std::vector<int> seen;
    for (size_t n = 0; n < starts.size(); ++n) {
        auto axis = checked_axis("slice", "axes", axes[n], rank);
        if (!axis) return unexpected(axis.error());
        if (std::find(seen.begin(), seen.end(), *axis) != seen.end())
            return unexpected(derivation_error("bad-param", param_field("axes"),
                                               "slice: axis " + std::to_string(*axis) + " is named twice in axes"));
        seen.push_back(*axis);
        const std::int64_t step = steps[n];
        if (step == 0)
            return unexpected(derivation_error(
                "bad-param", param_field("steps"),
                "slice: step 0 on axis " + std::to_string(*axis) + " is invalid (steps must be non-zero)"));
        const Coord dim = shape[*axis];
        Coord s = starts[n], e = ends[n];
        // dim <= kMaxCoordinate, so adding it to any int64 below zero cannot overflow.
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        SliceAxis sa;
        if (step > 0) {
            s = std::clamp<Coord>(s, 0, dim);
            e = std::clamp<Coord>(e, 0, dim);
            sa.length = e > s ? 1 + (e - s - 1) / step : 0;
        } else {
            s = std::clamp<Coord>(s, 0, std::max<Coord>(dim - 1, 0));
            e = std::clamp<Coord>(e, -1, dim - 1);
            const Coord back = step < -kMaxCoordinate ? kMaxCoordinate : -step;  // no overflow at INT64_MIN
            sa.length = s > e && dim > 0 ? 1 + (s - e - 1) / back : 0;
        }
        sa.start = s;
        // With one element or none the step never matters; keeping a huge step
        // would only put a needless giant coefficient into the projection.
        sa.step = sa.length > 1 ? step : (step > 0 ? 1 : -1);
        out[static_cast<size_t>(*axis)] = sa;
    }
    return out;
}

class SliceOp final : public OpDef {
public:
    std::string_view kind() const override { return "slice"; }
    std::string_view category() const override { return "shape"; }
    std::string_view summary() const override { return "Take a strided box of x: y[i] = x[start + step·i] per axis"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "tensor to slice"}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "the selected elements"}}; }
    std::vector<ParamSpec> params() const override {
        return {required_param("starts", ParamKind::int_list,
                               "first index per sliced axis (negative counts from the end; clamped)"),
                required_param("ends", ParamKind::int_list,
                               "end index (exclusive) per sliced axis (negative counts from the end; clamped)"),
                ints_param("axes", {}, "the sliced axes; empty (the default) means the first len(starts) axes"),
                ints_param("steps", {},
                           "step per sliced axis, non-zero; negative steps walk backwards (ONNX semantics); empty "
                           "(the default) means all 1")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        auto axes = slice_axes(params, x.shape);
        if (!axes) return unexpected(axes.error());
        const int rank = x.shape.rank();
        ZPoint shape = ZPoint::zeros(rank);
        ProjectionBuilder px(rank);
        for (int d = 0; d < rank; ++d) {
            const SliceAxis &a = (*axes)[static_cast<size_t>(d)];
            shape[d] = a.length;
            px.scaled(d, a.step, a.start);
        }
        return single_output(x.dtype, shape, ZRange::of_shape(shape), {port_projection("x", px.build())});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }
    ReadPattern read_pattern(const Params &params) const override {
        for (std::int64_t s : params.get_ints("steps", {}))
            if (s > 1 || s < -1) return ReadPattern::strided;
        return ReadPattern::dense;
    }

    void reference(const RefContext &ctx) const override {
        if (ctx.fast())
            return map_elements<1>(ctx, {&input_projection(ctx.derivation, "x")}, output_projection(ctx.derivation),
                                   [](double x) { return x; });
        const std::vector<SliceAxis> axes = slice_axes(ctx.params, ctx.input_shape(0)).value();
        ZPoint src = ZPoint::zeros(static_cast<int>(axes.size()));
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            for (size_t d = 0; d < axes.size(); ++d)
                src[static_cast<int>(d)] = axes[d].start + axes[d].step * i[static_cast<int>(d)];
            ctx.write(0, i, ctx.read(0, src));
        });
    }
};

}  // namespace

void register_shape_ops(OpLibrary &lib) {
    lib.add(std::make_unique<TransposeOp>());
    lib.add(std::make_unique<ReshapeOp>());
    lib.add(std::make_unique<ConcatOp>());
    lib.add(std::make_unique<SliceOp>());
}

}  // namespace tapestry
