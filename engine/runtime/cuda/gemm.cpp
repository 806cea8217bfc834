// cuBLASLt matrix products (runtime/cuda/gemm.h) and the matmul, linear and
// partial_matmul kernels built on them. cuBLASLt is column-major: a row-major
// y = a·w is run as the column-major yᵀ = wᵀ·aᵀ, so cuBLASLt's A is our w, its B
// our a, and its D (and C) our y read as an n × m matrix with leading dimension
// y's row stride. Operands are used in place through their leading dimensions.
#include "runtime/cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "runtime/cuda/context.h"

namespace tapestry::cuda {

struct GemmCache {
    struct Choice {
        cublasLtMatmulAlgo_t algo{};
        std::size_t workspace = 0;
    };
    std::mutex mutex;
    std::map<std::string, Choice> chosen;  // by the problem's key (layouts, dtypes, epilogue, alignment)
};

std::shared_ptr<GemmCache> make_gemm_cache() {
    return std::make_shared<GemmCache>();
}

std::string_view gemm_epilogue_name(GemmEpilogue e) {
    switch (e) {
        case GemmEpilogue::none: return "none";
        case GemmEpilogue::relu: return "relu";
        case GemmEpilogue::gelu_tanh: return "gelu_tanh";
    }
    return "?";
}

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

std::string lt_error(const std::string &what, cublasStatus_t s) {
    return what + ": " + cublasLtGetStatusName(s) + " (" + cublasLtGetStatusString(s) + ")";
}

std::optional<cudaDataType_t> cuda_type(DType t) {
    switch (t) {
        case DType::f32: return CUDA_R_32F;
        case DType::f16: return CUDA_R_16F;
        case DType::bf16: return CUDA_R_16BF;
        default: return std::nullopt;
    }
}

// How a row-major [rows, cols] operand reads as a column-major cuBLASLt matrix:
// with its last dim contiguous it is the column-major [cols, rows] matrix with
// leading dimension row_stride (op N after the swap); with its first dim
// contiguous, the column-major [rows, cols] one with leading dimension
// col_stride (op T). A dim of extent 1 has no stride that matters.
struct Orientation {
    bool transposed = false;
    std::int64_t ld = 1;
};

Expected<Orientation, std::string> orient(const char *name, std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                          std::int64_t cs) {
    if (cs == 1 || cols <= 1) {
        if (rows <= 1) return Orientation{false, std::max<std::int64_t>(cols, 1)};
        if (rs >= std::max<std::int64_t>(cols, 1)) return Orientation{false, rs};
    }
    if (rs == 1 || rows <= 1) {
        if (cols <= 1) return Orientation{true, std::max<std::int64_t>(rows, 1)};
        if (cs >= std::max<std::int64_t>(rows, 1)) return Orientation{true, cs};
    }
    return unexpected(
        std::string(name) + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "] with element strides (" +
        std::to_string(rs) + ", " + std::to_string(cs) +
        ") is neither row-major nor transposed with non-overlapping rows: cuBLASLt cannot read it in place");
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue e, bool bias) {
    switch (e) {
        case GemmEpilogue::none: return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
        case GemmEpilogue::relu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
        case GemmEpilogue::gelu_tanh: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

std::string epilogue_text(GemmEpilogue e, bool bias) {
    std::string s;
    switch (e) {
        case GemmEpilogue::none: s = bias ? "BIAS" : "none"; break;
        case GemmEpilogue::relu: s = bias ? "RELU_BIAS" : "RELU"; break;
        case GemmEpilogue::gelu_tanh: s = bias ? "GELU_BIAS (tanh GELU)" : "GELU (tanh GELU)"; break;
    }
    return s;
}

std::string mib(std::size_t bytes) {
    if (bytes == 0) return "0";
    if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
    return std::to_string((bytes + 1023) / 1024) + " KiB";
}

bool aligned16(const void *p) {
    return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

struct GemmPlan::State {
    GemmDesc desc;
    cublasLtHandle_t handle = nullptr;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_d = nullptr;  // cuBLASLt's A = w, B = a
    cublasLtMatrixLayout_t layout_c = nullptr;  // desc.addend: C's own layout (else C is D)
    std::optional<cublasLtMatmulAlgo_t> aligned_algo;                                   // for 16-byte aligned pointers
    cublasLtMatmulAlgo_t any_algo{};                                                    // for element-aligned pointers
    std::size_t workspace = 0;
    bool zero_fill = false;  // k == 0: y is all zeros
    std::string note;
    // The bias pointer is an attribute of `op`: set and used under this lock.
    mutable std::mutex mutex;

    State() = default;
    State(const State &) = delete;
    State &operator=(const State &) = delete;
    ~State() {
        if (layout_c) cublasLtMatrixLayoutDestroy(layout_c);
        if (layout_d) cublasLtMatrixLayoutDestroy(layout_d);
        if (layout_b) cublasLtMatrixLayoutDestroy(layout_b);
        if (layout_a) cublasLtMatrixLayoutDestroy(layout_a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

namespace {

// Checks what make supports; the dtypes' cuBLASLt types on success.
std::optional<std::string> check_desc(const GemmDesc &d) {
    if (d.batch < 0 || d.m < 0 || d.n < 0 || d.k < 0) return "negative extent";
    if (d.batch > std::numeric_limits<std::int32_t>::max())
        return "batch count " + std::to_string(d.batch) + " over 2^31";
    for (const auto &[name, t] : {std::pair<const char *, DType>{"a", d.a.dtype}, {"w", d.w.dtype}, {"y", d.y.dtype}})
        if (!cuda_type(t))
            return std::string("dtype ") + std::string(dtype_name(t)) + " of " + name +
                   " (cuBLASLt products here take f32, bf16 or f16)";
    if (d.a.dtype != d.w.dtype)
        return "a is " + std::string(dtype_name(d.a.dtype)) + " but w is " + std::string(dtype_name(d.w.dtype));
    if (d.y.dtype != d.a.dtype && d.y.dtype != DType::f32)
        return "output dtype " + std::string(dtype_name(d.y.dtype)) + " from " + std::string(dtype_name(d.a.dtype)) +
               " operands (allowed: the operands' dtype, or f32)";
    if (d.y.col_stride != 1 && d.n > 1)
        return "y's columns must be contiguous (column stride " + std::to_string(d.y.col_stride) + ")";
    if (d.batch > 1 && d.y.batch_stride == 0) return "y's batch stride is 0 (every batch would write the same y)";
    if (d.k == 0 && (d.bias || d.accumulate || d.addend))
        return "an empty contraction (k = 0) with a bias, an addend or accumulation";
    if (d.addend) {
        if (d.accumulate) return std::string("both an addend and accumulation into y");
        if (d.c.dtype != d.y.dtype)
            return "the addend is " + std::string(dtype_name(d.c.dtype)) + " but y is " +
                   std::string(dtype_name(d.y.dtype)) + " (cuBLASLt's C has D's type)";
        if (d.c.col_stride != 1 && d.n > 1)
            return "the addend's columns must be contiguous (column stride " + std::to_string(d.c.col_stride) + ")";
    }
    return std::nullopt;
}

std::string desc_key(const GemmDesc &d, const Orientation &oa, const Orientation &ow, std::int64_t ldy,
                     std::uint32_t alignment, std::size_t max_workspace) {
    std::string key;
    auto put = [&](std::int64_t v) {
        key += std::to_string(v);
        key += ',';
    };
    for (std::int64_t v :
         {d.batch, d.m, d.n, d.k, oa.ld, ow.ld, ldy, d.a.batch_stride, d.w.batch_stride, d.y.batch_stride})
        put(v);
    for (DType t : {d.a.dtype, d.y.dtype}) put(static_cast<int>(t));
    put(oa.transposed);
    put(ow.transposed);
    put(d.bias);
    put(static_cast<int>(d.epilogue));
    put(d.accumulate);
    put(d.addend);
    if (d.addend) {
        put(d.m <= 1 ? std::max<std::int64_t>(d.n, 1) : d.c.row_stride);
        put(d.c.batch_stride);
    }
    put(d.tf32);
    put(alignment);
    put(static_cast<std::int64_t>(max_workspace));
    return key;
}

// The heuristic's first algorithm for the state's descriptors, for pointers with
// at least `alignment` bytes of alignment; cached per key.
Expected<GemmCache::Choice, std::string> choose_algo(Context &context, cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                                     cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                                                     cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
                                                     const std::string &key,
                                                     std::uint32_t alignment, std::size_t max_workspace) {
    GemmCache &cache = context.gemm_cache();
    {
        std::lock_guard<std::mutex> lock(cache.mutex);
        if (auto it = cache.chosen.find(key); it != cache.chosen.end()) return it->second;
    }
    cublasLtMatmulPreference_t pref = nullptr;
    if (cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref); s != CUBLAS_STATUS_SUCCESS)
        return unexpected(lt_error("cublasLtMatmulPreferenceCreate", s));
    const std::uint64_t max_ws = max_workspace;
    cublasStatus_t s =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws);
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasLtMatmulPreferenceSetAttribute(pref, attr, &alignment, sizeof alignment);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, lc, ld, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) return unexpected(lt_error("cublasLtMatmulAlgoGetHeuristic", s));
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return unexpected("cublasLtMatmulAlgoGetHeuristic found no algorithm for " + std::to_string(alignment) +
                          "-byte aligned operands");
    GemmCache::Choice choice{result.algo, result.workspaceSize};
    std::lock_guard<std::mutex> lock(cache.mutex);
    cache.chosen.emplace(key, choice);
    return choice;
}

}  // namespace

const GemmDesc &GemmPlan::desc() const {
    return state_->desc;
}
std::size_t GemmPlan::workspace_bytes() const {
    return state_->workspace;
}
std::string GemmPlan::note() const {
    return state_->note;
}

Expected<GemmPlan, std::string> GemmPlan::make(const GemmDesc &desc, Context &context) {
    const std::string what = "cuBLASLt matmul";
    if (auto e = check_desc(desc)) return unexpected(what + ": " + *e);
    auto state = std::make_shared<State>();
    state->desc = desc;
    const GemmDesc &d = state->desc;
    const std::string types = std::string(dtype_name(d.a.dtype)) + "→" + std::string(dtype_name(d.y.dtype));
    const std::string shape = "[" + (d.batch != 1 ? std::to_string(d.batch) + "x" : std::string()) +
                              std::to_string(d.m) + "x" + std::to_string(d.n) + " k=" + std::to_string(d.k) + "]";
    if (d.batch == 0 || d.m == 0 || d.n == 0) {
        state->note = "cuBLASLt " + types + " " + shape + ": empty, nothing to compute";
        return GemmPlan(std::move(state));
    }
    if (d.k == 0) {
        state->zero_fill = true;
        state->note = "empty contraction (k = 0) " + shape + ": y filled with zeros";
        return GemmPlan(std::move(state));
    }
    auto oa = orient("a", d.m, d.k, d.a.row_stride, d.a.col_stride);
    if (!oa) return unexpected(what + ": " + oa.error());
    auto ow = orient("w", d.k, d.n, d.w.row_stride, d.w.col_stride);
    if (!ow) return unexpected(what + ": " + ow.error());
    const std::int64_t ldy = d.m <= 1 ? std::max<std::int64_t>(d.n, 1) : d.y.row_stride;
    if (ldy < d.n)
        return unexpected(what + ": y's rows overlap (row stride " + std::to_string(d.y.row_stride) +
                          " < n = " + std::to_string(d.n) + ")");
    const std::int64_t ldc = d.m <= 1 ? std::max<std::int64_t>(d.n, 1) : d.c.row_stride;
    if (d.addend && ldc < d.n)
        return unexpected(what + ": the addend's rows overlap (row stride " + std::to_string(d.c.row_stride) +
                          " < n = " + std::to_string(d.n) + ")");

    state->handle = context.cublaslt();
    if (!state->handle) return unexpected(what + ": the context has no cuBLASLt handle");
    const cudaDataType_t ab = *cuda_type(d.a.dtype), yt = *cuda_type(d.y.dtype);
    const cublasComputeType_t compute =
        d.a.dtype == DType::f32 && d.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (cublasStatus_t s = cublasLtMatmulDescCreate(&state->op, compute, CUDA_R_32F); s != CUBLAS_STATUS_SUCCESS)
        return unexpected(lt_error(what + ": cublasLtMatmulDescCreate", s));
    // Column-major D[n, m] = op(A)[n, k] · op(B)[k, m] with A = w, B = a.
    const cublasOperation_t trans_a = ow->transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t trans_b = oa->transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = lt_epilogue(d.epilogue, d.bias);
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    auto set = [&](cublasLtMatmulDescAttributes_t attr, const auto &value) {
        if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulDescSetAttribute(state->op, attr, &value, sizeof value);
    };
    set(CUBLASLT_MATMUL_DESC_TRANSA, trans_a);
    set(CUBLASLT_MATMUL_DESC_TRANSB, trans_b);
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    if (d.bias) {
        const auto bias_type = static_cast<std::int32_t>(yt);
        set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
        const std::int64_t bias_batch_stride = 0;
        set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride);
    }
    if (s != CUBLAS_STATUS_SUCCESS) return unexpected(lt_error(what + ": cublasLtMatmulDescSetAttribute", s));

    auto make_layout = [&](cublasLtMatrixLayout_t &layout, cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                           std::int64_t ld, std::int64_t batch_stride) -> cublasStatus_t {
        cublasStatus_t r = cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                                      static_cast<std::uint64_t>(cols), ld);
        if (r != CUBLAS_STATUS_SUCCESS || d.batch == 1) return r;
        const auto count = static_cast<std::int32_t>(d.batch);
        r = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
        if (r == CUBLAS_STATUS_SUCCESS)
            r = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                 sizeof batch_stride);
        return r;
    };
    if (ow->transposed)
        s = make_layout(state->layout_a, ab, d.k, d.n, ow->ld, d.w.batch_stride);
    else
        s = make_layout(state->layout_a, ab, d.n, d.k, ow->ld, d.w.batch_stride);
    if (s == CUBLAS_STATUS_SUCCESS) {
        if (oa->transposed)
            s = make_layout(state->layout_b, ab, d.m, d.k, oa->ld, d.a.batch_stride);
        else
            s = make_layout(state->layout_b, ab, d.k, d.m, oa->ld, d.a.batch_stride);
    }
    if (s == CUBLAS_STATUS_SUCCESS) s = make_layout(state->layout_d, yt, d.n, d.m, ldy, d.y.batch_stride);
    if (s == CUBLAS_STATUS_SUCCESS && d.addend) s = make_layout(state->layout_c, yt, d.n, d.m, ldc, d.c.batch_stride);
    if (s != CUBLAS_STATUS_SUCCESS) return unexpected(lt_error(what + ": cublasLtMatrixLayoutCreate", s));
    const cublasLtMatrixLayout_t layout_c = d.addend ? state->layout_c : state->layout_d;

    // cuBLAS recommends a 32 MiB workspace on Hopper and 4 MiB on earlier GPUs; the
    // plan reserves what the chosen algorithms ask for, within that.
    const std::size_t max_workspace = (context.cc_major() >= 9 ? 32 : 4) * kMiB;
    const std::uint32_t element = static_cast<std::uint32_t>(std::min(dtype_bytes(d.a.dtype), dtype_bytes(d.y.dtype)));
    // Pointers are known only at enqueue: one algorithm for 16-byte aligned ones
    // (when every batch step keeps that alignment), one for any element-aligned ones.
    auto byte_stride = [](const GemmOperand &o) { return o.batch_stride * dtype_bytes(o.dtype); };
    const bool batches_aligned =
        d.batch == 1 || (byte_stride(d.a) % 16 == 0 && byte_stride(d.w) % 16 == 0 && byte_stride(d.y) % 16 == 0 &&
                         (!d.addend || byte_stride(d.c) % 16 == 0));
    GemmPlan plan(state);
    if (batches_aligned && element < 16) {
        auto c = choose_algo(context, state->handle, state->op, state->layout_a, state->layout_b, layout_c, state->layout_d,
                             desc_key(d, *oa, *ow, ldy, 16, max_workspace), 16, max_workspace);
        if (c) {
            state->aligned_algo = c->algo;
            state->workspace = c->workspace;
        }
    }
    // The heuristic infers the bias's alignment from its pointer attribute, never
    // dereferenced there: an element-aligned stand-in for the fallback's choice.
    if (d.bias) {
        const void *stand_in = reinterpret_cast<const void *>(static_cast<std::uintptr_t>(dtype_bytes(d.y.dtype)));
        s = cublasLtMatmulDescSetAttribute(state->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof stand_in);
        if (s != CUBLAS_STATUS_SUCCESS) return unexpected(lt_error(what + ": cublasLtMatmulDescSetAttribute", s));
    }
    auto any = choose_algo(context, state->handle, state->op, state->layout_a, state->layout_b, layout_c, state->layout_d,
                           desc_key(d, *oa, *ow, ldy, element, max_workspace), element, max_workspace);
    if (!any)
        return unexpected(what + " " + types + " " + shape + ", epilogue " + epilogue_text(d.epilogue, d.bias) + ": " +
                          any.error());
    state->any_algo = any->algo;
    state->workspace = std::max(state->workspace, any->workspace);
    state->note = "cuBLASLt " + types + (compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? " (TF32)" : "") + " " + shape +
                  (oa->transposed ? ", a transposed" : "") + (ow->transposed ? ", w transposed" : "") +
                  (d.batch > 1 && (d.a.batch_stride == 0 || d.w.batch_stride == 0) ? ", batch-broadcast operand" : "") +
                  ", epilogue " + epilogue_text(d.epilogue, d.bias) + (d.accumulate ? ", accumulating into y" : "") + (d.addend ? ", adding c" : "") +
                  ", workspace " + mib(state->workspace);
    return plan;
}

Status GemmPlan::enqueue(const void *a, const void *w, const void *bias, void *y, void *workspace, cudaStream_t stream,
                         const void *c) const {
    const State &st = *state_;
    const GemmDesc &d = st.desc;
    if (d.batch == 0 || d.m == 0 || d.n == 0) return std::monostate{};
    if (st.zero_fill) {
        const auto bytes = static_cast<std::size_t>(dtype_bytes(d.y.dtype));
        const std::size_t pitch =
            d.m <= 1 ? static_cast<std::size_t>(d.n) * bytes : static_cast<std::size_t>(d.y.row_stride) * bytes;
        for (std::int64_t b = 0; b < d.batch; ++b) {
            auto *base = static_cast<std::byte *>(y) + b * d.y.batch_stride * static_cast<std::int64_t>(bytes);
            if (cudaError_t e = cudaMemset2DAsync(base, pitch, 0, static_cast<std::size_t>(d.n) * bytes,
                                                  static_cast<std::size_t>(d.m), stream);
                e != cudaSuccess)
                return unexpected(cuda_error("matmul with k = 0: cudaMemset2DAsync", e));
        }
        return std::monostate{};
    }
    if (d.bias && !bias) return unexpected(std::string("cuBLASLt matmul: the plan has a bias but none was given"));
    if (d.addend && !c) return unexpected(std::string("cuBLASLt matmul: the plan has an addend but none was given"));
    if (st.workspace > 0 && !workspace)
        return unexpected("cuBLASLt matmul: needs a workspace of " + std::to_string(st.workspace) + " bytes, got none");
    const bool aligned =
        st.aligned_algo && aligned16(a) && aligned16(w) && aligned16(y) && aligned16(bias) && aligned16(c);
    const cublasLtMatmulAlgo_t *algo = aligned ? &*st.aligned_algo : &st.any_algo;
    const float alpha = 1.0f, beta = d.accumulate || d.addend ? 1.0f : 0.0f;
    const void *c_data = d.addend ? c : y;
    const cublasLtMatrixLayout_t layout_c = d.addend ? st.layout_c : st.layout_d;
    std::lock_guard<std::mutex> lock(st.mutex);
    if (d.bias) {
        cublasStatus_t s = cublasLtMatmulDescSetAttribute(st.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        if (s != CUBLAS_STATUS_SUCCESS) return unexpected(lt_error("cuBLASLt matmul: setting the bias", s));
    }
    cublasStatus_t s = cublasLtMatmul(st.handle, st.op, &alpha, w, st.layout_a, a, st.layout_b, &beta, c_data, layout_c,
                                      y, st.layout_d, algo, workspace, st.workspace, stream);
    if (s != CUBLAS_STATUS_SUCCESS) return unexpected(lt_error("cublasLtMatmul (" + st.note + ")", s));
    return std::monostate{};
}

// ---------------------------------------------------------------------------
// The kernels: a kind's views become one or more products, each a GemmPlan
// (one cuBLASLt call, its batch one of the batch dims) looped over the batch
// dims cuBLASLt's single strided batch cannot cover.

namespace {

// A batch dim of a product: its extent and the element strides of a, w and y
// along it (0 where the operand is broadcast).
struct BatchDim {
    std::int64_t size = 1, a = 0, w = 0, y = 0;
};

struct ProductShape {
    std::vector<BatchDim> batch;  // outer to inner
    std::int64_t m = 0, n = 0, k = 0;
    GemmOperand a, w, y;                        // batch_stride unused here
    std::int64_t a_at = 0, w_at = 0, y_at = 0;  // element offsets into the views
};

struct Product {
    GemmPlan plan;
    std::vector<BatchDim> loops;  // iterated at enqueue, outer to inner
    std::int64_t a_at = 0, w_at = 0, y_at = 0;
};

// Folds batch dims into m while a's and y's rows continue evenly across them and
// w is shared (the batched matmul of a shared weight is one taller GEMM).
void fold_into_m(ProductShape &p) {
    const bool a_rows = p.a.col_stride == 1 || p.k <= 1;
    const bool y_rows = p.y.col_stride == 1 || p.n <= 1;
    while (!p.batch.empty() && a_rows && y_rows) {
        const BatchDim &b = p.batch.back();
        if (b.w != 0) break;
        if (p.m == 1) {
            if (b.a < std::max<std::int64_t>(p.k, 1) || b.y < std::max<std::int64_t>(p.n, 1)) break;
            p.a.row_stride = b.a;
            p.y.row_stride = b.y;
        } else if (b.a != p.a.row_stride * p.m || b.y != p.y.row_stride * p.m) {
            break;
        }
        p.m *= b.size;
        p.batch.pop_back();
    }
}

// Merges neighbouring batch dims that step evenly for all three operands.
std::vector<BatchDim> merge_dims(const std::vector<BatchDim> &dims) {
    std::vector<BatchDim> out;
    for (const BatchDim &d : dims) {
        if (!out.empty()) {
            BatchDim &o = out.back();
            if (o.a == d.a * d.size && o.w == d.w * d.size && o.y == d.y * d.size) {
                o = {o.size * d.size, d.a, d.w, d.y};
                continue;
            }
        }
        out.push_back(d);
    }
    return out;
}

Expected<Product, std::string> make_product(ProductShape p, DType dtype, bool bias, bool tf32, Context &context) {
    std::erase_if(p.batch, [](const BatchDim &b) { return b.size == 1; });
    fold_into_m(p);
    std::vector<BatchDim> dims = merge_dims(p.batch);
    GemmDesc desc;
    desc.m = p.m;
    desc.n = p.n;
    desc.k = p.k;
    desc.a = p.a;
    desc.w = p.w;
    desc.y = p.y;
    desc.a.dtype = desc.w.dtype = desc.y.dtype = dtype;
    desc.bias = bias;
    desc.tf32 = tf32;
    if (std::any_of(p.batch.begin(), p.batch.end(), [](const BatchDim &b) { return b.size == 0; })) {
        desc.batch = 0;  // an empty view: nothing to compute
        dims.clear();
    }
    // cuBLASLt's own batch: the largest dim y is not broadcast along; the rest loop.
    auto best = dims.end();
    for (auto it = dims.begin(); it != dims.end(); ++it)
        if (it->y != 0 && (best == dims.end() || it->size > best->size)) best = it;
    if (best != dims.end()) {
        desc.batch = best->size;
        desc.a.batch_stride = best->a;
        desc.w.batch_stride = best->w;
        desc.y.batch_stride = best->y;
        dims.erase(best);
    }
    for (const BatchDim &b : dims)
        if (b.y == 0) return unexpected(std::string("a batch dim of y has stride 0"));
    auto plan = GemmPlan::make(desc, context);
    if (!plan) return unexpected(plan.error());
    return Product{std::move(plan).value(), std::move(dims), p.a_at, p.w_at, p.y_at};
}

// A view's shape and strides right-aligned to `rank` (leading size-1 dims, stride 0).
struct Box {
    std::vector<std::int64_t> shape, strides;
};

Box aligned_box(const ZPoint &shape, const std::vector<std::int64_t> &strides, int rank) {
    Box b{std::vector<std::int64_t>(static_cast<size_t>(rank), 1),
          std::vector<std::int64_t>(static_cast<size_t>(rank), 0)};
    const int own = shape.rank();
    for (int d = 0; d < own && d < rank; ++d) {
        b.shape[static_cast<size_t>(rank - own + d)] = shape[d];
        b.strides[static_cast<size_t>(rank - own + d)] = strides[static_cast<size_t>(d)];
    }
    return b;
}

// The batch dims [0, count) of y with a's and w's strides (0 where they broadcast).
std::vector<BatchDim> batch_dims(const Box &a, const Box &w, const Box &y, int count) {
    std::vector<BatchDim> dims;
    for (int d = 0; d < count; ++d) {
        const auto i = static_cast<size_t>(d);
        dims.push_back(
            {y.shape[i], a.shape[i] == 1 ? 0 : a.strides[i], w.shape[i] == 1 ? 0 : w.strides[i], y.strides[i]});
    }
    return dims;
}

class GemmKernel final : public Kernel {
public:
    GemmKernel(std::vector<Product> products, bool bias, int bytes)
        : products_(std::move(products)), bias_(bias), bytes_(bytes) {
        for (const Product &p : products_) workspace_ = std::max(workspace_, p.plan.workspace_bytes());
    }

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *workspace,
                   cudaStream_t stream) override {
        if (inputs.size() < (bias_ ? 3u : 2u) || outputs.size() != 1)
            return unexpected(std::string("gemm kernel: expected ") + (bias_ ? "3" : "2") + " inputs and 1 output");
        const std::byte *bias = bias_ ? inputs[2].data : nullptr;
        for (const Product &p : products_) {
            std::vector<std::int64_t> at(p.loops.size(), 0);
            while (true) {
                std::int64_t a = p.a_at, w = p.w_at, y = p.y_at;
                for (size_t i = 0; i < at.size(); ++i) {
                    a += at[i] * p.loops[i].a;
                    w += at[i] * p.loops[i].w;
                    y += at[i] * p.loops[i].y;
                }
                if (Status s = p.plan.enqueue(inputs[0].data + a * bytes_, inputs[1].data + w * bytes_, bias,
                                              outputs[0].data + y * bytes_, workspace, stream);
                    !s)
                    return s;
                size_t i = at.size();
                while (i > 0 && ++at[i - 1] == p.loops[i - 1].size) at[--i] = 0;
                if (i == 0) break;
            }
        }
        return std::monostate{};
    }
    std::size_t workspace_bytes() const override { return workspace_; }
    std::vector<std::string> notes() const override {
        std::vector<std::string> out;
        for (const Product &p : products_) {
            std::int64_t calls = 1;
            for (const BatchDim &b : p.loops) calls *= b.size;
            out.push_back(p.plan.note() + (calls > 1 ? ", " + std::to_string(calls) + " calls over batch dims" : ""));
        }
        return out;
    }

private:
    std::vector<Product> products_;
    bool bias_ = false;
    int bytes_ = 4;
    std::size_t workspace_ = 0;
};

using Made = Expected<std::unique_ptr<Kernel>, std::string>;

std::optional<std::string> check_spec(const KernelSpec &spec, size_t inputs) {
    if (spec.input_shapes.size() != inputs || spec.input_strides.size() != inputs || spec.output_shapes.size() != 1 ||
        spec.output_strides.size() != 1 || spec.operands.empty() || spec.operands[0].operands.empty())
        return "unexpected operands (" + std::to_string(spec.input_shapes.size()) + " input views, " +
               std::to_string(spec.output_shapes.size()) + " output views)";
    const DType t = spec.operands[0].operands[0].dtype;
    if (t != DType::f32 && t != DType::bf16 && t != DType::f16)
        return "no CUDA kernel for dtype " + std::string(dtype_name(t)) + " (f32, bf16, f16)";
    return std::nullopt;
}

Made finish(const std::string &what, std::vector<Expected<Product, std::string>> made, bool bias, DType t) {
    std::vector<Product> products;
    for (auto &p : made) {
        if (!p) return unexpected(what + ": " + p.error());
        products.push_back(std::move(p).value());
    }
    return std::unique_ptr<Kernel>(new GemmKernel(std::move(products), bias, dtype_bytes(t)));
}

bool has_port(const KernelSpec &spec, const std::string &port) {
    return std::any_of(spec.operands.begin(), spec.operands.end(),
                       [&](const PortTypes &p) { return p.port == port && !p.operands.empty(); });
}

// matmul: y[…, m, n] = a[…, m, k]·b[…, k, n], batch dims right-aligned and broadcast.
Made make_matmul(const KernelSpec &spec, Context &context) {
    const std::string what = "matmul kernel";
    if (auto e = check_spec(spec, 2)) return unexpected(what + ": " + *e);
    const DType t = spec.operands[0].operands[0].dtype;
    const ZPoint &ys = spec.output_shapes[0];
    const int rank = std::max(2, ys.rank());
    const Box a = aligned_box(spec.input_shapes[0], spec.input_strides[0], rank);
    const Box b = aligned_box(spec.input_shapes[1], spec.input_strides[1], rank);
    const Box y = aligned_box(ys, spec.output_strides[0], rank);
    const auto m = static_cast<size_t>(rank - 2), n = static_cast<size_t>(rank - 1);
    ProductShape p;
    p.batch = batch_dims(a, b, y, rank - 2);
    p.m = y.shape[m];
    p.n = y.shape[n];
    p.k = a.shape[n];
    p.a = {t, a.strides[m], a.strides[n], 0};
    p.w = {t, b.strides[m], b.strides[n], 0};
    p.y = {t, y.strides[m], y.strides[n], 0};
    std::vector<Expected<Product, std::string>> made;
    made.push_back(make_product(p, t, false, spec.tf32, context));
    return finish(what, std::move(made), false, t);
}

// linear: y[…, o] = x[…, f]·w[f, o] (+ bias[o]); x's leading dims fold into m.
Made make_linear(const KernelSpec &spec, Context &context) {
    const std::string what = "linear kernel";
    const bool bias = has_port(spec, "bias");
    if (auto e = check_spec(spec, bias ? 3 : 2)) return unexpected(what + ": " + *e);
    const DType t = spec.operands[0].operands[0].dtype;
    const ZPoint &ys = spec.output_shapes[0];
    const int rank = std::max(2, ys.rank());
    const Box x = aligned_box(spec.input_shapes[0], spec.input_strides[0], rank);
    const Box w = aligned_box(spec.input_shapes[1], spec.input_strides[1], rank);
    const Box y = aligned_box(ys, spec.output_strides[0], rank);
    const auto m = static_cast<size_t>(rank - 2), n = static_cast<size_t>(rank - 1);
    if (bias) {
        const ZPoint &bs = spec.input_shapes[2];
        if (bs.rank() != 1 || (bs[0] > 1 && spec.input_strides[2][0] != 1))
            return unexpected(what + ": the bias view must be one contiguous row");
    }
    ProductShape p;
    p.batch = batch_dims(x, w, y, rank - 2);
    for (BatchDim &d : p.batch) d.w = 0;  // w has no batch dims
    p.m = y.shape[m];
    p.n = y.shape[n];
    p.k = x.shape[n];
    p.a = {t, x.strides[m], x.strides[n], 0};
    p.w = {t, w.strides[m], w.strides[n], 0};
    p.y = {t, y.strides[m], y.strides[n], 0};
    std::vector<Expected<Product, std::string>> made;
    made.push_back(make_product(p, t, bias, spec.tf32, context));
    return finish(what, std::move(made), bias, t);
}

// partial_matmul over a shard [p0, p1) × batch × m × n: block p reads a[…, pB:(p+1)B]
// and b[…, pB:(p+1)B, :] (the last block clipped to k) and writes y[p]. The
// full-size blocks are one product with p as a batch dim; a clipped last block
// in the shard is a second one.
Made make_partial_matmul(const KernelSpec &spec, Context &context) {
    const std::string what = "partial_matmul kernel";
    if (auto e = check_spec(spec, 2)) return unexpected(what + ": " + *e);
    if (spec.operands.size() != 2 || spec.operands[0].operands.size() != 1 || spec.operands[1].operands.size() != 1)
        return unexpected(what + ": unexpected operands");
    const DType t = spec.operands[0].operands[0].dtype;
    const OperandType &a_type = spec.operands[0].operands[0];
    const std::int64_t k_total = a_type.shape[a_type.shape.rank() - 1];
    const std::int64_t parts = spec.params.get_int("parts", 0);
    if (parts < 1 || parts > k_total) return unexpected(what + ": bad parts " + std::to_string(parts));
    const std::int64_t block = (k_total + parts - 1) / parts;
    const ZPoint &ys = spec.output_shapes[0];
    const int rank = ys.rank();  // [P, *batch, m, n]
    if (rank < 3 || spec.index_range.rank() != rank) return unexpected(what + ": unexpected output rank");
    if (ys.product() == 0 || spec.index_range.empty())
        return std::unique_ptr<Kernel>(new GemmKernel({}, false, dtype_bytes(t)));
    const ZPoint inner_shape(std::vector<Coord>(ys.coords().begin() + 1, ys.coords().end()));
    const std::vector<std::int64_t> inner_strides(spec.output_strides[0].begin() + 1, spec.output_strides[0].end());
    const int inner = rank - 1;
    const Box a = aligned_box(spec.input_shapes[0], spec.input_strides[0], inner);
    const Box b = aligned_box(spec.input_shapes[1], spec.input_strides[1], inner);
    const Box y = aligned_box(inner_shape, inner_strides, inner);
    const auto m = static_cast<size_t>(inner - 2), n = static_cast<size_t>(inner - 1);
    const std::int64_t y_p = spec.output_strides[0][0];
    const std::int64_t p0 = spec.index_range.start()[0], p1 = spec.index_range.end()[0];

    ProductShape base;
    base.batch = batch_dims(a, b, y, inner - 2);
    base.m = y.shape[m];
    base.n = y.shape[n];
    base.a = {t, a.strides[m], a.strides[n], 0};
    base.w = {t, b.strides[m], b.strides[n], 0};
    base.y = {t, y.strides[m], y.strides[n], 0};
    // Blocks [p0, full_end) have size B; a block at p = full_end, if in the shard, is clipped.
    const std::int64_t full_end = std::min(p1, k_total / block);
    std::vector<Expected<Product, std::string>> made;
    if (full_end > p0) {
        ProductShape full = base;
        full.k = block;
        full.batch.insert(full.batch.begin(),
                          BatchDim{full_end - p0, block * base.a.col_stride, block * base.w.row_stride, y_p});
        made.push_back(make_product(full, t, false, spec.tf32, context));
    }
    for (std::int64_t p = std::max(p0, full_end); p < p1; ++p) {
        const std::int64_t size = std::min(block, k_total - p * block);
        if (size <= 0) return unexpected(what + ": block " + std::to_string(p) + " is empty");
        ProductShape last = base;
        last.k = size;
        const std::int64_t q = p - p0;
        last.a_at = q * block * base.a.col_stride;
        last.w_at = q * block * base.w.row_stride;
        last.y_at = q * y_p;
        made.push_back(make_product(last, t, false, spec.tf32, context));
    }
    return finish(what, std::move(made), false, t);
}

}  // namespace

std::vector<KernelFactory> gemm_factories() {
    return {{"matmul", make_matmul}, {"linear", make_linear}, {"partial_matmul", make_partial_matmul}};
}

}  // namespace tapestry::cuda
