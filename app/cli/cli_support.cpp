// What every `tapestry` subcommand shares (see cli_support.h).
#include "cli_support.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/checked_size.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"

namespace tapestry::cli {

using nlohmann::ordered_json;

void report_issue(const std::string &file, const Issue &issue) {
    std::cerr << "tapestry: " << file << ": " << format_issue(issue) << "\n";
}

void report_error(const std::string &file, const std::string &message) {
    std::cerr << "tapestry: " << file << ": " << message << "\n";
}

ordered_json issue_json(const Issue &i) {
    return ordered_json{{"severity", std::string(severity_name(i.severity))},
                        {"code", i.code},
                        {"message", i.message},
                        {"node", i.node},
                        {"json_path", i.json_path},
                        {"related", i.related}};
}

void print_json(const ordered_json &j) { std::cout << j.dump(2) << "\n"; }

int count(const std::vector<Issue> &issues, Severity s) {
    return static_cast<int>(std::count_if(issues.begin(), issues.end(), [&](const Issue &i) { return i.severity == s; }));
}

std::string plural(long long n, const std::string &word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string plural(long long n, const std::string &word, const std::string &words) {
    return std::to_string(n) + " " + (n == 1 ? word : words);
}

std::string human_bytes(double bytes) {
    // Sums of sizes come as doubles; a saturated size (kSizeSaturated) or more is
    // "more than 8 EiB", never a wrapped small number.
    if (!(bytes < static_cast<double>(kSizeSaturated))) return byte_text(kSizeSaturated);
    return byte_text(static_cast<std::int64_t>(std::max(0.0, bytes)));
}

std::string human_flops(double flops) {
    static const char *units[] = {"", "k", "M", "G", "T", "P", "E"};
    int u = 0;
    while (flops >= 1000.0 && u < 6) {
        flops /= 1000.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %sFLOP" : "%.2f %sFLOP", flops, units[u]);
    return buf;
}

std::string formatted(double v, const char *printf_format) {
    char buf[64];
    std::snprintf(buf, sizeof buf, printf_format, v);
    return buf;
}

void print_table(const std::vector<std::vector<std::string>> &rows, const std::string &indent) {
    std::vector<size_t> width;
    auto display_width = [](const std::string &s) {
        size_t n = 0;
        for (char c : s)
            if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
        return n;
    };
    for (const auto &row : rows)
        for (size_t c = 0; c < row.size(); ++c) {
            if (width.size() <= c) width.push_back(0);
            width[c] = std::max(width[c], display_width(row[c]));
        }
    for (const auto &row : rows) {
        std::string line = indent;
        for (size_t c = 0; c < row.size(); ++c) {
            line += row[c];
            if (c + 1 < row.size()) line += std::string(width[c] - display_width(row[c]) + 2, ' ');
        }
        std::cout << line << "\n";
    }
}

Loaded load(const std::string &file) {
    LoadResult r = load_project(file);
    Loaded out;
    out.issues = std::move(r.issues);
    if (!has_errors(out.issues)) out.graph = std::move(r.graph);
    return out;
}

Loaded load_valid(const std::string &file) {
    Loaded out = load(file);
    if (!out.graph) return out;
    bool invalid = false;
    for (Issue &i : validate(*out.graph, OpLibrary::standard())) {
        if (i.severity != Severity::error) continue;
        out.issues.push_back(std::move(i));
        invalid = true;
    }
    if (invalid) out.graph.reset();
    return out;
}

CLI::Option *add_seed_option(CLI::App &cmd, const std::string &name, std::uint64_t &seed, const std::string &help) {
    const CLI::Validator whole([](std::string &text) -> std::string {
        const std::string refused = "'" + text + "' is not a seed (a whole number 0 … 18446744073709551615)";
        if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos) return refused;
        // 20 digits fit only up to 18446744073709551615.
        if (text.size() == 20 && text > "18446744073709551615") return refused;
        return {};
    }, "SEED");
    return cmd.add_option(name, seed, help)->capture_default_str()->check(whole);
}

std::string output_file_refusal(const std::string &path) {
    namespace fs = std::filesystem;
    if (path.empty() || path == "-") return {};
    std::error_code ec;
    if (fs::is_directory(path, ec)) return "'" + path + "' is a folder, not a file";
    const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    if (!fs::is_directory(folder, ec)) return "cannot write '" + path + "': the folder " + folder.string() + " does not exist";
    return {};
}

std::string output_folder_refusal(const std::string &dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // The nearest part of the name that exists must be a folder: the rest is made.
    for (fs::path p = fs::path(dir); !p.empty(); p = p.parent_path()) {
        if (fs::exists(p, ec)) {
            if (fs::is_directory(p, ec)) return {};
            return p == fs::path(dir) ? "'" + dir + "' is a file, not a folder"
                                      : "cannot make the folder '" + dir + "': " + p.string() + " is a file";
        }
        if (p == p.parent_path()) break;
    }
    return {};
}

CLI::Option *checked_output_file(CLI::Option *option, const std::string &shown) {
    return option->check(CLI::Validator([](std::string &path) { return output_file_refusal(path); }, shown));
}

std::string front_format(const std::string &path) {
    auto ends = [&](const char *suffix) {
        const std::string s(suffix);
        return path.size() > s.size() && std::equal(s.rbegin(), s.rend(), path.rbegin(), [](char a, char b) {
                   return a == std::tolower(static_cast<unsigned char>(b));
               });
    };
    return ends(".csv") ? "csv" : ends(".json") ? "json" : "";
}

CLI::Option *checked_front_file(CLI::Option *option) {
    return checked_output_file(option, "")->check(CLI::Validator(
        [](std::string &path) -> std::string {
            return front_format(path).empty() ? "'" + path + "' is not a front file (FILE.json or FILE.csv)" : "";
        },
        "FILE.json|FILE.csv"));
}

CLI::Option *checked_output_folder(CLI::Option *option) {
    return option->check(CLI::Validator([](std::string &dir) { return output_folder_refusal(dir); }, "DIR"));
}

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }
}  // namespace

InterruptGuard::InterruptGuard() : previous_(std::signal(SIGINT, on_interrupt)), held_(true) {
    g_interrupted.store(false);
}

void InterruptGuard::release() {
    if (held_) std::signal(SIGINT, previous_);
    held_ = false;
}

bool InterruptGuard::interrupted() {
    return g_interrupted.load();
}

const std::atomic<bool> &InterruptGuard::flag() {
    return g_interrupted;
}

bool write_output(const std::string &path, const std::string &data, const std::string &file) {
    if (path.empty() || path == "-") {
        std::cout.write(data.data(), static_cast<std::streamsize>(data.size()));
        std::cout.flush();
        return static_cast<bool>(std::cout);
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (out) out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
        report_error(file, "cannot write '" + path + "'");
        return false;
    }
    return true;
}

}  // namespace tapestry::cli
