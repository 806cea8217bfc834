// The CPU runtime's answer to the fusion pass (ops/fusion.h): a fused piece is
// runnable when the `fused` kernel can be made for it — the head's oneDNN
// primitive with the epilogues as post-ops, or the elementwise/normalization
// loops (runtime/cpu/kernels_fused.cpp), through make_kernel as the executor does.
#pragma once

#include "ops/fusion.h"

namespace tapestry::cpu {

const FusionBackend &fusion_backend();

}  // namespace tapestry::cpu
