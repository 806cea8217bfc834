// Placement: devices for every piece, then the moves those devices need.
#include "passes/place.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

#include "common/check.h"
#include "graph/delta.h"
#include "graph/order.h"
#include "graph/resolve.h"
#include "graph/value_hash.h"
#include "ops/library.h"
#include "passes/movement.h"

namespace tapestry {
namespace {

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else if (c != ' ') {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

}  // namespace

double op_flops(const Graph &g, const Operation &op, const OpLibrary &lib) {
    const OpDef *def = lib.find(op.kind);
    auto types = operand_types(g, op);
    if (!def || !types) return 1;
    auto d = lib.derive(op.kind, op.params, *types);
    if (!d) return 1;
    return std::max(1.0, lib.cost(*def, op.params, *d, *types, d->signature.index_space).flops);
}

std::vector<int> balanced_stages(const std::vector<double> &flops, int stages) {
    double total = 0;
    for (double f : flops) total += f;
    std::vector<int> out;
    double before = 0;
    for (double f : flops) {
        const double mid = before + f / 2;
        before += f;
        out.push_back(total > 0 ? std::min(stages - 1, static_cast<int>(mid / total * stages)) : 0);
    }
    return out;
}

Expected<PlacementOptions, std::string> parse_placement(const std::string &rule, const std::vector<std::string> &maps,
                                                        const std::vector<std::string> &devices) {
    PlacementOptions o;
    o.devices = devices;
    std::vector<std::string> parts = split(rule.empty() ? "shard" : rule, ';');
    std::vector<std::string> all_maps = maps;
    const std::string head = parts.front();
    for (size_t i = 1; i < parts.size(); ++i)
        if (!parts[i].empty()) all_maps.push_back(parts[i]);
    const std::string where = "placement '" + rule + "': ";
    if (head == "shard" || head.empty()) {
        o.rule = PlacementRule::by_shard;
    } else if (head == "round-robin") {
        o.rule = PlacementRule::round_robin;
    } else if (head == "spread") {
        o.rule = PlacementRule::spread;
    } else if (head.rfind("pipeline", 0) == 0) {
        o.rule = PlacementRule::pipeline;
        const size_t at = head.find('@');
        const std::string stages = head.substr(8, at == std::string::npos ? std::string::npos : at - 8);
        if (!stages.empty()) {
            if (stages[0] != ':')
                return unexpected(where + "unknown rule (known: shard, round-robin, spread, pipeline[:stages][@op,op…])");
            const std::string n = stages.substr(1);
            int v = 0;
            auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
            if (ec != std::errc() || p != n.data() + n.size() || v < 1)
                return unexpected(where + "'" + n + "' is not a stage count (a positive integer)");
            o.stages = v;
        }
        if (at != std::string::npos)
            for (const std::string &cut : split(head.substr(at + 1), ',')) {
                if (cut.empty()) return unexpected(where + "an empty cut (expected pipeline:S@op,op, e.g. pipeline:2@fc2)");
                o.cuts.emplace_back(cut);
            }
    } else {
        return unexpected(where + "unknown rule '" + head + "' (known: shard, round-robin, spread, pipeline[:stages][@op,op…])");
    }
    for (const std::string &m : all_maps) {
        const size_t eq = m.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
            return unexpected("placement map '" + m + "': expected op=device[,device…], e.g. fc1=0:0,0:1");
        o.ops[OpId(m.substr(0, eq))] = split(m.substr(eq + 1), ',');
    }
    o.text = rule.empty() ? "shard" : rule;
    for (const std::string &m : maps) o.text += ";" + m;
    return o;
}

struct PlacementTables {
    std::vector<std::string> devices;  // the list the entries are for
    // A placed node: the node and its pieces' devices (indices into `devices`).
    struct Key {
        const Operation *op;
        std::vector<int> devices;
    };
    struct View {  // a key looked up without a copy of its devices
        const Operation *op;
        std::span<const int> devices;
        std::size_t hash() const {
            std::uint64_t h = value_hash::kSeed;
            value_hash::mix(h, &op, sizeof op);
            for (int d : devices) value_hash::mix(h, static_cast<std::int64_t>(d));
            return h;
        }
        bool operator==(const View &o) const {
            return op == o.op && std::equal(devices.begin(), devices.end(), o.devices.begin(), o.devices.end());
        }
    };
    static View view(const Key &k) { return {k.op, k.devices}; }
    static View view(const View &v) { return v; }
    std::unordered_map<Key, std::pair<OpPtr, OpPtr>, ViewHash<PlacementTables>, ViewEqual<PlacementTables>> placed;  // (the node, placed)
    std::unordered_map<const Operation *, std::pair<OpPtr, double>> flops;  // (the node, its FLOPs)
    std::size_t pieces = 0;  // the entries' nodes' shards (and one per entry)
};

PlacementMemo::PlacementMemo(std::size_t pieces) : NodeMemo(pieces, std::make_shared<PlacementTables>()) {}

Expected<Stage, std::string> place(const Graph &g, const PlacementOptions &options) {
    const SignatureSource &lib = options.library ? *options.library : OpLibrary::standard();
    const std::vector<std::string> &devices = options.devices;
    if (devices.empty()) return unexpected("placement: no devices to place on");
    const std::set<std::string> known(devices.begin(), devices.end());
    for (const auto &[op, devs] : options.ops) {
        if (!g.find_op(op)) return unexpected("placement map for '" + op.value + "': no such operation");
        for (const std::string &d : devs)
            if (!known.count(d))
                return unexpected("placement map for '" + op.value + "': device '" + d + "' is not one of the " +
                                  std::to_string(devices.size()) + " devices (" + devices.front() + " … " +
                                  devices.back() + ")");
    }
    PlacementMemo *memo = options.memo;
    if (memo && (memo->tables().devices != devices || memo->tables().pieces > memo->bound())) {
        memo->start_over(std::make_shared<PlacementTables>());
        memo->tables().devices = devices;
    }
    const DependencyOrder order = dependency_order(g);
    if (!order.cyclic.empty()) return unexpected("placement: the graph has a cycle through '" + order.cyclic.front()->id.value + "'");
    std::vector<const Operation *> ops;
    for (const Operation *op : order.order)
        if (op->kind != "move") ops.push_back(op);

    // Pipeline: the group of devices each op's stage owns.
    const int n = static_cast<int>(devices.size());
    std::map<const Operation *, std::pair<int, int>> group;  // op → [first device, end)
    if (!options.cuts.empty() && options.rule != PlacementRule::pipeline)
        return unexpected("placement '" + options.text + "': cuts are for the pipeline rule");
    if (options.rule == PlacementRule::pipeline) {
        const int stages = options.stages > 0       ? options.stages
                           : !options.cuts.empty() ? static_cast<int>(options.cuts.size()) + 1
                                                   : n;
        const std::string rule_text = "placement 'pipeline:" + std::to_string(stages) + "': ";
        if (stages > n)
            return unexpected(rule_text + "more stages than the " + std::to_string(n) + " devices");
        if (!options.cuts.empty()) {
            if (static_cast<int>(options.cuts.size()) != stages - 1)
                return unexpected(rule_text + std::to_string(options.cuts.size()) + " cuts make " +
                                  std::to_string(options.cuts.size() + 1) + " stages");
            // Stage s + 1 begins at cut s: each cut after the one before it, none at the first op.
            size_t last = 0;
            for (const OpId &cut : options.cuts) {
                const auto pos = std::find_if(ops.begin(), ops.end(), [&](const Operation *op) { return op->id == cut; });
                if (pos == ops.end())
                    return unexpected(rule_text + "cut '" + cut.value + "' is not an operation placement places" +
                                      (g.find_op(cut) ? " (it is a move)" : ""));
                const size_t i = static_cast<size_t>(pos - ops.begin());
                if (i == 0) return unexpected(rule_text + "cut '" + cut.value + "' is the first operation: its stage before would be empty");
                if (i <= last)
                    return unexpected(rule_text + "cut '" + cut.value + "' does not come after the cut before it in dependency order");
                last = i;
            }
            int s = 0;
            for (size_t i = 0; i < ops.size(); ++i) {
                if (static_cast<size_t>(s) < options.cuts.size() && ops[i]->id == options.cuts[static_cast<size_t>(s)]) ++s;
                group[ops[i]] = {s * n / stages, (s + 1) * n / stages};
            }
        } else {
            const OpLibrary *oplib = dynamic_cast<const OpLibrary *>(&lib);
            const OpLibrary &costs = oplib ? *oplib : OpLibrary::standard();
            std::vector<double> flops;
            for (const Operation *op : ops) {
                if (!memo) {
                    flops.push_back(op_flops(g, *op, costs));
                    continue;
                }
                auto &slot = memo->tables().flops[op];
                if (!slot.first) {
                    slot = {g.op_ptr(op->id), op_flops(g, *op, costs)};
                    memo->tables().pieces += 1 + op->shards.size();
                }
                flops.push_back(slot.second);
            }
            const std::vector<int> stage_of = balanced_stages(flops, stages);
            for (size_t i = 0; i < ops.size(); ++i)
                group[ops[i]] = {stage_of[i] * n / stages, (stage_of[i] + 1) * n / stages};
        }
    }

    Stage stage;
    stage.pass = "place";
    stage.options = options.text.empty() ? "shard" : options.text;
    stage.input = g;
    Graph out = g;
    RecordingRewriter rw(out);
    std::unordered_map<std::string, int> index_of;
    for (int d = 0; d < n; ++d) index_of.emplace(devices[static_cast<size_t>(d)], d);
    std::vector<int> pieces_per_device(static_cast<size_t>(n), 0);
    // `op` with piece k on device on[k] (an unsharded op made one shard): from the
    // memo, or made (and kept); `op` itself when that changes nothing.
    auto placed_as = [&](const Graph &in, const OpPtr &op, const std::vector<int> &on) -> Expected<OpPtr, std::string> {
        if (memo) {
            const auto hit = memo->tables().placed.find(PlacementTables::View{op.get(), on});
            if (hit != memo->tables().placed.end()) {
                memo->note(true);
                return hit->second.second;
            }
            memo->note(false);
        }
        Operation placed_op = *op;
        if (placed_op.shards.empty()) {
            auto d = resolve(in, *op, lib);
            if (!d) return unexpected("placement: '" + op->id.value + "' does not resolve: " + d.error().message);
            placed_op.shards.push_back(Shard{ShardId(op->id.value + "/0"), d->signature.index_space, "", {}, {}});
        }
        for (size_t k = 0; k < placed_op.shards.size(); ++k)
            placed_op.shards[k].device = devices[static_cast<size_t>(on[k])];
        OpPtr made = placed_op == *op ? op : std::make_shared<const Operation>(std::move(placed_op));
        if (memo) {
            memo->tables().pieces += 1 + op->shards.size() + made->shards.size();
            memo->tables().placed.emplace(PlacementTables::Key{op.get(), on}, std::make_pair(op, made));
        }
        return made;
    };
    int next = 0;  // round-robin
    std::vector<int> on;
    for (const Operation *op : ops) {
        const size_t pieces = std::max<size_t>(1, op->shards.size());
        const auto explicit_map = options.ops.find(op->id);
        if (explicit_map != options.ops.end() && explicit_map->second.size() != 1 &&
            explicit_map->second.size() != pieces)
            return unexpected("placement map for '" + op->id.value + "': " +
                              std::to_string(explicit_map->second.size()) + " devices for " +
                              std::to_string(pieces) + " shards (give one, or one per shard)");
        on.assign(pieces, 0);
        for (size_t k = 0; k < pieces; ++k) {
            int device = 0;
            if (explicit_map != options.ops.end()) {
                device = index_of.at(explicit_map->second[explicit_map->second.size() == 1 ? 0 : k]);
            } else if (options.rule == PlacementRule::round_robin) {
                device = next++ % n;
            } else if (options.rule == PlacementRule::pipeline) {
                const auto [lo, hi] = group.at(op);
                device = lo + static_cast<int>(k) % std::max(1, hi - lo);
            } else if (options.rule == PlacementRule::spread) {
                const size_t stride = pieces < static_cast<size_t>(n) ? static_cast<size_t>(n) / pieces : 1;
                device = static_cast<int>((k * stride) % static_cast<size_t>(n));
            } else {
                device = static_cast<int>(k % static_cast<size_t>(n));
            }
            on[k] = device;
            ++pieces_per_device[static_cast<size_t>(device)];
        }
        auto placed_op = placed_as(g, g.op_ptr(op->id), on);
        if (!placed_op) return unexpected(placed_op.error());
        if (placed_op->get() != op) rw.put_changed_op(std::move(placed_op).value());  // made to differ
    }
    // Moves sit where the pieces of their producer sit (move shard k carries what
    // producer piece k wrote). Placing ops changed no op's outputs: producers once.
    std::unordered_map<TensorId, std::vector<const Operation *>> producers_of;
    for (const OpPtr &op : rw.graph().operations())
        op->for_each_output_tensor([&](const TensorId &t) {
            std::vector<const Operation *> &v = producers_of[t];
            if (v.empty() || v.back() != op.get()) v.push_back(op.get());
        });
    std::vector<OpPtr> moves;
    for (const OpPtr &mv : rw.graph().operations())
        if (mv->kind == "move") moves.push_back(mv);
    for (const OpPtr &mv : moves) {
        const PortBinding *x = mv->input("x");
        if (!x || x->selections.size() != 1) continue;
        const auto writers = producers_of.find(x->selections[0].tensor);
        const Operation *producer =
            writers != producers_of.end() && writers->second.size() == 1 ? writers->second.front() : nullptr;
        const size_t pieces = std::max<size_t>(1, mv->shards.size());
        on.assign(pieces, 0);
        for (size_t k = 0; k < pieces; ++k) {
            std::string device = devices.front();
            if (producer && !producer->shards.empty())
                device = producer->shards[k < producer->shards.size() ? k : 0].device;
            const auto at = index_of.find(device.empty() ? devices.front() : device);
            TAPESTRY_CHECK(at != index_of.end(), "place: a move's producer sits on a device placement did not give it");
            on[k] = at->second;
        }
        auto placed_move = placed_as(rw.graph(), mv, on);
        if (!placed_move) return unexpected(placed_move.error());
        if (placed_move->get() != mv.get()) rw.put_changed_op(std::move(placed_move).value());
    }
    const auto used = std::count_if(pieces_per_device.begin(), pieces_per_device.end(), [](int k) { return k > 0; });
    std::string rule = options.rule == PlacementRule::round_robin ? "round-robin"
                       : options.rule == PlacementRule::pipeline  ? "pipeline"
                       : options.rule == PlacementRule::spread    ? "spread: shard k of P → device k·n/P"
                                                                  : "shard k → device k";
    for (size_t i = 0; i < options.cuts.size(); ++i) rule += (i ? ", " : " cut at ") + options.cuts[i].value;
    stage.summary = "placed " + std::to_string(ops.size()) + " ops on " + std::to_string(used) +
                    " of " + std::to_string(n) + " devices (" + rule +
                    (options.ops.empty() ? "" : ", " + std::to_string(options.ops.size()) + " explicit") + ")";
    if (options.movement) {
        const std::vector<OpId> inserted = insert_data_movement(rw, lib, options.movement_memo);
        if (!inserted.empty()) stage.summary += "; " + std::to_string(inserted.size()) + " moves inserted";
        if (options.describe_movement) stage.summary += "; " + movement_summary(data_movement(rw.graph(), lib));
    }
    stage.diff = rw.take();
    stage.graph = std::move(out);
    if (options.certify) stage.certificate = certify(g, stage.graph, *options.certify);
    return stage;
}

}  // namespace tapestry
