// `tapestry optimize PROJECT --target T --devices N …`: the Pareto-front search
// (docs/search.md) — shard choices and placements evaluated through the plan
// compiler and the cost model, a progress line while it runs, then the front
// (every plan on it certified: its stages and its plan), the hand baselines beside
// it and whether the front covers each, and exports of the front and of a plan.
// Every time and memory figure is a prediction of the cost model, and says so.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>

#include "cli_support.h"
#include "common/checked_size.h"
#include "io/project_file.h"
#include "passes/substitute.h"
#include "plan/baselines.h"
#include "plan/certify.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "run_support.h"
#include "runtime/cpu/fusion_backend.h"
#include "runtime/cpu/memory_budget.h"
#include "search/front_file.h"
#include "search/optimizer.h"
#include "search/session_runs.h"
#include "store/session.h"
#include "target_support.h"
#include "verify/verify.h"

namespace tapestry::cli {
namespace {


using nlohmann::ordered_json;

struct OptimizeOptions {
    std::string project;
    std::string target = "h100-sxm";
    int devices = 8;
    int nodes = 0;
    std::string objectives = "time,memory,devices";
    std::string memory_cap;
    std::string max_time;
    std::string budget = "30s";
    long evaluations = 0;
    int population = 24;
    int stall = 12;
    std::uint64_t seed = 1;
    int threads = 0;
    std::string export_front;
    std::vector<std::string> export_plan;  // K FILE
    bool json = false;
    std::string session;
    std::string warm_start;  // a search run of the session, or "latest"
    bool check = false;           // a numeric check of every front plan
    bool no_fusion = false;       // leave fusion out of the search space
    bool maps = false;            // device maps in the search space
    bool cuts = false;            // pipeline cuts in the search space
    bool substitute = false;      // substitution choices (expand, fuse) in the search space
    std::uint64_t check_seed = 1;  // its random inputs
};

// "30s", "2m", "500ms", "30" (seconds) → seconds.
Expected<double, std::string> parse_seconds(const std::string &text) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (...) {
        return unexpected("'" + text + "' is not a duration (e.g. 30s)");
    }
    const std::string unit = text.substr(used);
    double scale = 0;
    if (unit.empty() || unit == "s") scale = 1;
    else if (unit == "ms") scale = 1e-3;
    else if (unit == "us" || unit == "µs") scale = 1e-6;
    else if (unit == "m" || unit == "min") scale = 60;
    else return unexpected("'" + text + "': unknown unit '" + unit + "' (ms, s, m)");
    if (!std::isfinite(v) || v < 0) return unexpected("'" + text + "' is not a duration ≥ 0");
    return v * scale;
}

ordered_json figures_json(const search::Figures &f) {
    return ordered_json::parse(search::figures_json_text(f));
}

// The front's rows as the front files take them.
std::vector<search::FrontRow> front_rows(const std::vector<search::Scored> &front, const search::Evaluator &evaluator) {
    std::vector<search::FrontRow> rows;
    for (const search::Scored &s : front) rows.push_back({evaluator.describe(s.candidate), s.candidate.key(), s.evaluation.figures});
    return rows;
}

// --warm-start's run: `which` a run id of the session, or "latest" (the newest
// run of this graph's searches project), its front carried to the evaluator's
// graph. It only reads the session: a refusal leaves it as it was (no searches
// project or version made for a search that does not run).
struct WarmStartOf {
    store::SearchRunId run = 0;
    search::WarmStart start;
};
Expected<WarmStartOf, std::string> warm_start_of(const store::Session &session, const Graph &graph,
                                                  const std::string &which, const search::Evaluator &evaluator) {
    WarmStartOf out;
    if (which == "latest") {
        const std::string name = search::searches_project(graph);
        auto project = store::find_project(session, name);
        if (!project) return unexpected(project.error().message);
        std::vector<store::SearchRunRecord> runs;
        if (*project != 0) {
            auto kept = session.search_runs(*project);
            if (!kept) return unexpected(kept.error().message);
            runs = std::move(kept).value();
        }
        if (runs.empty())
            return unexpected("no search run of project '" + name +
                              "' to start from (tapestry session searches lists the runs)");
        out.run = runs.back().id;
    } else {
        if (which.empty() || which.size() > 18 || which.find_first_not_of("0123456789") != std::string::npos)
            return unexpected("expected a search run's number or 'latest', got '" + which + "'");
        out.run = std::stoll(which);
    }
    auto start = search::warm_start_from_session(session, out.run, evaluator);
    if (!start) return unexpected(start.error());
    out.start = std::move(start).value();
    return out;
}

int optimize_command(const OptimizeOptions &o) {
    // From the command's start: a Ctrl-C while the project loads stops the search
    // at its first look instead of ending the process.
    InterruptGuard interrupt;
    auto objectives = search::parse_objectives(o.objectives);
    if (!objectives) {
        std::cerr << "tapestry: --objectives: " << objectives.error() << "\n";
        return kExitUsage;
    }
    search::Constraints constraints;
    if (!o.memory_cap.empty()) {
        auto b = cpu::parse_byte_size(o.memory_cap);
        if (!b || *b <= 0) {
            std::cerr << "tapestry: --memory-cap: " << (b ? "'" + o.memory_cap + "' is not a positive size" : b.error())
                      << "\n";
            return kExitUsage;
        }
        constraints.memory_cap = static_cast<double>(*b);
    }
    if (!o.max_time.empty()) {
        auto t = parse_seconds(o.max_time);
        if (!t) {
            std::cerr << "tapestry: --max-time: " << t.error() << "\n";
            return kExitUsage;
        }
        constraints.max_time = *t;
    }
    if (!o.warm_start.empty() && o.session.empty()) {
        std::cerr << "tapestry: --warm-start: needs --session (the session that keeps the run)\n";
        return kExitUsage;
    }
    auto budget = parse_seconds(o.budget);
    if (!budget) {
        std::cerr << "tapestry: --budget: " << budget.error() << "\n";
        return kExitUsage;
    }
    long export_index = -1;
    std::string export_file;
    if (!o.export_plan.empty()) {
        const std::string &k = o.export_plan[0];
        if (!k.empty() && k.size() <= 9 && k.find_first_not_of("0123456789") == std::string::npos)
            export_index = std::stol(k);
        if (export_index < 0 || o.export_plan.size() != 2) {
            std::cerr << "tapestry: --export-plan: expected K FILE (K: a front index, 0 first; got '" << k << "')\n";
            return kExitUsage;
        }
        export_file = o.export_plan[1];
        if (const std::string why = output_file_refusal(export_file); !why.empty()) {
            std::cerr << "tapestry: --export-plan: " << why << "\n";
            return kExitUsage;
        }
    }
    if (!o.session.empty())
        if (const std::string why = session_refusal(o.session); !why.empty()) {
            std::cerr << "tapestry: --session: " << why << "\n";
            return kExitInvalid;
        }
    auto target = resolve_target(o.target, o.threads > 0 ? o.threads : 2, o.session, false);
    if (!target) {
        std::cerr << "tapestry: --target: " << target.error() << "\n";
        return kExitUsage;
    }
    if (const std::string missing = target->missing_figures(); !missing.empty()) {
        std::cerr << "tapestry: --target: target '" << target->name << "' lacks " << missing << "\n";
        return kExitUsage;
    }
    const bool energy = std::find(objectives->begin(), objectives->end(), search::Objective::energy) != objectives->end();
    if (energy && !target->device.power.present) {
        std::cerr << "tapestry: --objectives: target '" << target->name
                  << "' gives no device power (device.power), so there is no energy to predict\n";
        return kExitUsage;
    }
    auto shape = cost::cluster_shape(*target, o.devices, o.nodes);
    if (!shape) {
        std::cerr << "tapestry: --devices: " << shape.error() << "\n";
        return kExitUsage;
    }
    // With --check the project's values and random inputs are loaded too (the
    // numeric check runs the plans' stages on them).
    PreparedRun prepared;
    std::optional<Graph> project_graph;
    if (o.check) {
        prepared = prepare_run(o.project, "", o.check_seed, PrepareOptions{true, 0, false});
        if (!report_preparation(o.project, prepared, o.json)) return kExitInvalid;
        project_graph = *prepared.graph;
    } else {
        Loaded loaded = load_valid(o.project);
        for (const Issue &i : loaded.issues) report_issue(o.project, i);
        if (!loaded.graph) return kExitInvalid;
        project_graph = std::move(loaded.graph);
    }
    // The search decides the whole sharding: shards the project has are dropped.
    const Graph g = plan::without_shards(*project_graph);
    auto space = search::Space::of(g, shape->devices());
    if (!space) {
        report_error(o.project, space.error());
        return kExitInvalid;
    }
    // What the session measured of the target calibrates every figure, as `tapestry
    // plan --session` does (docs/cost-model.md); no session: uncalibrated.
    auto calibration = session_calibration(o.session, *target);
    if (!calibration) {
        std::cerr << "tapestry: --session: " << o.session << ": " << calibration.error() << "\n";
        return kExitInvalid;
    }
    // Fusion is a choice of each candidate, checked against the CPU executor's fused
    // kernels (the cuda backend runs every chain they do), as `tapestry plan --fuse`.
    std::vector<const FusionBackend *> fusion;
    if (!o.no_fusion) fusion.push_back(&cpu::fusion_backend());
    // Device maps (on request): an op's pieces placed from a device of its own, past
    // the rule. They widen the space, which a fixed budget then covers more thinly
    // (docs/search.md, "Device maps").
    space->allow_maps(o.maps);
    // Pipeline cuts (on request): a pipeline's stages cut at ops of its own choosing
    // instead of by FLOPs (docs/search.md, "Pipeline cuts").
    space->allow_cuts(o.cuts);
    search::Evaluator evaluator(g, *space, *target, *shape, *objectives, constraints, *calibration, fusion);
    // Substitution choices (on request): a candidate may start from the graph the
    // substitution pass makes for a goal (docs/search.md, "Substitution").
    std::vector<std::string> substitutions;
    if (o.substitute) {
        auto offered = evaluator.offer_substitutions(substitution_goals());
        if (!offered) {
            report_error(o.project, offered.error());
            return kExitInvalid;
        }
        substitutions = std::move(offered).value();
    }

    search::SearchOptions so;
    so.population = o.population;
    so.budget_seconds = *budget;
    so.max_evaluations = o.evaluations;
    so.stall_generations = o.stall;
    so.seed = o.seed;
    so.threads = o.threads;
    // With a session the search is kept there as it goes, as the studio keeps its
    // own (search/session_runs.h): the studio's Optimize dock shows it again. A
    // session that cannot be written is refused before the search; a write that
    // fails during it stops the keeping, not the search.
    std::unique_ptr<store::Session> session;
    search::RunKeeper keeper;
    store::ProjectId kept_project = 0;
    std::string warm_line;
    ordered_json warm_json;  // null without a warm start
    store::SearchRunId warm_run = 0;
    if (!o.session.empty()) {
        auto opened = store::Session::open(o.session, store::OpenMode::read_write, std::chrono::seconds(10));
        if (!opened) {
            std::cerr << "tapestry: --session: " << opened.error().message << "\n";
            return kExitInvalid;
        }
        session = std::move(opened).value();
        // Re-planning after an edit: an earlier run's front, carried to this graph
        // by op id, seeds the first population (docs/search.md, "Warm start").
        // Resolved before the session is written, so a refusal writes nothing.
        if (!o.warm_start.empty()) {
            auto warm = warm_start_of(*session, *project_graph, o.warm_start, evaluator);
            if (!warm) {
                std::cerr << "tapestry: --warm-start: " << o.session << ": " << warm.error() << "\n";
                return kExitInvalid;
            }
            warm_line = "warm start: " + std::to_string(warm->start.candidates.size()) + " of the " +
                        std::to_string(warm->start.front) + " plans on the front of search run " +
                        std::to_string(warm->run) + search::warm_start_losses(warm->start);
            warm_json = {{"search_run", warm->run},
                         {"front", warm->start.front},
                         {"carried", warm->start.candidates.size()},
                         {"dropped", warm->start.dropped},
                         {"merged", warm->start.merged}};
            so.warm_start = std::move(warm->start.candidates);
            warm_run = warm->run;
        }
        auto version = search::searched_version(*session, *project_graph);
        if (!version) {
            std::cerr << "tapestry: --session: " << o.session << ": " << version.error() << "\n";
            return kExitInvalid;
        }
        kept_project = version->project;
        keeper = search::RunKeeper(*session, version->version, target->name,
                                   search::RunSettings{o.devices, o.nodes, *objectives, constraints, so, !o.no_fusion,
                                                       o.maps, o.cuts, o.substitute, warm_run},
                                   o.seed);
        if (!keeper.error().empty()) {
            std::cerr << "tapestry: --session: " << o.session << ": " << keeper.error() << "\n";
            return kExitInvalid;
        }
    }
    search::SearchHooks hooks;
    if (session) hooks.candidate = [&](const search::Scored &s) { keeper.add(s, evaluator); };
    std::vector<std::string> kept_front;
    ProgressBar bar(!o.json);
    hooks.generation = [&](const search::Progress &p) {
        if (session) {
            std::vector<std::string> keys = search::front_keys(p.front);
            const bool moved = keys != kept_front;
            keeper.flush(keys, moved);
            if (moved) kept_front = std::move(keys);
        }
        std::string best;
        for (size_t k = 0; k < objectives->size(); ++k) {
            double v = std::numeric_limits<double>::infinity();
            for (const search::Scored &s : p.front) v = std::min(v, s.evaluation.point.objectives[k]);
            if (std::isfinite(v)) best += " · best " + std::string(search::objective_name((*objectives)[k])) + " " +
                                          search::figure_text((*objectives)[k], v);
        }
        bar.update("generation " + std::to_string(p.generation) + " · " + std::to_string(p.evaluations) + " plans (" +
                       formatted(p.evaluations_per_second, "%.0f") + "/s) · front " + std::to_string(p.front.size()) + best,
                   static_cast<int>(std::min(100.0, *budget > 0 ? 100 * p.seconds / *budget : 0)), 100);
    };
    hooks.stop = &InterruptGuard::flag();
    auto result = search::optimize(evaluator, so, hooks);
    interrupt.release();
    bar.clear();
    if (session) {
        if (result) keeper.finish(search::front_keys(result->front), result->stopped == "stopped" ? "stopped" : "finished");
        else keeper.finish(kept_front, "failed");
        session.reset();  // the session's lock goes with it: the studio may open it now
    }
    if (!keeper.error().empty())
        std::cerr << "tapestry: --session: " << o.session << ": the search is kept only in part: " << keeper.error()
                  << "\n";
    if (!result) {
        report_error(o.project, result.error());
        return kExitInvalid;
    }
    const std::string kept_line =
        keeper.run() == 0 ? ""
                          : "kept in " + o.session + " as search run " + std::to_string(keeper.run()) + " of project '" +
                                search::searches_project(*project_graph) + "'" +
                                (keeper.error().empty() ? "" : " (in part: " + keeper.error() + ")");

    // Trust: every plan on the front is made again with its certificates; one that
    // fails is a bug of the passes or the compiler — reported, never shown.
    std::vector<search::Scored> front;
    std::vector<search::Materialized> plans;
    std::vector<std::string> checks;  // per front plan, its numeric check (with --check)
    int failed = 0;
    for (const search::Scored &s : result->front) {
        auto m = evaluator.materialize(s.candidate, true);
        std::string why;
        if (!m) why = m.error();
        else {
            for (const Stage &st : m->stages)
                if (!st.certificate.pass()) why = "stage '" + st.pass + "': " + st.certificate.badge();
            const Certificate pc = plan::certify_plan(m->plan);
            if (why.empty() && !pc.pass()) why = "plan: " + pc.badge();
        }
        if (!why.empty()) {
            ++failed;
            std::cerr << "tapestry: internal error: the front's plan '" << evaluator.describe(s.candidate)
                      << "' fails its certificate (" << why << "); it is left out — please report it\n";
            continue;
        }
        // On request, a numeric check: the plan's placed stage run on the CPU
        // executor against the unsharded graph and the double-precision oracle.
        if (o.check) {
            verify::VerifyOptions vo;
            vo.original = &g;
            vo.threads = o.threads > 0 ? o.threads : 2;
            auto report = verify::check_equivalence(m->stages.back().graph, OpLibrary::standard(), prepared.inputs, vo);
            std::string numeric;
            if (!report) numeric = "cannot check: " + report.error();
            else {
                // The comparison nearest its tolerance: its error and the tolerance applied
                // (atol in units of the output's scale, as tapestry verify applies it: docs/cli.md).
                const verify::OutputComparison *worst = nullptr;
                auto share = [](const verify::OutputComparison &c) { return c.max_abs_error / std::max(c.atol, 1e-30); };
                for (const verify::OutputComparison &c : report->comparisons)
                    if (!worst || share(c) > share(*worst)) worst = &c;
                const bool pass = report->pass();
                numeric = std::string(pass ? "PASS" : "FAIL");
                if (worst)
                    numeric += " (|Δ| ≤ " + formatted(worst->max_abs_error, "%.3g") + ", atol " +
                               formatted(worst->atol, "%.3g") + ")";
                if (!pass) why = "numeric check: " + numeric;
            }
            if (!report) why = "numeric check: " + numeric;
            if (!why.empty()) {
                ++failed;
                std::cerr << "tapestry: internal error: the front's plan '" << evaluator.describe(s.candidate)
                          << "' fails its " << why << "; it is left out — please report it\n";
                continue;
            }
            checks.push_back(numeric);
        }
        front.push_back(s);
        plans.push_back(std::move(m).value());
    }

    // The hand baselines, through the same compiler and model.
    struct BaselineRow {
        std::string name, refused;
        search::Evaluation evaluation;
        int covered_by = -1;  // a front plan at least as good on every objective
    };
    std::vector<BaselineRow> baselines;
    for (plan::Baseline b : {plan::Baseline::dp, plan::Baseline::tp, plan::Baseline::pp, plan::Baseline::dp_tp}) {
        BaselineRow row;
        row.name = plan::baseline_name(b);
        plan::PlanRequest req;
        req.target = *target;
        req.devices = o.devices;
        req.nodes = o.nodes;
        req.baseline = b;
        req.calibration = calibration->samples();
        req.wake = calibration->wake();
        req.wake_launches = calibration->wake_launches();
        auto r = plan::make_plan(g, req);
        if (!r) row.refused = r.error();
        else {
            row.evaluation = evaluator.score(r->plan, r->prediction);
            for (size_t i = 0; i < front.size() && row.covered_by < 0; ++i) {
                const auto &f = front[i].evaluation.point.objectives, &bo = row.evaluation.point.objectives;
                bool as_good = true;
                for (size_t k = 0; k < f.size(); ++k) as_good = as_good && f[k] <= bo[k];
                if (as_good) row.covered_by = static_cast<int>(i);
            }
        }
        baselines.push_back(std::move(row));
    }

    if (!o.export_front.empty()) {
        std::string text;
        if (front_format(o.export_front) == "csv")
            text = search::front_csv(front_rows(front, evaluator));
        else
            text = search::front_json({o.project, target->name, o.devices, o.seed}, front_rows(front, evaluator));
        if (!write_output(o.export_front, text, o.project)) return kExitInvalid;
    }
    if (export_index >= 0) {
        if (export_index >= static_cast<long>(plans.size())) {
            std::cerr << "tapestry: --export-plan: the front has " << plans.size() << " plans (0 … " << plans.size() - 1
                      << ")\n";
            return kExitUsage;
        }
        const search::Materialized &m = plans[static_cast<size_t>(export_index)];
        plan::Plan p = m.plan;
        p.source.project = o.project;
        if (std::string e = plan::save_plan(p, export_file, &m.prediction); !e.empty()) {
            report_error(o.project, e);
            return kExitInvalid;
        }
    }

    if (o.json) {
        ordered_json j;
        j["project"] = o.project;
        j["target"] = target->name;
        j["devices"] = o.devices;
        j["objectives"] = o.objectives;
        j["fusion"] = !o.no_fusion;
        j["maps"] = o.maps;
        j["cuts"] = o.cuts;
        j["substitutions"] = substitutions;
        j["label"] = "predictions of the cost model (not measurements)";
        const cost::CalibrationError ce = calibration->error();
        j["calibration"] = {{"samples", ce.samples},
                            {"median_error_uncalibrated", ce.median_before},
                            {"median_error_calibrated", ce.median_after},
                            {"wake_launches", calibration->wake_launches()}};
        j["evaluations"] = result->evaluations;
        j["invalid"] = result->invalid;
        j["generations"] = result->generations;
        j["seconds"] = result->seconds;
        j["stopped"] = result->stopped;
        j["warm_start"] = warm_json;
        ordered_json fj = ordered_json::array();
        for (size_t i = 0; i < front.size(); ++i)
            fj.push_back({{"index", i},
                          {"plan", evaluator.describe(front[i].candidate)},
                          {"figures", figures_json(front[i].evaluation.figures)},
                          {"certificates", "PASS"},
                          {"numeric_check", o.check ? ordered_json(checks[i]) : ordered_json(nullptr)}});
        j["front"] = fj;
        ordered_json bj = ordered_json::array();
        for (const BaselineRow &b : baselines) {
            if (!b.refused.empty()) bj.push_back({{"baseline", b.name}, {"refused", b.refused}});
            else
                bj.push_back({{"baseline", b.name},
                              {"figures", figures_json(b.evaluation.figures)},
                              {"covered_by", b.covered_by}});
        }
        j["baselines"] = bj;
        ordered_json mj = ordered_json::array();
        for (const search::MutatorStats &m : result->mutators)
            mj.push_back({{"mutator", m.name}, {"trials", m.trials}, {"successes", m.successes}, {"weight", m.weight}});
        j["mutators"] = mj;
        j["certificate_failures"] = failed;
        if (keeper.run() != 0)
            j["session"] = {{"file", o.session},
                            {"project", search::searches_project(*project_graph)},
                            {"project_id", kept_project},
                            {"search_run", keeper.run()},
                            {"error", keeper.error().empty() ? ordered_json(nullptr) : ordered_json(keeper.error())}};
        print_json(j);
        return failed ? kExitInvalid : kExitOk;
    }
    std::cout << o.project << " on " << o.devices << " × " << target->title << ": " << result->evaluations
              << " plans evaluated in " << formatted(result->seconds, "%.1f") << " s ("
              << formatted(result->evaluations / std::max(1e-9, result->seconds), "%.0f") << "/s), "
              << result->generations << " generations, stopped: "
              << (result->stopped == "stopped" ? std::string("interrupted (Ctrl-C)") : result->stopped) << "\n";
    std::cout << "  " << plan::calibration_summary(*calibration, target->name, *shape) << "\n";
    if (!warm_line.empty()) std::cout << "  " << warm_line << "\n";
    for (const std::string &line : substitutions) std::cout << "  substitution " << line << "\n";
    std::cout << "  front (predictions; every plan certified" << (o.check ? ", and numerically checked on the CPU" : "")
              << "): " << front.size() << " plans\n";
    // The search keeps infeasible candidates only while none is feasible: then the
    // front is of the least violating ones, and the user must hear that first.
    if (!front.empty() && std::all_of(front.begin(), front.end(),
                                      [](const search::Scored &s) { return s.evaluation.figures.violation > 0; }))
        std::cout << "  no plan found keeps the constraints: every plan below exceeds them (by the least excess "
                     "found), as its peak memory or step time says\n";
    std::vector<std::vector<std::string>> rows{{"#", "step time", "peak memory", "devices", "communication", "plan"}};
    if (energy) rows.front().insert(rows.front().end() - 1, "energy");
    if (o.check) rows.front().insert(rows.front().end() - 1, "numeric check");
    for (size_t i = 0; i < front.size(); ++i) {
        const search::Figures &f = front[i].evaluation.figures;
        rows.push_back({std::to_string(i), plan::seconds_text(f.makespan),
                        byte_text(static_cast<std::int64_t>(f.peak)) + (f.violation > 0 ? " (" + f.violated + ")" : ""),
                        std::to_string(f.devices), byte_text(static_cast<std::int64_t>(f.comm_bytes)),
                        evaluator.summary(front[i].candidate)});
        if (energy) rows.back().insert(rows.back().end() - 1, search::joules_text(f.energy));
        if (o.check) rows.back().insert(rows.back().end() - 1, checks[i]);
    }
    print_table(rows, "  ");
    std::cout << "  hand baselines (same compiler and model):\n";
    std::vector<std::vector<std::string>> brows{{"baseline", "step time", "peak memory", "devices", "covered by"}};
    for (const BaselineRow &b : baselines) {
        if (!b.refused.empty()) {
            brows.push_back({b.name, "refused: " + b.refused, "", "", ""});
            continue;
        }
        const search::Figures &f = b.evaluation.figures;
        brows.push_back({b.name, plan::seconds_text(f.makespan), byte_text(static_cast<std::int64_t>(f.peak)),
                         std::to_string(f.devices), b.covered_by >= 0 ? "#" + std::to_string(b.covered_by) : "not covered"});
    }
    print_table(brows, "  ");
    if (!o.export_front.empty()) std::cout << "  front written to " << o.export_front << "\n";
    if (export_index >= 0) std::cout << "  plan #" << export_index << " written to " << export_file << "\n";
    if (!kept_line.empty()) std::cout << "  " << kept_line << "\n";
    return failed ? kExitInvalid : kExitOk;
}

}  // namespace

void add_optimize_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<OptimizeOptions>();
    CLI::App *cmd = app.add_subcommand(
        "optimize", "Search the Pareto front of plans (step time, peak memory per device, devices) for a target.");
    cmd->add_option("PROJECT", o->project, "Project file (*.tapestry.json)")->required();
    cmd->add_option("--target", o->target, "Built-in target (tapestry targets) or a target file")->capture_default_str();
    cmd->add_option("--devices", o->devices, "Device budget")->capture_default_str()->check(CLI::Range(1, 65536));
    cmd->add_option("--nodes", o->nodes, "Nodes they are spread over (0: as the target's clusters suggest)")
        ->check(CLI::Range(0, 65536));
    cmd->add_option("--objectives", o->objectives, "Objectives to minimise: time, memory, devices, communication, energy")
        ->capture_default_str();
    cmd->add_option("--memory-cap", o->memory_cap, "Peak memory allowed per device (e.g. 80GiB; default: the target's)");
    cmd->add_option("--max-time", o->max_time, "Step time allowed (e.g. 5ms)");
    cmd->add_option("--budget", o->budget, "Time budget (e.g. 30s, 2m; 0: none)")->capture_default_str();
    cmd->add_option("--evaluations", o->evaluations, "Evaluation budget (0: none)")->check(CLI::Range(0L, 1L << 40));
    cmd->add_option("--population", o->population, "Population size")->capture_default_str()->check(CLI::Range(2, 100000));
    cmd->add_option("--stall", o->stall, "Stop when the front has not moved for this many generations (0: never)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    add_seed_option(*cmd, "--seed", o->seed,
                    "Random seed (the same seed gives the same front at any thread count under --evaluations)");
    cmd->add_option("--threads", o->threads, "Threads evaluating candidates (0: every core)")->check(CLI::Range(0, 1024));
    checked_front_file(cmd->add_option("--export-front", o->export_front, "Write the front (.json, or .csv)"));
    cmd->add_option("--export-plan", o->export_plan, "Write the front's plan K to FILE (tapestry-plan JSON)")
        ->expected(2);
    cmd->add_flag("--json", o->json, "Machine-readable result on stdout");
    cmd->add_option("--session", o->session,
                    "Session whose targets (user copies, the measured host) come first, and whose launches on the "
                    "target calibrate the figures; the search is kept there (project '<graph> (searches)'), for "
                    "tapestry session searches and the studio's Optimize dock");
    cmd->add_option("--warm-start", o->warm_start,
                    "Start from the front of search run RUN of the --session (a number, or 'latest': this graph's "
                    "newest), carried to this graph by op id: re-planning after an edit");
    cmd->add_flag("--no-fusion", o->no_fusion,
                  "Leave fusion out of the search (by default each candidate may fuse elementwise chains into "
                  "their producers)");
    cmd->add_flag("--maps", o->maps,
                  "Let a candidate place an op's pieces from a device of its own instead of by the placement rule "
                  "(device maps: a wider space, searched more thinly in the same budget)");
    cmd->add_flag("--cuts", o->cuts,
                  "Let a pipeline candidate cut its stages at operations of its own choosing instead of by FLOPs "
                  "(a wider space, searched more thinly in the same budget)");
    cmd->add_flag("--substitute", o->substitute,
                  "Let a candidate start from the graph the substitution pass makes (goal expand: attention, layer "
                  "norm … made of shardable ops; goal fuse), each stage certified (a wider space)");
    cmd->add_flag("--check", o->check,
                  "Check every front plan numerically: its stage run on the CPU executor against the unsharded graph "
                  "and the double-precision oracle, on random inputs");
    add_seed_option(*cmd, "--check-seed", o->check_seed, "Seed of the numeric check's random inputs");
    cmd->footer("Every figure is a prediction of the cost model (docs/cost-model.md); every plan on the front is certified.\n"
                "Exit codes: 0 done, 1 bad project, nothing plannable, a certificate or numeric check failed, 2 usage.");
    cmd->callback([o, &action] { action = [o] { return optimize_command(*o); }; });
}

}  // namespace tapestry::cli
