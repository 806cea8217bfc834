// The graph-level reference evaluator (the numeric oracle).
#include "ops/evaluate.h"

#include "graph/order.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

#include "graph/resolve.h"

namespace tapestry {
namespace {

constexpr double kUnwritten = std::numeric_limits<double>::quiet_NaN();

std::string quoted(const std::string &s) { return "'" + s + "'"; }

// Operations in dependency order; an error names a cycle's operations.
Expected<std::vector<const Operation *>, std::string> ordered_operations(const Graph &g) {
    DependencyOrder d = dependency_order(g);
    if (d.cyclic.empty()) return std::move(d.order);
    std::string names;
    for (const Operation *op : d.cyclic) names += (names.empty() ? "" : ", ") + quoted(op->id.value);
    return unexpected("the operations " + names + " form a cycle");
}

// Copies `region` (relative to the selection) of a selection of `tensor` into a
// zero-origin array shaped like the selection; elements outside `region` are NaN.
RefArray gather(const RefArray &tensor, const ZRange &selection, const ZRange &region) {
    RefArray out(ZRange::of_shape(selection.shape()), kUnwritten);
    region.intersect(out.range).for_each_point(
        [&](const ZPoint &e) { out.at(e) = tensor.at(e + selection.start()); });
    return out;
}

std::string field_suffix(const DerivationError &e) { return e.field.empty() ? "" : " (" + e.field + ")"; }

}  // namespace

Expected<std::map<TensorId, RefArray>, std::string> evaluate_reference(
    const Graph &g, const std::map<TensorId, RefArray> &inputs_and_params, const OpLibrary &library,
    const EvaluationOptions &options) {
    std::map<TensorId, RefArray> values;
    for (const auto &[id, array] : inputs_and_params) {
        const Tensor *t = g.find_tensor(id);
        if (!t) return unexpected("a value is given for " + quoted(id.value) + ", which is not a tensor of the graph");
        if (!(array.range == t->range))
            return unexpected("the value given for tensor " + quoted(id.value) + " spans " + array.range.to_string() +
                              " but the tensor spans " + t->range.to_string());
        if (array.data.size() != static_cast<size_t>(array.range.size()))
            return unexpected("the value given for tensor " + quoted(id.value) + " holds " +
                              std::to_string(array.data.size()) + " elements instead of " +
                              std::to_string(array.range.size()));
        values[id] = array;
    }
    for (const TensorPtr &t : g.tensors())
        if (!values.count(t->id) && g.producers(t->id).empty())
            return unexpected("tensor " + quoted(t->id.value) + " has no value: it is not given and no operation writes it");

    auto order = ordered_operations(g);
    if (!order) return unexpected(order.error());

    for (const Operation *op : *order) {
        const std::string who = "operation " + quoted(op->id.value);
        const OpDef *def = library.find(op->kind);
        if (!def) return unexpected(who + ": unknown operation kind " + quoted(op->kind));
        auto types = operand_types(g, *op);
        if (!types) return unexpected(who + ": " + types.error().message + field_suffix(types.error()));
        auto relative = library.derive(op->kind, op->params, *types);
        if (!relative) return unexpected(who + ": " + relative.error().message + field_suffix(relative.error()));
        auto absolute = resolve(g, *op, library);
        if (!absolute) return unexpected(who + ": " + absolute.error().message + field_suffix(absolute.error()));
        const Params params = library.with_defaults(*def, op->params);
        const Derivation &rel = *relative;

        // Bindings in the OpDef's port order.
        const std::vector<PortSpec> in_ports = def->input_ports(), out_ports = def->output_ports();
        std::vector<const PortBinding *> in_bind, out_bind;
        for (const PortSpec &p : in_ports) in_bind.push_back(op->input(p.name));
        for (const PortSpec &p : out_ports) {
            out_bind.push_back(op->output(p.name));
            if (!out_bind.back()) return unexpected(who + ": output port " + quoted(p.name) + " is not bound");
        }
        // Selections must lie inside their tensors (validation reports this too).
        for (const auto *side : {&op->inputs, &op->outputs})
            for (const PortBinding &b : *side)
                for (const TensorSelection &s : b.selections) {
                    const Tensor *t = g.find_tensor(s.tensor);
                    if (!t) return unexpected(who + ": tensor " + quoted(s.tensor.value) + " does not exist");
                    if (s.range.rank() != t->range.rank() || !t->range.contains(s.range))
                        return unexpected(who + ": selection " + s.range.to_string() + " of tensor " +
                                          quoted(s.tensor.value) + " lies outside its range " + t->range.to_string());
                }
        for (const PortBinding *b : out_bind)
            for (const TensorSelection &s : b->selections)
                if (!values.count(s.tensor)) values[s.tensor] = RefArray(g.find_tensor(s.tensor)->range, kUnwritten);

        std::vector<ZRange> pieces;
        if (options.run_shards && !op->shards.empty())
            for (const Shard &s : op->shards) pieces.push_back(s.index);
        else
            pieces.push_back(rel.signature.index_space);

        for (const ZRange &piece : pieces) {
            if (piece.rank() != rel.signature.index_space.rank())
                return unexpected(who + ": a shard's index range " + piece.to_string() + " has rank " +
                                  std::to_string(piece.rank()) + " but the index space " +
                                  rel.signature.index_space.to_string() + " has rank " +
                                  std::to_string(rel.signature.index_space.rank()));
            // Inputs: each operand's selection, holding only what this piece selects.
            std::vector<std::vector<RefArray>> ins(in_ports.size());
            for (size_t p = 0; p < in_ports.size(); ++p) {
                if (!in_bind[p]) continue;
                for (size_t i = 0; i < in_bind[p]->selections.size(); ++i) {
                    const TensorSelection &s = in_bind[p]->selections[i];
                    const OperandProjection *proj = rel.signature.input(in_ports[p].name, i);
                    if (!proj) return unexpected(who + ": no projection for inputs." + in_ports[p].name);
                    const ZRange region = selection_of(*proj, piece, ZRange::of_shape(s.range.shape()));
                    ins[p].push_back(gather(values.at(s.tensor), s.range, region));
                }
            }
            std::vector<std::vector<RefArray>> outs(out_ports.size());
            for (size_t p = 0; p < out_ports.size(); ++p)
                for (const TensorSelection &s : out_bind[p]->selections)
                    outs[p].emplace_back(ZRange::of_shape(s.range.shape()), kUnwritten);

            RefContext ctx{params, rel, {}, {}, piece, nullptr};
            for (auto &port : ins) {
                std::vector<const RefArray *> ptrs;
                for (RefArray &a : port) ptrs.push_back(&a);
                ctx.inputs.push_back(std::move(ptrs));
            }
            for (auto &port : outs) {
                std::vector<RefArray *> ptrs;
                for (RefArray &a : port) ptrs.push_back(&a);
                ctx.outputs.push_back(std::move(ptrs));
            }
            def->reference(ctx);

            // Scatter what this piece writes into the output tensors.
            for (size_t p = 0; p < out_ports.size(); ++p)
                for (size_t i = 0; i < out_bind[p]->selections.size(); ++i) {
                    const TensorSelection &s = out_bind[p]->selections[i];
                    const OperandProjection *proj = rel.signature.output(out_ports[p].name, i);
                    if (!proj) return unexpected(who + ": no projection for outputs." + out_ports[p].name);
                    RefArray &tensor = values.at(s.tensor);
                    selection_of(*proj, piece, outs[p][i].range).for_each_point([&](const ZPoint &e) {
                        tensor.at(e + s.range.start()) = outs[p][i].at(e);
                    });
                }
        }
    }
    return values;
}

}  // namespace tapestry
