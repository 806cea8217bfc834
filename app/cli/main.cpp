// `tapestry`: the headless twin of the studio (DESIGN.md §10, docs/cli.md).
// Parses the command line with CLI11 and maps its outcomes onto our exit codes:
// 0 ok, 1 invalid input, 2 usage.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "commands.h"

#ifndef TAPESTRY_VERSION
#define TAPESTRY_VERSION "0.1.0"  // normally set by app/CMakeLists.txt from project()
#endif

int main(int argc, char **argv) {
    using namespace tapestry::cli;

    CLI::App app{"Tapestry Workbench command line: check, summarise and draw block tensor operation graphs.",
                 "tapestry"};
    app.set_version_flag("--version", std::string("tapestry ") + TAPESTRY_VERSION);
    app.require_subcommand(1);
    app.failure_message([](const CLI::App *, const CLI::Error &e) {
        return std::string("tapestry: ") + e.what() + "\nRun with --help for more information.\n";
    });
    app.footer("Exit codes: 0 ok, 1 invalid input (unreadable, malformed or invalid project), 2 usage error.\n");

    std::string file;
    bool json = false;

    CLI::App *validate = app.add_subcommand(
        "validate", "Check a project file: syntax, references, shapes, projections, shards. Exit 1 when invalid.");
    validate->add_option("PROJECT", file, "Project file (*.tapestry.json)")->required();
    validate->add_flag("--json", json, "Print {file, valid, issues[]} as JSON");

    CLI::App *show = app.add_subcommand(
        "show", "Summarise a project: tensors, operations with index spaces, FLOPs and bytes, shards, totals.");
    show->add_option("PROJECT", file, "Project file (*.tapestry.json)")->required();
    show->add_flag("--json", json, "Print the summary as JSON");

    ExportOptions export_options;
    bool no_shards = false;
    CLI::App *exporter = app.add_subcommand(
        "export", "Draw a project as DOT, SVG or PNG (through Graphviz), or re-serialise it as project JSON.");
    exporter->add_option("PROJECT", file, "Project file (*.tapestry.json)")->required();
    exporter->add_option("--format,-f", export_options.format, "Output format")
        ->check(CLI::IsMember({"dot", "svg", "png", "json"}))
        ->capture_default_str();
    exporter->add_option("-o,--output", export_options.output, "Output file (default: standard output)");
    exporter->add_flag("--projections", export_options.projections,
                       "Draw each operation's index projections as [A | b | window] tables");
    exporter->add_flag("--no-shards", no_shards, "Do not draw shards");
    exporter->add_option("--rankdir", export_options.rankdir, "Layout direction")
        ->check(CLI::IsMember({"TB", "LR"}))
        ->capture_default_str();

    std::string kind;
    CLI::App *ops = app.add_subcommand("ops", "List the operation library: kinds, categories, ports, parameters.");
    ops->add_option("KIND", kind, "Show one kind in full");
    ops->add_flag("--json", json, "Print the library as JSON");

    // Subcommands in their own files (cmd_*.cpp) set `action` when chosen.
    std::function<int()> action;
    add_run_command(app, action);
    add_verify_command(app, action);
    add_import_command(app, action);
    add_session_command(app, action);
    add_passes_command(app, action);

    // CLI11 would call an unknown word "an extra argument" after "a subcommand is
    // required"; name it instead.
    if (argc > 1 && argv[1][0] != '-') {
        const std::string word = argv[1];
        bool known = false;
        for (const CLI::App *sub : app.get_subcommands({})) known = known || sub->check_name(word);
        if (!known) {
            std::string names;
            const auto subs = app.get_subcommands({});
            for (size_t i = 0; i < subs.size(); ++i)
                names += (i == 0 ? "" : i + 1 == subs.size() ? " or " : ", ") + subs[i]->get_name();
            std::cerr << "tapestry: unknown command '" << word << "' (expected " << names << ")\n"
                      << "Run with --help for more information.\n";
            return kExitUsage;
        }
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        // Help and version are successes; every other parse failure is a usage error.
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }

    if (*validate) return run_validate(file, json);
    if (*show) return run_show(file, json);
    if (*exporter) {
        export_options.shards = !no_shards;
        return run_export(file, export_options);
    }
    if (*ops) return run_ops(kind, json);
    if (action) return action();
    return kExitUsage;
}
