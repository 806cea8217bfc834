// Saturating arithmetic for the affine paths (affine_map.cpp, index_projection.cpp):
// with coordinates up to 2^40, entries up to 2^20 and up to 32 terms a row, a sum
// could leave 64 bits. Saturating keeps the behaviour defined; such a box lies far
// outside any tensor and validation reports it as outside.
#pragma once

#include <algorithm>

#include "index/zpoint.h"

namespace tapestry::saturating {

inline constexpr Coord kLimit = Coord{1} << 62;
inline Coord clamp(Coord v) { return std::clamp(v, -kLimit, kLimit); }
inline Coord mul(Coord a, Coord b) {
    Coord r;
    if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? -kLimit : kLimit;
    return clamp(r);
}
inline Coord add(Coord a, Coord b) {
    Coord r;
    if (__builtin_add_overflow(a, b, &r)) return a < 0 ? -kLimit : kLimit;
    return clamp(r);
}

}  // namespace tapestry::saturating
