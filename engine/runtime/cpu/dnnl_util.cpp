// Shared oneDNN helpers (see dnnl_util.h).
#include "runtime/cpu/dnnl_util.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <omp.h>

namespace tapestry::cpu {

using dt = dnnl::memory::data_type;

const CpuIsa &cpu_isa() {
    static const CpuIsa isa = [] {
        using isa_t = dnnl::cpu_isa;
        CpuIsa out;
        switch (dnnl::get_effective_cpu_isa()) {
            case isa_t::sse41: out.name = "sse41"; break;
            case isa_t::avx: out.name = "avx"; break;
            case isa_t::avx2: out.name = "avx2"; break;
            case isa_t::avx2_vnni: out.name = "avx2_vnni"; break;
            case isa_t::avx512_mic: out.name = "avx512_mic"; break;
            case isa_t::avx512_mic_4ops: out.name = "avx512_mic_4ops"; break;
            case isa_t::avx512_core: out.name = "avx512_core"; out.avx512 = true; break;
            case isa_t::avx512_core_vnni: out.name = "avx512_core_vnni"; out.avx512 = true; break;
            case isa_t::avx512_core_bf16:
                out.name = "avx512_core_bf16";
                out.avx512 = out.native_bf16 = true;
                break;
            case isa_t::avx512_core_amx:
                out.name = "avx512_core_amx";
                out.avx512 = out.native_bf16 = true;
                break;
            default: out.name = "x86-64 without AVX"; break;
        }
        return out;
    }();
    return isa;
}

const dnnl::engine &cpu_engine() {
    static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

dnnl::stream &thread_stream() {
    thread_local dnnl::stream s(cpu_engine());
    return s;
}

void set_omp_threads(int n) { omp_set_num_threads(n < 1 ? 1 : n); }
int omp_threads() { return omp_get_max_threads(); }

std::optional<dnnl::memory::data_type> dnnl_dtype(DType t) {
    switch (t) {
    case DType::f32: return dt::f32;
    case DType::bf16: return dt::bf16;
    case DType::f16: return dt::f16;
    case DType::i32: return dt::s32;
    case DType::boolean: return dt::u8;
    case DType::i64: return std::nullopt;
    }
    return std::nullopt;
}

std::vector<std::int64_t> dense_strides(const ZPoint &shape) {
    std::vector<std::int64_t> s(static_cast<size_t>(shape.rank()));
    std::int64_t acc = 1;
    for (int d = shape.rank() - 1; d >= 0; --d) {
        s[static_cast<size_t>(d)] = acc;
        acc *= std::max<std::int64_t>(shape[d], 1);
    }
    return s;
}

namespace {
std::vector<std::int64_t> strides_or_dense(const std::vector<std::vector<std::int64_t>> &all, size_t i,
                                           const ZPoint &shape) {
    if (i < all.size() && !all[i].empty()) return all[i];
    return dense_strides(shape);
}
}  // namespace

std::vector<std::int64_t> spec_input_strides(const KernelSpec &spec, size_t i) {
    TAPESTRY_CHECK(i < spec.input_shapes.size(), "spec_input_strides: no such input");
    return strides_or_dense(spec.input_strides, i, spec.input_shapes[i]);
}

std::vector<std::int64_t> spec_output_strides(const KernelSpec &spec, size_t i) {
    TAPESTRY_CHECK(i < spec.output_shapes.size(), "spec_output_strides: no such output");
    return strides_or_dense(spec.output_strides, i, spec.output_shapes[i]);
}

Expected<dnnl::memory::desc, std::string> make_md(const ZPoint &shape, const std::vector<std::int64_t> &strides,
                                                  DType t, int rank) {
    const auto type = dnnl_dtype(t);
    if (!type) return unexpected("oneDNN has no " + std::string(dtype_name(t)) + " element type");
    TAPESTRY_CHECK(static_cast<int>(strides.size()) == shape.rank(), "make_md: strides and shape differ in rank");
    const int own = shape.rank();
    const int n = std::max({rank, own, 1});
    dnnl::memory::dims dims(static_cast<size_t>(n), 1);
    dnnl::memory::dims st(static_cast<size_t>(n), 1);
    for (int d = 0; d < own; ++d) dims[static_cast<size_t>(n - own + d)] = shape[d];
    for (int d = 0; d < own; ++d) st[static_cast<size_t>(n - own + d)] = strides[static_cast<size_t>(d)];
    // Size-1 (and leading, added) dims: a dense stride, so equal boxes give equal descriptors.
    std::int64_t acc = 1;
    for (int d = n - 1; d >= 0; --d) {
        const auto k = static_cast<size_t>(d);
        if (dims[k] == 1) st[k] = acc;
        acc = std::max<std::int64_t>(acc, st[k] * std::max<std::int64_t>(dims[k], 1));
    }
    try {
        return dnnl::memory::desc(dims, *type, st);
    } catch (const dnnl::error &e) {
        return unexpected("memory descriptor " + shape.to_string() + ": " + dnnl_error_text(e));
    }
}

bool dnnl_describable(const std::vector<std::int64_t> &shape, const std::vector<std::int64_t> &strides) {
    TAPESTRY_CHECK(shape.size() == strides.size(), "dnnl_describable: strides and shape differ in rank");
    std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, extent) of the non-unit dims
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0) return true;  // an empty box: oneDNN checks no strides
        if (shape[d] != 1) dims.emplace_back(strides[d], shape[d]);
    }
    std::sort(dims.begin(), dims.end());
    // oneDNN's memory_desc_strides_check: the smallest stride first, each at least
    // the span of the ones before. A zero or negative stride is no layout we give it.
    std::int64_t span = 1;
    for (const auto &[stride, extent] : dims) {
        if (stride <= 0 || stride < span) return false;
        span = stride * extent;
    }
    return true;
}

Expected<dnnl::memory::desc, std::string> dense_md(const ZPoint &shape, DType t, int rank) {
    return make_md(shape, dense_strides(shape), t, rank);
}

std::pair<double, double> unary_constants(const std::string &kind, const Params &p) {
    // A clip bound at or beyond the largest finite float is none.
    auto bound = [](double v) {
        constexpr double inf = std::numeric_limits<double>::infinity();
        return v >= FLT_MAX ? inf : v <= -FLT_MAX ? -inf : v;
    };
    if (kind == "pow") return {p.get_float("exponent", 1.0), 0};
    if (kind == "leaky_relu") return {p.get_float("alpha", 0.01), 0};
    if (kind == "elu") return {p.get_float("alpha", 1.0), 0};
    if (kind == "selu") return {p.get_float("alpha", 1.6732632423543772), p.get_float("gamma", 1.0507009873554805)};
    if (kind == "hard_sigmoid") return {p.get_float("alpha", 0.2), p.get_float("beta", 0.5)};
    if (kind == "clip") return {bound(p.get_float("min", -FLT_MAX)), bound(p.get_float("max", FLT_MAX))};
    return {0, 0};
}

std::optional<EltwiseAlgorithm> eltwise_algorithm(const std::string &kind, const Params &params) {
    using a = dnnl::algorithm;
    if (kind == "relu") return EltwiseAlgorithm{a::eltwise_relu, 0.f, 0.f};
    if (kind == "sigmoid") return EltwiseAlgorithm{a::eltwise_logistic, 0.f, 0.f};
    if (kind == "tanh") return EltwiseAlgorithm{a::eltwise_tanh, 0.f, 0.f};
    if (kind == "exp") return EltwiseAlgorithm{a::eltwise_exp, 0.f, 0.f};
    if (kind == "sqrt") return EltwiseAlgorithm{a::eltwise_sqrt, 0.f, 0.f};
    if (kind == "gelu") {
        const std::string approx = params.get_string("approximate", "none");
        if (approx == "tanh") return EltwiseAlgorithm{a::eltwise_gelu_tanh, 0.f, 0.f};
        if (approx == "none") return EltwiseAlgorithm{a::eltwise_gelu_erf, 0.f, 0.f};
        return std::nullopt;
    }
    if (kind == "pow") {
        if (!params.has("exponent")) return std::nullopt;
        return EltwiseAlgorithm{a::eltwise_pow, 1.f, static_cast<float>(params.get_float("exponent", 1.0))};
    }
    // The other kinds oneDNN has. erf, selu, softplus, softsign and hard_sigmoid run
    // as plain loops (its soft_relu and hardsigmoid differ between releases); so do
    // log (oneDNN's is off by 1.4e-6 at log(1) = 0, beyond ONNX's tolerance) and
    // clip (oneDNN's clip_v2 turns NaN into the lower bound; NaN must stay NaN).
    // binary_algorithm leaves out max and min for the same reason.
    if (kind == "neg") return EltwiseAlgorithm{a::eltwise_linear, -1.f, 0.f};
    if (kind == "abs") return EltwiseAlgorithm{a::eltwise_abs, 0.f, 0.f};
    if (kind == "reciprocal") return EltwiseAlgorithm{a::eltwise_pow, 1.f, -1.f};
    if (kind == "leaky_relu" || kind == "elu")
        return EltwiseAlgorithm{kind == "elu" ? a::eltwise_elu : a::eltwise_relu,
                                static_cast<float>(unary_constants(kind, params).first), 0.f};
    if (kind == "hard_swish") return EltwiseAlgorithm{a::eltwise_hardswish, 0.f, 0.f};
    return std::nullopt;
}

std::optional<dnnl::algorithm> binary_algorithm(const std::string &kind) {
    if (kind == "add") return dnnl::algorithm::binary_add;
    if (kind == "sub") return dnnl::algorithm::binary_sub;
    if (kind == "mul") return dnnl::algorithm::binary_mul;
    if (kind == "div") return dnnl::algorithm::binary_div;
    return std::nullopt;
}

bool epilogue_supported(const Epilogue &e) {
    if (binary_algorithm(e.kind)) return e.extra_input >= 0;
    return e.extra_input < 0 && eltwise_algorithm(e.kind, e.params).has_value();
}

Expected<PostOpPlan, std::string> make_post_ops(const std::vector<Epilogue> &epilogues,
                                                const std::vector<dnnl::memory::desc> &extra_mds) {
    PostOpPlan plan;
    int index = 0;
    for (const Epilogue &e : epilogues) {
        if (auto b = binary_algorithm(e.kind)) {
            if (e.extra_input < 0 || static_cast<size_t>(e.extra_input) >= extra_mds.size())
                return unexpected("epilogue '" + e.kind + "' has no second operand");
            try {
                plan.ops.append_binary(*b, extra_mds[static_cast<size_t>(e.extra_input)]);
            } catch (const dnnl::error &err) {
                return unexpected("epilogue '" + e.kind + "': " + dnnl_error_text(err));
            }
            plan.binary_args.emplace_back(index, e.extra_input);
        } else if (auto el = eltwise_algorithm(e.kind, e.params)) {
            try {
                plan.ops.append_eltwise(1.f, el->algorithm, el->alpha, el->beta);
            } catch (const dnnl::error &err) {
                return unexpected("epilogue '" + e.kind + "': " + dnnl_error_text(err));
            }
        } else {
            return unexpected("no oneDNN post-op for epilogue '" + e.kind + "'");
        }
        ++index;
    }
    return plan;
}

int post_op_arg(int post_op_index) { return DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_op_index) | DNNL_ARG_SRC_1; }

std::optional<std::string> matmul_size_refusal(const dnnl::memory::desc &src, const dnnl::memory::desc &weights) {
    constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
    for (const auto &[what, md] : {std::pair{"source", &src}, std::pair{"weights", &weights}}) {
        const dnnl::memory::dims d = md->dims();
        for (size_t i = d.size() >= 2 ? d.size() - 2 : 0; i < d.size(); ++i)
            if (d[i] > most)
                return "the matmul's " + std::string(what) + " has " + std::to_string(d[i]) +
                       " elements along a dimension: oneDNN's matmul takes at most 2147483647 (2^31 − 1)";
    }
    return std::nullopt;
}

std::string dnnl_error_text(const dnnl::error &e) {
    return "oneDNN: " + std::string(e.what()) + " (status " + std::to_string(static_cast<int>(e.status)) + ")";
}

dnnl::memory wrap(const dnnl::memory::desc &md, const View &v) {
    return dnnl::memory(md, cpu_engine(), static_cast<void *>(v.data));
}

}  // namespace tapestry::cpu

namespace tapestry::cpu {

dnnl::primitive_attr make_attr(const dnnl::post_ops *post_ops) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (post_ops) attr.set_post_ops(*post_ops);
    return attr;
}

void PreparedPrimitive::init(const dnnl::primitive_desc_base &pd, dnnl::primitive p) {
    primitive_ = std::move(p);
    const dnnl::memory::desc sd = pd.scratchpad_desc();
    const std::size_t bytes = sd.get_size();
    if (bytes > 0) {
        scratch_.resize(bytes);
        args_.insert_or_assign(DNNL_ARG_SCRATCHPAD, dnnl::memory(sd, cpu_engine(), scratch_.data()));
    }
}

void PreparedPrimitive::bind(int arg, const dnnl::memory::desc &md) {
    args_.insert_or_assign(arg, dnnl::memory(md, cpu_engine(), DNNL_MEMORY_NONE));
}

void PreparedPrimitive::set(int arg, const void *data) {
    auto it = args_.find(arg);
    TAPESTRY_CHECK(it != args_.end(), "PreparedPrimitive::set: argument not bound");
    it->second.set_data_handle(const_cast<void *>(data));
}

void PreparedPrimitive::execute() {
    dnnl::stream &s = thread_stream();
    primitive_.execute(s, args_);
    s.wait();
}

}  // namespace tapestry::cpu
