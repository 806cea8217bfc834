// `tapestry`: the headless twin of the studio (DESIGN.md §10, docs/cli.md).
// Parses the command line with CLI11 and maps its outcomes onto our exit codes:
// 0 ok, 1 invalid input, 2 usage.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <new>

#include "cli_support.h"
#include "common/checked_size.h"
#include "runtime/cpu/memory_budget.h"

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

    // Every subcommand lives in its own file (cmd_<name>.cpp) and sets `action`
    // when it is chosen.
    std::function<int()> action;
    for (const AddCommand add : {add_validate_command, add_show_command, add_export_command, add_ops_command,
                                 add_run_command, add_verify_command, add_import_command, add_session_command,
                                 add_passes_command, add_plan_command, add_targets_command, add_optimize_command,
                                 add_launch_command, add_calibrate_command})
        add(app, action);

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

    if (!action) return kExitUsage;
    try {
        return action();
    } catch (const std::bad_alloc &) {
        // The memory budget refuses graphs too large before anything is allocated
        // (runtime/cpu/memory_budget.h); this is what slips past it.
        std::cerr << "tapestry: out of memory: an allocation failed (the machine has "
                  << tapestry::byte_text(tapestry::cpu::available_memory())
                  << " available); nothing was written\n";
        return kExitInvalid;
    }
}
