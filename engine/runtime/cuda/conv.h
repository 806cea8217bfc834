// conv2d through cuDNN (issue 18): one planned cuDNN forward convolution of a
// strided NCHW view with packed KCRS filters, with the bias and a ReLU fused
// where cuDNN offers it, and the conv2d kernel (a whole op or one shard of it:
// a sub-range of images, filters or output rows, its input halo included).
// Used by conv.cpp's conv2d factory and by fused.cpp (conv2d + relu).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/dtype.h"
#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

enum class ConvActivation { none, relu };

// One convolution run: y[n, k, p, q] = act(Σ_{c,r,s} x[n, c, h, w]·w[k, c, r, s] + bias[k])
// over `groups` groups (c and k split evenly; x has c = groups·C/groups channels).
// Padding is the run's own (a shard's local padding may be asymmetric).
struct ConvDesc {
    DType dtype = DType::f32;                 // x, w, bias and y: f32, bf16 or f16 (f32 accumulation)
    std::int64_t n = 0, c = 0, h = 0, w = 0;  // x view; h or w may be 0 (reads only padding)
    std::array<std::int64_t, 4> x_strides{};  // elements; the last must be 1 where staged (below)
    std::int64_t k = 0, r = 1, s = 1;         // filters, packed [k, c/groups, r, s]
    std::int64_t groups = 1;
    std::int64_t p = 0, q = 0;  // y view [n, k, p, q]
    std::array<std::int64_t, 4> y_strides{};
    std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    std::int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
    bool bias = false;
    std::int64_t bias_stride = 1;
    ConvActivation activation = ConvActivation::none;
    bool tf32 = false;  // f32 may use TF32 tensor cores (opt-in; else FMA math)
    // Use cudnnConvolutionBiasActivationForward for bias + ReLU (f32, f16) when
    // true; false forces separate bias/activation calls (tests compare the two).
    bool fuse_bias_activation = true;
};

class ConvPlan {
public:
    // Builds the cuDNN descriptors and picks the algorithm once with
    // cudnnGetConvolutionForwardAlgorithm_v7 (heuristics: needs the handle, not
    // device memory). Asymmetric padding, which cuDNN's convolution descriptor
    // cannot express, stages x zero-padded in the workspace. Errors name why.
    static Expected<ConvPlan, std::string> make(const ConvDesc &desc, Context &context);

    // Enqueues on `stream` (sets the shared cuDNN handle's stream under
    // context.mutex). bias null unless desc.bias; workspace of workspace_bytes().
    Status enqueue(const void *x, const void *w, const void *bias, void *y, void *workspace, cudaStream_t stream) const;
    std::size_t workspace_bytes() const;
    // "cuDNN conv2d bf16 [8x64x56x56 → 8x128x56x56], IMPLICIT_PRECOMP_GEMM, bias + ReLU fused, workspace 2 MiB".
    std::string note() const;
    const ConvDesc &desc() const;

private:
    struct State;
    explicit ConvPlan(std::shared_ptr<const State> state) : state_(std::move(state)) {}
    std::shared_ptr<const State> state_;
};

// The conv2d kernel of a KernelSpec (whole op or shard; inputs x, w[, bias];
// output y), its result passed through `activation` (fused.cpp: conv2d + relu).
Expected<std::unique_ptr<Kernel>, std::string> make_conv2d_kernel(const KernelSpec &spec, Context &context,
                                                                  ConvActivation activation);

}  // namespace tapestry::cuda
