// The Pareto-front search (docs/search.md, DESIGN.md §6): a population of
// candidates; parents drawn by non-dominated rank and crowding (binary
// tournaments, NSGA-II); children made by mutators — re-split an op along
// another dim, change its part count, unsplit it, carry a split along a chain of
// neighbours, change the placement rule — each drawn with a weight learned from
// its success (children not dominated by their parent); constraints handled by
// constraint domination, so infeasible candidates survive while they lead toward
// feasibility. Seeded: children are made serially from the seed, evaluated in
// parallel and merged in order, so one seed gives one front at any thread count
// (under an evaluation or generation budget; a time budget stops where it stops).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plan/baselines.h"
#include "search/evaluate.h"
#include "search/space.h"

namespace tapestry::search {

struct SearchOptions {
    int population = 24;
    int generations = 0;            // 0: no limit
    long max_evaluations = 0;       // 0: no limit (candidates evaluated, repeats served from the cache not counted)
    double budget_seconds = 30;     // 0: no limit
    int stall_generations = 12;     // stop when the front has not moved for this many generations (0: never)
    std::uint64_t seed = 1;
    int threads = 0;                // 0: std::thread::hardware_concurrency()
    std::vector<Candidate> warm_start;  // candidates of an earlier front, seeded into the first population
};

// One evaluated candidate, as streamed and as kept on the front.
struct Scored {
    Candidate candidate;
    Evaluation evaluation;
    long index = 0;       // evaluation order (0, 1, …)
    int generation = 0;
    std::string mutator;  // what made it ("seed", "warm start", "reshard", …)
};

struct MutatorStats {
    std::string name;
    long trials = 0;
    long successes = 0;
    double weight = 0;  // the current drawing weight, (1 + successes) / (2 + trials) normalised
};

struct Progress {
    int generation = 0;
    long evaluations = 0;
    long invalid = 0;               // candidates with no plan (the pass or compiler refused)
    double seconds = 0;
    double evaluations_per_second = 0;
    std::vector<Scored> front;      // the current first front (feasible ones when any is feasible)
};

struct SearchResult {
    std::vector<Scored> front;
    long evaluations = 0;
    long invalid = 0;
    int generations = 0;
    double seconds = 0;
    std::string stopped;  // "budget", "evaluations", "generations", "stalled", "stopped"
    std::vector<MutatorStats> mutators;
};

struct SearchHooks {
    // Every evaluated candidate, in evaluation order, from the calling thread.
    std::function<void(const Scored &)> candidate;
    // After each generation.
    std::function<void(const Progress &)> generation;
    // Polled between generations and between evaluations; set to stop.
    const std::atomic<bool> *stop = nullptr;
};

// The hand baselines (plan/baselines.h) as candidates, where their specs are
// candidates: dp (the batch over every device), dp×tp (the batch over groups of a
// node's devices, Megatron's specs within each group, placed `spread`), pp (the
// batch in micro-batches through a pipeline of one stage per device) — each
// evaluates to its baseline's plan — and tp (Megatron's specs without the
// propagation the tp baseline adds to their neighbours: a start near it, not it).
// The search seeds its first population with them.
struct BaselineCandidate {
    plan::Baseline baseline;
    Candidate candidate;
};
std::vector<BaselineCandidate> baseline_candidates(const Evaluator &evaluator);

// Runs the search. Fails only when no candidate of the space has a plan.
Expected<SearchResult, std::string> optimize(const Evaluator &evaluator, const SearchOptions &options,
                                             const SearchHooks &hooks = {});

}  // namespace tapestry::search
