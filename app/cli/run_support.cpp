// Shared by `tapestry run` and `tapestry verify`: project + values + inputs,
// problem reporting, progress bar, value summaries.
#include "run_support.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>

#include "graph/validate.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::cli {

PreparedRun prepare_run(const std::string &file, const std::string &inputs_dir, std::uint64_t seed,
                        const PrepareOptions &options) {
    PreparedRun p;
    LoadResult loaded = load_project(file);
    p.issues = std::move(loaded.issues);
    if (has_errors(p.issues)) return p;
    Graph g = std::move(loaded.graph);

    std::vector<Issue> more = validate(g, OpLibrary::standard());
    p.issues.insert(p.issues.end(), more.begin(), more.end());
    if (has_errors(p.issues)) return p;

    // Before any value is read or made: the sizes, overflow-checked, against memory.
    if (auto fits = cpu::check_memory(g, options.oracle, options.memory_limit); !fits) {
        p.errors.push_back(fits.error());
        return p;
    }

    std::filesystem::path dir = std::filesystem::path(file).parent_path();
    if (dir.empty()) dir = ".";
    more = load_tensor_values(g, dir, DataPathPolicy{options.allow_outside_data});
    p.issues.insert(p.issues.end(), more.begin(), more.end());
    if (has_errors(p.issues)) return p;

    // Random values first: they fill every parameter without a value; a directory
    // of inputs then replaces the inputs it names.
    p.inputs = make_random_inputs(g, seed);
    if (inputs_dir.empty()) {
        p.input_source = "random (seed " + std::to_string(seed) + ")";
    } else {
        auto read = read_inputs_dir(g, inputs_dir);
        if (!read) {
            p.errors.push_back(read.error());
            return p;
        }
        for (auto &[id, value] : *read) p.inputs[id] = std::move(value);
        p.input_source = "directory '" + inputs_dir + "'";
    }
    p.graph = std::move(g);
    return p;
}

void add_memory_limit_option(CLI::App *cmd, std::int64_t &bytes) {
    cmd->add_option_function<std::string>(
           "--memory-limit",
           [&bytes](const std::string &text) {
               auto parsed = cpu::parse_byte_size(text);
               if (!parsed) throw CLI::ValidationError("--memory-limit", parsed.error());
               bytes = *parsed;
           },
           "Refuse a graph whose tensors need more than this (8G, 512M; default: the memory available)")
        ->type_name("SIZE");
}

void add_allow_outside_data_flag(CLI::App *cmd, bool &allow) {
    cmd->add_flag("--allow-outside-data", allow,
                  "Read tensor values a project's 'data' names outside its folder (absolute paths, '..')");
}

void report_problems(const std::string &file, const PreparedRun &p) {
    for (const Issue &i : p.issues) std::cerr << "tapestry: " << file << ": " << format_issue(i) << "\n";
    for (const std::string &e : p.errors) std::cerr << "tapestry: " << file << ": " << e << "\n";
}

nlohmann::ordered_json problems_json(const std::string &file, const PreparedRun &p) {
    nlohmann::ordered_json j{
        {"file", file}, {"ok", false}, {"issues", nlohmann::ordered_json::array()}, {"errors", p.errors}};
    for (const Issue &i : p.issues)
        j["issues"].push_back({{"severity", std::string(severity_name(i.severity))},
                               {"code", i.code},
                               {"message", i.message},
                               {"node", i.node},
                               {"json_path", i.json_path},
                               {"related", i.related}});
    return j;
}

// ---------------------------------------------------------------------------

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled && isatty(fileno(stderr)) != 0) {}

ProgressBar::~ProgressBar() {
    clear();
}

void ProgressBar::update(const std::string &label, int done, int total) {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(50)) return;
    last_ = now;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? static_cast<int>(static_cast<long long>(kWidth) * done / total) : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar += std::string(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(stderr, "\r\033[K%s [%s] %d/%d", label.c_str(), bar.c_str(), done, total);
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::clear() {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

// ---------------------------------------------------------------------------

ValueSummary summarize_values(const TensorData &t) {
    ValueSummary s;
    double sum = 0;
    std::int64_t finite = 0;
    s.min = std::numeric_limits<double>::infinity();
    s.max = -std::numeric_limits<double>::infinity();
    for (std::int64_t i = 0; i < t.element_count(); ++i) {
        const double v = t.get(i);
        if (std::isnan(v)) {
            ++s.nan_count;
            continue;
        }
        if (std::isinf(v)) {
            ++s.inf_count;
            continue;
        }
        s.min = std::min(s.min, v);
        s.max = std::max(s.max, v);
        sum += v;
        ++finite;
    }
    if (finite == 0) {
        s.min = s.max = s.mean = std::numeric_limits<double>::quiet_NaN();
    } else {
        s.mean = sum / static_cast<double>(finite);
    }
    return s;
}

std::vector<std::int64_t> element_coords(std::int64_t flat, const ZPoint &shape) {
    std::vector<std::int64_t> coords(static_cast<size_t>(shape.rank()), 0);
    for (int d = shape.rank() - 1; d >= 0; --d) {
        const std::int64_t extent = shape[d] > 0 ? shape[d] : 1;
        coords[static_cast<size_t>(d)] = flat % extent;
        flat /= extent;
    }
    return coords;
}

std::string element_string(std::int64_t flat, const ZPoint &shape) {
    if (flat < 0) return "-";
    return ZPoint(element_coords(flat, shape)).to_string();
}

bool report_preparation(const std::string &project, const PreparedRun &prepared, bool json) {
    if (prepared.ok()) {
        if (!json) report_problems(project, prepared);  // warnings
        return true;
    }
    if (json)
        std::cout << problems_json(project, prepared).dump(2) << "\n";
    else
        report_problems(project, prepared);
    return false;
}

}  // namespace tapestry::cli
