// GELU subgraph matching for the ONNX importer (io/onnx_gelu.h). The erf form is
// a product of three factors, x · ½ · (1 + erf(x/√2)), written as two Muls in any
// grouping and operand order; the tanh form has (1 + tanh(√(2/π)·(x + 0.044715·x³)))
// as its third factor, with x³ as Pow(x, 3) or Mul(x, Mul(x, x)).
#include "io/onnx_gelu.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <optional>
#include <set>

#include "io/onnx_tensor.h"

namespace tapestry::onnx_detail {

namespace {

bool default_domain(const onnx::NodeProto &n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

std::optional<double> single_value(const TensorData &t) {
    if (t.element_count() != 1) return std::nullopt;
    return t.get(0);
}

class Matcher {
public:
    Matcher(const onnx::GraphProto &graph, const InitializerLookup &initializer)
        : graph_(graph), initializer_(initializer) {
        for (int i = 0; i < graph.node_size(); ++i) {
            const onnx::NodeProto &n = graph.node(i);
            for (const std::string &out : n.output())
                if (!out.empty()) producer_[out] = i;
            for (const std::string &in : n.input())
                if (!in.empty()) ++uses_[in];
        }
        for (const auto &o : graph.output()) outputs_.insert(o.name());
    }

    std::optional<GeluMatch> match(int root) {
        const onnx::NodeProto &n = graph_.node(root);
        if (n.op_type() != "Mul" || !default_domain(n) || n.input_size() != 2 || n.output_size() != 1) return std::nullopt;
        for (int side = 0; side < 2; ++side) {
            nodes_ = {root};
            constants_.clear();
            const onnx::NodeProto *m = intermediate(n.input(side), "Mul");
            if (!m) continue;
            const std::string factors[3] = {n.input(1 - side), m->input(0), m->input(1)};
            const size_t nodes_mark = nodes_.size();
            for (int h = 0; h < 3; ++h) {
                if (!is_constant(factors[h], 0.5)) continue;
                for (int a = 0; a < 3; ++a) {
                    if (a == h) continue;
                    const std::string &x = factors[3 - h - a];
                    if (x.empty() || value_of(x)) continue;  // x is the variable, never a constant
                    nodes_.resize(nodes_mark);
                    constants_ = {factors[h]};
                    std::string approximate;
                    if (!one_plus(factors[a], x, approximate)) continue;
                    GeluMatch g;
                    g.root = root;
                    g.nodes = nodes_;
                    std::sort(g.nodes.begin(), g.nodes.end());
                    g.x = x;
                    g.approximate = approximate;
                    g.constants = constants_;
                    return g;
                }
            }
        }
        return std::nullopt;
    }

    std::optional<double> value_of(const std::string &name) const {
        if (name.empty()) return std::nullopt;
        if (const TensorData *t = initializer_(name)) return single_value(*t);
        auto it = producer_.find(name);
        if (it == producer_.end()) return std::nullopt;
        const onnx::NodeProto &n = graph_.node(it->second);
        if (n.op_type() != "Constant" || !default_domain(n) || n.attribute_size() != 1) return std::nullopt;
        const onnx::AttributeProto &a = n.attribute(0);
        if (a.name() == "value") {
            auto d = tensor_from_proto(a.t());
            return d ? single_value(*d) : std::nullopt;
        }
        if (a.name() == "value_float") return static_cast<double>(a.f());
        if (a.name() == "value_floats" && a.floats_size() == 1) return static_cast<double>(a.floats(0));
        if (a.name() == "value_int") return static_cast<double>(a.i());
        if (a.name() == "value_ints" && a.ints_size() == 1) return static_cast<double>(a.ints(0));
        return std::nullopt;
    }

private:
    // The node defining `name` when it is an `op_type` node whose output has this one
    // consumer and is not a graph output; it joins the pattern.
    const onnx::NodeProto *intermediate(const std::string &name, const char *op_type) {
        auto it = producer_.find(name);
        if (it == producer_.end()) return nullptr;
        const onnx::NodeProto &n = graph_.node(it->second);
        if (n.op_type() != op_type || !default_domain(n) || n.output_size() != 1 || n.input_size() < 1) return nullptr;
        if (uses_[name] != 1 || outputs_.count(name)) return nullptr;
        if (std::find(nodes_.begin(), nodes_.end(), it->second) != nodes_.end()) return nullptr;
        nodes_.push_back(it->second);
        return &n;
    }

    bool is_constant(const std::string &name, double want) {
        const std::optional<double> v = value_of(name);
        if (!v || !(std::fabs(*v - want) <= 1e-6 * std::fabs(want))) return false;
        constants_.push_back(name);
        return true;
    }

    // Tries `f` on both operand orders of a commutative binary node: f(first, second).
    template <typename F> bool either_order(const onnx::NodeProto &n, F f) {
        if (n.input_size() != 2) return false;
        const size_t nodes_mark = nodes_.size(), constants_mark = constants_.size();
        for (int s = 0; s < 2; ++s) {
            if (f(n.input(s), n.input(1 - s))) return true;
            nodes_.resize(nodes_mark);
            constants_.resize(constants_mark);
        }
        return false;
    }

    // 1 + erf(x/√2)  or  1 + tanh(√(2/π)·(x + 0.044715·x³)).
    bool one_plus(const std::string &name, const std::string &x, std::string &approximate) {
        const onnx::NodeProto *add = intermediate(name, "Add");
        if (!add) return false;
        return either_order(*add, [&](const std::string &one, const std::string &f) {
            if (!is_constant(one, 1.0)) return false;
            const size_t mark = nodes_.size(), constants_mark = constants_.size();
            if (const onnx::NodeProto *e = intermediate(f, "Erf"); e && erf_argument(e->input(0), x)) {
                approximate = "none";
                return true;
            }
            nodes_.resize(mark);
            constants_.resize(constants_mark);
            if (const onnx::NodeProto *t = intermediate(f, "Tanh"); t && tanh_argument(t->input(0), x)) {
                approximate = "tanh";
                return true;
            }
            return false;
        });
    }

    // x / √2  or  x · (1/√2).
    bool erf_argument(const std::string &name, const std::string &x) {
        const size_t mark = nodes_.size(), constants_mark = constants_.size();
        if (const onnx::NodeProto *d = intermediate(name, "Div"))
            if (d->input_size() == 2 && d->input(0) == x && is_constant(d->input(1), std::numbers::sqrt2)) return true;
        nodes_.resize(mark);
        constants_.resize(constants_mark);
        const onnx::NodeProto *m = intermediate(name, "Mul");
        return m && either_order(*m, [&](const std::string &a, const std::string &c) {
                   return a == x && is_constant(c, 1.0 / std::numbers::sqrt2);
               });
    }

    // √(2/π) · (x + 0.044715 · x³).
    bool tanh_argument(const std::string &name, const std::string &x) {
        const onnx::NodeProto *m = intermediate(name, "Mul");
        return m && either_order(*m, [&](const std::string &k, const std::string &inner) {
                   if (!is_constant(k, std::sqrt(2.0 / std::numbers::pi))) return false;
                   const onnx::NodeProto *add = intermediate(inner, "Add");
                   return add && either_order(*add, [&](const std::string &a, const std::string &term) {
                              if (a != x) return false;
                              const onnx::NodeProto *t = intermediate(term, "Mul");
                              return t && either_order(*t, [&](const std::string &c, const std::string &cube) {
                                         return is_constant(c, 0.044715) && is_cube(cube, x);
                                     });
                          });
               });
    }

    // Pow(x, 3)  or  Mul(x, Mul(x, x)) in either order.
    bool is_cube(const std::string &name, const std::string &x) {
        const size_t mark = nodes_.size(), constants_mark = constants_.size();
        if (const onnx::NodeProto *p = intermediate(name, "Pow"))
            if (p->input_size() == 2 && p->input(0) == x && is_constant(p->input(1), 3.0)) return true;
        nodes_.resize(mark);
        constants_.resize(constants_mark);
        const onnx::NodeProto *m = intermediate(name, "Mul");
        return m && either_order(*m, [&](const std::string &a, const std::string &square) {
                   if (a != x) return false;
                   const onnx::NodeProto *sq = intermediate(square, "Mul");
                   return sq && sq->input_size() == 2 && sq->input(0) == x && sq->input(1) == x;
               });
    }

    const onnx::GraphProto &graph_;
    const InitializerLookup &initializer_;
    std::map<std::string, int> producer_;
    std::map<std::string, int> uses_;
    std::set<std::string> outputs_;
    std::vector<int> nodes_;               // the pattern so far
    std::vector<std::string> constants_;  // its constant operands so far
};

}  // namespace

std::vector<GeluMatch> find_gelu_patterns(const onnx::GraphProto &graph, const InitializerLookup &initializer) {
    Matcher matcher(graph, initializer);
    std::vector<GeluMatch> matches;
    std::set<int> claimed;
    for (int i = 0; i < graph.node_size(); ++i) {
        std::optional<GeluMatch> m = matcher.match(i);
        if (!m) continue;
        if (std::any_of(m->nodes.begin(), m->nodes.end(), [&](int k) { return claimed.count(k) != 0; })) continue;
        claimed.insert(m->nodes.begin(), m->nodes.end());
        matches.push_back(std::move(*m));
    }
    return matches;
}

}  // namespace tapestry::onnx_detail
