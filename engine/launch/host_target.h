// The host target as this machine measures it (docs/targets.md, "The host
// target"): the host probe's figures (runtime/cpu/host_probe.h) over the
// built-in "host" target, the one form `tapestry targets measure`, `tapestry plan
// --target host` and the studio's Plan dock all keep, so that a measurement reads
// the same from any of them. Here, above both `cost` and `runtime`, since the
// probe's runtime knows no targets.
#pragma once

#include <string>

#include "common/expected.h"
#include "cost/target.h"
#include "runtime/cpu/host_probe.h"

namespace tapestry::launch {

// The probe's measurement as the target's figures, with a note of how they
// were taken ("oneDNN avx512_core, 2 threads: 1024³ GEMM, …").
cost::HostFigures host_figures(const cpu::HostMeasurement &m);

// Measures the host with `threads` threads (cpu::measure_host, about a second)
// and returns its target. Fails with "cancelled" when `progress` returns false,
// else with the probe's words.
Expected<cost::Target, std::string> measure_host_target(int threads, const cpu::ProbeProgress &progress = {});

}  // namespace tapestry::launch
