// Batch tiling (runtime/cpu/program_plan.h, CpuOptions::tile_bytes): runs of
// consecutive unsharded steps (in dependency order) whose index dim 0 is the batch
// of every operand but the parameters — each tile of it reads and writes the same
// rows of dim 0 — and whose parameters are small, cut into tiles of the batch so
// that a tile's intermediates stay in cache from one step to the next.
#include <algorithm>

#include "graph/resolve.h"
#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

namespace {

constexpr std::size_t kMaxParamBytes = 1 << 20;  // weights read again by every tile

// A step that could join a tiled run.
struct Candidate {
    const ResolvedOp *op = nullptr;
    Coord batch = 0;
    std::size_t largest = 0;  // bytes of its largest batch-parallel operand
};

// Whether the selections `cut` of the second half of the batch follow the whole
// op's `whole` row for row in dim 0 (parameters: unchanged, their bytes added to
// `param_bytes`), raising c.largest to the largest of them.
bool follows_batch(const Graph &g, const std::vector<TensorSelection> &whole, const std::vector<TensorSelection> &cut,
                   bool outputs, Coord shift, const ZRange &part, Candidate &c, std::size_t &param_bytes) {
    if (whole.size() != cut.size()) return false;
    for (size_t i = 0; i < whole.size(); ++i) {
        const Tensor *t = g.find_tensor(whole[i].tensor);
        if (!t || whole[i].tensor != cut[i].tensor) return false;
        const std::size_t bytes = static_cast<std::size_t>(whole[i].range.size()) * dtype_bytes(t->dtype);
        if (!outputs && t->role == TensorRole::parameter) {
            if (!(cut[i].range == whole[i].range)) return false;
            param_bytes += bytes;
            continue;
        }
        const ZRange &a = whole[i].range, &b = cut[i].range;
        if (a.rank() == 0 || a.rank() != b.rank() || a.extent(0) != c.batch) return false;
        if (b.start()[0] != a.start()[0] + shift || b.extent(0) != part.extent(0)) return false;
        for (int d = 1; d < a.rank(); ++d)
            if (a.start()[d] != b.start()[d] || a.end()[d] != b.end()[d]) return false;
        c.largest = std::max(c.largest, bytes);
    }
    return true;
}

std::optional<Candidate> tile_candidate(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues,
                                        const ResolvedOp &info) {
    if (ops.is_sharded(info) || epilogues.is_folded(info)) return std::nullopt;
    const ZRange &space = info.absolute.signature.index_space;
    if (space.rank() == 0 || space.extent(0) < 2) return std::nullopt;
    if (const EpilogueChain *chain = epilogues.chain_of(info))
        for (const PlannedEpilogue &e : *chain)
            if (e.extra) return std::nullopt;
    const ZRange part = space.split(0, 2)[1];
    const Coord shift = part.start()[0] - space.start()[0];
    const auto whole = derive_shard_selections(g, *info.op, info.absolute.signature, space);
    const auto cut = derive_shard_selections(g, *info.op, info.absolute.signature, part);
    Candidate c{&info, space.extent(0), 0};
    std::size_t param_bytes = 0;
    const auto &in_ports = info.def->input_ports(), &out_ports = info.def->output_ports();
    if (!follows_batch(g, selections_in_port_order(whole.inputs, in_ports),
                       selections_in_port_order(cut.inputs, in_ports), false, shift, part, c, param_bytes) ||
        !follows_batch(g, selections_in_port_order(whole.outputs, out_ports),
                       selections_in_port_order(cut.outputs, out_ports), true, shift, part, c, param_bytes))
        return std::nullopt;
    if (param_bytes > kMaxParamBytes) return std::nullopt;
    return c;
}

// Tiles a run of two or more candidates of one batch, where its tensors do not
// already fit in cache.
void close_run(std::vector<Candidate> &run, const CpuOptions &options, BatchTiles &out) {
    if (run.size() >= 2) {
        std::size_t largest = 0;
        for (const Candidate &c : run) largest = std::max(largest, c.largest);
        const Coord n = run.front().batch;
        if (largest >= 4 * options.tile_bytes) {
            const Coord want = static_cast<Coord>((largest + options.tile_bytes - 1) / options.tile_bytes);
            const Coord k = std::min<Coord>(n, std::max<Coord>(2 * options.threads, want));
            const int id = static_cast<int>(out.run.size());
            for (const Candidate &c : run) {
                out.tiles[c.op] = static_cast<int>(k);
                out.run[c.op] = id;
            }
        }
    }
    run.clear();
}

}  // namespace

BatchTiles plan_batch_tiles(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues,
                            const CpuOptions &options) {
    BatchTiles out;
    std::vector<Candidate> run;
    for (const ResolvedOp &info : ops.ops) {
        if (epilogues.is_folded(info)) continue;
        auto c = tile_candidate(g, ops, epilogues, info);
        if (!c || (!run.empty() && run.front().batch != c->batch)) close_run(run, options, out);
        if (c) run.push_back(*c);
    }
    close_run(run, options, out);
    return out;
}

}  // namespace tapestry::cpu
