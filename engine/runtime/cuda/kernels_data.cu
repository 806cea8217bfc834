// Device code of the data family (kernel_args.h) — strided copies (slice,
// transpose, concat pieces, reshape), the reshape gather, embedding/gather — and
// the box mover of box_move.h that carries a plan's transfers and collectives.
// Contiguous pieces go to cudaMemcpyAsync; a kernel's 2-D copies to a row-copy
// kernel of 16-byte words where aligned (else cudaMemcpy2DAsync); box moves' 2-D
// pieces to cudaMemcpy2DAsync; the rest run a grid-stride kernel, an element per thread.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/cuda/box_move.h"
#include "runtime/cuda/element_math.h"
#include "runtime/cuda/kernel_args.h"

namespace tapestry::cuda {

namespace {

using std::int64_t;

// An element of `Bytes` bytes moved as one word.
template <int Bytes>
struct Word;
template <>
struct Word<1> {
    using type = unsigned char;
};
template <>
struct Word<2> {
    using type = unsigned short;
};
template <>
struct Word<4> {
    using type = unsigned int;
};
template <>
struct Word<8> {
    using type = unsigned long long;
};

constexpr unsigned kThreads = 256;

// Runs launch.template operator()<Bytes>() for an element size of 1, 2, 4 or 8 bytes.
template <typename F>
Status by_element_size(int bytes, const char *what, F &&launch) {
    switch (bytes) {
        case 1: return launch.template operator()<1>();
        case 2: return launch.template operator()<2>();
        case 4: return launch.template operator()<4>();
        case 8: return launch.template operator()<8>();
        default: return unexpected(std::string(what) + ": unsupported element size " + std::to_string(bytes));
    }
}

Status memcpy_status(cudaError_t e, const char *what) {
    if (e != cudaSuccess) return unexpected(cuda_error(what, e));
    return std::monostate{};
}

// cudaMemcpy2DAsync takes pitches below the device's limit (2^31 − 1 bytes on
// every CUDA GPU so far); larger ones go to the kernel.
bool pitch_ok(int64_t pitch_bytes, int64_t width_bytes) {
    return pitch_bytes >= width_bytes && pitch_bytes < (int64_t{1} << 31);
}

// ---- strided copies ---------------------------------------------------------------------

template <int Bytes>
__global__ void copy_kernel(Loop<2> l, const std::byte *src_, std::byte *dst_) {
    using W = typename Word<Bytes>::type;
    const W *src = reinterpret_cast<const W *>(src_);
    W *dst = reinterpret_cast<W *>(dst_);
    const int64_t n = count_of(l);
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
        int64_t o[2];
        offsets_of(l, i, o);
        dst[o[1]] = src[o[0]];
    }
}

// Rows of `words` W-sized words each (rows of a 2-D copy, 16, 8 or 4 bytes a word):
// a thread per word, 32-bit index math when the copy allows. Many short rows (a
// slice of the last dim: 8192 rows of 1536 bytes) run at memory speed this way,
// where cudaMemcpy2DAsync pays per row.
template <typename W, typename I>
__global__ void row_copy_kernel(const std::byte *src_, std::byte *dst_, I rows, I words, I src_pitch, I dst_pitch) {
    const W *src = reinterpret_cast<const W *>(src_);
    W *dst = reinterpret_cast<W *>(dst_);
    const I n = rows * words;
    for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
        const I r = i / words, c = i - r * words;
        dst[r * dst_pitch + c] = src[r * src_pitch + c];
    }
}

// A 2-D copy (rows of `width` bytes, pitches in bytes) as row_copy_kernel with
// the widest word that divides the width, the pitches and both addresses; false
// when none of at least 4 bytes does.
Expected<bool, std::string> copy_rows(const std::byte *src, std::byte *dst, int64_t rows, int64_t width,
                                      int64_t src_pitch, int64_t dst_pitch, cudaStream_t stream) {
    const auto fits = [&](int64_t w) {
        return width % w == 0 && src_pitch % w == 0 && dst_pitch % w == 0 &&
               reinterpret_cast<std::uintptr_t>(src) % static_cast<std::uintptr_t>(w) == 0 &&
               reinterpret_cast<std::uintptr_t>(dst) % static_cast<std::uintptr_t>(w) == 0;
    };
    const int64_t w = fits(16) ? 16 : fits(8) ? 8 : fits(4) ? 4 : 0;
    if (w == 0) return false;
    const int64_t words = width / w, sp = src_pitch / w, dp = dst_pitch / w;
    const bool narrow = rows * words < (int64_t{1} << 31) && (rows - 1) * std::max(sp, dp) + words < (int64_t{1} << 31);
    const unsigned grid = grid_for(rows * words, kThreads);
    auto launch = [&]<typename W>() {
        if (narrow)
            row_copy_kernel<W, unsigned><<<grid, kThreads, 0, stream>>>(
                src, dst, static_cast<unsigned>(rows), static_cast<unsigned>(words), static_cast<unsigned>(sp),
                static_cast<unsigned>(dp));
        else
            row_copy_kernel<W, int64_t><<<grid, kThreads, 0, stream>>>(src, dst, rows, words, sp, dp);
    };
    if (w == 16)
        launch.template operator()<uint4>();
    else if (w == 8)
        launch.template operator()<uint2>();
    else
        launch.template operator()<unsigned>();
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return unexpected(cuda_error("copy: row copy", e));
    return true;
}

template <int Bytes>
__global__ void reshape_kernel(ReshapeArgs a, const std::byte *src_, std::byte *dst_) {
    using W = typename Word<Bytes>::type;
    const W *src = reinterpret_cast<const W *>(src_);
    W *dst = reinterpret_cast<W *>(dst_);
    const int64_t n = count_of(a.index);
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
        int64_t o[2];
        offsets_of(a.index, i, o);
        int64_t rank = a.rank0 + o[0], xo = 0;
#pragma unroll
        for (int d = kMaxLoopRank - 1; d >= 0; --d) {
            if (d >= a.x_rank) continue;
            xo += (rank % a.x_shape[d] - a.x_start[d]) * a.x_stride[d];
            rank /= a.x_shape[d];
        }
        if (src + xo != dst + o[1]) dst[o[1]] = src[xo];  // an aliased reshape is in place already
    }
}

template <int Bytes, typename Id>
__global__ void take_kernel(TakeArgs a, unsigned long long fill, const std::byte *data_, const std::byte *ids_,
                            std::byte *y_) {
    using W = typename Word<Bytes>::type;
    const W *data = reinterpret_cast<const W *>(data_);
    const Id *ids = reinterpret_cast<const Id *>(ids_);
    W *y = reinterpret_cast<W *>(y_);
    const int64_t block = count_of(a.block);
    const int64_t n = count_of(a.outer) * block;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
        int64_t o[3], b[2];
        offsets_of(a.outer, i / block, o);
        offsets_of(a.block, i % block, b);
        int64_t k = static_cast<int64_t>(ids[o[1]]);
        if (a.negative_ok && k < 0) k += a.n;
        y[o[2] + b[1]] = (k < 0 || k >= a.n) ? static_cast<W>(fill) : data[o[0] + k * a.axis_stride + b[0]];
    }
}

// ---- the box mover -------------------------------------------------------------------------

// Element f of [lo, hi) lies at offset_of(src, f) and offset_of(dst, f).
template <DType S, DType D, bool Add>
__global__ void convert_kernel(Loop<1> s, Loop<1> d, int64_t lo, int64_t hi, const std::byte *src, std::byte *dst) {
    for (int64_t f = lo + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; f < hi;
         f += int64_t{gridDim.x} * blockDim.x) {
        const int64_t so = offset_of(s, f, 0), dof = offset_of(d, f, 0);
        float v = load<S>(src, so);
        if constexpr (Add) v = load<D>(dst, dof) + v;  // 16-bit: added in f32, rounded once (as NCCL)
        store<D>(dst, dof, v);
    }
}

template <int Bytes>
__global__ void raw_kernel(Loop<1> s, Loop<1> d, int64_t lo, int64_t hi, const std::byte *src_, std::byte *dst_) {
    using W = typename Word<Bytes>::type;
    const W *src = reinterpret_cast<const W *>(src_);
    W *dst = reinterpret_cast<W *>(dst_);
    for (int64_t f = lo + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; f < hi; f += int64_t{gridDim.x} * blockDim.x)
        dst[offset_of(d, f, 0)] = src[offset_of(s, f, 0)];
}

template <typename I>
__global__ void int_add_kernel(Loop<1> s, Loop<1> d, int64_t lo, int64_t hi, const std::byte *src_, std::byte *dst_) {
    const I *src = reinterpret_cast<const I *>(src_);
    I *dst = reinterpret_cast<I *>(dst_);
    for (int64_t f = lo + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; f < hi; f += int64_t{gridDim.x} * blockDim.x)
        dst[offset_of(d, f, 0)] += src[offset_of(s, f, 0)];
}

struct BoxMove {
    Loop<1> s, d;
    int64_t lo, hi;
    const std::byte *src;
    std::byte *dst;
    cudaStream_t stream;
};

template <DType S, DType D>
Status convert_to(const BoxMove &m, bool add) {
    const unsigned grid = grid_for(m.hi - m.lo, kThreads);
    if (add)
        convert_kernel<S, D, true><<<grid, kThreads, 0, m.stream>>>(m.s, m.d, m.lo, m.hi, m.src, m.dst);
    else
        convert_kernel<S, D, false><<<grid, kThreads, 0, m.stream>>>(m.s, m.d, m.lo, m.hi, m.src, m.dst);
    return launched("box move launch");
}

template <DType S>
Status convert_from(const BoxMove &m, DType d, bool add) {
    switch (d) {
        case DType::f32: return convert_to<S, DType::f32>(m, add);
        case DType::bf16: return convert_to<S, DType::bf16>(m, add);
        case DType::f16: return convert_to<S, DType::f16>(m, add);
        default:
            return unexpected(std::string("box move: unsupported destination dtype ") + std::string(dtype_name(d)));
    }
}

bool float16_or_32(DType t) {
    return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

// A box as rows of `width` contiguous elements `pitch` apart: a dense box (any
// width), or one whose merged loop has two dims, the inner of stride 1.
struct Rows {
    bool dense = false, two_d = false;
    int64_t width = 0, pitch = 0;
};
Rows rows_of(const Loop<1> &l) {
    Rows r;
    r.dense = l.rank == 0 || (l.rank == 1 && l.stride[0][0] == 1);
    if (l.rank == 2 && l.stride[0][1] == 1) {
        r.two_d = true;
        r.width = l.shape[1];
        r.pitch = l.stride[0][0];
    }
    return r;
}

// The copy-engine form of a same-dtype copy, or false when it has none: a dense
// pair is one cudaMemcpyAsync; rows of equal width on both sides are a
// cudaMemcpy2DAsync of the whole rows in [lo, hi) and at most two 1-D pieces for
// the partial rows at its ends.
Expected<bool, std::string> copy_by_engine(const BoxMove &m, int bytes) {
    const Rows rs = rows_of(m.s), rd = rows_of(m.d);
    if (rs.dense && rd.dense) {
        if (const cudaError_t e = cudaMemcpyAsync(m.dst + m.lo * bytes, m.src + m.lo * bytes, (m.hi - m.lo) * bytes,
                                                  cudaMemcpyDefault, m.stream);
            e != cudaSuccess)
            return unexpected(cuda_error("box move: cudaMemcpyAsync", e));
        return true;
    }
    if (!(rs.dense || rs.two_d) || !(rd.dense || rd.two_d)) return false;
    if (rs.two_d && rd.two_d && rs.width != rd.width) return false;
    const int64_t width = rs.two_d ? rs.width : rd.width;
    const int64_t sp = rs.two_d ? rs.pitch : width, dp = rd.two_d ? rd.pitch : width;
    if (!pitch_ok(sp * bytes, width * bytes) || !pitch_ok(dp * bytes, width * bytes)) return false;
    auto at_src = [&](int64_t f) { return m.src + (f / width * sp + f % width) * bytes; };
    auto at_dst = [&](int64_t f) { return m.dst + (f / width * dp + f % width) * bytes; };
    auto piece = [&](int64_t a, int64_t b) -> cudaError_t {  // inside one row
        if (a >= b) return cudaSuccess;
        return cudaMemcpyAsync(at_dst(a), at_src(a), (b - a) * bytes, cudaMemcpyDefault, m.stream);
    };
    const int64_t first_row = (m.lo + width - 1) / width, end_row = m.hi / width;
    cudaError_t e = cudaSuccess;
    if (first_row >= end_row) {  // no whole row: [lo, hi) crosses at most one row boundary
        const int64_t cut = std::min(m.hi, first_row * width);
        e = piece(m.lo, cut);
        if (e == cudaSuccess) e = piece(cut, m.hi);
    } else {
        e = piece(m.lo, first_row * width);
        if (e == cudaSuccess)
            e = cudaMemcpy2DAsync(at_dst(first_row * width), dp * bytes, at_src(first_row * width), sp * bytes,
                                  width * bytes, end_row - first_row, cudaMemcpyDefault, m.stream);
        if (e == cudaSuccess) e = piece(end_row * width, m.hi);
    }
    if (e != cudaSuccess) return unexpected(cuda_error("box move: cudaMemcpy", e));
    return true;
}

std::optional<Loop<1>> box_loop(const View &v) {
    LoopBuilder<1> b;
    for (int d = 0; d < v.shape.rank(); ++d) b.add(v.shape[d], {v.strides[static_cast<size_t>(d)]});
    return b.build();
}

}  // namespace

// ---- entry points -----------------------------------------------------------------------------

Status launch_copy(const CopyArgs &args, const std::byte *src, std::byte *dst, cudaStream_t stream) {
    const Loop<2> &l = args.loop;
    const int64_t n = l.count(), bytes = args.element_bytes;
    if (n == 0) return std::monostate{};
    if (l.rank == 0 || (l.rank == 1 && l.stride[0][0] == 1 && l.stride[1][0] == 1))
        return memcpy_status(cudaMemcpyAsync(dst, src, n * bytes, cudaMemcpyDefault, stream), "copy: cudaMemcpyAsync");
    if (l.rank == 2 && l.stride[0][1] == 1 && l.stride[1][1] == 1 && l.stride[0][0] >= l.shape[1] &&
        l.stride[1][0] >= l.shape[1]) {
        auto done = copy_rows(src, dst, l.shape[0], l.shape[1] * bytes, l.stride[0][0] * bytes, l.stride[1][0] * bytes,
                              stream);
        if (!done) return unexpected(done.error());
        if (*done) return std::monostate{};
    }
    if (l.rank == 2 && l.stride[0][1] == 1 && l.stride[1][1] == 1 &&
        pitch_ok(l.stride[0][0] * bytes, l.shape[1] * bytes) && pitch_ok(l.stride[1][0] * bytes, l.shape[1] * bytes))
        return memcpy_status(cudaMemcpy2DAsync(dst, l.stride[1][0] * bytes, src, l.stride[0][0] * bytes,
                                               l.shape[1] * bytes, l.shape[0], cudaMemcpyDefault, stream),
                             "copy: cudaMemcpy2DAsync");
    return by_element_size(args.element_bytes, "copy", [&]<int B>() {
        copy_kernel<B><<<grid_for(n, kThreads), kThreads, 0, stream>>>(l, src, dst);
        return launched("copy launch");
    });
}

Status launch_reshape(const ReshapeArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream) {
    const int64_t n = args.index.count();
    if (n == 0) return std::monostate{};
    return by_element_size(args.element_bytes, "reshape", [&]<int B>() {
        reshape_kernel<B><<<grid_for(n, kThreads), kThreads, 0, stream>>>(args, x, y);
        return launched("reshape launch");
    });
}

Status launch_take(const TakeArgs &args, const std::byte *data, const std::byte *ids, std::byte *y,
                   cudaStream_t stream) {
    const int64_t n = args.outer.count() * args.block.count();
    if (n == 0) return std::monostate{};
    // The value of a bad id: NaN in the data's float type, 0 for integers.
    unsigned long long fill = 0;
    if (args.data == DType::f32)
        fill = 0x7fc00000u;
    else if (args.data == DType::f16)
        fill = 0x7e00u;
    else if (args.data == DType::bf16)
        fill = 0x7fc0u;
    const bool wide = args.ids == DType::i64;
    return by_element_size(dtype_bytes(args.data), "take", [&]<int B>() {
        if (wide)
            take_kernel<B, long long><<<grid_for(n, kThreads), kThreads, 0, stream>>>(args, fill, data, ids, y);
        else
            take_kernel<B, int><<<grid_for(n, kThreads), kThreads, 0, stream>>>(args, fill, data, ids, y);
        return launched("take launch");
    });
}

Status enqueue_box_move(const View &src, const View &dst, std::int64_t lo, std::int64_t hi, bool add,
                        cudaStream_t stream) {
    if (src.elements() != dst.elements())
        return unexpected("box move: the boxes hold " + std::to_string(src.elements()) + " and " +
                          std::to_string(dst.elements()) + " elements");
    if (lo < 0 || hi > src.elements() || lo > hi)
        return unexpected("box move: range [" + std::to_string(lo) + ", " + std::to_string(hi) + ") outside the " +
                          std::to_string(src.elements()) + " elements of the boxes");
    if (static_cast<int>(src.strides.size()) != src.shape.rank() ||
        static_cast<int>(dst.strides.size()) != dst.shape.rank())
        return unexpected(std::string("box move: a box has strides of another rank than its shape"));
    if (lo == hi) return std::monostate{};
    const auto s = box_loop(src), d = box_loop(dst);
    if (!s || !d)
        return unexpected("box move: a box has more than " + std::to_string(kMaxLoopRank) + " dims after merging");
    const BoxMove m{*s, *d, lo, hi, src.data, dst.data, stream};
    const unsigned grid = grid_for(hi - lo, kThreads);
    if (src.dtype == dst.dtype && !add) {
        const int bytes = dtype_bytes(src.dtype);
        auto engine = copy_by_engine(m, bytes);
        if (!engine) return unexpected(engine.error());
        if (*engine) return std::monostate{};
        return by_element_size(bytes, "box move", [&]<int B>() {
            raw_kernel<B><<<grid, kThreads, 0, stream>>>(m.s, m.d, lo, hi, m.src, m.dst);
            return launched("box move launch");
        });
    }
    if (add && src.dtype == dst.dtype && src.dtype == DType::i32) {
        int_add_kernel<int><<<grid, kThreads, 0, stream>>>(m.s, m.d, lo, hi, m.src, m.dst);
        return launched("box move launch");
    }
    if (add && src.dtype == dst.dtype && src.dtype == DType::i64) {
        int_add_kernel<long long><<<grid, kThreads, 0, stream>>>(m.s, m.d, lo, hi, m.src, m.dst);
        return launched("box move launch");
    }
    if (!float16_or_32(src.dtype) || !float16_or_32(dst.dtype))
        return unexpected(std::string("box move: cannot ") + (add ? "add " : "convert ") +
                          std::string(dtype_name(src.dtype)) + " into " + std::string(dtype_name(dst.dtype)));
    switch (src.dtype) {
        case DType::f32: return convert_from<DType::f32>(m, dst.dtype, add);
        case DType::bf16: return convert_from<DType::bf16>(m, dst.dtype, add);
        default: return convert_from<DType::f16>(m, dst.dtype, add);
    }
}

}  // namespace tapestry::cuda
