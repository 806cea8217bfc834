// Benchmark of launching plans (issue 17, docs/launch.md), two parts:
//   overhead  — a 1-device plan of each example launched on the cpu backend
//               against `tapestry run`'s executor (cpu::Program, default options,
//               2 threads) on the same inputs, alternating in the same run; the
//               ratio of medians of the two wall times. Target ≤ 1.05.
//   accuracy  — the GPT-2 block planned for the measured host target on 1, 2 and
//               4 devices × round-robin and the four baselines, each launched
//               F + N times (--fits, default 3; --rounds, default 5; the process's
//               very first launch, which warms it, comes before and is not
//               counted), and up to K plans of a search's front for 4 devices
//               (--front, default 6) likewise, in rounds that launch every plan
//               once (the VM's drift weighs on all alike): every step of the
//               first F launches fits the calibration table and those launches
//               the shared-core wake (launch::fit_wake), the median of the other
//               N (per step, and the wall time) is compared with the predictions
//               with and without them. Per step
//               (kernels and copies): median |predicted − measured| / measured,
//               target ≤ 15% after calibration; per plan: Kendall τ between
//               predicted and measured step time (makespan vs wall), target ≥ 0.8.
//               Then held out: two folds, each fitting on every other plan's
//               launches and predicting the plans it did not see (the same
//               targets), so the figures say how the table carries to new plans.
//               Last, where a per-plan miss comes from: each test launch's own
//               steps replayed through its plan's schedule against its wall (the
//               schedule model alone), and how far one plan's launches spread.
//   bench_launch [--part overhead|accuracy|all] [--rounds N] [--fits F] [--front K] [--project FILE] [--steps]
//   (--steps: each launched step's median time; in the accuracy part beside its
//   first fitting launch's, its prediction and its calibrated prediction)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "cost/model.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "launch/accuracy.h"
#include "launch/check.h"
#include "launch/cpu_backend.h"
#include "launch/launch.h"
#include "launch/records.h"
#include "ops/library.h"
#include "plan/planner.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/host_probe.h"
#include "search/optimizer.h"

using namespace tapestry;

namespace {

std::string source_dir() {
    const char *d = std::getenv("TAPESTRY_SOURCE_DIR");
    return d ? d : ".";
}

Graph load(const std::string &path) {
    LoadResult r = load_project(path);
    if (!r.ok()) {
        std::fprintf(stderr, "%s does not load\n", path.c_str());
        std::exit(1);
    }
    return r.graph;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The OpenMP wait policy in effect, as the figures depend on it: each thread that
// runs kernels has its own OpenMP team, whose threads spin for a while after each
// parallel region under libgomp's default before they sleep; alternating
// executors in one process (as both parts do) on two cores then time each
// against the other's spinning (docs/benchmarks.md, "Launch benchmark").
const char *wait_policy() {
    const char *p = std::getenv("OMP_WAIT_POLICY");
    return p && *p ? p : "default (threads spin, then sleep)";
}

// One example's two contenders: `tapestry run`'s whole call (compile the program,
// run it) and a launch of its 1-device plan (prepare the kernels, allocate, load
// the inputs, run), on the same random inputs.
struct Contenders {
    Graph graph;
    plan::PlanResult planned;
    std::map<TensorId, TensorData> run_inputs, launch_inputs;
    cpu::CpuOptions run_options;
    std::unique_ptr<launch::Backend> backend;

    static Expected<Contenders, std::string> of(const std::string &name) {
        Contenders c;
        c.graph = load(source_dir() + "/projects/" + name + ".tapestry.json");
        plan::PlanRequest req;
        req.target = *cost::builtin_target("h100-sxm");
        req.devices = 1;
        auto r = plan::make_plan(c.graph, req);
        if (!r) return unexpected(name + ": " + r.error());
        c.planned = std::move(r).value();
        c.launch_inputs = make_random_inputs(c.planned.plan.graph, 1);
        c.run_inputs = make_random_inputs(c.graph, 1);
        c.run_options.threads = 2;
        launch::CpuBackendOptions bo;
        bo.kernel_threads = 2;
        c.backend = launch::make_cpu_backend(bo);
        return c;
    }
    // Whole-call and steps-only milliseconds of one run.
    Expected<std::pair<double, double>, std::string> run() const {
        const auto t0 = std::chrono::steady_clock::now();
        auto fresh = cpu::Program::compile(graph, OpLibrary::standard(), run_options);
        if (!fresh) return unexpected(fresh.error());
        auto a = (*fresh)->run(run_inputs);
        if (!a) return unexpected(std::string("the run failed"));
        return std::pair{std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                         a->wall_milliseconds};
    }
    // The same of one launch (its steps' times in `steps`, when given).
    Expected<std::pair<double, double>, std::string> launch(std::vector<std::vector<double>> *steps = nullptr) const {
        const auto t0 = std::chrono::steady_clock::now();
        auto b = launch::launch_plan(planned.plan, *backend, launch_inputs);
        if (!b || !b->ok()) return unexpected(std::string("the launch failed"));
        const double call = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (steps)
            for (const launch::MeasuredStep &m : b->steps) (*steps)[static_cast<size_t>(m.step)].push_back((m.end - m.start) * 1e3);
        return std::pair{call, b->wall_seconds * 1e3};
    }
};

const char *kExamples[] = {"mlp", "mlp_bf16", "gpt2_block", "attention", "convnet"};

// A child process of the separate-process comparison: one contender of one
// example, a warm-up call, then `calls` timed calls, each printed "call MS STEPS_MS".
int child(const std::string &kind, const std::string &name, int calls) {
    auto c = Contenders::of(name);
    if (!c) return std::fprintf(stderr, "%s\n", c.error().c_str()), 1;
    for (int k = 0; k <= calls; ++k) {
        auto t = kind == "run" ? c->run() : c->launch();
        if (!t) return std::fprintf(stderr, "%s: %s\n", name.c_str(), t.error().c_str()), 1;
        if (k > 0) std::printf("call %.6f %.6f\n", t->first, t->second);
    }
    return 0;
}

// This executable's path (to start its children).
std::string self_path() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Runs a child and collects its calls' (whole call, steps only) milliseconds.
bool run_child(const std::string &self, const char *kind, const char *name, int calls, std::vector<double> &call_ms,
               std::vector<double> &steps_ms) {
    const std::string cmd = "'" + self + "' --child " + kind + " " + name + " " + std::to_string(calls);
    FILE *f = popen(cmd.c_str(), "r");
    if (!f) return false;
    char line[256];
    int got = 0;
    while (std::fgets(line, sizeof line, f)) {
        double a = 0, b = 0;
        if (std::sscanf(line, "call %lf %lf", &a, &b) == 2) {
            call_ms.push_back(a);
            steps_ms.push_back(b);
            ++got;
        }
    }
    return pclose(f) == 0 && got == calls;
}

int overhead(int rounds, bool per_step) {
    std::printf("OpenMP wait policy: %s\n", wait_policy());
    std::printf("overhead: 1-device plan launched (cpu backend) vs tapestry run's executor (cpu::Program, 2 threads), "
                "same inputs, alternating, at least %d rounds and 3 s; wall = first step's start to last step's end\n", rounds);
    std::printf(" in one process (each timed against the other's OpenMP threads, which may still spin):\n");
    int worse = 0;
    for (const char *name : kExamples) {
        auto c = Contenders::of(name);
        if (!c) return std::fprintf(stderr, "%s\n", c.error().c_str()), 1;
        std::vector<double> run_ms, launch_ms, run_call_ms, launch_call_ms;
        std::vector<std::vector<double>> step_ms(c->planned.plan.steps.size());
        // Round 0 warms both up; then at least `rounds` rounds and at least 3 s of
        // them, so that the small examples (a few ms a call) are timed many times.
        const auto began = std::chrono::steady_clock::now();
        for (int k = 0; k < rounds + 1 || (std::chrono::steady_clock::now() - began < std::chrono::seconds(3) && k < 500);
             ++k) {
            // `tapestry run` compiles its program (oneDNN primitives) and runs it; a
            // launch prepares its kernels and runs: both whole calls are timed.
            auto a = c->run();
            auto b = c->launch(k > 0 ? &step_ms : nullptr);
            if (!a || !b) return std::fprintf(stderr, "%s: %s\n", name, (!a ? a.error() : b.error()).c_str()), 1;
            if (k == 0) continue;
            run_call_ms.push_back(a->first);
            run_ms.push_back(a->second);
            launch_call_ms.push_back(b->first);
            launch_ms.push_back(b->second);
        }
        // The whole call is what a user waits for: the launch's covers preparing its
        // kernels, allocating its arenas and loading the inputs; run's its compile
        // (the kernels), its arena and inputs.
        const double ratio = median(launch_call_ms) / median(run_call_ms);
        worse += ratio > 1.05;
        std::printf("  %-10s whole call: run %8.2f ms  launch %8.2f ms  launch/run %.3f %-7s   steps only: run %8.2f ms  launch %8.2f ms  (%.3f)\n",
                    name, median(run_call_ms), median(launch_call_ms), ratio, ratio <= 1.05 ? "met" : "NOT met",
                    median(run_ms), median(launch_ms), median(launch_ms) / median(run_ms));
        if (per_step)
            for (size_t i = 0; i < step_ms.size(); ++i) {
                const plan::Step &s = c->planned.plan.steps[i];
                std::printf("      step %3zu %-8s %-14s %9.3f ms\n", i, plan::step_kind_name(s.kind), (s.shard.empty() ? s.op : s.shard).c_str(),
                            median(step_ms[i]));
            }
    }
    std::printf("  target: a launch within 5%% of run on every example (whole call), in one process: %s\n", worse ? "NOT met" : "met");

    // As a user meets them: `tapestry run` and `tapestry launch` are processes of
    // their own, so each contender runs in a child process of its own (its warm-up
    // call, then timed calls), the children alternating, `rounds` of each.
    const std::string self = self_path();
    if (self.empty()) return std::fprintf(stderr, "cannot find this executable to start its children\n"), 1;
    std::printf(" in separate processes (a child per contender and round: a warm-up call, then timed calls; "
                "%d rounds, alternating which goes first):\n", rounds);
    int worse_apart = 0;
    for (const char *name : kExamples) {
        std::vector<double> run_call_ms, run_ms, launch_call_ms, launch_ms;
        int calls = 3;
        for (int k = 0; k < rounds; ++k) {
            for (int side = 0; side < 2; ++side) {
                const bool run_side = (side == 0) == (k % 2 == 0);
                if (!run_child(self, run_side ? "run" : "launch", name, calls, run_side ? run_call_ms : launch_call_ms,
                               run_side ? run_ms : launch_ms))
                    return std::fprintf(stderr, "%s: a child process failed\n", name), 1;
            }
            // About half a second of calls per child from the second round on.
            if (k == 0) calls = std::clamp(static_cast<int>(500 / std::max(0.1, median(run_call_ms))), 3, 100);
        }
        const double ratio = median(launch_call_ms) / median(run_call_ms);
        worse_apart += ratio > 1.05;
        std::printf("  %-10s whole call: run %8.2f ms  launch %8.2f ms  launch/run %.3f %-7s   steps only: run %8.2f ms  launch %8.2f ms  (%.3f)  [%zu + %zu calls]\n",
                    name, median(run_call_ms), median(launch_call_ms), ratio, ratio <= 1.05 ? "met" : "NOT met",
                    median(run_ms), median(launch_ms), median(launch_ms) / median(run_ms), run_call_ms.size(),
                    launch_call_ms.size());
    }
    std::printf("  target: a launch within 5%% of run on every example (whole call), in separate processes: %s\n",
                worse_apart ? "NOT met" : "met");
    return 0;
}

// The launches' median: each step's duration (as [0, median)) and the wall time.
launch::LaunchResult median_launch(const std::vector<launch::LaunchResult> &runs) {
    launch::LaunchResult out = runs.front();
    std::vector<double> walls;
    for (const launch::LaunchResult &r : runs) walls.push_back(r.wall_seconds);
    out.wall_seconds = median(walls);
    for (size_t k = 0; k < out.steps.size(); ++k) {
        std::vector<double> d;
        for (const launch::LaunchResult &r : runs) d.push_back(r.steps[k].end - r.steps[k].start);
        out.steps[k].start = 0;
        out.steps[k].end = median(d);
    }
    return out;
}

int accuracy(const std::string &project, bool per_step, int fits, int rounds, int front_points) {
    auto base = cost::builtin_target("host");
    auto m = cpu::measure_host(2);
    if (!base || !m) return std::fprintf(stderr, "measuring the host failed\n"), 1;
    cost::HostFigures f{m->gemm_f32_flops, m->gemm_bf16_flops, m->memory_bandwidth, m->memory_bytes, m->launch_overhead, "bench", m->threads};
    const cost::Target host = cost::measured_target(*base, f);
    std::printf("OpenMP wait policy: %s\n", wait_policy());
    std::printf("accuracy: %s for the measured host (%.0f GFLOP/s f32, %.1f GB/s, launch %.1f µs), each plan launched "
                "%d + %d times: the first %d launches fit the calibration (every step's points), the median of the others "
                "is compared\n",
                project.c_str(), m->gemm_f32_flops / 1e9, m->memory_bandwidth / 1e9, m->launch_overhead * 1e6, fits, rounds,
                fits);
    const Graph g = load(project);
    struct Pair {
        std::string what;
        plan::Plan plan;
        std::vector<launch::LaunchResult> fits;
        launch::LaunchResult test;             // the median of the test launches, step by step
        std::vector<launch::LaunchResult> tests;  // each test launch
    };
    std::vector<Pair> plans;
    auto add_plan = [&](const std::string &what, const plan::Plan &plan) { plans.push_back(Pair{what, plan, {}, {}, {}}); };
    // Every plan launched F + N times, in rounds — each round launches every plan
    // once, so this VM's drift (10–20% within minutes) weighs on every plan alike
    // instead of on the plans launched in a slow minute. The process's very first
    // launch runs once more before, uncounted: it also warms the process (the
    // allocator's pages; the kernels' first runs take 2–4× their later time). Each
    // launch is checked against its reference.
    auto launch_rounds = [&]() -> bool {
        std::vector<std::map<TensorId, TensorData>> inputs;
        for (const Pair &p : plans) inputs.push_back(make_random_inputs(p.plan.graph, 1));
        std::vector<std::vector<launch::LaunchResult>> tests(plans.size());  // per plan
        for (int k = -1; k < fits + rounds; ++k)
            for (size_t i = 0; i < plans.size(); ++i) {
                if (k < 0 && i > 0) break;
                Pair &p = plans[i];
                auto backend = launch::make_cpu_backend();
                auto l = launch::launch_plan(p.plan, *backend, inputs[i]);
                if (!l || !l->ok()) return std::fprintf(stderr, "%s: launch failed\n", p.what.c_str()), false;
                auto c = launch::check_outputs(p.plan, inputs[i], l->outputs);
                if (!c || !c->pass()) return std::fprintf(stderr, "%s: outputs differ\n", p.what.c_str()), false;
                if (k < 0) continue;
                if (k < fits) p.fits.push_back(std::move(l).value());
                else tests[i].push_back(std::move(l).value());
            }
        for (size_t i = 0; i < plans.size(); ++i) {
            plans[i].test = median_launch(tests[i]);
            plans[i].tests = std::move(tests[i]);
        }
        return true;
    };
    for (int n : {1, 2, 4})
        for (int b = -1; b < 4; ++b) {
            if (n == 1 && b >= 0) continue;  // on one device every baseline is the same plan
            plan::PlanRequest req;
            req.target = host;
            req.devices = n;
            if (b >= 0) req.baseline = static_cast<plan::Baseline>(b);
            else req.placement = "round-robin";
            auto r = plan::make_plan(g, req);
            if (!r) continue;
            const std::string what = std::to_string(n) + " " +
                                     (b >= 0 ? plan::baseline_name(static_cast<plan::Baseline>(b)) : std::string("round-robin"));
            add_plan(what, r->plan);
        }
    // Front points: a seeded search of the block for this host on 4 devices (time,
    // memory per device, devices), the front's plans by step time, every one not
    // already launched (the same predicted time, peak and devices as a plan above),
    // up to --front of them spread over the front's step times.
    if (front_points > 0) {
        auto shape = cost::cluster_shape(host, 4, 0);
        auto space = search::Space::of(g, 4);
        if (!shape || !space) return std::fprintf(stderr, "no search space for the front points\n"), 1;
        const search::Evaluator ev(g, *space, host, *shape,
                                   {search::Objective::time, search::Objective::memory, search::Objective::devices}, {});
        search::SearchOptions so;
        so.max_evaluations = 1500;
        so.budget_seconds = 0;
        so.seed = 7;
        auto found = search::optimize(ev, so);
        if (!found) return std::fprintf(stderr, "search: %s\n", found.error().c_str()), 1;
        std::vector<search::Scored> front = found->front;
        std::sort(front.begin(), front.end(), [](const search::Scored &a, const search::Scored &b) {
            return a.evaluation.figures.makespan < b.evaluation.figures.makespan;
        });
        // The launched plans' predictions, simulated once.
        std::vector<plan::Prediction> launched;
        for (const Pair &q : plans) launched.push_back(plan::simulate(q.plan));
        std::vector<plan::Plan> fresh;
        std::vector<double> times;  // per fresh plan: its predicted step time
        for (const search::Scored &sc : front) {
            auto made = ev.materialize(sc.candidate, false);
            if (!made) continue;
            const plan::Prediction pr = plan::simulate(made->plan);
            bool seen = false;
            for (size_t k = 0; k < plans.size() && !seen; ++k)
                seen = plans[k].plan.devices.size() == made->plan.devices.size() &&
                       std::abs(launched[k].makespan - pr.makespan) <= 1e-9 * pr.makespan && launched[k].peak == pr.peak;
            if (seen) continue;
            fresh.push_back(std::move(made->plan));
            times.push_back(pr.makespan);
        }
        // Spread over the front's step times: the fastest, then each time the plan
        // whose predicted time is farthest (in ratio) from every plan picked — plans
        // a few percent apart differ by less than this machine's noise, and their
        // order says nothing about the model.
        std::vector<size_t> picked;
        while (picked.size() < std::min(fresh.size(), static_cast<size_t>(front_points))) {
            size_t best = 0;
            double farthest = -1;
            for (size_t i = 0; i < fresh.size(); ++i) {
                double nearest = std::numeric_limits<double>::infinity();
                for (size_t j : picked) nearest = std::min(nearest, std::abs(std::log(times[i] / times[j])));
                if (picked.empty()) nearest = -std::log(times[i]);  // the fastest first
                if (nearest > farthest) farthest = nearest, best = i;
            }
            picked.push_back(best);
        }
        std::sort(picked.begin(), picked.end());
        for (size_t at : picked)
            add_plan("front " + std::to_string(fresh[at].devices.size()) + "d #" + std::to_string(at), fresh[at]);
        const size_t take = picked.size();
        std::printf("  front points: a search of %ld evaluations (seed 7, 4 devices) gave %zu plans, %zu not among the "
                    "baselines; %zu launched\n",
                    found->evaluations, front.size(), fresh.size(), take);
    }
    if (!launch_rounds()) return 1;
    cost::Calibration cal;
    for (const Pair &p : plans)
        for (const launch::LaunchResult &fit : p.fits)
            for (const cost::CalibrationSample &s : launch::calibration_samples(p.plan, cost::Model(host, p.plan.cluster), fit))
                cal.add(s);
    // The shared-core hand-off, fitted on the same launches: their own step
    // durations replayed against their walls.
    std::vector<launch::LaunchOfPlan> fitted;
    for (const Pair &p : plans)
        for (const launch::LaunchResult &fit : p.fits) fitted.push_back({&p.plan, &fit});
    const launch::WakeFit wake = launch::fit_wake(fitted);
    cal.set_wake(wake.seconds, wake.launches);
    std::printf("  wake (a step waiting for a core starts this long after its release): %s, fitted on %d launches "
                "(their steps replayed against their walls: median error %.1f%% with no wake, %.1f%% with it)\n",
                plan::seconds_text(wake.seconds).c_str(), wake.launches, wake.error_before * 100, wake.error_after * 100);
    std::vector<double> before, after, measured, plan_pred, plan_cal, plan_meas, plan_no_wake;
    std::vector<double> plan_fit_meas;  // per plan: the median wall of its fitting launches
    for (const Pair &p : plans) {
        const cost::Model model(host, p.plan.cluster);
        for (const cost::CalibrationSample &s : launch::calibration_samples(p.plan, model, p.test)) {
            before.push_back(s.predicted);
            after.push_back(s.predicted * cal.factor(s.kernel_class, s.size, s.kernel, s.threads, s.dtype, s.shape));
            measured.push_back(s.measured);
        }
        const std::vector<double> durations = launch::calibrated_durations(p.plan, model, cal);
        plan::Plan woken = p.plan;  // as a plan compiled with the calibration would be
        if (woken.cluster.shared_cores > 0) woken.cluster.wake = cal.wake();
        plan_pred.push_back(plan::simulate(p.plan).makespan);
        plan_cal.push_back(launch::calibrated_prediction(p.plan, model, cal).makespan);
        plan_no_wake.push_back(plan::simulate(p.plan, durations).makespan);
        plan_meas.push_back(p.test.wall_seconds);
        plan_fit_meas.push_back(median_launch(p.fits).wall_seconds);
        // The measured step times replayed through the simulation: what the wall
        // time would be with no time between a step becoming able to run and its start.
        std::vector<double> measured_durations;
        for (const launch::MeasuredStep &step : p.test.steps) measured_durations.push_back(step.end - step.start);
        const double replayed = plan::simulate(p.plan, measured_durations).makespan;
        const double replayed_woken = plan::simulate(woken, measured_durations).makespan;
        std::printf("  %-14s %4zu steps  predicted %9s  calibrated %9s  measured %9s  (measured steps replayed %9s, "
                    "with the wake %9s)\n",
                    p.what.c_str(), p.plan.steps.size(), plan::seconds_text(plan_pred.back()).c_str(),
                    plan::seconds_text(plan_cal.back()).c_str(), plan::seconds_text(plan_meas.back()).c_str(),
                    plan::seconds_text(replayed).c_str(), plan::seconds_text(replayed_woken).c_str());
        if (per_step)
            for (size_t k = 0; k < p.test.steps.size(); ++k) {
                const launch::MeasuredStep &second = p.test.steps[k], &first = p.fits.front().steps[k];
                const plan::Step &s = p.plan.steps[static_cast<size_t>(second.step)];
                std::printf("      step %3d %-10s %-22s dev %d  fit %9s  median %9s  predicted %9s  calibrated %9s\n",
                            second.step, plan::step_kind_name(s.kind), (s.shard.empty() ? s.op : s.shard).c_str(), s.device,
                            plan::seconds_text(first.end - first.start).c_str(), plan::seconds_text(second.end - second.start).c_str(),
                            plan::seconds_text(s.predicted).c_str(),
                            plan::seconds_text(durations[static_cast<size_t>(second.step)]).c_str());
            }
    }
    const double e0 = launch::median_relative_error(before, measured), e1 = launch::median_relative_error(after, measured);
    const double t0 = launch::kendall_tau(plan_pred, plan_meas), t1 = launch::kendall_tau(plan_cal, plan_meas);
    std::printf("  %zu plans, %zu measured kernel and copy steps (medians of the test launches; the table fitted on the first launches, %d points; %d exact shapes of 3 or more)\n",
                plans.size(), measured.size(), static_cast<int>(cal.samples().size()), cal.calibrated_shapes());
    std::printf("  per step: median |predicted - measured| / measured %.1f%% uncalibrated, %.1f%% calibrated; target <= 15%%: %s\n",
                e0 * 100, e1 * 100, e1 <= 0.15 ? "met" : "NOT met");
    std::printf("  per plan: Kendall tau (predicted vs measured step time) %.2f uncalibrated, %.2f calibrated; target >= 0.8: %s\n",
                t0, t1, t1 >= 0.8 ? "met" : "NOT met");
    std::printf("  per plan: median |predicted - measured| / measured %.1f%% uncalibrated, %.1f%% calibrated\n",
                launch::median_relative_error(plan_pred, plan_meas) * 100, launch::median_relative_error(plan_cal, plan_meas) * 100);
    std::printf("  per plan, calibrated without the wake: Kendall tau %.2f, median error %.1f%%\n",
                launch::kendall_tau(plan_no_wake, plan_meas), launch::median_relative_error(plan_no_wake, plan_meas) * 100);
    // Held out: the calibration carried to plans whose launches it never saw. Two
    // folds — the table (and wake) fitted on every other plan's fitting launches,
    // each remaining plan predicted by it — so every plan is predicted once by a
    // table that did not see it. (Above, every tested plan also fitted the table:
    // its exact shapes had points of their own.)
    std::vector<double> ho_after, ho_measured, ho_plan_cal, ho_plan_meas;
    int ho_shapes = 0;
    for (size_t fold = 0; fold < 2 && plans.size() >= 2; ++fold) {
        cost::Calibration part;
        std::vector<launch::LaunchOfPlan> part_fitted;
        for (size_t i = fold; i < plans.size(); i += 2)
            for (const launch::LaunchResult &fit : plans[i].fits) {
                for (const cost::CalibrationSample &s : launch::calibration_samples(plans[i].plan, cost::Model(host, plans[i].plan.cluster), fit))
                    part.add(s);
                part_fitted.push_back({&plans[i].plan, &fit});
            }
        const launch::WakeFit part_wake = launch::fit_wake(part_fitted);
        part.set_wake(part_wake.seconds, part_wake.launches);
        ho_shapes += part.calibrated_shapes();
        for (size_t i = 1 - fold; i < plans.size(); i += 2) {
            const Pair &p = plans[i];
            const cost::Model model(host, p.plan.cluster);
            for (const cost::CalibrationSample &s : launch::calibration_samples(p.plan, model, p.test)) {
                ho_after.push_back(s.predicted * part.factor(s.kernel_class, s.size, s.kernel, s.threads, s.dtype, s.shape));
                ho_measured.push_back(s.measured);
            }
            ho_plan_cal.push_back(launch::calibrated_prediction(p.plan, model, part).makespan);
            ho_plan_meas.push_back(p.test.wall_seconds);
        }
    }
    if (!ho_measured.empty()) {
        const double ho_step = launch::median_relative_error(ho_after, ho_measured);
        const double ho_tau = launch::kendall_tau(ho_plan_cal, ho_plan_meas);
        std::printf("  held out (two folds: the table fitted on alternate plans' launches, %d exact shapes between them; "
                    "each plan predicted by the fold that did not see it): per step %.1f%% calibrated (target <= 15%%: %s), "
                    "per plan Kendall tau %.2f (target >= 0.8: %s), median error %.1f%%\n",
                    ho_shapes, ho_step * 100, ho_step <= 0.15 ? "met" : "NOT met", ho_tau, ho_tau >= 0.8 ? "met" : "NOT met",
                    launch::median_relative_error(ho_plan_cal, ho_plan_meas) * 100);
    }
    // The machine's own repeatability: the fitting launches' measured step times
    // against the test launches' — how well one measurement of these plans orders
    // another (the plans' step times differ by a few percent, this machine's noise
    // by as much).
    std::printf("  per plan, measured vs measured (the fitting launches' median wall against the test launches'): "
                "Kendall tau %.2f, median difference %.1f%% — this machine's repeatability\n",
                launch::kendall_tau(plan_fit_meas, plan_meas), launch::median_relative_error(plan_fit_meas, plan_meas) * 100);
    // Where a plan-level miss comes from: each test launch's own step times replayed
    // through its plan's schedule (with the fitted wake) against that launch's wall
    // — how well the schedule model explains a launch once its steps are known —,
    // and how far one plan's launches spread (max − min over the median), the noise
    // a per-plan ranking has to see through. (Replaying the per-step medians, as the
    // lines above do, drops each launch's slow moments, which fall on different
    // steps each time: it comes out below the median wall.)
    std::vector<double> own_replay, own_wall, spread;
    for (const Pair &p : plans) {
        plan::Plan woken = p.plan;
        if (woken.cluster.shared_cores > 0) woken.cluster.wake = cal.wake();
        std::vector<double> walls;
        for (const launch::LaunchResult &l : p.tests) {
            std::vector<double> d(p.plan.steps.size(), 0);
            for (const launch::MeasuredStep &ms : l.steps) d[static_cast<size_t>(ms.step)] = ms.end - ms.start;
            own_replay.push_back(plan::simulate(woken, d).makespan);
            own_wall.push_back(l.wall_seconds);
            walls.push_back(l.wall_seconds);
        }
        if (walls.size() >= 2)
            spread.push_back((*std::max_element(walls.begin(), walls.end()) - *std::min_element(walls.begin(), walls.end())) /
                             median(walls));
    }
    std::printf("  per launch: its own steps replayed through the plan's schedule against its wall: median error %.1f%% "
                "over %zu launches; one plan's launches spread %.1f%% (median over plans of (max - min) / median wall)\n",
                launch::median_relative_error(own_replay, own_wall) * 100, own_wall.size(), spread.empty() ? 0.0 : median(spread) * 100);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    std::string part = "all", project = source_dir() + "/projects/gpt2_block.tapestry.json";
    int rounds = 5, fits = 3, front_points = 6;
    bool per_step = false;
    if (argc == 5 && !std::strcmp(argv[1], "--child")) return child(argv[2], argv[3], std::max(1, std::atoi(argv[4])));
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--part") && i + 1 < argc) part = argv[++i];
        else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--fits") && i + 1 < argc) fits = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--front") && i + 1 < argc) front_points = std::max(0, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else if (!std::strcmp(argv[i], "--steps")) per_step = true;
        else return std::fprintf(stderr, "usage: bench_launch [--part overhead|accuracy|all] [--rounds N] [--fits N] [--front K] [--project FILE] [--steps]\n"), 2;
    }
    int rc = 0;
    if (part == "overhead" || part == "all") rc |= overhead(rounds, per_step);
    if (part == "accuracy" || part == "all") rc |= accuracy(project, per_step, fits, rounds, front_points);
    return rc;
}
