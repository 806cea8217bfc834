// An operation's operands flattened in its kind's port order, absent optional
// ports skipped: the order in which every backend's kernels take their views
// (runtime/cpu, runtime/cuda through launch/step_operands.h).
#pragma once

#include <vector>

#include "graph/operation.h"
#include "graph/signature.h"
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

}  // namespace tapestry
