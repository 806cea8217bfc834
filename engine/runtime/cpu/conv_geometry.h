// The geometry of a conv2d or pooling kernel over one shard: the padding local
// to the shard's clipped input selection, and how a conv2d's groups and filters
// fall into primitive runs. Shared by the oneDNN kernels (kernels_convolution.cpp)
// and our own Winograd convolution (conv_winograd.cpp).
#pragma once

#include <cstdint>

#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {

// The padding of one spatial axis local to a shard: how far the unclipped image
// of the shard's index range reaches before and after the clipped selection.
struct LocalPadding {
    std::int64_t before = 0, after = 0;
    std::int64_t extent = 0;  // the clipped selection's extent
};
LocalPadding local_padding(const OperandProjection &px, const ZRange &index_range, const ZPoint &x_shape, int dim);

// The geometry of one conv2d kernel (a shard, or the whole op).
struct ConvPlan {
    bool grouped = false;
    std::int64_t groups = 1, cg = 1, kg = 1;  // whole-op groups, channels and filters per group
    std::int64_t g_local = 1, k_local = 1;    // the shard's groups and filters per group
    bool one_grouped_primitive = false;       // g_local > 1 groups with all their filters
    int loops = 1;                            // primitives runs (one per group when filters are split)
    LocalPadding ph, pw;
    std::int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
};
ConvPlan conv_plan(const KernelSpec &spec);

}  // namespace tapestry::cpu
