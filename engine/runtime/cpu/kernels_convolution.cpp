// CPU kernels of the convolution family: conv2d (oneDNN convolution_forward with
// groups, dilation, bias and fused epilogues as post-ops) and max/avg pooling
// (oneDNN pooling_v2_forward). A shard gets the clipped input selection of its
// output rows/columns (its halo included); the padding it needs is local to the
// shard: the part of its unclipped image that the clipped selection cuts off.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "common/check.h"
#include "ops/op_util.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/conv_winograd.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {

namespace {

using dims = dnnl::memory::dims;

// ---- conv2d --------------------------------------------------------------------------

// The 4-D descriptor of an epilogue's extra operand as the destination sees it:
// each operand dim whose projection row equals a row of y's projection follows
// that destination dim; zero rows must have extent 1 (broadcast). `dst_dims` is
// the destination of one primitive run. Also returns the operand's stride along
// the destination's channel dim (to step it per group).
struct ExtraLayout {
    dnnl::memory::desc md;
    std::int64_t channel_stride = 0;
};

std::optional<ExtraLayout> extra_layout(const IndexProjection &py, const OperandProjection &pe, const ZPoint &shape,
                                        const Strides &strides, const dims &dst_dims, DType t) {
    const ZMatrix &ay = py.map().matrix(), &ae = pe.projection.map().matrix();
    if (pe.clipped || ae.cols() != ay.cols() || ae.rows() != shape.rank()) return std::nullopt;
    ZPoint md_shape = ZPoint::filled(4, 1);
    Strides md_strides(4, 0);
    std::array<bool, 4> used{};
    for (int r = 0; r < ae.rows(); ++r) {
        const std::vector<Coord> row = ae.row(r);
        if (std::all_of(row.begin(), row.end(), [](Coord v) { return v == 0; })) {
            if (shape[r] != 1) return std::nullopt;
            continue;
        }
        int match = -1;
        for (int j = 0; j < ay.rows() && match < 0; ++j)
            if (ay.row(j) == row && !used[static_cast<size_t>(j)]) match = j;
        if (match < 0) return std::nullopt;
        used[static_cast<size_t>(match)] = true;
        md_shape[match] = dst_dims[static_cast<size_t>(match)];
        md_strides[static_cast<size_t>(match)] = strides[static_cast<size_t>(r)];
    }
    ExtraLayout out;
    out.channel_stride = md_strides[1];
    for (int j = 0; j < 4; ++j)
        if (md_shape[j] == 1) md_strides[static_cast<size_t>(j)] = 0;
    auto md = make_md(md_shape, md_strides, t);
    if (!md) return std::nullopt;
    out.md = *md;
    return out;
}

class Conv2dKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        return dnnl_guard("conv2d", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<Conv2dKernel>(new Conv2dKernel());
            if (auto e = k->build(spec); !e) return unexpected(e.error());
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        for (size_t i = 0; i < in_strides_.size(); ++i)
            check_view(inputs[i], in_strides_[i], "conv2d: input view strides differ from the spec");
        check_view(outputs[0], out_strides_, "conv2d: output view strides differ from the spec");
        set_omp_threads(threads_);
        dnnl::stream &s = thread_stream();
        const size_t esz = static_cast<size_t>(dtype_bytes(dtype_));
        for (int g = 0; g < plan_.loops; ++g) {
            auto at = [&](const View &v, std::int64_t step) {
                return static_cast<void *>(v.data + static_cast<size_t>(g * step) * esz);
            };
            if (stage_src_) {
                src_view_.set_data_handle(at(inputs[0], step_x_));
                src_in_.execute(s, src_view_, args_.at(DNNL_ARG_SRC));
            } else if (!zero_src_) {
                args_.at(DNNL_ARG_SRC).set_data_handle(at(inputs[0], step_x_));
            }
            if (w_packed_.empty()) {
                args_.at(DNNL_ARG_WEIGHTS).set_data_handle(at(inputs[1], step_w_));
            } else if (inputs[1].data != constant_w_ || packed_from_ != constant_w_) {
                pack_weights(inputs[1].data);  // (loops == 1 on this path)
            }
            if (has_bias_) args_.at(DNNL_ARG_BIAS).set_data_handle(at(inputs[2], step_b_));
            if (!stage_dst_) args_.at(DNNL_ARG_DST).set_data_handle(at(outputs[0], step_y_));
            for (const Extra &e : extras_) args_.at(e.arg).set_data_handle(at(inputs[e.view], e.step));
            primitive_.execute(s, args_);
            if (stage_dst_) {
                dst_view_.set_data_handle(at(outputs[0], step_y_));
                dst_out_.execute(s, args_.at(DNNL_ARG_DST), dst_view_);
            }
        }
        s.wait();
    }
    std::size_t scratch_bytes() const override {
        return scratchpad_.size() + zeros_.size() * sizeof(float) + src_stage_.size() + dst_stage_.size() +
               w_packed_.size();
    }
    std::vector<std::string> notes() const override { return notes_; }

private:
    struct Extra {
        int arg;
        size_t view;
        std::int64_t step;
    };

    // The descriptors of one primitive run's operands, and its geometry.
    struct ConvDescs {
        dnnl::memory::desc src, w, dst, bias;
        std::int64_t n = 0, ic = 0, oc = 0, oh = 0, ow = 0, r = 0, s = 0;
        ZPoint x_shape;  // src's as the view has it (before staging)
        dims strides, dil, pl, pr;
    };

    Expected<bool, std::string> build(const KernelSpec &spec) {
        auto descs = describe_operands(spec);
        if (!descs) return unexpected(descs.error());
        ConvDescs &d = *descs;
        // Epilogues: extra operands as the destination sees them.
        const size_t own_inputs = has_bias_ ? 3 : 2;
        std::vector<dnnl::memory::desc> extra_mds(spec.input_shapes.size() - own_inputs);
        const IndexProjection &py = spec.derivation.signature.outputs.at(0).operands.at(0).projection;
        const dims dst_dims{d.n, d.oc, d.oh, d.ow};
        for (const Epilogue &e : spec.epilogues) {
            if (e.extra_input < 0) continue;
            const size_t view = own_inputs + static_cast<size_t>(e.extra_input);
            if (view >= spec.input_shapes.size()) return unexpected(std::string("epilogue operand missing"));
            auto lay = extra_layout(py, e.projection, spec.input_shapes[view], in_strides_[view], dst_dims, dtype_);
            if (!lay) return unexpected("epilogue '" + e.kind + "': its operand does not map onto the output");
            extra_mds[static_cast<size_t>(e.extra_input)] = lay->md;
            extra_steps_.push_back({static_cast<size_t>(e.extra_input), plan_.kg * lay->channel_stride});
        }
        auto post = make_post_ops(spec.epilogues, extra_mds);
        if (!post) return unexpected(post.error());
        dnnl::primitive_attr attr = make_attr();
        attr.set_post_ops(post->ops);

        dnnl::convolution_forward::primitive_desc pd(
            conv_desc(dnnl::algorithm::convolution_direct, d.src, d.w, d.dst, d), attr, cpu_engine());
        if (!zero_src_ && plan_.loops == 1 && !plan_.grouped && dtype_ == DType::f32 && post->binary_args.empty())
            choose_blocked_layouts(spec, attr, d, pd);
        stage_for_reference(attr, d, pd);
        primitive_ = dnnl::convolution_forward(pd);
        bind_arguments(pd, d, *post, extra_mds, own_inputs);
        return true;
    }

    // The operands' descriptors for the spec's views, and the per-group steps
    // through them; a shard that reads only padding reads zeros instead.
    Expected<ConvDescs, std::string> describe_operands(const KernelSpec &spec) {
        plan_ = conv_plan(spec);
        threads_ = spec.threads;
        dtype_ = spec.operands.at(0).operands.at(0).dtype;
        has_bias_ = spec.derivation.signature.input("bias", 0) != nullptr;
        for (size_t i = 0; i < spec.input_shapes.size(); ++i) in_strides_.push_back(spec_input_strides(spec, i));
        out_strides_ = spec_output_strides(spec, 0);
        const ZPoint &xv = spec.input_shapes.at(0), &wv = spec.input_shapes.at(1), &yv = spec.output_shapes.at(0);
        const Strides &xst = in_strides_[0], &wst = in_strides_[1];
        ConvDescs d;
        d.n = xv[0];
        d.ic = plan_.grouped ? plan_.cg * (plan_.one_grouped_primitive ? plan_.g_local : 1) : xv[1];
        d.oc = plan_.one_grouped_primitive ? plan_.g_local * plan_.kg : plan_.k_local;
        d.oh = yv[2];
        d.ow = yv[3];
        d.r = wv[2];
        d.s = wv[3];
        d.x_shape = ZPoint{d.n, d.ic, xv[2], xv[3]};
        // Per-group steps through the views (only used when loops > 1).
        step_x_ = plan_.cg * xst[1];
        step_w_ = plan_.kg * wst[0];
        step_y_ = plan_.kg * out_strides_[1];
        step_b_ = has_bias_ ? plan_.kg * in_strides_[2][0] : 0;

        // Source: the clipped selection, or zeros when the shard reads only padding.
        zero_src_ = plan_.ph.extent == 0 || plan_.pw.extent == 0;
        std::int64_t pad_t = plan_.ph.before, pad_b = plan_.ph.after, pad_l = plan_.pw.before, pad_r = plan_.pw.after;
        if (zero_src_) {
            // One zero row/column stands in for the empty selection; the padding
            // keeps the image's extent.
            const std::int64_t h = std::max<std::int64_t>(plan_.ph.extent, 1),
                               w = std::max<std::int64_t>(plan_.pw.extent, 1);
            if (plan_.ph.extent == 0) {
                pad_t = 0;
                pad_b = plan_.ph.after - 1;
            }
            if (plan_.pw.extent == 0) {
                pad_l = 0;
                pad_r = plan_.pw.after - 1;
            }
            zeros_.assign(static_cast<size_t>(d.n * d.ic * h * w), 0.0f);
            if (dtype_ != DType::f32) return unexpected(std::string("a shard reading only padding needs f32"));
            auto md = dense_md(ZPoint{d.n, d.ic, h, w}, dtype_);
            if (!md) return unexpected(md.error());
            d.src = *md;
        } else {
            auto md = make_md(d.x_shape, Strides{xst[0], xst[1], xst[2], xst[3]}, dtype_);
            if (!md) return unexpected(md.error());
            d.src = *md;
        }
        if (plan_.one_grouped_primitive) {
            const auto t = dnnl_dtype(dtype_);
            if (!t) return unexpected("no oneDNN type for " + std::string(dtype_name(dtype_)));
            d.w = dnnl::memory::desc(dims{plan_.g_local, plan_.kg, plan_.cg, d.r, d.s}, *t,
                                     dims{plan_.kg * wst[0], wst[0], wst[1], wst[2], wst[3]});
        } else {
            auto md = make_md(ZPoint{d.oc, d.ic, d.r, d.s}, Strides{wst[0], wst[1], wst[2], wst[3]}, dtype_);
            if (!md) return unexpected(md.error());
            d.w = *md;
        }
        auto dst_md = make_md(ZPoint{d.n, d.oc, d.oh, d.ow}, out_strides_, dtype_);
        if (!dst_md) return unexpected(dst_md.error());
        d.dst = *dst_md;
        if (has_bias_) {
            auto md = make_md(ZPoint{d.oc}, Strides{in_strides_[2][0]}, dtype_);
            if (!md) return unexpected(md.error());
            d.bias = *md;
        }
        d.strides = {plan_.stride_h, plan_.stride_w};
        d.dil = {plan_.dil_h - 1, plan_.dil_w - 1};
        d.pl = {pad_t, pad_l};
        d.pr = {pad_b, pad_r};
        return d;
    }

    // An inference convolution of algorithm `alg` over these descriptors, with d's
    // bias (if any) and geometry.
    dnnl::convolution_forward::desc conv_desc(dnnl::algorithm alg, const dnnl::memory::desc &src,
                                              const dnnl::memory::desc &w, const dnnl::memory::desc &dst,
                                              const ConvDescs &d) const {
        const auto prop = dnnl::prop_kind::forward_inference;
        return has_bias_ ? dnnl::convolution_forward::desc(prop, alg, src, w, d.bias, dst, d.strides, d.dil, d.pl, d.pr)
                         : dnnl::convolution_forward::desc(prop, alg, src, w, dst, d.strides, d.dil, d.pl, d.pr);
    }

    // Lets oneDNN choose blocked layouts for src, weights and dst (its direct
    // convolutions want them): the views are reordered in and out around the
    // primitive, and constant weights reordered once, now. Winograd F(4×4, 3×3)
    // where oneDNN has it (KernelSpec::winograd). Keeps `pd` where oneDNN offers
    // only its reference or GEMM convolution.
    void choose_blocked_layouts(const KernelSpec &spec, const dnnl::primitive_attr &attr, ConvDescs &d,
                                dnnl::convolution_forward::primitive_desc &pd) {
        const auto &eng = cpu_engine();
        const auto blocked = [](const dnnl::memory::desc &md) {
            return dnnl::memory::desc(md.dims(), md.data_type(), dnnl::memory::format_tag::any);
        };
        const auto blocked_desc = [&](dnnl::algorithm alg) {
            return conv_desc(alg, blocked(d.src), blocked(d.w), blocked(d.dst), d);
        };
        dnnl::convolution_forward::primitive_desc pd3(blocked_desc(dnnl::algorithm::convolution_direct), attr,
                                                      cpu_engine(), true);
        if (spec.winograd && cpu_isa().avx512 && d.r == 3 && d.s == 3 && plan_.stride_h == 1 && plan_.stride_w == 1 &&
            plan_.dil_h == 1 && plan_.dil_w == 1 && d.ic % 16 == 0 && d.oc % 16 == 0) {
            dnnl::convolution_forward::primitive_desc pdw(blocked_desc(dnnl::algorithm::convolution_winograd), attr,
                                                          cpu_engine(), true);
            if (pdw && std::string(pdw.impl_info_str()).find("wino") != std::string::npos)
                pd3 = pdw;
            else
                notes_.push_back("oneDNN's Winograd does not take this convolution: direct convolution");
        }
        if (!pd3 || std::string(pd3.impl_info_str()).rfind("ref", 0) == 0 ||
            std::string(pd3.impl_info_str()).find("gemm") != std::string::npos)
            return;
        if (pd3.src_desc() != d.src) {
            stage_src_ = true;
            src_stage_.resize(pd3.src_desc().get_size());
            src_view_ = dnnl::memory(d.src, eng, DNNL_MEMORY_NONE);
            src_in_ = dnnl::reorder(src_view_, dnnl::memory(pd3.src_desc(), eng, src_stage_.data()));
            d.src = pd3.src_desc();
        }
        if (pd3.dst_desc() != d.dst) {
            stage_dst_ = true;
            dst_stage_.resize(pd3.dst_desc().get_size());
            dst_view_ = dnnl::memory(d.dst, eng, DNNL_MEMORY_NONE);
            dst_out_ = dnnl::reorder(dnnl::memory(pd3.dst_desc(), eng, dst_stage_.data()), dst_view_);
            d.dst = pd3.dst_desc();
        }
        if (pd3.weights_desc() != d.w) {
            w_packed_.resize(pd3.weights_desc().get_size());
            w_source_ = dnnl::memory(d.w, eng, DNNL_MEMORY_NONE);
            w_packed_mem_ = dnnl::memory(pd3.weights_desc(), eng, w_packed_.data());
            w_reorder_ = dnnl::reorder(w_source_, w_packed_mem_);
            constant_w_ = spec.constant_inputs.size() > 1 ? spec.constant_inputs[1] : nullptr;
            if (constant_w_) pack_weights(constant_w_);
            d.w = pd3.weights_desc();
        }
        pd = pd3;
    }

    // Strided (sharded) views often leave oneDNN only its reference convolution;
    // staging them through dense buffers (one reorder in, one out) is far cheaper
    // than that.
    void stage_for_reference(const dnnl::primitive_attr &attr, ConvDescs &d,
                             dnnl::convolution_forward::primitive_desc &pd) {
        const auto &eng = cpu_engine();
        const bool src_dense = zero_src_ || d.src == dense_md(d.x_shape, dtype_).value();
        const dnnl::memory::desc dense_dst = dense_md(ZPoint{d.n, d.oc, d.oh, d.ow}, dtype_).value();
        const bool dst_dense = d.dst == dense_dst;
        if (stage_src_ || stage_dst_ || !w_packed_.empty() || std::string(pd.impl_info_str()).rfind("ref", 0) != 0 ||
            (src_dense && dst_dense))
            return;
        const dnnl::memory::desc s2 = src_dense ? d.src : dense_md(d.x_shape, dtype_).value();
        dnnl::convolution_forward::primitive_desc pd2(
            conv_desc(dnnl::algorithm::convolution_direct, s2, d.w, dense_dst, d), attr, cpu_engine(), true);
        if (!pd2 || std::string(pd2.impl_info_str()).rfind("ref", 0) == 0) return;
        stage_src_ = !src_dense;
        stage_dst_ = !dst_dense;
        if (stage_src_) {
            src_stage_.resize(s2.get_size());
            src_view_ = dnnl::memory(d.src, eng, DNNL_MEMORY_NONE);
            src_in_ = dnnl::reorder(src_view_, dnnl::memory(s2, eng, src_stage_.data()));
            d.src = s2;
        }
        if (stage_dst_) {
            dst_stage_.resize(dense_dst.get_size());
            dst_view_ = dnnl::memory(d.dst, eng, DNNL_MEMORY_NONE);
            dst_out_ = dnnl::reorder(dnnl::memory(dense_dst, eng, dst_stage_.data()), dst_view_);
            d.dst = dense_dst;
        }
        pd = pd2;
    }

    // The execute arguments: memory objects over the staging buffers, or without
    // data where run() points them at the views.
    void bind_arguments(const dnnl::convolution_forward::primitive_desc &pd, const ConvDescs &d, const PostOpPlan &post,
                        const std::vector<dnnl::memory::desc> &extra_mds, size_t own_inputs) {
        const auto &eng = cpu_engine();
        args_[DNNL_ARG_SRC] = dnnl::memory(d.src, eng,
                                           zero_src_    ? static_cast<void *>(zeros_.data())
                                           : stage_src_ ? static_cast<void *>(src_stage_.data())
                                                        : DNNL_MEMORY_NONE);
        args_[DNNL_ARG_WEIGHTS] =
            dnnl::memory(d.w, eng, w_packed_.empty() ? DNNL_MEMORY_NONE : static_cast<void *>(w_packed_.data()));
        if (has_bias_) args_[DNNL_ARG_BIAS] = dnnl::memory(d.bias, eng, DNNL_MEMORY_NONE);
        args_[DNNL_ARG_DST] =
            dnnl::memory(d.dst, eng, stage_dst_ ? static_cast<void *>(dst_stage_.data()) : DNNL_MEMORY_NONE);
        for (const auto &[post_index, extra] : post.binary_args) {
            const int arg = post_op_arg(post_index);
            args_[arg] = dnnl::memory(extra_mds[static_cast<size_t>(extra)], eng, DNNL_MEMORY_NONE);
            std::int64_t step = 0;
            for (const auto &[e, st] : extra_steps_)
                if (static_cast<int>(e) == extra) step = st;
            extras_.push_back({arg, own_inputs + static_cast<size_t>(extra), step});
        }
        const dnnl::memory::desc sp = pd.scratchpad_desc();
        scratchpad_.resize(sp.get_size());
        args_[DNNL_ARG_SCRATCHPAD] = dnnl::memory(sp, eng, scratchpad_.empty() ? DNNL_MEMORY_NONE : scratchpad_.data());
    }

    ConvPlan plan_;
    std::vector<std::string> notes_;
    int threads_ = 1;
    DType dtype_ = DType::f32;
    bool has_bias_ = false, zero_src_ = false;
    std::vector<Strides> in_strides_;
    Strides out_strides_;
    std::int64_t step_x_ = 0, step_w_ = 0, step_y_ = 0, step_b_ = 0;
    std::vector<std::pair<size_t, std::int64_t>> extra_steps_;
    std::vector<Extra> extras_;
    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::vector<std::uint8_t> scratchpad_;
    std::vector<float> zeros_;
    // Reorders the weights (at `from`) into the layout the primitive chose.
    void pack_weights(const std::byte *from) {
        w_source_.set_data_handle(const_cast<std::byte *>(from));
        dnnl::stream &s = thread_stream();
        w_reorder_.execute(s, w_source_, w_packed_mem_);
        s.wait();
        packed_from_ = from;
    }
    // Weights in the primitive's layout (empty when read in place), and which bytes
    // they were reordered from (constant_w_: the constant parameter's own).
    std::vector<std::uint8_t> w_packed_;
    dnnl::memory w_source_, w_packed_mem_;
    dnnl::reorder w_reorder_;
    const std::byte *constant_w_ = nullptr, *packed_from_ = nullptr;
    // Staging of strided views (and blocked layouts) through buffers (see build()).
    bool stage_src_ = false, stage_dst_ = false;
    std::vector<std::uint8_t> src_stage_, dst_stage_;
    dnnl::memory src_view_, dst_view_;
    dnnl::reorder src_in_, dst_out_;
};

// Whether conv2d can take `e` as a post-op: a supported eltwise, or a binary
// whose operand maps onto the output; decided by building the primitive.
bool conv_can_fuse(const KernelSpec &spec, const Epilogue &e) {
    if (!epilogue_supported(e) || spec.epilogues.size() >= 8) return false;
    if (spec.operands.at(0).operands.at(0).dtype != DType::f32) return false;
    KernelSpec trial = spec;
    trial.epilogues.push_back(e);
    const size_t own = spec.derivation.signature.input("bias", 0) ? 3 : 2;
    if (e.extra_input >= 0) {
        const size_t view = own + static_cast<size_t>(e.extra_input);
        if (e.projection.clipped) return false;
        // The operand's view as the executor would cut it: the image of the index
        // range. The projection must be in conv2d's index space (extra_layout maps it
        // row by row onto the output's); an elementwise consumer's projection is in the
        // output's coordinates, which differ from a grouped conv2d's index space (the
        // group is a dim of its own): not fusable then.
        if (e.projection.projection.index_rank() != spec.index_range.rank()) return false;
        const ZPoint shape = e.projection.projection.image(spec.index_range).shape();
        if (trial.input_shapes.size() <= view) {
            trial.input_shapes.resize(view + 1);
            trial.input_strides.resize(view + 1);
            trial.input_shapes[view] = shape;
            trial.input_strides[view] = {};
        }
    }
    return static_cast<bool>(Conv2dKernel::make(trial));
}

KernelFactory conv2d_factory() {
    KernelFactory f;
    f.kind = "conv2d";
    f.can_fuse = conv_can_fuse;
    f.tile_invariant = true;
    f.make = [](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop_kernel();
        // Winograd: oneDNN's own on AVX-512 (Conv2dKernel asks for it), ours below.
        if (spec.winograd && !cpu_isa().avx512 && winograd_refusal(spec).empty()) return make_winograd_conv(spec);
        return Conv2dKernel::make(spec);
    };
    return f;
}

// ---- pools ----------------------------------------------------------------------------

// Mean over the H×W plane of [N, C, H, W] into [N, C, 1, 1], for any strides (a
// channels-last input reads C contiguously in the inner loop).
class GlobalMeanKernel final : public Kernel {
public:
    GlobalMeanKernel(const ZPoint &in, const Strides &x_strides, const Strides &y_strides)
        : in_(in), x_strides_(x_strides), y_strides_(y_strides) {
        xs_ = x_strides.empty() ? dense_strides(in) : x_strides;
        const ZPoint out({in[0], in[1], 1, 1});
        ys_ = y_strides.empty() ? dense_strides(out) : y_strides;
    }
    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "global pool: input view strides differ from the spec");
        check_view(outputs[0], y_strides_, "global pool: output view strides differ from the spec");
        const float *x = inputs[0].f32();
        float *y = outputs[0].f32();
        const std::int64_t N = in_[0], C = in_[1], H = in_[2], W = in_[3];
        const float inv = 1.0f / static_cast<float>(H * W);
        std::vector<float> acc(static_cast<size_t>(C));
        for (std::int64_t n = 0; n < N; ++n) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (std::int64_t h = 0; h < H; ++h)
                for (std::int64_t w = 0; w < W; ++w) {
                    const float *p = x + n * xs_[0] + h * xs_[2] + w * xs_[3];
                    for (std::int64_t c = 0; c < C; ++c) acc[static_cast<size_t>(c)] += p[c * xs_[1]];
                }
            for (std::int64_t c = 0; c < C; ++c) y[n * ys_[0] + c * ys_[1]] = acc[static_cast<size_t>(c)] * inv;
        }
    }

private:
    static Strides dense_strides(const ZPoint &shape) {
        Strides s(static_cast<size_t>(shape.rank()), 1);
        for (int d = shape.rank() - 2; d >= 0; --d) s[static_cast<size_t>(d)] = s[static_cast<size_t>(d) + 1] * shape[d + 1];
        return s;
    }
    ZPoint in_;
    Strides x_strides_, y_strides_, xs_, ys_;
};

class Pool2dKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, bool max) {
        return dnnl_guard(max ? "max_pool2d" : "avg_pool2d", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<Pool2dKernel>(new Pool2dKernel());
            k->threads_ = spec.threads;
            k->x_strides_ = spec_input_strides(spec, 0);
            k->y_strides_ = spec_output_strides(spec, 0);
            const DType t = spec.operands.at(0).operands.at(0).dtype;
            auto xmd = make_md(spec.input_shapes.at(0), k->x_strides_, t);
            if (!xmd) return unexpected(xmd.error());
            auto ymd = make_md(spec.output_shapes.at(0), k->y_strides_, t);
            if (!ymd) return unexpected(ymd.error());
            const auto kernel = spec.params.get_ints("kernel", {1, 1});
            auto stride = spec.params.get_ints("stride", {});
            if (stride.empty()) stride = kernel;
            const OperandProjection &px = *spec.derivation.signature.input("x", 0);
            const ZPoint &xs = spec.operands.at(0).operands.at(0).shape;
            const LocalPadding ph = local_padding(px, spec.index_range, xs, 2);
            const LocalPadding pw = local_padding(px, spec.index_range, xs, 3);
            // A global average pool (the window is the whole unpadded plane, one output
            // point) is a mean over H and W. oneDNN 2.6 has no fast primitive for it on a
            // channels-last input (its pooling stages the whole input through an NCHW
            // copy, its reduction is the reference one), so f32 gets a plain strided loop.
            const ZPoint &in_shape = spec.input_shapes.at(0), &out_shape = spec.output_shapes.at(0);
            if (!max && t == DType::f32 && in_shape[2] == kernel.at(0) && in_shape[3] == kernel.at(1) &&
                out_shape[2] == 1 && out_shape[3] == 1 && ph.before == 0 && ph.after == 0 && pw.before == 0 &&
                pw.after == 0)
                return std::unique_ptr<Kernel>(new GlobalMeanKernel(in_shape, k->x_strides_, k->y_strides_));
            const auto alg =
                max ? dnnl::algorithm::pooling_max
                    : (spec.params.get_bool("count_include_pad", false) ? dnnl::algorithm::pooling_avg_include_padding
                                                                        : dnnl::algorithm::pooling_avg_exclude_padding);
            auto pool_pd = [&](const dnnl::memory::desc &x, const dnnl::memory::desc &y, bool allow_empty) {
                const dnnl::pooling_v2_forward::desc d(
                    dnnl::prop_kind::forward_inference, alg, x, y, dims{stride.at(0), stride.at(1)},
                    dims{kernel.at(0), kernel.at(1)}, dims{0, 0}, dims{ph.before, pw.before}, dims{ph.after, pw.after});
                return dnnl::pooling_v2_forward::primitive_desc(d, make_attr(), cpu_engine(), allow_empty);
            };
            dnnl::pooling_v2_forward::primitive_desc pd = pool_pd(*xmd, *ymd, false);
            const auto &eng = cpu_engine();
            // As for conv2d: strided views that leave only the reference pooling
            // are staged through dense buffers.
            const dnnl::memory::desc xd = dense_md(spec.input_shapes.at(0), t).value();
            const dnnl::memory::desc yd = dense_md(spec.output_shapes.at(0), t).value();
            if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0 && (*xmd != xd || *ymd != yd)) {
                auto pd2 = pool_pd(xd, yd, true);
                if (pd2 && std::string(pd2.impl_info_str()).rfind("ref", 0) != 0) {
                    if (*xmd != xd) {
                        k->x_stage_.resize(xd.get_size());
                        k->x_view_ = dnnl::memory(*xmd, eng, DNNL_MEMORY_NONE);
                        k->x_in_ = dnnl::reorder(k->x_view_, dnnl::memory(xd, eng, k->x_stage_.data()));
                        *xmd = xd;
                    }
                    if (*ymd != yd) {
                        k->y_stage_.resize(yd.get_size());
                        k->y_view_ = dnnl::memory(*ymd, eng, DNNL_MEMORY_NONE);
                        k->y_out_ = dnnl::reorder(dnnl::memory(yd, eng, k->y_stage_.data()), k->y_view_);
                        *ymd = yd;
                    }
                    pd = pd2;
                }
            }
            k->primitive_ = dnnl::pooling_v2_forward(pd);
            k->args_[DNNL_ARG_SRC] =
                dnnl::memory(*xmd, eng, k->x_stage_.empty() ? DNNL_MEMORY_NONE : k->x_stage_.data());
            k->args_[DNNL_ARG_DST] =
                dnnl::memory(*ymd, eng, k->y_stage_.empty() ? DNNL_MEMORY_NONE : k->y_stage_.data());
            const dnnl::memory::desc sp = pd.scratchpad_desc();
            k->scratchpad_.resize(sp.get_size());
            k->args_[DNNL_ARG_SCRATCHPAD] =
                dnnl::memory(sp, eng, k->scratchpad_.empty() ? DNNL_MEMORY_NONE : k->scratchpad_.data());
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "pool: input view strides differ from the spec");
        check_view(outputs[0], y_strides_, "pool: output view strides differ from the spec");
        set_omp_threads(threads_);
        dnnl::stream &s = thread_stream();
        if (x_stage_.empty()) {
            args_.at(DNNL_ARG_SRC).set_data_handle(static_cast<void *>(inputs[0].data));
        } else {
            x_view_.set_data_handle(static_cast<void *>(inputs[0].data));
            x_in_.execute(s, x_view_, args_.at(DNNL_ARG_SRC));
        }
        if (y_stage_.empty()) args_.at(DNNL_ARG_DST).set_data_handle(static_cast<void *>(outputs[0].data));
        primitive_.execute(s, args_);
        if (!y_stage_.empty()) {
            y_view_.set_data_handle(static_cast<void *>(outputs[0].data));
            y_out_.execute(s, args_.at(DNNL_ARG_DST), y_view_);
        }
        s.wait();
    }
    std::size_t scratch_bytes() const override { return scratchpad_.size() + x_stage_.size() + y_stage_.size(); }

private:
    std::vector<std::uint8_t> x_stage_, y_stage_;
    dnnl::memory x_view_, y_view_;
    dnnl::reorder x_in_, y_out_;
    int threads_ = 1;
    Strides x_strides_, y_strides_;
    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::vector<std::uint8_t> scratchpad_;
};

KernelFactory pool_factory(bool max) {
    KernelFactory f;
    f.kind = max ? "max_pool2d" : "avg_pool2d";
    f.tile_invariant = true;
    f.can_fuse = never_fuse;
    f.make = [max](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop_kernel();
        return Pool2dKernel::make(spec, max);
    };
    return f;
}

}  // namespace

void register_kernels_convolution(std::vector<KernelFactory> &out) {
    out.push_back(conv2d_factory());
    out.push_back(pool_factory(true));
    out.push_back(pool_factory(false));
}

}  // namespace tapestry::cpu
