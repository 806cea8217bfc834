// What every `tapestry` subcommand shares (docs/cli.md): exit codes, problems on
// stderr as "tapestry: <file>: …", JSON on stdout, aligned tables, human units,
// loading a project for the read-only commands, writing an output file. Each
// subcommand lives in its own cmd_<name>.cpp and adds itself to the parser.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"

namespace CLI {
class App;
class Option;
}

namespace tapestry::cli {

// Exit codes that mean something (docs/cli.md).
enum ExitCode : int {
    kExitOk = 0,       // done; the project is valid
    kExitInvalid = 1,  // the input is bad: unreadable, malformed, or fails validation; or output failed
    kExitUsage = 2,    // bad command line
};

// Every subcommand: adds itself to `app`; `action` is set to what runs when it is chosen.
using AddCommand = void (*)(CLI::App &app, std::function<int()> &action);
void add_validate_command(CLI::App &app, std::function<int()> &action);  // cmd_validate.cpp
void add_show_command(CLI::App &app, std::function<int()> &action);      // cmd_show.cpp
void add_export_command(CLI::App &app, std::function<int()> &action);    // cmd_export.cpp
void add_ops_command(CLI::App &app, std::function<int()> &action);       // cmd_ops.cpp
void add_import_command(CLI::App &app, std::function<int()> &action);    // cmd_import.cpp
void add_run_command(CLI::App &app, std::function<int()> &action);       // cmd_run.cpp
void add_verify_command(CLI::App &app, std::function<int()> &action);    // cmd_verify.cpp
void add_passes_command(CLI::App &app, std::function<int()> &action);    // cmd_passes.cpp
void add_session_command(CLI::App &app, std::function<int()> &action);   // cmd_session.cpp
void add_plan_command(CLI::App &app, std::function<int()> &action);      // cmd_plan.cpp
void add_targets_command(CLI::App &app, std::function<int()> &action);   // cmd_plan.cpp
void add_optimize_command(CLI::App &app, std::function<int()> &action);  // cmd_optimize.cpp
void add_launch_command(CLI::App &app, std::function<int()> &action);    // cmd_launch.cpp (launch, devices)
void add_calibrate_command(CLI::App &app, std::function<int()> &action); // cmd_calibrate.cpp

// "tapestry: <file>: <issue>" / "tapestry: <file>: <message>" on stderr.
void report_issue(const std::string &file, const Issue &issue);
void report_error(const std::string &file, const std::string &message);
nlohmann::ordered_json issue_json(const Issue &issue);
void print_json(const nlohmann::ordered_json &j);  // indented, on stdout
int count(const std::vector<Issue> &issues, Severity s);
std::string plural(long long n, const std::string &word);  // "1 tensor", "3 tensors"
std::string plural(long long n, const std::string &word, const std::string &words);  // "1 search", "2 searches"
std::string human_bytes(double bytes);                      // 1536 → "1.5 KiB"
std::string human_flops(double flops);                      // 2.5e9 → "2.50 GFLOP"
std::string formatted(double v, const char *printf_format = "%.3f");
// Rows as left-aligned columns two spaces apart (widths in characters, UTF-8
// aware), each line prefixed by `indent`; the last column is not padded.
void print_table(const std::vector<std::vector<std::string>> &rows, const std::string &indent);

// A project as the read-only commands load it: the graph unless loading found an
// error, and every load issue (warnings survive a successful load).
struct Loaded {
    std::optional<Graph> graph;
    std::vector<Issue> issues;
};
Loaded load(const std::string &file);
// load, then validation (graph/validate.h) for the commands that plan, search or
// rewrite the graph: its errors join the issues, and a graph with any is not
// returned (warnings of validation are left to `tapestry validate`).
Loaded load_valid(const std::string &file);

// A seed option (--seed, --check-seed): a whole number 0 … 2^64 − 1 in decimal.
// CLI11 alone would take "-5" as 2^64 − 5 and 2^64 as something else; this
// refuses both, naming the option and the range.
CLI::Option *add_seed_option(CLI::App &cmd, const std::string &name, std::uint64_t &seed, const std::string &help);

// Outputs checked where they are named, before anything runs, so that a long run
// (a search, a launch, an import, a host measurement) does not end by failing to
// keep its result. A file: not a folder, and in a folder that exists ("" and "-"
// are standard output). A folder (made when missing): not a file, nor under one.
// Each returns "" when the name will do, else why not.
std::string output_file_refusal(const std::string &path);
std::string output_folder_refusal(const std::string &dir);
// The same as a parse-time check on `option` (exit 2, naming the option); returns
// it. `shown` is what --help prints after the option's type.
CLI::Option *checked_output_file(CLI::Option *option, const std::string &shown = "FILE");
CLI::Option *checked_output_folder(CLI::Option *option);
// A front file's form by its name's ending, any case (as the studio's export):
// "csv", "json", or "" for neither.
std::string front_format(const std::string &path);
// checked_output_file, and the name ends .json or .csv (--export-front).
CLI::Option *checked_front_file(CLI::Option *option);

// Ctrl-C (SIGINT) caught while held: interrupted() turns true and the process
// goes on, so a long run (a search, a launch, a calibration) stops where it is
// and reports what it did. release() (or the end of its scope) restores what
// SIGINT did before, so a second Ctrl-C after it ends the process. One at a time.
class InterruptGuard {
public:
    InterruptGuard();
    ~InterruptGuard() { release(); }
    InterruptGuard(const InterruptGuard &) = delete;
    InterruptGuard &operator=(const InterruptGuard &) = delete;
    void release();
    static bool interrupted();
    static const std::atomic<bool> &flag();  // for an engine's stop flag

private:
    void (*previous_)(int) = nullptr;
    bool held_ = false;
};

// Writes `data` to `path` (stdout for "" or "-"); false after reporting a failure for `file`.
bool write_output(const std::string &path, const std::string &data, const std::string &file);

}  // namespace tapestry::cli
