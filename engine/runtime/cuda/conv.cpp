// conv2d through cuDNN's convolution API (runtime/cuda/conv.h). x and y are read
// and written in place through strided 4-D descriptors; the filters must be
// packed (a sub-range of filters of a packed tensor is). cuDNN's convolution
// descriptor takes one padding per axis, applied on both sides: a run whose
// padding differs before and after (a shard at the image's edge, or an op with
// asymmetric padding) copies x into a zero-padded staging buffer in the
// workspace and convolves that without padding.
#include "runtime/cuda/conv.h"

#include <cudnn.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include "index/index_projection.h"
#include "runtime/cuda/context.h"

namespace tapestry::cuda {

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;
// The most workspace an algorithm may ask for; the heuristic's faster choices
// above it are passed over.
constexpr std::size_t kMaxConvWorkspace = 256 * kMiB;

std::string dnn_error(const std::string &what, cudnnStatus_t s) {
    return what + ": " + cudnnGetErrorString(s);
}

std::optional<cudnnDataType_t> dnn_type(DType t) {
    switch (t) {
        case DType::f32: return CUDNN_DATA_FLOAT;
        case DType::f16: return CUDNN_DATA_HALF;
        case DType::bf16: return CUDNN_DATA_BFLOAT16;
        default: return std::nullopt;
    }
}

const char *algo_name(cudnnConvolutionFwdAlgo_t a) {
    switch (a) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
        default: return "?";
    }
}

std::string size_text(std::size_t bytes) {
    if (bytes == 0) return "0";
    if (bytes >= kMiB) return std::to_string((bytes + kMiB - 1) / kMiB) + " MiB";
    return std::to_string((bytes + 1023) / 1024) + " KiB";
}

bool fits_int(std::int64_t v) {
    return v >= 0 && v <= std::numeric_limits<int>::max();
}

std::string dims_text(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c) + "x" + std::to_string(d);
}

}  // namespace

struct ConvPlan::State {
    ConvDesc desc;
    Context *context = nullptr;
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnActivationDescriptor_t act = nullptr;
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    bool fused = false;  // cudnnConvolutionBiasActivationForward
    bool empty = false;
    // Staging: x copied into [n, c, h + top + bottom, w + left + right] zeros.
    bool staged = false;
    std::int64_t staged_h = 0, staged_w = 0;
    std::size_t staging_bytes = 0, conv_workspace = 0;
    std::string note;

    State() = default;
    State(const State &) = delete;
    State &operator=(const State &) = delete;
    ~State() {
        if (act) cudnnDestroyActivationDescriptor(act);
        if (conv) cudnnDestroyConvolutionDescriptor(conv);
        if (w) cudnnDestroyFilterDescriptor(w);
        if (bias) cudnnDestroyTensorDescriptor(bias);
        if (y) cudnnDestroyTensorDescriptor(y);
        if (x) cudnnDestroyTensorDescriptor(x);
    }
    Status stage(const void *x_view, void *staging, cudaStream_t stream) const;
};

namespace {

std::optional<std::string> check_desc(const ConvDesc &d) {
    if (!dnn_type(d.dtype))
        return "no cuDNN convolution for dtype " + std::string(dtype_name(d.dtype)) + " (f32, bf16, f16)";
    if (d.groups < 1 || d.c % d.groups != 0 || d.k % d.groups != 0)
        return "groups " + std::to_string(d.groups) + " does not divide c = " + std::to_string(d.c) +
               " and k = " + std::to_string(d.k);
    for (std::int64_t v : {d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q, d.pad_top, d.pad_left, d.pad_bottom,
                           d.pad_right, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, d.bias_stride})
        if (!fits_int(v)) return "an extent, padding or step outside cuDNN's int range";
    for (const auto *strides : {&d.x_strides, &d.y_strides})
        for (std::int64_t v : *strides)
            if (!fits_int(v)) return "a stride outside cuDNN's int range (" + std::to_string(v) + ")";
    if (d.stride_h < 1 || d.stride_w < 1 || d.dilation_h < 1 || d.dilation_w < 1) return "a stride or dilation below 1";
    if (d.n == 0 || d.k == 0 || d.p == 0 || d.q == 0) return std::nullopt;  // empty: nothing to check
    // The output extent the padded input gives must be the y view's.
    const std::int64_t eh = d.dilation_h * (d.r - 1) + 1, ew = d.dilation_w * (d.s - 1) + 1;
    const std::int64_t hp = d.h + d.pad_top + d.pad_bottom, wp = d.w + d.pad_left + d.pad_right;
    if (hp < eh || wp < ew || (hp - eh) / d.stride_h + 1 != d.p || (wp - ew) / d.stride_w + 1 != d.q)
        return "the padded input " + std::to_string(hp) + "x" + std::to_string(wp) + " does not give the " +
               std::to_string(d.p) + "x" + std::to_string(d.q) + " output";
    return std::nullopt;
}

// The algorithm: the heuristic's first that cuDNN supports for these descriptors
// within the workspace limit (its workspace checked with the size query).
Expected<std::pair<cudnnConvolutionFwdAlgo_t, std::size_t>, std::string> choose_algorithm(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
    cudnnTensorDescriptor_t y) {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    int returned = 0;
    cudnnStatus_t s = cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, static_cast<int>(perf.size()),
                                                             &returned, perf.data());
    if (s != CUDNN_STATUS_SUCCESS) return unexpected(dnn_error("cudnnGetConvolutionForwardAlgorithm_v7", s));
    std::string passed;
    for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionFwdAlgoPerf_t &p = perf[static_cast<size_t>(i)];
        if (p.status != CUDNN_STATUS_SUCCESS) continue;
        std::size_t bytes = 0;
        if (cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y, p.algo, &bytes) != CUDNN_STATUS_SUCCESS)
            continue;
        if (bytes > kMaxConvWorkspace) {
            passed += std::string(passed.empty() ? "" : ", ") + algo_name(p.algo) + " (" + size_text(bytes) + ")";
            continue;
        }
        return std::pair{p.algo, bytes};
    }
    return unexpected("cuDNN offers no forward algorithm for it" +
                      (passed.empty() ? std::string()
                                      : " within " + size_text(kMaxConvWorkspace) + " of workspace (" + passed + ")"));
}

}  // namespace

Status ConvPlan::State::stage(const void *x_view, void *staging, cudaStream_t stream) const {
    const ConvDesc &d = desc;
    if (cudaError_t e = cudaMemsetAsync(staging, 0, staging_bytes, stream); e != cudaSuccess)
        return unexpected(cuda_error("conv2d staging: cudaMemsetAsync", e));
    if (d.h == 0 || d.w == 0 || d.n == 0 || d.c == 0) return std::monostate{};  // a shard reading only padding
    const auto bytes = static_cast<std::size_t>(dtype_bytes(d.dtype));
    auto *dst = static_cast<std::byte *>(staging) + static_cast<std::size_t>(d.pad_top * staged_w + d.pad_left) * bytes;
    const auto *src = static_cast<const std::byte *>(x_view);
    // Planes (n, c) of the view step evenly by x_strides[1] along c; a 3-D copy
    // moves all of an image's (or, when images follow evenly, all) planes at once.
    const std::int64_t xs_n = d.x_strides[0], xs_c = d.x_strides[1], xs_h = d.x_strides[2];
    const bool planes_even = xs_h > 0 && xs_c % xs_h == 0 && xs_c / xs_h >= d.h;
    const bool images_follow = d.n == 1 || xs_n == d.c * xs_c;
    auto copy = [&](const std::byte *from, std::byte *to, std::int64_t planes, std::int64_t plane_rows) -> Status {
        cudaMemcpy3DParms m{};
        m.srcPtr = {const_cast<std::byte *>(from), static_cast<std::size_t>(xs_h) * bytes,
                    static_cast<std::size_t>(d.w) * bytes, static_cast<std::size_t>(plane_rows)};
        m.dstPtr = {to, static_cast<std::size_t>(staged_w) * bytes, static_cast<std::size_t>(staged_w) * bytes,
                    static_cast<std::size_t>(staged_h)};
        m.extent = {static_cast<std::size_t>(d.w) * bytes, static_cast<std::size_t>(d.h),
                    static_cast<std::size_t>(planes)};
        m.kind = cudaMemcpyDeviceToDevice;
        if (cudaError_t e = cudaMemcpy3DAsync(&m, stream); e != cudaSuccess)
            return unexpected(cuda_error("conv2d staging: cudaMemcpy3DAsync", e));
        return std::monostate{};
    };
    const std::int64_t plane = staged_h * staged_w;
    if (planes_even) {
        const std::int64_t plane_rows = xs_c / xs_h;
        if (images_follow) return copy(src, dst, d.n * d.c, plane_rows);
        for (std::int64_t i = 0; i < d.n; ++i)
            if (Status s = copy(src + i * xs_n * static_cast<std::int64_t>(bytes),
                                dst + i * d.c * plane * static_cast<std::int64_t>(bytes), d.c, plane_rows);
                !s)
                return s;
        return std::monostate{};
    }
    for (std::int64_t i = 0; i < d.n; ++i)
        for (std::int64_t ch = 0; ch < d.c; ++ch)
            if (Status s = copy(src + (i * xs_n + ch * xs_c) * static_cast<std::int64_t>(bytes),
                                dst + (i * d.c + ch) * plane * static_cast<std::int64_t>(bytes), 1, d.h);
                !s)
                return s;
    return std::monostate{};
}

const ConvDesc &ConvPlan::desc() const {
    return state_->desc;
}
std::size_t ConvPlan::workspace_bytes() const {
    return state_->staging_bytes + state_->conv_workspace;
}
std::string ConvPlan::note() const {
    return state_->note;
}

Expected<ConvPlan, std::string> ConvPlan::make(const ConvDesc &desc, Context &context) {
    const std::string what = "cuDNN conv2d";
    if (auto e = check_desc(desc)) return unexpected(what + ": " + *e);
    auto st = std::make_shared<State>();
    st->desc = desc;
    st->context = &context;
    const ConvDesc &d = st->desc;
    const std::string shape = dims_text(d.n, d.c, d.h, d.w) + " → " + dims_text(d.n, d.k, d.p, d.q);
    if (d.n == 0 || d.k == 0 || d.p == 0 || d.q == 0) {
        st->empty = true;
        st->note = what + " " + shape + ": empty, nothing to compute";
        return ConvPlan(std::move(st));
    }
    if (d.c == 0) return unexpected(what + ": no input channels");
    cudnnHandle_t handle = context.cudnn();
    if (!handle) return unexpected(what + ": the context has no cuDNN handle");
    const cudnnDataType_t t = *dnn_type(d.dtype);

    // Staging when the padding is asymmetric or the view is empty (only padding).
    st->staged = d.pad_top != d.pad_bottom || d.pad_left != d.pad_right || d.h == 0 || d.w == 0;
    std::int64_t xh = d.h, xw = d.w, pad_h = d.pad_top, pad_w = d.pad_left;
    std::array<std::int64_t, 4> xst = d.x_strides;
    if (st->staged) {
        if (d.h > 0 && d.w > 1 && d.x_strides[3] != 1)
            return unexpected(what + ": staging needs x's rows contiguous (column stride " +
                              std::to_string(d.x_strides[3]) + ")");
        st->staged_h = d.h + d.pad_top + d.pad_bottom;
        st->staged_w = d.w + d.pad_left + d.pad_right;
        xh = st->staged_h;
        xw = st->staged_w;
        pad_h = pad_w = 0;
        xst = {d.c * xh * xw, xh * xw, xw, 1};
        if (!fits_int(xst[0]) || !fits_int(d.n * xst[0]))
            return unexpected(what + ": the staged input is too large for cuDNN's int strides");
        // Rounded to 256 bytes so the convolution's workspace that follows is aligned.
        st->staging_bytes = (static_cast<std::size_t>(d.n * xst[0] * dtype_bytes(d.dtype)) + 255) / 256 * 256;
    }

    auto ok = [](cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; };
    auto i = [](std::int64_t v) { return static_cast<int>(v); };
    cudnnStatus_t s = cudnnCreateTensorDescriptor(&st->x);
    if (ok(s))
        s = cudnnSetTensor4dDescriptorEx(st->x, t, i(d.n), i(d.c), i(xh), i(xw), i(xst[0]), i(xst[1]), i(xst[2]),
                                         i(xst[3]));
    if (ok(s)) s = cudnnCreateTensorDescriptor(&st->y);
    if (ok(s))
        s = cudnnSetTensor4dDescriptorEx(st->y, t, i(d.n), i(d.k), i(d.p), i(d.q), i(d.y_strides[0]), i(d.y_strides[1]),
                                         i(d.y_strides[2]), i(d.y_strides[3]));
    if (ok(s)) s = cudnnCreateFilterDescriptor(&st->w);
    if (ok(s)) s = cudnnSetFilter4dDescriptor(st->w, t, CUDNN_TENSOR_NCHW, i(d.k), i(d.c / d.groups), i(d.r), i(d.s));
    if (ok(s)) s = cudnnCreateConvolutionDescriptor(&st->conv);
    // f32 accumulation for every dtype (bf16/f16: cuDNN's pseudo-half configs).
    if (ok(s))
        s = cudnnSetConvolution2dDescriptor(st->conv, i(pad_h), i(pad_w), i(d.stride_h), i(d.stride_w), i(d.dilation_h),
                                            i(d.dilation_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    if (ok(s) && d.groups > 1) s = cudnnSetConvolutionGroupCount(st->conv, i(d.groups));
    // cuDNN's default math lets f32 run in TF32; that is opt-in here.
    const cudnnMathType_t math = d.dtype == DType::f32
                                     ? (d.tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH)
                                     : CUDNN_TENSOR_OP_MATH;
    if (ok(s)) s = cudnnSetConvolutionMathType(st->conv, math);
    if (ok(s) && d.bias) {
        s = cudnnCreateTensorDescriptor(&st->bias);
        const int bs = i(d.bias_stride);
        if (ok(s)) s = cudnnSetTensor4dDescriptorEx(st->bias, t, 1, i(d.k), 1, 1, i(d.k) * bs, bs, bs, bs);
    }
    if (ok(s) && d.activation == ConvActivation::relu) {
        s = cudnnCreateActivationDescriptor(&st->act);
        if (ok(s)) s = cudnnSetActivationDescriptor(st->act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0);
    }
    if (!ok(s)) return unexpected(dnn_error(what + " " + shape + ": setting up descriptors", s));
    int on = 0, oc = 0, oh = 0, ow = 0;
    s = cudnnGetConvolution2dForwardOutputDim(st->conv, st->x, st->w, &on, &oc, &oh, &ow);
    if (!ok(s)) return unexpected(dnn_error(what + " " + shape + ": cudnnGetConvolution2dForwardOutputDim", s));
    if (on != d.n || oc != d.k || oh != d.p || ow != d.q)
        return unexpected(what + " " + shape + ": cuDNN computes a " + dims_text(on, oc, oh, ow) + " output");

    // Bias + ReLU in one call where cuDNN documents it (f32 and pseudo-half f16
    // configurations, any algorithm with ReLU); bf16 and bias without ReLU use
    // separate bias and activation calls after the convolution.
    st->fused = d.fuse_bias_activation && d.bias && d.activation == ConvActivation::relu && d.dtype != DType::bf16;
    auto chosen = choose_algorithm(handle, st->x, st->w, st->conv, st->y);
    if (!chosen) return unexpected(what + " " + shape + ": " + chosen.error());
    st->algo = chosen->first;
    st->conv_workspace = chosen->second;
    std::string epilogue;
    if (d.bias && d.activation == ConvActivation::relu)
        epilogue = st->fused ? ", bias + ReLU fused" : ", bias, ReLU";
    else if (d.bias)
        epilogue = ", bias";
    else if (d.activation == ConvActivation::relu)
        epilogue = ", ReLU";
    st->note = what + " " + std::string(dtype_name(d.dtype)) + (d.dtype == DType::f32 && d.tf32 ? " (TF32)" : "") +
               " [" + shape + "]" + (d.groups > 1 ? ", " + std::to_string(d.groups) + " groups" : "") + ", " +
               algo_name(st->algo) + epilogue + (st->staged ? ", x staged zero-padded (asymmetric padding)" : "") +
               ", workspace " + size_text(st->staging_bytes + st->conv_workspace);
    return ConvPlan(std::move(st));
}

Status ConvPlan::enqueue(const void *x, const void *w, const void *bias, void *y, void *workspace,
                         cudaStream_t stream) const {
    const State &st = *state_;
    const ConvDesc &d = st.desc;
    if (st.empty) return std::monostate{};
    if (d.bias && !bias) return unexpected(std::string("cuDNN conv2d: the plan has a bias but none was given"));
    if (st.staging_bytes + st.conv_workspace > 0 && !workspace)
        return unexpected("cuDNN conv2d: needs a workspace of " + std::to_string(workspace_bytes()) +
                          " bytes, got none");
    const void *source = x;
    if (st.staged) {
        if (Status s = st.stage(x, workspace, stream); !s) return s;
        source = workspace;
    }
    void *conv_ws = st.conv_workspace > 0 ? static_cast<std::byte *>(workspace) + st.staging_bytes : nullptr;
    const float one = 1.0f, zero = 0.0f;
    std::lock_guard<std::mutex> lock(st.context->mutex);
    cudnnHandle_t handle = st.context->cudnn();
    cudnnStatus_t s = cudnnSetStream(handle, stream);
    if (s != CUDNN_STATUS_SUCCESS) return unexpected(dnn_error("cuDNN conv2d: cudnnSetStream", s));
    if (st.fused) {
        // z is y with weight 0: y = relu(conv(x) + bias).
        s = cudnnConvolutionBiasActivationForward(handle, &one, st.x, source, st.w, w, st.conv, st.algo, conv_ws,
                                                  st.conv_workspace, &zero, st.y, y, st.bias, bias, st.act, st.y, y);
        if (s != CUDNN_STATUS_SUCCESS)
            return unexpected(dnn_error("cudnnConvolutionBiasActivationForward (" + st.note + ")", s));
        return std::monostate{};
    }
    s = cudnnConvolutionForward(handle, &one, st.x, source, st.w, w, st.conv, st.algo, conv_ws, st.conv_workspace,
                                &zero, st.y, y);
    if (s != CUDNN_STATUS_SUCCESS) return unexpected(dnn_error("cudnnConvolutionForward (" + st.note + ")", s));
    if (d.bias) {
        s = cudnnAddTensor(handle, &one, st.bias, bias, &one, st.y, y);
        if (s != CUDNN_STATUS_SUCCESS) return unexpected(dnn_error("cudnnAddTensor (conv2d bias)", s));
    }
    if (d.activation == ConvActivation::relu) {
        s = cudnnActivationForward(handle, st.act, &one, st.y, y, &zero, st.y, y);
        if (s != CUDNN_STATUS_SUCCESS) return unexpected(dnn_error("cudnnActivationForward (conv2d ReLU)", s));
    }
    return std::monostate{};
}

// ---------------------------------------------------------------------------
// The conv2d kernel over a KernelSpec's views.

namespace {

// The padding of one spatial axis local to a shard: how far the unclipped image of
// the index range reaches before and after the clipped selection (x's view).
struct LocalPadding {
    std::int64_t before = 0, after = 0, extent = 0;
};

LocalPadding local_padding(const OperandProjection &px, const ZRange &index_range, const ZPoint &x_shape, int dim) {
    const ZRange image = px.projection.image(index_range);
    const ZRange clipped = image.intersect(ZRange::of_shape(x_shape));
    LocalPadding p;
    p.extent = clipped.extent(dim);
    if (p.extent <= 0) return {0, image.extent(dim), 0};
    p.before = clipped.start()[dim] - image.start()[dim];
    p.after = image.end()[dim] - clipped.end()[dim];
    return p;
}

class Conv2dKernel final : public Kernel {
public:
    Conv2dKernel(ConvPlan plan, int runs, std::array<std::int64_t, 4> steps, bool bias, int bytes)
        : plan_(std::move(plan)), runs_(runs), steps_(steps), bias_(bias), bytes_(bytes) {}

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *workspace,
                   cudaStream_t stream) override {
        if (inputs.size() != (bias_ ? 3u : 2u) || outputs.size() != 1)
            return unexpected(std::string("conv2d kernel: expected ") + (bias_ ? "3" : "2") + " inputs and 1 output");
        // One run per group when a shard splits the filters of several groups.
        for (std::int64_t g = 0; g < runs_; ++g) {
            const std::int64_t b = bytes_;
            const std::byte *bias = bias_ ? inputs[2].data + g * steps_[3] * b : nullptr;
            if (Status s = plan_.enqueue(inputs[0].data + g * steps_[0] * b, inputs[1].data + g * steps_[1] * b, bias,
                                         outputs[0].data + g * steps_[2] * b, workspace, stream);
                !s)
                return s;
        }
        return std::monostate{};
    }
    std::size_t workspace_bytes() const override { return plan_.workspace_bytes(); }
    std::vector<std::string> notes() const override {
        return {plan_.note() + (runs_ > 1 ? ", one run per group (" + std::to_string(runs_) + ")" : "")};
    }

private:
    ConvPlan plan_;
    std::int64_t runs_ = 1;
    std::array<std::int64_t, 4> steps_{};  // per run: x, w, y, bias element steps
    bool bias_ = false;
    int bytes_ = 4;
};

bool has_port(const KernelSpec &spec, const std::string &port) {
    return std::any_of(spec.operands.begin(), spec.operands.end(),
                       [&](const PortTypes &p) { return p.port == port && !p.operands.empty(); });
}

}  // namespace

Expected<std::unique_ptr<Kernel>, std::string> make_conv2d_kernel(const KernelSpec &spec, Context &context,
                                                                  ConvActivation activation) {
    const std::string what = "conv2d kernel";
    const bool bias = has_port(spec, "bias");
    const size_t inputs = bias ? 3 : 2;
    if (spec.operands.size() < 2 || spec.operands[0].operands.empty() || spec.operands[1].operands.empty() ||
        spec.input_shapes.size() != inputs || spec.input_strides.size() != inputs || spec.output_shapes.size() != 1 ||
        spec.output_strides.size() != 1)
        return unexpected(what + ": unexpected operands");
    const OperandProjection *px = spec.derivation.signature.input("x", 0);
    if (!px) return unexpected(what + ": the derivation has no x projection");
    const ZPoint &x_whole = spec.operands[0].operands[0].shape;
    const ZPoint &w_whole = spec.operands[1].operands[0].shape;
    const DType t = spec.operands[0].operands[0].dtype;
    const ZPoint &xv = spec.input_shapes[0], &wv = spec.input_shapes[1], &yv = spec.output_shapes[0];
    const auto &xst = spec.input_strides[0], &wst = spec.input_strides[1], &yst = spec.output_strides[0];
    if (xv.rank() != 4 || wv.rank() != 4 || yv.rank() != 4) return unexpected(what + ": views must be 4-D");

    const std::int64_t groups = spec.params.get_int("groups", 1);
    const std::int64_t cg = w_whole[1], kg = w_whole[0] / groups;
    const ZRange &range = spec.index_range;
    const bool grouped = groups > 1;
    const std::int64_t g_local = grouped ? range.extent(1) : 1;
    const std::int64_t k_local = grouped ? range.extent(2) : range.extent(1);
    // Several groups with all their filters: one grouped run; with some of their
    // filters: one run per group (the views' filters then have holes between groups).
    const bool one_run = !grouped || g_local == 1 || k_local == kg;
    const std::int64_t runs = one_run ? 1 : g_local;
    const std::int64_t run_groups = one_run ? g_local : 1;
    const std::vector<std::int64_t> stride = spec.params.get_ints("stride", {1, 1});
    const std::vector<std::int64_t> dilation = spec.params.get_ints("dilation", {1, 1});
    if (stride.size() != 2 || dilation.size() != 2) return unexpected(what + ": bad stride or dilation");
    if (yv.product() == 0 || range.empty()) {
        ConvDesc empty;
        empty.dtype = t;
        auto plan = ConvPlan::make(empty, context);
        if (!plan) return unexpected(what + ": " + plan.error());
        return std::unique_ptr<Kernel>(new Conv2dKernel(std::move(plan).value(), 1, {}, bias, dtype_bytes(t)));
    }
    const LocalPadding ph = local_padding(*px, range, x_whole, 2), pw = local_padding(*px, range, x_whole, 3);

    ConvDesc d;
    d.dtype = t;
    d.n = yv[0];
    d.c = run_groups * cg;
    d.h = ph.extent;
    d.w = pw.extent;
    d.x_strides = {xst[0], xst[1], xst[2], xst[3]};
    d.k = run_groups * k_local;
    d.r = wv[2];
    d.s = wv[3];
    d.groups = run_groups;
    d.p = yv[2];
    d.q = yv[3];
    d.y_strides = {yst[0], yst[1], yst[2], yst[3]};
    d.pad_top = ph.before;
    d.pad_bottom = ph.after;
    d.pad_left = pw.before;
    d.pad_right = pw.after;
    d.stride_h = stride[0];
    d.stride_w = stride[1];
    d.dilation_h = dilation[0];
    d.dilation_w = dilation[1];
    d.bias = bias;
    d.bias_stride = bias ? spec.input_strides[2][0] : 1;
    d.activation = activation;
    d.tf32 = spec.tf32;
    if ((xv[1] != (one_run ? d.c : g_local * cg) || w_whole[2] != d.r || w_whole[3] != d.s))
        return unexpected(what + ": the views do not match the shard (x has " + std::to_string(xv[1]) + " channels)");
    // cuDNN's filter descriptor is packed: [k, C/groups, R, S] dense per run.
    const std::int64_t taps = d.r * d.s;
    if (((d.k > 1 && wst[0] != cg * taps) || (cg > 1 && wst[1] != taps) || (d.r > 1 && wst[2] != d.s) ||
         (d.s > 1 && wst[3] != 1)))
        return unexpected(what + ": the filter view is not packed [K, C/groups, R, S] (strides " +
                          std::to_string(wst[0]) + ", " + std::to_string(wst[1]) + ", " + std::to_string(wst[2]) +
                          ", " + std::to_string(wst[3]) + "): cuDNN filters have no strides");
    auto plan = ConvPlan::make(d, context);
    if (!plan) return unexpected(what + ": " + plan.error());
    const std::array<std::int64_t, 4> steps{cg * xst[1], kg * wst[0], kg * yst[1],
                                            bias ? kg * spec.input_strides[2][0] : 0};
    return std::unique_ptr<Kernel>(
        new Conv2dKernel(std::move(plan).value(), static_cast<int>(runs), steps, bias, dtype_bytes(t)));
}

std::vector<KernelFactory> conv_factories() {
    return {{"conv2d", [](const KernelSpec &spec, Context &context) {
                 return make_conv2d_kernel(spec, context, ConvActivation::none);
             }}};
}

}  // namespace tapestry::cuda
