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

std::vector<std::vector<int>> conflict_dependencies(const std::vector<std::vector<Access>> &steps,
                                                    const std::vector<std::vector<int>> &aliases) {
    struct Seen {
        int step;
        const Access *access;
    };
    // Per resource, its earlier accesses, and apart from them its earlier writes: a
    // read conflicts with writes only, so it scans those alone.
    struct Accesses {
        std::vector<Seen> all, writes;
    };
    std::vector<Accesses> by_resource;
    int top = -1;
    for (const auto &step : steps)
        for (const Access &a : step) top = std::max(top, a.resource);
    by_resource.resize(static_cast<size_t>(top + 1));
    auto list = [&](int r) -> Accesses & {
        if (static_cast<size_t>(r) >= by_resource.size()) by_resource.resize(static_cast<size_t>(r) + 1);
        return by_resource[static_cast<size_t>(r)];
    };
    std::vector<std::vector<int>> deps(steps.size());
    std::vector<int> d;  // one buffer for every step's candidates
    // Step i is in d for step j when marked[i] == j: each candidate enters once, and
    // one already in needs no box test. (On a 64-device stack a step met the same
    // earlier step through hundreds of accesses; sorting the repeats was most of the
    // plan compiler's time.)
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
            const Accesses &earlier = list(b.resource);
            for (const Seen &s : b.write ? earlier.all : earlier.writes) {
                if (marked[static_cast<size_t>(s.step)] == me) continue;
                const Access &a = *s.access;
                const bool hit = a.slot >= 0 && b.slot >= 0 ? a.slot == b.slot
                                                            : boxes_meet(*a.box, *b.box);
                if (hit) add(s.step);
            }
            // Bytes shared with another buffer: a write waits for every earlier access
            // of it. A read needs nothing more: the write it reads came first and waited.
            if (b.write && static_cast<size_t>(b.resource) < aliases.size())
                for (int other : aliases[static_cast<size_t>(b.resource)])
                    for (const Seen &s : list(other).all) add(s.step);
        }
        std::sort(d.begin(), d.end());
        deps[j].assign(d.begin(), d.end());
        for (const Access &b : steps[j]) {
            Accesses &mine = list(b.resource);
            mine.all.push_back(Seen{static_cast<int>(j), &b});
            if (b.write) mine.writes.push_back(Seen{static_cast<int>(j), &b});
        }
    }
    return deps;
}

}  // namespace tapestry::schedule
