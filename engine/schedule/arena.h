// Buffer planning shared by every backend (the CPU executor and engine/plan):
// arena offsets for buffers by lifetime, and the dependencies between steps
// that follow from the regions they touch. No graph here: buffers are sizes and
// lifetimes, steps are lists of accesses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "index/zrange.h"

namespace tapestry::schedule {

// Arena offsets and sizes are multiples of this (a cache line, and what
// aligned_alloc gets).
inline constexpr std::size_t kArenaAlign = 64;
// Saturates (at the largest multiple of kArenaAlign) instead of wrapping: a size
// that large is refused when the arena is allocated, never mistaken for a small one.
inline std::size_t align_up(std::size_t n) {
    constexpr std::size_t kTop = std::numeric_limits<std::size_t>::max() / kArenaAlign * kArenaAlign;
    if (n > kTop) return kTop;
    return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
}
// a + b for arena offsets, saturating like align_up.
inline std::size_t arena_add(std::size_t a, std::size_t b) {
    std::size_t r;
    return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::size_t>::max() : r;
}

// Whether two boxes of one rank share a point, without building their
// intersection (ZRange::intersects allocates it). A rank-0 box is one point.
inline bool boxes_meet(const ZRange &a, const ZRange &b) {
    const int rank = a.rank();
    if (rank != b.rank()) return false;
    for (int d = 0; d < rank; ++d) {
        const Coord lo = a.start()[d] > b.start()[d] ? a.start()[d] : b.start()[d];
        const Coord hi = a.end()[d] < b.end()[d] ? a.end()[d] : b.end()[d];
        if (hi <= lo) return false;
    }
    return true;
}

// A buffer to place: its size and its lifetime, the first and last step (in step
// order, inclusive) that touch it.
struct Interval {
    std::size_t bytes = 0;
    int first = 0, last = 0;
};

struct Packing {
    std::vector<std::size_t> offsets;  // per interval
    std::size_t total = 0;             // the arena's size
};

// Greedy interval allocation: largest first (ties in input order), each at the
// lowest aligned offset that does not collide with an already placed buffer whose
// lifetime overlaps. Buffers whose lifetimes overlap never share a byte.
Packing pack_intervals(const std::vector<Interval> &intervals);

// For each packed buffer, the earlier buffers (lifetime ending before it starts)
// whose bytes its first writes must wait for: of those sharing its bytes, the
// latest ones that together cover every shared byte. An earlier one lying under a
// later one is left out: it shares bytes with that later one, which waited for it.
// What conflict_dependencies needs as `aliases` (indices into `intervals`).
std::vector<std::vector<int>> reuse_predecessors(const std::vector<Interval> &intervals, const Packing &packing);

// Whether two placed buffers share bytes.
inline bool bytes_overlap(std::size_t offset_a, std::size_t bytes_a, std::size_t offset_b, std::size_t bytes_b) {
    return offset_a < arena_add(offset_b, align_up(bytes_b)) && offset_b < arena_add(offset_a, align_up(bytes_a));
}

// One access of a step: a box of a resource (a tensor, a buffer), or a slot of a
// ring of tiles (slot ≥ 0: two accesses to slots of one resource conflict when the
// slots are the same).
struct Access {
    int resource = -1;
    const ZRange *box = nullptr;  // the caller's box, alive while dependencies are computed
    bool write = false;
    int slot = -1;
};

// Step j depends on an earlier step i when they touch intersecting boxes of one
// resource (a rank-0 box always intersects) and one of them writes; and when j
// writes a resource that shares arena bytes with one i touches (`aliases[r]`: the
// resources sharing bytes with r). A read of shared bytes needs no edge of its
// own: every resource in an arena is written before it is read, and that write
// waited for the earlier users of the bytes. Returns, per step, its dependencies in increasing order. Cost:
// per access, the earlier accesses of the same and the aliased resources only.
std::vector<std::vector<int>> conflict_dependencies(const std::vector<std::vector<Access>> &steps,
                                                    const std::vector<std::vector<int>> &aliases);

}  // namespace tapestry::schedule
