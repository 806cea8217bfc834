// CPU kernels of matmul and linear: one oneDNN matmul primitive per kernel,
// reading and writing strided views in place, with bias and fused epilogues
// (activations, residual add/mul/sub/div) as post-ops. partial_matmul runs one
// such matmul per block of k, on sub-views of its strided views.
#include <algorithm>
#include <map>
#include <numeric>

#include "ops/library.h"
#include "runtime/cpu/dnnl_util.h"

namespace tapestry::cpu {
namespace {

using dims = dnnl::memory::dims;

// A view's shape and strides, right-aligned to `rank` with leading size-1 dims.
struct Box {
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;
};

Box aligned(const ZPoint &shape, const std::vector<std::int64_t> &strides, int rank) {
    Box b;
    b.shape.assign(static_cast<size_t>(rank), 1);
    b.strides.assign(static_cast<size_t>(rank), 0);
    const int own = shape.rank();
    for (int d = 0; d < own; ++d) {
        b.shape[static_cast<size_t>(rank - own + d)] = shape[d];
        b.strides[static_cast<size_t>(rank - own + d)] = strides[static_cast<size_t>(d)];
    }
    return b;
}

// Merges dims [0, lead) of a box into one dim, if its elements there are evenly
// strided. A box whose lead dims are all 1 merges to size 1.
std::optional<Box> collapse(const Box &b, int lead) {
    Box out;
    std::int64_t size = 1;
    std::int64_t stride = 1;
    bool first = true;
    for (int d = lead - 1; d >= 0; --d) {
        const auto k = static_cast<size_t>(d);
        if (b.shape[k] == 1) continue;
        if (first) {
            stride = b.strides[k];
            first = false;
        } else if (b.strides[k] != stride * size) {
            return std::nullopt;  // not evenly strided
        }
        size *= b.shape[k];
    }
    // The merged dim: the product of the sizes, the stride of the innermost non-1 dim.
    out.shape.push_back(size);
    out.strides.push_back(first ? 1 : stride);
    for (size_t k = static_cast<size_t>(lead); k < b.shape.size(); ++k) {
        out.shape.push_back(b.shape[k]);
        out.strides.push_back(b.strides[k]);
    }
    return out;
}

Expected<dnnl::memory::desc, std::string> md_of(const Box &b, DType t) {
    return make_md(ZPoint(b.shape), b.strides, t);
}

size_t own_input_count(const KernelSpec &spec) {
    size_t n = 0;
    for (const PortTypes &p : spec.operands) n += p.operands.size();
    return n;
}

bool has_port(const KernelSpec &spec, const std::string &port) {
    return std::any_of(spec.operands.begin(), spec.operands.end(),
                       [&](const PortTypes &p) { return p.port == port && !p.operands.empty(); });
}

// An extra operand is broadcastable to the output when, right-aligned, each of its
// dims is 1 or the output's.
bool broadcastable(const ZPoint &extra, const ZPoint &out) {
    if (extra.rank() > out.rank()) return false;
    for (int d = 0; d < extra.rank(); ++d) {
        const Coord e = extra[d];
        const Coord o = out[out.rank() - extra.rank() + d];
        if (e != 1 && e != o) return false;
    }
    return true;
}

bool matmul_fusion_shapes_ok(const KernelSpec &spec, const Epilogue &e) {
    if (!epilogue_supported(e)) return false;
    if (spec.output_shapes.size() != 1) return false;
    if (e.extra_input >= 0) {
        const size_t k = own_input_count(spec) + static_cast<size_t>(e.extra_input);
        if (k >= spec.input_shapes.size()) return false;
        if (!broadcastable(spec.input_shapes[k], spec.output_shapes[0])) return false;
    }
    return true;
}

// The memory descriptors of a matmul's views: a 2-D GEMM (`gemm`) when b has no
// batch and the lead dims (batch and m) of a, y and every full-size extra operand
// merge evenly, else batched at the output's rank.
struct MatmulDescs {
    bool gemm = true;
    dnnl::memory::desc a, b, y, bias;
    std::vector<dnnl::memory::desc> extras;  // the epilogues' operands
};

// Whether the lead dims of a, y and the extra operands merge into one GEMM row
// dim; the merged boxes in a2, y2 and e2 when they do.
bool gemm_boxes(const Box &a, const Box &b, const Box &y, const std::vector<Box> &extra, int rank,
                std::optional<Box> &a2, std::optional<Box> &y2, std::vector<Box> &e2) {
    bool gemm = true;
    for (int d = 0; d + 2 < rank; ++d)
        if (b.shape[static_cast<size_t>(d)] != 1) gemm = false;
    for (const Box &e : extra) {
        bool all_one = true, all_full = true;
        for (int d = 0; d + 1 < rank; ++d) {
            all_one = all_one && e.shape[static_cast<size_t>(d)] == 1;
            all_full = all_full && e.shape[static_cast<size_t>(d)] == y.shape[static_cast<size_t>(d)];
        }
        if (!all_one && !all_full) gemm = false;
    }
    if (gemm) {
        // a's lead dims must equal y's (no batch broadcast of a).
        for (int d = 0; d + 1 < rank; ++d)
            if (a.shape[static_cast<size_t>(d)] != y.shape[static_cast<size_t>(d)]) gemm = false;
    }
    if (gemm) {
        a2 = collapse(a, rank - 1);
        y2 = collapse(y, rank - 1);
        gemm = a2 && y2;
        for (const Box &e : extra) {
            auto c = collapse(e, rank - 1);
            if (!c) gemm = false;
            else e2.push_back(*c);
        }
    }
    return gemm;
}

// The descriptors of the spec's views (own inputs first, `own` of them; linear's
// bias the third when has_bias).
Expected<MatmulDescs, std::string> matmul_descs(const KernelSpec &spec, size_t own, bool has_bias, DType dtype) {
    const ZPoint &ys = spec.output_shapes[0];
    const int rank = std::max(2, ys.rank());
    const Box a = aligned(spec.input_shapes[0], spec_input_strides(spec, 0), rank);
    const Box y = aligned(ys, spec_output_strides(spec, 0), rank);
    // linear's w is [in, out]; matmul's b is [*bb, k, n].
    const Box b = aligned(spec.input_shapes[1], spec_input_strides(spec, 1), rank);
    std::vector<Box> extra;
    for (size_t i = own; i < spec.input_shapes.size(); ++i)
        extra.push_back(aligned(spec.input_shapes[i], spec_input_strides(spec, i), rank));
    const std::int64_t K = a.shape.back();
    if (K == 0) return unexpected(std::string("an empty contraction (k = 0) is not supported"));

    std::optional<Box> a2, y2;
    std::vector<Box> e2;
    MatmulDescs d;
    d.gemm = gemm_boxes(a, b, y, extra, rank, a2, y2, e2);
    auto take = [&](Expected<dnnl::memory::desc, std::string> m, dnnl::memory::desc &out) -> std::optional<std::string> {
        if (!m) return m.error();
        out = *m;
        return std::nullopt;
    };
    std::optional<std::string> err;
    const Box b2{{b.shape[static_cast<size_t>(rank - 2)], b.shape.back()},
                 {b.strides[static_cast<size_t>(rank - 2)], b.strides.back()}};
    if ((err = take(md_of(d.gemm ? *a2 : a, dtype), d.a))) return unexpected(*err);
    if ((err = take(md_of(d.gemm ? b2 : b, dtype), d.b))) return unexpected(*err);
    if ((err = take(md_of(d.gemm ? *y2 : y, dtype), d.y))) return unexpected(*err);
    for (const Box &e : d.gemm ? e2 : extra) {
        d.extras.emplace_back();
        if ((err = take(md_of(e, dtype), d.extras.back()))) return unexpected(*err);
    }
    const int md_rank = d.gemm ? 2 : rank;
    if (has_bias) {
        const ZPoint &bs = spec.input_shapes[2];
        if ((err = take(make_md(bs, spec_input_strides(spec, 2), dtype, md_rank), d.bias))) return unexpected(*err);
    }
    return d;
}

class MatmulKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, bool linear) {
        const std::string what = std::string(linear ? "linear" : "matmul") + " kernel";
        return dnnl_guard(what, [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<MatmulKernel>(new MatmulKernel());
            const size_t own = own_input_count(spec);
            const bool own_bias = linear && has_port(spec, "bias");
            if (spec.output_shapes.size() != 1 || own != (own_bias ? 3u : 2u) || spec.input_shapes.size() < own)
                return unexpected(what + ": unexpected operands");
            bool has_bias = own_bias;
            size_t bias_input = own_bias ? 2 : 0;  // the input view the bias argument reads
            DType dtype = spec.operands[0].operands[0].dtype;
            if (dtype != DType::f32 && dtype != DType::bf16)
                return unexpected(what + ": no CPU kernel for dtype " + std::string(dtype_name(dtype)));
            k->empty_ = spec.output_shapes[0].product() == 0;
            if (k->empty_) return std::unique_ptr<Kernel>(std::move(k));
            auto descs = matmul_descs(spec, own, has_bias, dtype);
            if (!descs) return unexpected(what + ": " + descs.error());
            MatmulDescs &d = *descs;
            if (auto big = matmul_size_refusal(d.a, d.b)) return unexpected(what + ": " + *big);
            // A first epilogue that adds one value per output column (an exported
            // Linear's separate bias Add) becomes the primitive's bias: oneDNN's
            // GEMM-based matmul (below AVX-512) applies a binary post-op in a pass of
            // its own over the whole output, the bias inside the product.
            std::vector<Epilogue> post_epilogues = spec.epilogues;
            if (!has_bias && d.gemm && dtype == DType::f32 && !post_epilogues.empty() &&
                post_epilogues[0].kind == "add" && post_epilogues[0].extra_input >= 0) {
                const dnnl::memory::desc &e = d.extras[static_cast<size_t>(post_epilogues[0].extra_input)];
                if (e.dims().size() == 2 && e.dims()[0] == 1 && e.dims()[1] == d.y.dims()[1]) {
                    has_bias = true;
                    d.bias = e;
                    bias_input = own + static_cast<size_t>(post_epilogues[0].extra_input);
                    post_epilogues.erase(post_epilogues.begin());
                }
            }
            auto post = make_post_ops(post_epilogues, d.extras);
            if (!post) return unexpected(what + ": " + post.error());
            const dnnl::matmul::primitive_desc pd = k->choose_primitive(spec, d, has_bias, make_attr(&post->ops), dtype);
            k->impl_ = pd.impl_info_str();
            k->prim_.init(pd, dnnl::matmul(pd));
            k->prim_.bind(DNNL_ARG_SRC, d.a);
            k->prim_.bind(DNNL_ARG_WEIGHTS, k->packed_.empty() ? d.b : k->packed_md_);
            k->prim_.bind(DNNL_ARG_DST, d.y);
            if (has_bias) k->prim_.bind(DNNL_ARG_BIAS, d.bias);
            k->has_bias_ = has_bias;
            k->bias_input_ = bias_input;
            for (const auto &[index, input] : post->binary_args) {
                k->prim_.bind(post_op_arg(index), d.extras[static_cast<size_t>(input)]);
                k->binary_.emplace_back(post_op_arg(index), own + static_cast<size_t>(input));
            }
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        if (empty_) return;
        if (a_stage_.empty()) {
            prim_.set(DNNL_ARG_SRC, inputs[0].data);
        } else {
            a_view_.set_data_handle(const_cast<std::byte *>(inputs[0].data));
            dnnl::stream &s = thread_stream();
            a_reorder_.execute(s, a_view_, a_low_);
            prim_.set(DNNL_ARG_SRC, a_stage_.data());
        }
        if (packed_.empty()) {
            prim_.set(DNNL_ARG_WEIGHTS, inputs[1].data);
        } else {
            if (inputs[1].data != constant_b_ || packed_from_ != constant_b_) pack(inputs[1].data);
            prim_.set(DNNL_ARG_WEIGHTS, packed_.data());
        }
        if (has_bias_) prim_.set(DNNL_ARG_BIAS, inputs[bias_input_].data);
        for (const auto &[arg, input] : binary_) prim_.set(arg, inputs[input].data);
        prim_.set(DNNL_ARG_DST, outputs[0].data);
        prim_.execute();
    }
    std::size_t scratch_bytes() const override { return prim_.scratch_bytes() + packed_.size() + a_stage_.size(); }
    std::vector<std::string> notes() const override { return notes_; }
    // oneDNN's naive fallback ("ref:any"), which it picks silently for some post-op sets.
    bool uses_reference_implementation() const { return impl_.rfind("ref", 0) == 0; }

private:
    MatmulKernel() = default;
    // The primitive for the descriptors: as they are, or in bf16 (staging a, d.a
    // becoming its bf16 form) where KernelSpec::bf16_matmul asks and the CPU has
    // native bf16, or with constant 2-D weights packed once into oneDNN's layout.
    dnnl::matmul::primitive_desc choose_primitive(const KernelSpec &spec, MatmulDescs &d, bool has_bias,
                                                  const dnnl::primitive_attr &attr, DType dtype) {
        auto make_pd = [&](const dnnl::memory::desc &weights) {
            const auto desc =
                has_bias ? dnnl::matmul::desc(d.a, weights, d.bias, d.y) : dnnl::matmul::desc(d.a, weights, d.y);
            return dnnl::matmul::primitive_desc(desc, attr, cpu_engine());
        };
        dnnl::matmul::primitive_desc pd = make_pd(d.b);
        // Constant 2-D weights: let oneDNN choose their layout and reorder them
        // once, now (runs that bind another b reorder that one instead).
        const std::byte *constant_b = spec.constant_inputs.size() > 1 ? spec.constant_inputs[1] : nullptr;
        if (d.gemm && dtype == DType::f32 && spec.bf16_matmul) {
            // bf16 compute (KernelSpec::bf16_matmul): a staged to bf16 each run,
            // the weights packed to bf16 once when constant (else each run); only
            // with a native bf16 kernel.
            const auto bf16 = dnnl::memory::data_type::bf16;
            const dnnl::memory::desc a16(d.a.dims(), bf16, dnnl::memory::format_tag::ab);
            const dnnl::memory::desc b16(d.b.dims(), bf16, dnnl::memory::format_tag::any);
            const auto desc = has_bias ? dnnl::matmul::desc(a16, b16, d.bias, d.y) : dnnl::matmul::desc(a16, b16, d.y);
            dnnl::matmul::primitive_desc low(desc, attr, cpu_engine(), true);
            const bool native =
                cpu_isa().native_bf16 && low && std::string(low.impl_info_str()).find("bf16") != std::string::npos;
            if (!native)
                notes_.push_back("bf16 matmuls are not available on " + cpu_isa().name +
                                 " (no native bf16 in this CPU): computed in f32");
            if (native) {
                pd = low;
                const auto &eng = cpu_engine();
                a_stage_.resize(a16.get_size());
                a_view_ = dnnl::memory(d.a, eng, DNNL_MEMORY_NONE);
                a_low_ = dnnl::memory(a16, eng, a_stage_.data());
                a_reorder_ = dnnl::reorder(a_view_, a_low_);
                d.a = a16;
                prepare_packing(pd.weights_desc(), d.b, constant_b);
            }
        }
        if (d.gemm && constant_b && dtype == DType::f32 && a_stage_.empty()) {
            const dnnl::memory::desc b_any(d.b.dims(), d.b.data_type(), dnnl::memory::format_tag::any);
            const dnnl::matmul::primitive_desc packed = make_pd(b_any);
            if (packed.weights_desc() != d.b && std::string(packed.impl_info_str()).rfind("ref", 0) != 0) {
                pd = packed;
                prepare_packing(pd.weights_desc(), d.b, constant_b);
            }
        }
        return pd;
    }
    // Reorders b (at `from`) into the packed layout.
    // Weights reordered into `packed` (the primitive's layout) from `source`: once
    // here when they are constant, else on every run.
    void prepare_packing(const dnnl::memory::desc &packed, const dnnl::memory::desc &source,
                         const std::byte *constant_b) {
        const auto &eng = cpu_engine();
        packed_md_ = packed;
        packed_.resize(packed_md_.get_size());
        b_source_ = dnnl::memory(source, eng, DNNL_MEMORY_NONE);
        b_packed_ = dnnl::memory(packed_md_, eng, packed_.data());
        b_reorder_ = dnnl::reorder(b_source_, b_packed_);
        constant_b_ = constant_b;
        if (constant_b) pack(constant_b);
    }
    void pack(const std::byte *from) {
        b_source_.set_data_handle(const_cast<std::byte *>(from));
        dnnl::stream &s = thread_stream();
        b_reorder_.execute(s, b_source_, b_packed_);
        s.wait();
        packed_from_ = from;
    }
    PreparedPrimitive prim_;
    // Prepacked constant weights (empty when b is used in place).
    std::vector<std::byte> packed_;
    dnnl::memory::desc packed_md_;
    dnnl::memory b_source_, b_packed_;
    dnnl::reorder b_reorder_;
    const std::byte *constant_b_ = nullptr;   // the constant b's bytes
    const std::byte *packed_from_ = nullptr;  // what packed_ holds (constant_b_ when prepacked)
    // bf16 compute (KernelSpec::bf16_matmul): a rounded to bf16 here each run.
    std::vector<std::byte> a_stage_;
    dnnl::memory a_view_, a_low_;
    dnnl::reorder a_reorder_;
    bool empty_ = false;
    bool has_bias_ = false;
    size_t bias_input_ = 2;  // the input view of the bias: linear's own, or a folded add's operand
    std::vector<std::pair<int, size_t>> binary_;  // (execute argument, input index)
    std::string impl_;
    std::vector<std::string> notes_;
};

bool matmul_can_fuse(const KernelSpec &spec, const Epilogue &e) {
    if (!matmul_fusion_shapes_ok(spec, e)) return false;
    // oneDNN quietly falls back to its reference matmul for some post-op combinations
    // (a scalar scale then a broadcast causal mask made the GPT-2 block's score
    // product ~300x slower). Fuse only while the fused primitive stays optimized.
    KernelSpec trial = spec;
    trial.epilogues.push_back(e);
    const bool linear = spec.def != nullptr && spec.def->kind() == "linear";
    auto kernel = MatmulKernel::make(trial, linear);
    if (!kernel) return false;
    return !static_cast<const MatmulKernel &>(**kernel).uses_reference_implementation();
}

// partial_matmul over a shard [p0, p1) × batch × m × n: block p reads a[…, pB:(p+1)B]
// and b[…, pB:(p+1)B, :] (the last block clipped) and writes y[p]. Each block is a
// plain matmul on sub-views of the shard's views; blocks of one size share one
// primitive (at most two sizes: B and the clipped last block).
class PartialMatmulKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        const std::string what = "partial_matmul kernel";
        if (spec.operands.size() != 2 || spec.operands[0].operands.size() != 1 ||
            spec.operands[1].operands.size() != 1 || spec.input_shapes.size() != 2 || spec.output_shapes.size() != 1)
            return unexpected(what + ": unexpected operands");
        if (!spec.epilogues.empty()) return unexpected(what + ": takes no epilogues");
        auto k = std::unique_ptr<PartialMatmulKernel>(new PartialMatmulKernel());
        const OperandType &a_type = spec.operands[0].operands[0];
        const OperandType &b_type = spec.operands[1].operands[0];
        const Coord k_total = a_type.shape[a_type.shape.rank() - 1];
        const std::int64_t parts = spec.params.get_int("parts", 0);
        if (parts < 1 || parts > k_total) return unexpected(what + ": bad parts " + std::to_string(parts));
        const Coord block = (k_total + parts - 1) / parts;
        const ZPoint &as = spec.input_shapes[0], &bs = spec.input_shapes[1], &ys = spec.output_shapes[0];
        k->a_strides_ = spec_input_strides(spec, 0);
        k->b_strides_ = spec_input_strides(spec, 1);
        k->y_strides_ = spec_output_strides(spec, 0);
        k->elem_ = dtype_bytes(a_type.dtype);
        k->block_ = block;
        k->a_k_ = as.rank() - 1;
        k->b_k_ = bs.rank() - 2;
        if (spec.index_range.empty() || ys.product() == 0) return std::unique_ptr<Kernel>(std::move(k));
        const Coord p0 = spec.index_range.start()[0], p1 = spec.index_range.end()[0];
        const OpDef *matmul = OpLibrary::standard().find("matmul");
        TAPESTRY_CHECK(matmul != nullptr, "the op library has no matmul");
        const std::vector<Coord> y_block_dims(ys.coords().begin() + 1, ys.coords().end());
        const ZPoint y_block(y_block_dims);
        const std::vector<std::int64_t> y_block_strides(k->y_strides_.begin() + 1, k->y_strides_.end());
        for (Coord p = p0; p < p1; ++p) {
            const Coord size = std::min(block, k_total - p * block);
            k->sizes_.push_back(size);
            if (k->kernels_.count(size)) continue;
            ZPoint a_block = as, b_block = bs;
            a_block[k->a_k_] = size;
            b_block[k->b_k_] = size;
            ZPoint a_whole = a_type.shape, b_whole = b_type.shape;
            a_whole[k->a_k_] = size;
            b_whole[k->b_k_] = size;
            KernelSpec block_spec;
            block_spec.def = matmul;
            const std::vector<PortTypes> whole{{"a", {OperandType{a_type.dtype, a_whole}}},
                                               {"b", {OperandType{b_type.dtype, b_whole}}}};
            auto d = OpLibrary::standard().derive("matmul", {}, whole);
            if (!d) return unexpected(what + ": " + d.error().message);
            block_spec.derivation = std::move(d).value();
            block_spec.operands = {{"a", {OperandType{a_type.dtype, a_block}}}, {"b", {OperandType{b_type.dtype, b_block}}}};
            block_spec.index_range = ZRange::of_shape(y_block);
            block_spec.input_shapes = {a_block, b_block};
            block_spec.output_shapes = {y_block};
            block_spec.input_strides = {k->a_strides_, k->b_strides_};
            block_spec.output_strides = {y_block_strides};
            block_spec.threads = spec.threads;
            auto made = MatmulKernel::make(block_spec, false);
            if (!made) return unexpected(made.error());
            k->kernels_.emplace(size, std::move(made).value());
        }
        return std::unique_ptr<Kernel>(std::move(k));
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        for (size_t q = 0; q < sizes_.size(); ++q) {
            const auto offset = static_cast<std::int64_t>(q) * block_;
            View a = inputs[0], b = inputs[1], y = outputs[0];
            a.data += offset * a_strides_[static_cast<size_t>(a_k_)] * elem_;
            b.data += offset * b_strides_[static_cast<size_t>(b_k_)] * elem_;
            y.data += static_cast<std::int64_t>(q) * y_strides_[0] * elem_;
            const View block_inputs[2] = {a, b};
            kernels_.at(sizes_[q])->run(block_inputs, std::span<const View>(&y, 1));
        }
    }
    std::size_t scratch_bytes() const override {
        std::size_t n = 0;
        for (const auto &[size, kernel] : kernels_) n += kernel->scratch_bytes();
        return n;
    }

private:
    PartialMatmulKernel() = default;
    std::vector<std::int64_t> a_strides_, b_strides_, y_strides_;
    std::int64_t elem_ = 4;
    Coord block_ = 1;
    int a_k_ = 0, b_k_ = 0;
    std::vector<Coord> sizes_;                        // per block of the shard, its k size
    std::map<Coord, std::unique_ptr<Kernel>> kernels_;  // one matmul per block size
};

}  // namespace

void register_kernels_matmul(std::vector<KernelFactory> &out) {
    out.push_back({"partial_matmul", [](const KernelSpec &, const Epilogue &) { return false; },
                   [](const KernelSpec &spec) { return PartialMatmulKernel::make(spec); }});
    out.push_back({"matmul", matmul_can_fuse,
                   [](const KernelSpec &spec) { return MatmulKernel::make(spec, false); }, true});
    out.push_back({"linear", matmul_can_fuse,
                   [](const KernelSpec &spec) { return MatmulKernel::make(spec, true); }, true});
}

}  // namespace tapestry::cpu
