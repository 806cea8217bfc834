// `tapestry run PROJECT`: executes a project on the CPU executor (oneDNN) with
// inputs from a directory of .npy files or seeded random ones, prints a summary of
// every output and the wall time, and writes the outputs as .npy files.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "run_support.h"
#include "runtime/cpu/executor.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

struct RunCommandOptions {
    std::string project;
    std::string inputs_dir;
    std::string outputs_dir;
    int threads = 2;
    std::uint64_t seed = 0;
    std::int64_t memory_limit = 0;  // bytes; 0: what the machine has available
    bool allow_outside_data = false;
    bool no_shards = false;
    std::size_t tile_kib = cpu::CpuOptions{}.tile_bytes / 1024;
    bool no_winograd = false;
    bool bf16_matmul = false;
    bool json = false;
    bool verbose = false;
};

std::string fixed(double v, const char *format = "%.3f") { return formatted(v, format); }
std::string number(double v) { return formatted(v, "%.6g"); }

int run_command(const RunCommandOptions &o) {
    PreparedRun prepared = prepare_run(o.project, o.inputs_dir, o.seed, PrepareOptions{false, o.memory_limit, o.allow_outside_data});
    if (!report_preparation(o.project, prepared, o.json)) return kExitInvalid;
    const Graph &g = *prepared.graph;

    auto fail = [&](const std::string &message) {
        if (o.json) {
            prepared.errors.push_back(message);
            std::cout << problems_json(o.project, prepared).dump(2) << "\n";
        } else {
            std::cerr << "tapestry: " << o.project << ": " << message << "\n";
        }
        return kExitInvalid;
    };

    cpu::CpuOptions cpu_options;
    cpu_options.threads = o.threads;
    cpu_options.run_shards = !o.no_shards;
    cpu_options.tile_bytes = o.tile_kib * 1024;
    cpu_options.winograd = !o.no_winograd;
    cpu_options.bf16_matmul = o.bf16_matmul;
    const auto compile_start = std::chrono::steady_clock::now();
    auto program = cpu::Program::compile(g, OpLibrary::standard(), cpu_options);
    if (!program) return fail("cannot compile for the CPU: " + program.error());
    const double compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count();

    ProgressBar bar(!o.json);
    cpu::RunControl control;
    control.progress = [&bar](int done, int total) { bar.update("run", done, total); };
    InterruptGuard interrupt;
    control.cancelled = [] { return InterruptGuard::interrupted(); };
    auto result = (*program)->run(prepared.inputs, control);
    interrupt.release();
    bar.clear();
    if (!result) return fail("run failed: " + result.error());

    std::string written;
    if (!o.outputs_dir.empty()) {
        const std::string error = write_outputs_dir(g, result->outputs, o.outputs_dir);
        if (!error.empty()) return fail(error);
        written = o.outputs_dir;
    }

    size_t shard_count = 0;
    for (const OpPtr &op : g.operations()) shard_count += op->shards.size();
    const bool sharded = !o.no_shards && shard_count > 0;

    if (o.json) {
        ordered_json j;
        j["file"] = o.project;
        j["name"] = g.name;
        j["ok"] = true;
        j["threads"] = o.threads;
        j["sharded"] = sharded;
        j["inputs"] = prepared.input_source;
        j["compile_ms"] = compile_ms;
        j["wall_ms"] = result->wall_milliseconds;
        j["arena_bytes"] = result->arena_bytes;
        j["isa"] = cpu::cpu_isa().name;
        j["notices"] = result->notices;
        j["outputs"] = ordered_json::array();
        for (const TensorPtr &t : g.tensors()) {
            auto it = result->outputs.find(t->id);
            if (it == result->outputs.end()) continue;
            const ValueSummary s = summarize_values(it->second);
            j["outputs"].push_back({{"tensor", t->id.value},
                                    {"name", t->name},
                                    {"dtype", std::string(dtype_name(it->second.dtype))},
                                    {"shape", it->second.shape.to_vector()},
                                    {"min", s.min},
                                    {"max", s.max},
                                    {"mean", s.mean},
                                    {"nan", s.nan_count},
                                    {"inf", s.inf_count}});
        }
        j["steps"] = ordered_json::array();
        for (const cpu::StepTiming &s : result->steps)
            j["steps"].push_back({{"op", s.op},
                                  {"shard", s.shard},
                                  {"tile", s.tile >= 0 ? ordered_json(s.tile + 1) : ordered_json(nullptr)},
                                  {"ms", s.milliseconds},
                                  {"fallback", s.fallback},
                                  {"notes", s.notes}});
        if (!written.empty()) j["outputs_dir"] = written;
        std::cout << j.dump(2) << "\n";
        return kExitOk;
    }

    std::cout << "run  " << g.name << "  (" << o.project << ")\n"
              << "     " << g.operations().size() << (g.operations().size() == 1 ? " operation, " : " operations, ")
              << (sharded ? std::to_string(shard_count) + " shards"
                          : std::string(o.no_shards ? "shards off" : "no shards"))
              << ", " << o.threads << (o.threads == 1 ? " thread" : " threads") << ", inputs " << prepared.input_source
              << ", oneDNN ISA " << cpu::cpu_isa().name << "\n";
    for (const std::string &n : result->notices) std::cout << "     note: " << n << "\n";
    const bool fell_back = std::any_of(result->steps.begin(), result->steps.end(),
                                       [](const cpu::StepTiming &s) { return !s.fallback.empty(); });
    if (fell_back && !o.verbose) std::cout << "     (run -v gives each step's reason)\n";
    if (o.verbose) {
        std::string text = (*program)->describe();
        while (!text.empty() && text.back() == '\n') text.pop_back();
        std::cout << "\nprogram\n" << text << "\n";
    }

    std::cout << "\noutputs\n";
    std::vector<std::vector<std::string>> rows{{"tensor", "name", "dtype", "shape", "min", "max", "mean"}};
    std::vector<std::string> notes;
    for (const TensorPtr &t : g.tensors()) {
        auto it = result->outputs.find(t->id);
        if (it == result->outputs.end()) continue;
        const ValueSummary s = summarize_values(it->second);
        rows.push_back({t->id.value, t->name, std::string(dtype_name(it->second.dtype)), it->second.shape.to_string(),
                        number(s.min), number(s.max), number(s.mean)});
        if (s.nan_count + s.inf_count > 0)
            notes.push_back(t->id.value + " has " + std::to_string(s.nan_count) + " NaN and " +
                            std::to_string(s.inf_count) + " infinite elements (not in min/max/mean)");
    }
    print_table(rows, "  ");
    for (const std::string &n : notes) std::cout << "  note: " << n << "\n";

    if (o.verbose) {
        std::cout << "\nsteps\n";
        std::vector<std::vector<std::string>> step_rows{{"op", "shard / tile", "ms", "share", "kernel note"}};
        double total = 0;
        for (const cpu::StepTiming &s : result->steps) total += s.milliseconds;
        for (const cpu::StepTiming &s : result->steps)
            step_rows.push_back({s.op,
                                 !s.shard.empty() ? s.shard
                                 : s.tile >= 0    ? "tile " + std::to_string(s.tile + 1) + "/" + std::to_string(s.tiles)
                                                  : "-",
                                 fixed(s.milliseconds),
                                 total > 0 ? fixed(100.0 * s.milliseconds / total, "%.1f%%") : "-",
                                 s.note().empty() ? "-" : s.note()});
        print_table(step_rows, "  ");
        std::cout << "  (step times add up to " << fixed(total) << " ms of work over " << o.threads
                  << (o.threads == 1 ? " thread)\n" : " threads)\n");
    }

    std::cout << "\nwall  " << fixed(result->wall_milliseconds) << " ms  (compile " << fixed(compile_ms)
              << " ms, arena " << human_bytes(static_cast<double>(result->arena_bytes)) << ")\n";
    if (!written.empty())
        std::cout << "wrote " << result->outputs.size() << (result->outputs.size() == 1 ? " output" : " outputs")
                  << " to " << written << "\n";
    return kExitOk;
}

}  // namespace

void add_run_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<RunCommandOptions>();
    CLI::App *cmd = app.add_subcommand(
        "run",
        "Run a project on the CPU (oneDNN): inputs from a directory of .npy files or random with a seed; prints "
        "each output's shape, min, max and mean and the wall time; writes the outputs as .npy files.");
    cmd->add_option("PROJECT", o->project, "Project file (*.tapestry.json)")->required();
    cmd->add_option("--inputs", o->inputs_dir,
                    "Directory with one <tensor name>.npy per input (default: random values from --seed)");
    checked_output_folder(
        cmd->add_option("--outputs", o->outputs_dir, "Write each output as <tensor name>.npy into this directory"));
    cmd->add_option("--threads", o->threads, "Worker threads (virtual devices)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    add_seed_option(*cmd, "--seed", o->seed, "Seed of the random inputs");
    add_memory_limit_option(cmd, o->memory_limit);
    add_allow_outside_data_flag(cmd, o->allow_outside_data);
    cmd->add_flag("--no-shards", o->no_shards, "Run every operation whole, ignoring its shards");
    cmd->add_option("--tile-kib", o->tile_kib,
                    "Batch tiling: chains of batch-parallel steps with small weights (conv stacks) run tile by tile "
                    "of the batch, each tile's largest tensor about this size; 0 turns it off")
        ->capture_default_str();
    cmd->add_flag("--no-winograd", o->no_winograd,
                  "Run every convolution with the direct algorithm (by default 3x3 stride-1 convolutions with "
                  "channels in multiples of 16 run as Winograd, about twice as fast)");
    cmd->add_flag("--bf16-matmul", o->bf16_matmul,
                  "Reduced precision: matmul/linear steps compute in bf16 (f32 accumulation and "
                  "output) where the CPU has native bf16 - about twice as fast, relative errors ~1e-3");
    cmd->add_flag("--json", o->json, "Print the result as JSON");
    cmd->add_flag("-v,--verbose", o->verbose, "Also print the compiled program and per-step times");
    cmd->footer("Exit codes: 0 ran, 1 the project or its inputs are bad or the run failed, 2 usage error.");
    cmd->callback([o, &action] { action = [o] { return run_command(*o); }; });
}

}  // namespace tapestry::cli
