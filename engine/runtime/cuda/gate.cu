// The gate of gate.h: a kernel polling a flag in pinned host memory.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>

#include "runtime/cuda/context.h"
#include "runtime/cuda/gate.h"

namespace tapestry::cuda {

struct Gate::Flags {
    unsigned open;
    unsigned timed_out;
};

namespace {

__device__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void gate_kernel(const volatile unsigned *open, volatile unsigned *timed_out, unsigned long long limit_ns) {
    const unsigned long long start = global_ns();
    while (*open == 0u) {
        if (global_ns() - start > limit_ns) {
            *timed_out = 1u;
            __threadfence_system();
            return;
        }
        __nanosleep(256);
    }
}

}  // namespace

Expected<std::unique_ptr<Gate>, std::string> Gate::make() {
    void *p = nullptr;
    if (cudaError_t e = cudaHostAlloc(&p, sizeof(Flags), cudaHostAllocMapped | cudaHostAllocPortable); e != cudaSuccess)
        return unexpected(cuda_error("allocating the gate's pinned flags", e));
    auto *flags = static_cast<Flags *>(p);
    flags->open = 1u;
    flags->timed_out = 0u;
    return std::unique_ptr<Gate>(new Gate(flags));
}

Gate::~Gate() {
    if (flags_) cudaFreeHost(flags_);
}

void Gate::close() {
    std::atomic_ref<unsigned>(flags_->open).store(0u, std::memory_order_seq_cst);
    std::atomic_ref<unsigned>(flags_->timed_out).store(0u, std::memory_order_seq_cst);
}

Status Gate::hold(cudaStream_t stream, std::chrono::milliseconds limit) {
    void *device = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&device, flags_, 0); e != cudaSuccess)
        return unexpected(cuda_error("mapping the gate's flags", e));
    auto *flags = static_cast<Flags *>(device);
    gate_kernel<<<1, 1, 0, stream>>>(&flags->open, &flags->timed_out,
                                     static_cast<unsigned long long>(limit.count()) * 1000000ull);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return unexpected(cuda_error("enqueueing the gate", e));
    return std::monostate{};
}

void Gate::open() { std::atomic_ref<unsigned>(flags_->open).store(1u, std::memory_order_seq_cst); }

bool Gate::timed_out() const {
    return std::atomic_ref<unsigned>(flags_->timed_out).load(std::memory_order_seq_cst) != 0u;
}

Status gate_self_check() {
    auto made = Gate::make();
    if (!made) return unexpected(made.error());
    Gate &gate = **made;
    cudaStream_t stream = nullptr;
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
        return unexpected(cuda_error("gate check: creating a stream", e));
    auto check = [&]() -> Status {
        gate.close();
        if (auto h = gate.hold(stream, std::chrono::milliseconds(50)); !h) return h;
        if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
            return unexpected(cuda_error("gate check: waiting for a shut gate", e));
        if (!gate.timed_out()) return unexpected(std::string("gate check: a shut gate did not say it gave up after 50 ms"));
        gate.close();
        if (auto h = gate.hold(stream, std::chrono::milliseconds(5000)); !h) return h;
        const auto t0 = std::chrono::steady_clock::now();
        gate.open();
        if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
            return unexpected(cuda_error("gate check: waiting for an opened gate", e));
        const double held = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (gate.timed_out()) return unexpected(std::string("gate check: an opened gate still gave up"));
        if (held > 1.0)
            return unexpected("gate check: an opened gate held its stream " + std::to_string(held) + " s more");
        return std::monostate{};
    };
    Status out = check();
    gate.open();
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    return out;
}

}  // namespace tapestry::cuda
