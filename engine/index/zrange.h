// ZRange: a half-open box [start, end) of Z^n. Start may be non-zero or negative;
// an empty range (some end <= start) is valid and has size 0; a 0-dim range is the
// single empty tuple and has size 1 (DESIGN.md §3).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "index/zpoint.h"

namespace tapestry {

class ZRange {
public:
    ZRange() = default;  // the 0-dim range (size 1)
    // Requires equal ranks; an end below its start is clamped to start (empty).
    ZRange(ZPoint start, ZPoint end);

    static ZRange of_shape(const ZPoint &shape);  // [0, shape)
    static ZRange of_shape(std::initializer_list<Coord> shape) { return of_shape(ZPoint(shape)); }
    static ZRange from_start_shape(const ZPoint &start, const ZPoint &shape);

    int rank() const { return start_.rank(); }
    const ZPoint &start() const { return start_; }
    const ZPoint &end() const { return end_; }
    ZPoint shape() const { return end_ - start_; }
    Coord extent(int dim) const { return end_[dim] - start_[dim]; }
    // Number of points; 1 for rank 0, 0 when empty.
    Coord size() const;
    bool empty() const { return size() == 0; }

    bool contains(const ZPoint &point) const;
    // An empty range is contained in any range of the same rank.
    bool contains(const ZRange &other) const;
    // The largest range inside both (empty when they do not meet).
    ZRange intersect(const ZRange &other) const;
    bool intersects(const ZRange &other) const { return !intersect(other).empty(); }
    // Smallest range holding both; an empty operand contributes nothing.
    ZRange bounding(const ZRange &other) const;
    ZRange translated(const ZPoint &offset) const;

    // Split dimension `dim` into `parts` contiguous pieces whose sizes differ by at
    // most one (the first ones larger) — uneven splits allowed. parts >= 1.
    std::vector<ZRange> split(int dim, int parts) const;
    // Split dimension `dim` at the given interior cut points (sorted, within range).
    std::vector<ZRange> split_at(int dim, const std::vector<Coord> &cuts) const;
    // The cartesian grid split: factors[d] pieces along each dim d.
    std::vector<ZRange> grid(const std::vector<int> &factors) const;

    // Calls f for every point in row-major order (last dim fastest).
    template <typename F> void for_each_point(F &&f) const;
    // Row-major position of `point` inside this range.
    Coord linear_index(const ZPoint &point) const;

    friend bool operator==(const ZRange &a, const ZRange &b);

    // "[0:10, 0:5]"; "[]" for rank 0.
    std::string to_string() const;

private:
    ZPoint start_;
    ZPoint end_;
};

template <typename F> void ZRange::for_each_point(F &&f) const {
    if (empty()) return;
    ZPoint p = start_;
    const int n = rank();
    while (true) {
        f(static_cast<const ZPoint &>(p));
        int d = n - 1;
        while (d >= 0) {
            if (++p[d] < end_[d]) break;
            p[d] = start_[d];
            --d;
        }
        if (d < 0) return;
    }
}

}  // namespace tapestry
