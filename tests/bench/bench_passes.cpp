// Pipeline time (issue 5): each pass and the certificate on the GPT-2 block
// (projects/gpt2_block.tapestry.json) and on a 24-layer stack of it, against a
// baseline measured in the same run: one structural validation of the input graph
// (validate(), the work every edit in the studio already does).
//
//   bench_passes [--reps N] [--layers L] [--project FILE] [--numeric]
//
// --numeric adds the certificate's numeric run (both graphs executed on the CPU;
// the block only — the stack would take minutes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "block_stack.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "numeric_certify.h"
#include "passes/certificate.h"
#include "passes/fuse.h"
#include "passes/pipeline_builder.h"
#include "passes/shard.h"
#include "passes/stage.h"
#include "passes/substitute.h"

using namespace tapestry;
using namespace tapestry::testing;

namespace {

double median_ms(int reps, const std::function<void()> &f) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto a = std::chrono::steady_clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// Every operation with a batch index dim split 4-way: the specs a user writes to
// data-parallelize a transformer (dim 0 of every op of the GPT-2 block is the batch).
std::vector<std::string> batch_specs(const Graph &g) {
    std::vector<std::string> specs;
    for (const OpPtr &op : g.operations()) specs.push_back(op->id.value + ":0=4");
    return specs;
}

struct Row {
    std::string graph, step;
    double ms = 0;
    std::string note;
};

void run(const std::string &label, const Graph &g, int reps, bool numeric, std::vector<Row> &rows, double &baseline) {
    const OpLibrary &lib = OpLibrary::standard();
    baseline = median_ms(reps, [&] { (void)validate(g, lib); });
    rows.push_back({label, "validate (baseline)", baseline, std::to_string(g.operations().size()) + " ops"});

    auto options = parse_shard_options(batch_specs(g));
    if (!options) {
        std::fprintf(stderr, "bench_passes: %s\n", options.error().c_str());
        std::exit(1);
    }
    Stage staged;
    rows.push_back({label, "shard (every op batch/4)",
                    median_ms(reps,
                              [&] {
                                  auto s = shard(g, *options);
                                  if (!s) {
                                      std::fprintf(stderr, "bench_passes: shard: %s\n", s.error().c_str());
                                      std::exit(1);
                                  }
                                  staged = std::move(*s);
                              }),
                    staged.summary});

    Certificate cert;
    rows.push_back({label, "certify (structure, coverage, injectivity, dataflow)",
                    median_ms(reps, [&] { cert = certify(g, staged.graph); }), cert.badge()});
    if (!cert.pass()) {
        std::fprintf(stderr, "bench_passes: the stage is not certified:\n%s\n", cert.text().c_str());
        std::exit(1);
    }

    Stage substituted;
    rows.push_back({label, "substitute (default rules: expand composites)",
                    median_ms(reps,
                              [&] {
                                  auto s = substitute(g, {});
                                  if (!s) {
                                      std::fprintf(stderr, "bench_passes: substitute: %s\n", s.error().c_str());
                                      std::exit(1);
                                  }
                                  substituted = std::move(*s);
                              }),
                    substituted.summary});
    Stage fused;
    rows.push_back({label, "fuse (after the shard stage)",
                    median_ms(reps,
                              [&] {
                                  auto s = fuse(staged.graph, test::cpu_fuse());
                                  if (!s) {
                                      std::fprintf(stderr, "bench_passes: fuse: %s\n", s.error().c_str());
                                      std::exit(1);
                                  }
                                  fused = std::move(*s);
                              }),
                    fused.summary});

    // The whole pipeline as `tapestry passes --pipeline substitute,shard,fuse` runs it,
    // every stage certified (structure, coverage, injectivity, dataflow). The specs
    // name the ops of the input graph that survive substitution (every one but the
    // expanded composites).
    PipelineSettings settings;
    settings.fusion_backends = {&cpu::fusion_backend()};
    for (const std::string &spec : batch_specs(g)) {
        const std::string op = spec.substr(0, spec.find(':'));
        if (substituted.graph.find_op(OpId(op))) settings.shard_specs.push_back(spec);
    }
    auto pipeline = build_pipeline({"substitute", "shard", "fuse"}, settings);
    if (!pipeline) {
        std::fprintf(stderr, "bench_passes: %s\n", pipeline.error().c_str());
        std::exit(1);
    }
    std::string verdict;
    rows.push_back({label, "pipeline substitute,shard,fuse + certify each stage",
                    median_ms(std::max(1, reps / 2),
                              [&] {
                                  auto stages = pipeline->run(g);
                                  if (!stages) {
                                      std::fprintf(stderr, "bench_passes: pipeline: %s\n", stages.error().c_str());
                                      std::exit(1);
                                  }
                                  bool pass = true;
                                  for (const Stage &st : *stages) pass = pass && st.certificate.pass();
                                  verdict = std::to_string(stages->size() - 1) + " stages, " +
                                            (pass ? "every certificate passes" : "A CERTIFICATE FAILS");
                              }),
                    verdict});
    if (numeric) {
        CertifyOptions o;
        o.numeric = verify::numeric_check();
        rows.push_back({label, "certify + numeric run", median_ms(std::max(1, reps / 5), [&] { cert = certify(g, staged.graph, o); }),
                        cert.badge()});
    }
}

}  // namespace

int main(int argc, char **argv) {
    int reps = 5, layers = 24;
    bool numeric = false;
    std::string project;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc) layers = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else if (!std::strcmp(argv[i], "--numeric")) numeric = true;
        else {
            std::fprintf(stderr, "usage: bench_passes [--reps N] [--layers L] [--project FILE] [--numeric]\n");
            return 2;
        }
    }
    const auto path = find_block_project(project);
    LoadResult block = load_project(path.string());
    if (!block.ok()) {
        std::fprintf(stderr, "bench_passes: cannot load %s\n", path.string().c_str());
        return 1;
    }
    std::vector<Row> rows;
    double base_block = 0, base_stack = 0;
    run("GPT-2 block", block.graph, reps, numeric, rows, base_block);
    const Graph stack = stack_blocks(block.graph, "x", "y", layers);
    run("GPT-2 x" + std::to_string(layers), stack, reps, false, rows, base_stack);

    std::printf("%-14s %-56s %10s %9s  %s\n", "graph", "step", "median ms", "x validate", "result");
    for (const Row &r : rows) {
        const double base = r.graph == "GPT-2 block" ? base_block : base_stack;
        const std::string note = r.note.size() > 90 ? r.note.substr(0, 87) + "..." : r.note;
        std::printf("%-14s %-56s %10.2f %9.1fx  %s\n", r.graph.c_str(), r.step.c_str(), r.ms, r.ms / base,
                    note.c_str());
    }
    return 0;
}
