#include "schedule/arena.h"

#include <algorithm>
#include <numeric>

namespace tapestry::schedule {

Packing pack_intervals(const std::vector<Interval> &intervals) {
    Packing out;
    out.offsets.assign(intervals.size(), 0);
    std::vector<size_t> order(intervals.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return intervals[a].bytes > intervals[b].bytes; });
    std::vector<size_t> placed;
    std::vector<std::pair<std::size_t, std::size_t>> busy;
    for (size_t i : order) {
        const Interval &t = intervals[i];
        busy.clear();
        for (size_t j : placed) {
            const Interval &u = intervals[j];
            if (u.first <= t.last && t.first <= u.last)
                busy.emplace_back(out.offsets[j], arena_add(out.offsets[j], align_up(u.bytes)));
        }
        std::sort(busy.begin(), busy.end());
        std::size_t offset = 0;
        const std::size_t need = align_up(t.bytes);
        for (const auto &[b, e] : busy) {
            if (arena_add(offset, need) <= b) break;
            offset = std::max(offset, e);
        }
        out.offsets[i] = offset;
        out.total = std::max(out.total, arena_add(offset, need));
        placed.push_back(i);
    }
    return out;
}

std::vector<std::vector<int>> reuse_predecessors(const std::vector<Interval> &intervals, const Packing &packing) {
    const size_t n = intervals.size();
    std::vector<std::vector<int>> out(n);
    auto end_of = [&](size_t i) { return arena_add(packing.offsets[i], align_up(intervals[i].bytes)); };
    // Buffers by offset, to find those sharing bytes without looking at all pairs.
    std::vector<size_t> by_offset(n);
    std::iota(by_offset.begin(), by_offset.end(), size_t{0});
    std::sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) { return packing.offsets[a] < packing.offsets[b]; });
    std::size_t widest = 0;
    for (size_t i = 0; i < n; ++i) widest = std::max(widest, align_up(intervals[i].bytes));
    std::vector<size_t> candidates;
    std::vector<std::pair<std::size_t, std::size_t>> covered;
    for (size_t b = 0; b < n; ++b) {
        const std::size_t lo = packing.offsets[b], hi = end_of(b);
        if (lo == hi) continue;
        candidates.clear();
        // Every buffer starting in [lo − widest, hi) may share bytes with b.
        const std::size_t from = lo > widest ? lo - widest : 0;
        auto it = std::lower_bound(by_offset.begin(), by_offset.end(), from,
                                   [&](size_t i, std::size_t v) { return packing.offsets[i] < v; });
        for (; it != by_offset.end() && packing.offsets[*it] < hi; ++it) {
            const size_t a = *it;
            if (a != b && intervals[a].last < intervals[b].first && end_of(a) > lo) candidates.push_back(a);
        }
        std::sort(candidates.begin(), candidates.end(),
                  [&](size_t x, size_t y) { return intervals[x].last > intervals[y].last; });
        covered.clear();
        for (size_t a : candidates) {
            const std::size_t s = std::max(lo, packing.offsets[a]), e = std::min(hi, end_of(a));
            // Is [s, e) already under later buffers?
            std::size_t at = s;
            for (const auto &[cs, ce] : covered)
                if (cs <= at && ce > at) at = ce;
            if (at >= e) continue;
            out[b].push_back(static_cast<int>(a));
            covered.emplace_back(s, e);
            std::sort(covered.begin(), covered.end());
            // Merge touching intervals so that one pass above finds the cover.
            std::vector<std::pair<std::size_t, std::size_t>> merged;
            for (const auto &c : covered)
                if (!merged.empty() && c.first <= merged.back().second) merged.back().second = std::max(merged.back().second, c.second);
                else merged.push_back(c);
            covered.swap(merged);
        }
    }
    return out;
}

std::vector<std::vector<int>> conflict_dependencies(const std::vector<std::vector<Access>> &steps,
                                                    const std::vector<std::vector<int>> &aliases) {
    struct Seen {
        int step;
        const Access *access;
    };
    std::vector<std::vector<Seen>> by_resource;
    auto list = [&](int r) -> std::vector<Seen> & {
        if (static_cast<size_t>(r) >= by_resource.size()) by_resource.resize(static_cast<size_t>(r) + 1);
        return by_resource[static_cast<size_t>(r)];
    };
    std::vector<std::vector<int>> deps(steps.size());
    for (size_t j = 0; j < steps.size(); ++j) {
        std::vector<int> &d = deps[j];
        for (const Access &b : steps[j]) {
            for (const Seen &s : list(b.resource)) {
                const Access &a = *s.access;
                if (!a.write && !b.write) continue;
                const bool hit = a.slot >= 0 && b.slot >= 0 ? a.slot == b.slot
                                                            : boxes_meet(*a.box, *b.box);
                if (hit) d.push_back(s.step);
            }
            // Bytes shared with another buffer: a write waits for every earlier access
            // of it. A read needs nothing more: the write it reads came first and waited.
            if (b.write && static_cast<size_t>(b.resource) < aliases.size())
                for (int other : aliases[static_cast<size_t>(b.resource)])
                    for (const Seen &s : list(other)) d.push_back(s.step);
        }
        std::sort(d.begin(), d.end());
        d.erase(std::unique(d.begin(), d.end()), d.end());
        for (const Access &b : steps[j]) list(b.resource).push_back(Seen{static_cast<int>(j), &b});
    }
    return deps;
}

}  // namespace tapestry::schedule
