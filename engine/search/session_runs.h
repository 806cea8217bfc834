// A search as the session keeps it (docs/sessions.md, "Search runs"): its
// settings as JSON, every evaluated candidate as a row that Evaluator::materialize
// can make a plan of again, the front marked as it moves, and the outcome — kept
// alike by the studio's Optimize dock and by `tapestry optimize --session`, so
// that either reads back what the other ran.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"
#include "search/evaluate.h"
#include "search/optimizer.h"
#include "store/session.h"

namespace tapestry::search {

// What a run was asked for (its SearchRunRecord::settings_json).
struct RunSettings {
    int devices = 1;
    int nodes = 0;
    std::vector<Objective> objectives;
    Constraints constraints;
    SearchOptions options;   // budgets, population, stall (the seed is the run's own column; its warm start's candidates are not kept, the run they came of is)
    bool fusion = false;     // fusion in the space (runs kept before it read as without)
    bool maps = false;       // device maps in the space (runs kept before them read as without)
    bool cuts = false;       // pipeline cuts in the space (runs kept before them read as without)
    bool substitute = false; // substitution choices in the space (runs kept before them read as without)
    std::int64_t warm_start_run = 0;  // the run whose front started it (0: none; re-planning after an edit)
};
// {"devices", "nodes", "objectives": [names], "memory_cap_bytes", "max_time_seconds",
// "budget_seconds", "max_evaluations", "population", "stall_generations", "fusion",
// "maps", "cuts", "substitute", "warm_start_run" (only when there is one)}, compact, keys sorted.
std::string settings_json(const RunSettings &settings);
// Its inverse. A field missing, or not of its kind, reads as its default (runs kept
// by older builds lack the later ones); errors: not JSON, no device count, an
// unknown objective.
Expected<RunSettings, std::string> parse_settings(const std::string &json);

// A candidate's row: its choices, the words Space::describe gives them, its
// figures and its objectives (in the run's order). The row and the on-front mark
// are the store's.
store::SearchCandidateRecord candidate_record(const Scored &scored, const Evaluator &evaluator);
// The candidate a row was made of; errors name an unknown placement rule.
Expected<Candidate, std::string> candidate_of(const store::SearchCandidateRecord &record);
// The figures a row keeps.
Figures figures_of(const store::SearchCandidateRecord &record);

// A kept run's front as the warm start of a new search (SearchOptions::warm_start;
// re-planning after an edit): each front row's candidate carried by operation id
// (carry_over) from the space of `then` — the graph the run searched, its editor
// version (shards it has are dropped, as the search dropped them) — with the run's settings, to the space of `now`'s graph the
// candidate's substitution gives (a substitution `now` does not offer drops it).
// The candidates come in the front's order, each once; `front` counts the rows
// on the run's front, `dropped` those with no candidate in `now`'s space,
// `merged` those that carried to a candidate an earlier row already gave.
// Errors: the run's settings unreadable, a row's rule unknown, a substitution of
// `then` the pass refuses.
struct WarmStart {
    std::vector<Candidate> candidates;
    int front = 0;
    int dropped = 0;
    int merged = 0;
};
// warm_start_from_run of run `run` of `session`, on the editor version it searched;
// errors: no such run, its graph unreadable, a run with no front.
Expected<WarmStart, std::string> warm_start_from_session(const store::Session &session, store::SearchRunId run,
                                                         const Evaluator &now);
// What a warm start lost, in words for its summary line: " (2 with no candidate
// in this graph's space, 1 the same as another once carried)", "" when nothing.
std::string warm_start_losses(const WarmStart &start);
Expected<WarmStart, std::string> warm_start_from_run(const store::SearchRun &run, const Graph &then,
                                                     const Evaluator &now);

// Keeps one run in a session while it goes, on the search's thread: started with
// its settings, each generation's candidates appended in one transaction, the front
// marked whenever it moves, finished with its status ("finished", "stopped",
// "failed"). After the first failure it keeps nothing more and says why
// (error()); the search goes on — what was kept before stays.
class RunKeeper {
public:
    RunKeeper() = default;  // keeps nothing
    RunKeeper(store::Session &session, store::VersionId version, const std::string &target,
              const RunSettings &settings, std::uint64_t seed);

    void add(const Scored &scored, const Evaluator &evaluator);  // an evaluated candidate (one with no plan is not kept)
    void add(store::SearchCandidateRecord record);
    // After a generation: the pending candidates, and the front when it moved.
    void flush(const std::vector<std::string> &front_keys, bool front_moved);
    // flush, then the outcome.
    void finish(const std::vector<std::string> &front_keys, const std::string &status);
    // Records the first failure of the caller's own (finding the version, say): nothing is kept.
    void fail(const std::string &why);

    store::SearchRunId run() const { return started_; }  // the run started (0: none)
    const std::string &error() const { return error_; }

private:
    store::Session *session_ = nullptr;
    store::SearchRunId writing_ = 0;  // the run being written (0: none, or no more)
    store::SearchRunId started_ = 0;
    std::vector<store::SearchCandidateRecord> pending_;
    std::string error_;
};

// The keys of a front, in order (what RunKeeper marks).
std::vector<std::string> front_keys(const std::vector<Scored> &front);

// Where `tapestry optimize --session` keeps its searches of a project file: the
// session project "<graph name> (searches)", the searched graph one of its versions
// (a new version only when the graph changed since the last). Made on first use.
std::string searches_project(const Graph &graph);
struct SearchedVersion {
    store::ProjectId project = 0;
    store::VersionId version = 0;
};
Expected<SearchedVersion, std::string> searched_version(store::Session &session, const Graph &graph);

}  // namespace tapestry::search
