// The launch arguments of our own CUDA kernels (issue 18): the factories in
// kernels_rows.cpp and kernels_data.cpp read a KernelSpec and fill these plain
// structs; kernels_rows.cu and kernels_data.cu launch the device code with them.
// Plain data only, so it is the same on both sides of nvcc and is passed by value.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/dtype.h"
#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

// Dims a loop may have after merging (more are refused at make time, by name).
constexpr int kMaxLoopRank = 8;

// A row-major loop over `rank` dims (the last fastest) with K sets of element
// strides: point i of the loop lies at Σ_d coordinate_d · stride[k][d] in set k.
template <int K>
struct Loop {
    int rank = 0;
    std::int64_t shape[kMaxLoopRank] = {};
    std::int64_t stride[K][kMaxLoopRank] = {};

    std::int64_t count() const {
        std::int64_t n = 1;
        for (int d = 0; d < rank; ++d) n *= shape[d];
        return n;
    }
};

// Builds a Loop on the host: dims in row-major order, then `build` drops extent-1
// dims and merges a dim into the one before it where every stride set steps over
// it contiguously; fails (for the factory to name) past kMaxLoopRank dims.
template <int K>
class LoopBuilder {
public:
    LoopBuilder &add(std::int64_t extent, const std::array<std::int64_t, K> &strides) {
        dims_.push_back({extent, strides});
        return *this;
    }
    std::optional<Loop<K>> build() const {
        std::vector<Dim> m;
        for (const Dim &d : dims_) {
            if (d.extent == 1) continue;
            bool merge = !m.empty();
            for (int k = 0; k < K && merge; ++k) merge = m.back().strides[k] == d.strides[k] * d.extent;
            if (merge) {
                m.back().extent *= d.extent;
                m.back().strides = d.strides;
            } else {
                m.push_back(d);
            }
        }
        if (m.size() > static_cast<size_t>(kMaxLoopRank)) return std::nullopt;
        Loop<K> l;
        for (const Dim &d : m) {
            l.shape[l.rank] = d.extent;
            for (int k = 0; k < K; ++k) l.stride[k][l.rank] = d.strides[k];
            ++l.rank;
        }
        // An empty dim empties the loop; keep it so that count() says 0.
        for (const Dim &d : dims_)
            if (d.extent == 0) {
                l.rank = 1;
                l.shape[0] = 0;
            }
        return l;
    }

private:
    struct Dim {
        std::int64_t extent;
        std::array<std::int64_t, K> strides;
    };
    std::vector<Dim> dims_;
};

// The shapes and strides of a kernel's views as its spec gives them (dense C
// order where the spec has no strides), and the check that a run's views match
// them: a mismatch is a backend bug, reported as an error rather than computed on.
class ViewLayouts {
public:
    explicit ViewLayouts(const KernelSpec &spec) {
        for (size_t i = 0; i < spec.input_shapes.size(); ++i)
            inputs_.push_back(layout(spec.input_shapes[i], i < spec.input_strides.size()
                                                               ? spec.input_strides[i]
                                                               : std::vector<std::int64_t>{}));
        for (size_t i = 0; i < spec.output_shapes.size(); ++i)
            outputs_.push_back(layout(spec.output_shapes[i], i < spec.output_strides.size()
                                                                 ? spec.output_strides[i]
                                                                 : std::vector<std::int64_t>{}));
    }
    const std::vector<std::int64_t> &input(size_t i) const { return inputs_.at(i).strides; }
    const std::vector<std::int64_t> &output(size_t i) const { return outputs_.at(i).strides; }

    // Empty when the views are those of the spec; else which one differs.
    std::optional<std::string> mismatch(std::span<const View> inputs, std::span<const View> outputs) const {
        if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size())
            return "got " + std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size()) +
                   " outputs, made for " + std::to_string(inputs_.size()) + " and " + std::to_string(outputs_.size());
        for (size_t i = 0; i < inputs.size(); ++i)
            if (!matches(inputs[i], inputs_[i])) return "input view " + std::to_string(i) + " differs from the spec";
        for (size_t i = 0; i < outputs.size(); ++i)
            if (!matches(outputs[i], outputs_[i])) return "output view " + std::to_string(i) + " differs from the spec";
        return std::nullopt;
    }

private:
    struct Layout {
        ZPoint shape;
        std::vector<std::int64_t> strides;
    };
    static Layout layout(const ZPoint &shape, std::vector<std::int64_t> strides) {
        if (strides.empty() && shape.rank() > 0) {
            strides.assign(static_cast<size_t>(shape.rank()), 1);
            for (int d = shape.rank() - 2; d >= 0; --d)
                strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * shape[d + 1];
        }
        return {shape, std::move(strides)};
    }
    // Same shape, and the same strides wherever a dim has more than one element.
    static bool matches(const View &v, const Layout &l) {
        if (v.shape != l.shape || v.strides.size() != l.strides.size()) return false;
        for (int d = 0; d < v.shape.rank(); ++d)
            if (v.shape[d] > 1 && v.strides[static_cast<size_t>(d)] != l.strides[static_cast<size_t>(d)]) return false;
        return true;
    }
    std::vector<Layout> inputs_, outputs_;
};

// The kernel of an empty index range: it touches nothing.
class NoopKernel final : public Kernel {
public:
    Status enqueue(std::span<const View>, std::span<const View>, void *, cudaStream_t) override {
        return std::monostate{};
    }
};

// A kernel whose launch is one call with the views' data pointers.
template <typename Args>
class LaunchKernel final : public Kernel {
public:
    using Launch = Status (*)(const Args &, std::span<const View>, std::span<const View>, cudaStream_t);
    LaunchKernel(const KernelSpec &spec, Args args, Launch launch, std::string note)
        : kind_(spec.def->kind()), layouts_(spec), args_(args), launch_(launch), note_(std::move(note)) {}

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *, cudaStream_t stream) override {
        if (auto bad = layouts_.mismatch(inputs, outputs)) return unexpected(kind_ + ": " + *bad);
        return launch_(args_, inputs, outputs, stream);
    }
    std::vector<std::string> notes() const override { return {note_}; }

private:
    std::string kind_;
    ViewLayouts layouts_;
    Args args_;
    Launch launch_;
    std::string note_;
};

template <typename Args>
Expected<std::unique_ptr<Kernel>, std::string> launch_kernel(const KernelSpec &spec, const Args &args,
                                                             typename LaunchKernel<Args>::Launch launch,
                                                             std::string note) {
    return std::unique_ptr<Kernel>(new LaunchKernel<Args>(spec, args, launch, std::move(note)));
}

// ---- rows (kernels_rows.cu) ---------------------------------------------------------

enum class RowKind : int { softmax, layernorm, rmsnorm, reduce_sum, reduce_mean, reduce_max };

// One row per point of `outer`; a row's statistics fold the elements of `row` of
// x, and the kernel writes the elements of `part` (for a reduction: one element,
// part of rank 0). Offsets of row and part are relative to the row's x and y.
struct RowArgs {
    RowKind kind = RowKind::softmax;
    DType dtype = DType::f32;
    Loop<2> outer;            // x, y
    Loop<1> row;              // x
    Loop<4> part;             // x, y, gamma, beta
    std::int64_t part_x = 0;  // where the part starts inside the row of x
    bool has_gamma = false, has_beta = false;
    float epsilon = 0;
};
Status launch_rows(const RowArgs &args, const std::byte *x, std::byte *y, const std::byte *gamma, const std::byte *beta,
                   cudaStream_t stream);

// y = (x − mean[c]) / √(var[c] + ε) · scale[c] + bias[c]; c: the coordinate along
// which set 2 of `all` steps (dim 1 of x).
struct BatchNormArgs {
    DType dtype = DType::f32;
    Loop<3> all;                        // x, y, channel
    std::int64_t param_stride[4] = {};  // scale, bias, mean, var
    float epsilon = 0;
};
Status launch_batchnorm(const BatchNormArgs &args, const std::byte *x, std::byte *y, const std::byte *const params[4],
                        cudaStream_t stream);

// NCHW pooling of one shard: output point (n, c, p, q) pools the x view's rows
// p·stride_h − pad_h + r (r < kernel_h) that lie in [0, h) — pad_h is the padding
// local to the shard's clipped x view — likewise along w.
struct PoolArgs {
    bool max = true;
    bool count_include_pad = false;
    DType dtype = DType::f32;
    std::int64_t n = 0, c = 0, p = 0, q = 0;  // the y view's shape
    std::int64_t h = 0, w = 0;                // the x view's spatial extents
    std::int64_t x_stride[4] = {}, y_stride[4] = {};
    std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
};
Status launch_pool(const PoolArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream);

// Attention over one shard: `batches` × `heads` (b, h) pairs, `rows` query rows
// and `columns` output columns per head. q and k views hold head h at columns
// h·e…, v and y views at h·ev… (ev: a head's whole value width; columns ≤ ev).
// Query row s of the view is row s + row0 of the op (the causal mask's frame).
struct AttentionArgs {
    DType dtype = DType::f32;
    std::int64_t batches = 0, heads = 0, rows = 0, keys = 0, e = 0, ev = 0, columns = 0, row0 = 0;
    std::int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, y_stride[3] = {}, mask_stride[2] = {};
    bool has_mask = false, causal = false;
    float scale = 1;
};
// Whether the tiled tensor-core kernel takes these arguments (pointers aside).
bool attention_flash_shape(const AttentionArgs &args);
Status launch_attention(const AttentionArgs &args, const std::byte *q, const std::byte *k, const std::byte *v,
                        const std::byte *mask, std::byte *y, cudaStream_t stream);

// ---- data (kernels_data.cu) ---------------------------------------------------------

// dst[point] = src[point] for every point of `loop` (set 0: src, set 1: dst),
// elements of `element_bytes` bytes; offsets in elements from the two pointers.
struct CopyArgs {
    Loop<2> loop;
    int element_bytes = 4;
};
Status launch_copy(const CopyArgs &args, const std::byte *src, std::byte *dst, cudaStream_t stream);

// reshape without a common refinement: index point i writes y at Σ i·y_step (set 1
// of `index`) and reads the x element whose row-major rank in the whole x is
// rank0 + Σ i·rank_step (set 0), found through x's shape, minus x_start (the x
// view's origin), times the x view's strides.
struct ReshapeArgs {
    Loop<2> index;  // rank step, y stride
    std::int64_t rank0 = 0;
    int x_rank = 0;
    std::int64_t x_shape[kMaxLoopRank] = {}, x_start[kMaxLoopRank] = {}, x_stride[kMaxLoopRank] = {};
    int element_bytes = 4;
};
Status launch_reshape(const ReshapeArgs &args, const std::byte *x, std::byte *y, cudaStream_t stream);

// embedding and gather: per point of `outer` (set 0: data, 1: ids, 2: y) an id k
// (+ n when negative and negative_ok) picks data + k·axis_stride, whose `block`
// (set 0: data, 1: y) is copied to y; a k outside [0, n) fills the block with
// NaN (0 for integer data).
struct TakeArgs {
    Loop<3> outer;
    Loop<2> block;
    DType data = DType::f32, ids = DType::i64;
    std::int64_t n = 0, axis_stride = 0;
    bool negative_ok = false;
};
Status launch_take(const TakeArgs &args, const std::byte *data, const std::byte *ids, std::byte *y,
                   cudaStream_t stream);

}  // namespace tapestry::cuda

// ---- the device side (nvcc only) -----------------------------------------------------
// What kernels_rows.cu and kernels_data.cu share: element access in f32, a loop's
// offsets, and the launch bookkeeping.
#if defined(__CUDACC__)

#include <algorithm>

#include "runtime/cuda/context.h"
#include "runtime/cuda/element_math.h"

namespace tapestry::cuda {

// Element i of a float array of dtype T, as f32; and storing one, rounded to T.
template <DType T>
__device__ __forceinline__ float load(const std::byte *base, std::int64_t i) {
    if constexpr (T == DType::f32)
        return reinterpret_cast<const float *>(base)[i];
    else if constexpr (T == DType::bf16)
        return element::bf16_to_float(reinterpret_cast<const unsigned short *>(base)[i]);
    else
        return element::f16_to_float(reinterpret_cast<const unsigned short *>(base)[i]);
}

template <DType T>
__device__ __forceinline__ void store(std::byte *base, std::int64_t i, float v) {
    if constexpr (T == DType::f32)
        reinterpret_cast<float *>(base)[i] = v;
    else if constexpr (T == DType::bf16)
        reinterpret_cast<unsigned short *>(base)[i] = element::float_to_bf16(v);
    else
        reinterpret_cast<unsigned short *>(base)[i] = element::float_to_f16(v);
}

// The offsets of point i of a loop. Unrolled over the dims, so the loop's arrays
// are read with constant indices from the kernel's parameters (no local copy).
template <int K>
__device__ __forceinline__ void offsets_of(const Loop<K> &l, std::int64_t i, std::int64_t (&o)[K]) {
    if (l.rank <= 1) {  // no division
#pragma unroll
        for (int k = 0; k < K; ++k) o[k] = l.rank == 1 ? i * l.stride[k][0] : 0;
        return;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) o[k] = 0;
#pragma unroll
    for (int d = kMaxLoopRank - 1; d >= 0; --d) {
        if (d >= l.rank) continue;
        const std::int64_t e = l.shape[d];
        const std::int64_t c = i % e;
        i /= e;
#pragma unroll
        for (int k = 0; k < K; ++k) o[k] += c * l.stride[k][d];
    }
}

// Set k's offset of point i.
template <int K>
__device__ __forceinline__ std::int64_t offset_of(const Loop<K> &l, std::int64_t i, int k) {
    std::int64_t o[K];
    offsets_of(l, i, o);
    return o[k];
}

template <int K>
__device__ __forceinline__ std::int64_t count_of(const Loop<K> &l) {
    std::int64_t n = 1;
#pragma unroll
    for (int d = 0; d < kMaxLoopRank; ++d)
        if (d < l.rank) n *= l.shape[d];
    return n;
}

// The launch error, if any, named.
inline Status launched(const char *what) {
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return unexpected(cuda_error(what, e));
    return std::monostate{};
}

// Blocks for a grid-stride loop over `work` items, `per_block` per block.
inline unsigned grid_for(std::int64_t work, std::int64_t per_block) {
    const std::int64_t blocks = (work + per_block - 1) / per_block;
    return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, std::int64_t{1} << 20));
}

}  // namespace tapestry::cuda

#endif  // __CUDACC__
