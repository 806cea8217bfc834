// The subcommands of the `tapestry` command line (docs/cli.md): each takes its
// parsed options, writes its report to stdout (text or --json) and its problems to
// stderr as "tapestry: <file>: <issue>" lines, and returns the exit code.
#pragma once

#include <string>

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

}  // namespace tapestry::cli
