// The `tapestry` subcommands: validate, show, export, ops.
#include "commands.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "io/graphviz.h"
#include "io/project_file.h"
#include "ops/library.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

// ---------------------------------------------------------------------------
// Reporting

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

// 1536 → "1.5 KiB"
std::string human_bytes(double bytes) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 5) {
        bytes /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

// 2.5e9 → "2.50 GFLOP"
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

std::string shape_string(const ZPoint &p) { return p.to_string(); }

// Loads a project; on failure reports (unless quiet) and returns nullopt.
struct Loaded {
    std::optional<Graph> graph;
    std::vector<Issue> issues;  // load issues (warnings survive a successful load)
};

Loaded load(const std::string &file) {
    LoadResult r = load_project(file);
    Loaded out;
    out.issues = std::move(r.issues);
    if (!has_errors(out.issues)) out.graph = std::move(r.graph);
    return out;
}

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

// Left-aligned columns.
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

ordered_json param_value_json(const ParamValue &v) {
    return std::visit([](const auto &x) { return ordered_json(x); }, v);
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

}  // namespace

// ---------------------------------------------------------------------------

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
                                    {"shape", t->shape().coords()},
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
        rows.push_back({t->id.value, t->name, std::string(dtype_name(t->dtype)), shape_string(t->shape()),
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

int run_export(const std::string &file, const ExportOptions &options) {
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
        draw.show_projections = options.projections;
        draw.show_shards = options.shards;
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

int run_ops(const std::string &kind, bool json) {
    const OpLibrary &lib = OpLibrary::standard();
    std::vector<const OpDef *> defs;
    if (kind.empty()) {
        defs = lib.all();
    } else if (const OpDef *d = lib.find(kind)) {
        defs.push_back(d);
    } else {
        std::cerr << "tapestry: unknown operation kind '" << kind << "' (`tapestry ops` lists them)\n";
        return kExitInvalid;
    }

    if (json) {
        ordered_json arr = ordered_json::array();
        for (const OpDef *d : defs) {
            auto ports = [](const std::vector<PortSpec> &list) {
                ordered_json a = ordered_json::array();
                for (const PortSpec &p : list)
                    a.push_back({{"name", p.name}, {"doc", p.doc}, {"optional", p.optional}, {"variadic", p.variadic}});
                return a;
            };
            ordered_json params = ordered_json::array();
            for (const ParamSpec &p : d->params()) {
                ordered_json pj{{"name", p.name},
                                {"type", std::string(param_kind_name(p.kind))},
                                {"required", p.required},
                                {"doc", p.doc}};
                if (!p.required) pj["default"] = param_value_json(p.default_value);
                if (!p.choices.empty()) pj["choices"] = p.choices;
                params.push_back(std::move(pj));
            }
            arr.push_back({{"kind", std::string(d->kind())},
                           {"category", std::string(d->category())},
                           {"summary", std::string(d->summary())},
                           {"composite", d->composite()},
                           {"inputs", ports(d->input_ports())},
                           {"outputs", ports(d->output_ports())},
                           {"params", std::move(params)}});
        }
        print_json(arr);
        return kExitOk;
    }

    if (kind.empty()) {
        std::vector<std::vector<std::string>> rows{{"kind", "category", "inputs", "summary"}};
        for (const OpDef *d : defs) {
            std::string ins;
            for (const PortSpec &p : d->input_ports())
                ins += (ins.empty() ? "" : " ") + p.name + (p.variadic ? "..." : "") + (p.optional ? "?" : "");
            rows.push_back({std::string(d->kind()), std::string(d->category()), ins, std::string(d->summary())});
        }
        print_table(rows, "");
        std::cout << "\n" << defs.size() << " kinds; `tapestry ops KIND` shows one with its parameters.\n";
        return kExitOk;
    }

    const OpDef *d = defs.front();
    std::cout << d->kind() << "  (" << d->category() << (d->composite() ? ", composite" : "") << ")\n  "
              << d->summary() << "\n";
    auto print_ports = [](const char *title, const std::vector<PortSpec> &ports) {
        std::cout << "\n" << title << "\n";
        std::vector<std::vector<std::string>> rows;
        for (const PortSpec &p : ports) {
            std::string flags = p.optional ? "optional" : "";
            if (p.variadic) flags += std::string(flags.empty() ? "" : ", ") + "variadic";
            rows.push_back({p.name, flags.empty() ? "" : "(" + flags + ")", p.doc});
        }
        print_table(rows, "  ");
    };
    print_ports("inputs", d->input_ports());
    print_ports("outputs", d->output_ports());
    std::cout << "\nparameters\n";
    if (d->params().empty()) std::cout << "  (none)\n";
    std::vector<std::vector<std::string>> rows;
    for (const ParamSpec &p : d->params()) {
        std::string req = p.required ? "required" : "default " + param_to_string(p.default_value);
        std::string doc = p.doc;
        if (!p.choices.empty()) {
            std::string c;
            for (const std::string &x : p.choices) c += (c.empty() ? "" : " | ") + x;
            doc += (doc.empty() ? "" : "; ") + std::string("one of ") + c;
        }
        rows.push_back({p.name, std::string(param_kind_name(p.kind)), req, doc});
    }
    print_table(rows, "  ");
    return kExitOk;
}

}  // namespace tapestry::cli
