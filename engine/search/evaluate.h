// Evaluating a candidate (docs/search.md): its shard specs through the shard pass,
// its fusion through the fuse pass, its placement through `place`, the plan compiler and the cost model's
// simulation — the same path as `tapestry plan`, so every figure of a candidate is
// the compiled plan's own prediction. Certificates are made for the plans a
// search reports (its front), not for every candidate.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "cost/model.h"
#include "graph/derivation_cache.h"
#include "ops/fusion.h"
#include "ops/fusion_cache.h"
#include "passes/stage.h"
#include "plan/plan.h"
#include "plan/simulate.h"
#include "search/front.h"
#include "search/incremental.h"
#include "search/space.h"
#include "search/stage_memo.h"

namespace tapestry::search {

enum class Objective { time, memory, devices, communication, energy };
// Every objective, in this order (lists, menus).
const std::vector<Objective> &all_objectives();
const char *objective_name(Objective o);  // "time", "memory", "devices", "communication", "energy"
// "time,memory,devices" → the list; errors name the unknown one.
Expected<std::vector<Objective>, std::string> parse_objectives(const std::string &text);

// Limits a plan must keep to be feasible (0: none). Infeasible candidates are kept
// by the search while they lead toward feasibility (constraint domination).
struct Constraints {
    double memory_cap = 0;  // bytes per device (0: the target's capacity)
    double max_time = 0;    // seconds per step
};

// What a candidate's plan predicts (every figure a prediction of the cost model).
struct Figures {
    double makespan = 0;      // seconds
    double peak = 0;          // bytes, the largest device's peak
    int devices = 0;          // devices that run a step
    double comm_bytes = 0;    // bytes between devices
    // Joules per step: each device's busy time (compute and communication streams,
    // at most the step) at the target's power limit (device.power). A model: the
    // targets give no idle draw, so idle time counts nothing. 0 when the target
    // gives no power.
    double energy = 0;
    double violation = 0;     // 0 when feasible, else the summed relative excess over the constraints
    std::string violated;     // "peak 90 GiB > cap 80 GiB" — empty when feasible
};

struct Evaluation {
    bool ok = false;
    std::string error;  // why the candidate has no plan (the pass's or compiler's words)
    Figures figures;
    Point point;        // the figures as the chosen objectives
};

// A figure by objective: seconds, bytes, devices, bytes, joules.
double figure_of(const Figures &f, Objective o);
// A figure as the CLI and the studio write it: "418 µs", "84.5 MiB", "4", "1.2 J".
std::string figure_text(Objective o, double value);
// "1.23 J", "456 mJ", "12.0 µJ".
std::string joules_text(double joules);

// A candidate made into its stages and plan.
struct Materialized {
    std::vector<Stage> stages;  // substitute (when chosen), shard (when something is split), fuse (when fused), place
    plan::Plan plan;
    plan::Prediction prediction;
};

// The explicit placement of a candidate's device maps in `g` (the graph placement
// sees: sharded, and fused when the candidate fuses): per mapped op of the space,
// its pieces from the map's device on — piece k on device (Candidate::at + k) mod
// n — and so the pieces of every op the passes made of it (a contraction split's
// `op.partial`, `op.reduce`, `op.bias`: each from that device on; the per-part
// ops `op.partial.K` of a split reduction counted on from one another). Moves
// follow their producers. An op the fuse pass joined to its producer is not in
// `g`: it runs where that producer runs.
std::vector<std::pair<OpId, std::vector<std::string>>> device_maps(const Space &space, const Candidate &c,
                                                                   const Graph &g,
                                                                   const std::vector<std::string> &devices);

// The pipeline cuts of a candidate (Candidate::cuts) as placement takes them: for
// each cut, the first op of `g` (the graph placement sees), in the dependency order
// placement walks, that is or comes of an op of the space at or after the cut's —
// the op itself, a contraction split's `op.partial`/`op.reduce`, a fused op named
// after its first member. Empty when the candidate has none. Two cuts that fall on
// one op are both given, and a cut past the last op none: placement refuses either.
std::vector<OpId> pipeline_cuts(const Space &space, const Candidate &c, const Graph &g);

class Evaluator {
public:
    // `calibration`: what launches measured of the target (a session's points and
    // wake, as `tapestry plan --session` reads them); every figure is then the
    // calibrated prediction, the same the plan of a candidate shows.
    // `fusion`: the backends a fused op must run on (ops/fusion.h); given, the space
    // allows fusion (Space::allow_fusion) and a fused candidate runs the fuse pass.
    Evaluator(Graph graph, Space space, cost::Target target, cost::ClusterShape shape,
              std::vector<Objective> objectives, Constraints constraints, cost::Calibration calibration = {},
              std::vector<const FusionBackend *> fusion = {});

    // The space of the graph as given (Candidate::substitution empty).
    const Space &space() const { return space_; }
    // Substitution choices (docs/search.md, "Substitution"): for each goal
    // ("expand", "fuse"), the substitution pass run once on the graph — its stage
    // certified — and a space of its result, so a candidate may start from it
    // instead (Candidate::substitution). A goal that changes nothing, or gives a
    // graph another goal gave, adds no choice. Returns one line per goal ("expand:
    // attention-expand×1, layernorm-expand×2 — 43 operations"; "fuse: changes
    // nothing"); fails naming the goal the pass refuses.
    Expected<std::vector<std::string>, std::string> offer_substitutions(const std::vector<std::string> &goals);
    // Every space a candidate may come from: the graph as given first, then each
    // substitution offered.
    std::vector<const Space *> spaces() const;
    // The space a candidate's choices index (by its substitution), or null when the
    // evaluator offers no such substitution.
    const Space *space_of(const Candidate &c) const;
    // Space::describe by the candidate's own space.
    std::string describe(const Candidate &c) const;
    // Space::summary by the candidate's own space (table rows, status lines).
    std::string summary(const Candidate &c) const;
    const std::vector<Objective> &objectives() const { return objectives_; }
    const Constraints &constraints() const { return constraints_; }
    const cost::Model &model() const { return model_; }
    const Graph &graph() const { return graph_; }
    std::vector<std::string> device_names() const;

    // Thread-safe (each thread keeps its own ISL context).
    Evaluation evaluate(const Candidate &c) const;
    // The candidate's stages and plan; `certify` certifies the stages against the
    // graph (the plan certificate is plan::certify_plan's).
    Expected<Materialized, std::string> materialize(const Candidate &c, bool certify) const;
    // The figures of a compiled plan and its prediction, as an evaluation.
    Evaluation score(const plan::Plan &plan, const plan::Prediction &prediction) const;
    // The memo of the shard and fuse stages evaluations share (tests, benchmarks).
    const StageMemo &stage_memo() const { return *stages_; }
    // A fresh memo of at most `entries` stages (0: none — each evaluation runs every
    // pass, the benchmarks' baseline).
    void share_stages(std::size_t entries) { stages_ = std::make_shared<const StageMemo>(entries); }
    // Incremental evaluation (search/incremental.h; on by default): evaluations keep
    // what they built — each op's split, the moves, the fused ops, the placed pieces, the
    // compiler's pieces — for the next, in workspaces shared by copies. Off, every
    // evaluation builds every node again (the benchmarks' baseline). The figures
    // are the same either way.
    void set_incremental(bool on) { incremental_ = on; }
    bool incremental() const { return incremental_; }
    // The workspaces' counts, summed (tests, benchmarks): splits made and replayed,
    // and the movement, fusion, placement and compiler memos' hits and misses.
    struct Reuse {
        std::int64_t splits_made = 0, splits_replayed = 0;
        std::int64_t movement_hits = 0, movement_misses = 0;
        std::int64_t fusion_hits = 0, fusion_misses = 0;
        std::int64_t placement_hits = 0, placement_misses = 0;
        std::int64_t piece_hits = 0, piece_misses = 0;
    };
    Reuse reuse() const;

private:
    Graph graph_;
    Space space_;
    // A substitution offered: the pass's stage (certified) and the space of its graph.
    struct Substituted {
        Stage stage;
        Space space;
    };
    std::vector<std::shared_ptr<const Substituted>> substituted_;  // shared by copies
    const Substituted *substituted(const std::string &goal) const;
    cost::Model model_;
    std::vector<Objective> objectives_;
    Constraints constraints_;
    // Every candidate derives the same operations again: one memo for the shard
    // pass, placement and the compiler, shared by the threads (and by copies).
    std::shared_ptr<const DerivationCache> signatures_;
    // Candidates that split alike share their shard stage (and fuse stage, where
    // they fuse alike): shared by the threads (and by copies).
    std::shared_ptr<const StageMemo> stages_;
    bool incremental_ = true;
    std::shared_ptr<WorkspacePool> workspaces_;  // shared by copies
    Expected<Materialized, std::string> build(const Candidate &c, bool certify, bool keep_stages) const;
    // The backends' answers, memoised (ops/fusion_cache.h): fusion_ points into them.
    std::vector<std::shared_ptr<const FusionCache>> fusion_answers_;
    std::vector<const FusionBackend *> fusion_;
};

}  // namespace tapestry::search
