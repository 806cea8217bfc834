// ZPoint: integer vectors (see zpoint.h).
#include "index/zpoint.h"

#include <limits>
#include <sstream>

#include "common/check.h"
#include "common/checked_size.h"

namespace tapestry {

Coord ZPoint::product() const {
    Coord p = 1;
    for (Coord c : coords_) {
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
