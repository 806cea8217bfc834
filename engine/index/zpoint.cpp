// ZPoint: integer vectors (see zpoint.h).
#include "index/zpoint.h"

#include <limits>
#include <sstream>

#include "common/check.h"
#include "common/checked_size.h"

namespace tapestry {

void ZPoint::assign(const Coord *from, size_t n) {
    TAPESTRY_CHECK(n <= static_cast<size_t>(std::numeric_limits<std::int32_t>::max()), "ZPoint: rank too large");
    Coord *to = inline_;
    if (n > static_cast<size_t>(kInline)) to = heap_ = new Coord[n];  // before rank_, should new throw
    rank_ = static_cast<std::int32_t>(n);
    std::copy(from, from + n, to);
}

ZPoint ZPoint::filled(int rank, Coord value) {
    TAPESTRY_CHECK(rank >= 0, "ZPoint: negative rank");
    ZPoint p;
    Coord *to = p.inline_;
    if (rank > kInline) to = p.heap_ = new Coord[static_cast<size_t>(rank)];
    p.rank_ = rank;
    std::fill(to, to + rank, value);
    return p;
}

Coord ZPoint::product() const {
    Coord p = 1;
    for (Coord c : coords()) {
        auto next = checked_mul(p, c);
        if (!next) return (p < 0) != (c < 0) ? std::numeric_limits<Coord>::min() : kSizeSaturated;
        p = *next;
    }
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

}  // namespace tapestry
