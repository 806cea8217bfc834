// The search space (see space.h).
#include "search/space.h"

#include <algorithm>
#include <map>

#include "graph/order.h"
#include "graph/resolve.h"
#include "graph/validate.h"
#include "ops/library.h"
#include "passes/monoid_split.h"

namespace tapestry::search {

const char *rule_name(PlacementRule r) {
    switch (r) {
        case PlacementRule::by_shard: return "shard";
        case PlacementRule::round_robin: return "round-robin";
        case PlacementRule::pipeline: return "pipeline";
        case PlacementRule::spread: return "spread";
    }
    return "?";
}

Expected<PlacementRule, std::string> parse_rule_name(const std::string &name) {
    for (PlacementRule r : {PlacementRule::by_shard, PlacementRule::round_robin, PlacementRule::pipeline,
                            PlacementRule::spread})
        if (name == rule_name(r)) return r;
    return unexpected("unknown placement rule '" + name + "' (known: shard, round-robin, pipeline, spread)");
}

namespace {

// Per op its split ("-", "0=4", "0=2x1=2"), and its map ("@2") when `maps`.
std::string ops_key(const Candidate &c, bool maps) {
    std::string k;
    for (size_t i = 0; i < c.dim.size(); ++i) {
        if (i) k += ' ';
        k += c.dim[i] < 0 ? std::string("-") : std::to_string(c.dim[i]) + "=" + std::to_string(c.parts[i]);
        if (c.has_second(i)) k += "x" + std::to_string(c.dim2[i]) + "=" + std::to_string(c.parts2[i]);
        if (maps && c.has_map(i)) k += "@" + std::to_string(c.at[i]);
    }
    return k;
}

}  // namespace

std::string Candidate::split_key() const {
    return ops_key(*this, false);
}

std::string Candidate::fusion_key() const {
    if (!fused) return {};
    std::string k = "fuse";
    for (size_t i = 0; i < unfused.size(); ++i) k += (i ? "," : " -") + std::to_string(unfused[i]);
    return k;
}

std::string Candidate::key() const {
    std::string k = ops_key(*this, true);
    k += " | " + std::string(rule_name(rule)) + (rule == PlacementRule::pipeline ? ":" + std::to_string(stages) : std::string());
    for (size_t i = 0; i < cuts.size(); ++i) k += (i ? "," : "@") + std::to_string(cuts[i]);
    if (fused) k += " | " + fusion_key();
    if (!substitution.empty()) k += " | substitute:" + substitution;
    return k;
}

void Candidate::clear_second(size_t i) {
    if (i >= dim2.size()) return;
    dim2[i] = -1;
    parts2[i] = 1;
    if (std::all_of(dim2.begin(), dim2.end(), [](int d) { return d < 0; })) {
        dim2.clear();
        parts2.clear();
    }
}

void Candidate::clear_map(size_t i) {
    if (i >= at.size()) return;
    at[i] = -1;
    if (std::all_of(at.begin(), at.end(), [](int d) { return d < 0; })) at.clear();
}

void Candidate::set_map(size_t i, size_t ops, int device) {
    if (at.size() != ops) at.assign(ops, -1);
    at[i] = device;
}

void Candidate::set_second(size_t i, size_t ops, int d, int p) {
    if (dim2.size() != ops) {
        dim2.assign(ops, -1);
        parts2.assign(ops, 1);
    }
    dim2[i] = d;
    parts2[i] = p;
}

Expected<Space, std::string> Space::of(const Graph &g, int devices) {
    if (devices < 1) return unexpected(std::string("the search needs at least one device"));
    const OpLibrary &lib = OpLibrary::standard();
    if (auto valid = require_valid(g, lib); !valid) return unexpected(valid.error());
    const DependencyOrder order = dependency_order(g);
    if (!order.cyclic.empty()) return unexpected("the graph has a cycle through '" + order.cyclic.front()->id.value + "'");
    Space s;
    s.devices_ = devices;
    std::vector<std::string> keys;  // per op, its twin key
    for (const Operation *op : order.order) {
        if (op->kind == "move") continue;
        if (!op->shards.empty())
            return unexpected("'" + op->id.value + "' is already sharded: the search starts from an unsharded graph");
        auto d = resolve(g, *op, lib);
        if (!d) return unexpected("'" + op->id.value + "' does not resolve: " + d.error().message);
        const Signature &sig = d->signature;
        OpChoices c;
        c.op = op->id;
        for (int k = 0; k < sig.index_space.rank(); ++k) {
            if (sig.is_reduction_dim(k) || sig.index_space.extent(k) < 2) continue;
            c.dims.push_back(k);
            c.extents.push_back(sig.index_space.extent(k));
            c.names.push_back("dim " + std::to_string(k));
        }
        for (const Contraction &x : contractions_of(g, *op, lib)) {
            if (x.extent < 2) continue;
            c.dims.push_back(x.dim);
            c.extents.push_back(x.extent);
            c.names.push_back(x.name);
        }
        c.flops = op_flops(g, *op, lib);
        // Its twin key: kind, index space, choices, and the id with its first number
        // made '#' — a number with more of the id after it (a layer's: "b3_c_fc",
        // "h.3.mlp"; not "ln_2", the second of one layer). None: no twins.
        std::string name = op->id.value;
        const size_t at = name.find_first_of("0123456789");
        const size_t end = at == std::string::npos ? at : name.find_first_not_of("0123456789", at);
        if (end != std::string::npos) {
            name.replace(at, end - at, "#");
            std::string key = op->kind + "|" + sig.index_space.to_string() + "|";
            for (size_t k = 0; k < c.dims.size(); ++k)
                key += std::to_string(c.dims[k]) + ":" + std::to_string(c.extents[k]) + ",";
            keys.push_back(key + "|" + name);
        } else {
            keys.push_back("#" + std::to_string(s.ops_.size()));  // unique: no twins
        }
        s.ops_.push_back(std::move(c));
    }
    if (s.ops_.empty()) return unexpected(std::string("the graph has no operation to place"));
    std::map<std::string, std::vector<int>> groups;
    for (size_t i = 0; i < keys.size(); ++i) groups[keys[i]].push_back(static_cast<int>(i));
    s.twins_.resize(s.ops_.size());
    for (const auto &[key, members] : groups) {
        if (members.size() < 2) continue;
        s.has_twins_ = true;
        for (int i : members)
            for (int j : members)
                if (j != i) s.twins_[static_cast<size_t>(i)].push_back(j);
    }
    return s;
}

const std::vector<int> &Space::twins(size_t i) const {
    static const std::vector<int> none;
    return i < twins_.size() ? twins_[i] : none;
}

Candidate Space::unsplit() const {
    Candidate c;
    c.substitution = substitution_;
    c.dim.assign(ops_.size(), -1);
    c.parts.assign(ops_.size(), 1);
    return c;
}

Candidate Space::batch_split(int parts) const {
    Candidate c = unsplit();
    if (parts < 2) return c;
    for (size_t i = 0; i < ops_.size(); ++i) {
        const OpChoices &o = ops_[i];
        if (o.dims.empty() || o.dims.front() != 0 || o.extents.front() < parts) continue;
        c.dim[i] = 0;
        c.parts[i] = parts;
    }
    return c;
}

Candidate Space::uniform_split(size_t choice, int parts) const {
    Candidate c = unsplit();
    if (parts < 2) return c;
    for (size_t i = 0; i < ops_.size(); ++i) {
        const OpChoices &o = ops_[i];
        if (choice >= o.dims.size() || o.extents[choice] < parts || parts > devices_) continue;
        c.dim[i] = o.dims[choice];
        c.parts[i] = parts;
    }
    return c;
}

Expected<Candidate, std::string> Space::from_specs(const std::vector<ShardSpec> &specs, PlacementRule rule,
                                                  int stages) const {
    Candidate c = unsplit();
    c.rule = rule;
    c.stages = rule == PlacementRule::pipeline ? stages : 0;
    for (const ShardSpec &s : specs) {
        const auto at = std::find_if(ops_.begin(), ops_.end(), [&](const OpChoices &o) { return o.op == s.op; });
        if (at == ops_.end()) return unexpected("shard spec '" + s.text + "': '" + s.op.value + "' is not an operation of the search space");
        if (s.count < 2) return unexpected("shard spec '" + s.text + "': only even splits of 2 or more parts are candidates");
        const size_t i = static_cast<size_t>(at - ops_.begin());
        if (c.dim[i] < 0) {
            c.dim[i] = s.dim;
            c.parts[i] = s.count;
        } else if (!c.has_second(i)) {
            c.set_second(i, ops_.size(), s.dim, s.count);
        } else {
            return unexpected("shard spec '" + s.text + "': a candidate splits an operation at most twice");
        }
    }
    if (!valid(c)) return unexpected("the shard specs (" + describe(c) + ") are outside the search space");
    return c;
}

Candidate Space::product_split(int outer, size_t choice, int inner) const {
    Candidate c = batch_split(outer);
    if (inner < 2 || outer * inner > devices_) return c;
    for (size_t i = 0; i < ops_.size(); ++i) {
        const OpChoices &o = ops_[i];
        if (c.dim[i] < 0 || choice >= o.dims.size() || o.dims[choice] == c.dim[i] || o.extents[choice] < inner) continue;
        c.set_second(i, ops_.size(), o.dims[choice], inner);
    }
    return c;
}

std::vector<int> Space::balanced_cuts(int stages) const {
    const int ops = static_cast<int>(ops_.size());
    if (stages < 2 || stages > ops) return {};
    std::vector<double> flops;
    for (const OpChoices &o : ops_) flops.push_back(o.flops);
    const std::vector<int> stage_of = balanced_stages(flops, stages);
    // Each stage begins at the first op past the one before it (stage_of ascends).
    std::vector<int> cuts;
    for (int i = 0; i < ops; ++i)
        while (static_cast<int>(cuts.size()) < stage_of[static_cast<size_t>(i)]) cuts.push_back(i);
    // Stages no op's midpoint fell in: cut them from the end, one op each, keeping order.
    for (int s = static_cast<int>(cuts.size()); s < stages - 1; ++s) cuts.push_back(ops);
    for (int s = stages - 2; s >= 0; --s) {
        const int limit = ops - (stages - 1 - s);  // room for the stages after this one
        int &c = cuts[static_cast<size_t>(s)];
        c = std::min(c, limit);
        if (s + 1 < stages - 1) c = std::min(c, cuts[static_cast<size_t>(s) + 1] - 1);
    }
    for (size_t s = 0; s < cuts.size(); ++s) cuts[s] = std::max(cuts[s], s ? cuts[s - 1] + 1 : 1);
    return cuts;
}

size_t Space::most_choices() const {
    size_t most = 0;
    for (const OpChoices &o : ops_) most = std::max(most, o.dims.size());
    return most;
}

std::vector<ShardSpec> Space::specs(const Candidate &c) const {
    std::vector<ShardSpec> out;
    for (size_t i = 0; i < ops_.size() && i < c.dim.size(); ++i) {
        if (c.dim[i] < 0 || c.parts[i] < 2) continue;
        ShardSpec s;
        s.op = ops_[i].op;
        s.dim = c.dim[i];
        s.count = c.parts[i];
        s.text = s.op.value + ":" + std::to_string(s.dim) + "=" + std::to_string(s.count);
        out.push_back(s);
        if (c.has_second(i)) {
            s.dim = c.dim2[i];
            s.count = c.parts2[i];
            s.text = s.op.value + ":" + std::to_string(s.dim) + "=" + std::to_string(s.count);
            out.push_back(std::move(s));
        }
    }
    return out;
}

namespace {

// "a, b, c" — past `most` names (0: no bound) "a, b, c and 4 more".
std::string listed(const std::vector<std::string> &names, size_t most) {
    std::string out;
    const size_t shown = most == 0 ? names.size() : std::min(names.size(), most);
    for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
    if (shown < names.size()) out += " and " + std::to_string(names.size() - shown) + " more";
    return out;
}

}  // namespace

std::string Space::placement_text(const Candidate &c, size_t most) const {
    std::string out = " · " + std::string(rule_name(c.rule)) +
                      (c.rule == PlacementRule::pipeline ? ":" + std::to_string(c.stages) : std::string());
    std::vector<std::string> cuts, maps, unfused;
    for (int cut : c.cuts)
        if (cut >= 0 && static_cast<size_t>(cut) < ops_.size()) cuts.push_back(ops_[static_cast<size_t>(cut)].op.value);
    if (!cuts.empty()) out += " cut at " + listed(cuts, most);
    for (size_t i = 0; i < ops_.size() && i < c.at.size(); ++i)
        if (c.has_map(i)) maps.push_back(ops_[i].op.value + " from device " + std::to_string(c.at[i]));
    if (!maps.empty()) out += " · " + listed(maps, most);
    if (c.fused) {
        out += " · fused";
        for (int u : c.unfused)
            if (u >= 0 && static_cast<size_t>(u) < ops_.size()) unfused.push_back(ops_[static_cast<size_t>(u)].op.value);
        if (!unfused.empty()) out += " but " + listed(unfused, most);
    }
    if (!c.substitution.empty()) out += " · substituted (" + c.substitution + ")";
    return out;
}

std::string Space::describe(const Candidate &c) const {
    std::string out;
    for (const ShardSpec &s : specs(c)) out += (out.empty() ? "" : " ") + s.text;
    return (out.empty() ? std::string("unsplit") : out) + placement_text(c, 0);
}

std::string Space::summary(const Candidate &c) const {
    // Each split op's choice (":1=8", ":0=2,1=2"), by space index.
    std::vector<std::pair<size_t, std::string>> split;
    for (size_t i = 0; i < ops_.size() && i < c.dim.size(); ++i) {
        if (c.dim[i] < 0 || c.parts[i] < 2) continue;
        std::string how = ":" + std::to_string(c.dim[i]) + "=" + std::to_string(c.parts[i]);
        if (c.has_second(i)) how += "," + std::to_string(c.dim2[i]) + "=" + std::to_string(c.parts2[i]);
        split.emplace_back(i, std::move(how));
    }
    std::string out;
    for (size_t k = 0; k < split.size();) {
        size_t end = k + 1;  // the run: consecutive ops, split alike
        while (end < split.size() && split[end].first == split[end - 1].first + 1 && split[end].second == split[k].second) ++end;
        out += out.empty() ? "" : " ";
        if (end - k >= 3) {
            out += ops_[split[k].first].op.value + " … " + ops_[split[end - 1].first].op.value + split[k].second + " (" +
                   std::to_string(end - k) + " ops)";
        } else {
            for (size_t j = k; j < end; ++j) out += (j > k ? " " : "") + ops_[split[j].first].op.value + split[j].second;
        }
        k = end;
    }
    return (out.empty() ? std::string("unsplit") : out) + placement_text(c, 3);
}

bool Space::valid(const Candidate &c) const {
    if (c.substitution != substitution_) return false;
    if (c.dim.size() != ops_.size() || c.parts.size() != ops_.size()) return false;
    for (size_t i = 0; i < ops_.size(); ++i) {
        if (c.dim[i] < 0) {
            if (c.parts[i] != 1) return false;
            continue;
        }
        const auto at = std::find(ops_[i].dims.begin(), ops_[i].dims.end(), c.dim[i]);
        if (at == ops_[i].dims.end()) return false;
        const Coord extent = ops_[i].extents[static_cast<size_t>(at - ops_[i].dims.begin())];
        if (c.parts[i] < 2 || c.parts[i] > devices_ || c.parts[i] > extent) return false;
    }
    if (!c.dim2.empty() || !c.parts2.empty()) {
        if (c.dim2.size() != ops_.size() || c.parts2.size() != ops_.size()) return false;
        for (size_t i = 0; i < ops_.size(); ++i) {
            if (c.dim2[i] < 0) {
                if (c.parts2[i] != 1) return false;
                continue;
            }
            if (c.dim[i] < 0 || c.dim2[i] == c.dim[i]) return false;
            const auto at = std::find(ops_[i].dims.begin(), ops_[i].dims.end(), c.dim2[i]);
            if (at == ops_[i].dims.end()) return false;
            const Coord extent = ops_[i].extents[static_cast<size_t>(at - ops_[i].dims.begin())];
            if (c.parts2[i] < 2 || c.parts2[i] > extent || c.parts[i] * c.parts2[i] > devices_) return false;
        }
    }
    if (c.fused ? !fusion_ : !c.unfused.empty()) return false;
    if (!c.at.empty()) {
        // No all-rule map: a candidate has one key (Candidate::clear_map drops it).
        if (!maps_ || c.at.size() != ops_.size() || std::none_of(c.at.begin(), c.at.end(), [](int d) { return d >= 0; }))
            return false;
        for (int d : c.at)
            if (d < -1 || d >= devices_) return false;
    }
    for (size_t i = 0; i < c.unfused.size(); ++i)
        if (c.unfused[i] < 0 || static_cast<size_t>(c.unfused[i]) >= ops_.size() || (i && c.unfused[i] <= c.unfused[i - 1]))
            return false;
    if (c.rule != PlacementRule::pipeline) return c.stages == 0 && c.cuts.empty();
    if (c.stages < 2 || c.stages > devices_ || c.stages > static_cast<int>(ops_.size())) return false;
    if (c.cuts.empty()) return true;
    if (!cuts_ || static_cast<int>(c.cuts.size()) != c.stages - 1) return false;
    for (size_t i = 0; i < c.cuts.size(); ++i)
        if (c.cuts[i] < 1 || static_cast<size_t>(c.cuts[i]) >= ops_.size() || (i && c.cuts[i] <= c.cuts[i - 1]))
            return false;
    return true;
}

std::optional<Candidate> carry_over(const Space &from, const Candidate &c, const Space &to) {
    if (!from.valid(c) || c.substitution != to.substitution()) return std::nullopt;
    std::map<std::string, size_t> then, now;  // op id → its index in `from`, in `to`
    for (size_t j = 0; j < from.ops().size(); ++j) then.emplace(from.ops()[j].op.value, j);
    for (size_t i = 0; i < to.ops().size(); ++i) now.emplace(to.ops()[i].op.value, i);
    const auto where = [&](size_t i) -> std::optional<size_t> {
        const auto at = then.find(to.ops()[i].op.value);
        return at == then.end() ? std::nullopt : std::optional<size_t>(at->second);
    };
    // Whether op i of `to` offers `dim` with the extent and devices for `parts`.
    const auto offers = [&](size_t i, int dim, int parts) {
        const OpChoices &o = to.ops()[i];
        const auto at = std::find(o.dims.begin(), o.dims.end(), dim);
        return at != o.dims.end() && parts >= 2 && parts <= to.devices() &&
               parts <= o.extents[static_cast<size_t>(at - o.dims.begin())];
    };
    const size_t n = to.ops().size();
    Candidate out = to.unsplit();
    out.rule = c.rule;
    out.stages = c.stages;
    out.substitution = c.substitution;
    for (size_t i = 0; i < n; ++i) {
        const std::optional<size_t> j = where(i);
        if (!j || c.dim[*j] < 0 || !offers(i, c.dim[*j], c.parts[*j])) continue;
        out.dim[i] = c.dim[*j];
        out.parts[i] = c.parts[*j];
        if (c.has_second(*j) && c.dim2[*j] != out.dim[i] && offers(i, c.dim2[*j], c.parts2[*j]) &&
            out.parts[i] * c.parts2[*j] <= to.devices())
            out.set_second(i, n, c.dim2[*j], c.parts2[*j]);
    }
    if (c.fused && to.fusion()) {
        out.fused = true;
        for (size_t i = 0; i < n; ++i)
            if (const std::optional<size_t> j = where(i);
                j && std::binary_search(c.unfused.begin(), c.unfused.end(), static_cast<int>(*j)))
                out.unfused.push_back(static_cast<int>(i));
    }
    if (!c.at.empty() && to.maps())
        for (size_t i = 0; i < n; ++i)
            if (const std::optional<size_t> j = where(i); j && c.has_map(*j) && c.at[*j] < to.devices())
                out.set_map(i, n, c.at[*j]);
    if (!c.cuts.empty() && to.cuts()) {
        std::vector<int> cuts;
        for (int cut : c.cuts)
            if (const auto at = now.find(from.ops()[static_cast<size_t>(cut)].op.value); at != now.end())
                cuts.push_back(static_cast<int>(at->second));
        if (cuts.size() == c.cuts.size() && std::is_sorted(cuts.begin(), cuts.end())) out.cuts = std::move(cuts);
    }
    if (!to.valid(out)) return std::nullopt;
    return out;
}

}  // namespace tapestry::search
