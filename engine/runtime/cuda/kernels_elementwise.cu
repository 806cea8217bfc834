// Device code of the elementwise kernels (elementwise_launch.h): unary and binary
// kinds and cast over strided loops of up to kMaxLoopRank dims. Three paths:
//   dense  - one contiguous run per operand, one dtype, 16-byte aligned pointers:
//            16-byte vector loads and stores (4 f32 or 8 bf16/f16 per access);
//   rows   - an inner dim of at least kRowMin points: a 2-D grid, blocks take rows
//            (their offsets computed once per row) and stride along the row;
//   flat   - anything else: a grid-stride loop decomposing each point's index
//            (32-bit division when the loop has under 2^31 points).
// Indexing is int64 throughout (tensors of more than 2^31 elements).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/context.h"
#include "runtime/cuda/element_math.h"
#include "runtime/cuda/elementwise_launch.h"

namespace tapestry::cuda {

namespace {

using std::int64_t;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond: ~16 waves of an H100/H200
constexpr int64_t kRowMin = 128;       // an inner dim at least this long takes the rows path

// ---- element access ---------------------------------------------------------------

template <DType T>
struct Storage {
    using type = unsigned short;
};
template <>
struct Storage<DType::f32> {
    using type = float;
};
template <DType T>
using storage_t = typename Storage<T>::type;

template <DType T>
__device__ __forceinline__ float to_f32(storage_t<T> s) {
    if constexpr (T == DType::f32)
        return s;
    else if constexpr (T == DType::bf16)
        return element::bf16_to_float(s);
    else
        return element::f16_to_float(s);
}

template <DType T>
__device__ __forceinline__ storage_t<T> from_f32(float v) {
    if constexpr (T == DType::f32)
        return v;
    else if constexpr (T == DType::bf16)
        return element::float_to_bf16(v);
    else
        return element::float_to_f16(v);
}

// A float dtype chosen at run time (uniform across the grid: no divergence).
__device__ __forceinline__ float load_float(const std::byte *base, int64_t i, DType t) {
    if (t == DType::f32) return reinterpret_cast<const float *>(base)[i];
    const unsigned short h = reinterpret_cast<const unsigned short *>(base)[i];
    return t == DType::bf16 ? element::bf16_to_float(h) : element::f16_to_float(h);
}

__device__ __forceinline__ void store_float(std::byte *base, int64_t i, DType t, float v) {
    if (t == DType::f32)
        reinterpret_cast<float *>(base)[i] = v;
    else if (t == DType::bf16)
        reinterpret_cast<unsigned short *>(base)[i] = element::float_to_bf16(v);
    else
        reinterpret_cast<unsigned short *>(base)[i] = element::float_to_f16(v);
}

// ---- the element functions ----------------------------------------------------------

template <UnaryFn F>
__device__ __forceinline__ float unary(float x, float a, float b) {
    namespace e = element;
    if constexpr (F == UnaryFn::relu)
        return e::relu(x);
    else if constexpr (F == UnaryFn::gelu_erf)
        return e::gelu(x, false);
    else if constexpr (F == UnaryFn::gelu_tanh)
        return e::gelu(x, true);
    else if constexpr (F == UnaryFn::sigmoid)
        return e::sigmoid(x);
    else if constexpr (F == UnaryFn::tanh)
        return e::tanh(x);
    else if constexpr (F == UnaryFn::exp)
        return e::exp(x);
    else if constexpr (F == UnaryFn::log)
        return e::log(x);
    else if constexpr (F == UnaryFn::neg)
        return e::neg(x);
    else if constexpr (F == UnaryFn::abs)
        return e::abs(x);
    else if constexpr (F == UnaryFn::erf)
        return e::erf(x);
    else if constexpr (F == UnaryFn::sqrt)
        return e::sqrt(x);
    else if constexpr (F == UnaryFn::reciprocal)
        return e::reciprocal(x);
    else if constexpr (F == UnaryFn::softplus)
        return e::softplus(x);
    else if constexpr (F == UnaryFn::softsign)
        return e::softsign(x);
    else if constexpr (F == UnaryFn::hard_swish)
        return e::hard_swish(x);
    else if constexpr (F == UnaryFn::leaky_relu)
        return e::leaky_relu(x, a);
    else if constexpr (F == UnaryFn::elu)
        return e::elu(x, a);
    else if constexpr (F == UnaryFn::selu)
        return e::selu(x, a, b);
    else if constexpr (F == UnaryFn::hard_sigmoid)
        return e::hard_sigmoid(x, a, b);
    else if constexpr (F == UnaryFn::clip)
        return e::clip(x, a, b);
    else
        return e::pow(x, a);
}

template <BinaryFn F>
__device__ __forceinline__ float binary(float a, float b) {
    namespace e = element;
    if constexpr (F == BinaryFn::add)
        return e::add(a, b);
    else if constexpr (F == BinaryFn::sub)
        return e::sub(a, b);
    else if constexpr (F == BinaryFn::mul)
        return e::mul(a, b);
    else if constexpr (F == BinaryFn::div)
        return e::div(a, b);
    else if constexpr (F == BinaryFn::max)
        return e::max(a, b);
    else
        return e::min(a, b);
}

// ---- cast (the CPU cast kernel's load_any / store_any) -------------------------------------

__device__ __forceinline__ double load_any(const std::byte *base, int64_t i, DType t) {
    switch (t) {
        case DType::i32: return reinterpret_cast<const int *>(base)[i];
        case DType::i64: return static_cast<double>(reinterpret_cast<const long long *>(base)[i]);
        case DType::boolean: return base[i] != std::byte{0} ? 1.0 : 0.0;
        default: return load_float(base, i, t);
    }
}

// double -> float truncated toward zero with a sticky low bit when inexact, so that
// a second rounding to a 16-bit format rounds once, correctly.
__device__ __forceinline__ float to_float_sticky(double v) {
    float f = static_cast<float>(v);
    if (v != v || static_cast<double>(f) == v) return f;
    if (fabs(static_cast<double>(f)) > fabs(v)) f = nextafterf(f, 0.0f);
    return element::bits_float(element::float_bits(f) | 1u);
}

template <typename I>
__device__ __forceinline__ I to_integer(double v, double upper, I lowest, I highest) {
    if (v != v) return 0;
    if (v >= upper) return highest;
    if (v <= -upper) return lowest;
    return static_cast<I>(v);
}

__device__ __forceinline__ void store_any(std::byte *base, int64_t i, DType t, double v) {
    switch (t) {
        case DType::f32: reinterpret_cast<float *>(base)[i] = static_cast<float>(v); return;
        case DType::f16:
            reinterpret_cast<unsigned short *>(base)[i] = element::float_to_f16(to_float_sticky(v));
            return;
        case DType::bf16:
            reinterpret_cast<unsigned short *>(base)[i] = element::float_to_bf16(to_float_sticky(v));
            return;
        case DType::i32:
            reinterpret_cast<int *>(base)[i] = to_integer<int>(v, 2147483648.0, -2147483647 - 1, 2147483647);
            return;
        case DType::i64:
            reinterpret_cast<long long *>(base)[i] =
                to_integer<long long>(v, 9223372036854775808.0, -9223372036854775807LL - 1, 9223372036854775807LL);
            return;
        case DType::boolean: base[i] = std::byte{static_cast<unsigned char>(v != 0 ? 1 : 0)}; return;
    }
}

// ---- per-point operations (offsets o: one per loop set) ------------------------------------

template <UnaryFn F>
struct UnaryPoint {
    const std::byte *x;
    std::byte *y;
    DType tx, ty;
    float a, b;
    __device__ __forceinline__ void operator()(const int64_t (&o)[2]) const {
        store_float(y, o[1], ty, unary<F>(load_float(x, o[0], tx), a, b));
    }
};

template <BinaryFn F>
struct BinaryPoint {
    const std::byte *a, *b;
    std::byte *y;
    DType ta, tb, ty;
    __device__ __forceinline__ void operator()(const int64_t (&o)[3]) const {
        store_float(y, o[2], ty, binary<F>(load_float(a, o[0], ta), load_float(b, o[1], tb)));
    }
};

struct CastPoint {
    const std::byte *x;
    std::byte *y;
    DType from, to;
    bool float_to_float;  // both float dtypes: exact in f32, no double arithmetic
    __device__ __forceinline__ void operator()(const int64_t (&o)[2]) const {
        if (float_to_float)
            store_float(y, o[1], to, load_float(x, o[0], from));
        else
            store_any(y, o[1], to, load_any(x, o[0], from));
    }
};

// ---- strided paths -------------------------------------------------------------------------

// A loop split into its last dim (the row) and the others (unrolled loops keep
// the arrays in the parameter bank instead of local memory).
template <int K>
struct RowLoop {
    Loop<K> outer;  // every dim but the last
    int64_t rows = 1, inner = 0;
    int64_t inner_stride[K] = {};
};

// The offsets of point i of a loop in each set, with index type I (32-bit
// division where the loop allows).
template <int K, typename I>
__device__ __forceinline__ void point_offsets(const Loop<K> &l, I i, int64_t (&o)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) o[k] = 0;
#pragma unroll
    for (int d = kMaxLoopRank - 1; d >= 0; --d) {
        if (d >= l.rank) continue;
        const I e = static_cast<I>(l.shape[d]);
        const I c = i % e;
        i /= e;
#pragma unroll
        for (int k = 0; k < K; ++k) o[k] += static_cast<int64_t>(c) * l.stride[k][d];
    }
}

template <int K, class Point>
__global__ void __launch_bounds__(kThreads) rows_kernel(RowLoop<K> loop, Point point) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t r = blockIdx.y; r < loop.rows; r += gridDim.y) {
        int64_t base[K];
        if (loop.rows <= 0x7fffffff)
            point_offsets<K, unsigned>(loop.outer, static_cast<unsigned>(r), base);
        else
            point_offsets<K, int64_t>(loop.outer, r, base);
        for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < loop.inner; c += step) {
            int64_t o[K];
#pragma unroll
            for (int k = 0; k < K; ++k) o[k] = base[k] + c * loop.inner_stride[k];
            point(o);
        }
    }
}

template <int K, typename I, class Point>
__global__ void __launch_bounds__(kThreads) flat_kernel(Loop<K> loop, I n, Point point) {
    const I step = static_cast<I>(gridDim.x) * blockDim.x;
    for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t o[K];
        point_offsets<K, I>(loop, i, o);
        point(o);
    }
}

unsigned blocks_for(int64_t work) {
    return static_cast<unsigned>(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// Runs `point` over every point of `loop` (count > 0) on the rows or the flat path.
template <int K, class Point>
Status launch_strided(const Loop<K> &loop, int64_t count, const Point &point, cudaStream_t stream, const char *what) {
    if (loop.rank >= 1 && loop.shape[loop.rank - 1] >= kRowMin) {
        RowLoop<K> rl;
        const int last = loop.rank - 1;
        for (int d = 0; d < last; ++d) {
            rl.outer.shape[d] = loop.shape[d];
            for (int k = 0; k < K; ++k) rl.outer.stride[k][d] = loop.stride[k][d];
            rl.rows *= loop.shape[d];
        }
        rl.outer.rank = last;
        rl.inner = loop.shape[last];
        for (int k = 0; k < K; ++k) rl.inner_stride[k] = loop.stride[k][last];
        const unsigned gx = blocks_for(rl.inner);
        const auto gy = static_cast<unsigned>(std::clamp<int64_t>(std::min(rl.rows, kMaxBlocks / gx), 1, 65535));
        rows_kernel<K><<<dim3(gx, gy), kThreads, 0, stream>>>(rl, point);
    } else if (count <= 0x7fffffff) {
        flat_kernel<K, unsigned><<<blocks_for(count), kThreads, 0, stream>>>(loop, static_cast<unsigned>(count), point);
    } else {
        flat_kernel<K, int64_t><<<blocks_for(count), kThreads, 0, stream>>>(loop, count, point);
    }
    return launched(what);
}

// ---- dense path ----------------------------------------------------------------------------

template <DType T>
struct alignas(16) Pack {
    static constexpr int size = 16 / sizeof(storage_t<T>);
    storage_t<T> v[size];
};

template <UnaryFn F, DType T>
__global__ void __launch_bounds__(kThreads) unary_dense(const std::byte *x, std::byte *y, int64_t n, float a, float b) {
    constexpr int V = Pack<T>::size;
    const int64_t packs = n / V;
    const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const auto *xp = reinterpret_cast<const Pack<T> *>(x);
    auto *yp = reinterpret_cast<Pack<T> *>(y);
    for (int64_t p = t; p < packs; p += step) {
        const Pack<T> in = xp[p];
        Pack<T> out;
#pragma unroll
        for (int j = 0; j < V; ++j) out.v[j] = from_f32<T>(unary<F>(to_f32<T>(in.v[j]), a, b));
        yp[p] = out;
    }
    if (const int64_t i = packs * V + t; i < n) {  // the tail: fewer than V elements
        const auto *xs = reinterpret_cast<const storage_t<T> *>(x);
        reinterpret_cast<storage_t<T> *>(y)[i] = from_f32<T>(unary<F>(to_f32<T>(xs[i]), a, b));
    }
}

template <BinaryFn F, DType T>
__global__ void __launch_bounds__(kThreads)
    binary_dense(const std::byte *a, const std::byte *b, std::byte *y, int64_t n) {
    constexpr int V = Pack<T>::size;
    const int64_t packs = n / V;
    const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const auto *ap = reinterpret_cast<const Pack<T> *>(a);
    const auto *bp = reinterpret_cast<const Pack<T> *>(b);
    auto *yp = reinterpret_cast<Pack<T> *>(y);
    for (int64_t p = t; p < packs; p += step) {
        const Pack<T> l = ap[p], r = bp[p];
        Pack<T> out;
#pragma unroll
        for (int j = 0; j < V; ++j) out.v[j] = from_f32<T>(binary<F>(to_f32<T>(l.v[j]), to_f32<T>(r.v[j])));
        yp[p] = out;
    }
    if (const int64_t i = packs * V + t; i < n) {
        const auto *as = reinterpret_cast<const storage_t<T> *>(a);
        const auto *bs = reinterpret_cast<const storage_t<T> *>(b);
        reinterpret_cast<storage_t<T> *>(y)[i] = from_f32<T>(binary<F>(to_f32<T>(as[i]), to_f32<T>(bs[i])));
    }
}

bool aligned16(const void *p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// One contiguous run per set (rank 1, unit strides).
template <int K>
bool contiguous(const Loop<K> &loop) {
    if (loop.rank != 1) return false;
    for (int k = 0; k < K; ++k)
        if (loop.stride[k][0] != 1) return false;
    return true;
}

unsigned dense_blocks(int64_t n, int vector) {
    return blocks_for(n / vector);
}

// ---- dispatch --------------------------------------------------------------------------

template <UnaryFn F>
Status run_unary(const UnaryArgs &args, const std::byte *x, std::byte *y, int64_t n, cudaStream_t s) {
    if (args.x == args.y && contiguous(args.loop) && aligned16(x) && aligned16(y)) {
        switch (args.x) {
            case DType::f32:
                unary_dense<F, DType::f32><<<dense_blocks(n, 4), kThreads, 0, s>>>(x, y, n, args.a, args.b);
                return launched("elementwise kernel (dense f32)");
            case DType::bf16:
                unary_dense<F, DType::bf16><<<dense_blocks(n, 8), kThreads, 0, s>>>(x, y, n, args.a, args.b);
                return launched("elementwise kernel (dense bf16)");
            case DType::f16:
                unary_dense<F, DType::f16><<<dense_blocks(n, 8), kThreads, 0, s>>>(x, y, n, args.a, args.b);
                return launched("elementwise kernel (dense f16)");
            default: break;
        }
    }
    return launch_strided(args.loop, n, UnaryPoint<F>{x, y, args.x, args.y, args.a, args.b}, s, "elementwise kernel");
}

template <BinaryFn F>
Status run_binary(const BinaryArgs &args, const std::byte *a, const std::byte *b, std::byte *y, int64_t n,
                  cudaStream_t s) {
    if (args.a == args.y && args.b == args.y && contiguous(args.loop) && aligned16(a) && aligned16(b) && aligned16(y)) {
        switch (args.y) {
            case DType::f32:
                binary_dense<F, DType::f32><<<dense_blocks(n, 4), kThreads, 0, s>>>(a, b, y, n);
                return launched("binary kernel (dense f32)");
            case DType::bf16:
                binary_dense<F, DType::bf16><<<dense_blocks(n, 8), kThreads, 0, s>>>(a, b, y, n);
                return launched("binary kernel (dense bf16)");
            case DType::f16:
                binary_dense<F, DType::f16><<<dense_blocks(n, 8), kThreads, 0, s>>>(a, b, y, n);
                return launched("binary kernel (dense f16)");
            default: break;
        }
    }
    return launch_strided(args.loop, n, BinaryPoint<F>{a, b, y, args.a, args.b, args.y}, s, "binary kernel");
}

}  // namespace

Status launch_unary(const UnaryArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream) {
    const int64_t n = args.loop.count();
    if (n <= 0) return std::monostate{};
    switch (args.fn) {
        case UnaryFn::relu: return run_unary<UnaryFn::relu>(args, x, y, n, stream);
        case UnaryFn::gelu_erf: return run_unary<UnaryFn::gelu_erf>(args, x, y, n, stream);
        case UnaryFn::gelu_tanh: return run_unary<UnaryFn::gelu_tanh>(args, x, y, n, stream);
        case UnaryFn::sigmoid: return run_unary<UnaryFn::sigmoid>(args, x, y, n, stream);
        case UnaryFn::tanh: return run_unary<UnaryFn::tanh>(args, x, y, n, stream);
        case UnaryFn::exp: return run_unary<UnaryFn::exp>(args, x, y, n, stream);
        case UnaryFn::log: return run_unary<UnaryFn::log>(args, x, y, n, stream);
        case UnaryFn::neg: return run_unary<UnaryFn::neg>(args, x, y, n, stream);
        case UnaryFn::abs: return run_unary<UnaryFn::abs>(args, x, y, n, stream);
        case UnaryFn::erf: return run_unary<UnaryFn::erf>(args, x, y, n, stream);
        case UnaryFn::sqrt: return run_unary<UnaryFn::sqrt>(args, x, y, n, stream);
        case UnaryFn::reciprocal: return run_unary<UnaryFn::reciprocal>(args, x, y, n, stream);
        case UnaryFn::softplus: return run_unary<UnaryFn::softplus>(args, x, y, n, stream);
        case UnaryFn::softsign: return run_unary<UnaryFn::softsign>(args, x, y, n, stream);
        case UnaryFn::hard_swish: return run_unary<UnaryFn::hard_swish>(args, x, y, n, stream);
        case UnaryFn::leaky_relu: return run_unary<UnaryFn::leaky_relu>(args, x, y, n, stream);
        case UnaryFn::elu: return run_unary<UnaryFn::elu>(args, x, y, n, stream);
        case UnaryFn::selu: return run_unary<UnaryFn::selu>(args, x, y, n, stream);
        case UnaryFn::hard_sigmoid: return run_unary<UnaryFn::hard_sigmoid>(args, x, y, n, stream);
        case UnaryFn::clip: return run_unary<UnaryFn::clip>(args, x, y, n, stream);
        case UnaryFn::pow: return run_unary<UnaryFn::pow>(args, x, y, n, stream);
    }
    return unexpected(std::string("elementwise kernel: unknown unary function"));
}

Status launch_binary(const BinaryArgs &args, const std::byte *a, const std::byte *b, std::byte *y,
                     cudaStream_t stream) {
    const int64_t n = args.loop.count();
    if (n <= 0) return std::monostate{};
    switch (args.fn) {
        case BinaryFn::add: return run_binary<BinaryFn::add>(args, a, b, y, n, stream);
        case BinaryFn::sub: return run_binary<BinaryFn::sub>(args, a, b, y, n, stream);
        case BinaryFn::mul: return run_binary<BinaryFn::mul>(args, a, b, y, n, stream);
        case BinaryFn::div: return run_binary<BinaryFn::div>(args, a, b, y, n, stream);
        case BinaryFn::max: return run_binary<BinaryFn::max>(args, a, b, y, n, stream);
        case BinaryFn::min: return run_binary<BinaryFn::min>(args, a, b, y, n, stream);
    }
    return unexpected(std::string("binary kernel: unknown function"));
}

Status launch_cast(const CastArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream) {
    const int64_t n = args.loop.count();
    if (n <= 0) return std::monostate{};
    const bool floats = dtype_is_float(args.from) && dtype_is_float(args.to);
    return launch_strided(args.loop, n, CastPoint{x, y, args.from, args.to, floats}, stream, "cast kernel");
}

}  // namespace tapestry::cuda
