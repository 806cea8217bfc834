// ZPoint: a point of the integer lattice Z^n — coordinates of an index point or
// of a tensor element. The basic value of the index algebra (DESIGN.md §3).
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <initializer_list>
#include <span>
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
    ZPoint(std::initializer_list<Coord> coords) { assign(coords.begin(), coords.size()); }
    explicit ZPoint(std::span<const Coord> coords) { assign(coords.data(), coords.size()); }
    explicit ZPoint(const std::vector<Coord> &coords) { assign(coords.data(), coords.size()); }
    ZPoint(const ZPoint &other) { assign(other.data(), static_cast<size_t>(other.rank_)); }
    ZPoint(ZPoint &&other) noexcept { take(other); }
    ZPoint &operator=(const ZPoint &other) {
        if (this != &other) {
            release();
            assign(other.data(), static_cast<size_t>(other.rank_));
        }
        return *this;
    }
    ZPoint &operator=(ZPoint &&other) noexcept {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }
    ~ZPoint() { release(); }

    static ZPoint zeros(int rank) { return filled(rank, 0); }
    static ZPoint filled(int rank, Coord value);

    int rank() const { return rank_; }
    Coord operator[](int dim) const { return data()[dim]; }
    Coord &operator[](int dim) { return data()[dim]; }
    // The coordinates, valid while the point lives and is not assigned to.
    std::span<const Coord> coords() const { return {data(), static_cast<size_t>(rank_)}; }
    std::vector<Coord> to_vector() const { return {data(), data() + rank_}; }
    const Coord *begin() const { return data(); }
    const Coord *end() const { return data() + rank_; }

    // Product of the coordinates (1 for rank 0); used when the point is a shape.
    Coord product() const;

    ZPoint operator+(const ZPoint &other) const;
    ZPoint operator-(const ZPoint &other) const;

    // Componentwise comparisons, as used for box containment.
    bool all_less_equal(const ZPoint &other) const;
    bool all_less(const ZPoint &other) const;

    friend bool operator==(const ZPoint &a, const ZPoint &b) {
        return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
    }
    // Lexicographic, a shorter prefix first (as std::vector orders).
    friend std::strong_ordering operator<=>(const ZPoint &a, const ZPoint &b) {
        return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
    }

    // "[1, 2, 3]"
    std::string to_string() const;

private:
    // Points of rank up to kInline (every index space of the op library but the
    // largest convolutions) keep their coordinates inline: the plan compiler and
    // the search copy millions of boxes, and a heap allocation per point was most
    // of their time. Larger ranks (up to the formats' 32) go to the heap.
    static constexpr int kInline = 7;
    Coord *data() { return rank_ > kInline ? heap_ : inline_; }
    const Coord *data() const { return rank_ > kInline ? heap_ : inline_; }
    void assign(const Coord *from, size_t n);
    void take(ZPoint &other) noexcept {
        rank_ = other.rank_;
        if (rank_ > kInline) {
            heap_ = other.heap_;
        } else {
            std::copy(other.inline_, other.inline_ + rank_, inline_);
        }
        other.rank_ = 0;
    }
    void release() {
        if (rank_ > kInline) delete[] heap_;
        rank_ = 0;
    }

    std::int32_t rank_ = 0;
    union {
        Coord inline_[kInline] = {};
        Coord *heap_;
    };
};
}  // namespace tapestry
