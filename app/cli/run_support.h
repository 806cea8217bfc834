// What `tapestry run` and `tapestry verify` share: loading a project with its
// tensor values and the run's inputs (a directory of .npy files or seeded random
// values), problem reporting for text and --json, and a progress bar on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"
#include "graph/tensor_data.h"

namespace tapestry::cli {

struct PreparedRun {
    std::optional<Graph> graph;             // set when the project loaded, validated and has its values
    std::map<TensorId, TensorData> inputs;  // every input (and parameter without a value)
    std::string input_source;               // "random (seed 7)" or "directory 'in/'"
    std::vector<Issue> issues;              // load, validation and value problems (errors and warnings)
    std::vector<std::string> errors;        // other problems, one sentence each
    bool ok() const { return graph.has_value(); }
};

// Loads `file`, validates it with the standard library, loads the .npy values
// beside it, then reads the inputs from `inputs_dir` (when not empty) or makes
// random ones from `seed`. Parameters without a value get random values too.
struct PrepareOptions {
    bool oracle = false;             // `verify`: the budget adds the oracle's copies (cpu::check_memory)
    std::int64_t memory_limit = 0;   // bytes; 0 is what the machine has available
    bool allow_outside_data = false; // read `data` outside the project's folder (DataPathPolicy)
};
PreparedRun prepare_run(const std::string &file, const std::string &inputs_dir, std::uint64_t seed,
                        const PrepareOptions &options = {});
// The --memory-limit option of `run` and `verify`, parsed into `bytes`.
void add_memory_limit_option(CLI::App *cmd, std::int64_t &bytes);
// The --allow-outside-data flag of the commands that read a project's values.
void add_allow_outside_data_flag(CLI::App *cmd, bool &allow);

// Prints the problems of `p` as "tapestry: <file>: <problem>" lines on stderr.
void report_problems(const std::string &file, const PreparedRun &p);
// {file, ok: false, issues: [...], errors: [...]} for --json failures.
nlohmann::ordered_json problems_json(const std::string &file, const PreparedRun &p);

// A one-line progress bar on stderr, drawn only when stderr is a terminal; safe to
// update from worker threads; redraws at most ~20 times a second.
class ProgressBar {
public:
    explicit ProgressBar(bool enabled);
    ~ProgressBar();
    void update(const std::string &label, int done, int total);
    void clear();

private:
    bool enabled_;
    bool drawn_ = false;
    std::mutex mutex_;
    std::chrono::steady_clock::time_point last_;
};

// Values of one tensor summarised: min, max, mean over the finite elements, and
// how many are NaN or infinite.
struct ValueSummary {
    double min = 0, max = 0, mean = 0;
    std::int64_t nan_count = 0, inf_count = 0;
};
ValueSummary summarize_values(const TensorData &t);

// Flat row-major index → "[i, j, k]" in a tensor of shape `shape`.
std::string element_string(std::int64_t flat, const ZPoint &shape);
std::vector<std::int64_t> element_coords(std::int64_t flat, const ZPoint &shape);

// Reports what preparing the run found — problems as JSON on stdout with `json`,
// else errors and warnings on stderr. False when the run cannot go ahead.
bool report_preparation(const std::string &project, const PreparedRun &prepared, bool json);

}  // namespace tapestry::cli
