// `tapestry verify PROJECT [--against ORIGINAL]`: the numeric proof of equivalence — runs the project's
// sharded form on the CPU executor, its unsharded form, and the double-precision
// oracle on the same inputs (with --against, the oracle of the original a stage came
// from), and prints max abs/rel error per output and pass/fail.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "io/project_file.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "run_support.h"
#include "verify/verify.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

struct VerifyCommandOptions {
    std::string project;
    std::string against;  // the original a stage came from
    std::string inputs_dir;
    std::uint64_t seed = 0;
    std::int64_t memory_limit = 0;  // bytes; 0: what the machine has available
    bool allow_outside_data = false;
    int threads = 2;
    double atol = 1e-4;
    double rtol = 1e-3;
    bool absolute_atol = false;
    bool tolerance_given = false;  // --atol or --rtol on the command line: no dtype floor
    bool json = false;
};

std::string sci(double v) { return formatted(v, "%.3g"); }

int verify_command(const VerifyCommandOptions &o) {
    PreparedRun prepared = prepare_run(o.project, o.inputs_dir, o.seed, PrepareOptions{true, o.memory_limit, o.allow_outside_data});
    if (!report_preparation(o.project, prepared, o.json)) return kExitInvalid;
    const Graph &g = *prepared.graph;

    // verify::check_equivalence announces each phase (unsharded run, sharded run,
    // oracle); the bar shows the current one.
    ProgressBar bar(!o.json);
    std::string phase = "unsharded run";
    verify::VerifyOptions options;
    Graph original;
    if (!o.against.empty()) {
        LoadResult loaded = load_project(o.against);
        for (const Issue &i : loaded.issues) std::cerr << "tapestry: " << o.against << ": " << format_issue(i) << "\n";
        if (!loaded.ok()) return kExitInvalid;
        std::filesystem::path dir = std::filesystem::path(o.against).parent_path();
        const std::vector<Issue> value_issues =
            load_tensor_values(loaded.graph, dir.empty() ? "." : dir, DataPathPolicy{o.allow_outside_data});
        for (const Issue &i : value_issues) std::cerr << "tapestry: " << o.against << ": " << format_issue(i) << "\n";
        if (has_errors(value_issues)) return kExitInvalid;
        original = std::move(loaded.graph);
        options.original = &original;
    }
    options.threads = o.threads;
    options.atol = o.atol;
    options.rtol = o.rtol;
    options.scale_atol = !o.absolute_atol;
    options.dtype_floor = !o.tolerance_given;
    options.phase = [&](verify::VerifyPhase p) {
        phase = p == verify::VerifyPhase::oracle ? "oracle (double precision)" : verify::to_string(p);
        bar.update(phase, 0, 1);
    };
    options.control.progress = [&](int done, int total) { bar.update(phase, done, total); };

    const auto start = std::chrono::steady_clock::now();
    auto report = verify::check_equivalence(g, OpLibrary::standard(), prepared.inputs, options);
    bar.clear();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report) {
        if (o.json) {
            prepared.errors.push_back("cannot verify: " + report.error());
            std::cout << problems_json(o.project, prepared).dump(2) << "\n";
        } else {
            std::cerr << "tapestry: " << o.project << ": cannot verify: " << report.error() << "\n";
        }
        return kExitInvalid;
    }

    auto shape_of = [&](const std::string &id) {
        const Tensor *t = g.find_tensor(TensorId(id));
        return t ? t->range.shape() : ZPoint();
    };

    if (o.json) {
        ordered_json j;
        j["file"] = o.project;
        j["name"] = g.name;
        j["ok"] = true;
        j["pass"] = report->pass();
        j["sharded"] = report->sharded;
        j["inputs"] = prepared.input_source;
        j["threads"] = o.threads;
        j["atol"] = o.atol;
        j["rtol"] = o.rtol;
        j["scale_atol"] = !o.absolute_atol;
        j["dtype_floor"] = options.dtype_floor;
        j["isa"] = cpu::cpu_isa().name;
        j["notices"] = report->notices;
        j["seconds"] = seconds;
        j["comparisons"] = ordered_json::array();
        for (const verify::OutputComparison &c : report->comparisons)
            j["comparisons"].push_back(
                {{"tensor", c.tensor},
                 {"against", c.against},
                 {"max_abs_error", c.max_abs_error},
                 {"max_rel_error", c.max_rel_error},
                 {"atol_applied", c.atol},
                 {"rtol_applied", c.rtol},
                 {"worst_index", c.worst_index},
                 {"worst_element", element_coords(std::max<std::int64_t>(c.worst_index, 0), shape_of(c.tensor))},
                 {"pass", c.pass}});
        std::cout << j.dump(2) << "\n";
        return report->pass() ? kExitOk : kExitInvalid;
    }

    std::cout << "verify  " << g.name << "  (" << o.project << ")\n"
              << "        "
              << (report->sharded ? (o.against.empty() ? "sharded run vs the oracle and vs the unsharded run"
                                                       : "sharded run vs the original's oracle (" + o.against +
                                                             ") and vs the unsharded run")
                                  : (o.against.empty() ? std::string("no shards: unsharded run vs the oracle")
                                                       : "no shards: unsharded run vs the original's oracle (" +
                                                             o.against + ")"))
              << "; inputs " << prepared.input_source << "\n        pass when |error| <= " << sci(o.atol)
              << (o.absolute_atol ? "" : "·max(1, max |reference|)") << " + " << sci(o.rtol) << "·|reference|"
              << (options.dtype_floor ? "; bf16/f16 outputs at least 2 ulps of their dtype" : "") << "\n";
    for (const std::string &n : report->notices) std::cout << "        note: " << n << "\n";
    std::cout << "\n";
    std::vector<std::vector<std::string>> rows{
        {"output", "against", "max abs", "max rel", "atol", "rtol", "worst at", "result"}};
    for (const verify::OutputComparison &c : report->comparisons)
        rows.push_back({c.tensor, c.against, sci(c.max_abs_error), sci(c.max_rel_error), sci(c.atol), sci(c.rtol),
                        element_string(c.worst_index, shape_of(c.tensor)), c.pass ? "pass" : "FAIL"});
    print_table(rows, "  ");
    const auto failed = std::count_if(report->comparisons.begin(), report->comparisons.end(),
                                      [](const verify::OutputComparison &c) { return !c.pass; });
    std::cout << "\n"
              << (report->pass() ? "equivalent" : "NOT equivalent") << "  (" << report->comparisons.size()
              << (report->comparisons.size() == 1 ? " comparison, " : " comparisons, ") << failed << " failed, "
              << sci(seconds) << " s)\n";
    return report->pass() ? kExitOk : kExitInvalid;
}

}  // namespace

void add_verify_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<VerifyCommandOptions>();
    CLI::App *cmd = app.add_subcommand(
        "verify",
        "Prove a project's sharded form equivalent: run it sharded and unsharded on the CPU and with the "
        "double-precision oracle on the same inputs; print max abs/rel error per output and pass/fail.");
    cmd->add_option("PROJECT", o->project, "Project file (*.tapestry.json)")->required();
    cmd->add_option("--against", o->against,
                    "The original project a stage came from (tapestry passes): compare with its oracle instead of "
                    "the stage's own");
    cmd->add_option("--inputs", o->inputs_dir,
                    "Directory with one <tensor name>.npy per input (default: random values from --seed)");
    add_seed_option(*cmd, "--seed", o->seed, "Seed of the random inputs");
    add_memory_limit_option(cmd, o->memory_limit);
    add_allow_outside_data_flag(cmd, o->allow_outside_data);
    cmd->add_option("--threads", o->threads, "Worker threads of the CPU runs")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    // A finite number ≥ 0 (CLI::NonNegativeNumber let "nan" through and wrote its
    // range as a 300-digit number).
    const CLI::Validator tolerance([](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) return "'" + text + "' is not a tolerance (a number ≥ 0)";
        return {};
    }, "TOL");
    CLI::Option *atol =
        cmd->add_option("--atol", o->atol, "Absolute tolerance, in units of max(1, max |reference|) of each output")
            ->check(tolerance)
            ->capture_default_str();
    cmd->add_flag("--absolute-atol", o->absolute_atol, "Apply --atol as it is, not scaled by the output's magnitude");
    CLI::Option *rtol = cmd->add_option("--rtol", o->rtol, "Relative tolerance (times |reference|)")
                            ->check(tolerance)
                            ->capture_default_str();
    cmd->add_flag("--json", o->json, "Print the comparisons as JSON");
    cmd->footer(
        "An element passes when |result - reference| <= atol·max(1, max |reference|) + rtol·|reference|\n"
        "(atol unscaled with --absolute-atol). Without --atol and --rtol, a bf16 or f16 output is compared\n"
        "at no less than two units in its last place: 2^-6 (bf16), 2^-9 (f16) for both.\n"
        "Exit codes: 0 equivalent, 1 a comparison failed or the project/inputs are bad, 2 usage error.");
    cmd->callback([o, atol, rtol, &action] {
        o->tolerance_given = atol->count() > 0 || rtol->count() > 0;
        action = [o] { return verify_command(*o); };
    });
}

}  // namespace tapestry::cli
