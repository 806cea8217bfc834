// `tapestry import MODEL.onnx -o NAME.tapestry.json [--dim name=N]...`: imports an
// ONNX model (io/onnx_import.h) and writes it as a project; parameter values are
// embedded when small and written as .npy files beside the project otherwise.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "cli_support.h"
#include "io/onnx_import.h"
#include "io/tensor_values.h"

namespace tapestry::cli {
namespace {

struct ImportCommandOptions {
    std::string model;
    std::string output;
    std::vector<std::string> dims;  // "name=N"
};

int import_command(const ImportCommandOptions &o) {
    OnnxImportOptions options;
    for (const std::string &d : o.dims) {
        const size_t eq = d.find('=');
        std::int64_t value = 0;
        bool ok = eq != std::string::npos && eq > 0 && eq + 1 < d.size();
        if (ok) {
            try {
                size_t used = 0;
                value = std::stoll(d.substr(eq + 1), &used);
                ok = used == d.size() - eq - 1 && value >= 1;
            } catch (const std::exception &) {
                ok = false;
            }
        }
        if (!ok) {
            std::cerr << "tapestry: --dim " << d << ": expected NAME=N with N a positive integer\n";
            return kExitUsage;
        }
        options.dim_values.emplace_back(d.substr(0, eq), value);
    }
    auto g = import_onnx(o.model, options);
    if (!g) {
        std::cerr << "tapestry: " << g.error().message << "\n";
        return kExitInvalid;
    }
    const std::string error = save_project_with_values(*g, o.output);
    if (!error.empty()) {
        std::cerr << "tapestry: " << o.output << ": " << error << "\n";
        return kExitInvalid;
    }
    int inputs = 0, parameters = 0, outputs = 0;
    for (const TensorPtr &t : g->tensors()) {
        inputs += t->role == TensorRole::input;
        parameters += t->role == TensorRole::parameter;
        outputs += t->role == TensorRole::output;
    }
    std::cout << "imported " << o.model << " → " << o.output << ": " << g->operations().size() << " operations, "
              << inputs << " inputs, " << parameters << " parameters, " << outputs << " outputs\n";
    if (const std::string note = onnx_conversion_note(*g); !note.empty()) std::cout << "  " << note << "\n";
    return kExitOk;
}

}  // namespace

void add_import_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<ImportCommandOptions>();
    CLI::App *cmd = app.add_subcommand(
        "import", "Import an ONNX model (opsets 13–17; older ones are converted to 13 with ONNX's version converter) as a project; parameters keep their values (docs/onnx.md).");
    cmd->add_option("MODEL", o->model, "ONNX model file (*.onnx)")->required();
    checked_output_file(cmd->add_option("-o,--output", o->output, "Project file to write (*.tapestry.json)")->required());
    cmd->add_option("--dim", o->dims, "Value of a symbolic input dimension, NAME=N (repeatable)");
    cmd->footer("Exit codes: 0 imported, 1 the model cannot be imported (the message says why), 2 usage error.");
    cmd->callback([o, &action] { action = [o] { return import_command(*o); }; });
}

}  // namespace tapestry::cli
