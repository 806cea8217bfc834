#include "schedule/arena.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace tapestry::schedule {

Packing pack_intervals(const std::vector<Interval> &intervals) {
    Packing out;
    out.offsets.assign(intervals.size(), 0);
    std::vector<size_t> order(intervals.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return intervals[a].bytes > intervals[b].bytes; });
    std::vector<size_t> placed;  // by offset: the live neighbours come out in offset order
    for (size_t i : order) {
        const Interval &t = intervals[i];
        std::size_t offset = 0;
        const std::size_t need = align_up(t.bytes);
        for (size_t j : placed) {
            const Interval &u = intervals[j];
            if (u.first > t.last || t.first > u.last) continue;  // never alive together
            const std::size_t b = out.offsets[j], e = arena_add(b, align_up(u.bytes));
            if (arena_add(offset, need) <= b) break;
            offset = std::max(offset, e);
        }
        out.offsets[i] = offset;
        out.total = std::max(out.total, arena_add(offset, need));
        placed.insert(std::upper_bound(placed.begin(), placed.end(), offset,
                                       [&](std::size_t v, size_t j) { return v < out.offsets[j]; }),
                      i);
    }
    return out;
}

std::vector<std::vector<int>> reuse_predecessors(const std::vector<Interval> &intervals, const Packing &packing) {
    // Buffers that share bytes are never alive together, so walking them in the
    // order they start and painting each one's bytes over an interval map leaves,
    // on every byte, the latest buffer that used it: exactly the predecessors.
    const size_t n = intervals.size();
    std::vector<std::vector<int>> out(n);
    std::vector<size_t> by_start(n);
    std::iota(by_start.begin(), by_start.end(), size_t{0});
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](size_t a, size_t b) { return intervals[a].first < intervals[b].first; });
    struct Segment {
        std::size_t end;
        int owner;
    };
    std::map<std::size_t, Segment> painted;  // start → [start, end) last used by owner
    for (size_t b : by_start) {
        const std::size_t lo = packing.offsets[b], hi = arena_add(lo, align_up(intervals[b].bytes));
        if (lo >= hi) continue;
        auto it = painted.upper_bound(lo);
        if (it != painted.begin()) --it;
        std::vector<int> &pred = out[b];
        std::vector<std::pair<std::size_t, Segment>> keep;  // the parts of cut segments outside [lo, hi)
        while (it != painted.end() && it->first < hi) {
            const std::size_t s = it->first, e = it->second.end;
            const int owner = it->second.owner;
            if (e <= lo) {
                ++it;
                continue;
            }
            if (intervals[static_cast<size_t>(owner)].last < intervals[b].first &&
                std::find(pred.begin(), pred.end(), owner) == pred.end())
                pred.push_back(owner);
            if (s < lo) keep.push_back({s, Segment{lo, owner}});
            if (e > hi) keep.push_back({hi, Segment{e, owner}});
            it = painted.erase(it);
        }
        for (const auto &[s, seg] : keep) painted.emplace(s, seg);
        painted.emplace(lo, Segment{hi, static_cast<int>(b)});
    }
    return out;
}

namespace {

struct Seen {
    int step;
    const Access *access;
};

// One resource's earlier accesses of one kind (all, or writes only), and the ones a
// new access meets. A long list (a buffer that 64 transfers each fill a tile of,
// read by 64 kernels) is indexed by the start of each box along one dim, so a query
// scans only the boxes whose start lies within the longest box's extent of it —
// the same boxes the full scan finds, in fewer tests.
class Earlier {
public:
    const std::vector<Seen> &items() const { return items_; }

    void push(const Seen &s) {
        items_.push_back(s);
        if (!indexable(*s.access)) unindexable_ = true;
        if (unindexable_) {
            sorted_.clear();
            return;
        }
        if (sorted_.empty()) {
            if (items_.size() >= kIndexFrom) build();
            return;
        }
        add_to_index(items_.size() - 1);
    }

    // Calls f(step) for every earlier access that conflicts with `b`'s box or slot.
    template <class F>
    void meeting(const Access &b, F &&f) const {
        if (sorted_.empty() || !indexable(b)) {
            for (const Seen &s : items_)
                if (hits(*s.access, b)) f(s.step);
            return;
        }
        const Coord lo = b.box->start()[dim_], hi = b.box->end()[dim_];
        // Starts in (lo − longest, hi): no other box reaches b's extent along dim_.
        auto first = std::upper_bound(sorted_.begin(), sorted_.end(), lo - longest_,
                                      [](Coord v, const Key &k) { return v < k.start; });
        for (auto it = first; it != sorted_.end() && it->start < hi; ++it) {
            const Seen &s = items_[it->item];
            if (boxes_meet(*s.access->box, *b.box)) f(s.step);
        }
    }

private:
    static constexpr size_t kIndexFrom = 48;
    struct Key {
        Coord start;
        size_t item;
    };
    static bool indexable(const Access &a) { return a.slot < 0 && a.box && a.box->rank() > 0; }
    static bool hits(const Access &a, const Access &b) {
        return a.slot >= 0 && b.slot >= 0 ? a.slot == b.slot : boxes_meet(*a.box, *b.box);
    }
    void build() {
        // The dim along which the boxes' starts spread widest.
        const int rank = items_.front().access->box->rank();
        Coord best = -1;
        for (int d = 0; d < rank; ++d) {
            Coord mn = items_.front().access->box->start()[d], mx = mn;
            for (const Seen &s : items_) {
                if (s.access->box->rank() != rank) {
                    unindexable_ = true;
                    return;
                }
                mn = std::min(mn, s.access->box->start()[d]);
                mx = std::max(mx, s.access->box->start()[d]);
            }
            if (mx - mn > best) {
                best = mx - mn;
                dim_ = d;
            }
        }
        rank_ = rank;
        longest_ = 0;
        sorted_.reserve(items_.size() * 2);
        for (size_t i = 0; i < items_.size(); ++i) add_to_index(i);
    }
    void add_to_index(size_t i) {
        const ZRange &box = *items_[i].access->box;
        if (box.rank() != rank_) {
            unindexable_ = true;
            sorted_.clear();
            return;
        }
        const Key k{box.start()[dim_], i};
        longest_ = std::max(longest_, box.end()[dim_] - box.start()[dim_]);
        sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), k.start,
                                        [](Coord v, const Key &e) { return v < e.start; }),
                       k);
    }

    std::vector<Seen> items_;
    std::vector<Key> sorted_;  // by box start along dim_ (empty: not indexed)
    bool unindexable_ = false;
    int dim_ = 0, rank_ = 0;
    Coord longest_ = 0;
};

}  // namespace

std::vector<std::vector<int>> conflict_dependencies(const std::vector<std::vector<Access>> &steps,
                                                    const std::vector<std::vector<int>> &aliases) {
    // Per resource, its earlier accesses, and apart from them its earlier writes: a
    // read conflicts with writes only, so it scans those alone.
    struct Accesses {
        Earlier all, writes;
        int expanded = -1;  // the last step whose write took every access of it as an alias
    };
    std::vector<Accesses> by_resource;
    int top = -1;
    for (const auto &step : steps)
        for (const Access &a : step) top = std::max(top, a.resource);
    for (const auto &list : aliases)
        for (int r : list) top = std::max(top, r);
    by_resource.resize(static_cast<size_t>(top + 1));
    std::vector<std::vector<int>> deps(steps.size());
    std::vector<int> d;  // one buffer for every step's candidates
    // Step i is in d for step j when marked[i] == j: each candidate enters once. (On a
    // 64-device stack a step met the same earlier step through hundreds of accesses;
    // sorting the repeats was most of the plan compiler's time.)
    std::vector<int> marked(steps.size(), -1);
    for (size_t j = 0; j < steps.size(); ++j) {
        d.clear();
        const int me = static_cast<int>(j);
        auto add = [&](int i) {
            if (marked[static_cast<size_t>(i)] == me) return;
            marked[static_cast<size_t>(i)] = me;
            d.push_back(i);
        };
        for (const Access &b : steps[j]) {
            const Accesses &earlier = by_resource[static_cast<size_t>(b.resource)];
            (b.write ? earlier.all : earlier.writes).meeting(b, add);
            // Bytes shared with another buffer: a write waits for every earlier access
            // of it (taken once per step). A read needs nothing more: the write it
            // reads came first and waited.
            if (b.write && static_cast<size_t>(b.resource) < aliases.size())
                for (int other : aliases[static_cast<size_t>(b.resource)]) {
                    Accesses &o = by_resource[static_cast<size_t>(other)];
                    if (o.expanded == me) continue;
                    o.expanded = me;
                    for (const Seen &s : o.all.items()) add(s.step);
                }
        }
        std::sort(d.begin(), d.end());
        deps[j].assign(d.begin(), d.end());
        for (const Access &b : steps[j]) {
            Accesses &mine = by_resource[static_cast<size_t>(b.resource)];
            mine.all.push(Seen{me, &b});
            if (b.write) mine.writes.push(Seen{me, &b});
        }
    }
    return deps;
}

}  // namespace tapestry::schedule
