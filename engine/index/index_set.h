// The exact layer of the index algebra, backed by ISL (DESIGN.md §3): sets of
// integer points that need not be boxes, and the questions whose answers must be
// exact — does a set of boxes partition a range (no gap, no overlap), is an output
// projection injective on a range, intersections and images.
//
// No raw ISL pointer escapes this header. Every thread has its own ISL context; an
// IndexSet belongs to the thread that made it and must not cross threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "index/index_projection.h"
#include "index/zrange.h"

namespace tapestry {

class IndexSet {
public:
    explicit IndexSet(int rank);  // the empty set of Z^rank
    static IndexSet of_range(const ZRange &r);
    static IndexSet of_ranges(int rank, const std::vector<ZRange> &ranges);
    // The exact image of this set through a projection: every element of every
    // window of every point (not a bounding box).
    IndexSet image(const IndexProjection &p) const;

    IndexSet(const IndexSet &);
    IndexSet(IndexSet &&) noexcept;
    IndexSet &operator=(const IndexSet &);
    IndexSet &operator=(IndexSet &&) noexcept;
    ~IndexSet();

    int rank() const { return rank_; }
    bool empty() const;
    std::int64_t count() const;  // number of points (must be finite, which all our sets are)
    IndexSet unite(const IndexSet &o) const;
    IndexSet intersect(const IndexSet &o) const;
    IndexSet subtract(const IndexSet &o) const;
    bool is_subset_of(const IndexSet &o) const;
    bool equals(const IndexSet &o) const;
    // Smallest box holding the set (empty range of this rank when the set is empty).
    ZRange bounding_box() const;
    // Some point of the set, if any (for messages: "e.g. at [3, 4]").
    std::optional<ZPoint> sample_point() const;
    // Disjoint boxes whose union is the set, when the set is a finite union of boxes
    // (always true for sets built from ranges); nullopt otherwise.
    std::optional<std::vector<ZRange>> as_boxes() const;
    std::string to_string() const;  // ISL notation, e.g. "{ [i0, i1] : 0 <= i0 <= 3 and ... }"

private:
    struct Impl;
    IndexSet(int rank, std::unique_ptr<Impl> impl);
    int rank_ = 0;
    std::unique_ptr<Impl> impl_;
};

// Whether `parts` partition `whole`: every point of `whole` in exactly one part,
// and no part reaching outside it. Decided exactly; the report says where it fails.
struct PartitionReport {
    struct Overlap {
        size_t first, second;  // indices into parts
        ZRange region;         // their intersection
    };
    bool is_partition() const { return gaps.empty() && overlaps.empty() && outside.empty(); }
    std::vector<ZRange> gaps;       // boxes of `whole` no part covers
    std::vector<Overlap> overlaps;  // pairs of parts that share points
    std::vector<size_t> outside;    // parts reaching outside `whole`
};
PartitionReport check_partition(const std::vector<ZRange> &parts, const ZRange &whole);

// Whether distinct index points of `domain` always touch disjoint boxes through
// `p` — i.e. no tensor element is written twice. When not, a witness pair of
// distinct index points that touch a common element.
struct InjectivityReport {
    bool injective = true;
    std::optional<std::pair<ZPoint, ZPoint>> witness;
};
InjectivityReport check_injective(const IndexProjection &p, const ZRange &domain);
// The same question answered by ISL alone (isl_map_is_injective), for tests.
bool isl_is_injective(const IndexProjection &p, const ZRange &domain);
// Exact image box check used by tests: ISL's bounding box of the exact image.
ZRange isl_image_bounding_box(const IndexProjection &p, const ZRange &domain);

}  // namespace tapestry
