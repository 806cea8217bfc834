// Implementation of ZPoint, ZRange, ZMatrix, AffineMap and IndexProjection.
#include <algorithm>
#include <sstream>

#include "common/check.h"
#include "index/affine_map.h"
#include "index/index_projection.h"
#include "index/zpoint.h"
#include "index/zrange.h"

namespace tapestry {
namespace {
// Saturating arithmetic for the affine paths: with coordinates up to 2^40, entries
// up to 2^20 and up to 32 terms a row, a sum could leave 64 bits. Saturating keeps
// the behaviour defined; such a box lies far outside any tensor and validation
// reports it as outside.
constexpr Coord kSaturated = Coord{1} << 62;
Coord clamp_saturated(Coord v) { return std::clamp(v, -kSaturated, kSaturated); }
Coord sat_mul(Coord a, Coord b) {
    Coord r;
    if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? -kSaturated : kSaturated;
    return clamp_saturated(r);
}
Coord sat_add(Coord a, Coord b) {
    Coord r;
    if (__builtin_add_overflow(a, b, &r)) return a < 0 ? -kSaturated : kSaturated;
    return clamp_saturated(r);
}
}  // namespace

// ---- ZPoint -------------------------------------------------------------------

Coord ZPoint::product() const {
    Coord p = 1;
    for (Coord c : coords_) p *= c;
    return p;
}

ZPoint ZPoint::operator+(const ZPoint &other) const {
    TAPESTRY_CHECK(rank() == other.rank(), "ZPoint + ZPoint: rank mismatch");
    ZPoint r = *this;
    for (int i = 0; i < rank(); ++i) r[i] += other[i];
    return r;
}

ZPoint ZPoint::operator-(const ZPoint &other) const {
    TAPESTRY_CHECK(rank() == other.rank(), "ZPoint - ZPoint: rank mismatch");
    ZPoint r = *this;
    for (int i = 0; i < rank(); ++i) r[i] -= other[i];
    return r;
}

bool ZPoint::all_less_equal(const ZPoint &other) const {
    TAPESTRY_CHECK(rank() == other.rank(), "ZPoint comparison: rank mismatch");
    for (int i = 0; i < rank(); ++i)
        if ((*this)[i] > other[i]) return false;
    return true;
}

bool ZPoint::all_less(const ZPoint &other) const {
    TAPESTRY_CHECK(rank() == other.rank(), "ZPoint comparison: rank mismatch");
    for (int i = 0; i < rank(); ++i)
        if ((*this)[i] >= other[i]) return false;
    return true;
}

std::string ZPoint::to_string() const {
    std::ostringstream s;
    s << '[';
    for (int i = 0; i < rank(); ++i) s << (i ? ", " : "") << (*this)[i];
    s << ']';
    return s.str();
}

// ---- ZRange -------------------------------------------------------------------

ZRange::ZRange(ZPoint start, ZPoint end) : start_(std::move(start)), end_(std::move(end)) {
    TAPESTRY_CHECK(start_.rank() == end_.rank(), "ZRange: start and end ranks differ");
    for (int i = 0; i < rank(); ++i) end_[i] = std::max(end_[i], start_[i]);
}

ZRange ZRange::of_shape(const ZPoint &shape) { return ZRange(ZPoint::zeros(shape.rank()), shape); }

ZRange ZRange::from_start_shape(const ZPoint &start, const ZPoint &shape) { return ZRange(start, start + shape); }

Coord ZRange::size() const {
    Coord s = 1;
    for (int i = 0; i < rank(); ++i) s *= extent(i);
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

// ---- ZMatrix / AffineMap --------------------------------------------------------

ZMatrix::ZMatrix(std::initializer_list<std::initializer_list<Coord>> rows) {
    rows_ = static_cast<int>(rows.size());
    cols_ = rows_ ? static_cast<int>(rows.begin()->size()) : 0;
    for (const auto &r : rows) {
        TAPESTRY_CHECK(static_cast<int>(r.size()) == cols_, "ZMatrix: ragged rows");
        data_.insert(data_.end(), r.begin(), r.end());
    }
}

ZMatrix ZMatrix::from_rows(const std::vector<std::vector<Coord>> &rows, int cols) {
    ZMatrix m(static_cast<int>(rows.size()), cols);
    for (int r = 0; r < m.rows(); ++r) {
        TAPESTRY_CHECK(static_cast<int>(rows[static_cast<size_t>(r)].size()) == cols, "ZMatrix: ragged rows");
        for (int c = 0; c < cols; ++c) m.at(r, c) = rows[static_cast<size_t>(r)][static_cast<size_t>(c)];
    }
    return m;
}

ZMatrix ZMatrix::identity(int n) {
    ZMatrix m(n, n);
    for (int i = 0; i < n; ++i) m.at(i, i) = 1;
    return m;
}

std::vector<Coord> ZMatrix::row(int r) const {
    return std::vector<Coord>(data_.begin() + r * cols_, data_.begin() + (r + 1) * cols_);
}

std::vector<std::vector<Coord>> ZMatrix::to_rows() const {
    std::vector<std::vector<Coord>> out;
    for (int r = 0; r < rows_; ++r) out.push_back(row(r));
    return out;
}

ZPoint ZMatrix::operator*(const ZPoint &x) const {
    TAPESTRY_CHECK(x.rank() == cols_, "ZMatrix * ZPoint: rank mismatch");
    ZPoint y = ZPoint::zeros(rows_);
    for (int r = 0; r < rows_; ++r) {
        Coord acc = 0;
        for (int c = 0; c < cols_; ++c) acc = sat_add(acc, sat_mul(at(r, c), x[c]));
        y[r] = acc;
    }
    return y;
}

AffineMap::AffineMap(ZMatrix a, ZPoint b) : a_(std::move(a)), b_(std::move(b)) {
    TAPESTRY_CHECK(a_.rows() == b_.rank(), "AffineMap: offset rank must equal matrix rows");
}

ZPoint AffineMap::apply(const ZPoint &x) const {
    ZPoint y = a_ * x;
    for (int r = 0; r < y.rank(); ++r) y[r] = sat_add(y[r], b_[r]);
    return y;
}

// ---- IndexProjection ------------------------------------------------------------

IndexProjection::IndexProjection(AffineMap map, ZPoint window) : map_(std::move(map)), window_(std::move(window)) {
    TAPESTRY_CHECK(window_.rank() == map_.out_rank(), "IndexProjection: window rank must equal tensor rank");
}

ZRange IndexProjection::apply(const ZPoint &index_point) const {
    return ZRange::from_start_shape(map_.apply(index_point), window_);
}

ZRange IndexProjection::image(const ZRange &index_range) const {
    TAPESTRY_CHECK(index_range.rank() == index_rank(), "IndexProjection::image: index rank mismatch");
    const ZMatrix &a = map_.matrix();
    const int rows = a.rows();
    if (index_range.empty()) {
        ZPoint at = map_.apply(index_range.start());
        return ZRange(at, at);
    }
    // Each row is a sum of independent terms a_rc·x_c with x_c in [start_c, end_c-1];
    // the extreme corners are found term by term, which visits every corner implicitly.
    ZPoint lo = map_.offset(), hi = map_.offset();
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < a.cols(); ++c) {
            const Coord coef = a.at(r, c);
            const Coord x0 = sat_mul(coef, index_range.start()[c]);
            const Coord x1 = sat_mul(coef, index_range.end()[c] - 1);
            lo[r] = sat_add(lo[r], std::min(x0, x1));
            hi[r] = sat_add(hi[r], std::max(x0, x1));
        }
    }
    // A window entry <= 0 touches nothing along its dimension: that dimension of
    // the result is empty at `lo` (so the whole result is empty), not [lo, hi).
    ZPoint end = hi;
    for (int r = 0; r < rows; ++r) end[r] = sat_add(end[r], window_[r]);
    for (int r = 0; r < rows; ++r)
        if (window_[r] <= 0) end[r] = lo[r];
    return ZRange(lo, end);
}

std::string IndexProjection::to_string() const {
    std::ostringstream s;
    s << '[';
    const ZMatrix &a = map_.matrix();
    for (int r = 0; r < a.rows(); ++r) {
        if (r) s << "; ";
        for (int c = 0; c < a.cols(); ++c) s << (c ? " " : "") << a.at(r, c);
        s << (a.cols() ? " | " : "| ") << map_.offset()[r] << " | " << window_[r];
    }
    s << ']';
    return s.str();
}

}  // namespace tapestry
