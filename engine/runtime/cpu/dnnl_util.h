// Shared oneDNN helpers of the CPU kernels: the CPU engine and one stream per
// thread, memory descriptors for strided views, dtype and algorithm mapping,
// epilogues as post-ops, and the guard that turns dnnl::error into an error value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/expected.h"
#include "graph/dtype.h"
#include "graph/params.h"
#include "index/zpoint.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {

// The one CPU engine (created on first use; safe to share between threads).
const dnnl::engine &cpu_engine();
// This thread's stream on cpu_engine() (created once per thread).
dnnl::stream &thread_stream();

// Sets the OpenMP thread count oneDNN uses on the calling thread (>= 1).
void set_omp_threads(int n);
int omp_threads();  // the calling thread's OpenMP thread count (omp_get_max_threads)

// oneDNN element type of a dtype: f32, bf16, f16, i32 (s32), bool (u8); none for i64.
std::optional<dnnl::memory::data_type> dnnl_dtype(DType t);

// Row-major (C order) element strides of a shape.
std::vector<std::int64_t> dense_strides(const ZPoint &shape);

// KernelSpec's strides of input/output view i, or dense strides of its shape when
// the spec states none.
std::vector<std::int64_t> spec_input_strides(const KernelSpec &spec, size_t i);
std::vector<std::int64_t> spec_output_strides(const KernelSpec &spec, size_t i);

// A memory descriptor of a strided box. Rank 0 becomes the 1-D shape [1]. Strides
// of size-1 dims are normalised (oneDNN accepts any; we make them dense so equal
// boxes give equal descriptors). `rank` > shape.rank() prepends size-1 dims (for
// broadcast operands of binary ops and post-ops). Fails for a dtype oneDNN lacks.
Expected<dnnl::memory::desc, std::string> make_md(const ZPoint &shape, const std::vector<std::int64_t> &strides,
                                                  DType t, int rank = -1);
inline Expected<dnnl::memory::desc, std::string> make_md(const View &v, int rank = -1) {
    return make_md(v.shape, v.strides, v.dtype, rank);
}
// Whether oneDNN can describe a strided box: its non-unit dims, ordered by
// stride, must nest (each stride at least the span of the dims inside it) with
// positive strides. A box read with steps from a tight buffer (x[:, 1:6:2] of
// the rows 1 … 5 alone) does not nest although no two elements share an address;
// such a box takes a plain loop instead.
bool dnnl_describable(const std::vector<std::int64_t> &shape, const std::vector<std::int64_t> &strides);
// A dense descriptor of a shape.
Expected<dnnl::memory::desc, std::string> dense_md(const ZPoint &shape, DType t, int rank = -1);

// An eltwise algorithm with its alpha/beta.
struct EltwiseAlgorithm {
    dnnl::algorithm algorithm = dnnl::algorithm::undef;
    float alpha = 0.f;
    float beta = 0.f;
};
// The two constants of a unary kind, as the op library defines them: pow's
// exponent; leaky_relu's and elu's alpha; selu's alpha and gamma; hard_sigmoid's
// alpha and beta; clip's min and max, infinite at or beyond ±FLT_MAX (the
// defaults, meaning no bound). {0, 0} for the other kinds. The one place the CPU
// kernels (the loops, the fused chains, the oneDNN eltwise) read them.
std::pair<double, double> unary_constants(const std::string &kind, const Params &params);
// relu, sigmoid, tanh, exp, sqrt, gelu (approximate "none" → gelu_erf, "tanh" →
// gelu_tanh), pow (exponent → eltwise_pow with alpha 1, beta exponent), neg, abs,
// reciprocal, leaky_relu, elu, hard_swish. `params` with defaults filled. None for
// any other kind (those run as loops).
std::optional<EltwiseAlgorithm> eltwise_algorithm(const std::string &kind, const Params &params);
// add sub mul div → binary_add …; none otherwise (max and min: oneDNN's drop NaN).
std::optional<dnnl::algorithm> binary_algorithm(const std::string &kind);

// Epilogues as oneDNN post-ops. A unary epilogue needs an eltwise algorithm; a
// binary one (add/sub/mul/div) needs extra_input >= 0 and the descriptor of that
// extra operand (extra_mds[extra_input]) broadcastable to the destination.
struct PostOpPlan {
    dnnl::post_ops ops;
    // (post-op index, extra input index) for every binary post-op.
    std::vector<std::pair<int, int>> binary_args;
};
bool epilogue_supported(const Epilogue &e);
Expected<PostOpPlan, std::string> make_post_ops(const std::vector<Epilogue> &epilogues,
                                                const std::vector<dnnl::memory::desc> &extra_mds);
// DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1: the execute argument of a binary post-op.
int post_op_arg(int post_op_index);

// "oneDNN: <what> (status N)".
std::string dnnl_error_text(const dnnl::error &e);

// oneDNN 2.6 ends the process (a division by zero inside
// dnnl_primitive_desc_iterator_create) creating a matmul whose M or K reaches
// 2^32 — its GEMM keeps them in 32-bit ints. Every matmul primitive is asked
// through this first, with its source and weights: none, or the refusal naming
// the dimension (any of their last two over 2^31 − 1, which is conservative).
std::optional<std::string> matmul_size_refusal(const dnnl::memory::desc &src, const dnnl::memory::desc &weights);

// Runs f (returning Expected<T, std::string>) and turns any dnnl::error or
// std::exception thrown inside into an error value prefixed by `what`.
template <typename F> auto dnnl_guard(const std::string &what, F &&f) -> decltype(f()) {
    try {
        return f();
    } catch (const dnnl::error &e) {
        return unexpected(what + ": " + dnnl_error_text(e));
    } catch (const std::exception &e) {
        return unexpected(what + ": " + std::string(e.what()));
    }
}

// A oneDNN memory object over a view's bytes (no allocation). For kernels that
// cache memory objects at make time, set_data_handle() per run is cheaper.
dnnl::memory wrap(const dnnl::memory::desc &md, const View &v);

// Primitive attributes with a user-managed scratchpad (so each kernel owns its
// scratch memory and kernels can run concurrently); `post_ops` appended if given.
dnnl::primitive_attr make_attr(const dnnl::post_ops *post_ops = nullptr);

// A primitive with its execute arguments prepared at make time: memory objects
// without data whose handles are pointed at the views' bytes per run, and the
// kernel's own scratchpad. Not for concurrent use (one kernel = one step).
class PreparedPrimitive {
public:
    // Takes the primitive of `pd` (built with make_attr()) and allocates its scratchpad.
    void init(const dnnl::primitive_desc_base &pd, dnnl::primitive p);
    // Adds execute argument `arg` (DNNL_ARG_SRC, …) described by `md`.
    void bind(int arg, const dnnl::memory::desc &md);
    // Points argument `arg` (bound before) at `data`.
    void set(int arg, const void *data);
    // Executes on this thread's stream and waits.
    void execute();
    std::size_t scratch_bytes() const { return scratch_.size(); }

private:
    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::vector<std::byte> scratch_;
};

}  // namespace tapestry::cpu
