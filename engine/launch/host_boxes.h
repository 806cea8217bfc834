// Boxes of plan buffers in host memory, and the element moves the host backends
// make with them: copying a box, adding one into another, chunk by chunk of the
// row-major order (the pieces a ring collective passes around). A buffer holds
// its region dense row-major, so a box of it is a strided view whose last dim is
// contiguous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/dtype.h"
#include "index/zrange.h"

namespace tapestry::launch {

struct HostBox {
    std::byte *data = nullptr;          // the box's first element
    DType dtype = DType::f32;
    std::vector<std::int64_t> shape;    // the box's extents (rank 0: one element, shape {1})
    std::vector<std::int64_t> strides;  // elements, the buffer's row-major strides

    std::int64_t elements() const;
    // The box with its dim 0 fixed at `index` (relative to the box's start): one rank less.
    HostBox slice0(std::int64_t index) const;
};

// The box `box` (tensor coordinates) of a buffer holding `region` dense row-major
// at `base` (null: a buffer this process does not hold — shape and strides only).
// Requires region.contains(box).
HostBox host_box(std::byte *base, const ZRange &region, const ZRange &box, DType dtype);
// Elements from the region's first element to the box's, row-major.
std::int64_t box_offset(const ZRange &region, const ZRange &box);

// dst[i] = src[i] for the flat row-major elements [lo, hi) of two boxes of the same
// element count; converts between dtypes when they differ.
void copy_elements(const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi);
// dst[i] += src[i] over [lo, hi) (16-bit floats added in f32 and rounded back,
// as NCCL reduces them); requires dst's dtype to be a float or integer dtype.
void add_elements(const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi);

inline void copy_box(const HostBox &src, const HostBox &dst) { copy_elements(src, dst, 0, dst.elements()); }

// Elements [lo, hi) of `box` written densely to `out` ((hi − lo) elements of its
// dtype), and back: a message's bytes.
void pack_elements(const HostBox &box, std::int64_t lo, std::int64_t hi, std::byte *out);
// dst[i] = (or += with `add`) the dense elements at `in`, for i in [lo, hi).
void unpack_elements(const std::byte *in, const HostBox &dst, std::int64_t lo, std::int64_t hi, bool add);

}  // namespace tapestry::launch
