// The CPU kernel interface: one factory per op kind turns an operation (or one
// shard of it: an index sub-range) into a prepared kernel — usually oneDNN
// primitives — that reads strided views of its input selections and writes
// views of its output selections, in place in the aggregate tensors' buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/dtype.h"
#include "graph/signature.h"
#include "ops/op_def.h"

namespace tapestry::cpu {

// A strided box of a tensor buffer. Strides are in elements; shape[d] may be 0.
struct View {
    std::byte *data = nullptr;
    DType dtype = DType::f32;
    ZPoint shape;
    std::vector<std::int64_t> strides;

    float *f32() const { return reinterpret_cast<float *>(data); }
    std::int64_t elements() const { return shape.product(); }
    bool dense() const;  // C-contiguous
};

// An elementwise operation applied to a kernel's output before it is stored
// (oneDNN post-ops): an activation, or a binary op with a second operand.
struct Epilogue {
    std::string kind;  // an elementwise kind of the op library: "relu", "gelu", "add", "mul", …
    Params params;     // with defaults filled
    // For a binary epilogue: which extra kernel input (index into the inputs after the
    // op's own) holds the other operand, and its projection relative to the index space.
    int extra_input = -1;
    OperandProjection projection;
};

struct KernelSpec {
    const OpDef *def = nullptr;
    Params params;                     // defaults filled in
    Derivation derivation;             // whole op, relative (zero-origin operands)
    std::vector<PortTypes> operands;   // whole-op input types, in port order
    ZRange index_range;                // the points this kernel computes (a shard, or the whole space)
    // Shapes of the views the kernel will get, inputs then outputs, flattened in
    // port order; these are the selections of index_range (clipped ones clipped).
    // input_shapes also holds the epilogues' extra operands, after the op's own.
    std::vector<ZPoint> input_shapes;
    std::vector<ZPoint> output_shapes;
    // Element strides of those views as the executor will pass them (so primitives
    // can be built for them at make time); a missing or empty entry means dense C
    // order (see spec_input_strides in runtime/cpu/dnnl_util.h).
    std::vector<std::vector<std::int64_t>> input_strides;
    std::vector<std::vector<std::int64_t>> output_strides;
    std::vector<Epilogue> epilogues;   // fused after the op (empty unless the kernel said it can fuse)
    // Per input view (same order as input_shapes): the first byte of that view when
    // it is a constant — a parameter's own value, which the program holds for its
    // lifetime — else nullptr (missing entries too). Kernels may prepack such an
    // input once at make time (weights in oneDNN's preferred layout); a run whose
    // view points elsewhere (the caller gave the parameter a value) must still be
    // honoured, so they compare the run's pointer with this one.
    std::vector<const std::byte *> constant_inputs;
    int threads = 1;                   // threads this kernel may use
    // conv2d: a 3×3, stride-1 f32 convolution with 16k input and output channels
    // may run as Winograd F(4×4, 3×3) (oneDNN's jit_wino_4x3): ~2× faster on
    // these layers, with rounding errors a few times the direct algorithm's
    // (CpuOptions::winograd).
    bool winograd = false;
    // matmul/linear with 2-D weights, f32: compute in bf16 (inputs and weights
    // rounded to bf16, f32 accumulation, bias, epilogues and output) where the CPU
    // has native bf16 (CpuOptions::bf16_matmul).
    bool bf16_matmul = false;
};

class Kernel {
public:
    virtual ~Kernel() = default;
    // inputs: the op's operands flattened in port order, then the epilogues' extra
    // operands; outputs: flattened in port order. Views match KernelSpec's shapes.
    virtual void run(std::span<const View> inputs, std::span<const View> outputs) = 0;
    // Bytes of scratch memory the kernel holds (reported in run statistics).
    virtual std::size_t scratch_bytes() const { return 0; }
    // What a user should know about how this kernel runs on this CPU, one sentence
    // each: an option of the spec that could not take effect here ("Winograd is not
    // available on avx2: direct convolution"). Shown by `tapestry run -v` and the
    // studio's Timings.
    virtual std::vector<std::string> notes() const { return {}; }
};

struct KernelFactory {
    std::string kind;
    // Can this kernel fuse `epilogue` (an elementwise op consuming its only output)?
    std::function<bool(const KernelSpec &, const Epilogue &)> can_fuse;
    std::function<Expected<std::unique_ptr<Kernel>, std::string>(const KernelSpec &)> make;
    // Whether a kernel made for one batch tile (index dim 0 cut, same shapes and
    // strides) runs every other such tile when given its views: true when the
    // kernel depends on the shapes and strides alone, not on where its index
    // range starts in dim 0. The executor then makes one kernel per worker for all
    // the tiles of an op instead of one per tile (CpuOptions::tile_bytes).
    bool tile_invariant = false;
};

// Every kernel factory, by op kind (built once; thread-safe to read).
const KernelFactory *find_kernel(const std::string &kind);

// A kernel made for a spec: the factory's own, or a dtype fallback.
struct MadeKernel {
    std::unique_ptr<Kernel> kernel;
    // Empty for the factory's own kernel. Otherwise why the kernel computes in f32:
    // "bf16 computed in f32 (on avx2 there is no native kernel: conv2d: oneDNN: …)".
    std::string fallback;
};
// The one way kernels are made (the executor, the tests): factory.make(spec); when
// that fails for a spec with bf16/f16 operands, the factory's f32 kernel behind a
// conversion — bf16/f16 inputs widened to f32 (exact), outputs rounded back to
// their dtype (nearest even), as the oracle defines 16-bit float ops: computed
// wide, stored narrow. Fails with the factory's own error when neither can be made.
// (runtime/cpu/dtype_fallback.cpp)
Expected<MadeKernel, std::string> make_kernel(const KernelFactory &factory, const KernelSpec &spec);
// Whether make_kernel can make `spec` with `epilogue` fused: the factory's
// can_fuse, or — for bf16/f16 specs — its can_fuse of the f32 spec the fallback
// would make (where the native kernel cannot be made, the f32 one takes the
// epilogue as a post-op all the same).
bool can_fuse(const KernelFactory &factory, const KernelSpec &spec, const Epilogue &epilogue);
std::vector<std::string> kernel_kinds();

// Registration, one function per family file (runtime/cpu/kernels_<family>.cpp).
void register_kernels_matmul(std::vector<KernelFactory> &out);       // matmul linear
void register_kernels_elementwise(std::vector<KernelFactory> &out);  // unary/binary elementwise, cast
void register_kernels_normalization(std::vector<KernelFactory> &out);  // softmax layernorm rmsnorm batchnorm
void register_kernels_convolution(std::vector<KernelFactory> &out);  // conv2d pools
void register_kernels_reduction(std::vector<KernelFactory> &out);  // reduce_sum reduce_mean reduce_max
void register_kernels_shape(std::vector<KernelFactory> &out);      // transpose reshape slice concat
void register_kernels_gather(std::vector<KernelFactory> &out);     // embedding gather
void register_kernels_attention(std::vector<KernelFactory> &out);  // attention
void register_kernels_movement(std::vector<KernelFactory> &out);  // move
void register_kernels_fused(std::vector<KernelFactory> &out);  // fused (ops/fused.h)

}  // namespace tapestry::cpu
