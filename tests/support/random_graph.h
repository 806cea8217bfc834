// Random small graphs of the supported ops for property tests (equivalence of
// sharded runs, the passes' certificates): chains and DAGs of elementwise ops with
// broadcasting, linear/matmul, softmax, layernorm, reductions, transpose, conv2d and pools.
#pragma once

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "ops/library.h"

namespace tapestry::testing {

using Ints = std::vector<std::int64_t>;

// An integer in [lo, hi]: rapidcheck's generator (shrinkable) or a seeded one.
using Pick = std::function<Coord(Coord lo, Coord hi)>;

// Builds one random graph from the picks (deterministic for a given pick sequence).
class GraphBuilder {
public:
    explicit GraphBuilder(const Pick &pick) : pick_(pick) {}

    Graph build() {
        g_.name = "random";
        // One or two inputs: a matrix-like tensor, or an NCHW image for conv/pool.
        const int inputs = static_cast<int>(pick_(1, 2));
        for (int i = 0; i < inputs; ++i) {
            if (pick_(0, 2) == 0)
                add_tensor({pick_(1, 2), pick_(1, 4), pick_(3, 7), pick_(3, 7)}, TensorRole::input);
            else
                add_tensor(random_shape(2, 3), TensorRole::input);
        }
        const int ops = static_cast<int>(pick_(1, 6));
        for (int i = 0; i < ops; ++i) {
            for (int attempt = 0; attempt < 8; ++attempt)
                if (add_random_op()) break;
        }
        // Tensors nobody reads are the outputs.
        std::set<TensorId> read;
        for (const OpPtr &op : g_.operations())
            for (const TensorId &t : op->input_tensors()) read.insert(t);
        for (const TensorPtr &t : g_.tensors())
            if (t->role == TensorRole::intermediate && !read.count(t->id)) {
                Tensor c = *t;
                c.role = TensorRole::output;
                g_.put_tensor(std::move(c));
            }
        return g_;
    }

private:
    const Pick &pick_;
    Graph g_;
    int next_ = 0;
    std::vector<TensorId> values_;  // tensors an op may read (inputs and results)

    ZPoint random_shape(int min_rank, int max_rank) {
        std::vector<Coord> dims(static_cast<size_t>(pick_(min_rank, max_rank)));
        for (Coord &d : dims) d = pick_(1, 6);
        return ZPoint(dims);
    }

    TensorId add_tensor(const ZPoint &shape, TensorRole role) {
        Tensor t;
        t.id = TensorId("t" + std::to_string(next_++));
        t.name = t.id.value;
        t.range = ZRange::of_shape(shape);
        t.role = role;
        g_.put_tensor(t);
        if (role != TensorRole::parameter) values_.push_back(t.id);
        return t.id;
    }

    ZPoint shape_of(const TensorId &id) const { return g_.find_tensor(id)->range.shape(); }

    // A value to read: usually the newest (chains), sometimes any (DAGs).
    TensorId pick_value() {
        if (pick_(0, 2) > 0) return values_.back();
        return values_[static_cast<size_t>(pick_(0, static_cast<Coord>(values_.size()) - 1))];
    }

    PortBinding bind(const std::string &port, const TensorId &t) const {
        return {port, {TensorSelection{t, g_.find_tensor(t)->range}}};
    }

    // Adds the operation when the library accepts it; its output is a new tensor.
    bool add_op(const std::string &kind, const Params &params,
                const std::vector<std::pair<std::string, TensorId>> &ins) {
        std::vector<PortTypes> types;
        for (const auto &[port, t] : ins) types.push_back({port, {OperandType{DType::f32, shape_of(t)}}});
        const auto d = OpLibrary::standard().derive(kind, params, types);
        const bool usable = d && d->outputs.at(0).operands.at(0).shape.product() > 0 &&
                            d->outputs.at(0).operands.at(0).shape.product() <= 4096;
        if (!usable) {
            // Parameters made for this op would be left unread.
            for (const auto &[port, t] : ins)
                if (g_.find_tensor(t) && g_.find_tensor(t)->role == TensorRole::parameter && g_.consumers(t).empty())
                    g_.remove_tensor(t);
            return false;
        }
        const ZPoint out_shape = d->outputs.at(0).operands.at(0).shape;
        Operation op;
        op.id = OpId("op" + std::to_string(next_++));
        op.name = op.id.value;
        op.kind = kind;
        op.params = params;
        for (const auto &[port, t] : ins) op.inputs.push_back(bind(port, t));
        const TensorId y = add_tensor(out_shape, TensorRole::intermediate);
        op.outputs.push_back(bind("y", y));
        g_.put_op(std::move(op));
        return true;
    }

    TensorId parameter(const ZPoint &shape) { return add_tensor(shape, TensorRole::parameter); }

    bool add_random_op() {
        static const char *kinds[] = {"relu",        "gelu",       "sigmoid",   "tanh",    "add",        "sub",
                                      "mul",         "linear",     "matmul",    "softmax", "layernorm",  "reduce_sum",
                                      "reduce_mean", "reduce_max", "transpose", "conv2d",  "max_pool2d", "avg_pool2d",
                                      "activation"};
        const std::string kind = kinds[pick_(0, static_cast<Coord>(std::size(kinds)) - 1)];
        const TensorId x = pick_value();
        const ZPoint s = shape_of(x);
        const int rank = s.rank();

        if (kind == "relu" || kind == "sigmoid" || kind == "tanh") return add_op(kind, {}, {{"x", x}});
        if (kind == "activation") {  // the other activations, with random constants
            switch (pick_(0, 6)) {
                case 0: return add_op("leaky_relu", Params{{"alpha", pick_(1, 50) / 100.0}}, {{"x", x}});
                case 1: return add_op("elu", Params{{"alpha", pick_(5, 20) / 10.0}}, {{"x", x}});
                case 2: {
                    Params p;
                    if (pick_(0, 2)) p.set("min", pick_(-10, 0) / 10.0);
                    if (pick_(0, 2)) p.set("max", pick_(1, 10) / 10.0);
                    return add_op("clip", p, {{"x", x}});
                }
                case 3: return add_op("hard_swish", {}, {{"x", x}});
                case 4: return add_op("softsign", {}, {{"x", x}});
                case 5: return add_op("selu", {}, {{"x", x}});
                default: return add_op(pick_(0, 1) ? "neg" : "abs", {}, {{"x", x}});
            }
        }
        if (kind == "gelu")
            return add_op(kind, Params{{"approximate", std::string(pick_(0, 1) ? "tanh" : "none")}}, {{"x", x}});
        if (kind == "add" || kind == "sub" || kind == "mul") {
            TensorId b;
            switch (pick_(0, 2)) {
                case 0: b = x; break;  // the same tensor twice
                case 1: {              // another value of the same shape, if any
                    std::vector<TensorId> same;
                    for (const TensorId &v : values_)
                        if (shape_of(v) == s) same.push_back(v);
                    b = same[static_cast<size_t>(pick_(0, static_cast<Coord>(same.size()) - 1))];
                    break;
                }
                default: {  // a parameter broadcast against x: a suffix of its dims, some stretched
                    const int r = static_cast<int>(pick_(0, rank));
                    std::vector<Coord> dims;
                    for (int d = rank - r; d < rank; ++d) dims.push_back(pick_(0, 1) ? s[d] : 1);
                    b = parameter(ZPoint(dims));
                }
            }
            if (pick_(0, 1)) return add_op(kind, {}, {{"a", b}, {"b", x}});
            return add_op(kind, {}, {{"a", x}, {"b", b}});
        }
        if (kind == "linear") {
            if (rank < 2 || rank > 3) return false;
            const Coord in = s[rank - 1], out = pick_(1, 6);
            std::vector<std::pair<std::string, TensorId>> ins{{"x", x}, {"w", parameter({in, out})}};
            if (pick_(0, 1)) ins.push_back({"bias", parameter({out})});
            return add_op(kind, {}, ins);
        }
        if (kind == "matmul") {
            if (rank < 2) return false;
            const Coord k = s[rank - 1], n = pick_(1, 6);
            std::vector<Coord> dims;
            if (pick_(0, 1))  // batched right operand (or a broadcast one of rank 2)
                for (int d = 0; d < rank - 2; ++d) dims.push_back(pick_(0, 2) ? s[d] : 1);
            dims.push_back(k);
            dims.push_back(n);
            const TensorId b = parameter(ZPoint(dims));
            return add_op(kind, {}, {{"a", x}, {"b", b}});
        }
        if (kind == "softmax") return add_op(kind, Params{{"axis", pick_(-rank, rank - 1)}}, {{"x", x}});
        if (kind == "layernorm") {
            const Coord axis = pick_(-rank, rank - 1);
            const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
            std::vector<Coord> normalized(s.coords().begin() + a, s.coords().end());
            std::vector<std::pair<std::string, TensorId>> ins{{"x", x}};
            if (pick_(0, 1)) ins.push_back({"gamma", parameter(ZPoint(normalized))});
            if (pick_(0, 1)) ins.push_back({"beta", parameter(ZPoint(normalized))});
            return add_op(kind, Params{{"axis", axis}, {"epsilon", 1e-5}}, ins);
        }
        if (kind == "reduce_sum" || kind == "reduce_mean" || kind == "reduce_max") {
            Ints axes;
            for (int d = 0; d < rank; ++d)
                if (pick_(0, 2) == 0) axes.push_back(pick_(0, 1) ? d : d - rank);
            if (axes.empty()) axes.push_back(pick_(0, rank - 1));
            return add_op(kind, Params{{"axes", axes}, {"keepdims", pick_(0, 1) == 1}}, {{"x", x}});
        }
        if (kind == "transpose") {
            Ints perm(static_cast<size_t>(rank));
            std::iota(perm.begin(), perm.end(), 0);
            for (int i = rank - 1; i > 0; --i)
                std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(pick_(0, i))]);
            return add_op(kind, Params{{"perm", perm}}, {{"x", x}});
        }
        if (rank != 4) return false;
        const Coord C = s[1], H = s[2], W = s[3];
        if (kind == "conv2d") {
            const Coord groups = C % 2 == 0 && pick_(0, 2) == 0 ? 2 : 1;
            const Coord K = groups * pick_(1, 3);
            const Coord R = pick_(1, std::min<Coord>(3, H)), S = pick_(1, std::min<Coord>(3, W));
            Params p{{"stride", Ints{pick_(1, 2), pick_(1, 2)}},
                     {"padding", Ints{pick_(0, 1), pick_(0, 1), pick_(0, 1), pick_(0, 1)}},
                     {"dilation", Ints{pick_(0, 3) == 0 ? 2 : 1, 1}},
                     {"groups", groups}};
            std::vector<std::pair<std::string, TensorId>> ins{{"x", x}, {"w", parameter({K, C / groups, R, S})}};
            if (pick_(0, 1)) ins.push_back({"bias", parameter({K})});
            return add_op(kind, p, ins);
        }
        // Pools: kernel within the input, padding below the kernel.
        const Coord R = pick_(1, std::min<Coord>(3, H)), S = pick_(1, std::min<Coord>(3, W));
        Params p{{"kernel", Ints{R, S}},
                 {"padding", Ints{pick_(0, R - 1), pick_(0, S - 1), pick_(0, R - 1), pick_(0, S - 1)}}};
        if (pick_(0, 1)) p.set("stride", Ints{pick_(1, 2), pick_(1, 2)});
        if (kind == "avg_pool2d" && pick_(0, 1)) p.set("count_include_pad", true);
        return add_op(kind, p, {{"x", x}});
    }
};

}  // namespace tapestry::testing
