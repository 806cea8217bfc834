// The planner's first step (runtime/cpu/program_plan.h): every tensor gets a plan
// and every operation its derivations and CPU kernel factory.
#include "graph/order.h"
#include "graph/resolve.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

ProgramPlan plan_tensors(const Graph &g) {
    ProgramPlan plan;
    for (const TensorPtr &t : g.tensors()) {
        TensorPlan tp;
        tp.tensor = t.get();
        tp.bytes = static_cast<std::size_t>(t->bytes());
        tp.strides = dense_strides(t->shape());
        plan.tensor_index[t->id] = static_cast<int>(plan.tensors.size());
        plan.tensors.push_back(std::move(tp));
    }
    return plan;
}

Expected<ResolvedOps, std::string> resolve_operations(const Graph &g, const OpLibrary &lib, const CpuOptions &options) {
    ResolvedOps out;
    const auto order = dependency_order(g).order;  // validation has refused cycles
    for (const Operation *op : order) {
        const std::string which = "operation " + quoted(op->id.value);
        ResolvedOp info;
        info.op = op;
        info.def = lib.find(op->kind);
        const KernelFactory *factory = find_kernel(op->kind);
        if (!info.def || !factory) return unexpected(which + ": no CPU kernel for kind " + quoted(op->kind));
        auto types = operand_types(g, *op);
        if (!types) return unexpected(which + ": " + types.error().message);
        info.operands = types_in_port_order(*types, info.def->input_ports());
        auto rel = lib.derive(op->kind, op->params, *types);
        if (!rel) return unexpected(which + ": " + rel.error().message);
        info.relative = std::move(rel).value();
        auto abs = resolve(g, *op, lib);
        if (!abs) return unexpected(which + ": " + abs.error().message);
        info.absolute = std::move(abs).value();
        info.params = lib.with_defaults(*info.def, op->params);
        info.order = static_cast<int>(out.ops.size());
        out.index[op->id] = info.order;
        out.factories.push_back(factory);
        out.sharded.push_back(options.run_shards && !op->shards.empty());
        out.ops.push_back(std::move(info));
    }
    return out;
}

}  // namespace tapestry::cpu
