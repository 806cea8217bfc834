// The e-graph: hash-consing over canonical node keys, union-find with path halving,
// egg's deferred rebuild (repair parents of merged classes until no congruence is
// left), a fixed-point greedy extractor, and the graph encoding/decoding.
#include "passes/egraph.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "common/check.h"
#include "graph/order.h"

namespace tapestry {

const ClassId *ENode::child(const std::string &port) const {
    for (size_t i = 0; i < ports.size(); ++i)
        if (ports[i] == port) return &children[i];
    return nullptr;
}

std::string direction_name(Rewrite::Direction d) {
    switch (d) {
    case Rewrite::Direction::expand: return "expand";
    case Rewrite::Direction::fuse: return "fuse";
    case Rewrite::Direction::neutral: return "neutral";
    }
    return "neutral";
}

std::string stop_reason_name(StopReason r) {
    switch (r) {
    case StopReason::saturated: return "saturated";
    case StopReason::iteration_limit: return "iteration limit";
    case StopReason::node_limit: return "node limit";
    case StopReason::time_limit: return "time limit";
    }
    return "saturated";
}

EGraph::EGraph(const OpLibrary &library) : library_(&library) {}

ClassId EGraph::find(ClassId id) const {
    TAPESTRY_CHECK(id < parent_.size(), "EGraph::find: unknown class id");
    while (parent_[id] != id) {
        parent_[id] = parent_[parent_[id]];  // path halving: answers stay the same
        id = parent_[id];
    }
    return id;
}

const EClass &EGraph::eclass(ClassId id) const {
    const auto &c = classes_[find(id)];
    TAPESTRY_CHECK(c != nullptr, "EGraph::eclass: a canonical class is missing");
    return *c;
}

std::vector<ClassId> EGraph::class_ids() const {
    std::vector<ClassId> out;
    out.reserve(class_count_);
    for (size_t i = 0; i < classes_.size(); ++i)
        if (classes_[i]) out.push_back(static_cast<ClassId>(i));
    return out;
}

ENode EGraph::canonical(const ENode &n) const {
    ENode c = n;
    for (ClassId &child : c.children) child = find(child);
    return c;
}

std::string EGraph::key(const ENode &n) const {
    std::string k = n.kind;
    k += '(';
    for (const auto &[name, value] : n.params.values()) {
        k += name;
        k += '=';
        k += param_to_string(value);
        k += ';';
    }
    k += ')';
    for (size_t i = 0; i < n.children.size(); ++i) {
        k += n.ports[i];
        k += ':';
        k += std::to_string(n.children[i]);
        k += ',';
    }
    return k;
}

std::optional<ClassId> EGraph::lookup(const ENode &n) const {
    auto it = memo_.find(key(canonical(n)));
    if (it == memo_.end()) return std::nullopt;
    return find(it->second);
}

ClassId EGraph::add_node(ENode n, const OperandType &type) {
    n = canonical(n);
    const std::string k = key(n);
    if (auto it = memo_.find(k); it != memo_.end()) return find(it->second);
    const auto id = static_cast<ClassId>(classes_.size());
    parent_.push_back(id);
    auto cls = std::make_unique<EClass>();
    cls->id = id;
    cls->type = type;
    for (ClassId child : n.children) classes_[find(child)]->parents.emplace_back(n, id);
    cls->nodes.push_back(std::move(n));
    classes_.push_back(std::move(cls));
    memo_.emplace(k, id);
    ++class_count_;
    ++node_count_;
    return id;
}

ClassId EGraph::add_tensor(const TensorId &id, const OperandType &type, std::optional<double> scalar) {
    ENode n;
    n.kind = "@tensor";
    n.params.set("id", id.value);
    if (scalar) n.params.set("value", *scalar);
    return add_node(std::move(n), type);
}

ClassId EGraph::add_constant(std::shared_ptr<const TensorData> value, std::optional<double> exact) {
    TAPESTRY_CHECK(value != nullptr, "EGraph::add_constant: no value");
    std::string content = std::string(dtype_name(value->dtype)) + value->shape.to_string();
    content.append(reinterpret_cast<const char *>(value->bytes.data()), value->bytes.size());
    size_t index;
    if (auto it = constant_index_.find(content); it != constant_index_.end()) {
        index = it->second;
    } else {
        index = constants_.size();
        constants_.push_back(value);
        constant_index_.emplace(std::move(content), index);
    }
    ENode n;
    n.kind = "@const";
    n.params.set("const", static_cast<std::int64_t>(index));
    if (exact) n.params.set("value", *exact);
    return add_node(std::move(n), OperandType{value->dtype, value->shape});
}

std::optional<double> EGraph::scalar_constant(ClassId id) const {
    for (const ENode &n : eclass(id).nodes) {
        if (n.kind == "@tensor")
            if (const ParamValue *v = n.params.find("value")) return std::get<double>(*v);
        if (n.kind == "@const") {
            if (const ParamValue *v = n.params.find("value")) return std::get<double>(*v);
            const auto &data = constants_.at(static_cast<size_t>(n.params.get_int("const", 0)));
            if (data->element_count() == 1) return data->get(0);
        }
    }
    return std::nullopt;
}

Expected<ClassId, std::string> EGraph::add_op(const std::string &kind, const Params &params,
                                              const std::vector<std::pair<std::string, ClassId>> &inputs) {
    const OpDef *def = library_->find(kind);
    if (!def) return unexpected("unknown op kind '" + kind + "'");
    std::vector<PortTypes> types;
    for (const auto &[port, cls] : inputs) {
        if (types.empty() || types.back().port != port) types.push_back(PortTypes{port, {}});
        types.back().operands.push_back(type(cls));
    }
    auto d = library_->derive(kind, params, types);
    if (!d) return unexpected(kind + ": " + d.error().message + " (" + d.error().field + ")");
    TAPESTRY_CHECK(!d->outputs.empty() && !d->outputs[0].operands.empty(), "EGraph::add_op: an op without output");
    ENode n;
    n.kind = kind;
    n.params = library_->with_defaults(*def, params);
    for (const auto &[port, cls] : inputs) {
        n.ports.push_back(port);
        n.children.push_back(find(cls));
    }
    n.flops = def->flops_per_point(n.params, *d) * static_cast<double>(d->signature.index_space.size());
    const OperandType &out = d->outputs[0].operands[0];
    n.bytes = static_cast<double>(out.shape.product()) * dtype_bytes(out.dtype);
    return add_node(std::move(n), d->outputs[0].operands[0]);
}

bool EGraph::merge(ClassId a, ClassId b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    EClass *ca = classes_[a].get();
    EClass *cb = classes_[b].get();
    if (ca->type != cb->type) {
        const std::string why = "EGraph::merge: classes of different tensor types (" +
                                std::string(dtype_name(ca->type.dtype)) + ca->type.shape.to_string() + " vs " +
                                std::string(dtype_name(cb->type.dtype)) + cb->type.shape.to_string() +
                                "): a rule equated unequal values";
        TAPESTRY_CHECK(false, why.c_str());
    }
    if (ca->nodes.size() + ca->parents.size() < cb->nodes.size() + cb->parents.size()) {
        std::swap(a, b);
        std::swap(ca, cb);
    }
    parent_[b] = a;
    for (ENode &n : cb->nodes) ca->nodes.push_back(std::move(n));
    for (auto &p : cb->parents) ca->parents.push_back(std::move(p));
    classes_[b].reset();
    --class_count_;
    pending_.push_back(a);
    return true;
}

void EGraph::rebuild() {
    while (!pending_.empty()) {
        std::vector<ClassId> todo;
        todo.swap(pending_);
        for (ClassId &c : todo) c = find(c);
        std::sort(todo.begin(), todo.end());
        todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
        for (ClassId c : todo) {
            c = find(c);
            std::vector<std::pair<ENode, ClassId>> parents;
            parents.swap(classes_[c]->parents);
            // Re-key every parent under its canonical children.
            for (auto &[node, cls] : parents) {
                auto it = memo_.find(key(node));
                if (it != memo_.end()) memo_.erase(it);
                node = canonical(node);
                memo_[key(node)] = find(cls);
            }
            // Congruence: parents that became the same node are the same value.
            std::unordered_map<std::string, std::pair<ENode, ClassId>> unique;
            for (auto &[node, cls] : parents) {
                const std::string k = key(node);
                auto it = unique.find(k);
                if (it != unique.end()) {
                    merge(it->second.second, cls);
                    it->second.second = find(it->second.second);
                } else {
                    unique.emplace(k, std::make_pair(node, find(cls)));
                }
            }
            auto &target = classes_[find(c)]->parents;
            for (auto &[k, entry] : unique) {
                entry.first = canonical(entry.first);
                target.emplace_back(std::move(entry.first), find(entry.second));
            }
        }
    }
    // Canonical, duplicate-free node lists (in first-seen order: extraction ties stay stable).
    node_count_ = 0;
    for (auto &cls : classes_) {
        if (!cls) continue;
        std::vector<ENode> nodes;
        std::unordered_map<std::string, bool> seen;
        for (ENode &n : cls->nodes) {
            ENode c = canonical(n);
            if (seen.emplace(key(c), true).second) nodes.push_back(std::move(c));
        }
        cls->nodes = std::move(nodes);
        node_count_ += cls->nodes.size();
    }
}

RunReport run_rewrites(EGraph &g, const std::vector<Rewrite> &rules, const RunnerLimits &limits) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
    RunReport report;
    g.rebuild();
    for (const Rewrite &r : rules) report.fired[r.name] = 0;
    auto finish = [&](StopReason why) {
        g.rebuild();
        report.stop = why;
        report.classes = g.class_count();
        report.nodes = g.node_count();
        report.seconds = elapsed();
        return report;
    };
    while (true) {
        if (report.iterations >= limits.iterations) return finish(StopReason::iteration_limit);
        ++report.iterations;
        // Search on the e-graph as it stands, then apply (egg's two phases).
        struct Match {
            size_t rule;
            ClassId cls;
            ENode node;
        };
        std::vector<Match> matches;
        for (ClassId c : g.class_ids())
            for (const ENode &n : g.eclass(c).nodes)
                for (size_t r = 0; r < rules.size(); ++r)
                    if (n.kind == rules[r].root_kind) matches.push_back(Match{r, c, n});
        const size_t classes_before = g.class_count();
        const size_t nodes_before = g.node_count();
        bool changed = false;
        for (const Match &m : matches) {
            for (ClassId result : rules[m.rule].apply(g, g.find(m.cls), m.node)) {
                if (g.merge(m.cls, result)) {
                    changed = true;
                    ++report.fired[rules[m.rule].name];
                }
            }
            if (g.node_count() > limits.nodes) return finish(StopReason::node_limit);
            if (elapsed() > limits.seconds) return finish(StopReason::time_limit);
        }
        g.rebuild();
        if (g.node_count() != nodes_before || g.class_count() != classes_before) changed = true;
        if (g.node_count() > limits.nodes) return finish(StopReason::node_limit);
        if (!changed) return finish(StopReason::saturated);
        if (elapsed() > limits.seconds) return finish(StopReason::time_limit);
    }
}

double node_cost(const EGraph &, const ENode &n, const CostModel &model) {
    if (n.leaf()) return 0;
    const double c = n.flops + model.bytes_weight * n.bytes + model.per_op;
    return model.penalized.count(n.kind) ? c * model.penalty : c;
}

Extraction extract_greedy(const EGraph &g, const CostModel &model) {
    // Why the result is acyclic: a class takes a node only when node cost + children's
    // best costs is strictly below its current best, and every op node costs at least
    // per_op > 0. Costs only ever decrease, so at all times best(class) > best(child)
    // for every child of its chosen node, and a cycle would need best(c) > best(c).
    // (decode_graph still checks, in case rounding ever ties two sums.) The order in
    // which classes are visited changes only which of equally cheap nodes wins.
    TAPESTRY_CHECK(model.per_op > 0, "extract_greedy: per_op must be positive (it keeps extraction acyclic)");
    Extraction ex;
    size_t size = 0;
    for (ClassId c : g.class_ids()) size = std::max<size_t>(size, c + 1);
    ex.choice.assign(size, -1);
    ex.cost.assign(size, std::numeric_limits<double>::infinity());
    // A worklist: a class whose best cost drops makes its parents' classes worth another look.
    std::deque<ClassId> work;
    std::vector<char> queued(size, 0);
    for (ClassId c : g.class_ids()) {
        work.push_back(c);
        queued[c] = 1;
    }
    while (!work.empty()) {
        const ClassId c = work.front();
        work.pop_front();
        queued[c] = 0;
        const EClass &cls = g.eclass(c);
        bool improved = false;
        for (size_t i = 0; i < cls.nodes.size(); ++i) {
            const ENode &n = cls.nodes[i];
            double total = node_cost(g, n, model);
            for (ClassId child : n.children) total += ex.cost[g.find(child)];
            if (total < ex.cost[c]) {
                ex.cost[c] = total;
                ex.choice[c] = static_cast<int>(i);
                improved = true;
            }
        }
        if (!improved) continue;
        for (const auto &[node, parent] : cls.parents) {
            const ClassId p = g.find(parent);
            if (!queued[p]) {
                queued[p] = 1;
                work.push_back(p);
            }
        }
    }
    return ex;
}

namespace {

// The shortest decimal that rounds to element 0 of `d` in its dtype: the epsilon a
// person wrote (1e-5), not the f32 value it became (9.99999974738e-06).
double written_scalar(const TensorData &d) {
    const double stored = d.get(0);
    TensorData probe(d.dtype, ZPoint{1});
    for (int digits = 1; digits <= 17; ++digits) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.*g", digits, stored);
        const double candidate = std::strtod(buf, nullptr);
        probe.set(0, candidate);
        if (probe.get(0) == stored) return candidate;
    }
    return stored;
}

bool whole(const TensorSelection &s, const Graph &g) {
    const Tensor *t = g.find_tensor(s.tensor);
    return t && t->range == s.range;
}

// How many ops write / read each tensor (one pass over the graph).
struct Uses {
    std::map<TensorId, int> writers, readers;
    explicit Uses(const Graph &g) {
        for (const OpPtr &op : g.operations()) {
            for (const TensorId &t : op->output_tensors()) ++writers[t];
            for (const TensorId &t : op->input_tensors()) ++readers[t];
        }
    }
    int writes(const TensorId &t) const { return writers.count(t) ? writers.at(t) : 0; }
    int reads(const TensorId &t) const { return readers.count(t) ? readers.at(t) : 0; }
};

// An op the e-graph may rewrite: unsharded, a known kind, whole tensors in and one out,
// and the only writer of its output.
bool rewritable(const Operation &op, const Graph &g, const Uses &uses, const OpLibrary &library) {
    if (!op.shards.empty() || !library.find(op.kind)) return false;
    if (op.outputs.size() != 1 || op.outputs[0].selections.size() != 1) return false;
    if (!whole(op.outputs[0].selections[0], g)) return false;
    if (uses.writes(op.outputs[0].selections[0].tensor) != 1) return false;
    for (const PortBinding &p : op.inputs)
        for (const TensorSelection &s : p.selections)
            if (!whole(s, g)) return false;
    return true;
}

}  // namespace

GraphEncoding encode_graph(const Graph &g, const OpLibrary &library) {
    GraphEncoding enc(library);
    EGraph &eg = enc.egraph;
    const Uses uses(g);
    std::set<TensorId> written;
    std::vector<const Operation *> order = dependency_order(g).order;
    const std::set<const Operation *> ordered(order.begin(), order.end());
    for (const Operation *op : order)
        if (rewritable(*op, g, uses, library)) written.insert(op->outputs[0].selections[0].tensor);
    for (const TensorPtr &t : g.tensors())
        if (!written.count(t->id)) {
            std::optional<double> scalar;
            if (t->value && t->value->element_count() == 1 && t->role == TensorRole::parameter)
                scalar = written_scalar(*t->value);
            enc.class_of[t->id] = eg.add_tensor(t->id, OperandType{t->dtype, t->shape()}, scalar);
        }
    std::set<TensorId> roots;
    for (const OpPtr &op : g.operations()) {
        const bool ok = rewritable(*op, g, uses, library) && ordered.count(op.get());
        if (!ok) {
            enc.kept.insert(op->id);
            for (const TensorId &t : op->input_tensors()) roots.insert(t);
        }
    }
    for (const Operation *op : order) {
        if (enc.kept.count(op->id)) continue;
        const TensorId out = op->outputs[0].selections[0].tensor;
        std::vector<std::pair<std::string, ClassId>> inputs;
        bool known = true;
        for (const PortBinding &p : op->inputs)
            for (const TensorSelection &s : p.selections) {
                auto it = enc.class_of.find(s.tensor);
                if (it == enc.class_of.end()) known = false;
                else inputs.emplace_back(p.name, it->second);
            }
        Expected<ClassId, std::string> cls = known ? eg.add_op(op->kind, op->params, inputs)
                                                   : Expected<ClassId, std::string>(unexpected(std::string("?")));
        if (!cls) {
            // The library refuses it (an invalid graph): keep the op, its output a leaf.
            enc.kept.insert(op->id);
            for (const TensorId &t : op->input_tensors()) roots.insert(t);
            const Tensor *t = g.find_tensor(out);
            enc.class_of[out] = eg.add_tensor(out, OperandType{t->dtype, t->shape()});
            continue;
        }
        enc.class_of[out] = *cls;
        enc.producer[out] = op->id;
        ENode n;
        n.kind = op->kind;
        n.params = library.with_defaults(*library.find(op->kind), op->params);
        for (const auto &[port, c] : inputs) {
            n.ports.push_back(port);
            n.children.push_back(c);
        }
        enc.node_of[op->id] = n;
    }
    for (const TensorPtr &t : g.tensors()) {
        const bool unread = enc.producer.count(t->id) && uses.reads(t->id) == 0;
        if (t->role == TensorRole::output || unread) roots.insert(t->id);
    }
    for (const TensorPtr &t : g.tensors())
        if (roots.count(t->id) && enc.class_of.count(t->id)) enc.roots.push_back(t->id);
    eg.rebuild();
    return enc;
}

namespace {

class Decoder {
public:
    Decoder(const GraphEncoding &enc, const Extraction &ex, RecordingRewriter &rw)
        : enc_(enc), eg_(enc.egraph), ex_(ex), rw_(rw) {
        for (const TensorId &r : enc.roots) home_.emplace(eg_.find(enc.class_of.at(r)), r);
        for (const TensorPtr &t : rw.graph().tensors())
            if (enc.producer.count(t->id)) home_.emplace(eg_.find(enc.class_of.at(t->id)), t->id);
    }

    int run() {
        for (const TensorId &r : enc_.roots) {
            auto p = enc_.producer.find(r);
            const TensorId got = emit(enc_.class_of.at(r), p != enc_.producer.end() ? p->second.value : r.value);
            if (got != r) copy(got, r);
        }
        for (const auto &[t, op] : enc_.producer)
            if (!used_.count(op)) rw_.remove_op(op);
        const Uses after(rw_.graph());
        for (const auto &[t, op] : enc_.producer)
            if (after.writes(t) == 0 && after.reads(t) == 0) rw_.remove_tensor(t);
        return added_;
    }

private:
    std::string unique_id(const std::string &base) {
        std::string id = base;
        for (int k = 2; rw_.graph().has_id(id); ++k) id = base + "." + std::to_string(k);
        return id;
    }

    TensorSelection whole(const TensorId &t) const {
        const Tensor *tensor = rw_.graph().find_tensor(t);
        TAPESTRY_CHECK(tensor != nullptr, "decode_graph: a tensor of the result is missing");
        return TensorSelection{t, tensor->range};
    }

    std::vector<PortBinding> bind(const std::vector<std::string> &ports, const std::vector<TensorId> &tensors) const {
        std::vector<PortBinding> out;
        for (size_t i = 0; i < ports.size(); ++i) {
            if (out.empty() || out.back().name != ports[i]) out.push_back(PortBinding{ports[i], {}});
            out.back().selections.push_back(whole(tensors[i]));
        }
        return out;
    }

    void copy(const TensorId &from, const TensorId &to) {
        const Tensor *t = rw_.graph().find_tensor(to);
        Operation op;
        op.id = OpId(unique_id(to.value + ".copy"));
        op.name = op.id.value;
        op.kind = "reshape";
        op.params.set("shape", t->shape().to_vector());
        op.inputs.push_back(PortBinding{"x", {whole(from)}});
        op.outputs.push_back(PortBinding{"y", {whole(to)}});
        rw_.put_op(std::move(op));
        ++added_;
    }

    TensorId emit(ClassId c, const std::string &hint) {
        c = eg_.find(c);
        if (auto it = memo_.find(c); it != memo_.end()) return it->second;
        TAPESTRY_CHECK(!active_.count(c), "decode_graph: the extraction has a cycle");
        TAPESTRY_CHECK(c < ex_.choice.size() && ex_.choice[c] >= 0, "decode_graph: a class has no extractable node");
        const ENode &n = eg_.eclass(c).nodes[static_cast<size_t>(ex_.choice[c])];
        if (n.kind == "@tensor") return memo_[c] = TensorId(n.params.get_string("id", ""));
        if (n.kind == "@const") {
            auto value = eg_.constant(static_cast<size_t>(n.params.get_int("const", 0)));
            Tensor t;
            t.id = TensorId(unique_id(hint + ".const"));
            t.name = t.id.value;
            t.dtype = value->dtype;
            t.range = ZRange::of_shape(value->shape);
            t.role = TensorRole::parameter;
            t.value = value;
            rw_.put_tensor(t);
            return memo_[c] = t.id;
        }
        active_.insert(c);
        auto home = home_.find(c);
        std::optional<OpId> original;
        if (home != home_.end())
            if (auto p = enc_.producer.find(home->second); p != enc_.producer.end()) original = p->second;
        const std::string op_hint = original ? original->value : hint;
        std::vector<TensorId> inputs;
        for (ClassId child : n.children) inputs.push_back(emit(child, op_hint));
        active_.erase(c);
        if (original && !used_.count(*original)) {
            const ENode before = eg_.canonical(enc_.node_of.at(*original));
            const Operation *op = rw_.graph().find_op(*original);
            const ENode now = eg_.canonical(n);
            if (op && before.kind == now.kind && before.params == now.params && before.ports == now.ports &&
                before.children == now.children && op->input_tensors() == inputs) {
                used_.insert(*original);
                return memo_[c] = home->second;
            }
        }
        Operation op;
        op.id = OpId(unique_id(op_hint + "." + n.kind));
        op.name = op.id.value;
        op.kind = n.kind;
        op.params = n.params;
        op.inputs = bind(n.ports, inputs);
        TensorId out;
        if (home != home_.end()) {
            out = home->second;
        } else {
            const OperandType &type = eg_.type(c);
            Tensor t;
            t.id = TensorId(unique_id(op.id.value + ".out"));
            t.name = t.id.value;
            t.dtype = type.dtype;
            t.range = ZRange::of_shape(type.shape);
            t.role = TensorRole::intermediate;
            rw_.put_tensor(t);
            out = t.id;
        }
        const OpDef *def = eg_.library().find(n.kind);
        op.outputs.push_back(PortBinding{def->output_ports().at(0).name, {whole(out)}});
        if (original && !used_.count(*original) && rw_.graph().find_op(*original)) {
            // The original writer of this tensor is replaced: remove it first, so that
            // the tensor never has two writers.
            rw_.remove_op(*original);
        }
        rw_.put_op(std::move(op));
        ++added_;
        return memo_[c] = out;
    }

    const GraphEncoding &enc_;
    const EGraph &eg_;
    const Extraction &ex_;
    RecordingRewriter &rw_;
    std::map<ClassId, TensorId> home_;
    std::map<ClassId, TensorId> memo_;
    std::set<ClassId> active_;
    std::set<OpId> used_;
    int added_ = 0;
};

}  // namespace

int decode_graph(const GraphEncoding &encoding, const Extraction &extraction, RecordingRewriter &rewriter) {
    return Decoder(encoding, extraction, rewriter).run();
}

double graph_cost(const Graph &g, const OpLibrary &library, const CostModel &model) {
    double total = 0;
    const EGraph empty(library);
    for (const OpPtr &op : g.operations()) {
        const OpDef *def = library.find(op->kind);
        if (!def) continue;
        std::vector<PortTypes> types;
        for (const PortBinding &p : op->inputs) {
            types.push_back(PortTypes{p.name, {}});
            for (const TensorSelection &s : p.selections) {
                const Tensor *t = g.find_tensor(s.tensor);
                if (!t) continue;
                types.back().operands.push_back(OperandType{t->dtype, s.range.shape()});
            }
        }
        auto d = library.derive(op->kind, op->params, types);
        if (!d) continue;
        ENode n;
        n.kind = op->kind;
        n.flops = def->flops_per_point(library.with_defaults(*def, op->params), *d) *
                  static_cast<double>(d->signature.index_space.size());
        for (const PortTypes &pt : d->outputs)
            for (const OperandType &o : pt.operands)
                n.bytes += static_cast<double>(o.shape.product()) * dtype_bytes(o.dtype);
        total += node_cost(empty, n, model);
    }
    return total;
}

}  // namespace tapestry
