// Graph validation. Each check reports Issues with an exact, stable message; the
// checks run in dependency order so that one fault is reported once (an operation
// whose operands cannot be resolved is not also checked for projections).
#include "graph/validate.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "graph/resolve.h"
#include "index/index_set.h"

namespace tapestry {
namespace {

std::string tensor_path(size_t i) { return "$.tensors[" + std::to_string(i) + "]"; }
std::string op_path(size_t j) { return "$.operations[" + std::to_string(j) + "]"; }
std::string operand_path(size_t j, const char *side, const std::string &port, size_t i) {
    return op_path(j) + "." + side + "." + port + "[" + std::to_string(i) + "]";
}

std::string count_of(std::int64_t n, const char *noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

bool coordinates_in_bounds(const ZRange &r) {
    for (int d = 0; d < r.rank(); ++d)
        if (r.start()[d] < -kMaxCoordinate || r.start()[d] > kMaxCoordinate || r.end()[d] < -kMaxCoordinate ||
            r.end()[d] > kMaxCoordinate)
            return false;
    return true;
}

class Validator {
public:
    Validator(const Graph &g, const SignatureSource &lib, const ValidationOptions &o) : g_(g), lib_(lib), opt_(o) {}

    std::vector<Issue> run() {
        check_tensors();
        for (size_t j = 0; j < g_.operations().size(); ++j) check_operation(j);
        check_writes();
        check_cycles();
        return std::move(issues_);
    }

private:
    void add(Severity sev, std::string code, std::string message, std::string node, std::string path,
             std::vector<std::string> related = {}) {
        issues_.push_back(Issue{sev, std::move(code), std::move(message), std::move(node), std::move(path),
                                std::move(related)});
    }
    void error(std::string code, std::string message, std::string node, std::string path,
               std::vector<std::string> related = {}) {
        add(Severity::error, std::move(code), std::move(message), std::move(node), std::move(path), std::move(related));
    }

    // ---- tensors ------------------------------------------------------------
    void check_tensors() {
        for (size_t i = 0; i < g_.tensors().size(); ++i) {
            const Tensor &t = *g_.tensors()[i];
            if (t.id.empty()) error("missing-id", "tensor has an empty id", "", tensor_path(i) + ".id");
            if (!coordinates_in_bounds(t.range))
                error("bad-dimension",
                      "tensor '" + t.id.value + "' has range " + t.range.to_string() + " beyond the supported ±2^40",
                      t.id.value, tensor_path(i) + ".range");
        }
    }

    // ---- operations ---------------------------------------------------------
    bool check_selections(size_t j, const Operation &op, const char *side, const std::vector<PortBinding> &ports) {
        bool ok = true;
        const std::string what = side == std::string("inputs") ? "input" : "output";
        for (const PortBinding &b : ports) {
            for (size_t i = 0; i < b.selections.size(); ++i) {
                const TensorSelection &s = b.selections[i];
                const std::string path = operand_path(j, side, b.name, i);
                const std::string label = what + " " + b.name + "[" + std::to_string(i) + "] of '" + op.id.value + "'";
                const Tensor *t = g_.find_tensor(s.tensor);
                if (!t) {
                    error("dangling-reference", label + " refers to tensor '" + s.tensor.value + "', which does not exist",
                          op.id.value, path + ".tensor", {s.tensor.value});
                    ok = false;
                    continue;
                }
                if (s.range.rank() != t->range.rank()) {
                    error("rank-mismatch",
                          label + " selects " + s.range.to_string() + " (rank " + std::to_string(s.range.rank()) +
                              ") of tensor '" + t->id.value + "', which has rank " + std::to_string(t->range.rank()),
                          op.id.value, path + ".range", {t->id.value});
                    ok = false;
                    continue;
                }
                if (!coordinates_in_bounds(s.range) || !t->range.contains(s.range)) {
                    error("selection-outside-tensor",
                          label + " selects " + s.range.to_string() + ", outside tensor '" + t->id.value + "' " +
                              t->range.to_string(),
                          op.id.value, path + ".range", {t->id.value});
                    ok = false;
                }
            }
        }
        return ok;
    }

    static std::string field_path(size_t j, const std::string &field) {
        return field.empty() ? op_path(j) : op_path(j) + "." + field;
    }

    void check_operation(size_t j) {
        const Operation &op = *g_.operations()[j];
        const std::string path = op_path(j);
        if (op.id.empty()) error("missing-id", "operation has an empty id", "", path + ".id");
        if (g_.find_tensor(TensorId(op.id.value)))
            error("duplicate-id", "operation id '" + op.id.value + "' is also the id of a tensor", op.id.value,
                  path + ".id", {op.id.value});
        if (!lib_.knows(op.kind)) {
            error("unknown-op", "operation '" + op.id.value + "' has unknown kind '" + op.kind + "'", op.id.value,
                  path + ".kind");
            return;
        }
        const bool ins_ok = check_selections(j, op, "inputs", op.inputs);
        const bool outs_ok = check_selections(j, op, "outputs", op.outputs);
        if (!ins_ok || !outs_ok) return;

        auto resolved = resolve(g_, op, lib_);
        if (!resolved) {
            const DerivationError &e = resolved.error();
            // Op-library messages start with the kind ("linear: w has …"); name the operation instead.
            std::string why = e.message;
            if (why.rfind(op.kind + ": ", 0) == 0) why.erase(0, op.kind.size() + 2);
            error(e.code, op.kind + " '" + op.id.value + "': " + why, op.id.value, field_path(j, e.field));
            return;
        }
        const Derivation &d = *resolved;
        if (!check_outputs(j, op, d)) return;
        if (op.index_space && !(*op.index_space == d.signature.index_space))
            error("index-space-mismatch",
                  "operation '" + op.id.value + "' states index space " + op.index_space->to_string() + " but " + op.kind +
                      " derives " + d.signature.index_space.to_string(),
                  op.id.value, path + ".index_space");
        if (op.signature) check_stated_signature(j, op, d.signature);
        if (opt_.check_injectivity) check_injectivity(j, op, d.signature);
        if (opt_.check_shards) check_shards(j, op, d.signature);
    }

    bool check_outputs(size_t j, const Operation &op, const Derivation &d) {
        bool ok = true;
        for (const PortTypes &pt : d.outputs) {
            const PortBinding *b = op.output(pt.port);
            if (!b) continue;  // resolve() already reported a missing port
            for (size_t i = 0; i < pt.operands.size() && i < b->selections.size(); ++i) {
                const TensorSelection &s = b->selections[i];
                const Tensor *t = g_.find_tensor(s.tensor);
                const std::string label = "output " + pt.port + "[" + std::to_string(i) + "] of '" + op.id.value + "'";
                if (!(s.range.shape() == pt.operands[i].shape)) {
                    error("shape-mismatch",
                          label + " has shape " + s.range.shape().to_string() + " but " + op.kind + " produces " +
                              pt.operands[i].shape.to_string(),
                          op.id.value, operand_path(j, "outputs", pt.port, i) + ".range", {s.tensor.value});
                    ok = false;
                } else if (t && t->dtype != pt.operands[i].dtype) {
                    error("dtype-mismatch",
                          label + " is tensor '" + t->id.value + "' of dtype " + std::string(dtype_name(t->dtype)) +
                              " but " + op.kind + " produces " + std::string(dtype_name(pt.operands[i].dtype)),
                          op.id.value, operand_path(j, "outputs", pt.port, i) + ".tensor", {t->id.value});
                    ok = false;
                }
            }
        }
        for (const PortBinding &b : op.outputs) {
            bool known = std::any_of(d.outputs.begin(), d.outputs.end(), [&](const PortTypes &p) { return p.port == b.name; });
            if (!known) {
                error("unknown-port", op.kind + " '" + op.id.value + "' has no output port '" + b.name + "'", op.id.value,
                      op_path(j) + ".outputs." + b.name);
                ok = false;
            }
        }
        return ok;
    }

    void check_stated_signature(size_t j, const Operation &op, const Signature &derived) {
        const Signature &stated = *op.signature;
        auto compare = [&](const std::vector<PortProjections> &st, const char *side, bool input) {
            for (const PortProjections &pp : st) {
                for (size_t i = 0; i < pp.operands.size(); ++i) {
                    const OperandProjection *want = input ? derived.input(pp.port, i) : derived.output(pp.port, i);
                    const std::string path = op_path(j) + ".signature." + side + "." + pp.port + "[" + std::to_string(i) + "]";
                    if (!want) {
                        error("projection-mismatch",
                              "operation '" + op.id.value + "' states a projection for " + (input ? "input " : "output ") +
                                  pp.port + "[" + std::to_string(i) + "], which " + op.kind + " does not have",
                              op.id.value, path);
                    } else if (!(pp.operands[i] == *want)) {
                        error("projection-mismatch",
                              "operation '" + op.id.value + "' states projection " + pp.operands[i].projection.to_string() +
                                  (pp.operands[i].clipped ? " (clipped)" : "") + " for " + (input ? "input " : "output ") +
                                  pp.port + "[" + std::to_string(i) + "] but " + op.kind + " derives " +
                                  want->projection.to_string() + (want->clipped ? " (clipped)" : ""),
                              op.id.value, path);
                    }
                }
            }
        };
        compare(stated.inputs, "inputs", true);
        compare(stated.outputs, "outputs", false);
    }

    void check_injectivity(size_t j, const Operation &op, const Signature &sig) {
        for (const PortProjections &pp : sig.outputs) {
            for (size_t i = 0; i < pp.operands.size(); ++i) {
                const IndexProjection &p = pp.operands[i].projection;
                InjectivityReport r = check_injective(p, sig.index_space);
                if (r.injective) continue;
                std::string msg = "output " + pp.port + "[" + std::to_string(i) + "] of '" + op.id.value +
                                  "' is not injective: its projection " + p.to_string() + " writes some elements twice";
                if (r.witness) {
                    ZRange shared = p.apply(r.witness->first).intersect(p.apply(r.witness->second));
                    msg += " (index points " + r.witness->first.to_string() + " and " + r.witness->second.to_string() +
                           " both write " + shared.start().to_string() + ")";
                }
                error("non-injective-output", msg, op.id.value, operand_path(j, "outputs", pp.port, i));
            }
        }
    }

    void check_shards(size_t j, const Operation &op, const Signature &sig) {
        if (op.shards.empty()) return;
        const std::string path = op_path(j) + ".shards";
        std::vector<ZRange> parts;
        for (size_t k = 0; k < op.shards.size(); ++k) {
            const Shard &s = op.shards[k];
            const std::string spath = path + "[" + std::to_string(k) + "]";
            const std::string sid = s.id.empty() ? "#" + std::to_string(k) : s.id.value;
            if (s.id.empty()) error("missing-id", "shard " + std::to_string(k) + " of '" + op.id.value + "' has an empty id", op.id.value, spath + ".id");
            else if (!shard_ids_.insert(s.id.value).second || g_.has_id(s.id.value))
                error("duplicate-id", "shard id '" + s.id.value + "' is used more than once", s.id.value, spath + ".id");
            if (s.index.rank() != sig.index_space.rank()) {
                error("rank-mismatch",
                      "shard '" + sid + "' has index range " + s.index.to_string() + " of rank " +
                          std::to_string(s.index.rank()) + " but the index space of '" + op.id.value + "' " +
                          sig.index_space.to_string() + " has rank " + std::to_string(sig.index_space.rank()),
                      sid, spath + ".index");
                return;  // coverage cannot be decided
            }
            if (!coordinates_in_bounds(s.index)) {
                error("bad-dimension", "shard '" + sid + "' has index range " + s.index.to_string() + " beyond the supported ±2^40", sid, spath + ".index");
                return;
            }
            if (s.index.empty())
                add(Severity::warning, "empty-shard", "shard '" + sid + "' covers no index points (" + s.index.to_string() + ")",
                    sid, spath + ".index");
            parts.push_back(s.index);
            check_shard_selections(op, sig, s, sid, spath);
        }
        PartitionReport rep = check_partition(parts, sig.index_space);
        auto sid_of = [&](size_t k) { return op.shards[k].id.empty() ? "#" + std::to_string(k) : op.shards[k].id.value; };
        for (size_t k : rep.outside)
            error("shard-outside-index-space",
                  "shard '" + sid_of(k) + "' index range " + op.shards[k].index.to_string() + " reaches outside the index space " +
                      sig.index_space.to_string() + " of '" + op.id.value + "'",
                  sid_of(k), path + "[" + std::to_string(k) + "].index");
        // Report the first few overlaps and gaps of an operation, then how many more.
        constexpr size_t kMaxReported = 8;
        if (rep.overlaps.size() > kMaxReported || rep.gaps.size() > kMaxReported)
            error("shard-coverage",
                  "shards of '" + op.id.value + "' have " + count_of(static_cast<std::int64_t>(rep.overlaps.size()), "overlap") +
                      " and " + count_of(static_cast<std::int64_t>(rep.gaps.size()), "gap") + "; the first " +
                      std::to_string(kMaxReported) + " of each are listed",
                  op.id.value, path);
        if (rep.overlaps.size() > kMaxReported) rep.overlaps.resize(kMaxReported);
        if (rep.gaps.size() > kMaxReported) rep.gaps.resize(kMaxReported);
        for (const PartitionReport::Overlap &o : rep.overlaps)
            error("shard-overlap",
                  "shards '" + sid_of(o.first) + "' and '" + sid_of(o.second) + "' of '" + op.id.value + "' overlap on " +
                      o.region.to_string(),
                  sid_of(o.second), path + "[" + std::to_string(o.second) + "].index", {sid_of(o.first), op.id.value});
        for (const ZRange &gap : rep.gaps)
            error("shard-gap",
                  "shards of '" + op.id.value + "' leave index points " + gap.to_string() + " of " +
                      sig.index_space.to_string() + " uncovered",
                  op.id.value, path);
    }

    void check_shard_selections(const Operation &op, const Signature &sig, const Shard &s, const std::string &sid,
                                const std::string &spath) {
        if (s.inputs.empty() && s.outputs.empty()) return;
        ShardSelections want = derive_shard_selections(g_, op, sig, s.index);
        auto compare = [&](const std::vector<PortBinding> &stated, const std::vector<PortBinding> &derived, const char *side) {
            for (const PortBinding &b : stated) {
                const PortBinding *d = nullptr;
                for (const PortBinding &c : derived)
                    if (c.name == b.name) d = &c;
                for (size_t i = 0; i < b.selections.size(); ++i) {
                    const std::string path = spath + "." + side + "." + b.name + "[" + std::to_string(i) + "]";
                    if (!d || i >= d->selections.size()) {
                        error("shard-selection-mismatch",
                              "shard '" + sid + "' states a selection for " + side + " " + b.name + "[" + std::to_string(i) +
                                  "], which '" + op.id.value + "' does not have",
                              sid, path);
                        continue;
                    }
                    const TensorSelection &got = b.selections[i], &exp = d->selections[i];
                    // Empty boxes select nothing wherever they sit, so any two are the same selection.
                    const bool same_range = got.range == exp.range ||
                                            (got.range.rank() == exp.range.rank() && got.range.empty() && exp.range.empty());
                    if (!(got.tensor == exp.tensor) || !same_range)
                        error("shard-selection-mismatch",
                              "shard '" + sid + "' states " + side + " " + b.name + "[" + std::to_string(i) + "] = " +
                                  got.tensor.value + got.range.to_string() + " but its index range " + s.index.to_string() +
                                  " projects to " + exp.tensor.value + exp.range.to_string(),
                              sid, path);
                }
            }
        };
        compare(s.inputs, want.inputs, "inputs");
        compare(s.outputs, want.outputs, "outputs");
    }

    // ---- writes: roles, conflicts, coverage -----------------------------------
    void check_writes() {
        struct Write {
            size_t op;
            std::string port;
            size_t operand;
            ZRange range;
        };
        std::unordered_map<TensorId, std::vector<Write>> writes;
        std::unordered_map<TensorId, bool> read;
        for (size_t j = 0; j < g_.operations().size(); ++j) {
            const Operation &op = *g_.operations()[j];
            for (const PortBinding &b : op.outputs)
                for (size_t i = 0; i < b.selections.size(); ++i)
                    writes[b.selections[i].tensor].push_back(Write{j, b.name, i, b.selections[i].range});
            for (const PortBinding &b : op.inputs)
                for (const TensorSelection &s : b.selections) read[s.tensor] = true;
        }
        for (size_t i = 0; i < g_.tensors().size(); ++i) {
            const Tensor &t = *g_.tensors()[i];
            auto it = writes.find(t.id);
            const bool written = it != writes.end();
            if (!written && !read.count(t.id)) {
                add(Severity::warning, "unused-tensor", "tensor '" + t.id.value + "' is neither read nor written", t.id.value,
                    tensor_path(i));
                continue;
            }
            if (t.role == TensorRole::input || t.role == TensorRole::parameter) {
                if (written) {
                    const Write &w = it->second.front();
                    const std::string op_id = g_.operations()[w.op]->id.value;
                    error("input-written",
                          std::string(role_name(t.role)) + " tensor '" + t.id.value + "' is written by operation '" + op_id + "'",
                          op_id, operand_path(w.op, "outputs", w.port, w.operand) + ".tensor", {t.id.value});
                }
                continue;
            }
            if (!written) {
                add(Severity::warning, "unproduced-tensor",
                    std::string(role_name(t.role)) + " tensor '" + t.id.value + "' is read but no operation writes it",
                    t.id.value, tensor_path(i));
                continue;
            }
            const std::vector<Write> &ws = it->second;
            // Only well-formed selections take part; the bad ones were reported per operation.
            std::vector<const Write *> valid;
            for (const Write &w : ws)
                if (w.range.rank() == t.range.rank() && t.range.contains(w.range) && coordinates_in_bounds(w.range))
                    valid.push_back(&w);
            if (valid.size() == 1 && valid.front()->range == t.range) continue;  // the common case
            for (size_t a = 0; a < valid.size(); ++a)
                for (size_t b = a + 1; b < valid.size(); ++b) {
                    ZRange both = valid[a]->range.intersect(valid[b]->range);
                    if (both.empty()) continue;
                    const std::string first = g_.operations()[valid[a]->op]->id.value;
                    const std::string second = g_.operations()[valid[b]->op]->id.value;
                    error("write-conflict",
                          "operations '" + first + "' and '" + second + "' both write " + t.id.value + both.to_string(),
                          second, operand_path(valid[b]->op, "outputs", valid[b]->port, valid[b]->operand) + ".range",
                          {first, t.id.value});
                }
            if (valid.size() != ws.size()) continue;
            IndexSet covered(t.range.rank());
            for (const Write *w : valid) covered = covered.unite(IndexSet::of_range(w->range));
            IndexSet missing = IndexSet::of_range(t.range).subtract(covered);
            if (!missing.empty())
                add(Severity::warning, "unproduced-elements",
                    "elements " + missing.bounding_box().to_string() + " of tensor '" + t.id.value + "' " +
                        t.range.to_string() + " are never written (" + count_of(missing.count(), "element") + ")",
                    t.id.value, tensor_path(i));
        }
    }

    // ---- cycles (tensor-level dataflow, as Tapestry's NoTensorOperationCycles) ---
    void check_cycles() {
        const auto &ops = g_.operations();
        std::unordered_map<TensorId, std::vector<size_t>> producers;
        for (size_t j = 0; j < ops.size(); ++j)
            for (const TensorId &t : ops[j]->output_tensors()) producers[t].push_back(j);
        // successors of op j: ops reading what j writes. Built as predecessors then inverted.
        std::vector<std::vector<size_t>> succ(ops.size());
        for (size_t j = 0; j < ops.size(); ++j) {
            std::set<size_t> preds;
            for (const TensorId &t : ops[j]->input_tensors()) {
                auto it = producers.find(t);
                if (it != producers.end()) preds.insert(it->second.begin(), it->second.end());
            }
            for (size_t p : preds) succ[p].push_back(j);
        }
        // Tarjan's strongly connected components, iteratively (graphs may be deep).
        const size_t n = ops.size();
        std::vector<int> index(n, -1), low(n, 0);
        std::vector<bool> on_stack(n, false);
        std::vector<size_t> stack;
        int counter = 0;
        for (size_t root = 0; root < n; ++root) {
            if (index[root] != -1) continue;
            std::vector<std::pair<size_t, size_t>> work{{root, 0}};
            while (!work.empty()) {
                auto &[v, next] = work.back();
                if (next == 0 && index[v] == -1) {
                    index[v] = low[v] = counter++;
                    stack.push_back(v);
                    on_stack[v] = true;
                }
                if (next < succ[v].size()) {
                    size_t w = succ[v][next++];
                    if (index[w] == -1) work.emplace_back(w, 0);
                    else if (on_stack[w]) low[v] = std::min(low[v], index[w]);
                    continue;
                }
                if (low[v] == index[v]) {
                    std::vector<size_t> comp;
                    size_t w;
                    do {
                        w = stack.back();
                        stack.pop_back();
                        on_stack[w] = false;
                        comp.push_back(w);
                    } while (w != v);
                    const bool self_loop = std::find(succ[v].begin(), succ[v].end(), v) != succ[v].end();
                    if (comp.size() > 1 || self_loop) report_cycle(comp);
                }
                const size_t done = v;
                work.pop_back();
                if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
            }
        }
    }

    void report_cycle(std::vector<size_t> comp) {
        std::sort(comp.begin(), comp.end());
        std::string names;
        std::vector<std::string> related;
        for (size_t j : comp) {
            names += (names.empty() ? "'" : ", '") + g_.operations()[j]->id.value + "'";
            related.push_back(g_.operations()[j]->id.value);
        }
        const std::string first = g_.operations()[comp.front()]->id.value;
        error("cycle",
              comp.size() == 1 ? "operation '" + first + "' reads a tensor it writes"
                               : "operations " + names + " form a cycle",
              first, op_path(comp.front()), related);
    }

    const Graph &g_;
    const SignatureSource &lib_;
    ValidationOptions opt_;
    std::vector<Issue> issues_;
    std::set<std::string> shard_ids_;
};

}  // namespace

std::vector<Issue> validate(const Graph &g, const SignatureSource &library, const ValidationOptions &options) {
    return Validator(g, library, options).run();
}

Expected<std::monostate, std::string> require_valid(const Graph &g, const SignatureSource &library) {
    const std::vector<Issue> issues = validate(g, library);
    const Issue *first = nullptr;
    int errors = 0;
    for (const Issue &i : issues) {
        if (i.severity != Severity::error) continue;
        if (!first) first = &i;
        ++errors;
    }
    if (!first) return std::monostate{};
    std::string text = "the graph is invalid: " + format_issue(*first);
    if (errors > 1) text += " (and " + std::to_string(errors - 1) + " more error" + (errors > 2 ? "s" : "") + ")";
    return unexpected(std::move(text));
}

}  // namespace tapestry
