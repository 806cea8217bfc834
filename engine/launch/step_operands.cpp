// A kernel step's operation and operands (launch/step_operands.h).
#include "launch/step_operands.h"

#include <algorithm>

#include "graph/order.h"
#include "graph/resolve.h"
#include "ops/port_order.h"

namespace tapestry::launch {

Expected<std::map<OpId, ResolvedPlanOp>, std::string> resolve_plan_ops(const Graph &g, const OpLibrary &lib) {
    std::map<OpId, ResolvedPlanOp> out;
    for (const OpPtr &op : g.operations()) {
        const std::string which = "operation '" + op->id.value + "'";
        auto resolved = resolve_operation(g, *op, lib);
        if (!resolved) return unexpected(which + ": " + resolved.error());
        ResolvedPlanOp info;
        static_cast<OpResolution &>(info) = std::move(resolved).value();
        info.op = op.get();
        out.emplace(op->id, std::move(info));
    }
    return out;
}

Expected<StepOperands, std::string> bind_kernel_step(const plan::Plan &plan, const plan::Step &s,
                                                     const std::map<OpId, ResolvedPlanOp> &ops) {
    const auto it = ops.find(OpId(s.op));
    if (it == ops.end()) return unexpected("operation '" + s.op + "' is not in the plan's graph");
    const ResolvedPlanOp &info = it->second;
    StepOperands out;
    out.op = &info;
    out.index = info.absolute.signature.index_space;
    if (!s.shard.empty()) {
        const auto sh = std::find_if(info.op->shards.begin(), info.op->shards.end(),
                                     [&](const Shard &x) { return x.id.value == s.shard; });
        if (sh == info.op->shards.end()) return unexpected("operation '" + s.op + "' has no shard '" + s.shard + "'");
        out.index = sh->index;
    }
    const ShardSelections sel = derive_shard_selections(plan.graph, *info.op, info.absolute.signature, out.index);
    auto bind = [&](const TensorSelection &t, const std::vector<plan::Region> &regions,
                    const char *what) -> Expected<StepOperand, std::string> {
        const Tensor *tensor = plan.graph.find_tensor(t.tensor);
        StepOperand o;
        o.tensor = t.tensor;
        o.range = t.range;
        o.dtype = tensor ? tensor->dtype : DType::f32;
        for (const plan::Region &r : regions) {
            const plan::Buffer &b = plan.buffers[static_cast<size_t>(r.buffer)];
            // A view stands for its selection; the operand is then the box of the
            // buffer it reads (another tensor's, the same elements).
            const bool view = !r.view_of.value.empty();
            if (view ? r.view_of != t.tensor || !(r.view_box == t.range) : b.tensor != t.tensor || !(r.box == t.range))
                continue;
            if (b.device != s.device) return unexpected(std::string("it ") + what + " a buffer of another device");
            if (view && b.dtype != o.dtype) return unexpected(std::string("it ") + what + " a view of another dtype");
            o.buffer = r.buffer;
            o.dtype = b.dtype;
            o.tensor = b.tensor;
            o.range = r.box;
            return o;
        }
        if (t.range.empty() && t.range.rank() > 0) return o;  // touches nothing
        return unexpected("it " + std::string(what) + " no region for " + t.tensor.value + " " + t.range.to_string() +
                          ", which its shard selects");
    };
    for (const TensorSelection &t : selections_in_port_order(sel.inputs, info.def->input_ports())) {
        auto o = bind(t, s.reads, "reads");
        if (!o) return unexpected(o.error());
        out.inputs.push_back(std::move(o).value());
    }
    for (const TensorSelection &t : selections_in_port_order(sel.outputs, info.def->output_ports())) {
        auto o = bind(t, s.writes, "writes");
        if (!o) return unexpected(o.error());
        out.outputs.push_back(std::move(o).value());
    }
    return out;
}

}  // namespace tapestry::launch
