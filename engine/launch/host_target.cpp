// The host target as this machine measures it (see host_target.h).
#include "launch/host_target.h"

namespace tapestry::launch {

cost::HostFigures host_figures(const cpu::HostMeasurement &m) {
    cost::HostFigures f;
    f.f32_flops = m.gemm_f32_flops;
    f.bf16_flops = m.gemm_bf16_flops;
    f.memory_bandwidth = m.memory_bandwidth;
    f.memory_bytes = m.memory_bytes;
    f.launch_overhead = m.launch_overhead;
    f.cores = m.threads;
    f.note = "oneDNN " + m.isa + ", " + std::to_string(m.threads) +
             " threads: 1024³ GEMM, 256 MiB copy, one-element primitive";
    return f;
}

Expected<cost::Target, std::string> measure_host_target(int threads, const cpu::ProbeProgress &progress) {
    auto base = cost::builtin_target("host");
    if (!base) return unexpected(base.error());
    auto m = cpu::measure_host(threads, progress);
    if (!m) return unexpected(m.error());
    return cost::measured_target(std::move(base).value(), host_figures(*m));
}

}  // namespace tapestry::launch
