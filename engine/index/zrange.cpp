// ZRange: half-open boxes (see zrange.h).
#include "index/zrange.h"

#include <algorithm>
#include <sstream>

#include "common/check.h"
#include "common/checked_size.h"

namespace tapestry {

ZRange::ZRange(ZPoint start, ZPoint end) : start_(std::move(start)), end_(std::move(end)) {
    TAPESTRY_CHECK(start_.rank() == end_.rank(), "ZRange: start and end ranks differ");
    for (int i = 0; i < rank(); ++i) end_[i] = std::max(end_[i], start_[i]);
}

ZRange ZRange::of_shape(const ZPoint &shape) { return ZRange(ZPoint::zeros(shape.rank()), shape); }

ZRange ZRange::from_start_shape(const ZPoint &start, const ZPoint &shape) { return ZRange(start, start + shape); }

Coord ZRange::size() const {
    Coord s = 1;
    for (int i = 0; i < rank(); ++i) {
        if (extent(i) <= 0) return 0;
        s = size_mul(s, extent(i));
    }
    return s;
}

bool ZRange::contains(const ZPoint &point) const {
    TAPESTRY_CHECK(point.rank() == rank(), "ZRange::contains: rank mismatch");
    for (int i = 0; i < rank(); ++i)
        if (point[i] < start_[i] || point[i] >= end_[i]) return false;
    return true;
}

bool ZRange::contains(const ZRange &other) const {
    TAPESTRY_CHECK(other.rank() == rank(), "ZRange::contains: rank mismatch");
    if (other.empty()) return true;
    return start_.all_less_equal(other.start_) && other.end_.all_less_equal(end_);
}

ZRange ZRange::intersect(const ZRange &other) const {
    TAPESTRY_CHECK(other.rank() == rank(), "ZRange::intersect: rank mismatch");
    ZPoint s = start_, e = end_;
    for (int i = 0; i < rank(); ++i) {
        s[i] = std::max(s[i], other.start_[i]);
        e[i] = std::min(e[i], other.end_[i]);
    }
    return ZRange(s, e);
}

ZRange ZRange::bounding(const ZRange &other) const {
    TAPESTRY_CHECK(other.rank() == rank(), "ZRange::bounding: rank mismatch");
    if (other.empty()) return *this;
    if (empty()) return other;
    ZPoint s = start_, e = end_;
    for (int i = 0; i < rank(); ++i) {
        s[i] = std::min(s[i], other.start_[i]);
        e[i] = std::max(e[i], other.end_[i]);
    }
    return ZRange(s, e);
}

ZRange ZRange::translated(const ZPoint &offset) const { return ZRange(start_ + offset, end_ + offset); }

std::vector<ZRange> ZRange::split(int dim, int parts) const {
    TAPESTRY_CHECK(dim >= 0 && dim < rank(), "ZRange::split: dimension out of range");
    TAPESTRY_CHECK(parts >= 1, "ZRange::split: parts must be positive");
    const Coord n = extent(dim);
    std::vector<Coord> cuts;
    Coord pos = start_[dim];
    for (int p = 0; p + 1 < parts; ++p) {
        pos += n / parts + (p < n % parts ? 1 : 0);
        cuts.push_back(pos);
    }
    return split_at(dim, cuts);
}

std::vector<ZRange> ZRange::split_at(int dim, const std::vector<Coord> &cuts) const {
    TAPESTRY_CHECK(dim >= 0 && dim < rank(), "ZRange::split_at: dimension out of range");
    std::vector<ZRange> out;
    Coord lo = start_[dim];
    auto piece = [&](Coord a, Coord b) {
        ZPoint s = start_, e = end_;
        s[dim] = a;
        e[dim] = b;
        out.emplace_back(s, e);
    };
    for (Coord c : cuts) {
        TAPESTRY_CHECK(c >= lo && c <= end_[dim], "ZRange::split_at: cuts must be sorted and inside the range");
        piece(lo, c);
        lo = c;
    }
    piece(lo, end_[dim]);
    return out;
}

std::vector<ZRange> ZRange::grid(const std::vector<int> &factors) const {
    TAPESTRY_CHECK(static_cast<int>(factors.size()) == rank(), "ZRange::grid: one factor per dimension");
    std::vector<ZRange> cells{*this};
    for (int d = 0; d < rank(); ++d) {
        std::vector<ZRange> next;
        for (const ZRange &c : cells)
            for (ZRange &p : c.split(d, factors[static_cast<size_t>(d)])) next.push_back(std::move(p));
        cells = std::move(next);
    }
    return cells;
}

Coord ZRange::linear_index(const ZPoint &point) const {
    TAPESTRY_CHECK(contains(point), "ZRange::linear_index: point outside range");
    Coord idx = 0;
    for (int i = 0; i < rank(); ++i) idx = idx * extent(i) + (point[i] - start_[i]);
    return idx;
}

bool operator==(const ZRange &a, const ZRange &b) {
    // All empty ranges of one rank are equal regardless of position? No: position
    // matters for diagnostics and round-trips, so compare exactly.
    return a.start_ == b.start_ && a.end_ == b.end_;
}

std::string ZRange::to_string() const {
    std::ostringstream s;
    s << '[';
    for (int i = 0; i < rank(); ++i) s << (i ? ", " : "") << start_[i] << ':' << end_[i];
    s << ']';
    return s.str();
}

}  // namespace tapestry
