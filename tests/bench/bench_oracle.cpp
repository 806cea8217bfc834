// Benchmark of the oracle (ops/evaluate.h) on the example projects: evaluate_reference
// of the unsharded graph — what `tapestry verify` runs once — with the kernels'
// fast paths at all threads and at 1 thread, against the baseline measured in the
// same run: the naive kernels at 1 thread (the oracle's kernels before issue 13),
// stopped through the cancel hook after a time box and then printed as
// "> N s (stopped)", never extrapolated. Then the whole verify::check_equivalence (the executor
// runs and the oracle) of each project against the target of 30 s. A program,
// not a test.
//
//   bench_oracle [--box SECONDS] [PROJECT...]
//
// Projects default to every projects/*.tapestry.json under TAPESTRY_SOURCE_DIR
// (or the working directory); the time box defaults to 120 s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "ops/evaluate.h"
#include "verify/verify.h"
#include "substitute_support.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

constexpr double kVerifyTarget = 30.0;  // seconds, issue 13
constexpr std::uint64_t kSeed = 0;      // tapestry verify's default seed

struct Timing {
    double seconds = 0;
    bool stopped = false;  // the time box ran out
    std::string error;
};

Timing time_oracle(const Graph &g, const std::map<TensorId, RefArray> &inputs, int threads, bool fast, double box) {
    EvaluationOptions o;
    o.run_shards = false;  // as verify: the meaning of the program
    o.threads = threads;
    o.fast_kernels = fast;
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    o.cancelled = [&] { return elapsed() > box; };
    auto r = evaluate_reference(g, inputs, OpLibrary::standard(), o);
    Timing t{elapsed(), false, {}};
    if (!r) {
        t.stopped = r.error() == "cancelled";
        if (!t.stopped) t.error = r.error();
    }
    return t;
}

Timing time_verify(const Graph &g, const std::map<TensorId, TensorData> &inputs) {
    verify::VerifyOptions o;
    o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto t0 = std::chrono::steady_clock::now();
    auto r = verify::check_equivalence(g, OpLibrary::standard(), inputs, o);
    Timing t{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), false, {}};
    if (!r)
        t.error = r.error();
    else if (!r->pass())
        t.error = "verify found differences";
    return t;
}

std::string seconds(const Timing &t) {
    char s[64];
    if (!t.error.empty()) return "error";
    std::snprintf(s, sizeof s, t.stopped ? "> %.1f s (stopped)" : "%.2f s", t.seconds);
    return s;
}

// baseline / fast; a lower bound ("> ") when the baseline was stopped.
std::string ratio(const Timing &baseline, const Timing &fast) {
    char s[64];
    if (!baseline.error.empty() || !fast.error.empty() || fast.seconds <= 0) return "-";
    std::snprintf(s, sizeof s, "%s%.0fx", baseline.stopped ? "> " : "", baseline.seconds / fast.seconds);
    return s;
}

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

std::vector<fs::path> default_projects() {
    const char *root = std::getenv("TAPESTRY_SOURCE_DIR");
    std::vector<fs::path> out;
    for (const auto &e : fs::directory_iterator(fs::path(root ? root : ".") / "projects"))
        if (e.path().string().ends_with(".tapestry.json")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// One project: its line of the table, or why it has none.
void bench_project(const fs::path &path, int threads, double box) {
    LoadResult loaded = load_project(path);
    const std::string name = path.filename().string();
    if (!loaded.ok() || !load_tensor_values(loaded.graph, path.parent_path()).empty()) {
        std::printf("%-26s does not load\n", name.c_str());
        return;
    }
    const Graph &g = loaded.graph;
    const auto ref_inputs = test::oracle_inputs(g, g, kSeed);
    const Timing all = time_oracle(g, ref_inputs, threads, true, box);
    const Timing one = time_oracle(g, ref_inputs, 1, true, box);
    const Timing naive = time_oracle(g, ref_inputs, 1, false, box);
    const Timing verify = time_verify(g, make_random_inputs(g, kSeed));
    for (const Timing *t : {&all, &one, &naive, &verify})
        if (!t->error.empty()) std::printf("%s: %s\n", name.c_str(), t->error.c_str());
    const bool target = verify.error.empty() && verify.seconds <= kVerifyTarget;
    std::printf("%-26s %12s %12s %22s %9s %9s %12s  %s\n", name.c_str(), seconds(all).c_str(), seconds(one).c_str(),
                seconds(naive).c_str(), ratio(naive, all).c_str(), ratio(naive, one).c_str(), seconds(verify).c_str(),
                target ? "yes" : "NO");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    double box = 120;
    std::vector<fs::path> projects;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--box") == 0 && i + 1 < argc)
            box = std::atof(argv[++i]);
        else
            projects.emplace_back(argv[i]);
    }
    if (projects.empty()) projects = default_projects();
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    std::printf("load average before: %s\n", load_average().c_str());
    std::printf("oracle of the unsharded graph, seed %llu; baseline: naive kernels, 1 thread, stopped after %.0f s\n",
                static_cast<unsigned long long>(kSeed), box);
    char fast_all[32];
    std::snprintf(fast_all, sizeof fast_all, "fast %d thr", threads);
    std::printf("%-26s %12s %12s %22s %9s %9s %12s  %s\n", "project", fast_all, "fast 1 thr", "baseline (naive 1 thr)",
                "ratio", "ratio 1", "verify", "verify <= 30 s");
    for (const fs::path &p : projects) bench_project(p, threads, box);
    std::printf("load average after: %s\n", load_average().c_str());
    return 0;
}
