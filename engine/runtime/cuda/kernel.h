// The CUDA kernel interface (issue 18; mirrors runtime/cpu/kernel.h): one factory
// per op kind turns an operation — or one shard of it, an index sub-range — into a
// prepared kernel that reads strided views of its input selections and writes
// views of its output selections in device memory, enqueued on a CUDA stream.
// Plan-agnostic: the plan executor's cuda backend (launch/cuda_backend.h) makes the
// views from a plan's buffers; nothing here knows of plans, devices or arenas.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/expected.h"
#include "graph/dtype.h"
#include "graph/signature.h"
#include "ops/op_def.h"

namespace tapestry::cuda {

class Context;

// A strided box of device memory. Strides are in elements; shape[d] may be 0
// (nothing to do). Rank 0: one element.
struct View {
    std::byte *data = nullptr;  // device pointer
    DType dtype = DType::f32;
    ZPoint shape;
    std::vector<std::int64_t> strides;

    std::int64_t elements() const { return shape.product(); }
    bool dense() const;  // C-contiguous
};

struct KernelSpec {
    const OpDef *def = nullptr;
    Params params;                    // defaults filled in
    Derivation derivation;            // whole op, relative (zero-origin operands)
    std::vector<PortTypes> operands;  // whole-op input types, in port order
    ZRange index_range;               // the points this kernel computes (a shard, or the whole space)
    // Shapes and element strides of the views the kernel will get, inputs then
    // outputs, flattened in port order (the selections of index_range).
    std::vector<ZPoint> input_shapes, output_shapes;
    std::vector<std::vector<std::int64_t>> input_strides, output_strides;
    // f32 matrix products may use TF32 tensor cores (opt-in, like bf16 on the CPU).
    bool tf32 = false;
};

using Status = Expected<std::monostate, std::string>;

class Kernel {
public:
    virtual ~Kernel() = default;
    // Enqueues the kernel on `stream`; returns once enqueued (errors: a launch the
    // runtime refused, named). inputs/outputs as KernelSpec's shapes and strides.
    // `workspace` holds workspace_bytes() bytes of device memory (null when 0).
    virtual Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *workspace,
                           cudaStream_t stream) = 0;
    // Device scratch the kernel needs while it runs (cuBLASLt, cuDNN workspaces).
    virtual std::size_t workspace_bytes() const { return 0; }
    // One sentence each on how it runs ("cuBLASLt bf16, epilogue GELU_BIAS").
    virtual std::vector<std::string> notes() const { return {}; }
};

struct KernelFactory {
    std::string kind;
    // Fails naming why (an unsupported dtype, layout or parameter): never a stub.
    std::function<Expected<std::unique_ptr<Kernel>, std::string>(const KernelSpec &, Context &)> make;
};

// Every kernel factory, by op kind; null when the kind has no CUDA kernel.
const KernelFactory *find_kernel(const std::string &kind);
// The kinds that have one, sorted.
std::vector<std::string> kernel_kinds();

// Factories of each family (registry.cpp joins them).
std::vector<KernelFactory> elementwise_factories();  // kernels_elementwise.cpp
std::vector<KernelFactory> row_factories();          // kernels_rows.cpp: softmax, norms, reductions, pooling, attention
std::vector<KernelFactory> data_factories();         // kernels_data.cpp: slice, reshape, transpose, concat, gather, embedding, move
std::vector<KernelFactory> gemm_factories();         // gemm.cpp: matmul, linear, partial_matmul
std::vector<KernelFactory> conv_factories();         // conv.cpp: conv2d
std::vector<KernelFactory> fused_factories();        // fused.cpp: fused (cuBLASLt epilogues + NVRTC chains)

}  // namespace tapestry::cuda
