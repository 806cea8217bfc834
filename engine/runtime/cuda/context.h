// One CUDA device's shared state for kernels (issue 18): its ordinal and compute
// capability, the cuBLASLt and cuDNN handles, and the caches kernels fill at
// make time (cuBLASLt algorithms per shape, NVRTC-compiled modules). Made by the
// cuda backend per physical GPU; every kernel of that GPU is made and enqueued
// with it. make() is called from one thread; enqueue() from the launcher's
// stream workers, so what enqueue touches here is guarded by `mutex`.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/expected.h"

struct cublasLtContext;
struct cudnnContext;

namespace tapestry::cuda {

struct GemmCache;    // gemm.cpp: std::shared_ptr<GemmCache> make_gemm_cache() in gemm.h
struct NvrtcCache;   // nvrtc.cpp: std::shared_ptr<NvrtcCache> make_nvrtc_cache() in nvrtc.h

class Context {
public:
    // Selects `ordinal` (cudaSetDevice) and creates the handles; fails naming the
    // device and the library that refused.
    static Expected<std::unique_ptr<Context>, std::string> create(int ordinal);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    int ordinal() const { return ordinal_; }
    int cc_major() const { return cc_major_; }
    int cc_minor() const { return cc_minor_; }
    std::string name() const { return name_; }

    cublasLtContext *cublaslt() const { return lt_; }
    cudnnContext *cudnn() const { return dnn_; }
    // Made on first use (gemm.h make_gemm_cache, nvrtc.h make_nvrtc_cache).
    GemmCache &gemm_cache();
    NvrtcCache &nvrtc_cache();

    std::mutex mutex;

private:
    Context() = default;
    int ordinal_ = 0, cc_major_ = 0, cc_minor_ = 0;
    std::string name_;
    cublasLtContext *lt_ = nullptr;
    cudnnContext *dnn_ = nullptr;
    std::shared_ptr<GemmCache> gemm_;
    std::shared_ptr<NvrtcCache> nvrtc_;
};

// The CUDA libraries this process runs with, their versions as they report them:
// {"cudart": "13.0", "driver": "13.0" (or why none), "cublasLt": "13.0.0", "cudnn": "9.12.0", "nvrtc": "13.0"}.
std::map<std::string, std::string> cuda_library_versions();

// "<what>: <cudaGetErrorName> (<cudaGetErrorString>)" for a failed runtime call.
std::string cuda_error(const char *what, int code);

}  // namespace tapestry::cuda
