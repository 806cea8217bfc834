// A gate on CUDA streams (runtime/cuda): a one-thread kernel that holds a stream —
// and every stream told to wait for what follows it — until the host opens the
// gate, so that a whole plan is enqueued before the GPU starts on it. Its steps
// then run back to back, and their CUDA-event times are the GPU's own, with no
// host submission inside them (an idle GPU otherwise starts a step's timing when
// its start event arrives, and waits there for the host to finish enqueueing the
// kernel: 7–15 µs on an H200, most of a small kernel's time).
//
// The kernel gives up by itself after `limit` (a host that never opens the gate
// cannot hang the GPU) and the gate then says it timed out: the GPU started before
// the host had enqueued everything, so the times hold the host again.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <string>

#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

class Gate {
public:
    // The gate's flags in pinned host memory that every GPU reads.
    static Expected<std::unique_ptr<Gate>, std::string> make();
    ~Gate();
    Gate(const Gate &) = delete;
    Gate &operator=(const Gate &) = delete;

    // Shuts the gate and forgets an earlier time-out. Only while no hold() is running.
    void close();
    // Enqueues the waiting kernel on `stream` (of the current device).
    Status hold(cudaStream_t stream, std::chrono::milliseconds limit);
    // Lets every held stream go on.
    void open();
    // Whether a held kernel gave up before open() (after its streams are synchronised).
    bool timed_out() const;

private:
    struct Flags;
    explicit Gate(Flags *flags) : flags_(flags) {}
    Flags *flags_ = nullptr;
};

// Whether gates work on the current device: a shut gate gives up by itself after its
// limit and says so; an opened one lets its stream go at once. An error says which
// half failed (tapestry-gpu-check runs it before its cases; test_gpu_launch too).
Status gate_self_check();

}  // namespace tapestry::cuda
