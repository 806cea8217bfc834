// The fusion pass: grow chains from each head along single-consumer edges whose
// shard selections match exactly, check each candidate with the op library and the
// backends it must run on (ops/fusion.h), and replace the chain by one `fused` operation through the
// RecordingRewriter (so the stage diff is exactly the fused heads, the removed
// members and the removed intermediates).
#include "passes/fuse.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "graph/delta.h"
#include "graph/order.h"
#include "graph/resolve.h"
#include "graph/value_chain.h"
#include "ops/fused.h"
#include "ops/fusion.h"

namespace tapestry {
namespace {

struct Piece {
    ZRange index;
    std::string device;
    ShardSelections sel;
};

}  // namespace

struct FuseTables {
    struct Built {
        std::vector<OpPtr> chain;  // held: the key's nodes
        OpPtr fused;               // or null, refused:
        std::string refusal;
    };
    std::map<std::vector<const Operation *>, Built> chains;  // by head, then members
};

FuseMemo::FuseMemo(std::size_t chains) : NodeMemo(chains, std::make_shared<FuseTables>()) {}

namespace {

std::vector<Piece> pieces_of(const Graph &g, const Operation &op, const Signature &abs) {
    std::vector<Piece> out;
    if (op.shards.empty()) {
        out.push_back(Piece{abs.index_space, "", derive_shard_selections(g, op, abs, abs.index_space)});
        return out;
    }
    for (const Shard &s : op.shards) out.push_back(Piece{s.index, s.device, derive_shard_selections(g, op, abs, s.index)});
    return out;
}

const TensorSelection *binding_selection(const std::vector<PortBinding> &bindings, const std::string &port) {
    for (const PortBinding &b : bindings)
        if (b.name == port && !b.selections.empty()) return &b.selections.front();
    return nullptr;
}

std::vector<std::int64_t> row_major_strides(const Graph &g, const TensorId &id) {
    const Tensor *t = g.find_tensor(id);
    if (!t) return {};
    const ZPoint shape = t->shape();
    std::vector<std::int64_t> st(static_cast<size_t>(shape.rank()), 1);
    for (int d = shape.rank() - 2; d >= 0; --d) st[static_cast<size_t>(d)] = st[static_cast<size_t>(d + 1)] * shape[d + 1];
    return st;
}

std::string count_text(const Operation &op) {
    return op.shards.empty() ? std::string("unsharded") : std::to_string(op.shards.size()) + " shards";
}

// The chain under construction.
struct Chain {
    const Operation *head = nullptr;
    std::vector<const Operation *> members;  // after the head
    FusedChain fused;
    std::vector<TensorSelection> head_inputs;
    std::vector<TensorSelection> extras;
    TensorSelection value;                   // the op-level selection of the current value
    std::vector<ZRange> piece_values;         // per head piece, the selection of the current value
    std::vector<TensorId> removed_tensors;
};

class Fuser {
public:
    Fuser(Graph &g, const FuseOptions &o) : rw_(g), options_(o) {
        lib_ = o.library ? o.library : &OpLibrary::standard();
        for (const OpId &id : o.exclude) excluded_.insert(id);
        if (o.memo && o.memo->tables().chains.size() > o.memo->bound()) o.memo->start_over(std::make_shared<FuseTables>());
    }

    Expected<std::monostate, std::string> run() {
        const Graph snapshot = rw_.graph();
        for (const Operation *op : dependency_order(snapshot).order) {
            if (consumed_.count(op->id)) continue;
            auto r = grow(*op);
            if (!r) return unexpected(r.error());
        }
        return std::monostate{};
    }

    GraphDelta take() { return rw_.take(); }
    int pairs() const { return pairs_; }
    const std::vector<std::string> &fused_ops() const { return fused_ops_; }
    const std::vector<std::string> &refusals() const { return refusals_; }

private:
    bool allowed(const Operation &op, bool as_head) const {
        if (excluded_.count(op.id)) return false;
        if (!options_.kinds.empty() &&
            std::find(options_.kinds.begin(), options_.kinds.end(), op.kind) == options_.kinds.end())
            return false;
        const OpDef *def = lib_->find(op.kind);
        return def && (as_head ? fusable_head(*def) : fusable_epilogue(*def) || fusable_tail(*def));
    }

    void refuse(const Operation &from, const std::string &to, const std::string &why) {
        refusals_.push_back(from.id.value + "→" + to + " " + why);
    }

    // The fused operation for `c`: from the memo, or built (and kept).
    Expected<OpPtr, std::string> fused_op(const Chain &c) const {
        auto fresh = [&]() -> Expected<OpPtr, std::string> {
            auto built = build(c);
            if (!built) return unexpected(built.error());
            return std::make_shared<const Operation>(std::move(built).value());
        };
        if (!options_.memo) return fresh();
        std::vector<const Operation *> key{c.head};
        key.insert(key.end(), c.members.begin(), c.members.end());
        auto &chains = options_.memo->tables().chains;
        auto it = chains.find(key);
        options_.memo->note(it != chains.end());
        if (it == chains.end()) {
            FuseTables::Built b;
            for (const Operation *o : key) {
                b.chain.push_back(rw_.graph().op_ptr(o->id));
                if (b.chain.back().get() != o) return fresh();  // not the graph's node: nothing to key on
            }
            auto made = fresh();
            if (made) b.fused = std::move(made).value();
            else b.refusal = made.error();
            it = chains.emplace(std::move(key), std::move(b)).first;
        }
        if (!it->second.fused) return unexpected(it->second.refusal);
        return it->second.fused;
    }

    // Builds the fused operation for `c` (with its members so far), or says why not.
    Expected<Operation, std::string> build(const Chain &c) const {
        const Graph &g = rw_.graph();
        auto params = fused_params(c.fused);
        if (!params) return unexpected(std::string("parameters cannot be written into the chain"));
        Operation f;
        f.id = c.head->id;
        f.name = c.head->name.empty() ? c.head->id.value : c.head->name;
        for (const Operation *m : c.members) f.name += "+" + (m->name.empty() ? m->id.value : m->name);
        f.kind = "fused";
        f.params = std::move(*params);
        PortBinding x{"x", c.head_inputs};
        x.selections.insert(x.selections.end(), c.extras.begin(), c.extras.end());
        f.inputs.push_back(std::move(x));
        f.outputs.push_back(PortBinding{"y", {c.value}});
        f.index_space = c.head->index_space;
        bool stated = false;
        for (const Shard &s : c.head->shards) {
            f.shards.push_back(Shard{s.id, s.index, s.device, {}, {}});
            stated = stated || !s.inputs.empty() || !s.outputs.empty();
        }
        auto abs = resolve(g, f, *lib_);
        if (!abs) return unexpected("the fused op does not derive: " + abs.error().message);
        if (stated)
            for (Shard &s : f.shards) {
                ShardSelections sel = derive_shard_selections(g, f, abs->signature, s.index);
                s.inputs = std::move(sel.inputs);
                s.outputs = std::move(sel.outputs);
            }
        // Ask every backend, once per distinct piece shape.
        const OpDef *def = lib_->find("fused");
        auto types = operand_types(g, f);
        if (!types) return unexpected(types.error().message);
        auto rel = lib_->derive("fused", f.params, *types);
        if (!rel) return unexpected(rel.error().message);
        std::set<std::vector<ZPoint>> seen;
        for (const Piece &p : pieces_of(g, f, abs->signature)) {
            FusedPiece piece;
            piece.def = def;
            piece.params = lib_->with_defaults(*def, f.params);
            piece.derivation = *rel;
            piece.operands = *types;
            piece.index_range = p.index;
            // Views as the executor cuts them: boxes of row-major tensor buffers.
            for (const PortBinding &b : p.sel.inputs)
                for (const TensorSelection &s : b.selections) {
                    piece.input_shapes.push_back(s.range.shape());
                    piece.input_strides.push_back(row_major_strides(g, s.tensor));
                }
            for (const PortBinding &b : p.sel.outputs)
                for (const TensorSelection &s : b.selections) {
                    piece.output_shapes.push_back(s.range.shape());
                    piece.output_strides.push_back(row_major_strides(g, s.tensor));
                }
            std::vector<ZPoint> key = piece.input_shapes;
            for (const auto &st : piece.input_strides) key.push_back(ZPoint(std::vector<Coord>(st.begin(), st.end())));
            key.insert(key.end(), piece.output_shapes.begin(), piece.output_shapes.end());
            if (!seen.insert(key).second) continue;
            for (const FusionBackend *backend : options_.backends)
                if (const std::string why = backend->refusal(piece); !why.empty()) return unexpected(why);
        }
        return f;
    }

    // The chain of `head` alone, or none when it cannot head one.
    Expected<std::optional<Chain>, std::string> start_chain(const Operation &head) const {
        const Graph &g = rw_.graph();
        if (!allowed(head, true)) return std::optional<Chain>();
        const OpDef *hdef = lib_->find(head.kind);
        auto habs = resolve(g, head, *lib_);
        if (!habs) return unexpected("operation '" + head.id.value + "' does not resolve: " + habs.error().message);
        if (head.outputs.size() != 1 || head.outputs[0].selections.size() != 1) return std::optional<Chain>();
        Chain c;
        c.head = &head;
        c.fused.members.push_back(FusedMember{head.kind, head.params, -1});
        c.fused.member_ids.push_back(head.id.value);
        for (const PortSpec &p : hdef->input_ports()) {
            std::int64_t n = 0;
            for (const PortBinding &b : head.inputs)
                if (b.name == p.name) {
                    n += static_cast<std::int64_t>(b.selections.size());
                    c.head_inputs.insert(c.head_inputs.end(), b.selections.begin(), b.selections.end());
                }
            if (n > 1) return std::optional<Chain>();
            c.fused.head_operands.push_back(n);
        }
        c.value = head.outputs[0].selections[0];
        for (const Piece &p : pieces_of(g, head, habs->signature))
            c.piece_values.push_back(p.sel.outputs.at(0).selections.at(0).range);
        return std::optional<Chain>(std::move(c));
    }

    // The consumer `cons` of the chain's value (through `port`), derived.
    struct Consumer {
        const Operation *op = nullptr;
        std::string port;
        Derivation rel;
        Signature abs;
        bool tail = false;  // a normalization tail (softmax, layernorm, rmsnorm): it ends the chain
    };

    // Why `cons` does not read the chain's value in place — "" when it does: an
    // elementwise member reads it through the identity, a normalization tail reads
    // whole rows of it that no piece splits.
    std::string in_place_refusal(const Chain &c, const Consumer &k, const std::string &end_id) const {
        const Graph &g = rw_.graph();
        const std::string &t = c.value.tensor.value;
        const OperandProjection *through = k.rel.signature.input(k.port, 0);
        const TensorSelection *read = binding_selection(k.op->inputs, k.port);
        const bool same_shape = read && k.rel.signature.index_space == ZRange::of_shape(read->range.shape()) &&
                                k.op->outputs[0].selections[0].range.shape() == read->range.shape();
        if (!k.tail) {
            if (!through || !same_shape || !(through->projection == IndexProjection::identity(c.value.range.rank())))
                return "not fused: " + k.op->id.value + " reads " + t + " through a broadcast or a window";
            return {};
        }
        if (k.port != "x" || !through || !same_shape)
            return "not fused: " + k.op->id.value + " does not normalize " + t + " in place";
        // Normalized index dims: those no row of P_x follows. A piece that splits
        // one reads slices other pieces write.
        const ZMatrix &a = through->projection.map().matrix();
        for (const Piece &p : pieces_of(g, *k.op, k.abs))
            for (int d = 0; d < a.cols(); ++d) {
                bool follows = false;
                for (int r = 0; r < a.rows(); ++r) follows = follows || a.at(r, d) != 0;
                if (!follows && p.index.shape()[d] != k.rel.signature.index_space.shape()[d])
                    return "not fused: " + k.op->id.value + " is split along its normalized axis " + std::to_string(d) +
                           " (a shard reads rows other shards of " + end_id + " write)";
            }
        return {};
    }

    // The consumer's pieces matched to the chain's: each reads exactly what one
    // of the chain's pieces writes, on the same device. The values the chain's
    // pieces then hold, or why not.
    Expected<std::vector<ZRange>, std::string> matched_pieces(const Chain &c, const Consumer &k,
                                                              const Operation &end) const {
        const std::vector<Piece> cp = pieces_of(rw_.graph(), *k.op, k.abs);
        std::vector<ZRange> next_values = c.piece_values;
        const TensorSelection *read = binding_selection(k.op->inputs, k.port);
        bool match = cp.size() == c.piece_values.size() && read && read->range == c.value.range;
        bool devices_ok = true;
        std::vector<bool> taken(c.piece_values.size(), false);
        for (size_t j = 0; match && j < cp.size(); ++j) {
            const TensorSelection *r = binding_selection(cp[j].sel.inputs, k.port);
            bool found = false;
            for (size_t i = 0; r && i < c.piece_values.size() && !found; ++i)
                if (!taken[i] && c.piece_values[i] == r->range) {
                    taken[i] = found = true;
                    next_values[i] = cp[j].sel.outputs.at(0).selections.at(0).range;
                    const std::string &hd = c.head->shards.empty() ? std::string() : c.head->shards[i].device;
                    if (!cp[j].device.empty() && cp[j].device != hd) devices_ok = false;
                }
            match = found;
        }
        if (!match)
            return unexpected("selections differ (" + end.id.value + " " + count_text(end) + ", " + k.op->id.value +
                              " " + count_text(*k.op) + ")");
        if (!devices_ok) return unexpected(std::string("not fused: shards placed on different devices"));
        return next_values;
    }

    // `c` with `k` appended, or none when it cannot take it.
    std::optional<Chain> extended(const Chain &c, const Consumer &k, std::vector<ZRange> values) const {
        Chain next = c;
        FusedMember m{k.op->kind, k.op->params, -1};
        if (k.tail) {
            const auto tports = lib_->find(k.op->kind)->input_ports();
            for (size_t p = 1; p < tports.size(); ++p) {
                const TensorSelection *s = binding_selection(k.op->inputs, tports[p].name);
                next.fused.tail_operands.push_back(s ? 1 : 0);
                if (s) next.extras.push_back(*s);
            }
        } else if (k.port != "x") {
            m.chain_port = k.port == "a" ? 0 : 1;
            const TensorSelection *other = binding_selection(k.op->inputs, k.port == "a" ? "b" : "a");
            if (!other) return std::nullopt;
            next.extras.push_back(*other);
        }
        next.fused.members.push_back(m);
        next.fused.member_ids.push_back(k.op->id.value);
        next.members.push_back(k.op);
        next.removed_tensors.push_back(c.value.tensor);
        next.value = k.op->outputs[0].selections[0];
        next.piece_values = std::move(values);
        return next;
    }

    // The consumer the chain `c` (ending at `end`) may take next, or none — with
    // the refusal recorded where one of the allowed ops was turned down.
    Expected<std::optional<Consumer>, std::string> next_consumer(const Chain &c, const Operation &end) {
        const Graph &g = rw_.graph();
        const TensorId &t = c.value.tensor;
        const ChainLink link = next_chain_link(g, t);
        if (link.end == ChainEnd::no_consumer) return std::optional<Consumer>();
        if (link.end == ChainEnd::several_consumers) {
            std::string names;
            bool any = false;
            for (const OpId &id : link.consumers) {
                names += (names.empty() ? "" : ",") + id.value;
                any = any || allowed(*g.find_op(id), false);
            }
            if (any)
                refuse(end, "{" + names + "}",
                       "not fused: " + t.value + " has " + std::to_string(link.consumers.size()) + " consumers");
            return std::optional<Consumer>();
        }
        const Operation &cons = *link.consumer;
        if (!allowed(cons, false) || consumed_.count(cons.id)) return std::optional<Consumer>();
        const std::string &to = cons.id.value;
        switch (link.end) {
            case ChainEnd::graph_output: refuse(end, to, "not fused: " + t.value + " is a graph output"); break;
            case ChainEnd::several_producers: refuse(end, to, "not fused: " + t.value + " has several producers"); break;
            case ChainEnd::not_read_once:
                refuse(end, to, "not fused: " + to + " reads " + t.value + " " + std::to_string(link.uses) + " times");
                break;
            default: break;
        }
        if (link.end != ChainEnd::none || cons.outputs.size() != 1 || cons.outputs[0].selections.size() != 1)
            return std::optional<Consumer>();
        auto ctypes = operand_types(g, cons);
        if (!ctypes) return unexpected("operation '" + to + "' does not resolve: " + ctypes.error().message);
        auto crel = lib_->derive(cons.kind, cons.params, *ctypes);
        auto cabs = resolve(g, cons, *lib_);
        if (!crel || !cabs) return unexpected("operation '" + to + "' does not resolve");
        return std::optional<Consumer>(
            Consumer{&cons, link.port, std::move(*crel), std::move(cabs->signature), fusable_tail(*lib_->find(cons.kind))});
    }

    // Grows the longest chain from `head` that every check and backend accepts,
    // and rewrites it into one fused operation.
    Expected<std::monostate, std::string> grow(const Operation &head) {
        auto start = start_chain(head);
        if (!start) return unexpected(start.error());
        if (!*start) return std::monostate{};
        Chain c = std::move(**start);
        OpPtr fused;
        const Operation *end = &head;
        while (true) {
            auto next = next_consumer(c, *end);
            if (!next) return unexpected(next.error());
            if (!*next) break;
            const Consumer &k = **next;
            if (const std::string why = in_place_refusal(c, k, end->id.value); !why.empty()) {
                refuse(*end, k.op->id.value, why);
                break;
            }
            auto values = matched_pieces(c, k, *end);
            if (!values) {
                refuse(*end, k.op->id.value, values.error());
                break;
            }
            std::optional<Chain> longer = extended(c, k, std::move(*values));
            if (!longer) break;
            auto built = fused_op(*longer);
            if (!built) {
                refuse(*end, k.op->id.value, "not fused: " + built.error());
                break;
            }
            fused = std::move(built).value();
            c = std::move(*longer);
            end = k.op;
            if (k.tail) break;
        }
        if (fused) rewrite(c, std::move(fused));
        return std::monostate{};
    }

    // The head becomes the fused op; members and intermediates go.
    void rewrite(const Chain &c, OpPtr fused) {
        consumed_.insert(c.head->id);
        std::string ids = c.head->id.value;
        std::vector<OpId> members;
        for (const Operation *m : c.members) {
            consumed_.insert(m->id);
            ids += "+" + m->id.value;
            members.push_back(m->id);
        }
        rw_.put_op(std::move(fused));
        for (const OpId &id : members) rw_.remove_op(id);
        for (const TensorId &t : c.removed_tensors) rw_.remove_tensor(t);
        pairs_ += static_cast<int>(members.size());
        fused_ops_.push_back(ids);
    }

    RecordingRewriter rw_;
    const FuseOptions &options_;
    const OpLibrary *lib_ = nullptr;
    std::set<OpId> excluded_;
    std::set<OpId> consumed_;
    int pairs_ = 0;
    std::vector<std::string> fused_ops_;
    std::vector<std::string> refusals_;
};

std::string plural(int n, const char *one, const char *many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

Expected<Stage, std::string> fuse(const Graph &g, const FuseOptions &options) {
    if (options.backends.empty())
        return unexpected(std::string("fuse: no backend to ask which chains it can run (FuseOptions::backends)"));
    Stage stage;
    stage.pass = "fuse";
    stage.input = g;
    if (!options.kinds.empty()) {
        stage.options = "kinds=";
        for (size_t k = 0; k < options.kinds.size(); ++k) stage.options += (k ? "," : "") + options.kinds[k];
    }
    if (!options.exclude.empty()) {
        stage.options += std::string(stage.options.empty() ? "" : " ") + "exclude=";
        for (size_t k = 0; k < options.exclude.size(); ++k) stage.options += (k ? "," : "") + options.exclude[k].value;
    }
    Graph out = g;
    Fuser fuser(out, options);
    auto r = fuser.run();
    if (!r) return unexpected(r.error());
    stage.diff = fuser.take();
    std::string summary;
    const int ops = static_cast<int>(fuser.fused_ops().size());
    if (ops == 0) {
        summary = "nothing fused";
    } else {
        summary = "fused " + plural(fuser.pairs(), "pair", "pairs") + " into " + plural(ops, "op", "ops") + ":";
        // One line a person reads: the first few by name, the rest counted (the stage
        // diff lists every one).
        constexpr size_t kNamed = 6;
        const auto &list = fuser.fused_ops();
        for (size_t k = 0; k < list.size() && k < kNamed; ++k) summary += (k ? ", " : " ") + list[k];
        if (list.size() > kNamed) summary += " and " + std::to_string(list.size() - kNamed) + " more";
    }
    const auto &refused = fuser.refusals();
    if (!refused.empty()) {
        constexpr size_t kNamed = 4;
        summary += "; " + plural(static_cast<int>(refused.size()), "edge", "edges") + " not fused:";
        for (size_t k = 0; k < refused.size() && k < kNamed; ++k) summary += (k ? "; " : " ") + refused[k];
        if (refused.size() > kNamed) summary += "; and " + std::to_string(refused.size() - kNamed) + " more";
    }
    stage.summary = summary;
    stage.graph = std::move(out);
    if (options.certify) stage.certificate = certify(g, stage.graph, *options.certify);
    return stage;
}

}  // namespace tapestry
