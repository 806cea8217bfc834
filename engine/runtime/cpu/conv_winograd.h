// Our own Winograd convolution, F(4×4, 3×3) (Lavin & Gray, 2016), in f32: for the
// 3×3 stride-1 convolutions that oneDNN 2.6 runs as Winograd on AVX-512 only.
// Each 4×4 tile of the output needs a 6×6 tile of the input; input tiles and
// weights go to the Winograd domain, where the convolution is 36 independent
// products [tiles × C]·[C × K] (one batched oneDNN matmul, which runs near the
// CPU's peak on any ISA), and each tile comes back with bias and unary epilogues
// applied. That is 4× fewer multiplications than the direct algorithm, with
// rounding errors a few times the direct algorithm's (still ~1e-6 of the scale).
#pragma once

#include <memory>
#include <string>

#include "common/expected.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {

// Why our Winograd kernel does not take `spec`, or "" when it does: it needs f32,
// one group, a 3×3 window with stride and dilation 1, at least 16 input and 16
// output channels (below, the products are too thin to win), a shard that reads
// some input, and only unary epilogues.
std::string winograd_refusal(const KernelSpec &spec);

Expected<std::unique_ptr<Kernel>, std::string> make_winograd_conv(const KernelSpec &spec);

}  // namespace tapestry::cpu
