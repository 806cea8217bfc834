// The baselines as shard specs and placements (plan/baselines.h).
#include "plan/baselines.h"

#include <algorithm>
#include <map>

#include "graph/order.h"
#include "graph/resolve.h"
#include "ops/library.h"
#include "passes/place.h"
#include "passes/shard.h"

namespace tapestry::plan {
namespace {

ShardSpec spec(const std::string &op, int dim, int count) {
    ShardSpec s;
    s.op = OpId(op);
    s.dim = dim;
    s.count = count;
    s.text = op + ":" + std::to_string(dim) + "=" + std::to_string(count);
    return s;
}

std::vector<const Operation *> compute_ops(const Graph &g) {
    std::vector<const Operation *> out;
    for (const Operation *op : dependency_order(g).order)
        if (op->kind != "move") out.push_back(op);
    return out;
}

Expected<ZRange, std::string> index_space(const Graph &g, const Operation &op) {
    auto d = resolve(g, op, OpLibrary::standard());
    if (!d) return unexpected("'" + op.id.value + "' does not resolve: " + d.error().message);
    return d->signature.index_space;
}

}  // namespace

// The batch split: dim 0 of the first op into `parts`, propagated; then the same
// split stated for every op propagation reached (so that later specs product-split).
Expected<std::vector<ShardSpec>, std::string> batch_specs(const Graph &g, int parts, const std::string &who) {
    const auto ops = compute_ops(g);
    if (ops.empty()) return unexpected(who + ": the graph has no operation");
    auto space = index_space(g, *ops.front());
    if (!space) return unexpected(who + ": " + space.error());
    if (space->rank() == 0 || space->extent(0) < parts)
        return unexpected(who + ": the batch (dim 0 of '" + ops.front()->id.value + "', extent " +
                          std::to_string(space->rank() ? space->extent(0) : 0) + ") cannot be split " +
                          std::to_string(parts) + " ways");
    ShardOptions o;
    o.specs.push_back(spec(ops.front()->id.value, 0, parts));
    o.movement = false;
    auto st = shard(g, o);
    if (!st) return unexpected(who + ": " + st.error());
    std::vector<ShardSpec> out;
    for (const OpPtr &op : st->graph.operations()) {
        if (op->shards.size() != static_cast<size_t>(parts)) continue;
        // The dim its shards differ in.
        for (int d = 0; d < op->shards.front().index.rank(); ++d)
            if (op->shards.front().index.extent(d) != op->shards.back().index.extent(d) ||
                op->shards.front().index.start()[d] != op->shards.back().index.start()[d]) {
                out.push_back(spec(op->id.value, d, parts));
                break;
            }
    }
    return out;
}

// Megatron: linears alternately column- then row-parallel; attention by heads.
Expected<std::vector<ShardSpec>, std::string> tensor_specs(const Graph &g, int parts, const std::string &who) {
    std::vector<ShardSpec> out;
    bool column = true;
    for (const Operation *op : compute_ops(g)) {
        auto space = index_space(g, *op);
        if (!space) return unexpected(who + ": " + space.error());
        const int rank = space->rank();
        if (op->kind == "linear" || op->kind == "matmul") {
            if (column) {
                if (space->extent(rank - 1) >= parts) out.push_back(spec(op->id.value, rank - 1, parts));
            } else {
                out.push_back(spec(op->id.value, rank, parts));  // the contraction: partials + all-reduce
            }
            column = !column;
        } else if (op->kind == "attention" && rank >= 2 && space->extent(1) >= parts) {
            out.push_back(spec(op->id.value, 1, parts));
        }
    }
    if (out.empty()) return unexpected(who + ": the graph has no linear, matmul or attention to split");
    return out;
}

namespace {

Expected<Stage, std::string> shard_stage(const Graph &g, std::vector<ShardSpec> specs, bool certify_it, bool propagate) {
    ShardOptions o;
    o.specs = std::move(specs);
    o.propagate = propagate;
    if (certify_it) o.certify = CertifyOptions{};
    return shard(g, o);
}

// The baseline on a graph without shards.
Expected<std::vector<Stage>, std::string> stages_of_unsharded(const Graph &g, const BaselineOptions &options,
                                                                       const std::string &who, int n) {
    std::vector<Stage> stages;
    PlacementOptions place_options;
    place_options.devices = options.devices;
    if (options.certify) place_options.certify = CertifyOptions{};
    Graph sharded = g;
    auto add_shard = [&](std::vector<ShardSpec> specs, bool propagate) -> Expected<std::monostate, std::string> {
        auto st = shard_stage(sharded, std::move(specs), options.certify, propagate);
        if (!st) return unexpected(who + ": " + st.error());
        sharded = st->graph;
        stages.push_back(std::move(st).value());
        return std::monostate{};
    };
    if (n > 1) switch (options.kind) {
            case Baseline::dp: {
                auto specs = batch_specs(g, n, who);
                if (!specs) return unexpected(specs.error());
                if (auto r = add_shard(std::move(specs).value(), true); !r) return unexpected(r.error());
                break;
            }
            case Baseline::tp: {
                auto specs = tensor_specs(g, n, who);
                if (!specs) return unexpected(specs.error());
                if (auto r = add_shard(std::move(specs).value(), true); !r) return unexpected(r.error());
                break;
            }
            case Baseline::pp: {
                int m = options.micro_batches > 0 ? options.micro_batches : n;
                const auto ops = compute_ops(g);
                if (!ops.empty())
                    if (auto space = index_space(g, *ops.front()); space && space->rank() > 0)
                        m = std::min<int>(m, static_cast<int>(space->extent(0)));
                if (m > 1) {
                    auto specs = batch_specs(g, m, who);
                    if (!specs) return unexpected(specs.error());
                    if (auto r = add_shard(std::move(specs).value(), true); !r) return unexpected(r.error());
                }
                place_options.rule = PlacementRule::pipeline;
                place_options.stages = n;
                place_options.text = "pipeline:" + std::to_string(n) + " micro-batches " + std::to_string(m);
                break;
            }
            case Baseline::dp_tp: {
                int tp = options.tp > 0 ? options.tp : std::min({n, options.devices_per_node, 8});
                if (tp < 1 || n % tp != 0)
                    return unexpected(who + ": the tensor-parallel degree " + std::to_string(tp) + " does not divide " +
                                      std::to_string(n));
                const int dp = n / tp;
                std::vector<ShardSpec> specs;
                if (dp > 1) {
                    auto b = batch_specs(g, dp, who);
                    if (!b) return unexpected(b.error());
                    specs = std::move(b).value();
                }
                if (tp > 1) {
                    auto t = tensor_specs(g, tp, who);
                    if (!t) return unexpected(t.error());
                    specs.insert(specs.end(), t->begin(), t->end());
                }
                if (auto r = add_shard(std::move(specs), false); !r) return unexpected(r.error());
                // Piece → device: dp-major, tp groups on consecutive devices.
                for (const OpPtr &op : sharded.operations()) {
                    if (op->kind == "move" || op->shards.empty()) continue;
                    const int pieces = static_cast<int>(op->shards.size());
                    std::vector<std::string> devs;
                    for (int k = 0; k < pieces; ++k) {
                        int d = k % n;
                        if (pieces == dp && dp != n) d = k * tp;
                        devs.push_back(options.devices[static_cast<size_t>(d)]);
                    }
                    place_options.ops[op->id] = devs;
                }
                place_options.text = "dp " + std::to_string(dp) + " × tp " + std::to_string(tp);
                break;
            }
        }
    auto placed = place(sharded, place_options);
    if (!placed) return unexpected(who + ": " + placed.error());
    stages.push_back(std::move(placed).value());
    return stages;
}

}  // namespace

Expected<Baseline, std::string> parse_baseline(const std::string &text) {
    if (text == "dp") return Baseline::dp;
    if (text == "tp") return Baseline::tp;
    if (text == "pp") return Baseline::pp;
    if (text == "dp×tp" || text == "dpxtp" || text == "dp_tp" || text == "dp*tp") return Baseline::dp_tp;
    return unexpected("unknown baseline '" + text + "' (known: dp, tp, pp, dp×tp)");
}

const char *baseline_name(Baseline b) {
    switch (b) {
        case Baseline::dp: return "dp";
        case Baseline::tp: return "tp";
        case Baseline::pp: return "pp";
        case Baseline::dp_tp: return "dp×tp";
    }
    return "?";
}

Expected<std::vector<Stage>, std::string> baseline_stages(const Graph &g, const BaselineOptions &options) {
    const int n = static_cast<int>(options.devices.size());
    const std::string who = std::string(baseline_name(options.kind)) + " on " + std::to_string(n) + " devices";
    if (n < 1) return unexpected(who + ": no devices");
    // A baseline decides the whole sharding: shards the graph already has are dropped.
    return stages_of_unsharded(without_shards(g), options, who, n);
}

Graph without_shards(const Graph &g) {
    Graph unsharded = g;
    for (const OpPtr &op : g.operations())
        if (!op->shards.empty()) {
            Operation whole = *op;
            whole.shards.clear();
            unsharded.put_op(std::move(whole));
        }
    return unsharded;
}

}  // namespace tapestry::plan
