// `tapestry show PROJECT [--json]`: tensors, operations with index spaces, FLOPs and bytes, shards, totals.
#include "cli_support.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "ops/library.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

// Cost of one operation over its whole index space, from the relative derivation.
struct OpSummary {
    std::optional<Derivation> derivation;
    std::optional<OpCost> cost;
    std::string error;  // why the op library could not derive it
};

OpSummary summarize(const Graph &g, const Operation &op) {
    const OpLibrary &lib = OpLibrary::standard();
    OpSummary s;
    const auto types = operand_types(g, op);
    if (!types) {
        s.error = types.error().field + ": " + types.error().message;
        return s;
    }
    const auto d = lib.derive(op.kind, op.params, *types);
    if (!d) {
        s.error = (d.error().field.empty() ? "" : d.error().field + ": ") + d.error().message;
        return s;
    }
    s.derivation = *d;
    if (const OpDef *def = lib.find(op.kind)) s.cost = lib.cost(*def, op.params, *d, *types, d->signature.index_space);
    return s;
}

std::string selections_text(const Graph &g, const std::vector<PortBinding> &ports) {
    std::string s;
    for (const PortBinding &p : ports)
        for (const TensorSelection &sel : p.selections) {
            if (!s.empty()) s += ", ";
            s += sel.tensor.value;
            const Tensor *t = g.find_tensor(sel.tensor);
            if (!t || t->range != sel.range) s += sel.range.to_string();
        }
    return s.empty() ? "(nothing)" : s;
}

ordered_json ports_json(const std::vector<PortBinding> &ports) {
    ordered_json arr = ordered_json::array();
    for (const PortBinding &p : ports)
        for (const TensorSelection &sel : p.selections)
            arr.push_back({{"port", p.name}, {"tensor", sel.tensor.value}, {"range", sel.range.to_string()}});
    return arr;
}

int run_show(const std::string &file, bool json) {
    Loaded loaded = load(file);
    if (!loaded.graph) {
        if (json) {
            ordered_json j{{"file", file}, {"valid", false}, {"issues", ordered_json::array()}};
            for (const Issue &i : loaded.issues) j["issues"].push_back(issue_json(i));
            print_json(j);
        } else {
            for (const Issue &i : loaded.issues) report_issue(file, i);
        }
        return kExitInvalid;
    }
    const Graph &g = *loaded.graph;
    std::vector<Issue> issues = loaded.issues;
    {
        std::vector<Issue> more = validate(g, OpLibrary::standard());
        issues.insert(issues.end(), more.begin(), more.end());
    }
    const int errors = count(issues, Severity::error), warnings = count(issues, Severity::warning);

    double tensor_bytes = 0, total_flops = 0, total_read = 0, total_written = 0;
    std::map<TensorRole, double> bytes_by_role;
    size_t shard_count = 0;
    for (const TensorPtr &t : g.tensors()) {
        tensor_bytes += static_cast<double>(t->bytes());
        bytes_by_role[t->role] += static_cast<double>(t->bytes());
    }
    std::vector<OpSummary> summaries;
    for (const OpPtr &op : g.operations()) {
        summaries.push_back(summarize(g, *op));
        if (summaries.back().cost) {
            total_flops += summaries.back().cost->flops;
            total_read += summaries.back().cost->bytes_read;
            total_written += summaries.back().cost->bytes_written;
        }
        shard_count += op->shards.size();
    }

    if (json) {
        ordered_json j;
        j["file"] = file;
        j["name"] = g.name;
        j["description"] = g.description;
        j["tensors"] = ordered_json::array();
        for (const TensorPtr &t : g.tensors())
            j["tensors"].push_back({{"id", t->id.value},
                                    {"name", t->name},
                                    {"dtype", std::string(dtype_name(t->dtype))},
                                    {"shape", t->shape().to_vector()},
                                    {"range", t->range.to_string()},
                                    {"role", std::string(role_name(t->role))},
                                    {"bytes", t->bytes()}});
        j["operations"] = ordered_json::array();
        for (size_t k = 0; k < g.operations().size(); ++k) {
            const Operation &op = *g.operations()[k];
            const OpSummary &s = summaries[k];
            ordered_json o{{"id", op.id.value},          {"name", op.name},
                           {"kind", op.kind},            {"inputs", ports_json(op.inputs)},
                           {"outputs", ports_json(op.outputs)}};
            if (s.derivation) o["index_space"] = s.derivation->signature.index_space.to_string();
            if (s.cost) {
                o["flops"] = s.cost->flops;
                o["bytes_read"] = s.cost->bytes_read;
                o["bytes_written"] = s.cost->bytes_written;
            }
            if (!s.error.empty()) o["error"] = s.error;
            o["shards"] = ordered_json::array();
            for (const Shard &sh : op.shards)
                o["shards"].push_back({{"id", sh.id.value}, {"index", sh.index.to_string()}, {"device", sh.device}});
            j["operations"].push_back(std::move(o));
        }
        j["totals"] = {{"tensors", g.tensors().size()},   {"operations", g.operations().size()},
                       {"shards", shard_count},           {"tensor_bytes", tensor_bytes},
                       {"flops", total_flops},            {"bytes_read", total_read},
                       {"bytes_written", total_written}};
        j["validation"] = {{"valid", errors == 0}, {"errors", errors}, {"warnings", warnings}};
        print_json(j);
        return errors == 0 ? kExitOk : kExitInvalid;
    }

    std::cout << "project  " << (g.name.empty() ? "(unnamed)" : g.name) << "  (" << file << ")\n";
    if (!g.description.empty()) std::cout << "         " << g.description << "\n";

    std::cout << "\ntensors (" << g.tensors().size() << ")\n";
    std::vector<std::vector<std::string>> rows{{"id", "name", "dtype", "shape", "range", "role", "bytes"}};
    for (const TensorPtr &t : g.tensors())
        rows.push_back({t->id.value, t->name, std::string(dtype_name(t->dtype)), t->shape().to_string(),
                        t->range.to_string(), std::string(role_name(t->role)), human_bytes(static_cast<double>(t->bytes()))});
    print_table(rows, "  ");

    std::cout << "\noperations (" << g.operations().size() << ")\n";
    for (size_t k = 0; k < g.operations().size(); ++k) {
        const Operation &op = *g.operations()[k];
        const OpSummary &s = summaries[k];
        std::cout << "  " << op.id.value << "  " << op.kind;
        if (!op.name.empty() && op.name != op.id.value) std::cout << "  \"" << op.name << "\"";
        std::cout << "  " << selections_text(g, op.inputs) << " \xE2\x86\x92 " << selections_text(g, op.outputs)
                  << "\n";
        if (!op.params.empty()) {
            std::string p;
            for (const auto &[name, value] : op.params.values())
                p += (p.empty() ? "" : ", ") + name + "=" + param_to_string(value);
            std::cout << "      params " << p << "\n";
        }
        if (s.derivation && s.cost) {
            std::cout << "      index " << s.derivation->signature.index_space.to_string() << "  "
                      << human_flops(s.cost->flops) << "  read " << human_bytes(s.cost->bytes_read) << "  write "
                      << human_bytes(s.cost->bytes_written) << "\n";
        } else {
            std::cout << "      cannot derive: " << s.error << "\n";
        }
        for (const Shard &sh : op.shards)
            std::cout << "      shard " << sh.id.value << "  " << sh.index.to_string() << "  "
                      << (sh.device.empty() ? "unplaced" : "on " + sh.device) << "\n";
    }

    std::cout << "\ntotals\n";
    std::string roles;
    for (const auto &[role, bytes] : bytes_by_role)
        roles += (roles.empty() ? "" : ", ") + std::string(role_name(role)) + " " + human_bytes(bytes);
    std::cout << "  " << plural(static_cast<long long>(g.tensors().size()), "tensor") << "  "
              << human_bytes(tensor_bytes) << (roles.empty() ? "" : "  (" + roles + ")") << "\n";
    std::cout << "  " << plural(static_cast<long long>(g.operations().size()), "operation") << "  "
              << human_flops(total_flops) << "  read " << human_bytes(total_read) << "  write "
              << human_bytes(total_written) << "\n";
    std::cout << "  " << plural(static_cast<long long>(shard_count), "shard") << "\n";
    std::cout << "\nvalidation  " << (errors == 0 ? "valid" : "invalid") << "  (" << plural(errors, "error") << ", "
              << plural(warnings, "warning") << "; run `tapestry validate` for details)\n";
    return errors == 0 ? kExitOk : kExitInvalid;
}

}  // namespace

void add_show_command(CLI::App &app, std::function<int()> &action) {
    auto file = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App *cmd = app.add_subcommand(
        "show", "Summarise a project: tensors, operations with index spaces, FLOPs and bytes, shards, totals.");
    cmd->add_option("PROJECT", *file, "Project file (*.tapestry.json)")->required();
    cmd->add_flag("--json", *json, "Print the summary as JSON");
    cmd->callback([file, json, &action] { action = [file, json] { return run_show(*file, *json); }; });
}
}  // namespace tapestry::cli
