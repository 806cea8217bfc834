#include "edit/editor.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "graph/order.h"
#include "graph/resolve.h"

namespace tapestry::edit {

namespace {

EditError error(std::string code, std::string message) {
    return EditError{std::move(code), std::move(message)};
}

std::string shape_text(const ZPoint &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.coords().size(); ++i) s += (i ? ", " : "") + std::to_string(shape.coords()[i]);
    return s + "]";
}

std::string type_text(DType t, const ZPoint &shape) {
    return std::string(dtype_name(t)) + " " + shape_text(shape);
}

bool id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':' || c == '/' || c == '-';
}

// The port named `port` of a binding list, created when absent.
PortBinding &port_of(std::vector<PortBinding> &ports, const std::string &port) {
    for (PortBinding &b : ports)
        if (b.name == port) return b;
    ports.push_back(PortBinding{port, {}});
    return ports.back();
}

void drop_empty_ports(std::vector<PortBinding> &ports) {
    std::erase_if(ports, [](const PortBinding &b) { return b.selections.empty(); });
}

// Orders an op's ports as the library declares them, so files and diffs are stable.
void sort_ports(std::vector<PortBinding> &ports, const std::vector<PortSpec> &specs) {
    auto rank = [&](const PortBinding &b) {
        for (size_t i = 0; i < specs.size(); ++i)
            if (specs[i].name == b.name) return i;
        return specs.size();
    };
    std::stable_sort(ports.begin(), ports.end(),
                     [&](const PortBinding &a, const PortBinding &b) { return rank(a) < rank(b); });
}

const PortSpec *find_port(const std::vector<PortSpec> &ports, const std::string &name) {
    for (const PortSpec &p : ports)
        if (p.name == name) return &p;
    return nullptr;
}

std::string port_list(const std::vector<PortSpec> &ports) {
    std::string s;
    for (const PortSpec &p : ports) s += (s.empty() ? "" : ", ") + p.name;
    return s;
}

bool all_required_bound(const Operation &op, const OpDef &def) {
    for (const PortSpec &p : def.input_ports()) {
        if (p.optional) continue;
        const PortBinding *b = op.input(p.name);
        if (!b || b->selections.empty()) return false;
    }
    return true;
}

}  // namespace

std::string fresh_id(const Graph &g, std::string_view base) {
    std::string clean;
    for (char c : base) clean += id_char(c) ? c : '_';
    if (clean.empty()) clean = "node";
    if (!g.has_id(clean)) return clean;
    for (int n = 2;; ++n) {
        std::string candidate = clean + "_" + std::to_string(n);
        if (!g.has_id(candidate)) return candidate;
    }
}

Graph extract(const Graph &g, const std::vector<std::string> &ids) {
    std::unordered_set<std::string> wanted(ids.begin(), ids.end());
    for (const std::string &id : ids)
        if (const Operation *op = g.find_op(OpId(id)))
            for (const TensorId &t : op->output_tensors()) wanted.insert(t.str());
    Graph out;
    out.name = g.name;
    for (const TensorPtr &t : g.tensors())
        if (wanted.count(t->id.str())) out.put_tensor(t);
    for (const OpPtr &op : g.operations()) {
        if (!wanted.count(op->id.str())) continue;
        Operation copy = *op;
        for (std::vector<PortBinding> *ports : {&copy.inputs, &copy.outputs}) {
            for (PortBinding &b : *ports)
                std::erase_if(b.selections, [&](const TensorSelection &s) { return !wanted.count(s.tensor.str()); });
            drop_empty_ports(*ports);
        }
        if (copy.inputs != op->inputs || copy.outputs != op->outputs) {
            copy.signature.reset();
            copy.index_space.reset();
            copy.shards.clear();
        }
        out.put_op(std::move(copy));
    }
    return out;
}

std::optional<std::string> content_difference(const Graph &a, const Graph &b, bool with_shards) {
    auto tensor_name = [](const Graph &g, const TensorId &id) {
        const Tensor *t = g.find_tensor(id);
        return t ? t->name : "<missing " + id.str() + ">";
    };
    if (a.tensors().size() != b.tensors().size())
        return "tensor count differs: " + std::to_string(a.tensors().size()) + " vs " +
               std::to_string(b.tensors().size());
    if (a.operations().size() != b.operations().size())
        return "operation count differs: " + std::to_string(a.operations().size()) + " vs " +
               std::to_string(b.operations().size());
    std::map<std::string, const Tensor *> tb;
    for (const TensorPtr &t : b.tensors())
        if (!tb.emplace(t->name, t.get()).second) return "tensor name '" + t->name + "' is not unique";
    for (const TensorPtr &t : a.tensors()) {
        auto it = tb.find(t->name);
        if (it == tb.end()) return "tensor '" + t->name + "' is missing from the second graph";
        const Tensor &u = *it->second;
        if (t->dtype != u.dtype || t->shape() != u.shape())
            return "tensor '" + t->name + "': " + type_text(t->dtype, t->shape()) + " vs " +
                   type_text(u.dtype, u.shape());
        if (t->role != u.role)
            return "tensor '" + t->name + "': role " + std::string(role_name(t->role)) + " vs " +
                   std::string(role_name(u.role));
        const bool same_value = t->value == u.value || (t->value && u.value && *t->value == *u.value);
        if (!same_value) return "tensor '" + t->name + "': values differ";
    }
    // Operations match by what they write (outputs are unique per tensor name).
    auto signature = [&](const Graph &g, const Operation &op) {
        std::string s = op.kind + "|" + op.name + "|";
        for (const auto &[k, v] : op.params.values()) s += k + "=" + param_to_string(v) + ";";
        for (const auto *ports : {&op.inputs, &op.outputs}) {
            s += "|";
            for (const PortBinding &p : *ports) {
                s += p.name + ":";
                for (const TensorSelection &sel : p.selections) s += tensor_name(g, sel.tensor) + ",";
            }
        }
        return s;
    };
    std::map<std::string, const Operation *> ob;
    for (const OpPtr &op : b.operations()) ob.emplace(signature(b, *op), op.get());
    for (const OpPtr &op : a.operations()) {
        auto it = ob.find(signature(a, *op));
        if (it == ob.end()) return "operation '" + op->name + "' (" + signature(a, *op) + ") has no match";
        if (with_shards && op->shards.size() != it->second->shards.size())
            return "operation '" + op->name + "': shard count differs";
    }
    return std::nullopt;
}

Editor::Editor(Graph &g, const OpLibrary &lib) : lib_(lib), rw_(g) {}

GraphDelta Editor::take() {
    return rw_.take();
}

template <typename F>
EditResult Editor::transact(F &&body) {
    const size_t mark = rw_.delta().size();
    const size_t notes_mark = notes_.size();
    EditResult r = body();
    if (!r) {
        rw_.rollback_to(mark);
        notes_.resize(notes_mark);
    }
    return r;
}

EditResult Editor::check_op(const Operation &op) const {
    const OpDef *def = lib_.find(op.kind);
    if (!def) return unexpected(error("unknown-kind", "unknown operation kind '" + op.kind + "'"));
    // Parameter names and types are checked even before the op is connected.
    for (const auto &[name, value] : op.params.values()) {
        bool known = false;
        for (const ParamSpec &spec : def->params())
            if (spec.name == name) known = true;
        if (!known)
            return unexpected(error("bad-param", op.id.str() + ": " + op.kind + " has no parameter '" + name + "'"));
    }
    if (!all_required_bound(op, *def)) {
        // Nothing to derive yet; the types of what is bound are checked when the
        // last required input arrives.
        return Done{};
    }
    auto types = operand_types(rw_.graph(), op);
    if (!types) return unexpected(error("unknown-node", op.id.str() + ": " + types.error().message));
    auto d = lib_.derive(op.kind, op.params, *types);
    if (!d) {
        const std::string &code = d.error().code;
        const bool param = code == "bad-param" || code == "missing-param";
        std::string why = d.error().message;
        if (why.rfind(op.kind + ": ", 0) == 0) why = why.substr(op.kind.size() + 2);
        return unexpected(error(param ? "bad-param" : "incompatible", op.id.str() + " (" + op.kind + "): " + why));
    }
    return Done{};
}

bool Editor::reaches(const OpId &from, const TensorId &target) const {
    // Is `target` computed (transitively) from `from`'s outputs?
    const Graph &g = rw_.graph();
    std::vector<OpId> stack{from};
    std::unordered_set<std::string> seen;
    while (!stack.empty()) {
        const OpId op_id = stack.back();
        stack.pop_back();
        if (!seen.insert(op_id.str()).second) continue;
        const Operation *op = g.find_op(op_id);
        if (!op) continue;
        for (const TensorId &t : op->output_tensors()) {
            if (t == target) return true;
            for (const OpId &c : g.consumers(t)) stack.push_back(c);
        }
    }
    return false;
}

Expected<TensorId, EditError> Editor::add_tensor(const TensorSpec &spec) {
    const Graph &g = rw_.graph();
    if (spec.role != TensorRole::input && spec.role != TensorRole::parameter)
        return unexpected(error("bad-name", "a new tensor is an input or a parameter; outputs come from operations"));
    for (Coord c : spec.shape.coords())
        if (c < 0)
            return unexpected(error("bad-shape", "shape " + shape_text(spec.shape) + " has a negative dimension"));
    std::string id = spec.id.empty() ? fresh_id(g, spec.name.empty() ? "t" : spec.name) : spec.id;
    if (!spec.id.empty() && g.has_id(spec.id))
        return unexpected(error("bad-name", "id '" + spec.id + "' is already used"));
    Tensor t;
    t.id = TensorId(id);
    t.name = spec.name.empty() ? id : spec.name;
    t.dtype = spec.dtype;
    t.range = ZRange::of_shape(spec.shape);
    t.role = spec.role;
    rw_.put_tensor(std::move(t));
    return TensorId(id);
}

Expected<OpId, EditError> Editor::add_operation(const std::string &kind, const std::string &name,
                                                const Params &params) {
    const OpDef *def = lib_.find(kind);
    if (!def) return unexpected(error("unknown-kind", "unknown operation kind '" + kind + "'"));
    Operation op;
    op.id = OpId(fresh_id(rw_.graph(), name.empty() ? kind : name));
    op.name = name.empty() ? op.id.str() : name;
    op.kind = kind;
    op.params = params;
    if (auto ok = check_op(op); !ok) return unexpected(ok.error());
    const OpId id = op.id;
    rw_.put_op(std::move(op));
    infer_from({id.str()});
    return id;
}

EditResult Editor::connect(const TensorId &tensor, const OpId &op_id, const std::string &port) {
    return transact([&]() -> EditResult {
        const Graph &g = rw_.graph();
        const Tensor *t = g.find_tensor(tensor);
        if (!t) return unexpected(error("unknown-node", "no tensor '" + tensor.str() + "'"));
        const Operation *op = g.find_op(op_id);
        if (!op) return unexpected(error("unknown-node", "no operation '" + op_id.str() + "'"));
        const OpDef *def = lib_.find(op->kind);
        if (!def) return unexpected(error("unknown-kind", op_id.str() + ": unknown operation kind '" + op->kind + "'"));
        const std::vector<PortSpec> input_ports = def->input_ports();  // returned by value: keep it alive
        const PortSpec *spec = find_port(input_ports, port);
        if (!spec)
            return unexpected(error("bad-port", op_id.str() + " (" + op->kind + ") has no input port '" + port +
                                                    "'; its inputs are " + port_list(input_ports)));
        if (reaches(op_id, tensor))
            return unexpected(error("cycle", "connecting " + t->name + " to " + op->name + "." + port +
                                                 " would make a cycle: " + t->name + " is computed from " + op->name));
        Operation next = *op;
        PortBinding &b = port_of(next.inputs, port);
        const TensorSelection sel{tensor, t->range};
        if (spec->variadic) {
            b.selections.push_back(sel);
        } else {
            if (b.selections.size() == 1 && b.selections[0] == sel) return Done{};
            b.selections = {sel};
        }
        sort_ports(next.inputs, def->input_ports());
        next.signature.reset();
        next.index_space.reset();
        if (auto ok = check_op(next); !ok) {
            EditError e = ok.error();
            e.message = "cannot connect " + t->name + " (" + type_text(t->dtype, t->shape()) + ") to " + op->name +
                        "." + port + ": " + e.message;
            return unexpected(e);
        }
        if (!next.shards.empty()) {
            notes_.push_back(op->name + ": shards removed because its inputs changed");
            next.shards.clear();
        }
        rw_.put_op(std::move(next));
        std::set<std::string> seeds{op_id.str(), tensor.str()};
        infer_from(seeds);
        return Done{};
    });
}

EditResult Editor::connect_output(const OpId &from, const std::string &out_port, const OpId &to,
                                  const std::string &in_port) {
    const Operation *op = rw_.graph().find_op(from);
    if (!op) return unexpected(error("unknown-node", "no operation '" + from.str() + "'"));
    const PortBinding *b = op->output(out_port);
    if (!b || b->selections.empty())
        return unexpected(error("no-output", op->name + " has no output on '" + out_port +
                                                 "' yet: connect its inputs first, so that its output shape is known"));
    return connect(b->selections.front().tensor, to, in_port);
}

EditResult Editor::disconnect(const OpId &op_id, const std::string &port, int operand) {
    return transact([&]() -> EditResult {
        const Operation *op = rw_.graph().find_op(op_id);
        if (!op) return unexpected(error("unknown-node", "no operation '" + op_id.str() + "'"));
        const PortBinding *b = op->input(port);
        if (!b) return unexpected(error("bad-port", op->name + "." + port + " is not connected"));
        if (operand >= static_cast<int>(b->selections.size()))
            return unexpected(error("bad-port", op->name + "." + port + " has no operand " + std::to_string(operand)));
        Operation next = *op;
        std::set<std::string> seeds{op_id.str()};
        for (PortBinding &nb : next.inputs) {
            if (nb.name != port) continue;
            for (size_t i = 0; i < nb.selections.size(); ++i)
                if (operand < 0 || static_cast<int>(i) == operand) seeds.insert(nb.selections[i].tensor.str());
            if (operand < 0)
                nb.selections.clear();
            else
                nb.selections.erase(nb.selections.begin() + operand);
        }
        drop_empty_ports(next.inputs);
        next.signature.reset();
        next.index_space.reset();
        next.shards.clear();
        rw_.put_op(std::move(next));
        infer_from(seeds);
        return Done{};
    });
}

EditResult Editor::remove(const std::vector<std::string> &ids) {
    return transact([&]() -> EditResult {
        const Graph &g = rw_.graph();
        std::unordered_set<std::string> doomed_ops, doomed_tensors;
        for (const std::string &id : ids) {
            if (g.find_op(OpId(id))) {
                doomed_ops.insert(id);
                for (const TensorId &t : g.find_op(OpId(id))->output_tensors()) doomed_tensors.insert(t.str());
            } else if (g.find_tensor(TensorId(id))) {
                doomed_tensors.insert(id);
            } else {
                return unexpected(error("unknown-node", "no node '" + id + "'"));
            }
        }
        for (const std::string &id : doomed_tensors)
            for (const OpId &p : g.producers(TensorId(id)))
                if (!doomed_ops.count(p.str())) {
                    const Tensor *t = g.find_tensor(TensorId(id));
                    return unexpected(error("inferred", t->name + " is the output of " + g.find_op(p)->name +
                                                            ": delete " + g.find_op(p)->name + " to remove it"));
                }
        std::set<std::string> seeds;
        // Consumers that survive lose the inputs that go away.
        std::vector<OpPtr> ops = g.operations();
        for (const OpPtr &op : ops) {
            if (doomed_ops.count(op->id.str())) continue;
            Operation next = *op;
            bool touched = false;
            for (PortBinding &b : next.inputs)
                touched |= std::erase_if(b.selections, [&](const TensorSelection &s) {
                               return doomed_tensors.count(s.tensor.str()) != 0;
                           }) > 0;
            if (!touched) continue;
            drop_empty_ports(next.inputs);
            next.signature.reset();
            next.index_space.reset();
            next.shards.clear();
            seeds.insert(next.id.str());
            rw_.put_op(std::move(next));
        }
        // Producers of the deleted ops' inputs may become graph outputs.
        for (const std::string &id : doomed_ops)
            for (const TensorId &t : g.find_op(OpId(id))->input_tensors())
                if (!doomed_tensors.count(t.str())) seeds.insert(t.str());
        for (const std::string &id : doomed_ops) rw_.remove_op(OpId(id));
        for (const std::string &id : doomed_tensors) rw_.remove_tensor(TensorId(id));
        for (auto it = seeds.begin(); it != seeds.end();)
            it = rw_.graph().has_id(*it) ? std::next(it) : seeds.erase(it);
        infer_from(seeds);
        return Done{};
    });
}

EditResult Editor::rename(const std::string &id, const std::string &name) {
    if (name.empty() || std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isspace(c); }))
        return unexpected(error("bad-name", "a name cannot be empty"));
    const Graph &g = rw_.graph();
    if (const Tensor *t = g.find_tensor(TensorId(id))) {
        Tensor next = *t;
        next.name = name;
        rw_.put_tensor(std::move(next));
        return Done{};
    }
    if (const Operation *op = g.find_op(OpId(id))) {
        Operation next = *op;
        next.name = name;
        rw_.put_op(std::move(next));
        return Done{};
    }
    return unexpected(error("unknown-node", "no node '" + id + "'"));
}

void Editor::retarget_selections(const TensorId &id, const ZRange &old_range, const ZRange &new_range) {
    // Selections that covered the whole tensor keep covering it; partial ones stay
    // as they were (validation says if they no longer fit).
    std::vector<OpPtr> ops = rw_.graph().operations();
    for (const OpPtr &op : ops) {
        Operation next = *op;
        bool touched = false;
        for (auto *ports : {&next.inputs, &next.outputs})
            for (PortBinding &b : *ports)
                for (TensorSelection &s : b.selections)
                    if (s.tensor == id && s.range == old_range) {
                        s.range = new_range;
                        touched = true;
                    }
        if (!touched) continue;
        next.signature.reset();
        next.index_space.reset();
        if (!next.shards.empty()) {
            notes_.push_back(next.name + ": shards removed because the shape of " + id.str() + " changed");
            next.shards.clear();
        }
        rw_.put_op(std::move(next));
    }
}

EditResult Editor::set_tensor_type(const TensorId &id, DType dtype, const ZPoint &shape) {
    return transact([&]() -> EditResult {
        const Tensor *t = rw_.graph().find_tensor(id);
        if (!t) return unexpected(error("unknown-node", "no tensor '" + id.str() + "'"));
        const auto producers = rw_.graph().producers(id);
        if (!producers.empty())
            return unexpected(error("inferred", t->name + " is computed by " +
                                                    rw_.graph().find_op(producers.front())->name +
                                                    ": its type follows from that operation's inputs"));
        for (Coord c : shape.coords())
            if (c < 0)
                return unexpected(error("bad-shape", "shape " + shape_text(shape) + " has a negative dimension"));
        if (t->dtype == dtype && t->shape() == shape) return Done{};
        Tensor next = *t;
        const ZRange old_range = t->range;
        next.dtype = dtype;
        next.range = ZRange::of_shape(shape);
        if (next.value || next.data) {
            notes_.push_back(t->name + ": its values were dropped: they are " + type_text(t->dtype, t->shape()) +
                             ", the tensor is now " + type_text(dtype, shape) + " (Undo brings them back)");
            next.value.reset();
            next.data.reset();
        }
        const ZRange new_range = next.range;
        rw_.put_tensor(std::move(next));
        retarget_selections(id, old_range, new_range);
        infer_from({id.str()});
        return Done{};
    });
}

EditResult Editor::set_role(const TensorId &id, TensorRole role) {
    const Tensor *t = rw_.graph().find_tensor(id);
    if (!t) return unexpected(error("unknown-node", "no tensor '" + id.str() + "'"));
    const bool produced = !rw_.graph().producers(id).empty();
    const bool source_role = role == TensorRole::input || role == TensorRole::parameter;
    if (produced != !source_role)
        return unexpected(
            error("inferred", produced ? t->name + " is computed by an operation: it is an intermediate or output"
                                       : t->name + " is not computed by any operation: it is an input or a parameter"));
    if (produced)
        return unexpected(error("inferred", t->name + ": whether it is an output follows from its consumers"));
    Tensor next = *t;
    next.role = role;
    rw_.put_tensor(std::move(next));
    return Done{};
}

EditResult Editor::set_params(const OpId &op_id, const Params &params) {
    return transact([&]() -> EditResult {
        const Operation *op = rw_.graph().find_op(op_id);
        if (!op) return unexpected(error("unknown-node", "no operation '" + op_id.str() + "'"));
        Operation next = *op;
        next.params = params;
        next.signature.reset();
        next.index_space.reset();
        if (auto ok = check_op(next); !ok) return unexpected(ok.error());
        if (!op->shards.empty()) {
            // Shards are kept while the index space stays what it was.
            auto before = resolve(rw_.graph(), *op, lib_);
            auto types = operand_types(rw_.graph(), next);
            auto after = types ? lib_.derive(next.kind, next.params, *types)
                               : Expected<Derivation, DerivationError>(unexpected(types.error()));
            if (!before || !after || before->signature.index_space.shape() != after->signature.index_space.shape()) {
                notes_.push_back(op->name + ": shards removed because its index space changed");
                next.shards.clear();
            }
        }
        rw_.put_op(std::move(next));
        infer_from({op_id.str()});
        return Done{};
    });
}

Expected<std::map<std::string, std::string>, EditError> Editor::paste(const Graph &fragment) {
    std::map<std::string, std::string> ids;
    for (const TensorPtr &t : fragment.tensors()) {
        const std::string id = fresh_id(rw_.graph(), t->id.str());
        ids[t->id.str()] = id;
        Tensor copy = *t;
        copy.id = TensorId(id);
        if (copy.role == TensorRole::intermediate || copy.role == TensorRole::output) {
            // Becomes an output of its pasted producer below; a produced tensor
            // without its producer in the fragment is pasted as an input.
            bool has_producer = false;
            for (const OpPtr &op : fragment.operations())
                for (const TensorId &o : op->output_tensors()) has_producer |= o == t->id;
            if (!has_producer) copy.role = TensorRole::input;
        }
        rw_.put_tensor(std::move(copy));
    }
    std::set<std::string> seeds;
    for (const auto &[old_id, new_id] : ids) seeds.insert(new_id);
    for (const OpPtr &op : fragment.operations()) {
        const std::string id = fresh_id(rw_.graph(), op->id.str());
        ids[op->id.str()] = id;
        Operation copy = *op;
        copy.id = OpId(id);
        for (auto *ports : {&copy.inputs, &copy.outputs}) {
            for (PortBinding &b : *ports) {
                std::erase_if(b.selections, [&](const TensorSelection &s) { return !ids.count(s.tensor.str()); });
                for (TensorSelection &s : b.selections) s.tensor = TensorId(ids.at(s.tensor.str()));
            }
            drop_empty_ports(*ports);
        }
        for (Shard &s : copy.shards) {
            const std::string old = s.id.str();
            s.id = ShardId(old.rfind(op->id.str(), 0) == 0 ? id + old.substr(op->id.str().size()) : id + "/" + old);
            s.inputs.clear();
            s.outputs.clear();
        }
        seeds.insert(id);
        rw_.put_op(std::move(copy));
    }
    infer_from(seeds);
    return ids;
}

void Editor::infer_from(std::set<std::string> seeds) {
    // Operations to re-derive: the seeds, the consumers of seed tensors, and
    // everything downstream of an output whose type changes.
    const Graph &g = rw_.graph();
    std::unordered_set<std::string> dirty;
    std::unordered_set<std::string> role_check;  // tensors whose role may follow from consumers
    for (const std::string &s : seeds) {
        if (g.find_op(OpId(s))) {
            dirty.insert(s);
            for (const TensorId &t : g.find_op(OpId(s))->input_tensors()) role_check.insert(t.str());
        } else if (g.find_tensor(TensorId(s))) {
            role_check.insert(s);
            for (const OpId &c : g.consumers(TensorId(s))) dirty.insert(c.str());
        }
    }
    if (dirty.empty() && role_check.empty()) return;
    std::vector<OpId> order;
    for (const Operation *op : dependency_order(g).order) order.push_back(op->id);
    for (const OpId &op_id : order) {
        if (!dirty.count(op_id.str())) continue;
        const Operation *op = rw_.graph().find_op(op_id);
        const OpDef *def = op ? lib_.find(op->kind) : nullptr;
        if (!def || !all_required_bound(*op, *def)) continue;
        auto types = operand_types(rw_.graph(), *op);
        if (!types) continue;
        auto d = lib_.derive(op->kind, op->params, *types);
        if (!d) continue;  // validation shows the error on this node
        Operation next = *op;
        bool op_changed = false;
        struct Retyped {
            TensorId id;
            ZRange old_range, new_range;
        };
        std::vector<Retyped> retyped;
        for (const PortTypes &pt : d->outputs) {
            PortBinding &b = port_of(next.outputs, pt.port);
            for (size_t j = 0; j < pt.operands.size(); ++j) {
                const OperandType &want = pt.operands[j];
                const std::string suffix = pt.operands.size() > 1 ? std::to_string(j) : "";
                if (j >= b.selections.size()) {
                    // A new output tensor, named after the operation and port.
                    Tensor t;
                    t.id = TensorId(fresh_id(rw_.graph(), op->id.str() + "_" + pt.port + suffix));
                    t.name = op->name + "." + pt.port + suffix;
                    t.dtype = want.dtype;
                    t.range = ZRange::of_shape(want.shape);
                    t.role = TensorRole::output;
                    b.selections.push_back(TensorSelection{t.id, t.range});
                    role_check.insert(t.id.str());
                    rw_.put_tensor(std::move(t));
                    op_changed = true;
                    continue;
                }
                TensorSelection &sel = b.selections[j];
                const Tensor *t = rw_.graph().find_tensor(sel.tensor);
                if (!t || (t->dtype == want.dtype && t->shape() == want.shape)) continue;
                // The output's type follows its producer; its consumers re-derive.
                Tensor next_t = *t;
                next_t.dtype = want.dtype;
                next_t.range = ZRange::of_shape(want.shape);
                next_t.value.reset();
                next_t.data.reset();
                retyped.push_back(Retyped{t->id, t->range, next_t.range});
                if (sel.range == t->range) sel.range = next_t.range;
                op_changed = true;
                rw_.put_tensor(std::move(next_t));
                for (const OpId &c : rw_.graph().consumers(sel.tensor)) dirty.insert(c.str());
            }
        }
        if (op_changed) {
            sort_ports(next.outputs, def->output_ports());
            rw_.put_op(std::move(next));
        }
        for (const Retyped &r : retyped) retarget_selections(r.id, r.old_range, r.new_range);
    }
    // Produced tensors: an output when nothing reads them, else intermediate.
    for (const std::string &id : role_check) {
        const Tensor *t = rw_.graph().find_tensor(TensorId(id));
        if (!t || rw_.graph().producers(t->id).empty()) continue;
        const TensorRole want = rw_.graph().consumers(t->id).empty() ? TensorRole::output : TensorRole::intermediate;
        if (t->role == want) continue;
        Tensor next = *t;
        next.role = want;
        rw_.put_tensor(std::move(next));
    }
}

}  // namespace tapestry::edit
