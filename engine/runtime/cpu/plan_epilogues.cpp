// Epilogue folding (runtime/cpu/program_plan.h): the op-level chain finder (its
// step shared with the fusion pass: graph/value_chain.h), and
// the CPU's use of it, whose predicate asks the producer's kernel factory.
#include "graph/resolve.h"
#include "graph/value_chain.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

namespace {

// find_epilogue_chains' walk; `folded` grows as chains do, so that a later
// producer's chain neither starts at nor reads the value of a folded op.
class ChainFinder {
public:
    ChainFinder(const Graph &g, std::span<const ResolvedOp> ops, const std::vector<bool> &sharded,
                const CanTakeEpilogue &can_take)
        : g_(g), ops_(ops), sharded_(sharded), can_take_(can_take) {
        for (const ResolvedOp &op : ops) by_id_[op.op->id] = &op;
    }

    EpilogueChains find() {
        EpilogueChains chains;
        for (const ResolvedOp &p : ops_) {
            if (sharded(p) || folded_.count(&p)) continue;
            const auto p_outs = selections_in_port_order(p.op->outputs, p.def->output_ports());
            if (p_outs.size() != 1) continue;
            TensorSelection value = p_outs[0];
            EpilogueChain chain;
            while (auto link = next_link(p, value, chain)) {
                if (!can_take_(p, chain, *link)) break;
                folded_.insert(link->consumer);
                value = selections_in_port_order(link->consumer->op->outputs, link->consumer->def->output_ports())[0];
                chain.push_back(std::move(*link));
            }
            if (!chain.empty()) chains[&p] = std::move(chain);
        }
        return chains;
    }

private:
    bool sharded(const ResolvedOp &op) const { return sharded_[static_cast<size_t>(op.order)]; }

    // The link through `value`'s one consumer, or none where the chain must end
    // whatever the kernel says.
    std::optional<PlannedEpilogue> next_link(const ResolvedOp &p, const TensorSelection &value,
                                             const EpilogueChain &chain) const {
        const ChainLink next = next_chain_link(g_, value.tensor);
        if (next.end != ChainEnd::none) return std::nullopt;
        const ResolvedOp *c = by_id_.at(next.consumer->id);
        if (sharded(*c) || c->def->category() != "elementwise") return std::nullopt;
        // The consumer reads exactly the produced selection (once: next_chain_link),
        // without broadcasting it.
        const auto c_ins = selections_in_port_order(c->op->inputs, c->def->input_ports());
        const auto c_outs = selections_in_port_order(c->op->outputs, c->def->output_ports());
        if (c_outs.size() != 1 || c_outs[0].range.shape() != value.range.shape()) return std::nullopt;
        int at = -1;
        for (size_t i = 0; i < c_ins.size(); ++i)
            if (c_ins[i].tensor == value.tensor) at = static_cast<int>(i);
        if (at < 0 || !(c_ins[static_cast<size_t>(at)].range == value.range)) return std::nullopt;
        if (c_outs[0].tensor == value.tensor) return std::nullopt;
        PlannedEpilogue link;
        link.consumer = c;
        link.epilogue.kind = c->op->kind;
        link.epilogue.params = c->params;
        if (c_ins.size() == 2) {
            // sub/div are not commutative: the producer must be the left operand.
            if (at != 0 && (c->op->kind == "sub" || c->op->kind == "div")) return std::nullopt;
            const TensorSelection &other = c_ins[static_cast<size_t>(1 - at)];
            // Its producer must come before the fused step.
            for (const OpId &q : g_.producers(other.tensor))
                if (by_id_.at(q)->order > p.order || folded_.count(by_id_.at(q))) return std::nullopt;
            link.extra = other;
            int extras = 0;
            for (const PlannedEpilogue &e : chain) extras += e.extra ? 1 : 0;
            link.epilogue.extra_input = extras;
            const std::string port = at == 0 ? "b" : "a";
            if (const OperandProjection *proj = c->relative.signature.input(port, 0)) link.epilogue.projection = *proj;
        } else if (c_ins.size() != 1) {
            return std::nullopt;
        }
        return link;
    }

    const Graph &g_;
    std::span<const ResolvedOp> ops_;
    const std::vector<bool> &sharded_;
    const CanTakeEpilogue &can_take_;
    std::map<OpId, const ResolvedOp *> by_id_;
    std::set<const ResolvedOp *> folded_;
};

// The producer's kernel spec as make_steps will give it for the whole op, with
// the chain's epilogues and extra operands so far and then `next`'s.
KernelSpec probe_spec(const Graph &g, const ResolvedOp &p, const EpilogueChain &chain, const PlannedEpilogue &next) {
    KernelSpec probe;
    probe.def = p.def;
    probe.params = p.params;
    probe.derivation = p.relative;
    probe.operands = p.operands;
    probe.index_range = p.absolute.signature.index_space;
    const auto sel = derive_shard_selections(g, *p.op, p.absolute.signature, probe.index_range);
    for (const TensorSelection &s : selections_in_port_order(sel.inputs, p.def->input_ports()))
        probe.input_shapes.push_back(s.range.shape());
    for (const TensorSelection &s : selections_in_port_order(sel.outputs, p.def->output_ports()))
        probe.output_shapes.push_back(s.range.shape());
    for (const PlannedEpilogue &e : chain) {
        probe.epilogues.push_back(e.epilogue);
        if (e.extra) probe.input_shapes.push_back(e.extra->range.shape());
    }
    if (next.extra) probe.input_shapes.push_back(next.extra->range.shape());
    return probe;
}

}  // namespace

EpilogueChains find_epilogue_chains(const Graph &g, std::span<const ResolvedOp> ops, const std::vector<bool> &sharded,
                                    const CanTakeEpilogue &can_take) {
    return ChainFinder(g, ops, sharded, can_take).find();
}

FoldedEpilogues fold_epilogues(const Graph &g, const ResolvedOps &ops, const ProgramPlan &plan) {
    FoldedEpilogues out;
    out.chains = find_epilogue_chains(
        g, ops.ops, ops.sharded, [&](const ResolvedOp &p, const EpilogueChain &chain, const PlannedEpilogue &next) {
            return epilogue_supported(next.epilogue) &&
                   can_fuse(ops.factory(p), probe_spec(g, p, chain, next), next.epilogue);
        });
    for (const auto &[p, chain] : out.chains) {
        // The producer's output and every value inside the chain are never stored.
        const auto p_outs = selections_in_port_order(p->op->outputs, p->def->output_ports());
        out.fused_away.insert(plan.tensor_index.at(p_outs[0].tensor));
        for (size_t i = 0; i < chain.size(); ++i) {
            out.folded.insert(chain[i].consumer);
            if (i + 1 == chain.size()) continue;
            const auto outs =
                selections_in_port_order(chain[i].consumer->op->outputs, chain[i].consumer->def->output_ports());
            out.fused_away.insert(plan.tensor_index.at(outs[0].tensor));
        }
    }
    return out;
}

}  // namespace tapestry::cpu
