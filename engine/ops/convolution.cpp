// Convolution family: conv2d, max_pool2d, avg_pool2d over NCHW tensors
// (docs/ops.md). Windows become projection windows; zero padding makes the x
// projection clipped; dilation and strides wider than the window read with holes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/library.h"
#include "ops/op_util.h"
#include "ops/ref_product.h"

namespace tapestry {

namespace {

using namespace op_util;

// The window geometry shared by convolutions and pools.
struct Window2d {
    Coord stride_h = 1, stride_w = 1;
    Coord pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    Coord dilation_h = 1, dilation_w = 1;
    Coord r = 1, s = 1;  // kernel extent (undilated)
    Coord extent_h() const { return dilation_h * (r - 1) + 1; }
    Coord extent_w() const { return dilation_w * (s - 1) + 1; }
};

std::optional<DerivationError> check_pair(std::string_view kind, std::string_view name,
                                          const std::vector<std::int64_t> &v, size_t count, Coord min) {
    const std::string list = param_to_string(ParamValue(v));
    if (v.size() != count)
        return derivation_error(
            "bad-param", param_field(name),
            std::string(kind) + ": " + std::string(name) + " needs " + std::to_string(count) + " entries, got " + list);
    for (std::int64_t e : v)
        if (e < min || e > kMaxCoordinate)
            return derivation_error("bad-param", param_field(name),
                                    std::string(kind) + ": " + std::string(name) + " entries must be at least " +
                                        std::to_string(min) + ", got " + list);
    return std::nullopt;
}

// Reads stride, padding and dilation (when the kind has it) from checked params.
Window2d window_from(const Params &params, Coord r, Coord s, const std::vector<std::int64_t> &default_stride) {
    Window2d w;
    std::vector<std::int64_t> stride = params.get_ints("stride", default_stride);
    if (stride.empty()) stride = default_stride;  // pools: empty means the kernel
    const std::vector<std::int64_t> padding = params.get_ints("padding", {0, 0, 0, 0});
    const std::vector<std::int64_t> dilation = params.get_ints("dilation", {1, 1});
    w.stride_h = stride.at(0);
    w.stride_w = stride.at(1);
    w.pad_top = padding.at(0);
    w.pad_left = padding.at(1);
    w.pad_bottom = padding.at(2);
    w.pad_right = padding.at(3);
    w.dilation_h = dilation.at(0);
    w.dilation_w = dilation.at(1);
    w.r = r;
    w.s = s;
    return w;
}

// Output extents P, Q, or an error when the (dilated) window does not fit into
// the padded input.
Expected<std::pair<Coord, Coord>, DerivationError> output_extent(std::string_view kind, const Window2d &w,
                                                                 const ZPoint &x_shape) {
    const Coord h = x_shape[2] + w.pad_top + w.pad_bottom, wd = x_shape[3] + w.pad_left + w.pad_right;
    if (h < w.extent_h() || wd < w.extent_w())
        return unexpected(derivation_error("shape-mismatch", input_field("x"),
                                           std::string(kind) + ": the window (" + std::to_string(w.extent_h()) + " × " +
                                               std::to_string(w.extent_w()) + ") is larger than the padded input (" +
                                               std::to_string(h) + " × " + std::to_string(wd) + ") of x " +
                                               shape_string(x_shape)));
    return std::pair<Coord, Coord>{(h - w.extent_h()) / w.stride_h + 1, (wd - w.extent_w()) / w.stride_w + 1};
}

// Validates x as a floating NCHW tensor.
std::optional<DerivationError> check_nchw(std::string_view kind, std::string_view port, const OperandType &t) {
    if (auto e = require_float(kind, port, t)) return e;
    if (t.shape.rank() != 4)
        return derivation_error("rank-mismatch", input_field(port),
                                std::string(kind) + ": " + std::string(port) + " must have rank 4 (" +
                                    (port == "x" ? "N, C, H, W" : "K, C/groups, R, S") + "), got " +
                                    shape_string(t.shape));
    return std::nullopt;
}

// ---- conv2d -----------------------------------------------------------------------

// What a conv2d kernel needs to know, read once from its context.
struct ConvGeometry {
    ZPoint xs, ws;  // x [N, C, H, W], w [K, C/groups, R, S]
    Coord group_channels = 1, group_filters = 1;
    bool grouped = false;  // the index space is [N, G, K/G, P, Q] instead of [N, K, P, Q]
    bool has_bias = false;
    Window2d win;
    int filter_dim() const { return grouped ? 2 : 1; }              // index dim of the filter (within its group)
    Coord depth() const { return group_channels * win.r * win.s; }  // taps per output point
};

ConvGeometry conv_geometry(const RefContext &ctx) {
    ConvGeometry geo;
    geo.xs = ctx.input_shape(0);
    geo.ws = ctx.input_shape(1);
    const Coord groups = ctx.params.get_int("groups", 1);
    geo.group_channels = geo.ws[1];
    geo.group_filters = geo.ws[0] / groups;
    geo.grouped = groups > 1;
    geo.has_bias = ctx.has_input(2);
    geo.win = window_from(ctx.params, geo.ws[2], geo.ws[3], {1, 1});
    return geo;
}

// Output pixels (p[t], q[t]) of one image: a block of an im2col product.
struct Pixels {
    std::vector<Coord> p, q;
    Coord count() const { return static_cast<Coord>(p.size()); }
};

// The im2col matrix of the pixels of image n, group g: row (c, r, s) in the naive
// loop's tap order, column t pixel t; taps in the padding are zero.
void im2col(const RefContext &ctx, const ConvGeometry &geo, Coord n, Coord g, const Pixels &pixels, double *columns) {
    const Window2d &win = geo.win;
    const Coord count = pixels.count(), height = geo.xs[2], width = geo.xs[3];
    for (Coord c = 0; c < geo.group_channels; ++c) {
        const Coord channel = g * geo.group_channels + c;
        const double *plane = ctx.input(0).data.data() + (n * geo.xs[1] + channel) * height * width;
        for (Coord r = 0; r < win.r; ++r)
            for (Coord s = 0; s < win.s; ++s, columns += count)
                for (Coord t = 0; t < count; ++t) {
                    const Coord h = pixels.p[static_cast<size_t>(t)] * win.stride_h - win.pad_top + r * win.dilation_h;
                    const Coord w = pixels.q[static_cast<size_t>(t)] * win.stride_w - win.pad_left + s * win.dilation_w;
                    columns[t] = h >= 0 && h < height && w >= 0 && w < width ? plane[h * width + w] : 0.0;
                }
    }
}

// Elements of an im2col matrix: the pixels of a product are taken in blocks of
// at most this many taps × pixels (2 MiB).
constexpr Coord kIm2colElements = Coord{1} << 18;

// The fast path of conv2d (RefContext::fast): per image and group of the index
// range, its filters times the im2col matrix of its output pixels — an implicit
// product whose depth runs over the taps (c, r, s) in the naive loop's order,
// each sum starting from the bias as the naive loop's does.
void conv2d_fast(const RefContext &ctx, const ConvGeometry &geo) {
    const ZRange &range = ctx.index_range;
    const int kd = geo.filter_dim(), pd = kd + 1, qd = kd + 2;
    const Coord depth = geo.depth(), filters = range.extent(kd), qn = range.extent(qd);
    const Coord all = range.extent(pd) * qn, block = std::max<Coord>(1, kIm2colElements / std::max<Coord>(depth, 1));
    const ZPoint &ys = ctx.output(0).range.end();
    std::vector<double> columns, out;
    Pixels pixels;
    for_each_block(range, 3, [&](const ZPoint &corner) {
        const Coord n = corner[0], g = geo.grouped ? corner[1] : 0, k0 = g * geo.group_filters + corner[kd];
        for (Coord first = 0; first < all; first += block) {
            const Coord count = std::min(block, all - first);
            pixels.p.clear();
            pixels.q.clear();
            for (Coord t = first; t < first + count; ++t) {
                pixels.p.push_back(range.start()[pd] + t / qn);
                pixels.q.push_back(range.start()[qd] + t % qn);
            }
            columns.resize(static_cast<size_t>(depth * count));
            im2col(ctx, geo, n, g, pixels, columns.data());
            out.assign(static_cast<size_t>(filters * count), 0.0);
            for (Coord f = 0; f < filters && geo.has_bias; ++f)
                std::fill_n(out.begin() + f * count, count, ctx.input(2).data[static_cast<size_t>(k0 + f)]);
            accumulate_product(filters, count, depth, {ctx.input(1).data.data() + k0 * depth, depth, 1},
                               {columns.data(), count, 1}, {out.data(), count, 1});
            for (Coord f = 0; f < filters; ++f)
                for (Coord t = 0; t < count; ++t) {
                    const Coord at = ((n * ys[1] + k0 + f) * ys[2] + pixels.p[static_cast<size_t>(t)]) * ys[3] +
                                     pixels.q[static_cast<size_t>(t)];
                    ctx.output(0).data[static_cast<size_t>(at)] = out[static_cast<size_t>(f * count + t)];
                }
        }
    });
}

class Conv2dOp final : public OpDef {
public:
    std::string_view kind() const override { return "conv2d"; }
    std::string_view category() const override { return "convolution"; }
    std::string_view summary() const override {
        return "2-D convolution (cross-correlation) of NCHW x with KCRS filters w";
    }
    std::vector<PortSpec> input_ports() const override {
        return {
            {"x", "input [N, C, H, W]"}, {"w", "filters [K, C/groups, R, S]"}, {"bias", "per-filter bias [K]", true}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "output [N, K, P, Q]"}}; }
    std::vector<ParamSpec> params() const override {
        return {ints_param("stride", {1, 1}, "[stride_h, stride_w], each at least 1"),
                ints_param("padding", {0, 0, 0, 0}, "zero padding [top, left, bottom, right]"),
                ints_param("dilation", {1, 1}, "[dilation_h, dilation_w], each at least 1"),
                int_param("groups", 1, "channel groups; divides C and K (w has C/groups channels)")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        const OperandType &w = *find_operand(inputs, "w");
        const OperandType *bias = find_operand(inputs, "bias");
        if (auto e = check_nchw("conv2d", "x", x)) return unexpected(*e);
        if (auto e = check_nchw("conv2d", "w", w)) return unexpected(*e);
        if (auto e = require_same_dtype("conv2d", "w", w, "x", x.dtype)) return unexpected(*e);
        if (auto e = check_pair("conv2d", "stride", params.get_ints("stride", {1, 1}), 2, 1)) return unexpected(*e);
        if (auto e = check_pair("conv2d", "padding", params.get_ints("padding", {0, 0, 0, 0}), 4, 0))
            return unexpected(*e);
        if (auto e = check_pair("conv2d", "dilation", params.get_ints("dilation", {1, 1}), 2, 1)) return unexpected(*e);
        const Coord groups = params.get_int("groups", 1);
        const Coord n = x.shape[0], c = x.shape[1], k = w.shape[0];
        if (groups < 1)
            return unexpected(derivation_error("bad-param", param_field("groups"),
                                               "conv2d: groups must be at least 1, got " + std::to_string(groups)));
        if (c % groups != 0)
            return unexpected(derivation_error("bad-param", param_field("groups"),
                                               "conv2d: groups " + std::to_string(groups) + " does not divide the " +
                                                   std::to_string(c) + " channels of x"));
        if (k % groups != 0)
            return unexpected(derivation_error("bad-param", param_field("groups"),
                                               "conv2d: groups " + std::to_string(groups) + " does not divide the " +
                                                   std::to_string(k) + " filters of w"));
        const Coord cg = c / groups, kg = k / groups;
        if (w.shape[1] != cg)
            return unexpected(derivation_error(
                "shape-mismatch", input_field("w"),
                "conv2d: w " + shape_string(w.shape) + " has " + std::to_string(w.shape[1]) +
                    " channels per filter, expected " + std::to_string(cg) + " (x has " + std::to_string(c) +
                    " channels in " + std::to_string(groups) + (groups == 1 ? " group)" : " groups)")));
        if (w.shape[2] < 1 || w.shape[3] < 1)
            return unexpected(derivation_error("shape-mismatch", input_field("w"),
                                               "conv2d: w " + shape_string(w.shape) + " has an empty kernel"));
        if (bias) {
            if (auto e = require_same_dtype("conv2d", "bias", *bias, "x", x.dtype)) return unexpected(*e);
            if (bias->shape != ZPoint{k})
                return unexpected(derivation_error(bias->shape.rank() == 1 ? "shape-mismatch" : "rank-mismatch",
                                                   input_field("bias"),
                                                   "conv2d: bias must be [" + std::to_string(k) +
                                                       "] (one per filter), got " + shape_string(bias->shape)));
        }
        const Window2d win = window_from(params, w.shape[2], w.shape[3], {1, 1});
        auto pq = output_extent("conv2d", win, x.shape);
        if (!pq) return unexpected(pq.error());
        const ZPoint y_shape{n, k, pq->first, pq->second};

        // groups == 1: index [N, K, P, Q]. groups > 1: index [N, G, K/G, P, Q], so
        // that the channel offset g·C/G of x and the filter g·K/G + k' are affine.
        const bool grouped = groups > 1;
        const int rank = grouped ? 5 : 4;
        const int ip = grouped ? 3 : 2, iq = ip + 1;
        std::vector<Coord> filter_row(static_cast<size_t>(rank), 0);
        if (grouped) {
            filter_row[1] = kg;
            filter_row[2] = 1;
        } else {
            filter_row[1] = 1;
        }
        ProjectionBuilder px(rank);
        px.follow(0);
        if (grouped)
            px.scaled(1, cg, 0, cg);
        else
            px.fixed(c);
        px.scaled(ip, win.stride_h, -win.pad_top, win.extent_h());
        px.scaled(iq, win.stride_w, -win.pad_left, win.extent_w());
        ProjectionBuilder pw(rank);
        pw.row(filter_row).fixed(cg).fixed(w.shape[2]).fixed(w.shape[3]);
        std::vector<PortProjections> ins{port_projection("x", px.build(), true), port_projection("w", pw.build())};
        if (bias) ins.push_back(port_projection("bias", ProjectionBuilder(rank).row(filter_row).build()));
        const ZRange space = ZRange::of_shape(grouped ? ZPoint{n, groups, kg, pq->first, pq->second} : y_shape);
        std::optional<IndexProjection> py;
        if (grouped) {
            ProjectionBuilder b(rank);
            b.follow(0).row(filter_row).follow(ip).follow(iq);
            py = b.build();
        }
        return single_output(x.dtype, y_shape, space, std::move(ins), std::move(py));
    }

    // Per output point: C/groups·R·S multiply-adds (2 FLOPs each), plus one add
    // for the bias when there is one. Read off w's projection window [1, C/g, R, S].
    double flops_per_point(const Params &, const Derivation &d) const override {
        const OperandProjection *w = d.signature.input("w", 0);
        if (!w) return 0;
        const double macs = static_cast<double>(window_size(w->projection));
        return 2 * macs + (d.signature.input("bias", 0) ? 1 : 0);
    }
    std::optional<ReductionMonoid> monoid(const Params &) const override { return sum_monoid(); }
    // Dilation leaves holes inside a window; a stride above the window extent
    // leaves holes between windows. The kernel size is not a parameter, so any
    // stride above 1 is reported as strided (a 1×1 kernel with stride 2 skips).
    // With groups, w and bias are read through the row [0 K/G 1 0 0]: a sub-range
    // splitting the filters of several groups leaves holes. With dilation and
    // padding, the clipped selection can end in a hole between taps whose next
    // tap lies in the padding: the reads need not span the selection.
    ReadPattern read_pattern(const Params &params) const override {
        bool dilated = false, padded = false;
        for (std::int64_t v : params.get_ints("dilation", {1, 1})) dilated = dilated || v > 1;
        for (std::int64_t v : params.get_ints("padding", {0, 0, 0, 0})) padded = padded || v > 0;
        if (dilated && padded) return ReadPattern::subset;
        if (dilated || params.get_int("groups", 1) > 1) return ReadPattern::strided;
        for (std::int64_t v : params.get_ints("stride", {1, 1}))
            if (v > 1) return ReadPattern::strided;
        return ReadPattern::dense;
    }

    void reference(const RefContext &ctx) const override {
        const ConvGeometry geo = conv_geometry(ctx);
        if (ctx.fast()) return conv2d_fast(ctx, geo);
        const Window2d &win = geo.win;
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            const Coord n = i[0];
            const Coord g = geo.grouped ? i[1] : 0;
            const Coord k = geo.grouped ? g * geo.group_filters + i[2] : i[1];
            const Coord p = geo.grouped ? i[3] : i[2], q = geo.grouped ? i[4] : i[3];
            double acc = geo.has_bias ? ctx.read(2, ZPoint{k}) : 0.0;
            for (Coord c = 0; c < geo.group_channels; ++c)
                for (Coord r = 0; r < win.r; ++r)
                    for (Coord s = 0; s < win.s; ++s) {
                        const Coord h = p * win.stride_h - win.pad_top + r * win.dilation_h;
                        const Coord wc = q * win.stride_w - win.pad_left + s * win.dilation_w;
                        // Padding is zero; the filter tap is read all the same.
                        const bool inside = h >= 0 && h < geo.xs[2] && wc >= 0 && wc < geo.xs[3];
                        const double xv = inside ? ctx.read(0, ZPoint{n, g * geo.group_channels + c, h, wc}) : 0.0;
                        acc += xv * ctx.read(1, ZPoint{k, c, r, s});
                    }
            ctx.write(0, ZPoint{n, k, p, q}, acc);
        });
    }
};

// ---- pools --------------------------------------------------------------------------

class Pool2dOp : public OpDef {
public:
    std::string_view category() const override { return "convolution"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "input [N, C, H, W]"}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "output [N, C, P, Q]"}}; }
    std::vector<ParamSpec> params() const override {
        return {required_param("kernel", ParamKind::int_list, "window [R, S], each at least 1"),
                ints_param("stride", {}, "[stride_h, stride_w]; empty (the default) means the kernel"),
                ints_param("padding", {0, 0, 0, 0},
                           "padding [top, left, bottom, right]; each below the kernel extent along its axis")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const std::string k(kind());
        const OperandType &x = *find_operand(inputs, "x");
        if (auto e = check_nchw(k, "x", x)) return unexpected(*e);
        const std::vector<std::int64_t> kernel = params.get_ints("kernel", {});
        if (auto e = check_pair(k, "kernel", kernel, 2, 1)) return unexpected(*e);
        const std::vector<std::int64_t> stride = params.get_ints("stride", {});
        if (!stride.empty())
            if (auto e = check_pair(k, "stride", stride, 2, 1)) return unexpected(*e);
        const std::vector<std::int64_t> padding = params.get_ints("padding", {0, 0, 0, 0});
        if (auto e = check_pair(k, "padding", padding, 4, 0)) return unexpected(*e);
        // A window entirely inside the padding would have no element to pool.
        for (size_t a = 0; a < 4; ++a)
            if (padding[a] >= kernel[a % 2])
                return unexpected(derivation_error("bad-param", param_field("padding"),
                                                   k + ": padding " + param_to_string(ParamValue(padding)) +
                                                       " must be smaller than the kernel " +
                                                       param_to_string(ParamValue(kernel)) + " along each axis"));
        const Window2d win = window_from(params, kernel[0], kernel[1], kernel);
        auto pq = output_extent(k, win, x.shape);
        if (!pq) return unexpected(pq.error());
        const ZPoint y_shape{x.shape[0], x.shape[1], pq->first, pq->second};
        ProjectionBuilder px(4);
        px.follow(0).follow(1);
        px.scaled(2, win.stride_h, -win.pad_top, win.r);
        px.scaled(3, win.stride_w, -win.pad_left, win.s);
        return single_output(x.dtype, y_shape, ZRange::of_shape(y_shape), {port_projection("x", px.build(), true)});
    }

    // Holes appear only between windows, when a stride exceeds the kernel.
    ReadPattern read_pattern(const Params &params) const override {
        const std::vector<std::int64_t> kernel = params.get_ints("kernel", {1, 1});
        const std::vector<std::int64_t> stride = params.get_ints("stride", {});
        for (size_t a = 0; a < stride.size() && a < kernel.size(); ++a)
            if (stride[a] > kernel[a]) return ReadPattern::strided;
        return ReadPattern::dense;
    }

protected:
    // Calls f(value) for each element of x inside the window of point i = (n, c, p, q).
    template <typename F>
    void for_each_in_window(const RefContext &ctx, const ZPoint &i, F &&f) const {
        const ZPoint &xs = ctx.input_shape(0);
        const std::vector<std::int64_t> kernel = ctx.params.get_ints("kernel", {1, 1});
        const Window2d win = window_from(ctx.params, kernel.at(0), kernel.at(1), kernel);
        for (Coord r = 0; r < win.r; ++r)
            for (Coord s = 0; s < win.s; ++s) {
                const Coord h = i[2] * win.stride_h - win.pad_top + r;
                const Coord w = i[3] * win.stride_w - win.pad_left + s;
                if (h >= 0 && h < xs[2] && w >= 0 && w < xs[3]) f(ctx.read(0, ZPoint{i[0], i[1], h, w}));
            }
    }
};

class MaxPool2dOp final : public Pool2dOp {
public:
    std::string_view kind() const override { return "max_pool2d"; }
    std::string_view summary() const override { return "Maximum over each R×S window of NCHW x"; }
    // R·S − 1 comparisons per output point.
    double flops_per_point(const Params &params, const Derivation &) const override {
        const std::vector<std::int64_t> kernel = params.get_ints("kernel", {1, 1});
        return static_cast<double>(kernel.at(0) * kernel.at(1) - 1);
    }
    std::optional<ReductionMonoid> monoid(const Params &) const override { return max_monoid(); }

    void reference(const RefContext &ctx) const override {
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            double m = -std::numeric_limits<double>::infinity();
            // NaN propagates, as in the frameworks' max pooling.
            for_each_in_window(ctx, i, [&](double v) {
                if (std::isnan(v) || v > m) m = std::isnan(m) ? m : v;
            });
            ctx.write(0, i, m);
        });
    }
};

class AvgPool2dOp final : public Pool2dOp {
public:
    std::string_view kind() const override { return "avg_pool2d"; }
    std::string_view summary() const override { return "Mean over each R×S window of NCHW x"; }
    std::vector<ParamSpec> params() const override {
        std::vector<ParamSpec> p = Pool2dOp::params();
        p.push_back(bool_param("count_include_pad", false,
                               "divide by R·S (padding counted as zeros) instead of the number of real elements"));
        return p;
    }
    // R·S − 1 additions and one division per output point.
    double flops_per_point(const Params &params, const Derivation &) const override {
        const std::vector<std::int64_t> kernel = params.get_ints("kernel", {1, 1});
        return static_cast<double>(kernel.at(0) * kernel.at(1));
    }
    // (n, Σx); with count_include_pad the padded zeros are lifted too.
    std::optional<ReductionMonoid> monoid(const Params &) const override { return mean_monoid(); }

    void reference(const RefContext &ctx) const override {
        const bool include_pad = ctx.params.get_bool("count_include_pad", false);
        const std::vector<std::int64_t> kernel = ctx.params.get_ints("kernel", {1, 1});
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            double sum = 0;
            Coord count = 0;
            for_each_in_window(ctx, i, [&](double v) {
                sum += v;
                ++count;
            });
            const Coord divisor = include_pad ? kernel.at(0) * kernel.at(1) : count;
            ctx.write(0, i, sum / static_cast<double>(divisor));
        });
    }
};

}  // namespace

void register_convolution_ops(OpLibrary &lib) {
    lib.add(std::make_unique<Conv2dOp>());
    lib.add(std::make_unique<MaxPool2dOp>());
    lib.add(std::make_unique<AvgPool2dOp>());
}

}  // namespace tapestry
