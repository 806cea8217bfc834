// NumPy .npy files (format versions 1.0–3.0): the interchange for tensor values
// in and out of runs. Reading never crashes on bad bytes: errors are messages.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/expected.h"
#include "graph/tensor_data.h"

namespace tapestry {

// Parses .npy bytes (little-endian). Dtypes: <f4 → f32, <f2 → f16, <i4 → i32,
// <i8 → i64, |b1 → bool; <f8 is converted to f32 when `allow_f64_to_f32`, else
// refused. Big-endian data, object arrays and Fortran order are refused with a
// message saying so.
Expected<TensorData, std::string> parse_npy(std::string_view bytes, bool allow_f64_to_f32 = true);
Expected<TensorData, std::string> read_npy(const std::filesystem::path &path, bool allow_f64_to_f32 = true);
std::string to_npy(const TensorData &t);  // bf16 is written as f32 (NumPy has no bf16)
// Writes atomically; returns an error message naming the path, or "".
std::string write_npy(const TensorData &t, const std::filesystem::path &path);

}  // namespace tapestry
