#include "graph/resolve.h"

namespace tapestry {

static std::string operand_field(const char *side, const std::string &port, size_t i) {
    return std::string(side) + "." + port + "[" + std::to_string(i) + "]";
}

Expected<std::vector<PortTypes>, DerivationError> operand_types(const Graph &g, const Operation &op) {
    std::vector<PortTypes> out;
    for (const PortBinding &b : op.inputs) {
        PortTypes pt{b.name, {}};
        for (size_t i = 0; i < b.selections.size(); ++i) {
            const TensorSelection &s = b.selections[i];
            const Tensor *t = g.find_tensor(s.tensor);
            if (!t)
                return unexpected(DerivationError{"dangling-reference", operand_field("inputs", b.name, i) + ".tensor",
                                                  "refers to tensor '" + s.tensor.value + "', which does not exist"});
            pt.operands.push_back(OperandType{t->dtype, s.range.shape()});
        }
        out.push_back(std::move(pt));
    }
    return out;
}

static Expected<std::vector<PortProjections>, DerivationError> translate(const std::vector<PortProjections> &ports,
                                                                       const std::vector<PortBinding> &bindings,
                                                                       const char *side) {
    std::vector<PortProjections> out;
    for (const PortProjections &pp : ports) {
        const PortBinding *b = nullptr;
        for (const PortBinding &cand : bindings)
            if (cand.name == pp.port) b = &cand;
        if (!b || b->selections.size() != pp.operands.size())
            return unexpected(DerivationError{"arity", std::string(side) + "." + pp.port,
                                              std::string(side == std::string("outputs") ? "output" : "input") +
                                                  " port '" + pp.port + "' needs " + std::to_string(pp.operands.size()) +
                                                  (pp.operands.size() == 1 ? " tensor" : " tensors") + ", got " +
                                                  std::to_string(b ? b->selections.size() : 0)});
        PortProjections t{pp.port, {}};
        for (size_t i = 0; i < pp.operands.size(); ++i) {
            const ZRange &sel = b->selections[i].range;
            const OperandProjection &op = pp.operands[i];
            if (sel.rank() != op.projection.tensor_rank())
                return unexpected(DerivationError{"rank-mismatch", operand_field(side, pp.port, i) + ".range",
                                                  "selection has rank " + std::to_string(sel.rank()) + " but the port needs rank " +
                                                      std::to_string(op.projection.tensor_rank())});
            t.operands.push_back(OperandProjection{op.projection.translated(sel.start()), op.clipped});
        }
        out.push_back(std::move(t));
    }
    return out;
}

Expected<Derivation, DerivationError> resolve(const Graph &g, const Operation &op, const SignatureSource &lib) {
    auto types = operand_types(g, op);
    if (!types) return unexpected(types.error());
    auto d = lib.derive(op.kind, op.params, *types);
    if (!d) return d;
    Derivation out = std::move(d).value();
    auto ins = translate(out.signature.inputs, op.inputs, "inputs");
    if (!ins) return unexpected(ins.error());
    auto outs = translate(out.signature.outputs, op.outputs, "outputs");
    if (!outs) return unexpected(outs.error());
    out.signature.inputs = std::move(ins).value();
    out.signature.outputs = std::move(outs).value();
    return out;
}

ZRange selection_of(const OperandProjection &p, const ZRange &index_range, const ZRange &operand_range) {
    ZRange r = p.projection.image(index_range);
    return p.clipped ? r.intersect(operand_range) : r;
}

static std::vector<PortBinding> shard_side(const std::vector<PortBinding> &bindings,
                                           const std::vector<PortProjections> &ports, const ZRange &index) {
    std::vector<PortBinding> out;
    for (const PortBinding &b : bindings) {
        PortBinding sb{b.name, {}};
        const PortProjections *pp = nullptr;
        for (const PortProjections &cand : ports)
            if (cand.port == b.name) pp = &cand;
        for (size_t i = 0; i < b.selections.size(); ++i) {
            if (!pp || i >= pp->operands.size()) continue;
            sb.selections.push_back(
                TensorSelection{b.selections[i].tensor, selection_of(pp->operands[i], index, b.selections[i].range)});
        }
        out.push_back(std::move(sb));
    }
    return out;
}

ShardSelections derive_shard_selections(const Graph &, const Operation &op, const Signature &absolute,
                                        const ZRange &index) {
    return ShardSelections{shard_side(op.inputs, absolute.inputs, index), shard_side(op.outputs, absolute.outputs, index)};
}

}  // namespace tapestry
