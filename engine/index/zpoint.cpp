// ZPoint: integer vectors (see zpoint.h).
#include "index/zpoint.h"

#include <sstream>

#include "common/check.h"

namespace tapestry {

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

}  // namespace tapestry
