// Storage and lifetimes (runtime/cpu/program_plan.h): where each tensor lives, the
// arena offsets of the intermediates, and the dependencies between steps that
// follow from both.
#include <algorithm>

#include "runtime/cpu/program_plan.h"
#include "schedule/arena.h"

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

// Arena offsets by lifetime (schedule/arena.h, shared with engine/plan).
void plan_buffers(ProgramPlan &plan) {
    std::vector<int> arena;
    std::vector<schedule::Interval> intervals;
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        const TensorPlan &t = plan.tensors[i];
        if (t.storage != Storage::arena || t.first_step < 0) continue;
        arena.push_back(static_cast<int>(i));
        intervals.push_back(schedule::Interval{t.bytes, t.first_step, t.last_step});
    }
    const schedule::Packing packing = schedule::pack_intervals(intervals);
    for (size_t k = 0; k < arena.size(); ++k) plan.tensors[static_cast<size_t>(arena[k])].arena_offset = packing.offsets[k];
    plan.arena_bytes = packing.total;
}

// Step j waits for an earlier step i when they touch intersecting boxes of one
// tensor (or overlapping arena bytes of two tensors) and one of them writes; two
// accesses to slots of one ring conflict when the slots are the same
// (schedule::conflict_dependencies).
void plan_dependencies(ProgramPlan &plan) {
    std::vector<std::vector<int>> aliases(plan.tensors.size());
    std::vector<int> arena;
    for (size_t i = 0; i < plan.tensors.size(); ++i)
        if (plan.tensors[i].storage == Storage::arena) arena.push_back(static_cast<int>(i));
    for (size_t x = 0; x < arena.size(); ++x)
        for (size_t y = x + 1; y < arena.size(); ++y) {
            const TensorPlan &a = plan.tensors[static_cast<size_t>(arena[x])];
            const TensorPlan &b = plan.tensors[static_cast<size_t>(arena[y])];
            if (schedule::bytes_overlap(a.arena_offset, a.bytes, b.arena_offset, b.bytes)) {
                aliases[static_cast<size_t>(arena[x])].push_back(arena[y]);
                aliases[static_cast<size_t>(arena[y])].push_back(arena[x]);
            }
        }
    std::vector<std::vector<schedule::Access>> accesses(plan.steps.size());
    for (size_t s = 0; s < plan.steps.size(); ++s)
        for (const Access &a : plan.steps[s].accesses)
            accesses[s].push_back(schedule::Access{a.tensor, &a.range, a.write, a.slot});
    const std::vector<std::vector<int>> deps = schedule::conflict_dependencies(accesses, aliases);
    for (size_t j = 0; j < plan.steps.size(); ++j)
        for (int i : deps[j]) {
            plan.steps[static_cast<size_t>(i)].dependents.push_back(static_cast<int>(j));
            ++plan.steps[j].dependencies;
        }
}

}  // namespace tapestry::cpu
