// Benchmark of plan compilation and simulation (issue 15): the GPT-2 block on 8
// H100s (one node) and a 12-layer GPT-2 stack on 64 (8 nodes × 8), dp × tp.
// Baseline in the same run: one validate() of the same graph. Targets: the
// 64-device 12-layer plan compiles and simulates in ≤ 50 ms on one core; a plan
// re-costed after one op's sharding changes in ≤ 1 ms.
//   bench_plan [--reps N] [--layers L] [--project FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "block_stack.h"
#include "cost/model.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "plan/baselines.h"
#include "plan/compile.h"
#include "plan/planner.h"
#include "plan/simulate.h"

using namespace tapestry;

namespace {

double best_ms(int reps, const std::function<void()> &f) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    }
    return best;
}

int run(const std::string &label, const Graph &g, int devices, int nodes, int tp, int reps,
        plan::Baseline kind = plan::Baseline::dp_tp, plan::StepOrder order = plan::StepOrder::dependency) {
    auto target = cost::builtin_target("h100-sxm");
    auto shape = cost::cluster_shape(*target, devices, nodes);
    if (!shape) {
        std::fprintf(stderr, "%s\n", shape.error().c_str());
        return 1;
    }
    plan::BaselineOptions b;
    b.kind = kind;
    b.devices = plan::device_names(*shape);
    b.tp = tp;
    b.devices_per_node = shape->devices_per_node;
    b.certify = false;
    auto stages = plan::baseline_stages(g, b);
    if (!stages) {
        std::fprintf(stderr, "%s: %s\n", label.c_str(), stages.error().c_str());
        return 1;
    }
    const Stage &placed = stages->back();
    const cost::Model model(*target, *shape);
    double validate_ms = best_ms(reps, [&] { (void)validate(placed.graph, OpLibrary::standard()); });
    plan::Plan p;
    plan::Prediction pred;
    // Compiling: the first run in a fresh process (cold: every page of the plan is
    // new to the process) and the best of the runs after it (warm: the previous plan
    // freed between runs, outside the timing — as a search compiling plan after plan
    // runs). The target is judged on the warm figure; both are printed.
    double cold_ms = 0, compile_ms = 1e30;
    for (int r = 0; r <= reps; ++r) {
        const auto t = std::chrono::steady_clock::now();
        plan::PlanSource source;
        source.order = order;
        plan::Plan compiled = std::move(plan::compile_plan(placed, model, source)).value();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
        if (r == 0) cold_ms = ms;
        else compile_ms = std::min(compile_ms, ms);
        p = std::move(compiled);  // the previous plan is freed here, untimed
    }
    const double simulate_ms = best_ms(reps, [&] { pred = plan::simulate(p); });
    // Re-cost after one op's sharding changes: the steps of one op (its largest
    // linear) take new work figures — a shard twice as large — and are re-predicted,
    // then the whole plan is simulated again.
    std::string op;
    for (const plan::Step &s : p.steps)
        if (s.kernel_class == "gemm" && op.empty()) op = s.op;
    std::vector<double> durations;
    for (const plan::Step &s : p.steps) durations.push_back(s.predicted);
    const double recost_ms = best_ms(reps, [&] {
        for (size_t i = 0; i < p.steps.size(); ++i) {
            const plan::Step &s = p.steps[i];
            if (s.op != op || s.kind != plan::StepKind::kernel) continue;
            durations[i] = model.kernel_seconds(cost::KernelWork{cost::KernelClass::gemm, s.dtype, 2 * s.flops, 2 * s.bytes});
        }
        pred = plan::simulate(p, durations);
    });
    std::printf("%-22s %4d devices  %6zu steps  %6zu buffers  validate %8.2f ms  compile %8.2f ms (cold %.2f)  simulate %6.2f ms"
                "  compile+simulate %8.2f ms = %5.2f× validate  re-cost one op %6.3f ms  (predicted makespan %s)\n",
                label.c_str(), devices, p.steps.size(), p.buffers.size(), validate_ms, compile_ms, cold_ms, simulate_ms,
                compile_ms + simulate_ms, (compile_ms + simulate_ms) / validate_ms, recost_ms,
                plan::seconds_text(pred.makespan).c_str());
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    int reps = 5, layers = 12;
    std::string project;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc) layers = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else {
            std::fprintf(stderr, "usage: bench_plan [--reps N] [--layers L] [--project FILE]\n");
            return 2;
        }
    }
    LoadResult block = load_project(testing::find_block_project(project));
    if (!block.ok()) {
        std::fprintf(stderr, "cannot load the GPT-2 block project\n");
        return 1;
    }
    std::printf("plan compile + simulate, one core, best of %d after a cold run (targets: 64-device %d-layer ≤ 50 ms; "
                "re-cost ≤ 1 ms)\n",
                reps, layers);
    if (run("GPT-2 block", block.graph, 8, 1, 8, reps)) return 1;
    const Graph stack = testing::stack_blocks(block.graph, "x", "y", layers);
    if (run("GPT-2 x" + std::to_string(layers), stack, 64, 8, 8, reps)) return 1;
    // A pipeline's steps op by op and by readiness (plan::StepOrder): what ordering
    // by readiness costs the compiler, and what it gains the pipeline.
    const std::string pp = "GPT-2 x" + std::to_string(layers) + " pp";
    if (run(pp + " dependency", stack, 64, 8, 8, reps, plan::Baseline::pp, plan::StepOrder::dependency)) return 1;
    return run(pp + " ready", stack, 64, 8, 8, reps, plan::Baseline::pp, plan::StepOrder::ready);
}
