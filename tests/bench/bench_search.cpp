// Benchmark of the Pareto-front search (issue 16): candidates evaluated per second
// on the GPT-2 block for 8 H100s (one node), with the search's threads, against one
// validate() of the same graph in the same run; and the front's progress.
// Target (issue 16): ≥ 10,000 evaluations/s on 2 cores.
//   bench_search [--evaluations N] [--threads T] [--project FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "block_stack.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "plan/baselines.h"
#include "search/optimizer.h"

using namespace tapestry;

int main(int argc, char **argv) {
    long evaluations = 400;
    int threads = 0;
    std::string project;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--evaluations") && i + 1 < argc) evaluations = std::max(1L, std::atol(argv[++i]));
        else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::max(0, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else {
            std::fprintf(stderr, "usage: bench_search [--evaluations N] [--threads T] [--project FILE]\n");
            return 2;
        }
    }
    LoadResult block = load_project(testing::find_block_project(project));
    if (!block.ok()) {
        std::fprintf(stderr, "cannot load the GPT-2 block project\n");
        return 1;
    }
    const Graph g = plan::without_shards(block.graph);
    auto target = cost::builtin_target("h100-sxm");
    auto shape = cost::cluster_shape(*target, 8, 1);
    auto space = search::Space::of(g, 8);
    if (!target || !shape || !space) {
        std::fprintf(stderr, "setup failed\n");
        return 1;
    }
    const search::Evaluator e(g, *space, *target, *shape,
                              {search::Objective::time, search::Objective::memory, search::Objective::devices}, {});
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
    auto r = search::optimize(e, o);
    if (!r) {
        std::fprintf(stderr, "%s\n", r.error().c_str());
        return 1;
    }
    const double per_second = static_cast<double>(r->evaluations) / r->seconds;
    const double eval_ms = 1e3 / per_second;
    std::printf("search on the GPT-2 block, 8 × h100-sxm, threads %d: %ld evaluations in %.2f s = %.0f evaluations/s "
                "(%.2f ms each = %.1f× validate %.3f ms); target ≥ 10,000/s: %s; front %zu plans after %d generations\n",
                threads, r->evaluations, r->seconds, per_second, eval_ms, eval_ms / validate_ms, validate_ms,
                per_second >= 10000 ? "met" : "NOT met", r->front.size(), r->generations);
    return 0;
}
