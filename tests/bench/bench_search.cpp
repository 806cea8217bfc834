// Benchmark of the Pareto-front search (issue 16), three measurements in one run:
//  1. rate: candidates evaluated per second on the GPT-2 block for 8 H100s (one
//     node), against one validate() of the same graph measured in the same run.
//     Target: ≥ 10,000 evaluations/s on 2 cores.
//  2. stack: the 12-layer GPT-2 stack on 64 H100s (8 nodes × 8): the time until the
//     front stops moving (no change for the stall window), the front against the
//     four hand baselines (each covered when a front plan is at least as good on
//     every objective), and the best step-time ratio over the baselines among front
//     plans with no more peak memory than the baseline. Target: ≤ 10 s.
//  3. replan: the block on 8 devices searched to a stall, then one op edited (the
//     MLP's gelu made a relu): a cold search of the edited graph to a stall, then a
//     search warm-started from the old front, timed until its front holds 99% of
//     the cold front's hypervolume. Target: ≤ 1 s.
// Every figure of a plan is the cost model's prediction; the times are measured.
//   bench_search [--part rate|stack|replan|all] [--evaluations N] [--threads T]
//                [--layers L] [--stack-budget S] [--stack-evaluations N] [--project FILE] [--fusion] [--maps] [--cuts]
//                [--no-stage-memo] [--no-incremental] [--no-baseline] [--seed N] [--export-front FILE] [--plan-sizes]
//                [--dominated]
// (--fusion: fusion in the space, as `tapestry optimize` searches by default; the
// figures without it compare with the earlier ones; --maps: device maps in the
// space, as `tapestry optimize --maps` searches; --cuts: pipeline cuts in the
// space, as `tapestry optimize --cuts` searches; --no-incremental: every
// evaluation builds every node again (search/incremental.h; the rate part also
// runs that search after its own, as the baseline in the same run, unless
// --no-baseline: for profiling); --no-stage-memo: every
// evaluation runs every pass, the baseline of the shared stages; --export-front:
// the stack's front as `tapestry optimize --export-front` writes it, for
// comparing fronts by hypervolume; --stack-evaluations: the stack searched for
// exactly N evaluations, without a time budget — the same candidates whatever the
// machine's speed, for comparing evaluation speed from build to build;
// --plan-sizes: after the stack's search, its first 200 evaluated candidates
// built again one by one (as a materialization: without the workspaces' node
// memos, the shared stage memo still serving), timed, and grouped by the size of
// their plans: where the stack's evaluation time goes; --dominated: after the
// rate part's search, the share of its candidates the front already covered when
// they were evaluated, as they were and with their figures made optimistic —
// the most a screening estimate could spare (it keeps every streamed candidate,
// so the rate it prints is a little lower).)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "block_stack.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "plan/baselines.h"
#include "plan/planner.h"
#include "runtime/cpu/fusion_backend.h"
#include "search/front_file.h"
#include "search/optimizer.h"

using namespace tapestry;

namespace {

const std::vector<search::Objective> kObjectives{search::Objective::time, search::Objective::memory,
                                                 search::Objective::devices};
bool g_fusion = false;  // --fusion
bool g_maps = false;    // --maps
bool g_cuts = false;    // --cuts
bool g_no_memo = false; // --no-stage-memo
bool g_no_incremental = false;  // --no-incremental
bool g_no_baseline = false;     // --no-baseline
std::string g_export;    // --export-front FILE (the stack's front)
std::uint64_t g_seed = 1;  // --seed N
bool g_plan_sizes = false;  // --plan-sizes
bool g_dominated = false;   // --dominated

// What screening candidates by an analytic estimate could save at most: of the
// feasible candidates a search evaluated, the share the front of the generations
// before theirs already covered (as good or better on every objective) — those a
// perfect estimate would have spared compiling — and the share still covered
// with their step time and peak memory scaled by f < 1: what an estimate that
// many per cent optimistic could still spare without ever dropping a front plan.
// (The devices a candidate uses are known without compiling, so they are not
// scaled.)
void print_screening(const std::vector<search::Scored> &streamed) {
    long feasible = 0;
    std::vector<std::pair<double, long>> covered;  // (f, candidates covered at f)
    for (double f : {1.0, 0.95, 0.9, 0.8, 0.5}) covered.emplace_back(f, 0);
    struct P { double t, m; int d; };
    std::vector<P> front, pending;
    auto covers = [](const P &q, const P &p) { return q.t <= p.t && q.m <= p.m && q.d <= p.d; };
    int generation = -1;
    for (const search::Scored &s : streamed) {
        if (s.generation != generation) {
            // The candidates of the generations before enter the front.
            for (const P &p : pending) {
                if (std::any_of(front.begin(), front.end(), [&](const P &q) { return covers(q, p); })) continue;
                front.erase(std::remove_if(front.begin(), front.end(), [&](const P &q) { return covers(p, q); }), front.end());
                front.push_back(p);
            }
            pending.clear();
            generation = s.generation;
        }
        const search::Figures &fig = s.evaluation.figures;
        if (!s.evaluation.ok || fig.violation > 0) continue;
        ++feasible;
        const P p{fig.makespan, fig.peak, fig.devices};
        for (auto &[f, n] : covered) {
            const P scaled{p.t * f, p.m * f, p.d};
            n += std::any_of(front.begin(), front.end(), [&](const P &q) { return covers(q, scaled); }) ? 1 : 0;
        }
        pending.push_back(p);
    }
    std::printf("  screening ceiling: of %ld feasible candidates, the front of the generations before already covered",
                feasible);
    for (const auto &[f, n] : covered) {
        const double share = 100.0 * static_cast<double>(n) / std::max<double>(1, static_cast<double>(feasible));
        if (f == 1.0) std::printf(" %.1f%% as evaluated", share);
        else std::printf(", %.1f%% at %.0f%% of their time and memory", share, 100 * f);
    }
    std::printf("\n");
}

// Where an evaluation's time goes on a big graph: the first `count` candidates a
// search evaluated (`made`), each materialized again (no node memos) and timed,
// in groups by their plans' step counts, with each group's share of the time and
// how its plans' predicted step times compare with the best of them all.
void plan_sizes(const search::Evaluator &e, const std::vector<search::Candidate> &made, size_t count) {
    struct Built {
        size_t steps = 0, transfers = 0;
        double seconds = 0, makespan = 0;
    };
    std::vector<Built> built;
    size_t failed = 0;
    double failed_seconds = 0, best = 0;
    for (size_t i = 0; i < made.size() && i < count; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto m = e.materialize(made[i], false);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!m) {
            ++failed;
            failed_seconds += s;
            continue;
        }
        Built b{m->plan.steps.size(), 0, s, m->prediction.makespan};
        for (const plan::Step &st : m->plan.steps) b.transfers += st.kind != plan::StepKind::kernel ? 1 : 0;
        if (best == 0 || b.makespan < best) best = b.makespan;
        built.push_back(b);
    }
    double total = failed_seconds;
    for (const Built &b : built) total += b.seconds;
    if (total <= 0) return;
    std::printf("  plan sizes: %zu candidates built again, %.1f s (%zu without a plan: %.0f%% of it); best predicted "
                "step %s\n",
                built.size() + failed, total, failed, 100 * failed_seconds / total, plan::seconds_text(best).c_str());
    const size_t bounds[] = {0, 5000, 15000, 30000, 50000, SIZE_MAX};
    for (size_t k = 0; k + 1 < std::size(bounds); ++k) {
        size_t n = 0, steps = 0, transfers = 0, slow = 0;
        double seconds = 0, fastest = 0;
        for (const Built &b : built) {
            if (b.steps < bounds[k] || b.steps >= bounds[k + 1]) continue;
            ++n;
            steps += b.steps;
            transfers += b.transfers;
            seconds += b.seconds;
            slow += b.makespan > 10 * best ? 1 : 0;
            if (fastest == 0 || b.makespan < fastest) fastest = b.makespan;
        }
        if (n == 0) continue;
        std::printf("    %6zu–%-6s steps: %3zu plans, %4.0f%% of the time, %6.1f ms each, %3.0f%% of their steps "
                    "transfers or collectives; fastest %.1f× the best, %zu over 10×\n",
                    bounds[k], bounds[k + 1] == SIZE_MAX ? "" : std::to_string(bounds[k + 1]).c_str(), n,
                    100 * seconds / total, 1e3 * seconds / static_cast<double>(n),
                    100 * static_cast<double>(transfers) / static_cast<double>(steps), fastest / best, slow);
    }
}

std::optional<search::Evaluator> evaluator(const Graph &g, int devices, int nodes) {
    auto target = cost::builtin_target("h100-sxm");
    if (!target) return std::nullopt;
    auto shape = cost::cluster_shape(*target, devices, nodes);
    auto space = search::Space::of(g, devices);
    if (!shape || !space) {
        std::fprintf(stderr, "setup failed: %s\n", !shape ? shape.error().c_str() : space.error().c_str());
        return std::nullopt;
    }
    space->allow_maps(g_maps);
    space->allow_cuts(g_cuts);
    std::vector<const FusionBackend *> fusion;
    if (g_fusion) fusion.push_back(&cpu::fusion_backend());
    search::Evaluator e(g, *space, *target, *shape, kObjectives, {}, {}, fusion);
    if (g_no_memo) e.share_stages(0);
    if (g_no_incremental) e.set_incremental(false);
    return e;
}

int rate(const Graph &g, long evaluations, int threads) {
    auto e = evaluator(g, 8, 1);
    if (!e) return 1;
    double validate_ms = 1e30;
    for (int r = 0; r < 9; ++r) {
        const auto t = std::chrono::steady_clock::now();
        (void)validate(g, OpLibrary::standard());
        validate_ms = std::min(validate_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    }
    search::SearchOptions o;
    o.max_evaluations = evaluations;
    o.budget_seconds = 0;
    o.stall_generations = 0;
    o.threads = threads;
    std::vector<search::Scored> streamed;
    search::SearchHooks keep;
    if (g_dominated) keep.candidate = [&](const search::Scored &s) { streamed.push_back(s); };
    auto r = search::optimize(*e, o, keep);
    if (!r) {
        std::fprintf(stderr, "%s\n", r.error().c_str());
        return 1;
    }
    const double per_second = static_cast<double>(r->evaluations) / r->seconds;
    const double eval_ms = 1e3 / per_second;
    std::printf("rate: search on the GPT-2 block, 8 × h100-sxm%s%s%s, threads %d: %ld evaluations in %.2f s = %.0f evaluations/s "
                "(%.2f ms each = %.1f× validate %.3f ms); target ≥ 10,000/s: %s; front %zu plans after %d generations\n",
                g_fusion ? " with fusion" : "", g_maps ? " with device maps" : "", g_cuts ? " with pipeline cuts" : "", threads, r->evaluations, r->seconds, per_second, eval_ms, eval_ms / validate_ms, validate_ms,
                per_second >= 10000 ? "met" : "NOT met", r->front.size(), r->generations);
    const search::Evaluator::Reuse u = e->reuse();
    auto share = [](std::int64_t hit, std::int64_t miss) {
        return 100.0 * static_cast<double>(hit) / std::max<double>(1, static_cast<double>(hit + miss));
    };
    char fused[48] = "";
    if (u.fusion_hits + u.fusion_misses > 0)
        std::snprintf(fused, sizeof fused, ", fused ops kept %.0f%%", share(u.fusion_hits, u.fusion_misses));
    std::printf("  incremental: splits replayed %.0f%% (%lld made), movement decisions kept %.0f%%%s, "
                "placed nodes kept %.0f%%, compiled pieces kept %.0f%%\n",
                share(u.splits_replayed, u.splits_made), static_cast<long long>(u.splits_made),
                share(u.movement_hits, u.movement_misses), fused, share(u.placement_hits, u.placement_misses),
                share(u.piece_hits, u.piece_misses));
    if (g_dominated) print_screening(streamed);
    const auto hits = e->stage_memo().hits(), misses = e->stage_memo().misses();
    std::printf("  shared stages: %lld of %lld shard/fuse stages from the memo (%.0f%%)\n", static_cast<long long>(hits),
                static_cast<long long>(hits + misses), 100.0 * static_cast<double>(hits) / std::max<double>(1, static_cast<double>(hits + misses)));
    if (e->incremental() && !g_no_baseline) {
        // The baseline in the same run: the same search, every node built again.
        auto fresh = evaluator(g, 8, 1);
        if (!fresh) return 1;
        fresh->set_incremental(false);
        auto b = search::optimize(*fresh, o);
        if (!b) return 1;
        const double base = static_cast<double>(b->evaluations) / b->seconds;
        std::printf("  baseline without incremental evaluation, same search: %.0f evaluations/s; incremental %.2f× it%s\n", base,
                    per_second / base, b->front.size() == r->front.size() ? " (the same front size)" : " (FRONTS DIFFER)");
    }
    return 0;
}

int stack(const Graph &block, int layers, double budget, long evaluations, int threads) {
    const Graph g = plan::without_shards(testing::stack_blocks(block, "x", "y", layers));
    const int devices = 64, nodes = 8;
    auto e = evaluator(g, devices, nodes);
    if (!e) return 1;
    search::SearchOptions o;
    o.budget_seconds = evaluations > 0 ? 0 : budget;  // a cap: the measurement is the stall
    o.max_evaluations = evaluations;
    if (evaluations > 0) o.stall_generations = 0;
    o.threads = threads;
    double last_move = 0;
    size_t last_size = 0;
    search::SearchHooks hooks;
    std::string last_keys;
    // Each front as it moved, for how much of the final front it held when.
    std::vector<std::pair<double, std::vector<std::vector<double>>>> fronts;
    std::vector<search::Candidate> made;  // for --plan-sizes
    if (g_plan_sizes)
        hooks.candidate = [&](const search::Scored &s) {
            if (made.size() < 200) made.push_back(s.candidate);
        };
    hooks.generation = [&](const search::Progress &p) {
        std::string keys;
        for (const search::Scored &s : p.front) keys += s.candidate.key() + ";";
        if (keys != last_keys) {
            last_keys = keys;
            last_move = p.seconds;
            last_size = p.front.size();
            std::vector<std::vector<double>> pts;
            for (const search::Scored &s : p.front)
                if (s.evaluation.point.feasible()) pts.push_back(s.evaluation.point.objectives);
            fronts.emplace_back(p.seconds, std::move(pts));
        }
    };
    o.seed = g_seed;
    auto r = search::optimize(*e, o, hooks);
    if (!r) {
        std::fprintf(stderr, "%s\n", r.error().c_str());
        return 1;
    }
    if (!g_export.empty()) {
        std::vector<search::FrontRow> rows;
        for (const search::Scored &s : r->front) rows.push_back({e->describe(s.candidate), s.candidate.key(), s.evaluation.figures});
        std::FILE *f = std::fopen(g_export.c_str(), "w");
        if (!f) {
            std::fprintf(stderr, "cannot write %s\n", g_export.c_str());
            return 1;
        }
        const std::string text = search::front_json({"GPT-2 stack", "h100-sxm", devices, g_seed}, rows);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
    }
    std::printf("stack: GPT-2 × %d on %d × h100-sxm (%d nodes), threads %d: %ld evaluations in %.1f s (%.1f/s), "
                "stopped: %s; the front last moved at %.1f s (%zu plans); target ≤ 10 s to a still front: %s\n",
                layers, devices, nodes, threads, r->evaluations, r->seconds, static_cast<double>(r->evaluations) / r->seconds,
                r->stopped.c_str(), last_move, last_size,
                r->stopped == "stalled" && r->seconds <= 10 ? "met" : "NOT met");
    // How close each earlier front came to the last one: its hypervolume against a
    // reference past the worst figure any of them had (1.1×).
    if (!fronts.empty()) {
        std::vector<double> reference(3, 0);
        for (const auto &[t, pts] : fronts)
            for (const auto &p : pts)
                for (size_t k = 0; k < 3 && k < p.size(); ++k) reference[k] = std::max(reference[k], p[k] * 1.1);
        const double last = search::hypervolume(fronts.back().second, reference);
        double at99 = -1, at999 = -1;
        for (const auto &[t, pts] : fronts) {
            const double hv = last > 0 ? search::hypervolume(pts, reference) / last : 0;
            if (at99 < 0 && hv >= 0.99) at99 = t;
            if (at999 < 0 && hv >= 0.999) at999 = t;
        }
        std::printf("  the front held 99%% of the last front's hypervolume from %.1f s, 99.9%% from %.1f s "
                    "(%zu moves; reference 1.1× the worst figures of any front)\n",
                    at99, at999, fronts.size());
    }
    if (g_plan_sizes) plan_sizes(*e, made, 200);
    double best_ratio = 0, fastest_ratio = 0, fastest_time = 0;
    std::string best_of, fastest;
    for (plan::Baseline b : {plan::Baseline::dp, plan::Baseline::tp, plan::Baseline::pp, plan::Baseline::dp_tp}) {
        plan::PlanRequest req;
        req.target = e->model().target();
        req.devices = devices;
        req.nodes = nodes;
        req.baseline = b;
        auto p = plan::make_plan(g, req);
        if (!p) {
            std::printf("  baseline %-6s refused: %s\n", plan::baseline_name(b), p.error().c_str());
            continue;
        }
        const search::Evaluation base = e->score(p->plan, p->prediction);
        bool covered = false;
        double ratio = 0;
        for (const search::Scored &s : r->front) {
            const auto &f = s.evaluation.point.objectives, &bf = base.point.objectives;
            covered = covered || (f[0] <= bf[0] && f[1] <= bf[1] && f[2] <= bf[2]);
            if (f[1] <= bf[1] && f[0] > 0) ratio = std::max(ratio, bf[0] / f[0]);
        }
        std::printf("  baseline %-6s step %s, peak %s, %d devices (predictions): covered by the front: %s; "
                    "best step-time ratio at no more memory: %.2f×\n",
                    plan::baseline_name(b), plan::seconds_text(base.figures.makespan).c_str(),
                    byte_text(static_cast<std::int64_t>(base.figures.peak)).c_str(), base.figures.devices,
                    covered ? "yes" : "NO", ratio);
        if (ratio > best_ratio) {
            best_ratio = ratio;
            best_of = plan::baseline_name(b);
        }
        if (fastest.empty() || base.figures.makespan < fastest_time) {
            fastest_time = base.figures.makespan;
            fastest = plan::baseline_name(b);
            fastest_ratio = ratio;
        }
    }
    std::printf("  best ratio over the baselines: %.2f× (over %s); goal ≥ 1.3×: %s; over the fastest baseline (%s): "
                "%.2f×\n",
                best_ratio, best_of.c_str(), best_ratio >= 1.3 ? "met" : "NOT met", fastest.c_str(), fastest_ratio);
    return 0;
}

int replan(const Graph &block, int threads) {
    const Graph g = plan::without_shards(block);
    Graph edited = g;
    const Operation *gelu = nullptr;
    for (const OpPtr &op : g.operations())
        if (op->kind == "gelu") gelu = op.get();
    if (!gelu) {
        std::fprintf(stderr, "replan: the block has no gelu to edit\n");
        return 1;
    }
    Operation relu = *gelu;
    relu.kind = "relu";
    relu.params = {};
    edited.put_op(relu);
    auto before = evaluator(g, 8, 1);
    auto after = evaluator(edited, 8, 1);
    if (!before || !after) return 1;
    search::SearchOptions o;
    o.budget_seconds = 60;
    o.threads = threads;
    auto first = search::optimize(*before, o);
    if (!first) {
        std::fprintf(stderr, "%s\n", first.error().c_str());
        return 1;
    }
    auto cold = search::optimize(*after, o);
    if (!cold) return 1;
    // Hypervolume against a reference past both searches' worst front figures (the
    // cold front's and the old front's, re-scored on the edited graph).
    std::vector<double> reference(3, 0);
    for (const search::Scored &s : cold->front)
        for (size_t k = 0; k < 3; ++k) reference[k] = std::max(reference[k], s.evaluation.point.objectives[k] * 1.5);
    for (const search::Scored &s : first->front) {
        const search::Evaluation ev = after->evaluate(s.candidate);
        if (ev.ok)
            for (size_t k = 0; k < 3; ++k) reference[k] = std::max(reference[k], ev.point.objectives[k] * 1.5);
    }
    auto hv = [&](const std::vector<search::Scored> &front) {
        std::vector<std::vector<double>> pts;
        for (const search::Scored &s : front)
            if (s.evaluation.point.feasible()) pts.push_back(s.evaluation.point.objectives);
        return search::hypervolume(pts, reference);
    };
    const double hv_cold = hv(cold->front);
    // Warm start from the old front: the time until its front is as good as the
    // cold search's final one (≥ 99% of its hypervolume).
    // The old front carried to the edited graph by op id, as the CLI's and the
    // studio's warm start carries it (search::carry_over).
    search::SearchOptions warm = o;
    for (const search::Scored &s : first->front) {
        const search::Space *from = before->space_of(s.candidate);
        const search::Space *to = after->space_of(s.candidate);
        if (!from || !to) continue;
        if (auto carried = search::carry_over(*from, s.candidate, *to)) warm.warm_start.push_back(std::move(*carried));
    }
    double reached = -1;
    search::SearchHooks hooks;
    hooks.generation = [&](const search::Progress &p) {
        if (reached < 0 && hv(p.front) >= 0.99 * hv_cold) reached = p.seconds;
    };
    auto again = search::optimize(*after, warm, hooks);
    if (!again) return 1;
    std::printf("replan: GPT-2 block on 8 × h100-sxm, 'gelu' made a relu, threads %d: first search %.2f s "
                "(%ld evaluations); a cold search of the edited graph stalls after %.2f s (%ld evaluations); warm-started "
                "from the first front it reaches 99%% of that front's hypervolume after %.3f s (and stalls after %.2f s, "
                "hypervolume %.3f× the cold front's); target ≤ 1 s: %s\n",
                threads, first->seconds, first->evaluations, cold->seconds, cold->evaluations, reached, again->seconds,
                hv_cold > 0 ? hv(again->front) / hv_cold : 0, reached >= 0 && reached <= 1 ? "met" : "NOT met");
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    long evaluations = 400;
    int threads = 0, layers = 12;
    double stack_budget = 120;
    long stack_evaluations = 0;
    std::string project, part = "all";
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--evaluations") && i + 1 < argc) evaluations = std::max(1L, std::atol(argv[++i]));
        else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::max(0, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc) layers = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--stack-budget") && i + 1 < argc) stack_budget = std::max(1.0, std::atof(argv[++i]));
        else if (!std::strcmp(argv[i], "--stack-evaluations") && i + 1 < argc) stack_evaluations = std::max(1L, std::atol(argv[++i]));
        else if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else if (!std::strcmp(argv[i], "--part") && i + 1 < argc) part = argv[++i];
        else if (!std::strcmp(argv[i], "--fusion")) g_fusion = true;
        else if (!std::strcmp(argv[i], "--maps")) g_maps = true;
        else if (!std::strcmp(argv[i], "--cuts")) g_cuts = true;
        else if (!std::strcmp(argv[i], "--no-stage-memo")) g_no_memo = true;
        else if (!std::strcmp(argv[i], "--no-incremental")) g_no_incremental = true;
        else if (!std::strcmp(argv[i], "--no-baseline")) g_no_baseline = true;
        else if (!std::strcmp(argv[i], "--export-front") && i + 1 < argc) g_export = argv[++i];
        else if (!std::strcmp(argv[i], "--plan-sizes")) g_plan_sizes = true;
        else if (!std::strcmp(argv[i], "--dominated")) g_dominated = true;
        else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) g_seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: bench_search [--part rate|stack|replan|all] [--evaluations N] [--threads T] "
                                 "[--layers L] [--stack-budget S] [--stack-evaluations N] [--project FILE] [--fusion] [--maps] [--cuts] [--no-stage-memo] [--no-incremental] [--no-baseline] [--seed N] [--export-front FILE] [--plan-sizes] [--dominated]\n");
            return 2;
        }
    }
    LoadResult block = load_project(testing::find_block_project(project));
    if (!block.ok()) {
        std::fprintf(stderr, "cannot load the GPT-2 block project\n");
        return 1;
    }
    const Graph g = plan::without_shards(block.graph);
    int rc = 0;
    if (part == "rate" || part == "all") rc |= rate(g, evaluations, threads);
    if (part == "replan" || part == "all") rc |= replan(block.graph, threads);
    if (part == "stack" || part == "all") rc |= stack(block.graph, layers, stack_budget, stack_evaluations, threads);
    return rc;
}
