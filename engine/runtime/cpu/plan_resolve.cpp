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
        const KernelFactory *factory = find_kernel(op->kind);
        if (!lib.find(op->kind) || !factory) return unexpected(which + ": no CPU kernel for kind " + quoted(op->kind));
        auto resolved = resolve_operation(g, *op, lib);
        if (!resolved) return unexpected(which + ": " + resolved.error());
        ResolvedOp info;
        info.op = op;
        info.def = resolved->def;
        info.operands = std::move(resolved->operands);
        info.relative = std::move(resolved->relative);
        info.absolute = std::move(resolved->absolute);
        info.params = std::move(resolved->params);
        info.order = static_cast<int>(out.ops.size());
        out.index[op->id] = info.order;
        out.factories.push_back(factory);
        out.sharded.push_back(options.run_shards && !op->shards.empty());
        out.ops.push_back(std::move(info));
    }
    return out;
}

}  // namespace tapestry::cpu
