// CUDA kernel factories of the row family (runtime/cuda/kernel.h): softmax,
// layernorm, rmsnorm, batchnorm, reduce_sum/mean/max, max_pool2d, avg_pool2d and
// attention. Each reads its spec once — which dims are rows, which are reduced,
// where a shard's part of a row starts — into the launch arguments of
// kernels_rows.cu (kernel_args.h); enqueue only checks the views and launches.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/op_util.h"
#include "runtime/cuda/kernel_args.h"

namespace tapestry::cuda {

namespace {

using Made = Expected<std::unique_ptr<Kernel>, std::string>;

Made refuse(const KernelSpec &spec, const std::string &why) {
    return unexpected(std::string(spec.def->kind()) + ": " + why);
}

bool float_type(DType t) {
    return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

DType x_dtype(const KernelSpec &spec) {
    return spec.operands.at(0).operands.at(0).dtype;
}

std::string too_many_dims(const char *what) {
    return std::string(what) + " has more than " + std::to_string(kMaxLoopRank) + " dims after merging";
}

// A factory that gives the no-op kernel for an empty index range and refuses
// dtypes other than f32, bf16 and f16 for x.
KernelFactory factory(std::string kind, Made (*make)(const KernelSpec &)) {
    KernelFactory f;
    f.kind = std::move(kind);
    f.make = [make](const KernelSpec &spec, Context &) -> Made {
        if (spec.index_range.empty()) return std::unique_ptr<Kernel>(new NoopKernel());
        if (!float_type(x_dtype(spec)))
            return refuse(spec,
                          "unsupported dtype " + std::string(dtype_name(x_dtype(spec))) + " (f32, bf16 and f16 are)");
        return make(spec);
    };
    return f;
}

// ---- rows: softmax, layernorm, rmsnorm, reductions ---------------------------------------

Status run_rows(const RowArgs &a, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    const bool norm = a.kind == RowKind::layernorm || a.kind == RowKind::rmsnorm;
    const std::byte *gamma = norm && a.has_gamma ? in[1].data : nullptr;
    const std::byte *beta = norm && a.has_beta ? in[a.has_gamma ? 2 : 1].data : nullptr;
    return launch_rows(a, in[0].data, out[0].data, gamma, beta, stream);
}

// x's dims `normalized` (ascending) form the row: read whole from x, while y — and
// gamma/beta, shaped like the normalized dims — hold the shard's part of it.
Made make_normalizing(const KernelSpec &spec, RowKind kind, const std::vector<int> &normalized, bool has_gamma,
                      bool has_beta, double epsilon) {
    const ViewLayouts views(spec);
    const ZPoint &xs = spec.input_shapes.at(0), &ys = spec.output_shapes.at(0);
    const auto &xst = views.input(0), &yst = views.output(0);
    const std::vector<std::int64_t> none(static_cast<size_t>(xs.rank()), 0);
    const auto &gst = has_gamma ? views.input(1) : none;
    const auto &bst = has_beta ? views.input(has_gamma ? 2 : 1) : none;
    const OperandProjection &px = *spec.derivation.signature.input("x", 0);
    const OperandProjection &py = spec.derivation.signature.outputs.at(0).operands.at(0);
    const ZPoint x_start =
        op_util::relative_selection(px, spec.index_range, spec.operands.at(0).operands.at(0).shape).start();
    const ZPoint y_start =
        op_util::relative_selection(py, spec.index_range, spec.derivation.outputs.at(0).operands.at(0).shape).start();

    RowArgs a;
    a.kind = kind;
    a.dtype = x_dtype(spec);
    a.has_gamma = has_gamma;
    a.has_beta = has_beta;
    a.epsilon = static_cast<float>(epsilon);
    LoopBuilder<2> outer;
    LoopBuilder<1> row;
    LoopBuilder<4> part;
    for (int d = 0; d < xs.rank(); ++d) {
        const auto u = static_cast<size_t>(d);
        const auto it = std::find(normalized.begin(), normalized.end(), d);
        if (it == normalized.end()) {
            outer.add(ys[d], {xst[u], yst[u]});
            continue;
        }
        // gamma and beta have one dim per normalized dim.
        const auto k = static_cast<size_t>(it - normalized.begin());
        row.add(xs[d], {xst[u]});
        part.add(ys[d], {xst[u], yst[u], has_gamma ? gst[k] : 0, has_beta ? bst[k] : 0});
        a.part_x += (y_start[d] - x_start[d]) * xst[u];
    }
    const auto o = outer.build();
    const auto r = row.build();
    const auto p = part.build();
    if (!o || !r || !p) return refuse(spec, too_many_dims("the view"));
    a.outer = *o;
    a.row = *r;
    a.part = *p;
    const bool whole = a.part.count() == a.row.count();
    return launch_kernel<RowArgs>(spec, a, run_rows,
                                  std::string(spec.def->kind()) + ": " + std::string(dtype_name(a.dtype)) + ", " +
                                      std::to_string(a.outer.count()) + " rows of " + std::to_string(a.row.count()) +
                                      (whole ? "" : " (a part of each row written)"));
}

int axis_param(const KernelSpec &spec, int rank) {
    return *op_util::normalize_axis(spec.params.get_int("axis", -1), rank);
}

Made make_softmax(const KernelSpec &spec) {
    const int axis = axis_param(spec, spec.input_shapes.at(0).rank());
    return make_normalizing(spec, RowKind::softmax, {axis}, false, false, 0);
}

Made make_norm(const KernelSpec &spec, bool rms) {
    const int rank = spec.input_shapes.at(0).rank();
    std::vector<int> normalized;
    for (int d = axis_param(spec, rank); d < rank; ++d) normalized.push_back(d);
    const bool has_gamma = spec.derivation.signature.input("gamma", 0) != nullptr;
    const bool has_beta = !rms && spec.derivation.signature.input("beta", 0) != nullptr;
    const double eps = spec.params.get_float("epsilon", rms ? 1e-6 : 1e-5);
    return make_normalizing(spec, rms ? RowKind::rmsnorm : RowKind::layernorm, normalized, has_gamma, has_beta, eps);
}

Made make_layernorm(const KernelSpec &spec) {
    return make_norm(spec, false);
}
Made make_rmsnorm(const KernelSpec &spec) {
    return make_norm(spec, true);
}

// A reduction: the kept dims of x are the rows (y's dims), the reduced dims the row.
Made make_reduce(const KernelSpec &spec, RowKind kind) {
    const ViewLayouts views(spec);
    const ZPoint &xs = spec.input_shapes.at(0);
    const auto &xst = views.input(0), &yst = views.output(0);
    const auto axes =
        op_util::checked_axes(std::string(spec.def->kind()), "axes", spec.params.get_ints("axes", {}), xs.rank());
    if (!axes) return refuse(spec, axes.error().message);
    const bool keep = spec.params.get_bool("keepdims", true);
    RowArgs a;
    a.kind = kind;
    a.dtype = x_dtype(spec);
    LoopBuilder<2> outer;
    LoopBuilder<1> row;
    size_t j = 0;  // y's dim
    for (int d = 0; d < xs.rank(); ++d) {
        const auto u = static_cast<size_t>(d);
        if (std::find(axes->begin(), axes->end(), d) != axes->end()) {
            row.add(xs[d], {xst[u]});
            if (keep) ++j;
            continue;
        }
        outer.add(spec.output_shapes.at(0)[static_cast<int>(j)], {xst[u], yst[j]});
        ++j;
    }
    const auto o = outer.build();
    const auto r = row.build();
    if (!o || !r) return refuse(spec, too_many_dims("the view"));
    a.outer = *o;
    a.row = *r;
    return launch_kernel<RowArgs>(spec, a, run_rows,
                                  std::string(spec.def->kind()) + ": " + std::string(dtype_name(a.dtype)) + ", " +
                                      std::to_string(a.outer.count()) + " outputs of " + std::to_string(a.row.count()) +
                                      " elements");
}

Made make_reduce_sum(const KernelSpec &spec) {
    return make_reduce(spec, RowKind::reduce_sum);
}
Made make_reduce_mean(const KernelSpec &spec) {
    return make_reduce(spec, RowKind::reduce_mean);
}
Made make_reduce_max(const KernelSpec &spec) {
    return make_reduce(spec, RowKind::reduce_max);
}

// ---- batchnorm ------------------------------------------------------------------------------

Status run_batchnorm(const BatchNormArgs &a, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    const std::byte *params[4] = {in[1].data, in[2].data, in[3].data, in[4].data};
    return launch_batchnorm(a, in[0].data, out[0].data, params, stream);
}

Made make_batchnorm(const KernelSpec &spec) {
    const ViewLayouts views(spec);
    const ZPoint &ys = spec.output_shapes.at(0);
    const auto &xst = views.input(0), &yst = views.output(0);
    BatchNormArgs a;
    a.dtype = x_dtype(spec);
    a.epsilon = static_cast<float>(spec.params.get_float("epsilon", 1e-5));
    LoopBuilder<3> all;
    for (int d = 0; d < ys.rank(); ++d)
        all.add(ys[d], {xst[static_cast<size_t>(d)], yst[static_cast<size_t>(d)], d == 1 ? 1 : 0});
    const auto l = all.build();
    if (!l) return refuse(spec, too_many_dims("the view"));
    a.all = *l;
    for (size_t i = 0; i < 4; ++i) a.param_stride[i] = views.input(i + 1).empty() ? 1 : views.input(i + 1).at(0);
    return launch_kernel<BatchNormArgs>(spec, a, run_batchnorm,
                                        "batchnorm: " + std::string(dtype_name(a.dtype)) + ", one pass");
}

// ---- pooling ---------------------------------------------------------------------------------

Status run_pool(const PoolArgs &a, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    return launch_pool(a, in[0].data, out[0].data, stream);
}

Made make_pool(const KernelSpec &spec, bool max) {
    const ViewLayouts views(spec);
    const ZPoint &xs = spec.input_shapes.at(0), &ys = spec.output_shapes.at(0);
    const auto kernel = spec.params.get_ints("kernel", {1, 1});
    auto stride = spec.params.get_ints("stride", {});
    if (stride.empty()) stride = kernel;
    if (kernel.size() != 2 || stride.size() != 2 || xs.rank() != 4 || ys.rank() != 4)
        return refuse(spec, "expects NCHW views and two-entry kernel and stride");
    // The padding local to the shard: how far the unclipped image of the index
    // range reaches before the clipped x view.
    const OperandProjection &px = *spec.derivation.signature.input("x", 0);
    const ZRange image = px.projection.image(spec.index_range);
    const ZRange clipped = op_util::relative_selection(px, spec.index_range, spec.operands.at(0).operands.at(0).shape);
    PoolArgs a;
    a.max = max;
    a.count_include_pad = !max && spec.params.get_bool("count_include_pad", false);
    a.dtype = x_dtype(spec);
    a.n = ys[0];
    a.c = ys[1];
    a.p = ys[2];
    a.q = ys[3];
    a.h = xs[2];
    a.w = xs[3];
    for (size_t d = 0; d < 4; ++d) {
        a.x_stride[d] = views.input(0)[d];
        a.y_stride[d] = views.output(0)[d];
    }
    a.kernel_h = kernel[0];
    a.kernel_w = kernel[1];
    a.stride_h = stride[0];
    a.stride_w = stride[1];
    a.pad_h = clipped.extent(2) > 0 ? clipped.start()[2] - image.start()[2] : 0;
    a.pad_w = clipped.extent(3) > 0 ? clipped.start()[3] - image.start()[3] : 0;
    return launch_kernel<PoolArgs>(
        spec, a, run_pool,
        std::string(spec.def->kind()) + ": " + std::string(dtype_name(a.dtype)) + ", a thread per output");
}

Made make_max_pool(const KernelSpec &spec) {
    return make_pool(spec, true);
}
Made make_avg_pool(const KernelSpec &spec) {
    return make_pool(spec, false);
}

// ---- attention -------------------------------------------------------------------------------

Status run_attention(const AttentionArgs &a, std::span<const View> in, std::span<const View> out, cudaStream_t stream) {
    return launch_attention(a, in[0].data, in[1].data, in[2].data, a.has_mask ? in[3].data : nullptr, out[0].data,
                            stream);
}

// Index [B, H, Sq, Ev]: a shard cuts batches, heads, query rows or value columns;
// its views hold the heads it touches (q, k at h·E…, v, y at h·Ev + e0…).
Made make_attention(const KernelSpec &spec) {
    const ViewLayouts views(spec);
    const ZRange &r = spec.index_range;
    const std::int64_t heads = spec.params.get_int("heads", 1);
    const ZPoint &qshape = spec.operands.at(0).operands.at(0).shape;
    AttentionArgs a;
    a.dtype = x_dtype(spec);
    a.e = qshape[2] / heads;
    a.ev = spec.operands.at(2).operands.at(0).shape[2] / heads;
    a.keys = spec.operands.at(1).operands.at(0).shape[1];
    a.batches = r.extent(0);
    a.heads = r.extent(1);
    a.rows = r.extent(2);
    a.columns = r.extent(3);
    a.row0 = r.start()[2];
    a.causal = spec.params.get_bool("causal", false);
    a.has_mask = spec.derivation.signature.input("mask", 0) != nullptr;
    const double scale = spec.params.get_float("scale", 0.0);
    a.scale = static_cast<float>(scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(a.e)));
    for (size_t d = 0; d < 3; ++d) {
        a.q_stride[d] = views.input(0)[d];
        a.k_stride[d] = views.input(1)[d];
        a.v_stride[d] = views.input(2)[d];
        a.y_stride[d] = views.output(0)[d];
    }
    if (a.has_mask)
        for (size_t d = 0; d < 2; ++d) a.mask_stride[d] = views.input(3)[d];
    const std::string head = std::to_string(a.e) + (a.ev != a.e ? "/" + std::to_string(a.ev) : "");
    std::string note = "attention: " + std::string(dtype_name(a.dtype)) + ", head " + head + ", ";
    note += attention_flash_shape(a)
                ? "tiled tensor-core kernel (online softmax, 64×64 tiles) where the views are 16-byte aligned"
                : "a warp per query row (online softmax in f32)";
    return launch_kernel<AttentionArgs>(spec, a, run_attention, note);
}

}  // namespace

std::vector<KernelFactory> row_factories() {
    return {factory("softmax", make_softmax),       factory("layernorm", make_layernorm),
            factory("rmsnorm", make_rmsnorm),       factory("batchnorm", make_batchnorm),
            factory("reduce_sum", make_reduce_sum), factory("reduce_mean", make_reduce_mean),
            factory("reduce_max", make_reduce_max), factory("max_pool2d", make_max_pool),
            factory("avg_pool2d", make_avg_pool),   factory("attention", make_attention)};
}

}  // namespace tapestry::cuda
