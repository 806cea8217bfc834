// `tapestry validate PROJECT [--json]`: syntax, references, shapes, projections, shards.
#include "cli_support.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "graph/validate.h"
#include "ops/library.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

int run_validate(const std::string &file, bool json) {
    Loaded loaded = load(file);
    std::vector<Issue> issues = loaded.issues;
    if (loaded.graph) {
        std::vector<Issue> more = validate(*loaded.graph, OpLibrary::standard());
        issues.insert(issues.end(), more.begin(), more.end());
    }
    const bool valid = !has_errors(issues);
    if (json) {
        ordered_json j{{"file", file}, {"valid", valid}, {"issues", ordered_json::array()}};
        for (const Issue &i : issues) j["issues"].push_back(issue_json(i));
        print_json(j);
    } else {
        for (const Issue &i : issues) report_issue(file, i);
        const int errors = count(issues, Severity::error), warnings = count(issues, Severity::warning);
        if (valid) {
            std::cout << file << ": valid (" << plural(static_cast<long long>(loaded.graph->tensors().size()), "tensor")
                      << ", " << plural(static_cast<long long>(loaded.graph->operations().size()), "operation") << ", "
                      << plural(warnings, "warning") << ")\n";
        } else {
            std::cout << file << ": invalid (" << plural(errors, "error") << ", " << plural(warnings, "warning")
                      << ")\n";
        }
    }
    return valid ? kExitOk : kExitInvalid;
}

}  // namespace

void add_validate_command(CLI::App &app, std::function<int()> &action) {
    auto file = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App *cmd = app.add_subcommand(
        "validate", "Check a project file: syntax, references, shapes, projections, shards. Exit 1 when invalid.");
    cmd->add_option("PROJECT", *file, "Project file (*.tapestry.json)")->required();
    cmd->add_flag("--json", *json, "Print {file, valid, issues[]} as JSON");
    cmd->callback([file, json, &action] { action = [file, json] { return run_validate(*file, *json); }; });
}
}  // namespace tapestry::cli
