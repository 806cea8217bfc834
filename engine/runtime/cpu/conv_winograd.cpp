// Winograd F(4×4, 3×3) convolution (see conv_winograd.h). The output is cut into
// 4×4 tiles, processed in blocks of tiles sized to stay in cache:
//   1. input transform: each tile's 6×6 input patch d (zeros where the shard's
//      local padding is) becomes V = Bᵀ d B, stored [point][tile][channel];
//   2. 36 products M[p] = V[p] · U[p] ([tiles × C]·[C × K], one batched oneDNN
//      matmul), U = G g Gᵀ the weights, transformed once when constant;
//   3. output transform: Y = Aᵀ M A per tile and filter, plus bias and the unary
//      epilogues, stored into the valid part of the output view.
// The transforms loop over channels (filters) innermost, contiguous in the
// Winograd buffers and in channels-last views, so the compiler vectorises them.
#include "runtime/cpu/conv_winograd.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <omp.h>

#include "runtime/cpu/conv_geometry.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/element_math.h"

namespace tapestry::cpu {

namespace {

using Strides = std::vector<std::int64_t>;
constexpr int kPoints = 36;  // Winograd-domain points of a 6×6 tile
constexpr int kChunk = 16;   // channels (filters) transformed together: the vector loop
// Winograd buffers of a block (V and M) stay within about this many floats.
constexpr std::int64_t kBlockFloats = std::int64_t{1} << 18;

// G (6×3), the weights' transform U = G g Gᵀ (Lavin & Gray's points 0, ±1, ±2).
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

struct Epilogue1 {
    Fn fn = Fn::relu;
    double a = 0, b = 0;
};

struct Tile {
    std::int64_t n = 0, oh = 0, ow = 0;  // batch row and the tile's first output row and column
};

// The transforms are plain loops over kChunk lanes; built twice — for AVX2 with
// FMA and for the x86-64 baseline — and picked at load time by the CPU (GCC's and
// Clang's function multiversioning), so they vectorise wide where the CPU can.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TAPESTRY_VECTOR_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define TAPESTRY_VECTOR_CLONES
#endif

// n ≤ kChunk floats: a fixed-size copy when whole (vector moves, not `rep movs`,
// which a variable-length memcpy of 64 bytes becomes and which costs more than
// the transform itself), the lanes past n zero.
inline void copy_lanes(float *to, const float *from, int n) {
    if (n == kChunk) {
        std::memcpy(to, from, kChunk * sizeof(float));
        return;
    }
    for (int c = 0; c < kChunk; ++c) to[c] = c < n ? from[c] : 0.0f;
}
inline void store_lanes(float *to, const float *from, int n) {
    if (n == kChunk)
        std::memcpy(to, from, kChunk * sizeof(float));
    else
        for (int c = 0; c < n; ++c) to[c] = from[c];
}

// One tile's 6×6 input patch (d[i·6 + j][lane]) to the Winograd domain, stored
// at v[p · point_stride + lane] for point p and the first n lanes. Bᵀ down each
// column, then along each row; Bᵀ's rows: [4 0 -5 0 1 0] [0 -4 -4 1 1 0]
// [0 4 -4 -1 1 0] [0 -2 -1 2 1 0] [0 2 -1 -2 1 0] [0 4 0 -5 0 1].
TAPESTRY_VECTOR_CLONES
void input_tile(const float (&d)[kPoints][kChunk], float *v, std::int64_t point_stride, int n) {
    alignas(64) float col[kPoints][kChunk];
    for (int j = 0; j < 6; ++j)
        for (int c = 0; c < kChunk; ++c) {
            const float d0 = d[j][c], d1 = d[6 + j][c], d2 = d[12 + j][c], d3 = d[18 + j][c], d4 = d[24 + j][c],
                        d5 = d[30 + j][c];
            col[j][c] = 4 * d0 - 5 * d2 + d4;
            col[6 + j][c] = -4 * (d1 + d2) + d3 + d4;
            col[12 + j][c] = 4 * (d1 - d2) - d3 + d4;
            col[18 + j][c] = 2 * (d3 - d1) - d2 + d4;
            col[24 + j][c] = 2 * (d1 - d3) - d2 + d4;
            col[30 + j][c] = 4 * d1 - 5 * d3 + d5;
        }
    alignas(64) float row[kPoints][kChunk];
    for (int i = 0; i < 6; ++i)
        for (int c = 0; c < kChunk; ++c) {
            const float *r = &col[i * 6][0];
            const float d0 = r[c], d1 = r[kChunk + c], d2 = r[2 * kChunk + c], d3 = r[3 * kChunk + c],
                        d4 = r[4 * kChunk + c], d5 = r[5 * kChunk + c];
            row[i * 6][c] = 4 * d0 - 5 * d2 + d4;
            row[i * 6 + 1][c] = -4 * (d1 + d2) + d3 + d4;
            row[i * 6 + 2][c] = 4 * (d1 - d2) - d3 + d4;
            row[i * 6 + 3][c] = 2 * (d3 - d1) - d2 + d4;
            row[i * 6 + 4][c] = 2 * (d1 - d3) - d2 + d4;
            row[i * 6 + 5][c] = 4 * d1 - 5 * d3 + d5;
        }
    for (int p = 0; p < kPoints; ++p) store_lanes(v + p * point_stride, row[p], n);
}

// One tile's 36 products (m[p][lane]) back to its 4×4 outputs (out[i·4 + j][lane]):
// Aᵀ down each column, then along each row; Aᵀ's rows: [1 1 1 1 1 0]
// [0 1 -1 2 -2 0] [0 1 1 4 4 0] [0 1 -1 8 -8 1].
TAPESTRY_VECTOR_CLONES
void output_tile(const float (&m)[kPoints][kChunk], float (&out)[16][kChunk]) {
    alignas(64) float col[24][kChunk];
    for (int j = 0; j < 6; ++j)
        for (int c = 0; c < kChunk; ++c) {
            const float s12 = m[6 + j][c] + m[12 + j][c], d12 = m[6 + j][c] - m[12 + j][c];
            const float s34 = m[18 + j][c] + m[24 + j][c], d34 = m[18 + j][c] - m[24 + j][c];
            col[j][c] = m[j][c] + s12 + s34;
            col[6 + j][c] = d12 + 2 * d34;
            col[12 + j][c] = s12 + 4 * s34;
            col[18 + j][c] = d12 + 8 * d34 + m[30 + j][c];
        }
    for (int i = 0; i < 4; ++i)
        for (int c = 0; c < kChunk; ++c) {
            const float *r = &col[i * 6][0];
            const float s12 = r[kChunk + c] + r[2 * kChunk + c], d12 = r[kChunk + c] - r[2 * kChunk + c];
            const float s34 = r[3 * kChunk + c] + r[4 * kChunk + c], d34 = r[3 * kChunk + c] - r[4 * kChunk + c];
            out[i * 4][c] = r[c] + s12 + s34;
            out[i * 4 + 1][c] = d12 + 2 * d34;
            out[i * 4 + 2][c] = s12 + 4 * s34;
            out[i * 4 + 3][c] = d12 + 8 * d34 + r[5 * kChunk + c];
        }
}

// out[lane] + bias[lane], relu'd when asked, into kChunk lanes of `to`.
TAPESTRY_VECTOR_CLONES
void bias_relu(const float *value, const float *bias, bool relu, float *to) {
    for (int c = 0; c < kChunk; ++c) {
        const float v = value[c] + bias[c];
        to[c] = relu ? (v > 0 ? v : 0.0f) : v;
    }
}

class WinogradConv final : public Kernel {
public:
    explicit WinogradConv(const KernelSpec &spec);
    Expected<bool, std::string> build(const KernelSpec &spec);

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        set_omp_threads(threads_);
        if (inputs[1].data != constant_w_ || transformed_from_ != constant_w_) transform_weights(inputs[1]);
        // The bias as kChunk-padded contiguous lanes (zeros without one).
        if (has_bias_)
            for (std::int64_t k = 0; k < k_; ++k)
                bias_[static_cast<size_t>(k)] = inputs[2].f32()[k * inputs[2].strides.at(0)];
        for (std::int64_t t0 = 0; t0 < tiles_; t0 += block_) {
            const std::int64_t count = std::min(block_, tiles_ - t0);
            transform_input(inputs[0], t0, count);
            PreparedPrimitive &gemm = count == block_ ? gemm_full_ : gemm_last_;
            gemm.set(DNNL_ARG_SRC, v_.data());
            gemm.set(DNNL_ARG_WEIGHTS, u_.data());
            gemm.set(DNNL_ARG_DST, m_.data());
            gemm.execute();
            transform_output(t0, count, outputs[0]);
        }
    }

    std::size_t scratch_bytes() const override {
        return (u_.size() + v_.size() + m_.size() + bias_.size()) * sizeof(float) + gemm_full_.scratch_bytes() +
               gemm_last_.scratch_bytes();
    }

private:
    Tile tile_at(std::int64_t t) const {
        const std::int64_t per_image = tiles_h_ * tiles_w_;
        const std::int64_t in_image = t % per_image;
        return {t / per_image, (in_image / tiles_w_) * 4, (in_image % tiles_w_) * 4};
    }
    Expected<bool, std::string> make_gemm(PreparedPrimitive &gemm, std::int64_t count);
    void transform_weights(const View &w);
    void transform_input(const View &x, std::int64_t t0, std::int64_t count);
    void transform_output(std::int64_t t0, std::int64_t count, const View &y);
    float epilogue(float v) const;

    int threads_ = 1;
    bool has_bias_ = false;
    std::int64_t n_ = 0, c_ = 0, k_ = 0, ih_ = 0, iw_ = 0, oh_ = 0, ow_ = 0, pad_t_ = 0, pad_l_ = 0;
    std::int64_t tiles_h_ = 0, tiles_w_ = 0, tiles_ = 0, block_ = 0;
    Strides xs_, ys_;
    std::vector<Epilogue1> epilogues_;
    bool relu_only_ = false;
    std::vector<float> u_;  // [point][C][K]
    std::vector<float> v_;  // [point][block tile][C]
    std::vector<float> m_;  // [point][block tile][K]
    std::vector<float> bias_;  // K rounded up to kChunk lanes
    PreparedPrimitive gemm_full_, gemm_last_;
    const std::byte *constant_w_ = nullptr, *transformed_from_ = nullptr;
};

WinogradConv::WinogradConv(const KernelSpec &spec) : threads_(std::max(1, spec.threads)) {}

Expected<bool, std::string> WinogradConv::build(const KernelSpec &spec) {
    const ConvPlan plan = conv_plan(spec);
    const ZPoint &xv = spec.input_shapes.at(0), &yv = spec.output_shapes.at(0);
    n_ = xv[0];
    c_ = xv[1];
    ih_ = xv[2];
    iw_ = xv[3];
    k_ = yv[1];
    oh_ = yv[2];
    ow_ = yv[3];
    pad_t_ = plan.ph.before;
    pad_l_ = plan.pw.before;
    if (ih_ + plan.ph.before + plan.ph.after != oh_ + 2 || iw_ + plan.pw.before + plan.pw.after != ow_ + 2)
        return unexpected(std::string("Winograd convolution: the input selection does not match the output"));
    xs_ = spec_input_strides(spec, 0);
    ys_ = spec_output_strides(spec, 0);
    has_bias_ = spec.derivation.signature.input("bias", 0) != nullptr;
    relu_only_ = !spec.epilogues.empty();
    for (const Epilogue &e : spec.epilogues) {
        const auto fn = fn_of(e.kind, e.params);
        const auto [a, b] = unary_constants(e.kind, e.params);
        epilogues_.push_back({*fn, a, b});
        relu_only_ = relu_only_ && *fn == Fn::relu;
    }
    tiles_h_ = (oh_ + 3) / 4;
    tiles_w_ = (ow_ + 3) / 4;
    tiles_ = n_ * tiles_h_ * tiles_w_;
    block_ = std::clamp<std::int64_t>(kBlockFloats / (kPoints * (c_ + k_)), 8, 512);
    block_ = std::min(block_, tiles_);
    u_.assign(static_cast<size_t>(kPoints * c_ * k_), 0.0f);
    v_.assign(static_cast<size_t>(kPoints * block_ * c_), 0.0f);
    m_.assign(static_cast<size_t>(kPoints * block_ * k_), 0.0f);
    bias_.assign(static_cast<size_t>((k_ + kChunk - 1) / kChunk * kChunk), 0.0f);
    if (auto e = make_gemm(gemm_full_, block_); !e) return e;
    if (const std::int64_t last = tiles_ % block_; last != 0)
        if (auto e = make_gemm(gemm_last_, last); !e) return e;
    constant_w_ = spec.constant_inputs.size() > 1 ? spec.constant_inputs[1] : nullptr;
    if (constant_w_) {
        View w;
        w.data = const_cast<std::byte *>(constant_w_);
        w.dtype = DType::f32;
        w.shape = spec.input_shapes.at(1);
        w.strides = spec_input_strides(spec, 1);
        transform_weights(w);
    }
    return true;
}

// M[p] (count × K) = V[p] (count × C) · U[p] (C × K) for the 36 points; V and M
// keep the full block's row stride, so the last, shorter block uses them as is.
Expected<bool, std::string> WinogradConv::make_gemm(PreparedPrimitive &gemm, std::int64_t count) {
    using dims = dnnl::memory::dims;
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::memory::desc src(dims{kPoints, count, c_}, f32, dims{block_ * c_, c_, 1});
    const dnnl::memory::desc weights(dims{kPoints, c_, k_}, f32, dims{c_ * k_, k_, 1});
    const dnnl::memory::desc dst(dims{kPoints, count, k_}, f32, dims{block_ * k_, k_, 1});
    if (auto big = matmul_size_refusal(src, weights)) return unexpected(*big);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), make_attr(), cpu_engine());
    gemm.init(pd, dnnl::matmul(pd));
    gemm.bind(DNNL_ARG_SRC, src);
    gemm.bind(DNNL_ARG_WEIGHTS, weights);
    gemm.bind(DNNL_ARG_DST, dst);
    return true;
}

void WinogradConv::transform_weights(const View &w) {
    const Strides &s = w.strides;
    const float *g = w.f32();
    for (std::int64_t k = 0; k < k_; ++k)
        for (std::int64_t c = 0; c < c_; ++c) {
            double tap[3][3], half[6][3];
            for (int r = 0; r < 3; ++r)
                for (int q = 0; q < 3; ++q) tap[r][q] = g[k * s[0] + c * s[1] + r * s[2] + q * s[3]];
            for (int a = 0; a < 6; ++a)
                for (int q = 0; q < 3; ++q) half[a][q] = kG[a][0] * tap[0][q] + kG[a][1] * tap[1][q] + kG[a][2] * tap[2][q];
            for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b)
                    u_[static_cast<size_t>(((a * 6 + b) * c_ + c) * k_ + k)] =
                        static_cast<float>(half[a][0] * kG[b][0] + half[a][1] * kG[b][1] + half[a][2] * kG[b][2]);
        }
    transformed_from_ = w.data;
}

void WinogradConv::transform_input(const View &x, std::int64_t t0, std::int64_t count) {
    const float *base = x.f32();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1)
    for (std::int64_t t = 0; t < count; ++t) {
        const Tile tile = tile_at(t0 + t);
        alignas(64) float d[kPoints][kChunk];
        for (std::int64_t c0 = 0; c0 < c_; c0 += kChunk) {
            const int n = static_cast<int>(std::min<std::int64_t>(kChunk, c_ - c0));
            for (int i = 0; i < 6; ++i) {
                const std::int64_t ih = tile.oh + i - pad_t_;
                for (int j = 0; j < 6; ++j) {
                    const std::int64_t iw = tile.ow + j - pad_l_;
                    float *out = d[i * 6 + j];
                    if (ih < 0 || ih >= ih_ || iw < 0 || iw >= iw_) {
                        std::fill(out, out + kChunk, 0.0f);
                        continue;
                    }
                    const float *in = base + tile.n * xs_[0] + c0 * xs_[1] + ih * xs_[2] + iw * xs_[3];
                    if (xs_[1] == 1) {
                        copy_lanes(out, in, n);  // lanes past C: computed, never stored
                    } else {
                        for (int c = 0; c < n; ++c) out[c] = in[c * xs_[1]];
                        std::fill(out + n, out + kChunk, 0.0f);
                    }
                }
            }
            input_tile(d, &v_[static_cast<size_t>(t * c_ + c0)], block_ * c_, n);
        }
    }
}

float WinogradConv::epilogue(float v) const {
    double x = v;
    for (const Epilogue1 &e : epilogues_) x = apply1(e.fn, x, e.a, e.b);
    return static_cast<float>(x);
}

void WinogradConv::transform_output(std::int64_t t0, std::int64_t count, const View &y) {
    float *base = y.f32();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1)
    for (std::int64_t t = 0; t < count; ++t) {
        const Tile tile = tile_at(t0 + t);
        alignas(64) float m[kPoints][kChunk];
        alignas(64) float out[16][kChunk];
        alignas(64) float value[kChunk];
        for (std::int64_t k0 = 0; k0 < k_; k0 += kChunk) {
            const int n = static_cast<int>(std::min<std::int64_t>(kChunk, k_ - k0));
            for (int p = 0; p < kPoints; ++p) {
                copy_lanes(m[p], &m_[static_cast<size_t>((p * block_ + t) * k_ + k0)], n);
            }
            output_tile(m, out);
            const float *bias = &bias_[static_cast<size_t>(k0)];
            for (int i = 0; i < 4 && tile.oh + i < oh_; ++i)
                for (int j = 0; j < 4 && tile.ow + j < ow_; ++j) {
                    float *dst = base + tile.n * ys_[0] + k0 * ys_[1] + (tile.oh + i) * ys_[2] + (tile.ow + j) * ys_[3];
                    bias_relu(out[i * 4 + j], bias, relu_only_, value);
                    if (!relu_only_ && !epilogues_.empty())
                        for (int c = 0; c < n; ++c) value[c] = epilogue(value[c]);
                    if (ys_[1] == 1)
                        store_lanes(dst, value, n);
                    else
                        for (int c = 0; c < n; ++c) dst[c * ys_[1]] = value[c];
                }
        }
    }
}

}  // namespace

std::string winograd_refusal(const KernelSpec &spec) {
    if (spec.operands.size() < 2 || spec.input_shapes.size() < 2 || spec.output_shapes.size() != 1)
        return "not a conv2d spec";
    if (spec.operands[0].operands.at(0).dtype != DType::f32) return "it computes f32 only";
    if (spec.params.get_int("groups", 1) != 1) return "grouped convolutions run direct";
    const ZPoint &w = spec.input_shapes[1];
    if (w.rank() != 4 || w[2] != 3 || w[3] != 3) return "the window is not 3×3";
    if (spec.params.get_ints("stride", {1, 1}) != std::vector<std::int64_t>{1, 1}) return "the stride is not 1";
    if (spec.params.get_ints("dilation", {1, 1}) != std::vector<std::int64_t>{1, 1}) return "the dilation is not 1";
    if (spec.input_shapes[0][1] < 16 || spec.output_shapes[0][1] < 16)
        return "fewer than 16 input or output channels";
    const ConvPlan plan = conv_plan(spec);
    if (plan.ph.extent == 0 || plan.pw.extent == 0) return "the shard reads only padding";
    const size_t own = spec.derivation.signature.input("bias", 0) ? 3 : 2;
    if (spec.input_shapes.size() != own) return "a binary epilogue";
    for (const Epilogue &e : spec.epilogues) {
        const auto fn = fn_of(e.kind, e.params);
        if (e.extra_input >= 0 || !fn || binary(*fn)) return "epilogue '" + e.kind + "' is not unary";
    }
    return {};
}

Expected<std::unique_ptr<Kernel>, std::string> make_winograd_conv(const KernelSpec &spec) {
    if (const std::string why = winograd_refusal(spec); !why.empty())
        return unexpected("Winograd convolution: " + why);
    return dnnl_guard("Winograd convolution", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
        auto k = std::make_unique<WinogradConv>(spec);
        if (auto e = k->build(spec); !e) return unexpected(e.error());
        return std::unique_ptr<Kernel>(std::move(k));
    });
}

}  // namespace tapestry::cpu
