// What this CPU offers the kernels: the instruction set oneDNN dispatches to —
// the CPU's own, or less when capped by ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA
// (oneDNN 2.6 reads both) — and what follows from it. Kernels, the executor's
// notices, the CLI, the studio and the tests ask here, never cpuid themselves.
#pragma once

#include <string>

namespace tapestry::cpu {

struct CpuIsa {
    std::string name;          // oneDNN's name: "avx2", "avx512_core", "avx512_core_bf16", "avx512_core_amx", …
    bool avx512 = false;       // avx512_core or above: oneDNN's Winograd convolutions, bf16 emulation
    bool native_bf16 = false;  // bf16 dot products in hardware (avx512_core_bf16, AMX): native bf16 kernels
};

// Read once, on first use (from oneDNN's dnnl::get_effective_cpu_isa()).
const CpuIsa &cpu_isa();

}  // namespace tapestry::cpu
