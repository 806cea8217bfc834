// A tiny graph builder for the substitution tests: tensors by shape, ops whose output
// types the op library derives, and the oracle run of a graph on seeded inputs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"
#include "graph/graph.h"
#include "io/random_inputs.h"
#include "ops/evaluate.h"
#include "ops/library.h"

namespace tapestry::test {

struct GraphBuilder {
    Graph g;

    TensorId input(const std::string &id, const ZPoint &shape, TensorRole role = TensorRole::input) {
        g.put_tensor(Tensor{TensorId(id), id, DType::f32, ZRange::of_shape(shape), role, {}, {}});
        return TensorId(id);
    }
    // A parameter [1] holding `value` (an epsilon as an importer would make it).
    TensorId scalar(const std::string &id, double value) {
        auto data = std::make_shared<TensorData>(DType::f32, ZPoint{1});
        data->set(0, value);
        g.put_tensor(Tensor{TensorId(id), id, DType::f32, ZRange::of_shape({1}), TensorRole::parameter, {}, data});
        return TensorId(id);
    }
    // Op "op_<out>" writing tensor `out` (an output when `output`), typed by the library.
    TensorId op(const std::string &out, const std::string &kind, const Params &params,
                const std::vector<std::pair<std::string, TensorId>> &inputs, bool output = false) {
        const OpLibrary &lib = OpLibrary::standard();
        Operation o;
        o.id = OpId("op_" + out);
        o.name = o.id.value;
        o.kind = kind;
        o.params = params;
        std::vector<PortTypes> types;
        for (const auto &[port, t] : inputs) {
            const Tensor *tensor = g.find_tensor(t);
            TAPESTRY_CHECK(tensor != nullptr, "GraphBuilder: unknown input tensor");
            if (o.inputs.empty() || o.inputs.back().name != port) {
                o.inputs.push_back(PortBinding{port, {}});
                types.push_back(PortTypes{port, {}});
            }
            o.inputs.back().selections.push_back(TensorSelection{t, tensor->range});
            types.back().operands.push_back(OperandType{tensor->dtype, tensor->shape()});
        }
        auto d = lib.derive(kind, params, types);
        TAPESTRY_CHECK(d.has_value(), "GraphBuilder: the library refuses an op of the test graph");
        const OperandType y = d->outputs.at(0).operands.at(0);
        g.put_tensor(Tensor{TensorId(out), out, y.dtype, ZRange::of_shape(y.shape),
                            output ? TensorRole::output : TensorRole::intermediate, {}, {}});
        o.outputs.push_back(PortBinding{"y", {TensorSelection{TensorId(out), ZRange::of_shape(y.shape)}}});
        g.put_op(std::move(o));
        return TensorId(out);
    }
};

// Seeded random values for `inputs_of`'s inputs and parameters, plus the embedded
// values of every tensor of `g` that no op writes (constants a rewrite made).
inline std::map<TensorId, RefArray> oracle_inputs(const Graph &inputs_of, const Graph &g, std::uint64_t seed) {
    std::map<TensorId, RefArray> out;
    auto to_ref = [](const Tensor &t, const TensorData &d) {
        RefArray a(t.range);
        for (std::int64_t i = 0; i < d.element_count(); ++i) a.data[static_cast<size_t>(i)] = d.get(i);
        return a;
    };
    for (const auto &[id, data] : make_random_inputs(inputs_of, seed))
        if (const Tensor *t = g.find_tensor(id)) out.emplace(id, to_ref(*t, data));
    for (const Graph *h : {&inputs_of, &g})
        for (const TensorPtr &t : h->tensors())
            if (t->value && h->producers(t->id).empty() && g.find_tensor(t->id) && !out.count(t->id))
                out.emplace(t->id, to_ref(*t, *t->value));
    return out;
}

// `g` with every coordinate (tensor ranges, selections, shard ranges, int and int-list
// params) mapped through `m`, and stated signatures and shard selections dropped (the
// library derives them again): a small copy of an example project for numeric runs.
inline Graph scaled(const Graph &g, const std::map<Coord, Coord> &m) {
    auto f = [&](Coord c) {
        auto it = m.find(c);
        return it == m.end() ? c : it->second;
    };
    auto fr = [&](const ZRange &r) {
        std::vector<Coord> s = r.start().to_vector(), e = r.end().to_vector();
        for (Coord &x : s) x = f(x);
        for (Coord &x : e) x = f(x);
        return ZRange(ZPoint(s), ZPoint(e));
    };
    Graph out;
    out.name = g.name;
    for (const TensorPtr &t : g.tensors()) {
        Tensor c = *t;
        c.range = fr(t->range);
        c.value.reset();
        c.data.reset();
        out.put_tensor(std::move(c));
    }
    for (const OpPtr &op : g.operations()) {
        Operation c = *op;
        c.index_space.reset();
        c.signature.reset();
        for (const auto &[name, value] : op->params.values()) {
            if (const auto *v = std::get_if<std::int64_t>(&value)) c.params.set(name, f(*v));
            if (const auto *v = std::get_if<std::vector<std::int64_t>>(&value)) {
                std::vector<std::int64_t> w = *v;
                for (auto &x : w) x = f(x);
                c.params.set(name, w);
            }
        }
        for (auto *ports : {&c.inputs, &c.outputs})
            for (PortBinding &p : *ports)
                for (TensorSelection &s : p.selections) s.range = fr(s.range);
        for (Shard &s : c.shards) {
            s.index = fr(s.index);
            s.inputs.clear();
            s.outputs.clear();
        }
        out.put_op(std::move(c));
    }
    return out;
}

}  // namespace tapestry::test
