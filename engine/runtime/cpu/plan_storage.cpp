// Storage and lifetimes (runtime/cpu/program_plan.h): where each tensor lives, the
// arena offsets of the intermediates, and the dependencies between steps that
// follow from both.
#include <algorithm>

#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

Expected<std::monostate, std::string> assign_storage(ProgramPlan &plan, const std::set<int> &fused_away) {
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        TensorPlan &tp = plan.tensors[i];
        switch (tp.tensor->role) {
            case TensorRole::input: tp.storage = Storage::input; break;
            case TensorRole::parameter: tp.storage = Storage::parameter; break;
            case TensorRole::output: tp.storage = Storage::output; break;
            case TensorRole::intermediate:
                tp.storage = fused_away.count(static_cast<int>(i)) ? Storage::none : Storage::arena;
                break;
        }
    }
    for (size_t s = 0; s < plan.steps.size(); ++s)
        for (const Access &a : plan.steps[s].accesses) {
            TensorPlan &tp = plan.tensors[static_cast<size_t>(a.tensor)];
            if (tp.first_step < 0) tp.first_step = static_cast<int>(s);
            tp.last_step = static_cast<int>(s);
            if (tp.storage == Storage::arena && !a.write && tp.first_step == static_cast<int>(s)) {
                // Read before any step writes it.
                bool written = false;
                for (const Access &b : plan.steps[s].accesses) written = written || (b.tensor == a.tensor && b.write);
                if (!written)
                    return unexpected("tensor " + quoted(tp.tensor->id.value) +
                                      " has no value: it is an intermediate that no operation writes before " +
                                      quoted(plan.steps[s].op) + " reads it");
            }
        }
    return std::monostate{};
}

// Greedy interval allocation: largest first, each at the lowest offset that does
// not collide with an already placed tensor whose lifetime overlaps.
void plan_buffers(ProgramPlan &plan) {
    std::vector<TensorPlan> &tensors = plan.tensors;
    std::vector<int> arena;
    for (size_t i = 0; i < tensors.size(); ++i)
        if (tensors[i].storage == Storage::arena && tensors[i].first_step >= 0) arena.push_back(static_cast<int>(i));
    std::stable_sort(arena.begin(), arena.end(), [&](int a, int b) {
        return tensors[static_cast<size_t>(a)].bytes > tensors[static_cast<size_t>(b)].bytes;
    });
    std::vector<int> placed;
    std::size_t total = 0;
    for (int i : arena) {
        TensorPlan &t = tensors[static_cast<size_t>(i)];
        std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) of live neighbours
        for (int j : placed) {
            const TensorPlan &u = tensors[static_cast<size_t>(j)];
            if (u.first_step <= t.last_step && t.first_step <= u.last_step)
                busy.emplace_back(u.arena_offset, arena_add(u.arena_offset, align_up(u.bytes)));
        }
        std::sort(busy.begin(), busy.end());
        std::size_t offset = 0;
        const std::size_t need = align_up(t.bytes);
        for (const auto &[b, e] : busy) {
            if (arena_add(offset, need) <= b) break;
            offset = std::max(offset, e);
        }
        t.arena_offset = offset;
        total = std::max(total, arena_add(offset, need));
        placed.push_back(i);
    }
    plan.arena_bytes = total;
}

// Step j waits for an earlier step i when they touch intersecting boxes of one
// tensor (or overlapping arena bytes of two tensors) and one of them writes; two
// accesses to slots of one ring conflict when the slots are the same.
void plan_dependencies(ProgramPlan &plan) {
    auto arena_overlap = [&](int a, int b) {
        const TensorPlan &x = plan.tensors[static_cast<size_t>(a)];
        const TensorPlan &y = plan.tensors[static_cast<size_t>(b)];
        if (x.storage != Storage::arena || y.storage != Storage::arena) return false;
        return x.arena_offset < arena_add(y.arena_offset, align_up(y.bytes)) &&
               y.arena_offset < arena_add(x.arena_offset, align_up(x.bytes));
    };
    auto conflict = [&](const Step &earlier, const Step &later) {
        for (const Access &a : earlier.accesses)
            for (const Access &b : later.accesses) {
                if (!a.write && !b.write) continue;
                const bool same = a.tensor == b.tensor;
                if (same && a.slot >= 0 && b.slot >= 0 ? a.slot == b.slot
                    : same                             ? a.range.intersects(b.range) || a.range.rank() == 0
                                                       : arena_overlap(a.tensor, b.tensor))
                    return true;
            }
        return false;
    };
    for (size_t j = 0; j < plan.steps.size(); ++j)
        for (size_t i = 0; i < j; ++i)
            if (conflict(plan.steps[i], plan.steps[j])) {
                plan.steps[i].dependents.push_back(static_cast<int>(j));
                ++plan.steps[j].dependencies;
            }
}

}  // namespace tapestry::cpu
