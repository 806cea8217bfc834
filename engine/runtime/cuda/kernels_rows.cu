// Device code of the row family (kernel_args.h): softmax, layernorm, rmsnorm and
// the reductions as one row kernel (a warp, a block or a thread per row), batchnorm,
// NCHW pooling, and attention — a tiled tensor-core kernel with online softmax
// for 16-bit heads of 64 or 128, and a warp-per-query-row kernel for the rest.
// Every value is computed in f32; 16-bit data are converted on load and store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "runtime/cuda/element_math.h"
#include "runtime/cuda/kernel_args.h"

namespace tapestry::cuda {

namespace {

using std::int64_t;

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- reductions inside a warp or a block ---------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, s));
    return v;
}

// A row's group of threads: one warp, or the whole block (then `scratch` holds a
// float per warp). Every thread of the group gets the result.
template <bool Block>
struct Group {
    float *scratch;
    __device__ int rank() const { return Block ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x & 31); }
    __device__ int size() const { return Block ? static_cast<int>(blockDim.x) : 32; }
    __device__ float sum(float v) const {
        v = warp_sum(v);
        if constexpr (Block) {
            const int warps = static_cast<int>(blockDim.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
            __syncthreads();  // the scratch of the previous reduction is read
            if (lane == 0) scratch[threadIdx.x >> 5] = v;
            __syncthreads();
            v = warp_sum(lane < warps ? scratch[lane] : 0.f);
        }
        return v;
    }
    __device__ float max(float v) const {
        v = warp_max(v);
        if constexpr (Block) {
            const int warps = static_cast<int>(blockDim.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
            __syncthreads();
            if (lane == 0) scratch[threadIdx.x >> 5] = v;
            __syncthreads();
            v = warp_max(lane < warps ? scratch[lane] : -kInf);
        }
        return v;
    }
};

// The single-thread "group" of the thread-per-row kernel.
struct Alone {
    __device__ int rank() const { return 0; }
    __device__ int size() const { return 1; }
    __device__ float sum(float v) const { return v; }
    __device__ float max(float v) const { return v; }
};

// One row: statistics over `row`, then the written part (or the reduced value).
template <DType T, RowKind R, typename G>
__device__ __forceinline__ void one_row(const RowArgs &a, const G &group, const std::byte *x, std::byte *y,
                                        const std::byte *gamma, const std::byte *beta, int64_t xo, int64_t yo) {
    const int64_t n = count_of(a.row);
    const int first = group.rank(), step = group.size();
    auto xr = [&](int64_t j) { return load<T>(x, xo + offset_of(a.row, j, 0)); };
    if constexpr (R == RowKind::reduce_sum || R == RowKind::reduce_mean || R == RowKind::reduce_max) {
        float acc = R == RowKind::reduce_max ? -kInf : 0.f;
        for (int64_t j = first; j < n; j += step) acc = R == RowKind::reduce_max ? fmaxf(acc, xr(j)) : acc + xr(j);
        acc = R == RowKind::reduce_max ? group.max(acc) : group.sum(acc);
        if (R == RowKind::reduce_mean) acc /= static_cast<float>(n);
        if (first == 0) store<T>(y, yo, acc);
        return;
    }
    const int64_t parts = count_of(a.part);
    auto each_part = [&](auto &&f) {
        for (int64_t p = first; p < parts; p += step) {
            int64_t o[4];
            offsets_of(a.part, p, o);
            f(load<T>(x, xo + a.part_x + o[0]), o);
        }
    };
    if constexpr (R == RowKind::softmax) {
        float mx = -kInf;
        for (int64_t j = first; j < n; j += step) mx = fmaxf(mx, xr(j));
        mx = group.max(mx);
        float sum = 0;
        for (int64_t j = first; j < n; j += step) sum += element::exp(xr(j) - mx);
        const float inv = 1.f / group.sum(sum);
        each_part([&](float v, const int64_t(&o)[4]) { store<T>(y, yo + o[1], element::exp(v - mx) * inv); });
    } else {
        float mean = 0;
        if constexpr (R == RowKind::layernorm) {
            float s = 0;
            for (int64_t j = first; j < n; j += step) s += xr(j);
            mean = group.sum(s) / static_cast<float>(n);
        }
        float q = 0;
        for (int64_t j = first; j < n; j += step) {
            const float d = xr(j) - mean;
            q += d * d;
        }
        const float rstd = 1.f / element::sqrt(group.sum(q) / static_cast<float>(n) + a.epsilon);
        each_part([&](float v, const int64_t(&o)[4]) {
            float r = (v - mean) * rstd;
            if (a.has_gamma) r *= load<T>(gamma, o[2]);
            if (a.has_beta) r += load<T>(beta, o[3]);
            store<T>(y, yo + o[1], r);
        });
    }
}

// A warp (Block false, 8 rows per block) or the block (one row) per row.
template <DType T, RowKind R, bool Block>
__global__ void rows_group_kernel(RowArgs a, const std::byte *x, std::byte *y, const std::byte *gamma,
                                  const std::byte *beta) {
    __shared__ float scratch[32];
    const Group<Block> group{scratch};
    const int64_t rows = count_of(a.outer);
    const int64_t per_block = Block ? 1 : blockDim.x >> 5;
    const int64_t lane_row = Block ? 0 : threadIdx.x >> 5;
    for (int64_t r = blockIdx.x * per_block + lane_row; r < rows; r += int64_t{gridDim.x} * per_block) {
        int64_t o[2];
        offsets_of(a.outer, r, o);
        one_row<T, R>(a, group, x, y, gamma, beta, o[0], o[1]);
    }
}

// A thread per row: rows whose elements are far apart while neighbouring rows are
// adjacent (a reduction or softmax over a leading axis) read coalesced this way.
template <DType T, RowKind R>
__global__ void rows_thread_kernel(RowArgs a, const std::byte *x, std::byte *y, const std::byte *gamma,
                                   const std::byte *beta) {
    const int64_t rows = count_of(a.outer);
    for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
        int64_t o[2];
        offsets_of(a.outer, r, o);
        one_row<T, R>(a, Alone{}, x, y, gamma, beta, o[0], o[1]);
    }
}

// A warp per dense row of at most 32·Per elements, held in registers: one read of
// x, statistics from the registers, one write of y (softmax and the norms, when
// the row, its part, gamma and beta are all the same contiguous run).
template <DType T, RowKind R, int Per>
__global__ void rows_cached_kernel(RowArgs a, const std::byte *x, std::byte *y, const std::byte *gamma,
                                   const std::byte *beta) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int64_t n = count_of(a.row), rows = count_of(a.outer), per_block = blockDim.x >> 5;
    for (int64_t r = blockIdx.x * per_block + (threadIdx.x >> 5); r < rows; r += int64_t{gridDim.x} * per_block) {
        int64_t o[2];
        offsets_of(a.outer, r, o);
        float v[Per];
#pragma unroll
        for (int i = 0; i < Per; ++i) {
            const int64_t j = lane + 32 * i;
            v[i] = j < n ? load<T>(x, o[0] + j) : (R == RowKind::softmax ? -kInf : 0.f);
        }
        if constexpr (R == RowKind::softmax) {
            float mx = -kInf;
#pragma unroll
            for (int i = 0; i < Per; ++i) mx = fmaxf(mx, v[i]);
            mx = warp_max(mx);
            float sum = 0;
#pragma unroll
            for (int i = 0; i < Per; ++i) {
                v[i] = element::exp(v[i] - mx);
                sum += v[i];
            }
            const float inv = 1.f / warp_sum(sum);
#pragma unroll
            for (int i = 0; i < Per; ++i)
                if (lane + 32 * i < n) store<T>(y, o[1] + lane + 32 * i, v[i] * inv);
        } else {
            float mean = 0;
            if constexpr (R == RowKind::layernorm) {
                float sum = 0;
#pragma unroll
                for (int i = 0; i < Per; ++i) sum += v[i];
                mean = warp_sum(sum) / static_cast<float>(n);
            }
            float q = 0;
#pragma unroll
            for (int i = 0; i < Per; ++i) {
                const float d = lane + 32 * i < n ? v[i] - mean : 0.f;
                q += d * d;
            }
            const float rstd = 1.f / element::sqrt(warp_sum(q) / static_cast<float>(n) + a.epsilon);
#pragma unroll
            for (int i = 0; i < Per; ++i) {
                const int64_t j = lane + 32 * i;
                if (j >= n) continue;
                float out = (v[i] - mean) * rstd;
                if (a.has_gamma) out *= load<T>(gamma, j);
                if (a.has_beta) out += load<T>(beta, j);
                store<T>(y, o[1] + j, out);
            }
        }
    }
}

// Whether rows_cached_kernel takes the arguments: the row one unit-stride run,
// written whole, gamma and beta alike.
bool dense_rows(const RowArgs &a) {
    if (a.kind != RowKind::softmax && a.kind != RowKind::layernorm && a.kind != RowKind::rmsnorm) return false;
    if (a.row.rank > 1 || a.part.rank > 1 || a.part_x != 0 || a.part.count() != a.row.count()) return false;
    if (a.row.rank == 0) return true;
    return a.row.stride[0][0] == 1 && a.part.stride[0][0] == 1 && a.part.stride[1][0] == 1 &&
           (!a.has_gamma || a.part.stride[2][0] == 1) && (!a.has_beta || a.part.stride[3][0] == 1);
}

// ---- 16-byte vectors of a dense row ------------------------------------------------

// The elements of T in 16 bytes, and their conversion to and from f32.
template <DType T>
constexpr int kPack = T == DType::f32 ? 4 : 8;

template <DType T>
__device__ __forceinline__ void unpack(const uint4 &u, float (&f)[kPack<T>]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if constexpr (T == DType::f32) {
            f[i] = __uint_as_float(w[i]);
        } else if constexpr (T == DType::bf16) {
            f[2 * i] = element::bf16_to_float(static_cast<unsigned short>(w[i] & 0xffffu));
            f[2 * i + 1] = element::bf16_to_float(static_cast<unsigned short>(w[i] >> 16));
        } else {
            f[2 * i] = element::f16_to_float(static_cast<unsigned short>(w[i] & 0xffffu));
            f[2 * i + 1] = element::f16_to_float(static_cast<unsigned short>(w[i] >> 16));
        }
    }
}

template <DType T>
__device__ __forceinline__ uint4 pack(const float (&f)[kPack<T>]) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if constexpr (T == DType::f32) {
            w[i] = __float_as_uint(f[i]);
        } else if constexpr (T == DType::bf16) {
            w[i] = element::float_to_bf16(f[2 * i]) | static_cast<unsigned>(element::float_to_bf16(f[2 * i + 1])) << 16;
        } else {
            w[i] = element::float_to_f16(f[2 * i]) | static_cast<unsigned>(element::float_to_f16(f[2 * i + 1])) << 16;
        }
    }
    return uint4{w[0], w[1], w[2], w[3]};
}

// rows_cached_kernel with 16-byte loads and stores: a warp per dense row of
// n = 32·Packs·kPack<T> elements at most (n a multiple of kPack<T>, every row and
// gamma/beta 16-byte aligned), lane l holding packs l, l + 32, ... — a row of 768
// bf16 is 3 loads of 16 bytes a lane where the element-wise kernel makes 24.
template <DType T, RowKind R, int Packs>
__global__ void rows_vector_kernel(RowArgs a, const std::byte *x, std::byte *y, const std::byte *gamma,
                                   const std::byte *beta) {
    constexpr int V = kPack<T>;
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int64_t n = count_of(a.row), rows = count_of(a.outer), per_block = blockDim.x >> 5;
    const int64_t packs = n / V;
    for (int64_t r = blockIdx.x * per_block + (threadIdx.x >> 5); r < rows; r += int64_t{gridDim.x} * per_block) {
        int64_t o[2];
        offsets_of(a.outer, r, o);
        const auto *xr = reinterpret_cast<const uint4 *>(x + o[0] * (16 / V));
        float v[Packs][V];
#pragma unroll
        for (int i = 0; i < Packs; ++i) {
            const int64_t p = lane + 32 * i;
            if (p < packs) {
                unpack<T>(xr[p], v[i]);
            } else {
#pragma unroll
                for (int j = 0; j < V; ++j) v[i][j] = R == RowKind::softmax ? -kInf : 0.f;
            }
        }
        if constexpr (R == RowKind::softmax) {
            float mx = -kInf;
#pragma unroll
            for (int i = 0; i < Packs; ++i)
#pragma unroll
                for (int j = 0; j < V; ++j) mx = fmaxf(mx, v[i][j]);
            mx = warp_max(mx);
            float sum = 0;
#pragma unroll
            for (int i = 0; i < Packs; ++i)
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    v[i][j] = lane + 32 * i < packs ? element::exp(v[i][j] - mx) : 0.f;
                    sum += v[i][j];
                }
            const float inv = 1.f / warp_sum(sum);
#pragma unroll
            for (int i = 0; i < Packs; ++i)
#pragma unroll
                for (int j = 0; j < V; ++j) v[i][j] *= inv;
        } else {
            float mean = 0;
            if constexpr (R == RowKind::layernorm) {
                float sum = 0;
#pragma unroll
                for (int i = 0; i < Packs; ++i)
#pragma unroll
                    for (int j = 0; j < V; ++j) sum += v[i][j];
                mean = warp_sum(sum) / static_cast<float>(n);
            }
            float q = 0;
#pragma unroll
            for (int i = 0; i < Packs; ++i)
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    const float d = lane + 32 * i < packs ? v[i][j] - mean : 0.f;
                    q += d * d;
                }
            const float rstd = 1.f / element::sqrt(warp_sum(q) / static_cast<float>(n) + a.epsilon);
#pragma unroll
            for (int i = 0; i < Packs; ++i) {
                const int64_t p = lane + 32 * i;
                if (p >= packs) continue;
                float g[V], b[V];
                if (a.has_gamma) unpack<T>(reinterpret_cast<const uint4 *>(gamma)[p], g);
                if (a.has_beta) unpack<T>(reinterpret_cast<const uint4 *>(beta)[p], b);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    float out = (v[i][j] - mean) * rstd;
                    if (a.has_gamma) out *= g[j];
                    if (a.has_beta) out += b[j];
                    v[i][j] = out;
                }
            }
        }
        auto *yr = reinterpret_cast<uint4 *>(y + o[1] * (16 / V));
#pragma unroll
        for (int i = 0; i < Packs; ++i)
            if (const int64_t p = lane + 32 * i; p < packs) yr[p] = pack<T>(v[i]);
    }
}

// Whether rows_vector_kernel takes a dense-row launch (dense_rows already true):
// whole 16-byte packs per row, every row start and pointer 16-byte aligned.
template <DType T>
bool vector_rows(const RowArgs &a, const std::byte *x, const std::byte *y, const std::byte *gamma,
                 const std::byte *beta) {
    constexpr int64_t bytes = T == DType::f32 ? 4 : 2;
    const int64_t n = a.row.count();
    if (n % kPack<T> != 0 || n / kPack<T> > 32 * 4) return false;
    auto aligned = [](const void *p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    if (!aligned(x) || !aligned(y) || (a.has_gamma && !aligned(gamma)) || (a.has_beta && !aligned(beta))) return false;
    for (int d = 0; d < a.outer.rank; ++d)
        if (a.outer.shape[d] > 1 && ((a.outer.stride[0][d] * bytes) % 16 != 0 || (a.outer.stride[1][d] * bytes) % 16 != 0))
            return false;
    return true;
}

template <DType T, RowKind R>
Status launch_rows_as(const RowArgs &a, const std::byte *x, std::byte *y, const std::byte *gamma, const std::byte *beta,
                      cudaStream_t stream) {
    const int64_t rows = a.outer.count(), n = a.row.count();
    const bool strided_row = a.row.rank > 0 && a.row.stride[0][a.row.rank - 1] != 1;
    const bool adjacent_rows = a.outer.rank > 0 && a.outer.stride[0][a.outer.rank - 1] == 1;
    if constexpr (R == RowKind::softmax || R == RowKind::layernorm || R == RowKind::rmsnorm) {
        if (dense_rows(a) && vector_rows<T>(a, x, y, gamma, beta)) {
            const unsigned grid = grid_for(rows, 8);
            const int64_t packs = n / kPack<T>;
            if (packs <= 32)
                rows_vector_kernel<T, R, 1><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            else if (packs <= 64)
                rows_vector_kernel<T, R, 2><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            else if (packs <= 96)
                rows_vector_kernel<T, R, 3><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            else
                rows_vector_kernel<T, R, 4><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            return launched("row kernel launch");
        }
        if (dense_rows(a) && n <= 32 * 32) {
            const unsigned grid = grid_for(rows, 8);
            if (n <= 32 * 4)
                rows_cached_kernel<T, R, 4><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            else if (n <= 32 * 8)
                rows_cached_kernel<T, R, 8><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            else if (n <= 32 * 16)
                rows_cached_kernel<T, R, 16><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            else
                rows_cached_kernel<T, R, 32><<<grid, 256, 0, stream>>>(a, x, y, gamma, beta);
            return launched("row kernel launch");
        }
    }
    if (strided_row && adjacent_rows && rows >= 4096) {
        rows_thread_kernel<T, R><<<grid_for(rows, 256), 256, 0, stream>>>(a, x, y, gamma, beta);
    } else if (n <= 4096) {
        rows_group_kernel<T, R, false><<<grid_for(rows, 8), 256, 0, stream>>>(a, x, y, gamma, beta);
    } else {
        rows_group_kernel<T, R, true><<<grid_for(rows, 1), 512, 0, stream>>>(a, x, y, gamma, beta);
    }
    return launched("row kernel launch");
}

template <DType T>
Status launch_rows_typed(const RowArgs &a, const std::byte *x, std::byte *y, const std::byte *gamma,
                         const std::byte *beta, cudaStream_t stream) {
    switch (a.kind) {
        case RowKind::softmax: return launch_rows_as<T, RowKind::softmax>(a, x, y, gamma, beta, stream);
        case RowKind::layernorm: return launch_rows_as<T, RowKind::layernorm>(a, x, y, gamma, beta, stream);
        case RowKind::rmsnorm: return launch_rows_as<T, RowKind::rmsnorm>(a, x, y, gamma, beta, stream);
        case RowKind::reduce_sum: return launch_rows_as<T, RowKind::reduce_sum>(a, x, y, gamma, beta, stream);
        case RowKind::reduce_mean: return launch_rows_as<T, RowKind::reduce_mean>(a, x, y, gamma, beta, stream);
        case RowKind::reduce_max: return launch_rows_as<T, RowKind::reduce_max>(a, x, y, gamma, beta, stream);
    }
    return unexpected(std::string("row kernel: unknown kind"));
}

// ---- batchnorm -----------------------------------------------------------------------

struct BatchNormParams {
    const std::byte *p[4];  // scale, bias, mean, var
};

template <DType T>
__global__ void batchnorm_kernel(BatchNormArgs a, BatchNormParams params, const std::byte *x, std::byte *y) {
    const int64_t count = count_of(a.all);
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
        int64_t o[3];
        offsets_of(a.all, i, o);
        const int64_t c = o[2];
        const float scale = load<T>(params.p[0], c * a.param_stride[0]);
        const float bias = load<T>(params.p[1], c * a.param_stride[1]);
        const float mean = load<T>(params.p[2], c * a.param_stride[2]);
        const float var = load<T>(params.p[3], c * a.param_stride[3]);
        store<T>(y, o[1], (load<T>(x, o[0]) - mean) / element::sqrt(var + a.epsilon) * scale + bias);
    }
}

// ---- pooling ---------------------------------------------------------------------------

template <DType T>
__global__ void pool_kernel(PoolArgs a, const std::byte *x, std::byte *y) {
    const int64_t count = a.n * a.c * a.p * a.q;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
        int64_t rest = i;
        const int64_t q = rest % a.q;
        rest /= a.q;
        const int64_t p = rest % a.p;
        rest /= a.p;
        const int64_t c = rest % a.c;
        const int64_t n = rest / a.c;
        const std::byte *plane = x;
        const int64_t base = n * a.x_stride[0] + c * a.x_stride[1];
        const int64_t h0 = p * a.stride_h - a.pad_h, w0 = q * a.stride_w - a.pad_w;
        float acc = a.max ? -kInf : 0.f;
        int64_t seen = 0;
        for (int64_t r = 0; r < a.kernel_h; ++r) {
            const int64_t h = h0 + r;
            if (h < 0 || h >= a.h) continue;
            for (int64_t s = 0; s < a.kernel_w; ++s) {
                const int64_t w = w0 + s;
                if (w < 0 || w >= a.w) continue;
                const float v = load<T>(plane, base + h * a.x_stride[2] + w * a.x_stride[3]);
                // NaN propagates, as in the reference and the frameworks' max pooling.
                if (a.max)
                    acc = (element::is_nan(v) || element::is_nan(acc)) ? element::quiet_nan() : fmaxf(acc, v);
                else
                    acc += v;
                ++seen;
            }
        }
        if (!a.max) acc /= static_cast<float>(a.count_include_pad ? a.kernel_h * a.kernel_w : seen);
        store<T>(y, n * a.y_stride[0] + c * a.y_stride[1] + p * a.y_stride[2] + q * a.y_stride[3], acc);
    }
}

// ---- attention: the simple kernel -------------------------------------------------------

// A warp per query row (b, h, s), streaming the keys with an online softmax; each
// lane keeps kColumns output columns, and heads wider than 32·kColumns take several
// passes over the keys.
constexpr int kColumns = 4;

template <DType T>
__global__ void attention_rows_kernel(AttentionArgs a, const std::byte *q, const std::byte *k, const std::byte *v,
                                      const std::byte *mask, std::byte *y) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int64_t warps_per_block = blockDim.x >> 5;
    const int64_t total = a.batches * a.heads * a.rows;
    for (int64_t w = blockIdx.x * warps_per_block + (threadIdx.x >> 5); w < total;
         w += int64_t{gridDim.x} * warps_per_block) {
        const int64_t s = w % a.rows, pair = w / a.rows;
        const int64_t h = pair % a.heads, b = pair / a.heads;
        const int64_t qo = b * a.q_stride[0] + s * a.q_stride[1] + h * a.e * a.q_stride[2];
        const int64_t ko = b * a.k_stride[0] + h * a.e * a.k_stride[2];
        const int64_t vo = b * a.v_stride[0] + h * a.ev * a.v_stride[2];
        const int64_t yo = b * a.y_stride[0] + s * a.y_stride[1] + h * a.ev * a.y_stride[2];
        const int64_t keys = a.causal ? std::min(a.keys, s + a.row0 + 1) : a.keys;
        for (int64_t c0 = 0; c0 < a.columns; c0 += 32 * kColumns) {
            float acc[kColumns] = {};
            float m = -kInf, l = 0;
            for (int64_t j = 0; j < keys; ++j) {
                float dot = 0;
                for (int64_t c = lane; c < a.e; c += 32)
                    dot += load<T>(q, qo + c * a.q_stride[2]) * load<T>(k, ko + j * a.k_stride[1] + c * a.k_stride[2]);
                float score = warp_sum(dot) * a.scale;
                if (a.has_mask) score += load<T>(mask, s * a.mask_stride[0] + j * a.mask_stride[1]);
                const float m_new = fmaxf(m, score);
                if (m_new == -kInf) continue;  // every key so far hidden: nothing to weigh yet
                const float alpha = element::exp(m - m_new), p = element::exp(score - m_new);
                l = l * alpha + p;
#pragma unroll
                for (int t = 0; t < kColumns; ++t) {
                    const int64_t c = c0 + lane + 32 * t;
                    const float vv = c < a.columns ? load<T>(v, vo + j * a.v_stride[1] + c * a.v_stride[2]) : 0.f;
                    acc[t] = acc[t] * alpha + p * vv;
                }
                m = m_new;
            }
            // A row with every key hidden divides 0 by 0: NaN, as the reference.
#pragma unroll
            for (int t = 0; t < kColumns; ++t) {
                const int64_t c = c0 + lane + 32 * t;
                if (c < a.columns) store<T>(y, yo + c * a.y_stride[2], acc[t] / l);
            }
        }
    }
}

// ---- attention: the tiled tensor-core kernel ----------------------------------------------
//
// FlashAttention-2's forward pass for bf16/f16 heads of D = 64 or 128 (E = Ev = D,
// every column of y, unit column strides, 16-byte aligned rows). A block of four
// warps takes 64·MT query rows of one (b, h); each warp owns 16·MT rows (MT row
// fragments of 16, each K and V fragment read from shared memory feeding MT
// products) and keeps Q's fragments in registers for the whole pass. K and V tiles
// of KT keys are double-buffered in shared memory (cp.async); S = Q·Kᵀ and
// O += P·V run on mma.sync m16n8k16 with f32 accumulation; the softmax is online in
// the log2 domain, its statistics in registers. No score matrix is stored. Under a
// causal mask a warp skips the key tiles wholly above its rows, and the blocks of
// the heaviest row tiles (the last rows) of every (b, h) are scheduled first.
//
// The kernel is latency-bound (Nsight Compute on an H100, its form with MT = 2:
// 30 % of issue slots busy), so warps an SM matter more than reuse within a warp: of the shapes timed
// in the GPT-2 block (docs/gpu.md), MT = 1, KT = 64 with at most 128 registers
// (four blocks, sixteen warps an SM) was fastest, MT = 2 (255 registers, eight
// warps) and KT = 128 slower.

constexpr int kFlashThreads = 128, kFlashWarps = kFlashThreads / 32;

template <int MT>
constexpr int flash_tile_rows() {
    return kFlashWarps * 16 * MT;
}

__device__ __forceinline__ void cp_async16(unsigned smem, const void *global, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(global), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <bool Bf16>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (Bf16)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem));
}

// 2^x by the hardware's approximation (2 ulp, flushing subnormals): the weights it
// gives are rounded to 16 bits for the P·V product anyway, and the accurate exp2f
// costs several instructions in the loop that bounds the kernel.
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem));
}

// Two f32 values as one register of two 16-bit floats, the first in the low half.
// (The hardware's round-to-nearest-even conversion: the hot loop's P matrix.)
template <bool Bf16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned u;
    if constexpr (Bf16) {
        const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
        memcpy(&u, &p, 4);
    } else {
        const __half2 p = __floats2half2_rn(lo, hi);
        memcpy(&u, &p, 4);
    }
    return u;
}

template <int D, int MT, int KT>
constexpr int flash_smem_bytes() {
    return (flash_tile_rows<MT>() + 4 * KT) * (D + 8) * 2;
}

// Copies `Rows` rows of D 16-bit elements (global row `first` + r, `stride` apart)
// into shared rows LD apart, 16 bytes per cp.async; rows at or past `end` are
// filled with zeros (a zero V row times a zero weight adds nothing, not NaN).
template <int D, int Rows>
__device__ __forceinline__ void load_tile(unsigned short *dst, const unsigned short *src, int64_t stride, int64_t first,
                                          int64_t end, int tid) {
    constexpr int LD = D + 8, kChunks = D / 8, kRowStep = kFlashThreads / kChunks;
    static_assert(Rows % kRowStep == 0, "whole chunks per thread");
    // Thread tid copies the chunk (tid % kChunks) of rows tid / kChunks + n·kRowStep.
    const int r = tid / kChunks, c = (tid % kChunks) * 8;
    const unsigned short *from = src + (first + r) * stride + c;
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst + r * LD + c));
#pragma unroll
    for (int n = 0; n < Rows / kRowStep; ++n) {
        const bool inside = first + r + n * kRowStep < end;
        cp_async16(to + n * kRowStep * LD * 2, inside ? from + n * kRowStep * stride : src, inside ? 16 : 0);
    }
}

template <DType T, int D, int MT, int KT, int MinBlocks>
__global__ void __launch_bounds__(kFlashThreads, MinBlocks)
    attention_flash_kernel(AttentionArgs a, const std::byte *q_, const std::byte *k_, const std::byte *v_,
                           const std::byte *mask, std::byte *y_) {
    constexpr bool kBf16 = T == DType::bf16;
    constexpr int kRows = flash_tile_rows<MT>();
    constexpr int LD = D + 8;  // padded rows: conflict-free ldmatrix
    extern __shared__ __align__(16) unsigned short smem[];
    unsigned short *qs = smem;
    unsigned short *ks = qs + kRows * LD;  // [2][KT][LD]
    unsigned short *vs = ks + 2 * KT * LD;

    const auto *q = reinterpret_cast<const unsigned short *>(q_);
    const auto *k = reinterpret_cast<const unsigned short *>(k_);
    const auto *v = reinterpret_cast<const unsigned short *>(v_);
    auto *y = reinterpret_cast<unsigned short *>(y_);
    const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, c2 = (lane & 3) * 2, matrix = lane >> 3;
    // blockIdx.y counts row tiles from the last: every (b, h)'s heaviest causal
    // tile is scheduled before any lighter one.
    // Rows fit an int: the launch refuses more than 65535 row tiles.
    const int r0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kRows;
    const int warp_row = r0 + warp * 16 * MT;  // the warp's first row of the shard
    int rows[MT][2];                           // this thread's rows
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        rows[mt][0] = warp_row + mt * 16 + g;
        rows[mt][1] = warp_row + mt * 16 + g + 8;
    }
    const float scale_log2 = a.scale * 1.4426950408889634f;
    const float log2e = 1.4426950408889634f;

    for (int64_t pair = blockIdx.x; pair < a.batches * a.heads; pair += gridDim.x) {
        const int64_t b = pair / a.heads, h = pair % a.heads;
        const unsigned short *kp = k + b * a.k_stride[0] + h * D;
        const unsigned short *vp = v + b * a.v_stride[0] + h * D;
        int64_t key_end = a.keys;
        if (a.causal) key_end = std::min(key_end, a.row0 + std::min<int64_t>(r0 + kRows, a.rows));
        const int tiles = static_cast<int>((key_end + KT - 1) / KT);
        // Under a causal mask the keys past the warp's last row are hidden from all of it.
        int64_t warp_key_end = a.keys;
        if (a.causal) warp_key_end = std::min(warp_key_end, a.row0 + warp_row + 16 * MT);
        auto load_kv = [&](int t) {
            const int64_t first = int64_t{t} * KT;
            load_tile<D, KT>(ks + (t & 1) * KT * LD, kp, a.k_stride[1], first, a.keys, tid);
            load_tile<D, KT>(vs + (t & 1) * KT * LD, vp, a.v_stride[1], first, a.keys, tid);
        };

        __syncthreads();  // the previous pair's tiles are no longer read
        load_tile<D, kRows>(qs, q + b * a.q_stride[0] + h * D, a.q_stride[1], r0, a.rows, tid);
        if (tiles > 0) load_kv(0);
        cp_async_commit();

        unsigned qa[MT][D / 16][4];
        float o[MT][D / 8][4] = {};
        float m[MT][2], l[MT][2] = {};
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = -kInf;
        for (int t = 0; t < tiles; ++t) {
            if (t + 1 < tiles) {
                load_kv(t + 1);
                cp_async_commit();
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            __syncthreads();
            if (t == 0) {
                // Q's A fragments (matrices: rows +0 | +8, columns kk·16 + 0 | 8), once per pass.
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int kk = 0; kk < D / 16; ++kk) {
                        const unsigned short *qat = qs + (warp * 16 * MT + mt * 16 + (matrix & 1) * 8 + (lane & 7)) * LD +
                                                    kk * 16 + (matrix >> 1) * 8;
                        ldmatrix_x4(qa[mt][kk], static_cast<unsigned>(__cvta_generic_to_shared(qat)));
                    }
            }
            const unsigned short *kt = ks + (t & 1) * KT * LD;
            const unsigned short *vt = vs + (t & 1) * KT * LD;
            const int64_t key0 = int64_t{t} * KT;

            if (key0 < warp_key_end) {
                // S = Q·Kᵀ. One ldmatrix gives the B fragments of two key groups (keys
                // nt·8… | (nt+1)·8…, columns kk·16 + 0 | 8), used by every row fragment.
                float s[MT][KT / 8][4] = {};
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
                    for (int nt = 0; nt < KT / 8; nt += 2) {
                        unsigned bf[4];
                        const unsigned short *at =
                            kt + ((nt + (matrix >> 1)) * 8 + (lane & 7)) * LD + kk * 16 + (matrix & 1) * 8;
                        ldmatrix_x4(bf, static_cast<unsigned>(__cvta_generic_to_shared(at)));
#pragma unroll
                        for (int mt = 0; mt < MT; ++mt) {
                            mma16816<kBf16>(s[mt][nt], qa[mt][kk], bf[0], bf[1]);
                            mma16816<kBf16>(s[mt][nt + 1], qa[mt][kk], bf[2], bf[3]);
                        }
                    }

                // Scores in the log2 domain, hidden keys −∞. A tile below the diagonal,
                // inside the keys and without a mask hides nothing.
                const bool plain = !a.has_mask && key0 + KT <= a.keys &&
                                   (!a.causal || key0 + KT - 1 <= a.row0 + warp_row);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    float tile_max[2] = {-kInf, -kInf};
#pragma unroll
                    for (int nt = 0; nt < KT / 8; ++nt)
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            float x = s[mt][nt][i] * scale_log2;
                            if (!plain) {
                                const int64_t key = key0 + nt * 8 + c2 + (i & 1);
                                const int64_t row = rows[mt][i >> 1];
                                if (key >= a.keys || (a.causal && key > row + a.row0)) {
                                    x = -kInf;
                                } else if (a.has_mask && row < a.rows) {
                                    x += log2e * load<T>(mask, row * a.mask_stride[0] + key * a.mask_stride[1]);
                                }
                            }
                            s[mt][nt][i] = x;
                            tile_max[i >> 1] = fmaxf(tile_max[i >> 1], x);
                        }
                    float alpha[2], m_use[2];
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        float mx = tile_max[half];
                        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                        const float m_new = fmaxf(m[mt][half], mx);
                        // While every key of a row is hidden its maximum is −∞: weigh
                        // against 0 so that exp2 gives 0, not NaN.
                        m_use[half] = m_new == -kInf ? 0.f : m_new;
                        alpha[half] = fast_exp2(m[mt][half] - m_use[half]);
                        m[mt][half] = m_new;
                    }
                    float row_sum[2] = {0.f, 0.f};
#pragma unroll
                    for (int nt = 0; nt < KT / 8; ++nt)
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            s[mt][nt][i] = fast_exp2(s[mt][nt][i] - m_use[i >> 1]);
                            row_sum[i >> 1] += s[mt][nt][i];
                        }
#pragma unroll
                    for (int half = 0; half < 2; ++half) l[mt][half] = l[mt][half] * alpha[half] + row_sum[half];
#pragma unroll
                    for (int dn = 0; dn < D / 8; ++dn) {
                        o[mt][dn][0] *= alpha[0];
                        o[mt][dn][1] *= alpha[0];
                        o[mt][dn][2] *= alpha[1];
                        o[mt][dn][3] *= alpha[1];
                    }
                }

                // O += P·V, P as A fragments straight from the score registers; one
                // transposing ldmatrix gives the V fragments of two column groups.
#pragma unroll
                for (int j = 0; j < KT / 16; ++j) {
                    unsigned pa[MT][4];
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        pa[mt][0] = pack2<kBf16>(s[mt][2 * j][0], s[mt][2 * j][1]);
                        pa[mt][1] = pack2<kBf16>(s[mt][2 * j][2], s[mt][2 * j][3]);
                        pa[mt][2] = pack2<kBf16>(s[mt][2 * j + 1][0], s[mt][2 * j + 1][1]);
                        pa[mt][3] = pack2<kBf16>(s[mt][2 * j + 1][2], s[mt][2 * j + 1][3]);
                    }
#pragma unroll
                    for (int dn = 0; dn < D / 8; dn += 2) {
                        unsigned bf[4];
                        const unsigned short *at = vt + (j * 16 + (lane & 15)) * LD + dn * 8 + (lane >> 4) * 8;
                        ldmatrix_x4_trans(bf, static_cast<unsigned>(__cvta_generic_to_shared(at)));
#pragma unroll
                        for (int mt = 0; mt < MT; ++mt) {
                            mma16816<kBf16>(o[mt][dn], pa[mt], bf[0], bf[1]);
                            mma16816<kBf16>(o[mt][dn + 1], pa[mt], bf[2], bf[3]);
                        }
                    }
                }
            }
            __syncthreads();  // this buffer is refilled by the next iteration's load
        }

        // y = O / l; a row with every key hidden has l = 0 and gives NaN, as the reference.
        unsigned short *yp = y + b * a.y_stride[0] + h * D;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                float total = l[mt][half];
                total += __shfl_xor_sync(0xffffffffu, total, 1);
                total += __shfl_xor_sync(0xffffffffu, total, 2);
                const float inv = 1.f / total;
                if (rows[mt][half] >= a.rows) continue;
                unsigned short *yr = yp + rows[mt][half] * a.y_stride[1];
#pragma unroll
                for (int dn = 0; dn < D / 8; ++dn)
                    *reinterpret_cast<unsigned *>(yr + dn * 8 + c2) =
                        pack2<kBf16>(o[mt][dn][2 * half] * inv, o[mt][dn][2 * half + 1] * inv);
            }
    }
}

template <DType T, int D, int MT, int KT, int MinBlocks>
Status launch_flash(const AttentionArgs &a, const std::byte *q, const std::byte *k, const std::byte *v,
                    const std::byte *mask, std::byte *y, cudaStream_t stream) {
    constexpr int bytes = flash_smem_bytes<D, MT, KT>();
    if constexpr (bytes > 48 * 1024) {
        const cudaError_t e =
            cudaFuncSetAttribute(attention_flash_kernel<T, D, MT, KT, MinBlocks>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (e != cudaSuccess) return unexpected(cuda_error("attention: cudaFuncSetAttribute", e));
    }
    const int64_t tiles = (a.rows + flash_tile_rows<MT>() - 1) / flash_tile_rows<MT>();
    const int64_t pairs = a.batches * a.heads;
    if (tiles > 65535)
        return unexpected("attention: " + std::to_string(a.rows) + " query rows are more tiles than a grid holds");
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(pairs, int64_t{1} << 30)), static_cast<unsigned>(tiles));
    attention_flash_kernel<T, D, MT, KT, MinBlocks><<<grid, kFlashThreads, bytes, stream>>>(a, q, k, v, mask, y);
    return launched("attention (tiled) launch");
}

bool aligned16(const void *p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <DType T>
Status launch_attention_typed(const AttentionArgs &a, const std::byte *q, const std::byte *k, const std::byte *v,
                              const std::byte *mask, std::byte *y, cudaStream_t stream) {
    if constexpr (T != DType::f32) {
        if (attention_flash_shape(a) && aligned16(q) && aligned16(k) && aligned16(v) && aligned16(y)) {
            // The shapes measured best on an H100 (docs/gpu.md): for D = 64 one row
            // fragment a warp at most 128 registers, four blocks an SM.
            if (a.e == 64) return launch_flash<T, 64, 1, 64, 4>(a, q, k, v, mask, y, stream);
            return launch_flash<T, 128, 1, 64, 1>(a, q, k, v, mask, y, stream);
        }
    }
    const int64_t warps = a.batches * a.heads * a.rows;
    attention_rows_kernel<T><<<grid_for(warps, 8), 256, 0, stream>>>(a, q, k, v, mask, y);
    return launched("attention launch");
}

}  // namespace

// ---- entry points -----------------------------------------------------------------------

Status launch_rows(const RowArgs &args, const std::byte *x, std::byte *y, const std::byte *gamma, const std::byte *beta,
                   cudaStream_t stream) {
    if (args.outer.count() == 0 || args.row.count() == 0) return std::monostate{};
    switch (args.dtype) {
        case DType::f32: return launch_rows_typed<DType::f32>(args, x, y, gamma, beta, stream);
        case DType::bf16: return launch_rows_typed<DType::bf16>(args, x, y, gamma, beta, stream);
        case DType::f16: return launch_rows_typed<DType::f16>(args, x, y, gamma, beta, stream);
        default: return unexpected(std::string("row kernel: unsupported dtype ") + std::string(dtype_name(args.dtype)));
    }
}

Status launch_batchnorm(const BatchNormArgs &args, const std::byte *x, std::byte *y, const std::byte *const params[4],
                        cudaStream_t stream) {
    const int64_t count = args.all.count();
    if (count == 0) return std::monostate{};
    const BatchNormParams p{{params[0], params[1], params[2], params[3]}};
    const unsigned grid = grid_for(count, 256);
    switch (args.dtype) {
        case DType::f32: batchnorm_kernel<DType::f32><<<grid, 256, 0, stream>>>(args, p, x, y); break;
        case DType::bf16: batchnorm_kernel<DType::bf16><<<grid, 256, 0, stream>>>(args, p, x, y); break;
        case DType::f16: batchnorm_kernel<DType::f16><<<grid, 256, 0, stream>>>(args, p, x, y); break;
        default: return unexpected(std::string("batchnorm: unsupported dtype ") + std::string(dtype_name(args.dtype)));
    }
    return launched("batchnorm launch");
}

Status launch_pool(const PoolArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream) {
    const int64_t count = args.n * args.c * args.p * args.q;
    if (count == 0) return std::monostate{};
    const unsigned grid = grid_for(count, 256);
    switch (args.dtype) {
        case DType::f32: pool_kernel<DType::f32><<<grid, 256, 0, stream>>>(args, x, y); break;
        case DType::bf16: pool_kernel<DType::bf16><<<grid, 256, 0, stream>>>(args, x, y); break;
        case DType::f16: pool_kernel<DType::f16><<<grid, 256, 0, stream>>>(args, x, y); break;
        default: return unexpected(std::string("pooling: unsupported dtype ") + std::string(dtype_name(args.dtype)));
    }
    return launched("pooling launch");
}

bool attention_flash_shape(const AttentionArgs &a) {
    if (a.dtype != DType::bf16 && a.dtype != DType::f16) return false;
    if ((a.e != 64 && a.e != 128) || a.ev != a.e || a.columns != a.e) return false;
    const std::int64_t *strides[4] = {a.q_stride, a.k_stride, a.v_stride, a.y_stride};
    for (const std::int64_t *s : strides)
        if (s[2] != 1 || s[0] % 8 != 0 || s[1] % 8 != 0) return false;
    return true;
}

Status launch_attention(const AttentionArgs &args, const std::byte *q, const std::byte *k, const std::byte *v,
                        const std::byte *mask, std::byte *y, cudaStream_t stream) {
    if (args.batches * args.heads * args.rows == 0 || args.columns == 0) return std::monostate{};
    switch (args.dtype) {
        case DType::f32: return launch_attention_typed<DType::f32>(args, q, k, v, mask, y, stream);
        case DType::bf16: return launch_attention_typed<DType::bf16>(args, q, k, v, mask, y, stream);
        case DType::f16: return launch_attention_typed<DType::f16>(args, q, k, v, mask, y, stream);
        default: return unexpected(std::string("attention: unsupported dtype ") + std::string(dtype_name(args.dtype)));
    }
}

}  // namespace tapestry::cuda
