// An operation's operands flattened in its kind's port order, absent optional
// ports skipped: the order in which every backend's kernels take their views
// (runtime/cpu, runtime/cuda through launch/step_operands.h); and an operation
// resolved against the op library as every backend needs it.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/operation.h"
#include "graph/resolve.h"
#include "graph/signature.h"
#include "ops/library.h"
#include "ops/op_def.h"

namespace tapestry {

inline std::vector<TensorSelection> selections_in_port_order(const std::vector<PortBinding> &bindings,
                                                             const std::vector<PortSpec> &ports) {
    std::vector<TensorSelection> out;
    for (const PortSpec &p : ports)
        for (const PortBinding &b : bindings)
            if (b.name == p.name) out.insert(out.end(), b.selections.begin(), b.selections.end());
    return out;
}

inline std::vector<PortTypes> types_in_port_order(const std::vector<PortTypes> &types, const std::vector<PortSpec> &ports) {
    std::vector<PortTypes> out;
    for (const PortSpec &p : ports)
        for (const PortTypes &t : types)
            if (t.port == p.name && !t.operands.empty()) out.push_back(t);
    return out;
}

// What a backend makes an operation's kernels from: its kind's definition, its
// params with the defaults filled in, its derivation relative (zero-origin
// operands) and absolute (projections in tensor coordinates), and its operand
// types in port order.
struct OpResolution {
    const OpDef *def = nullptr;
    Params params;
    Derivation relative;
    Derivation absolute;
    std::vector<PortTypes> operands;
};

// Fails with the reason alone (the caller names the operation): an unknown kind,
// operands the kind refuses.
inline Expected<OpResolution, std::string> resolve_operation(const Graph &g, const Operation &op, const OpLibrary &lib) {
    OpResolution r;
    r.def = lib.find(op.kind);
    if (!r.def) return unexpected("unknown kind '" + op.kind + "'");
    auto types = operand_types(g, op);
    if (!types) return unexpected(types.error().message);
    r.operands = types_in_port_order(*types, r.def->input_ports());
    auto rel = lib.derive(op.kind, op.params, *types);
    if (!rel) return unexpected(rel.error().message);
    r.relative = std::move(rel).value();
    auto abs = resolve(g, op, lib);
    if (!abs) return unexpected(abs.error().message);
    r.absolute = std::move(abs).value();
    r.params = lib.with_defaults(*r.def, op.params);
    return r;
}

}  // namespace tapestry
