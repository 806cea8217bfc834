// Measuring the host CPU for its cost-model target (docs/targets.md, "The host
// target"): a short oneDNN GEMM per dtype for the compute peak, a multi-threaded
// copy for the memory bandwidth, the memory the machine has, and the time of a
// tiny oneDNN primitive for the launch overhead. Every figure is a measurement
// taken here; nothing is assumed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/expected.h"

namespace tapestry::cpu {

struct HostMeasurement {
    double gemm_f32_flops = 0;   // FLOP/s of the best of a few 1024³ f32 matmuls
    double gemm_bf16_flops = 0;  // the same in bf16; 0 where the CPU has no native bf16
    double memory_bandwidth = 0; // bytes/s (read + write) of a large parallel copy
    double memory_bytes = 0;     // physical memory
    double launch_overhead = 0;  // seconds: median execute time of a one-element oneDNN primitive
    int threads = 1;
    std::string isa;             // oneDNN's effective ISA
};

// Progress: (fraction done 0..1, what is running). Returning false cancels.
using ProbeProgress = std::function<bool(double, const std::string &)>;

// Takes about a second on 2 cores. Fails with "cancelled" or oneDNN's error.
Expected<HostMeasurement, std::string> measure_host(int threads, const ProbeProgress &progress = {});

}  // namespace tapestry::cpu
