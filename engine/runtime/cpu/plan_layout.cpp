// Channels-last intermediates (runtime/cpu/program_plan.h): NHWC is what oneDNN's
// direct convolutions and pools run fastest on, so a 4-D intermediate that only
// they touch is stored so, and no step reorders it.
#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

namespace {

bool spatial(const std::string &kind) {
    return kind == "conv2d" || kind == "max_pool2d" || kind == "avg_pool2d";
}

// Whether only whole conv2d and pool steps write `t` and read it (as their x).
bool only_spatial_steps(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues,
                        const std::map<const ResolvedOp *, const ResolvedOp *> &head, const Tensor &t) {
    const auto producers = g.producers(t.id), consumers = g.consumers(t.id);
    if (producers.empty() || consumers.empty()) return false;
    bool ok = true;
    for (const OpId &q : producers) {
        const ResolvedOp *h = head.at(&ops.at(q));
        ok = ok && !ops.is_sharded(*h) && spatial(h->op->kind);
    }
    for (const OpId &q : consumers) {
        const ResolvedOp &c = ops.at(q);
        ok = ok && !epilogues.is_folded(c) && !ops.is_sharded(c) && spatial(c.op->kind);
        for (const PortBinding &b : c.op->inputs)
            for (const TensorSelection &sel : b.selections)
                if (sel.tensor == t.id && b.name != "x") ok = false;
    }
    return ok;
}

}  // namespace

void lay_out_channels_last(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues,
                           ProgramPlan &plan) {
    std::map<const ResolvedOp *, const ResolvedOp *> head;  // op → the step that runs it
    for (const ResolvedOp &op : ops.ops) head[&op] = &op;
    for (const auto &[p, chain] : epilogues.chains)
        for (const PlannedEpilogue &e : chain) head[e.consumer] = p;
    for (TensorPlan &tp : plan.tensors) {
        const Tensor &t = *tp.tensor;
        if (t.role != TensorRole::intermediate || t.range.rank() != 4) continue;
        if (!only_spatial_steps(g, ops, epilogues, head, t)) continue;
        const ZPoint sh = t.range.shape();
        tp.strides = {sh[1] * sh[2] * sh[3], 1, sh[3] * sh[1], sh[1]};
        tp.channels_last = true;
    }
}

}  // namespace tapestry::cpu
