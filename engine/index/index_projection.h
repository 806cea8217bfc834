// IndexProjection {map, window}: an operation's index point i reads or writes the
// box [A·i + b, A·i + b + window) of a tensor (Tapestry's index projection
// function, DESIGN.md §3). Window entries above 1 express contractions,
// convolution windows and reductions.
#pragma once

#include <string>

#include "index/affine_map.h"
#include "index/zrange.h"

namespace tapestry {

class IndexProjection {
public:
    IndexProjection() = default;
    IndexProjection(AffineMap map, ZPoint window);  // requires window.rank() == map.out_rank()
    // Identity map with a unit window: elementwise access.
    static IndexProjection identity(int n) { return {AffineMap::identity(n), ZPoint::filled(n, 1)}; }

    const AffineMap &map() const { return map_; }
    const ZPoint &window() const { return window_; }
    int index_rank() const { return map_.in_rank(); }
    int tensor_rank() const { return map_.out_rank(); }

    // The box one index point touches.
    ZRange apply(const ZPoint &index_point) const;
    // The box the points of `index_range` touch together: the bounding box of the
    // images of all corners (per row, the minimum and maximum of A·x over the box
    // separately for each sign of each entry), plus the window. An empty index
    // range touches nothing: the result is empty, positioned at A·start + b. A
    // window entry of 0 makes that dimension (and so the image) empty. Arithmetic
    // saturates at ±2^62 instead of overflowing.
    // Not the Java prototype's start/inclusive-end shortcut, which is wrong for
    // rows that mix signs (BACKGROUND §2).
    ZRange image(const ZRange &index_range) const;

    IndexProjection translated(const ZPoint &delta) const { return {map_.translated(delta), window_}; }

    friend bool operator==(const IndexProjection &, const IndexProjection &) = default;

    // Augmented-matrix form "[A | b | window]", one row per tensor dim, rows joined
    // by "; " — e.g. "[1 0 | 0 | 1; 0 0 | 0 | 32]".
    std::string to_string() const;

private:
    AffineMap map_;
    ZPoint window_;
};

}  // namespace tapestry
