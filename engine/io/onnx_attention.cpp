// Attention subgraph matching for the ONNX importer (io/onnx_attention.h): walks
// back from each Reshape through the node chain that exporters emit for scaled
// dot-product attention with separate head reshapes.
#include "io/onnx_attention.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace tapestry::onnx_detail {

namespace {

bool default_domain(const onnx::NodeProto &n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

std::vector<std::int64_t> perm_of(const onnx::NodeProto &n) {
    for (const auto &a : n.attribute())
        if (a.name() == "perm") return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    return {};
}

class Matcher {
public:
    explicit Matcher(const onnx::GraphProto &graph) : graph_(graph) {
        for (int i = 0; i < graph.node_size(); ++i) {
            const onnx::NodeProto &n = graph.node(i);
            for (const std::string &out : n.output())
                if (!out.empty()) producer_[out] = i;
            for (const std::string &in : n.input())
                if (!in.empty()) ++uses_[in];
        }
        for (const auto &o : graph.output()) outputs_.insert(o.name());
    }

    std::optional<AttentionMatch> match(int root) {
        nodes_.clear();
        const onnx::NodeProto &r = graph_.node(root);
        if (r.op_type() != "Reshape" || !default_domain(r) || r.input_size() != 2 || r.output_size() != 1)
            return std::nullopt;
        nodes_.push_back(root);
        AttentionMatch m;
        m.root = root;
        m.merge_shape = r.input(1);
        const onnx::NodeProto *ct = intermediate(r.input(0), "Transpose");
        if (!ct || perm_of(*ct) != std::vector<std::int64_t>{0, 2, 1, 3}) return std::nullopt;
        const onnx::NodeProto *context = intermediate(ct->input(0), "MatMul");
        if (!context || context->input_size() != 2) return std::nullopt;
        const onnx::NodeProto *softmax = intermediate(context->input(0), "Softmax");
        if (!softmax) return std::nullopt;
        std::int64_t axis = -1;
        for (const auto &a : softmax->attribute())
            if (a.name() == "axis") axis = a.i();
        if (axis != -1 && axis != 3) return std::nullopt;
        if (!heads(context->input(1), {0, 2, 1, 3}, m.v, m.v_heads_shape)) return std::nullopt;

        // [Add(·, mask)] over [Mul|Div(·, c)] over MatMul(Tq, Tk).
        std::string x = softmax->input(0);
        if (const onnx::NodeProto *add = peek(x, "Add"); add && add->input_size() == 2) {
            int side = -1;
            for (int s = 0; s < 2 && side < 0; ++s)
                if (peek(add->input(s), "MatMul") || peek(add->input(s), "Mul") || peek(add->input(s), "Div")) side = s;
            if (side < 0) return std::nullopt;
            take(x);
            m.mask = add->input(1 - side);
            x = add->input(side);
        }
        if (const onnx::NodeProto *mul = peek(x, "Mul")) {
            take(x);
            const bool left = peek(mul->input(0), "MatMul") != nullptr;
            m.scale = mul->input(left ? 1 : 0);
            x = mul->input(left ? 0 : 1);
        } else if (const onnx::NodeProto *div = peek(x, "Div")) {
            take(x);
            m.scale = div->input(1);
            m.scale_divides = true;
            x = div->input(0);
        }
        const onnx::NodeProto *scores = intermediate(x, "MatMul");
        if (!scores || scores->input_size() != 2) return std::nullopt;
        if (!heads(scores->input(0), {0, 2, 1, 3}, m.q, m.q_heads_shape)) return std::nullopt;
        if (!heads(scores->input(1), {0, 2, 3, 1}, m.k, m.k_heads_shape)) return std::nullopt;
        // The mask and scale are read, not produced, by the pattern.
        for (const std::string &outside : {m.mask, m.scale})
            if (!outside.empty() && produced_inside(outside)) return std::nullopt;
        m.nodes = nodes_;
        std::sort(m.nodes.begin(), m.nodes.end());
        return m;
    }

private:
    // Transpose(perm) of Reshape(source, shape): the head split of one operand.
    bool heads(const std::string &name, const std::vector<std::int64_t> &perm, std::string &source, std::string &shape) {
        const onnx::NodeProto *t = intermediate(name, "Transpose");
        if (!t || perm_of(*t) != perm) return false;
        const onnx::NodeProto *r = intermediate(t->input(0), "Reshape");
        if (!r || r->input_size() != 2) return false;
        source = r->input(0);
        shape = r->input(1);
        return true;
    }

    bool produced_inside(const std::string &name) const {
        auto it = producer_.find(name);
        return it != producer_.end() && std::find(nodes_.begin(), nodes_.end(), it->second) != nodes_.end();
    }

    // The node defining `name` when it is an `op_type` node that may join the
    // pattern (one consumer, not a graph output, not already in it) — without taking it.
    const onnx::NodeProto *peek(const std::string &name, const char *op_type) const {
        auto it = producer_.find(name);
        if (it == producer_.end()) return nullptr;
        const onnx::NodeProto &n = graph_.node(it->second);
        if (n.op_type() != op_type || !default_domain(n) || n.output_size() != 1 || n.input_size() < 1) return nullptr;
        if (uses_.at(name) != 1 || outputs_.count(name)) return nullptr;
        if (std::find(nodes_.begin(), nodes_.end(), it->second) != nodes_.end()) return nullptr;
        return &n;
    }
    void take(const std::string &name) { nodes_.push_back(producer_.at(name)); }
    const onnx::NodeProto *intermediate(const std::string &name, const char *op_type) {
        const onnx::NodeProto *n = peek(name, op_type);
        if (n) take(name);
        return n;
    }

    const onnx::GraphProto &graph_;
    std::map<std::string, int> producer_;
    std::map<std::string, int> uses_;
    std::set<std::string> outputs_;
    std::vector<int> nodes_;
};

}  // namespace

std::vector<AttentionMatch> find_attention_patterns(const onnx::GraphProto &graph) {
    Matcher matcher(graph);
    std::vector<AttentionMatch> out;
    std::set<int> used;
    for (int i = 0; i < graph.node_size(); ++i) {
        auto m = matcher.match(i);
        if (!m) continue;
        if (std::any_of(m->nodes.begin(), m->nodes.end(), [&](int k) { return used.count(k) > 0; })) continue;
        used.insert(m->nodes.begin(), m->nodes.end());
        out.push_back(std::move(*m));
    }
    return out;
}

}  // namespace tapestry::onnx_detail
