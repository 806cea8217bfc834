// Sharding propagation. The cut points of a sharded op's split dims travel through
// the projections of a shared tensor: index dim → tensor dim (a unit row of the
// sharded op's projection) → index dim of the neighbour (a unit row of its
// projection). Only one-to-one maps carry a cut: a window, a stride, a clipped
// operand or a dim that mixes several index dims would make a neighbour shard read
// from several shards, which is data movement, not propagation.
#include "passes/propagate.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>

#include "graph/resolve.h"

namespace tapestry {
namespace {

using Cuts = std::vector<std::vector<Coord>>;  // per index dim, sorted interior cut points

// The shards a grid of cuts makes, row-major (dim 0 outermost).
std::vector<ZRange> grid_of(const ZRange &space, const Cuts &cuts) {
    std::vector<ZRange> out{space};
    for (int d = 0; d < space.rank(); ++d) {
        std::vector<ZRange> next;
        for (const ZRange &r : out)
            for (const ZRange &p : r.split_at(d, cuts[static_cast<size_t>(d)])) next.push_back(p);
        out = std::move(next);
    }
    return out;
}

bool range_less(const ZRange &a, const ZRange &b) {
    if (a.start() != b.start()) return a.start() < b.start();
    return a.end() < b.end();
}

// The cut points of an op whose shards are exactly a grid over its index space.
std::optional<Cuts> grid_cuts(const Operation &op, const ZRange &space) {
    if (op.shards.size() < 2) return std::nullopt;
    const int rank = space.rank();
    std::vector<std::set<Coord>> sets(static_cast<size_t>(rank));
    std::vector<ZRange> shards;
    for (const Shard &s : op.shards) {
        if (s.index.rank() != rank || s.index.empty()) return std::nullopt;
        for (int d = 0; d < rank; ++d)
            if (s.index.start()[d] > space.start()[d] && s.index.start()[d] < space.end()[d])
                sets[static_cast<size_t>(d)].insert(s.index.start()[d]);
        shards.push_back(s.index);
    }
    Cuts cuts;
    for (const auto &s : sets) cuts.emplace_back(s.begin(), s.end());
    std::vector<ZRange> grid = grid_of(space, cuts);
    if (grid.size() != shards.size()) return std::nullopt;
    std::sort(grid.begin(), grid.end(), range_less);
    std::sort(shards.begin(), shards.end(), range_less);
    if (grid != shards) return std::nullopt;
    return cuts;
}

// The tensor dim that index dim `col` alone reaches with coefficient 1 and window
// 1 (its row has no other entry, its column no other row), or -1.
int unit_row_of_column(const IndexProjection &p, int col) {
    const ZMatrix &a = p.map().matrix();
    int found = -1;
    for (int r = 0; r < a.rows(); ++r) {
        if (a.at(r, col) == 0) continue;
        if (found >= 0 || a.at(r, col) != 1) return -1;
        found = r;
    }
    if (found < 0 || p.window()[found] != 1) return -1;
    for (int c = 0; c < a.cols(); ++c)
        if (c != col && a.at(found, c) != 0) return -1;
    return found;
}

// The index dim that alone reaches tensor dim `row` one-to-one, or -1.
int unit_column_of_row(const IndexProjection &p, int row) {
    const ZMatrix &a = p.map().matrix();
    int found = -1;
    for (int c = 0; c < a.cols(); ++c) {
        if (a.at(row, c) == 0) continue;
        if (found >= 0) return -1;
        found = c;
    }
    if (found < 0) return -1;
    return unit_row_of_column(p, found) == row ? found : -1;
}

// Projections of the operands of `bindings` that select tensor `t`.
std::vector<const OperandProjection *> projections_of(const std::vector<PortBinding> &bindings,
                                                      const std::vector<PortProjections> &ports, const TensorId &t) {
    std::vector<const OperandProjection *> out;
    for (const PortBinding &b : bindings)
        for (const PortProjections &pp : ports)
            if (pp.port == b.name)
                for (size_t i = 0; i < b.selections.size() && i < pp.operands.size(); ++i)
                    if (b.selections[i].tensor == t) out.push_back(&pp.operands[i]);
    return out;
}

// The cuts of the neighbour's index space that `cuts` of the sharded op induce
// through one pair of projections of the shared tensor, or nullopt.
std::optional<Cuts> map_cuts(const Cuts &cuts, const OperandProjection &from, const Signature &to_sig,
                             const OperandProjection &to) {
    if (from.clipped || to.clipped) return std::nullopt;
    const ZRange &space = to_sig.index_space;
    Cuts out(static_cast<size_t>(space.rank()));
    bool any = false;
    for (size_t d = 0; d < cuts.size(); ++d) {
        if (cuts[d].empty()) continue;
        const int t = unit_row_of_column(from.projection, static_cast<int>(d));
        if (t < 0) return std::nullopt;
        const int e = unit_column_of_row(to.projection, t);
        if (e < 0 || to_sig.is_reduction_dim(e)) return std::nullopt;
        std::vector<Coord> &mine = out[static_cast<size_t>(e)];
        for (Coord c : cuts[d]) {
            // index c of the sharded op → tensor element c + b_from → neighbour index − b_to
            const Coord n = c + from.projection.map().offset()[t] - to.projection.map().offset()[t];
            if (n > space.start()[e] && n < space.end()[e]) mine.push_back(n);
        }
        std::sort(mine.begin(), mine.end());
        mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
        any = any || !mine.empty();
    }
    if (!any) return std::nullopt;
    return out;
}

}  // namespace

std::vector<OpId> propagate_shardings(RecordingRewriter &rw, const SignatureSource &lib) {
    std::vector<OpId> given;
    std::deque<OpId> queue;
    for (const OpPtr &op : rw.graph().operations())
        if (!op->shards.empty()) queue.push_back(op->id);

    // Tries to shard the unsharded `next` like `from` across tensor `t`.
    auto try_neighbour = [&](const Operation &from, const Signature &from_sig, const Cuts &cuts, const TensorId &t,
                             const OpId &next_id, bool forward) {
        const OpPtr next = rw.graph().op_ptr(next_id);
        if (!next || !next->shards.empty()) return;
        auto derived = resolve(rw.graph(), *next, lib);
        if (!derived) return;
        const Signature &sig = derived->signature;
        const auto from_ps = forward ? projections_of(from.outputs, from_sig.outputs, t)
                                     : projections_of(from.inputs, from_sig.inputs, t);
        const auto to_ps =
            forward ? projections_of(next->inputs, sig.inputs, t) : projections_of(next->outputs, sig.outputs, t);
        for (const OperandProjection *fp : from_ps)
            for (const OperandProjection *tp : to_ps) {
                auto mapped = map_cuts(cuts, *fp, sig, *tp);
                if (!mapped) continue;
                Operation sharded = *next;
                const std::vector<ZRange> ranges = grid_of(sig.index_space, *mapped);
                for (size_t k = 0; k < ranges.size(); ++k)
                    sharded.shards.push_back(
                        Shard{ShardId(next->id.value + "/" + std::to_string(k)), ranges[k], "", {}, {}});
                rw.put_op(std::move(sharded));
                given.push_back(next->id);
                queue.push_back(next->id);
                return;
            }
    };

    while (!queue.empty()) {
        const OpPtr op = rw.graph().op_ptr(queue.front());
        queue.pop_front();
        if (!op) continue;
        auto derived = resolve(rw.graph(), *op, lib);
        if (!derived) continue;
        const Signature &sig = derived->signature;
        const auto cuts = grid_cuts(*op, sig.index_space);
        if (!cuts) continue;
        std::set<TensorId> seen;
        for (const TensorId &t : op->output_tensors())
            if (seen.insert(t).second)
                for (const OpId &c : rw.graph().consumers(t)) try_neighbour(*op, sig, *cuts, t, c, true);
        seen.clear();
        for (const TensorId &t : op->input_tensors())
            if (seen.insert(t).second)
                for (const OpId &p : rw.graph().producers(t)) try_neighbour(*op, sig, *cuts, t, p, false);
    }
    return given;
}

}  // namespace tapestry
