// The subcommands of the `tapestry` command line (docs/cli.md): each takes its
// parsed options, writes its report to stdout (text or --json) and its problems to
// stderr as "tapestry: <file>: <issue>" lines, and returns the exit code.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace tapestry::cli {

// Exit codes that mean something (docs/cli.md).
enum ExitCode : int {
    kExitOk = 0,       // done; the project is valid
    kExitInvalid = 1,  // the input is bad: unreadable, malformed, or fails validation; or output failed
    kExitUsage = 2,    // bad command line
};

int run_validate(const std::string &file, bool json);
int run_show(const std::string &file, bool json);

struct ExportOptions {
    std::string format = "svg";  // dot, svg, png, json
    std::string output;          // file; empty or "-" = stdout
    bool projections = false;
    bool shards = true;
    std::string rankdir = "TB";
};
int run_export(const std::string &file, const ExportOptions &options);

// Lists the operation library; `kind` non-empty shows that kind only.
int run_ops(const std::string &kind, bool json);

// Subcommands that live in their own file (cmd_<name>.cpp) add themselves to the
// parser; `action` is set to what runs when the subcommand is chosen.
void add_run_command(CLI::App &app, std::function<int()> &action);     // cmd_run.cpp
void add_verify_command(CLI::App &app, std::function<int()> &action);  // cmd_verify.cpp
void add_import_command(CLI::App &app, std::function<int()> &action);  // cmd_import.cpp
void add_session_command(CLI::App &app, std::function<int()> &action);  // cmd_session.cpp
void add_passes_command(CLI::App &app, std::function<int()> &action);   // cmd_passes.cpp

}  // namespace tapestry::cli
