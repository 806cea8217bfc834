// One CUDA device's shared kernel state (runtime/cuda/context.h).
#include "runtime/cuda/context.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nvrtc.h>

#include "runtime/cuda/gemm.h"
#include "runtime/cuda/nccl.h"
#include "runtime/cuda/nvrtc.h"

namespace tapestry::cuda {

std::string cuda_error(const char *what, int code) {
    const auto e = static_cast<cudaError_t>(code);
    return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

namespace {

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

std::map<std::string, std::string> cuda_library_versions() {
    std::map<std::string, std::string> out;
    int v = 0;
    out["cudart"] = cudaRuntimeGetVersion(&v) == cudaSuccess ? cuda_version_text(v) : "unknown";
    if (cudaError_t e = cudaDriverGetVersion(&v); e == cudaSuccess)
        out["driver"] = v == 0 ? std::string("none (no CUDA driver installed)") : cuda_version_text(v);
    else
        out["driver"] = cuda_error("cudaDriverGetVersion", e);
    const size_t lt = cublasLtGetVersion();
    out["cublasLt"] = std::to_string(lt / 10000) + "." + std::to_string(lt / 100 % 100) + "." + std::to_string(lt % 100);
    const size_t dnn = cudnnGetVersion();
    out["cudnn"] = std::to_string(dnn / 10000) + "." + std::to_string(dnn / 100 % 100) + "." + std::to_string(dnn % 100);
    int major = 0, minor = 0;
    out["nvrtc"] = nvrtcVersion(&major, &minor) == NVRTC_SUCCESS ? std::to_string(major) + "." + std::to_string(minor) : "unknown";
    if (nccl_built()) out["nccl"] = nccl_version();
    return out;
}

Expected<std::unique_ptr<Context>, std::string> Context::create(int ordinal) {
    std::unique_ptr<Context> c(new Context());
    c->ordinal_ = ordinal;
    const std::string gpu = "GPU " + std::to_string(ordinal);
    if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return unexpected(cuda_error((gpu + ": cudaSetDevice").c_str(), e));
    cudaDeviceProp prop{};
    if (cudaError_t e = cudaGetDeviceProperties(&prop, ordinal); e != cudaSuccess)
        return unexpected(cuda_error((gpu + ": cudaGetDeviceProperties").c_str(), e));
    c->cc_major_ = prop.major;
    c->cc_minor_ = prop.minor;
    c->name_ = prop.name;
    if (cublasStatus_t s = cublasLtCreate(&c->lt_); s != CUBLAS_STATUS_SUCCESS)
        return unexpected(gpu + ": cublasLtCreate failed: " + cublasLtGetStatusName(s));
    if (cudnnStatus_t s = cudnnCreate(&c->dnn_); s != CUDNN_STATUS_SUCCESS)
        return unexpected(gpu + ": cudnnCreate failed: " + cudnnGetErrorString(s));
    return c;
}

Context::~Context() {
    // Kernels made with the caches are gone before their context (the backend's order).
    gemm_.reset();
    nvrtc_.reset();
    if (cudaSetDevice(ordinal_) == cudaSuccess) {
        if (dnn_) cudnnDestroy(dnn_);
        if (lt_) cublasLtDestroy(lt_);
    }
}

GemmCache &Context::gemm_cache() {
    if (!gemm_) gemm_ = make_gemm_cache();
    return *gemm_;
}

NvrtcCache &Context::nvrtc_cache() {
    if (!nvrtc_) nvrtc_ = make_nvrtc_cache();
    return *nvrtc_;
}

}  // namespace tapestry::cuda
