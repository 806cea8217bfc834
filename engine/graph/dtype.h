// Element types of tensors and their names in files ("f32", "bf16", …).
#pragma once

#include <optional>
#include <string_view>

namespace tapestry {

enum class DType { f32, f16, bf16, i32, i64, boolean };

std::string_view dtype_name(DType t);                         // "f32", …, "bool"
std::optional<DType> parse_dtype(std::string_view name);       // inverse of dtype_name
int dtype_bytes(DType t);                                      // storage size of one element
bool dtype_is_float(DType t);

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean};

}  // namespace tapestry
