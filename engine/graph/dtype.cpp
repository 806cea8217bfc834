// Element types: names, sizes, parsing (see dtype.h).
#include "graph/dtype.h"

namespace tapestry {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::i64: return "i64";
        case DType::boolean: return "bool";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType t : kAllDTypes)
        if (dtype_name(t) == name) return t;
    return std::nullopt;
}

int dtype_bytes(DType t) {
    switch (t) {
        case DType::f32: return 4;
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::i32: return 4;
        case DType::i64: return 8;
        case DType::boolean: return 1;
    }
    return 0;
}

bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

}  // namespace tapestry
