// ZPoint: a point of the integer lattice Z^n — coordinates of an index point or
// of a tensor element. The basic value of the index algebra (DESIGN.md §3).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tapestry {

using Coord = std::int64_t;

// Bounds accepted from files and users. Coordinates beyond them are rejected by
// validation before any arithmetic, so that products of matrix entries and
// coordinates cannot overflow 64 bits.
inline constexpr Coord kMaxCoordinate = Coord{1} << 40;
inline constexpr Coord kMaxMatrixEntry = Coord{1} << 20;

class ZPoint {
public:
    ZPoint() = default;
    ZPoint(std::initializer_list<Coord> coords) : coords_(coords) {}
    explicit ZPoint(std::vector<Coord> coords) : coords_(std::move(coords)) {}

    static ZPoint zeros(int rank) { return ZPoint(std::vector<Coord>(static_cast<size_t>(rank), 0)); }
    static ZPoint filled(int rank, Coord value) {
        return ZPoint(std::vector<Coord>(static_cast<size_t>(rank), value));
    }

    int rank() const { return static_cast<int>(coords_.size()); }
    Coord operator[](int dim) const { return coords_[static_cast<size_t>(dim)]; }
    Coord &operator[](int dim) { return coords_[static_cast<size_t>(dim)]; }
    const std::vector<Coord> &coords() const { return coords_; }

    // Product of the coordinates (1 for rank 0); used when the point is a shape.
    Coord product() const;

    ZPoint operator+(const ZPoint &other) const;
    ZPoint operator-(const ZPoint &other) const;

    // Componentwise comparisons, as used for box containment.
    bool all_less_equal(const ZPoint &other) const;
    bool all_less(const ZPoint &other) const;

    friend bool operator==(const ZPoint &, const ZPoint &) = default;
    friend auto operator<=>(const ZPoint &, const ZPoint &) = default;

    // "[1, 2, 3]"
    std::string to_string() const;

private:
    std::vector<Coord> coords_;
};

}  // namespace tapestry
