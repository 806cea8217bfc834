// CPU kernels of the elementwise kinds: unary activations through oneDNN eltwise
// (dense views) or a plain strided loop (what oneDNN lacks or computes too
// coarsely: erf, log, selu, softplus, softsign, hard_sigmoid; strided views; f16), binary
// add/sub/mul/div through oneDNN binary with NumPy broadcasting on dense views (or the loop when
// oneDNN cannot take the shapes), and cast between any dtypes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <utility>

#include <omp.h>

#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/element_math.h"
#include "runtime/cpu/float_formats.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {
namespace {

// ---- element conversions ----------------------------------------------------------

// Storage types of the float dtypes, with float as the compute type.
struct F32 {
    using storage = float;
    static float load(const float *p) { return *p; }
    static void store(float *p, float v) { *p = v; }
};
struct BF16 {
    using storage = std::uint16_t;
    static float load(const std::uint16_t *p) { return bf16_to_float(*p); }
    static void store(std::uint16_t *p, float v) { *p = float_to_bf16(v); }
};
struct F16 {
    using storage = std::uint16_t;
    static float load(const std::uint16_t *p) { return f16_to_float(*p); }
    static void store(std::uint16_t *p, float v) { *p = float_to_f16(v); }
};

// Any dtype as a double, and a double stored as any dtype (casts).
double load_any(const std::byte *p, DType t) {
    switch (t) {
        case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
        case DType::f16: { std::uint16_t v; std::memcpy(&v, p, 2); return f16_to_float(v); }
        case DType::bf16: { std::uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
        case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
        case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
        case DType::boolean: return std::to_integer<int>(*p) != 0 ? 1.0 : 0.0;
    }
    return 0;
}

// double → float truncated toward zero with a sticky low bit when inexact, so that
// a second rounding to a narrower format rounds once, correctly.
float to_float_sticky(double v) {
    float f = static_cast<float>(v);
    if (std::isnan(v) || static_cast<double>(f) == v) return f;
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

template <typename I> I to_integer(double v) {
    if (std::isnan(v)) return 0;
    constexpr double upper = -static_cast<double>(std::numeric_limits<I>::min());
    if (v >= upper) return std::numeric_limits<I>::max();
    if (v <= -upper) return std::numeric_limits<I>::min();
    return static_cast<I>(v);
}

void store_any(std::byte *p, DType t, double v) {
    switch (t) {
        case DType::f32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
        case DType::f16: { const std::uint16_t h = float_to_f16(to_float_sticky(v)); std::memcpy(p, &h, 2); return; }
        case DType::bf16: { const std::uint16_t h = float_to_bf16(to_float_sticky(v)); std::memcpy(p, &h, 2); return; }
        case DType::i32: { const auto i = to_integer<std::int32_t>(v); std::memcpy(p, &i, 4); return; }
        case DType::i64: { const auto i = to_integer<std::int64_t>(v); std::memcpy(p, &i, 8); return; }
        case DType::boolean: *p = std::byte{static_cast<unsigned char>(v != 0 ? 1 : 0)}; return;
    }
}

// ---- strided iteration -------------------------------------------------------------

// The iteration of an output shape with per-operand strides (0 along broadcast
// dims), adjacent dims merged where every operand allows it.
struct Loop {
    std::vector<std::int64_t> shape;
    std::vector<std::vector<std::int64_t>> strides;  // per operand

    std::int64_t inner() const { return shape.empty() ? 1 : shape.back(); }
    std::int64_t rows() const {
        std::int64_t r = 1;
        for (size_t d = 0; d + 1 < shape.size(); ++d) r *= shape[d];
        return shape.empty() ? 1 : r;
    }
    // Element offsets of row r's first element, per operand.
    void row_offsets(std::int64_t r, std::int64_t *out) const {
        for (size_t o = 0; o < strides.size(); ++o) out[o] = 0;
        for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) {
            const auto k = static_cast<size_t>(d);
            const std::int64_t i = r % shape[k];
            r /= shape[k];
            for (size_t o = 0; o < strides.size(); ++o) out[o] += i * strides[o][k];
        }
    }
};

// Operand `shape` right-aligned to `out`'s rank; broadcast dims get stride 0.
std::vector<std::int64_t> broadcast_strides(const ZPoint &shape, const std::vector<std::int64_t> &strides, const ZPoint &out) {
    std::vector<std::int64_t> s(static_cast<size_t>(out.rank()), 0);
    const int off = out.rank() - shape.rank();
    for (int d = 0; d < shape.rank(); ++d)
        s[static_cast<size_t>(off + d)] = shape[d] == 1 && out[off + d] != 1 ? 0 : strides[static_cast<size_t>(d)];
    return s;
}

Loop make_loop(const ZPoint &out, std::vector<std::vector<std::int64_t>> strides) {
    Loop l;
    // Drop size-1 dims, then merge dims d, d+1 where stride[d] == stride[d+1]·shape[d+1] for all.
    for (int d = 0; d < out.rank(); ++d) {
        if (out[d] == 1) continue;
        const auto k = static_cast<size_t>(d);
        l.shape.push_back(out[d]);
        for (size_t o = 0; o < strides.size(); ++o) {
            if (l.strides.size() <= o) l.strides.emplace_back();
            l.strides[o].push_back(strides[o][k]);
        }
    }
    if (l.strides.empty()) l.strides.resize(strides.size());
    // Merge from the inside out.
    for (int d = static_cast<int>(l.shape.size()) - 2; d >= 0; --d) {
        const auto k = static_cast<size_t>(d);
        bool ok = true;
        for (const auto &s : l.strides) ok = ok && s[k] == s[k + 1] * l.shape[k + 1];
        if (!ok) continue;
        l.shape[k] *= l.shape[k + 1];
        l.shape.erase(l.shape.begin() + d + 1);
        for (auto &s : l.strides) {
            s[k] = s[k + 1];
            s.erase(s.begin() + d + 1);
        }
    }
    return l;
}

// Runs body(row offsets, inner count, inner strides) over all rows, in parallel
// with the calling thread's OpenMP team when there is enough work.
template <typename Body> void for_rows(const Loop &l, Body &&body) {
    const std::int64_t rows = l.rows();
    const std::int64_t inner = l.inner();
    const bool parallel = rows > 1 && rows * inner >= (1 << 16) && omp_get_max_threads() > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (std::int64_t r = 0; r < rows; ++r) {
        std::int64_t off[3] = {0, 0, 0};
        l.row_offsets(r, off);
        body(off, inner);
    }
}

// ---- scalar functions ---------------------------------------------------------------

// The unary kinds: element_math's functions (one enum for the fused loop, the
// epilogues of our own kernels and these f32 loops), binary ones excluded.
std::optional<Fn> unary_of(const std::string &kind, const Params &p) {
    const auto f = fn_of(kind, p);
    if (!f || binary(*f)) return std::nullopt;
    return f;
}

template <Fn U> inline float apply_unary(float x, float a, float b) {
    if constexpr (U == Fn::relu) return x > 0 ? x : 0.0f;  // NaN gives 0, as oneDNN's relu
    if constexpr (U == Fn::sigmoid) return 1.0f / (1.0f + std::exp(-x));
    if constexpr (U == Fn::tanh_) return std::tanh(x);
    if constexpr (U == Fn::exp_) return std::exp(x);
    if constexpr (U == Fn::sqrt_) return std::sqrt(x);
    if constexpr (U == Fn::erf_) return std::erf(x);
    if constexpr (U == Fn::pow_) return std::pow(x, a);
    if constexpr (U == Fn::gelu_erf) return 0.5f * x * (1.0f + std::erf(x * static_cast<float>(std::numbers::sqrt2 / 2)));
    if constexpr (U == Fn::gelu_tanh) {
        const float c = static_cast<float>(0.7978845608028654);  // √(2/π)
        return 0.5f * x * (1.0f + std::tanh(c * (x + 0.044715f * x * x * x)));
    }
    if constexpr (U == Fn::neg) return -x;
    if constexpr (U == Fn::abs_) return std::fabs(x);
    if constexpr (U == Fn::log_) return std::log(x);
    if constexpr (U == Fn::reciprocal) return 1.0f / x;
    if constexpr (U == Fn::leaky_relu) return x >= 0 ? x : a * x;
    if constexpr (U == Fn::elu) return x > 0 ? x : a * std::expm1(x);
    if constexpr (U == Fn::selu) return x > 0 ? b * x : b * a * std::expm1(x);
    if constexpr (U == Fn::softplus) return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    if constexpr (U == Fn::softsign) return x / (1.0f + std::fabs(x));
    if constexpr (U == Fn::hard_sigmoid) return std::isnan(x) ? x : std::max(0.0f, std::min(1.0f, a * x + b));
    if constexpr (U == Fn::hard_swish) return x * std::max(0.0f, std::min(1.0f, x * (1.0f / 6) + 0.5f));
    if constexpr (U == Fn::clip) return std::isnan(x) ? x : std::min(std::max(x, a), b);
    return x;
}

template <typename T, Fn U> void unary_loop(const Loop &l, const std::byte *x, std::byte *y, float a, float b) {
    using S = typename T::storage;
    const S *xs = reinterpret_cast<const S *>(x);
    S *ys = reinterpret_cast<S *>(y);
    const std::int64_t sx = l.strides[0].empty() ? 1 : l.strides[0].back();
    const std::int64_t sy = l.strides[1].empty() ? 1 : l.strides[1].back();
    for_rows(l, [&](const std::int64_t *off, std::int64_t n) {
        const S *xp = xs + off[0];
        S *yp = ys + off[1];
        if (sx == 1 && sy == 1) {
            for (std::int64_t i = 0; i < n; ++i) T::store(yp + i, apply_unary<U>(T::load(xp + i), a, b));
        } else {
            for (std::int64_t i = 0; i < n; ++i) T::store(yp + i * sy, apply_unary<U>(T::load(xp + i * sx), a, b));
        }
    });
}

template <typename T>
void unary_dispatch(Fn u, const Loop &l, const std::byte *x, std::byte *y, float a, float b) {
    switch (u) {
#define TAPESTRY_UNARY_CASE(name) \
    case Fn::name: return unary_loop<T, Fn::name>(l, x, y, a, b);
        TAPESTRY_UNARY_CASE(relu)
        TAPESTRY_UNARY_CASE(sigmoid)
        TAPESTRY_UNARY_CASE(tanh_)
        TAPESTRY_UNARY_CASE(exp_)
        TAPESTRY_UNARY_CASE(sqrt_)
        TAPESTRY_UNARY_CASE(erf_)
        TAPESTRY_UNARY_CASE(pow_)
        TAPESTRY_UNARY_CASE(gelu_erf)
        TAPESTRY_UNARY_CASE(gelu_tanh)
        TAPESTRY_UNARY_CASE(neg)
        TAPESTRY_UNARY_CASE(abs_)
        TAPESTRY_UNARY_CASE(log_)
        TAPESTRY_UNARY_CASE(reciprocal)
        TAPESTRY_UNARY_CASE(leaky_relu)
        TAPESTRY_UNARY_CASE(elu)
        TAPESTRY_UNARY_CASE(selu)
        TAPESTRY_UNARY_CASE(softplus)
        TAPESTRY_UNARY_CASE(softsign)
        TAPESTRY_UNARY_CASE(hard_sigmoid)
        TAPESTRY_UNARY_CASE(hard_swish)
        TAPESTRY_UNARY_CASE(clip)
#undef TAPESTRY_UNARY_CASE
        case Fn::add:
        case Fn::sub:
        case Fn::mul:
        case Fn::div:
        case Fn::max_:
        case Fn::min_: break;  // unary_of never gives them
    }
    TAPESTRY_CHECK(false, "unary kernel: a binary function");
}

enum class Binary { add, sub, mul, div, max, min };

template <Binary B> inline float apply_binary(float a, float b) {
    if constexpr (B == Binary::add) return a + b;
    if constexpr (B == Binary::sub) return a - b;
    if constexpr (B == Binary::mul) return a * b;
    if constexpr (B == Binary::max) return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : std::max(a, b);
    if constexpr (B == Binary::min) return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : std::min(a, b);
    return a / b;
}

template <typename T, Binary B> void binary_loop(const Loop &l, const std::byte *a, const std::byte *b, std::byte *y) {
    using S = typename T::storage;
    const S *as = reinterpret_cast<const S *>(a);
    const S *bs = reinterpret_cast<const S *>(b);
    S *ys = reinterpret_cast<S *>(y);
    const std::int64_t sa = l.strides[0].empty() ? 1 : l.strides[0].back();
    const std::int64_t sb = l.strides[1].empty() ? 1 : l.strides[1].back();
    const std::int64_t sy = l.strides[2].empty() ? 1 : l.strides[2].back();
    for_rows(l, [&](const std::int64_t *off, std::int64_t n) {
        const S *ap = as + off[0];
        const S *bp = bs + off[1];
        S *yp = ys + off[2];
        if (sa == 1 && sb == 1 && sy == 1) {
            for (std::int64_t i = 0; i < n; ++i) T::store(yp + i, apply_binary<B>(T::load(ap + i), T::load(bp + i)));
        } else if (sa == 1 && sb == 0 && sy == 1) {
            const float bv = T::load(bp);
            for (std::int64_t i = 0; i < n; ++i) T::store(yp + i, apply_binary<B>(T::load(ap + i), bv));
        } else {
            for (std::int64_t i = 0; i < n; ++i)
                T::store(yp + i * sy, apply_binary<B>(T::load(ap + i * sa), T::load(bp + i * sb)));
        }
    });
}

template <typename T> void binary_dispatch(Binary op, const Loop &l, const std::byte *a, const std::byte *b, std::byte *y) {
    switch (op) {
        case Binary::add: return binary_loop<T, Binary::add>(l, a, b, y);
        case Binary::sub: return binary_loop<T, Binary::sub>(l, a, b, y);
        case Binary::mul: return binary_loop<T, Binary::mul>(l, a, b, y);
        case Binary::div: return binary_loop<T, Binary::div>(l, a, b, y);
        case Binary::max: return binary_loop<T, Binary::max>(l, a, b, y);
        case Binary::min: return binary_loop<T, Binary::min>(l, a, b, y);
    }
}

std::optional<Binary> binary_of(const std::string &kind) {
    if (kind == "add") return Binary::add;
    if (kind == "sub") return Binary::sub;
    if (kind == "mul") return Binary::mul;
    if (kind == "div") return Binary::div;
    if (kind == "max") return Binary::max;
    if (kind == "min") return Binary::min;
    return std::nullopt;
}

bool is_dense(const ZPoint &shape, const std::vector<std::int64_t> &strides) {
    std::int64_t expect = 1;
    for (int d = shape.rank() - 1; d >= 0; --d) {
        if (shape[d] != 1 && strides[static_cast<size_t>(d)] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

std::string quoted_dtype(DType t) { return std::string(dtype_name(t)); }

// ---- unary ------------------------------------------------------------------------

class UnaryKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        const std::string kind(spec.def->kind());
        return dnnl_guard(kind + " kernel", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<UnaryKernel>(new UnaryKernel());
            if (spec.input_shapes.size() != 1 || spec.output_shapes.size() != 1)
                return unexpected(kind + " kernel: unexpected operands");
            const auto u = unary_of(kind, spec.params);
            if (!u) return unexpected("no CPU kernel for kind '" + kind + "'");
            k->unary_ = *u;
            const auto [a, b] = unary_constants(kind, spec.params);
            k->a_ = static_cast<float>(a);
            k->b_ = static_cast<float>(b);
            k->dtype_ = spec.operands[0].operands[0].dtype;
            if (k->dtype_ != DType::f32 && k->dtype_ != DType::bf16 && k->dtype_ != DType::f16)
                return unexpected(kind + " kernel: no CPU kernel for dtype " + quoted_dtype(k->dtype_));
            const ZPoint &shape = spec.output_shapes[0];
            k->empty_ = shape.product() == 0;
            const auto xs = spec_input_strides(spec, 0);
            const auto ys = spec_output_strides(spec, 0);
            const auto alg = eltwise_algorithm(kind, spec.params);
            if (alg && k->dtype_ != DType::f16 && !k->empty_ && is_dense(shape, xs) && is_dense(shape, ys)) {
                auto md = dense_md(ZPoint{shape.product()}, k->dtype_);
                if (!md) return unexpected(kind + " kernel: " + md.error());
                const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg->algorithm, *md, alg->alpha,
                                                    alg->beta);
                const dnnl::eltwise_forward::primitive_desc pd(d, make_attr(), cpu_engine());
                k->prim_.init(pd, dnnl::eltwise_forward(pd));
                k->prim_.bind(DNNL_ARG_SRC, *md);
                k->prim_.bind(DNNL_ARG_DST, *md);
                k->use_dnnl_ = true;
            } else {
                k->loop_ = make_loop(shape, {xs, ys});
            }
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        if (empty_) return;
        if (use_dnnl_) {
            prim_.set(DNNL_ARG_SRC, inputs[0].data);
            prim_.set(DNNL_ARG_DST, outputs[0].data);
            prim_.execute();
            return;
        }
        switch (dtype_) {
            case DType::bf16: return unary_dispatch<BF16>(unary_, loop_, inputs[0].data, outputs[0].data, a_, b_);
            case DType::f16: return unary_dispatch<F16>(unary_, loop_, inputs[0].data, outputs[0].data, a_, b_);
            default: return unary_dispatch<F32>(unary_, loop_, inputs[0].data, outputs[0].data, a_, b_);
        }
    }
    std::size_t scratch_bytes() const override { return prim_.scratch_bytes(); }

private:
    UnaryKernel() = default;
    Fn unary_ = Fn::relu;
    float a_ = 0, b_ = 0;  // unary_constants
    DType dtype_ = DType::f32;
    bool empty_ = false;
    bool use_dnnl_ = false;
    PreparedPrimitive prim_;
    Loop loop_;
};

// ---- binary -----------------------------------------------------------------------

class BinaryKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        const std::string kind(spec.def->kind());
        return dnnl_guard(kind + " kernel", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<BinaryKernel>(new BinaryKernel());
            if (spec.input_shapes.size() != 2 || spec.output_shapes.size() != 1)
                return unexpected(kind + " kernel: unexpected operands");
            const auto op = binary_of(kind);
            if (!op) return unexpected("no CPU kernel for kind '" + kind + "'");
            k->op_ = *op;
            k->dtype_ = spec.operands[0].operands[0].dtype;
            if (k->dtype_ != DType::f32 && k->dtype_ != DType::bf16 && k->dtype_ != DType::f16)
                return unexpected(kind + " kernel: no CPU kernel for dtype " + quoted_dtype(k->dtype_));
            const ZPoint &out = spec.output_shapes[0];
            k->empty_ = out.product() == 0;
            if (k->empty_) return std::unique_ptr<Kernel>(std::move(k));
            const ZPoint &as = spec.input_shapes[0];
            const ZPoint &bs = spec.input_shapes[1];
            const auto ast = spec_input_strides(spec, 0);
            const auto bst = spec_input_strides(spec, 1);
            const auto yst = spec_output_strides(spec, 0);
            auto full = [&](const ZPoint &s) { return s.rank() == out.rank() && s == out; };
            // oneDNN binary needs src0 shaped like dst; src1 may broadcast.
            int src0 = -1;
            if (full(as)) src0 = 0;
            else if (full(bs) && k->op_ != Binary::sub && k->op_ != Binary::div) src0 = 1;  // commutative
            // oneDNN's binary runs its vector code on dense operands only; a strided
            // view (a shard's window of wider rows: a residual add split along its
            // features reads x 384 of every 768) sends it to its reference code,
            // ~60× slower than the loop below, which vectorizes every contiguous row.
            const bool dense = is_dense(as, ast) && is_dense(bs, bst) && is_dense(out, yst);
            if (k->dtype_ != DType::f16 && src0 >= 0 && dense && binary_algorithm(kind)) {
                const ZPoint &s0 = src0 == 0 ? as : bs;
                const ZPoint &s1 = src0 == 0 ? bs : as;
                auto md0 = make_md(s0, src0 == 0 ? ast : bst, k->dtype_, out.rank());
                auto md1 = make_md(s1, src0 == 0 ? bst : ast, k->dtype_, out.rank());
                auto mdy = make_md(out, yst, k->dtype_, out.rank());
                if (!md0 || !md1 || !mdy) return unexpected(kind + " kernel: bad memory descriptor");
                const dnnl::binary::desc d(*binary_algorithm(kind), *md0, *md1, *mdy);
                const dnnl::binary::primitive_desc pd(d, make_attr(), cpu_engine());
                k->prim_.init(pd, dnnl::binary(pd));
                k->prim_.bind(DNNL_ARG_SRC_0, *md0);
                k->prim_.bind(DNNL_ARG_SRC_1, *md1);
                k->prim_.bind(DNNL_ARG_DST, *mdy);
                k->src0_ = src0;
                k->use_dnnl_ = true;
            } else {
                k->loop_ = make_loop(out, {broadcast_strides(as, ast, out), broadcast_strides(bs, bst, out), yst});
            }
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        if (empty_) return;
        if (use_dnnl_) {
            prim_.set(DNNL_ARG_SRC_0, inputs[static_cast<size_t>(src0_)].data);
            prim_.set(DNNL_ARG_SRC_1, inputs[static_cast<size_t>(1 - src0_)].data);
            prim_.set(DNNL_ARG_DST, outputs[0].data);
            prim_.execute();
            return;
        }
        switch (dtype_) {
            case DType::bf16: return binary_dispatch<BF16>(op_, loop_, inputs[0].data, inputs[1].data, outputs[0].data);
            case DType::f16: return binary_dispatch<F16>(op_, loop_, inputs[0].data, inputs[1].data, outputs[0].data);
            default: return binary_dispatch<F32>(op_, loop_, inputs[0].data, inputs[1].data, outputs[0].data);
        }
    }
    std::size_t scratch_bytes() const override { return prim_.scratch_bytes(); }

private:
    BinaryKernel() = default;
    Binary op_ = Binary::add;
    DType dtype_ = DType::f32;
    bool empty_ = false;
    bool use_dnnl_ = false;
    int src0_ = 0;
    PreparedPrimitive prim_;
    Loop loop_;
};

// ---- cast -------------------------------------------------------------------------

class CastKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        auto k = std::unique_ptr<CastKernel>(new CastKernel());
        if (spec.input_shapes.size() != 1 || spec.output_shapes.size() != 1 || spec.derivation.outputs.empty())
            return unexpected(std::string("cast kernel: unexpected operands"));
        k->from_ = spec.operands[0].operands[0].dtype;
        k->to_ = spec.derivation.outputs[0].operands[0].dtype;
        const ZPoint &out = spec.output_shapes[0];
        k->empty_ = out.product() == 0;
        k->loop_ = make_loop(out, {spec_input_strides(spec, 0), spec_output_strides(spec, 0)});
        return std::unique_ptr<Kernel>(std::move(k));
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        if (empty_) return;
        const std::int64_t fb = dtype_bytes(from_), tb = dtype_bytes(to_);
        const std::int64_t sx = loop_.strides[0].empty() ? 1 : loop_.strides[0].back();
        const std::int64_t sy = loop_.strides[1].empty() ? 1 : loop_.strides[1].back();
        const std::byte *x = inputs[0].data;
        std::byte *y = outputs[0].data;
        const DType from = from_, to = to_;
        for_rows(loop_, [&](const std::int64_t *off, std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i)
                store_any(y + (off[1] + i * sy) * tb, to, load_any(x + (off[0] + i * sx) * fb, from));
        });
    }

private:
    CastKernel() = default;
    DType from_ = DType::f32, to_ = DType::f32;
    bool empty_ = false;
    Loop loop_;
};

}  // namespace

void register_kernels_elementwise(std::vector<KernelFactory> &out) {
    for (const char *kind : {"relu", "sigmoid", "tanh", "exp", "sqrt", "gelu", "pow", "erf", "neg", "abs", "log",
                             "reciprocal", "leaky_relu", "elu", "selu", "softplus", "softsign", "hard_sigmoid",
                             "hard_swish", "clip"})
        out.push_back({kind, never_fuse, [](const KernelSpec &spec) { return UnaryKernel::make(spec); }});
    for (const char *kind : {"add", "sub", "mul", "div", "max", "min"})
        out.push_back({kind, never_fuse, [](const KernelSpec &spec) { return BinaryKernel::make(spec); }});
    out.push_back({"cast", never_fuse, [](const KernelSpec &spec) { return CastKernel::make(spec); }});
}

}  // namespace tapestry::cpu
