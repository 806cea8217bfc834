// Evaluating candidates (see evaluate.h).
#include "search/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "common/checked_size.h"
#include "graph/order.h"
#include "plan/compile.h"
#include "ops/library.h"
#include "passes/fuse.h"
#include "passes/substitute.h"
#include "plan/planner.h"

namespace tapestry::search {

const std::vector<Objective> &all_objectives() {
    static const std::vector<Objective> all{Objective::time, Objective::memory, Objective::devices,
                                            Objective::communication, Objective::energy};
    return all;
}

const char *objective_name(Objective o) {
    switch (o) {
        case Objective::time: return "time";
        case Objective::memory: return "memory";
        case Objective::devices: return "devices";
        case Objective::communication: return "communication";
        case Objective::energy: return "energy";
    }
    return "?";
}

double figure_of(const Figures &f, Objective o) {
    switch (o) {
        case Objective::time: return f.makespan;
        case Objective::memory: return f.peak;
        case Objective::devices: return f.devices;
        case Objective::communication: return f.comm_bytes;
        case Objective::energy: return f.energy;
    }
    return 0;
}

std::string joules_text(double joules) {
    char buf[48];
    const double a = std::abs(joules);
    if (a >= 1 || a == 0) std::snprintf(buf, sizeof buf, "%.3g J", joules);
    else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.3g mJ", joules * 1e3);
    else std::snprintf(buf, sizeof buf, "%.3g µJ", joules * 1e6);
    return buf;
}

std::string figure_text(Objective o, double value) {
    switch (o) {
        case Objective::time: return plan::seconds_text(value);
        case Objective::memory:
        case Objective::communication: return byte_text(static_cast<std::int64_t>(std::llround(value)));
        case Objective::devices: return std::to_string(static_cast<int>(std::lround(value)));
        case Objective::energy: return joules_text(value);
    }
    return "?";
}

Expected<std::vector<Objective>, std::string> parse_objectives(const std::string &text) {
    std::vector<Objective> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        bool found = false;
        for (Objective o : all_objectives())
            if (name == objective_name(o)) {
                if (std::find(out.begin(), out.end(), o) != out.end())
                    return unexpected("objective '" + name + "' is named twice");
                out.push_back(o);
                found = true;
            }
        if (!found)
            return unexpected("unknown objective '" + name + "' (known: time, memory, devices, communication, energy)");
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (out.empty()) return unexpected(std::string("no objective named"));
    return out;
}

Evaluator::Evaluator(Graph graph, Space space, cost::Target target, cost::ClusterShape shape,
                     std::vector<Objective> objectives, Constraints constraints, cost::Calibration calibration,
                     std::vector<const FusionBackend *> fusion)
    : graph_(std::move(graph)),
      space_(std::move(space)),
      model_(std::move(target), std::move(shape)),
      objectives_(std::move(objectives)),
      constraints_(constraints),
      signatures_(std::make_shared<const DerivationCache>(OpLibrary::standard())),
      stages_(std::make_shared<const StageMemo>()),
      workspaces_(std::make_shared<WorkspacePool>()) {
    // Every candidate that fuses alike asks the backends the same questions.
    for (const FusionBackend *b : fusion) {
        fusion_answers_.push_back(std::make_shared<const FusionCache>(*b));
        fusion_.push_back(fusion_answers_.back().get());
    }
    model_.calibration() = std::move(calibration);
    space_.allow_fusion(!fusion_.empty());
}

namespace {

// The operations of a graph as ids and kinds in dependency order: two substitutions
// that give the same list gave one graph.
std::vector<std::pair<std::string, std::string>> op_list(const Graph &g) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Operation *op : dependency_order(g).order) out.emplace_back(op->id.value, op->kind);
    return out;
}

}  // namespace

Expected<std::vector<std::string>, std::string> Evaluator::offer_substitutions(const std::vector<std::string> &goals) {
    std::vector<std::string> lines;
    for (const std::string &goal : goals) {
        if (substituted(goal)) continue;
        SubstituteOptions o;
        o.goal = goal;
        o.certify = CertifyOptions{};
        auto st = substitute(graph_, o);
        if (!st) return unexpected("substitution '" + goal + "': " + st.error());
        if (!st->certificate.certified())
            return unexpected("substitution '" + goal + "': its stage is not certified: " + st->certificate.badge());
        const auto ops = op_list(st->graph);
        bool same = st->diff.empty() || ops == op_list(graph_);
        for (const auto &other : substituted_) same = same || ops == op_list(other->stage.graph);
        if (same) {
            lines.push_back(goal + ": changes nothing (no choice added)");
            continue;
        }
        auto space = Space::of(st->graph, space_.devices());
        if (!space) return unexpected("substitution '" + goal + "': " + space.error());
        space->allow_fusion(space_.fusion());
        space->allow_maps(space_.maps());
        space->allow_cuts(space_.cuts());
        space->set_substitution(goal);
        // "…, rules fired: attention-expand×1, layernorm-expand×2; extracted cost …"
        std::string fired = st->summary;
        if (const size_t at = fired.find("rules fired: "); at != std::string::npos) fired = fired.substr(at + 13);
        if (const size_t end = fired.find(';'); end != std::string::npos) fired.resize(end);
        lines.push_back(goal + ": " + fired + " — " + std::to_string(space->ops().size()) + " operations");
        substituted_.push_back(std::make_shared<const Substituted>(Substituted{std::move(st).value(), std::move(space).value()}));
    }
    return lines;
}

const Evaluator::Substituted *Evaluator::substituted(const std::string &goal) const {
    for (const auto &s : substituted_)
        if (s->space.substitution() == goal) return s.get();
    return nullptr;
}

std::vector<const Space *> Evaluator::spaces() const {
    std::vector<const Space *> out{&space_};
    for (const auto &s : substituted_) out.push_back(&s->space);
    return out;
}

const Space *Evaluator::space_of(const Candidate &c) const {
    if (c.substitution.empty()) return &space_;
    const Substituted *s = substituted(c.substitution);
    return s ? &s->space : nullptr;
}

std::string Evaluator::describe(const Candidate &c) const {
    const Space *s = space_of(c);
    return s ? s->describe(c) : c.key() + " (substitution '" + c.substitution + "' not offered)";
}

std::string Evaluator::summary(const Candidate &c) const {
    const Space *s = space_of(c);
    return s ? s->summary(c) : c.key() + " (substitution '" + c.substitution + "' not offered)";
}

std::vector<std::string> Evaluator::device_names() const {
    return plan::device_names(model_.shape());
}

std::vector<std::pair<OpId, std::vector<std::string>>> device_maps(const Space &space, const Candidate &c,
                                                                   const Graph &g,
                                                                   const std::vector<std::string> &devices) {
    std::vector<std::pair<OpId, std::vector<std::string>>> out;
    if (c.at.empty() || devices.empty()) return out;
    const size_t n = devices.size();
    auto in_space = [&](const OpId &id) {
        return std::any_of(space.ops().begin(), space.ops().end(), [&](const OpChoices &o) { return o.op == id; });
    };
    for (size_t i = 0; i < space.ops().size() && i < c.at.size(); ++i) {
        if (!c.has_map(i)) continue;
        const std::string &id = space.ops()[i].op.value, derived = id + ".", partials = id + ".partial.";
        const size_t first = static_cast<size_t>(c.at[i]);
        size_t partial_piece = 0;  // the per-part partial ops count on from one another
        for (const OpPtr &op : g.operations()) {
            const std::string &o = op->id.value;
            if (op->kind == "move" || (o != id && (o.rfind(derived, 0) != 0 || in_space(op->id)))) continue;
            const bool partial = o.rfind(partials, 0) == 0;
            std::vector<std::string> on;
            for (size_t k = 0, pieces = std::max<size_t>(1, op->shards.size()); k < pieces; ++k)
                on.push_back(devices[(first + (partial ? partial_piece++ : k)) % n]);
            out.emplace_back(op->id, std::move(on));
        }
    }
    return out;
}

std::vector<OpId> pipeline_cuts(const Space &space, const Candidate &c, const Graph &g) {
    std::vector<OpId> out;
    if (c.cuts.empty()) return out;
    std::unordered_map<std::string, int> index;
    for (size_t i = 0; i < space.ops().size(); ++i) index.emplace(space.ops()[i].op.value, static_cast<int>(i));
    // The space op an op of `g` is or comes of ("fc1.partial.2" of "fc1"), or -1.
    auto space_op = [&](const std::string &id) {
        for (std::string name = id;;) {
            const auto it = index.find(name);
            if (it != index.end()) return it->second;
            const size_t dot = name.rfind('.');
            if (dot == std::string::npos || dot == 0) return -1;
            name.resize(dot);
        }
    };
    const DependencyOrder order = dependency_order(g);
    size_t next = 0;
    for (const Operation *op : order.order) {
        if (next == c.cuts.size()) break;
        if (op->kind == "move") continue;
        // Every cut at or before this op's space op falls on it (two would leave a
        // stage empty: placement refuses them).
        const int at = space_op(op->id.value);
        while (next < c.cuts.size() && at >= c.cuts[next]) {
            out.push_back(op->id);
            ++next;
        }
    }
    return out;
}

Expected<Materialized, std::string> Evaluator::materialize(const Candidate &c, bool certify) const {
    return build(c, certify, true);
}

// The shard and fuse stages of an evaluation come from the memo when another
// candidate made them (the same splits; and fusion); certified stages are always
// made afresh (the memo's are uncertified).
Expected<Materialized, std::string> Evaluator::build(const Candidate &c, bool certify, bool keep_stages) const {
    const Substituted *from = c.substitution.empty() ? nullptr : substituted(c.substitution);
    if (!c.substitution.empty() && !from)
        return unexpected("candidate '" + c.key() + "' starts from substitution '" + c.substitution +
                          "', which this search does not offer");
    const Space &space = from ? from->space : space_;
    if (!space.valid(c)) return unexpected("candidate '" + c.key() + "' is not in the search space");
    // An evaluation builds on what the ones before it built (search/incremental.h);
    // a materialization, whose stages are shown, runs every pass afresh.
    struct Lent {
        WorkspacePool *pool;
        std::unique_ptr<Workspace> workspace;
        ~Lent() {
            if (workspace) pool->give(std::move(workspace));
        }
    } lent{workspaces_.get(), incremental_ && !keep_stages && !certify ? workspaces_->take() : nullptr};
    Workspace *ws = lent.workspace.get();
    Materialized m;
    const Graph *current = from ? &from->stage.graph : &graph_;
    int made = from ? 1 : 0;  // stages made before placement
    std::vector<ShardSpec> specs = space.specs(c);
    // Memo keys: the splits (and fusion) of one substitution's graph.
    const std::string splits = certify ? std::string() : c.substitution + "|" + c.split_key();
    // The stage kept under `key`, or the one `make` makes (kept for the next candidate).
    auto stage = [&](const std::string &key, auto &&make) -> Expected<std::shared_ptr<const Stage>, std::string> {
        if (!certify)
            if (auto kept = stages_->find(key)) return kept;
        auto st = make();
        if (!st) return unexpected(st.error());
        auto made_now = std::make_shared<const Stage>(std::move(st).value());
        if (!certify) stages_->keep(key, made_now);
        return made_now;
    };
    std::shared_ptr<const Stage> sharded, fused;
    std::optional<Graph> split;  // the shard stage's graph, built incrementally
    if (ws && !specs.empty()) {
        if (auto made_here = ws->sharded(space, *current, c, *signatures_)) {
            if (!*made_here) return unexpected(made_here->error());
            split = std::move(*made_here).value();
            current = &*split;
            ++made;
        }
    }
    if (!specs.empty() && !split) {
        auto st = stage("shard " + splits, [&] {
            ShardOptions o;
            o.specs = std::move(specs);
            o.propagate = false;
            o.library = signatures_.get();
            o.movement = true;
            o.describe_movement = certify;  // an evaluation's stages are never shown
            if (ws) o.movement_memo = &ws->movement;
            if (certify) o.certify = CertifyOptions{};
            return shard(*current, o);
        });
        if (!st) return unexpected(st.error());
        sharded = std::move(st).value();
        current = &sharded->graph;
        ++made;
    }
    if (c.fused) {
        auto st = stage("fuse " + splits + " | " + c.fusion_key(), [&] {
            FuseOptions f;
            f.backends = fusion_;
            for (int i : c.unfused) f.exclude.push_back(space.ops()[static_cast<size_t>(i)].op);
            if (ws) f.memo = &ws->fusion;
            if (certify) f.certify = CertifyOptions{};
            return fuse(*current, f);
        });
        if (!st) return unexpected(st.error());
        fused = std::move(st).value();
        current = &fused->graph;
        ++made;
    }
    PlacementOptions p;
    p.devices = device_names();
    p.rule = c.rule;
    p.stages = c.stages;
    p.text = std::string(rule_name(c.rule)) + (c.rule == PlacementRule::pipeline ? ":" + std::to_string(c.stages) : "");
    p.cuts = pipeline_cuts(space, c, *current);
    for (size_t i = 0; i < p.cuts.size(); ++i) p.text += (i ? "," : "@") + p.cuts[i].value;
    for (auto &[op, devices] : device_maps(space, c, *current, p.devices)) {
        p.text += ";" + op.value + "=";
        for (size_t k = 0; k < devices.size(); ++k) p.text += (k ? "," : "") + devices[k];
        p.ops.emplace(op, std::move(devices));
    }
    p.describe_movement = certify;
    p.library = signatures_.get();
    if (ws) {
        p.memo = &ws->placement;
        p.movement_memo = &ws->movement;
    }
    if (certify) p.certify = CertifyOptions{};
    auto placed = place(*current, p);
    if (!placed) return unexpected(placed.error());
    plan::PlanSource source;
    source.stage = made + 1;
    source.pass = placed->pass;
    if (keep_stages) source.options = space.describe(c);  // an evaluation's plan is never shown
    // A pipeline's steps by readiness, so its micro-batches overlap (as `tapestry
    // plan` orders a pipeline's); the other rules' op by op.
    source.order = c.rule == PlacementRule::pipeline ? plan::StepOrder::ready : plan::StepOrder::dependency;
    source.certificate = placed->certificate.badge();
    // An evaluation keeps no stage: its plan takes the placed graph over.
    auto compiled = keep_stages ? plan::compile_plan(placed->graph, model_, source, signatures_.get())
                                : plan::compile_plan(std::move(placed->graph), model_, source, signatures_.get(),
                                                     ws ? &ws->pieces : nullptr);
    if (!compiled) return unexpected(compiled.error());
    m.plan = std::move(compiled).value();
    m.prediction = plan::simulate(m.plan);
    if (keep_stages) {
        if (from) m.stages.push_back(from->stage);
        if (sharded) m.stages.push_back(*sharded);
        if (fused) m.stages.push_back(*fused);
        m.stages.push_back(std::move(placed).value());
    }
    return m;
}

Evaluator::Reuse Evaluator::reuse() const {
    Reuse r;
    workspaces_->for_each([&](const Workspace &w) {
        r.splits_made += w.splits_made();
        r.splits_replayed += w.splits_replayed();
        r.movement_hits += w.movement.hits();
        r.movement_misses += w.movement.misses();
        r.fusion_hits += w.fusion.hits();
        r.fusion_misses += w.fusion.misses();
        r.placement_hits += w.placement.hits();
        r.placement_misses += w.placement.misses();
        r.piece_hits += w.pieces.hits();
        r.piece_misses += w.pieces.misses();
    });
    return r;
}

Evaluation Evaluator::score(const plan::Plan &plan, const plan::Prediction &pred) const {
    Evaluation e;
    e.ok = true;
    Figures &f = e.figures;
    f.makespan = pred.makespan;
    f.peak = static_cast<double>(pred.peak);
    f.comm_bytes = pred.comm_bytes;
    for (const plan::Device &d : plan.devices) f.devices += d.steps.empty() ? 0 : 1;
    const cost::Figure &power = model_.target().device.power;
    if (power.present)
        for (const plan::DeviceLoad &load : pred.devices)
            f.energy += power.value * std::min(pred.makespan, load.compute + load.communication);
    if (!power.present && std::find(objectives_.begin(), objectives_.end(), Objective::energy) != objectives_.end()) {
        e.ok = false;
        e.error = "target '" + model_.target().name + "' gives no device power (device.power): no energy to predict";
        return e;
    }
    const double cap = constraints_.memory_cap > 0 ? constraints_.memory_cap : model_.memory_capacity();
    char buf[160];
    if (cap > 0 && f.peak > cap) {
        f.violation += (f.peak - cap) / cap;
        std::snprintf(buf, sizeof buf, "peak %s > cap %s", byte_text(static_cast<std::int64_t>(f.peak)).c_str(),
                      byte_text(static_cast<std::int64_t>(cap)).c_str());
        f.violated = buf;
    }
    if (constraints_.max_time > 0 && f.makespan > constraints_.max_time) {
        f.violation += (f.makespan - constraints_.max_time) / constraints_.max_time;
        std::snprintf(buf, sizeof buf, "step %s > %s", plan::seconds_text(f.makespan).c_str(),
                      plan::seconds_text(constraints_.max_time).c_str());
        f.violated += (f.violated.empty() ? "" : ", ") + std::string(buf);
    }
    for (Objective o : objectives_) {
        switch (o) {
            case Objective::time: e.point.objectives.push_back(f.makespan); break;
            case Objective::memory: e.point.objectives.push_back(f.peak); break;
            case Objective::devices: e.point.objectives.push_back(f.devices); break;
            case Objective::communication: e.point.objectives.push_back(f.comm_bytes); break;
            case Objective::energy: e.point.objectives.push_back(f.energy); break;
        }
    }
    e.point.violation = f.violation;
    return e;
}

Evaluation Evaluator::evaluate(const Candidate &c) const {
    auto m = build(c, false, false);
    if (!m) {
        Evaluation e;
        e.error = m.error();
        return e;
    }
    return score(m->plan, m->prediction);
}

}  // namespace tapestry::search
