// `tapestry ops [KIND] [--json]`: the operation library — kinds, categories, ports, parameters.
#include "cli_support.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <variant>

#include "ops/library.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

ordered_json param_value_json(const ParamValue &v) {
    return std::visit([](const auto &x) { return ordered_json(x); }, v);
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

}  // namespace

void add_ops_command(CLI::App &app, std::function<int()> &action) {
    auto kind = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App *cmd = app.add_subcommand("ops", "List the operation library: kinds, categories, ports, parameters.");
    cmd->add_option("KIND", *kind, "Show one kind in full");
    cmd->add_flag("--json", *json, "Print the library as JSON");
    cmd->callback([kind, json, &action] { action = [kind, json] { return run_ops(*kind, *json); }; });
}
}  // namespace tapestry::cli
