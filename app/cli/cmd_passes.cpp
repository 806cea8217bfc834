// `tapestry passes PROJECT --pipeline substitute,shard,fuse --shard SPEC… --out DIR`: runs a
// pipeline of passes (engine/passes, docs/passes.md), certifies every stage
// against the original, writes each stage as project JSON, SVG and stage text,
// and prints a summary table. Exit 1 when a pass refuses or a certificate fails.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli_support.h"
#include "graph/validate.h"
#include "io/atomic_file.h"
#include "io/graphviz.h"
#include "io/project_file.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "passes/pipeline_builder.h"
#include "passes/stage.h"
#include "runtime/cpu/fusion_backend.h"
#include "verify/numeric_check.h"
#include "run_support.h"

namespace tapestry::cli {
namespace {

namespace fs = std::filesystem;

struct PassesOptions {
    std::string project;
    bool allow_outside_data = false;
    std::string pipeline = "shard";
    std::vector<std::string> shard_specs;
    bool no_propagate = false;
    bool no_movement = false;
    std::vector<std::string> rules;
    std::string goal = "expand";
    std::vector<std::string> fuse_exclude;
    std::string out;
    bool numeric = false;
    std::uint64_t seed = 1;
    bool no_svg = false;
};

int passes_command(const PassesOptions &o) {
    // The pipeline is checked before anything is read: a typo is a usage error.
    PipelineSettings settings;
    settings.shard_specs = o.shard_specs;
    settings.propagate = !o.no_propagate;
    settings.movement = !o.no_movement;
    settings.rules = o.rules;
    settings.goal = o.goal;
    settings.fuse_exclude = o.fuse_exclude;
    settings.fusion_backends = {&cpu::fusion_backend()};
    auto pipeline = build_pipeline(pipeline_names(o.pipeline), settings);
    if (!pipeline) {
        std::cerr << "tapestry: " << pipeline.error() << "\n";
        return kExitUsage;
    }

    LoadResult loaded = load_project(o.project);
    if (loaded.ok())  // the passes rewrite a valid graph; each stage's certificate then checks theirs
        for (Issue &i : validate(loaded.graph, OpLibrary::standard()))
            if (i.severity == Severity::error) loaded.issues.push_back(std::move(i));
    for (const Issue &i : loaded.issues) std::cerr << "tapestry: " << o.project << ": " << format_issue(i) << "\n";
    if (has_errors(loaded.issues)) return kExitInvalid;
    fs::path dir = fs::path(o.project).parent_path();
    if (dir.empty()) dir = ".";
    const std::vector<Issue> value_issues =
        load_tensor_values(loaded.graph, dir, DataPathPolicy{o.allow_outside_data});
    for (const Issue &i : value_issues) std::cerr << "tapestry: " << o.project << ": " << format_issue(i) << "\n";
    if (has_errors(value_issues)) return kExitInvalid;

    CertifyOptions certify;
    if (o.numeric) {
        verify::NumericCheckOptions numeric;
        numeric.seed = o.seed;
        certify.numeric = verify::numeric_check(numeric);
    }
    auto stages = pipeline->run(loaded.graph, certify);
    if (!stages) {
        std::cerr << "tapestry: " << o.project << ": " << stages.error() << "\n";
        return kExitInvalid;
    }

    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) {
        std::cerr << "tapestry: cannot create " << o.out << ": " << ec.message() << "\n";
        return kExitInvalid;
    }
    std::vector<std::vector<std::string>> rows{
        {"stage", "pass", "added", "removed", "changed", "certificate", "files"}};
    bool all_pass = true;
    for (size_t k = 0; k < stages->size(); ++k) {
        const Stage &s = (*stages)[k];
        const std::string base = "stage-" + std::to_string(k) + "-" + s.pass;
        const fs::path json = fs::path(o.out) / (base + ".tapestry.json");
        if (std::string e = save_project_with_values(s.graph, json); !e.empty()) {
            std::cerr << "tapestry: " << e << "\n";
            return kExitInvalid;
        }
        if (std::string e =
                write_file_atomically(fs::path(o.out) / (base + ".txt"), stage_text(s, static_cast<int>(k)));
            !e.empty()) {
            std::cerr << "tapestry: " << e << "\n";
            return kExitInvalid;
        }
        std::string files = base + ".tapestry.json, .txt";
        if (!o.no_svg) {
            auto svg = render_dot(to_dot(s.graph, OpLibrary::standard()), "svg");
            if (!svg) {
                std::cerr << "tapestry: " << base << ": " << svg.error() << "\n";
                return kExitInvalid;
            }
            if (std::string e = write_file_atomically(fs::path(o.out) / (base + ".svg"), *svg); !e.empty()) {
                std::cerr << "tapestry: " << e << "\n";
                return kExitInvalid;
            }
            files += ", .svg";
        }
        const auto summary = s.diff.summary();
        const bool pass = !s.certificate.certified() || s.certificate.pass();
        all_pass &= pass;
        rows.push_back({std::to_string(k), s.pass, std::to_string(summary.added.size()),
                        std::to_string(summary.removed.size()), std::to_string(summary.changed.size()),
                        s.certificate.certified() ? s.certificate.badge() : "-", files});
    }
    std::cout << o.project << ": " << stages->size() - 1 << " pass(es), stages written to " << o.out << "\n";
    print_table(rows, "  ");
    for (const Stage &s : *stages)
        if (!s.summary.empty() && s.pass != "original") std::cout << "  " << s.pass << ": " << s.summary << "\n";
    for (const Stage &s : *stages)
        if (s.certificate.certified() && !s.certificate.pass()) std::cout << s.certificate.text();
    return all_pass ? kExitOk : kExitInvalid;
}

}  // namespace

void add_passes_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<PassesOptions>();
    CLI::App *cmd = app.add_subcommand(
        "passes", "Run a pipeline of passes, certify every stage, write each stage as JSON, SVG and text.");
    cmd->add_option("PROJECT", o->project, "Project file (*.tapestry.json)")->required();
    cmd->add_option("--pipeline", o->pipeline, "Passes in order, comma-separated: substitute, shard, fuse")
        ->capture_default_str();
    cmd->add_option("--shard", o->shard_specs,
                    "Shard spec 'op:dim=parts' (even split, uneven when it does not divide) or 'op:dim=3+5+2' "
                    "(explicit sizes); repeatable");
    cmd->add_flag("--no-propagate", o->no_propagate, "shard: do not extend shardings to neighbouring operations");
    cmd->add_flag("--no-movement", o->no_movement,
                  "shard: do not insert data-movement nodes where producer and consumer shards disagree");
    cmd->add_option("--rule", o->rules, "substitute: a rule to run (repeatable; default: the expand set)");
    cmd->add_option("--goal", o->goal, "substitute: 'expand' (composites into shardable ops) or 'fuse'")
        ->capture_default_str();
    cmd->add_option("--no-fuse", o->fuse_exclude, "fuse: an operation never fused (repeatable)");
    checked_output_folder(cmd->add_option("--out", o->out, "Folder for the stages")->required());
    cmd->add_flag("--numeric", o->numeric,
                  "Also run every stage against the original on the CPU with random inputs and compare outputs");
    add_seed_option(*cmd, "--seed", o->seed, "Seed of the random inputs of --numeric");
    cmd->add_flag("--no-svg", o->no_svg, "Do not draw the stages (faster on big graphs)");
    add_allow_outside_data_flag(cmd, o->allow_outside_data);
    cmd->footer("Exit codes: 0 every stage certified, 1 a pass refused or a certificate failed (printed), 2 usage.");
    cmd->callback([o, &action] { action = [o] { return passes_command(*o); }; });
}

}  // namespace tapestry::cli
