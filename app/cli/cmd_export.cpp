// `tapestry export PROJECT`: DOT, SVG or PNG through Graphviz, or project JSON.
#include "cli_support.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "graph/validate.h"
#include "io/graphviz.h"
#include "io/project_file.h"
#include "ops/library.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

struct ExportOptions {
    std::string file;
    std::string format = "svg";  // dot, svg, png, json
    std::string output;          // file; empty or "-" = stdout
    bool projections = false;
    bool no_shards = false;
    std::string rankdir = "TB";
};

int run_export(const ExportOptions &options) {
    const std::string &file = options.file;
    Loaded loaded = load(file);
    if (!loaded.graph) {
        for (const Issue &i : loaded.issues) report_issue(file, i);
        return kExitInvalid;
    }
    const Graph &g = *loaded.graph;
    std::string data;
    if (options.format == "json") {
        data = serialize_project(g);
    } else {
        DrawOptions draw;
        // A broken graph is drawn too — export is how one looks at it — with the
        // nodes validation finds at fault marked, and the findings said.
        int errors = 0;
        for (const Issue &i : validate(g, OpLibrary::standard()))
            if (i.severity == Severity::error) {
                report_issue(file, i);
                ++errors;
                if (!i.node.empty()) draw.marked.insert(i.node);
                draw.marked.insert(i.related.begin(), i.related.end());
            }
        if (errors > 0)
            std::cerr << "tapestry: " << file << ": drawn with " << errors << (errors == 1 ? " error" : " errors")
                      << "; the nodes at fault have a red border\n";
        draw.show_projections = options.projections;
        draw.show_shards = !options.no_shards;
        draw.rankdir = options.rankdir;
        data = to_dot(g, OpLibrary::standard(), draw);
        if (options.format != "dot") {
            auto rendered = render_dot(data, options.format);
            if (!rendered) {
                report_error(file, rendered.error());
                return kExitInvalid;
            }
            data = std::move(rendered).value();
        }
    }
    return write_output(options.output, data, file) ? kExitOk : kExitInvalid;
}

}  // namespace

void add_export_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<ExportOptions>();
    CLI::App *cmd = app.add_subcommand(
        "export", "Draw a project as DOT, SVG or PNG (through Graphviz), or re-serialise it as project JSON.");
    cmd->add_option("PROJECT", o->file, "Project file (*.tapestry.json)")->required();
    cmd->add_option("--format,-f", o->format, "Output format")
        ->check(CLI::IsMember({"dot", "svg", "png", "json"}))
        ->capture_default_str();
    checked_output_file(cmd->add_option("-o,--output", o->output, "Output file (default: standard output)"));
    cmd->add_flag("--projections", o->projections, "Draw each operation's index projections as [A | b | window] tables");
    cmd->add_flag("--no-shards", o->no_shards, "Do not draw shards");
    cmd->add_option("--rankdir", o->rankdir, "Layout direction")->check(CLI::IsMember({"TB", "LR"}))->capture_default_str();
    cmd->callback([o, &action] { action = [o] { return run_export(*o); }; });
}
}  // namespace tapestry::cli
