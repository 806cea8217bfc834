#include "search/session_runs.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "passes/substitute.h"
#include "plan/baselines.h"

namespace tapestry::search {

namespace {

using nlohmann::json;

// A number field, or `fallback` when it is missing or not a number.
template <typename T>
T number(const json &o, const char *key, T fallback) {
    const auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<T>() : fallback;
}

bool flag(const json &o, const char *key) {
    const auto it = o.find(key);
    return it != o.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::string settings_json(const RunSettings &s) {
    json objectives = json::array();
    for (Objective o : s.objectives) objectives.push_back(objective_name(o));
    json o{{"devices", s.devices},
           {"nodes", s.nodes},
           {"objectives", objectives},
           {"memory_cap_bytes", s.constraints.memory_cap},
           {"max_time_seconds", s.constraints.max_time},
           {"budget_seconds", s.options.budget_seconds},
           {"max_evaluations", s.options.max_evaluations},
           {"population", s.options.population},
           {"stall_generations", s.options.stall_generations},
           {"fusion", s.fusion},
           {"maps", s.maps},
           {"cuts", s.cuts},
           {"substitute", s.substitute}};
    if (s.warm_start_run > 0) o["warm_start_run"] = s.warm_start_run;
    return o.dump();
}

Expected<RunSettings, std::string> parse_settings(const std::string &text) {
    const json o = json::parse(text, nullptr, false);
    if (o.is_discarded()) return unexpected(std::string("settings: not JSON"));
    if (!o.is_object()) return unexpected(std::string("settings: not a JSON object"));
    RunSettings s;
    s.devices = number(o, "devices", 0);
    if (s.devices < 1) return unexpected(std::string("settings: 'devices' is not a device count"));
    s.nodes = number(o, "nodes", 0);
    std::string names;
    if (const auto it = o.find("objectives"); it != o.end() && it->is_array())
        for (const json &v : *it)
            if (v.is_string()) names += (names.empty() ? "" : ",") + v.get<std::string>();
    auto objectives = parse_objectives(names);
    if (!objectives) return unexpected("settings: objectives: " + objectives.error());
    s.objectives = *objectives;
    s.constraints.memory_cap = number(o, "memory_cap_bytes", 0.0);
    s.constraints.max_time = number(o, "max_time_seconds", 0.0);
    s.options.budget_seconds = number(o, "budget_seconds", s.options.budget_seconds);
    // Older builds wrote the evaluation budget as a double.
    s.options.max_evaluations = static_cast<long>(number(o, "max_evaluations", 0.0));
    s.options.population = number(o, "population", s.options.population);
    s.options.stall_generations = number(o, "stall_generations", s.options.stall_generations);
    s.fusion = flag(o, "fusion");
    s.maps = flag(o, "maps");
    s.cuts = flag(o, "cuts");
    s.substitute = flag(o, "substitute");
    s.warm_start_run = number<std::int64_t>(o, "warm_start_run", 0);
    return s;
}

store::SearchCandidateRecord candidate_record(const Scored &s, const Evaluator &evaluator) {
    const Candidate &c = s.candidate;
    const Figures &f = s.evaluation.figures;
    store::SearchCandidateRecord r;
    r.generation = s.generation;
    r.index = s.index;
    r.mutator = s.mutator;
    r.dim = c.dim;
    r.parts = c.parts;
    r.dim2 = c.dim2;
    r.parts2 = c.parts2;
    r.rule = rule_name(c.rule);
    r.stages = c.stages;
    r.fused = c.fused;
    r.unfused = c.unfused;
    r.at = c.at;
    r.cuts = c.cuts;
    r.substitution = c.substitution;
    r.key = c.key();
    r.description = evaluator.describe(c);
    r.objectives = s.evaluation.point.objectives;
    r.makespan_seconds = f.makespan;
    r.peak_bytes = f.peak;
    r.devices = f.devices;
    r.communication_bytes = f.comm_bytes;
    r.energy_joules = f.energy;
    r.violation = f.violation;
    r.violated = f.violated;
    return r;
}

Expected<Candidate, std::string> candidate_of(const store::SearchCandidateRecord &r) {
    auto rule = parse_rule_name(r.rule);
    if (!rule) return unexpected(rule.error());
    Candidate c;
    c.dim = r.dim;
    c.parts = r.parts;
    c.dim2 = r.dim2;
    c.parts2 = r.parts2;
    c.rule = *rule;
    c.stages = r.stages;
    c.fused = r.fused;
    c.unfused = r.unfused;
    c.at = r.at;
    c.cuts = r.cuts;
    c.substitution = r.substitution;
    return c;
}

std::string warm_start_losses(const WarmStart &start) {
    std::string said;
    if (start.dropped > 0) said = std::to_string(start.dropped) + " with no candidate in this graph's space";
    if (start.merged > 0)
        said += (said.empty() ? "" : ", ") + std::to_string(start.merged) + " the same as another once carried";
    return said.empty() ? said : " (" + said + ")";
}

Expected<WarmStart, std::string> warm_start_from_run(const store::SearchRun &run, const Graph &then,
                                                     const Evaluator &now) {
    auto settings = parse_settings(run.run.settings_json);
    if (!settings) return unexpected("search run " + std::to_string(run.run.id) + ": " + settings.error());
    // The spaces of `then` the run's candidates index, by substitution: made when a row needs one.
    std::map<std::string, std::optional<Space>> spaces;
    const auto space_then = [&](const std::string &goal) -> Expected<const Space *, std::string> {
        auto &slot = spaces[goal];
        if (!slot) {
            Graph g = plan::without_shards(then);  // as the search saw it: the project's shards dropped
            if (!goal.empty()) {
                SubstituteOptions o;
                o.goal = goal;
                auto st = substitute(g, o);
                if (!st) return unexpected("substitution '" + goal + "' of the searched graph: " + st.error());
                g = std::move(st->graph);
            }
            auto space = Space::of(g, settings->devices);
            if (!space) return unexpected("the searched graph: " + space.error());
            space->allow_fusion(settings->fusion);
            space->allow_maps(settings->maps);
            space->allow_cuts(settings->cuts);
            space->set_substitution(goal);
            slot = std::move(space).value();
        }
        return &*slot;
    };
    WarmStart out;
    std::set<std::string> seen;
    for (const store::SearchCandidateRecord &row : run.candidates) {
        if (!row.on_front) continue;
        ++out.front;
        auto c = candidate_of(row);
        if (!c) return unexpected("search run " + std::to_string(run.run.id) + ", candidate " +
                                  std::to_string(row.index) + ": " + c.error());
        auto from = space_then(c->substitution);
        if (!from) return unexpected(from.error());
        const Space *to = now.space_of(*c);
        std::optional<Candidate> carried = to ? carry_over(**from, *c, *to) : std::nullopt;
        if (!carried) {
            ++out.dropped;
            continue;
        }
        if (seen.insert(carried->key()).second)
            out.candidates.push_back(std::move(*carried));
        else
            ++out.merged;
    }
    return out;
}

Expected<WarmStart, std::string> warm_start_from_session(const store::Session &session, store::SearchRunId run,
                                                         const Evaluator &now) {
    auto kept = session.load_search_run(run);
    if (!kept) return unexpected(kept.error().message);
    auto then = session.load_version(kept->run.version_id);
    if (!then) return unexpected("search run " + std::to_string(run) + ": its graph: " + then.error().message);
    auto start = warm_start_from_run(*kept, *then, now);
    if (!start) return unexpected(start.error());
    if (start->front == 0) return unexpected("search run " + std::to_string(run) + " has no front to start from");
    return start;
}

Figures figures_of(const store::SearchCandidateRecord &r) {
    Figures f;
    f.makespan = r.makespan_seconds;
    f.peak = r.peak_bytes;
    f.devices = r.devices;
    f.comm_bytes = r.communication_bytes;
    f.energy = r.energy_joules;
    f.violation = r.violation;
    f.violated = r.violated;
    return f;
}

// ---- RunKeeper -----------------------------------------------------------------------

RunKeeper::RunKeeper(store::Session &session, store::VersionId version, const std::string &target,
                     const RunSettings &settings, std::uint64_t seed)
    : session_(&session) {
    store::SearchRunRecord record;
    record.version_id = version;
    record.target = target;
    record.settings_json = settings_json(settings);
    record.seed = seed;
    auto started = session.start_search_run(record);
    if (!started) {
        fail(started.error().message);
        return;
    }
    writing_ = started_ = started->id;
}

void RunKeeper::add(const Scored &scored, const Evaluator &evaluator) {
    if (writing_ != 0 && scored.evaluation.ok) pending_.push_back(candidate_record(scored, evaluator));
}

void RunKeeper::add(store::SearchCandidateRecord record) {
    if (writing_ != 0) pending_.push_back(std::move(record));
}

void RunKeeper::flush(const std::vector<std::string> &front, bool front_moved) {
    if (writing_ == 0) return;
    if (!pending_.empty()) {
        const store::Status added = session_->append_search_candidates(writing_, pending_);
        pending_.clear();
        if (!added) return fail(added.error().message);
    }
    if (!front_moved) return;
    if (const store::Status marked = session_->mark_search_front(writing_, front); !marked)
        fail(marked.error().message);
}

void RunKeeper::finish(const std::vector<std::string> &front, const std::string &status) {
    flush(front, true);
    if (writing_ == 0) return;
    if (auto done = session_->finish_search_run(writing_, status); !done) fail(done.error().message);
}

void RunKeeper::fail(const std::string &why) {
    if (error_.empty()) error_ = why;
    writing_ = 0;
    pending_.clear();
}

std::vector<std::string> front_keys(const std::vector<Scored> &front) {
    std::vector<std::string> keys;
    keys.reserve(front.size());
    for (const Scored &s : front) keys.push_back(s.candidate.key());
    return keys;
}

// ---- where the CLI keeps its searches ------------------------------------------------

std::string searches_project(const Graph &graph) {
    return graph.name + " (searches)";
}

Expected<SearchedVersion, std::string> searched_version(store::Session &session, const Graph &graph) {
    const std::string name = searches_project(graph);
    auto found = store::find_project(session, name);
    if (!found) return unexpected(found.error().message);
    SearchedVersion out{*found, 0};
    if (out.project == 0) {
        auto made = session.create_project(name);
        if (!made) return unexpected(made.error().message);
        out.project = *made;
    }
    auto version = store::version_of_graph(session, out.project, graph, "import");
    if (!version) return unexpected(version.error().message);
    out.version = *version;
    return out;
}

}  // namespace tapestry::search
