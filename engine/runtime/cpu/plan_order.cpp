// The depth-first tile order (runtime/cpu/program_plan.h): tiled runs go tile by
// tile, so that the ready step with the lowest index (the workers' pick) continues
// a tile rather than starting the next op, and their own intermediates shrink to
// rings of a few tiles that stay in cache.
#include <algorithm>
#include <tuple>

#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

namespace {

// The step order with each run of consecutive tiled steps sorted by (tile, op).
std::vector<size_t> depth_first_order(const std::vector<Step> &steps) {
    std::vector<size_t> order(steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::vector<std::tuple<size_t, int, int>> key(steps.size());
    size_t run_start = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        const Step &st = steps[i];
        const bool continues = i > 0 && st.tile >= 0 && steps[i - 1].tile >= 0 && steps[i - 1].tiles == st.tiles;
        if (!continues) run_start = i;
        key[i] = st.tile >= 0 ? std::make_tuple(run_start, st.tile, st.op_order) : std::make_tuple(i, 0, st.op_order);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
    return order;
}

// Whether every conflict between two steps still has the earlier op first.
bool keeps_dependency_order(const std::vector<Step> &steps, const std::vector<size_t> &order) {
    for (size_t j = 0; j < order.size(); ++j)
        for (size_t i = 0; i < j; ++i) {
            const Step &a = steps[order[i]], &b = steps[order[j]];
            if (a.op_order <= b.op_order) continue;
            for (const Access &x : a.accesses)
                for (const Access &y : b.accesses)
                    if ((x.write || y.write) && x.tensor == y.tensor &&
                        (x.range.intersects(y.range) || x.range.rank() == 0))
                        return false;
        }
    return true;
}

// The tensors whose every access is by a tiled step, of an intermediate that is
// stored (not fused away) and spans its steps' whole batch (index dim 0).
std::vector<int> tile_private_candidates(const ProgramPlan &plan, const std::set<int> &fused_away) {
    std::map<int, bool> ok;
    for (const Step &st : plan.steps)
        for (const Access &a : st.accesses) {
            auto [it, fresh] = ok.emplace(a.tensor, true);
            (void)fresh;
            const TensorPlan &tp = plan.tensors[static_cast<size_t>(a.tensor)];
            if (st.tile < 0 || tp.tensor->role != TensorRole::intermediate || fused_away.count(a.tensor) ||
                tp.tensor->range.rank() == 0 || tp.tensor->range.extent(0) != st.space_rows)
                it->second = false;
        }
    std::vector<int> out;
    for (const auto &[ti, good] : ok)
        if (good) out.push_back(ti);
    return out;
}

// Turns tensor `ti` into a ring of tile slots when one run alone accesses it and
// every access is its step's tile rows.
void make_ring(ProgramPlan &plan, int ti, int threads) {
    const Coord t0 = plan.tensors[static_cast<size_t>(ti)].tensor->range.start()[0];
    int run = -1, tiles = 0;
    std::int64_t rows = 0;
    for (const Step &st : plan.steps)
        for (const Access &a : st.accesses) {
            if (a.tensor != ti) continue;
            if (run < 0) {
                run = st.run;
                tiles = st.tiles;
            }
            if (st.run != run || st.tiles != tiles || a.range.start()[0] - t0 != st.tile_lo - st.space_lo) return;
            rows = std::max<std::int64_t>(rows, a.range.extent(0));
        }
    if (run < 0) return;
    TensorPlan &tp = plan.tensors[static_cast<size_t>(ti)];
    const std::int64_t stride0 = tp.strides.at(0);
    tp.slots = std::min(tiles, 2 * threads);
    const std::int64_t slot_elems = rows * stride0;
    tp.bytes = static_cast<std::size_t>(tp.slots * slot_elems) * dtype_bytes(tp.tensor->dtype);
    for (Step &st : plan.steps) {
        const int slot = st.tile % std::max(tp.slots, 1);
        for (Access &a : st.accesses)
            if (a.tensor == ti) a.slot = slot;
        for (auto *views : {&st.inputs, &st.outputs})
            for (StepView &v : *views)
                if (v.tensor == ti) v.offset += slot * slot_elems - (st.tile_lo - st.space_lo) * stride0;
    }
}

}  // namespace

void order_tiles_depth_first(ProgramPlan &plan, const std::set<int> &fused_away, int threads) {
    const std::vector<size_t> order = depth_first_order(plan.steps);
    if (!keeps_dependency_order(plan.steps, order)) return;
    std::vector<Step> sorted;
    sorted.reserve(plan.steps.size());
    for (size_t i : order) sorted.push_back(std::move(plan.steps[i]));
    plan.steps = std::move(sorted);
    plan_tile_slots(plan, fused_away, threads);
}

// A tiled run's own intermediates (written and read only by its tiles, the
// whole batch of the tensor) need not exist whole: each is a ring of slots of
// one tile, tile k in slot k % slots, and a tile's writer waits for the readers
// of the tile that last used its slot (plan_dependencies: same slot, conflict).
void plan_tile_slots(ProgramPlan &plan, const std::set<int> &fused_away, int threads) {
    for (int ti : tile_private_candidates(plan, fused_away)) make_ring(plan, ti, threads);
}

}  // namespace tapestry::cpu
