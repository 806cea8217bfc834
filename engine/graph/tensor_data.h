// TensorData: the values of one tensor in memory — dtype, shape and dense C-order
// bytes. Parameters carry it (Tensor::value), runs take and return it, .npy files
// hold it (io/npy.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "common/check.h"
#include "common/checked_size.h"
#include "graph/dtype.h"
#include "index/zpoint.h"

namespace tapestry {

struct TensorData {
    DType dtype = DType::f32;
    ZPoint shape;
    std::vector<std::byte> bytes;  // element_count() * dtype_bytes(dtype), C order

    TensorData() = default;
    // Allocates the tensor's bytes. Callers check sizes before (a memory budget,
    // the loader's limits): a size past 64 bits or a negative extent here is a
    // bug, stopped before it could allocate a wrapped-around buffer.
    TensorData(DType t, ZPoint s) : dtype(t), shape(std::move(s)), bytes(checked_bytes(shape, t)) {}
    static size_t checked_bytes(const ZPoint &shape, DType t) {
        const std::int64_t n = shape.product();
        TAPESTRY_CHECK(n >= 0 && n < kSizeSaturated && size_mul(n, dtype_bytes(t)) < kSizeSaturated,
                       "TensorData: the element count or byte count does not fit in 64 bits");
        return static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(t));
    }

    std::int64_t element_count() const { return shape.product(); }
    template <typename T> std::span<T> as() {
        TAPESTRY_CHECK(sizeof(T) == static_cast<size_t>(dtype_bytes(dtype)), "TensorData::as: element size mismatch");
        return {reinterpret_cast<T *>(bytes.data()), static_cast<size_t>(element_count())};
    }
    template <typename T> std::span<const T> as() const {
        TAPESTRY_CHECK(sizeof(T) == static_cast<size_t>(dtype_bytes(dtype)), "TensorData::as: element size mismatch");
        return {reinterpret_cast<const T *>(bytes.data()), static_cast<size_t>(element_count())};
    }
    // Element i converted to double (any dtype; f16/bf16 decoded exactly).
    double get(std::int64_t i) const;
    // Stores v into element i, rounding to the dtype (round-to-nearest-even for f16/bf16).
    void set(std::int64_t i, double v);
    friend bool operator==(const TensorData &, const TensorData &) = default;
};

}  // namespace tapestry
