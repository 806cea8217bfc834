// Our side of the ONNX Runtime peer benchmark (tests/bench/onnx_peer/README.md):
// loads imported projects with their values, compiles each for the CPU executor,
// warms up, times N runs and prints the median; and measures this machine's
// practical peak, a plain 4096³ fp32 matrix product through oneDNN, in the same
// run. A program, not a test.
//
//   bench_onnx_peer [--threads T] [--runs N] [--warmup W] [--inputs-root DIR]
//                   [--outputs-root DIR] [--json FILE] [--peak] [--no-shards] [--tile-bytes B] [--no-winograd] [--bf16-matmul] [--label L] [--steps] [--isa] PROJECT...
//
// With --inputs-root, a project's inputs are read from DIR/<project stem>/ (one
// <tensor name>.npy each, as written by the peer script); otherwise they are
// random (seed 0). With --outputs-root the outputs of the last timed run are
// written to DIR/<project stem>/. --json writes every measurement (each run's
// milliseconds, the median, the model FLOPs, the peak) for the report script.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "runtime/cpu/executor.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

struct Options {
    int threads = 2;
    int runs = 10;
    int warmup = 3;
    bool peak = false;
    bool shards = true;
    std::size_t tile_bytes = cpu::CpuOptions{}.tile_bytes;  // batch tiling target (0: off)
    bool winograd = true;  // CpuOptions::winograd
    bool bf16_matmul = false;  // CpuOptions::bf16_matmul
    std::string label;         // appended to each model's name (outputs folder, JSON, printout)
    bool steps = false;  // print each step's median time (where the time goes)
    std::string inputs_root, outputs_root, json;
    std::vector<std::string> projects;
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A plain fp32 matmul C[M,N] = A[M,K]·B[K,N] through oneDNN with row-major
// (format `ab`) operands: the baseline "how fast can this machine multiply".
// With `prepacked`, B is in the layout oneDNN prefers (format `any`, reordered
// once before timing), as a runtime may do for constant weights: a diagnostic of
// what plain layouts cost.
std::vector<double> onednn_matmul_ms(dnnl::memory::dim m, dnnl::memory::dim k, dnnl::memory::dim n, bool prepacked,
                                     int warmup, int runs) {
    using namespace dnnl;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const memory::desc a_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc b_plain({k, n}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc b_md =
        prepacked ? memory::desc({k, n}, memory::data_type::f32, memory::format_tag::any) : b_plain;
    const memory::desc c_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
    const matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
    matmul prim(pd);
    memory a(a_md, eng), b(pd.weights_desc(), eng), c(c_md, eng), b_source(b_plain, eng);
    auto fill = [](memory &mem, float v) {
        float *p = static_cast<float *>(mem.get_data_handle());
        const size_t count = mem.get_desc().get_size() / sizeof(float);
        for (size_t i = 0; i < count; ++i) p[i] = v * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
    };
    fill(a, 1.0f);
    fill(b_source, 0.5f);
    reorder(b_source, b).execute(strm, b_source, b);
    strm.wait();
    std::vector<double> times;
    for (int i = 0; i < warmup + runs; ++i) {
        const auto t = Clock::now();
        prim.execute(strm, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        strm.wait();
        if (i >= warmup) times.push_back(ms_since(t));
    }
    return times;
}

double total_flops(const Graph &g) {
    const OpLibrary &lib = OpLibrary::standard();
    double flops = 0;
    for (const OpPtr &op : g.operations()) {
        const auto types = operand_types(g, *op);
        if (!types) continue;
        const auto d = lib.derive(op->kind, op->params, *types);
        const OpDef *def = lib.find(op->kind);
        if (d && def) flops += lib.cost(*def, op->params, *d, *types, d->signature.index_space).flops;
    }
    return flops;
}

std::string stem_of(const std::string &project) {
    std::string s = fs::path(project).filename().string();
    const std::string suffix = ".tapestry.json";
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
        s.resize(s.size() - suffix.size());
    return s;
}

int usage(const char *why) {
    std::fprintf(
        stderr,
        "bench_onnx_peer: %s\nusage: bench_onnx_peer [--threads T] [--runs N] [--warmup W] [--inputs-root DIR] "
        "[--outputs-root DIR] [--json FILE] [--peak] [--no-shards] [--tile-bytes B] [--no-winograd] [--bf16-matmul] [--label L] [--steps] [--isa] PROJECT...\n",
        why);
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char *name) -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_onnx_peer: %s needs a value\n", name);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--threads")
            o.threads = std::atoi(value("--threads"));
        else if (a == "--runs")
            o.runs = std::atoi(value("--runs"));
        else if (a == "--warmup")
            o.warmup = std::atoi(value("--warmup"));
        else if (a == "--inputs-root")
            o.inputs_root = value("--inputs-root");
        else if (a == "--outputs-root")
            o.outputs_root = value("--outputs-root");
        else if (a == "--json")
            o.json = value("--json");
        else if (a == "--peak")
            o.peak = true;
        else if (a == "--no-shards")
            o.shards = false;
        else if (a == "--steps")
            o.steps = true;
        else if (a == "--isa") {
            std::printf("%s\n", cpu::cpu_isa().name.c_str());  // what oneDNN dispatches to here, and exit
            return 0;
        }
        else if (a == "--no-winograd")
            o.winograd = false;
        else if (a == "--bf16-matmul")
            o.bf16_matmul = true;
        else if (a == "--label")
            o.label = value("--label");
        else if (a == "--tile-bytes")
            o.tile_bytes = std::strtoull(value("--tile-bytes"), nullptr, 10);
        else if (a == "--help" || a == "-h") {
            std::printf(
                "usage: bench_onnx_peer [--threads T] [--runs N] [--warmup W] [--inputs-root DIR] "
                "[--outputs-root DIR] [--json FILE] [--peak] [--no-shards] [--tile-bytes B] [--no-winograd] [--bf16-matmul] [--label L] [--steps] [--isa] PROJECT...\n");
            return 0;
        } else if (!a.empty() && a[0] == '-')
            return usage(("unknown option " + a).c_str());
        else
            o.projects.push_back(a);
    }
    if (o.threads < 1 || o.runs < 1 || o.warmup < 0) return usage("--threads and --runs must be positive");
    if (o.projects.empty() && !o.peak) return usage("no project given");

    // Which kernels run depends on the instruction set oneDNN dispatches to (the
    // CPU's, or less under ONEDNN_MAX_CPU_ISA): every figure is quoted with it.
    const char *cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    std::printf("oneDNN ISA: %s%s%s\n", cpu::cpu_isa().name.c_str(), cap ? " (ONEDNN_MAX_CPU_ISA=" : "",
                cap ? (std::string(cap) + ")").c_str() : "");
    nlohmann::ordered_json report;
    report["isa"] = cpu::cpu_isa().name;
    report["isa_cap"] = cap ? std::string(cap) : std::string();
    report["threads"] = o.threads;
    report["runs"] = o.runs;
    report["warmup"] = o.warmup;
    report["models"] = nlohmann::ordered_json::array();

    auto measure_peak = [&](const char *when) {
        const int runs = std::max(3, o.runs / 2);
        const auto times = onednn_matmul_ms(4096, 4096, 4096, false, 2, runs);
        const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
        const double gflops = flops / (median(times) * 1e-3) / 1e9;
        std::printf("peak  oneDNN fp32 matmul 4096^3 (%s): median %.1f ms = %.1f GFLOP/s\n", when, median(times),
                    gflops);
        report["peak_" + std::string(when)] = {{"median_ms", median(times)}, {"gflops", gflops}, {"runs_ms", times}};
        // Diagnostics, not the baseline: the same product with prepacked weights,
        // and the MLP's layer shape (512 x 4096 x 4096) both ways.
        const auto packed = onednn_matmul_ms(4096, 4096, 4096, true, 2, runs);
        const auto layer_plain = onednn_matmul_ms(512, 4096, 4096, false, 2, runs);
        const auto layer_packed = onednn_matmul_ms(512, 4096, 4096, true, 2, runs);
        const double layer_flops = 2.0 * 512.0 * 4096.0 * 4096.0;
        std::printf(
            "      (diagnostic: 4096^3 prepacked weights %.1f GFLOP/s; 512x4096x4096 plain %.1f, prepacked %.1f)\n",
            flops / (median(packed) * 1e-3) / 1e9, layer_flops / (median(layer_plain) * 1e-3) / 1e9,
            layer_flops / (median(layer_packed) * 1e-3) / 1e9);
        std::fflush(stdout);
        report["diagnostic_" + std::string(when)] = {
            {"prepacked_4096_gflops", flops / (median(packed) * 1e-3) / 1e9},
            {"plain_512x4096x4096_gflops", layer_flops / (median(layer_plain) * 1e-3) / 1e9},
            {"prepacked_512x4096x4096_gflops", layer_flops / (median(layer_packed) * 1e-3) / 1e9}};
        return gflops;
    };
    double peak = o.peak ? measure_peak(o.projects.empty() ? "now" : "before") : 0;

    int failures = 0;
    for (const std::string &project : o.projects) {
        const std::string name = stem_of(project) + o.label;
        LoadResult loaded = load_project(project);
        if (!loaded.ok()) {
            std::fprintf(stderr, "bench_onnx_peer: %s: %s\n", project.c_str(),
                         format_issue(loaded.issues.front()).c_str());
            ++failures;
            continue;
        }
        Graph g = std::move(loaded.graph);
        const auto value_issues = load_tensor_values(g, fs::path(project).parent_path());
        if (has_errors(value_issues)) {
            std::fprintf(stderr, "bench_onnx_peer: %s: %s\n", project.c_str(),
                         format_issue(value_issues.front()).c_str());
            ++failures;
            continue;
        }
        std::map<TensorId, TensorData> inputs = make_random_inputs(g, 0);
        if (!o.inputs_root.empty()) {
            auto read = read_inputs_dir(g, fs::path(o.inputs_root) / stem_of(project));
            if (!read) {
                std::fprintf(stderr, "bench_onnx_peer: %s: %s\n", project.c_str(), read.error().c_str());
                ++failures;
                continue;
            }
            for (auto &[id, v] : *read) inputs[id] = std::move(v);
        }
        cpu::CpuOptions cpu_options;
        cpu_options.threads = o.threads;
        cpu_options.run_shards = o.shards;
        cpu_options.tile_bytes = o.tile_bytes;
        cpu_options.winograd = o.winograd;
        cpu_options.bf16_matmul = o.bf16_matmul;
        const auto compile_start = Clock::now();
        auto program = cpu::Program::compile(g, OpLibrary::standard(), cpu_options);
        if (!program) {
            std::fprintf(stderr, "bench_onnx_peer: %s: cannot compile: %s\n", project.c_str(), program.error().c_str());
            ++failures;
            continue;
        }
        const double compile_ms = ms_since(compile_start);
        for (const std::string &n : (*program)->notices()) std::printf("note (%s): %s\n", project.c_str(), n.c_str());
        std::vector<double> times;
        std::map<std::string, std::vector<double>> step_ms;
        std::vector<std::string> step_order;
        std::map<TensorId, TensorData> last_outputs;
        bool ok = true;
        for (int i = 0; i < o.warmup + o.runs && ok; ++i) {
            const auto t = Clock::now();
            auto result = (*program)->run(inputs);
            const double ms = ms_since(t);
            if (!result) {
                std::fprintf(stderr, "bench_onnx_peer: %s: run failed: %s\n", project.c_str(), result.error().c_str());
                ok = false;
                break;
            }
            if (i >= o.warmup) {
                times.push_back(ms);
                for (size_t k = 0; k < result->steps.size(); ++k) {
                    const auto &st = result->steps[k];
                    step_ms[st.op + (st.shard.empty() ? "" : "/" + st.shard)].push_back(st.milliseconds);
                    if (step_order.size() < result->steps.size()) step_order.push_back(st.op + (st.shard.empty() ? "" : "/" + st.shard));
                }
            }
            if (i + 1 == o.warmup + o.runs) last_outputs = std::move(result->outputs);
        }
        if (!ok) {
            ++failures;
            continue;
        }
        if (!o.outputs_root.empty()) {
            const std::string error = write_outputs_dir(g, last_outputs, fs::path(o.outputs_root) / name);
            if (!error.empty()) {
                std::fprintf(stderr, "bench_onnx_peer: %s: %s\n", project.c_str(), error.c_str());
                ++failures;
            }
        }
        if (o.steps) {
            std::printf("steps of %s (median ms over the timed runs):\n", name.c_str());
            for (const std::string &st : step_order) std::printf("  %-32s %9.3f\n", st.c_str(), median(step_ms[st]));
        }
        const double flops = total_flops(g);
        const double med = median(times);
        std::printf("model %-12s median %9.2f ms  min %9.2f ms  (%d runs, compile %.0f ms)  %.1f GFLOP/s\n",
                    name.c_str(), med, *std::min_element(times.begin(), times.end()), o.runs, compile_ms,
                    flops / (med * 1e-3) / 1e9);
        std::fflush(stdout);
        report["models"].push_back({{"model", name},
                                    {"project", project},
                                    {"median_ms", med},
                                    {"runs_ms", times},
                                    {"compile_ms", compile_ms},
                                    {"flops", flops}});
    }

    if (o.peak && !o.projects.empty()) peak = std::max(peak, measure_peak("after"));
    if (o.peak) report["peak_gflops"] = peak;
    if (!o.json.empty()) {
        std::ofstream out(o.json);
        out << report.dump(2) << "\n";
        if (!out) {
            std::fprintf(stderr, "bench_onnx_peer: cannot write %s\n", o.json.c_str());
            return 1;
        }
    }
    return failures == 0 ? 0 : 1;
}
