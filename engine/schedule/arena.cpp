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
                                                            : a.box.intersects(b.box) || a.box.rank() == 0;
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
