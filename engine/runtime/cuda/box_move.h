// Moving elements between strided boxes of device memory (runtime/cuda): the
// copies a plan's transfers make and the pieces its collectives pass around —
// chunk by chunk of the row-major order — on one GPU or between two (peer access).
#pragma once

#include <cstdint>

#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

// dst[i] = src[i] — or dst[i] += src[i] with `add` — for the flat row-major
// elements [lo, hi) of two boxes of the same element count (shapes may differ).
// Converts between dtypes when they differ; 16-bit floats are added in f32 and
// rounded back, as NCCL reduces them. Enqueued on `stream`.
Status enqueue_box_move(const View &src, const View &dst, std::int64_t lo, std::int64_t hi, bool add,
                        cudaStream_t stream);

}  // namespace tapestry::cuda
