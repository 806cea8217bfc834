// The `cpu` backend of the plan executor (docs/launch.md): every plan device is
// a virtual device in this process with its own memory — one arena allocation of
// the plan's size, buffers at the plan's offsets, resident buffers beside it — so
// nothing is shared between devices and a transfer is a real copy. Kernel steps
// run the CPU executor's kernels (oneDNN; runtime/cpu/kernel.h) on exactly the
// step's regions; collectives run the algorithm the plan names (ring, tree)
// between the devices' buffers, message by message.
#pragma once

#include <cstdint>
#include <memory>

#include "launch/backend.h"

namespace tapestry::launch {

struct CpuBackendOptions {
    // Virtual devices it offers (a plan for more is refused before launch).
    int max_devices = 64;
    // Bytes each device may hold; 0: the memory available to the process (cgroup
    // limit or MemAvailable) divided among the plan's devices.
    std::int64_t device_memory = 0;
    // Threads a kernel step may use; 0: the cores divided among the plan's devices
    // (at least one).
    int kernel_threads = 0;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions &options = {});

}  // namespace tapestry::launch
