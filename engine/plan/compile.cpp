// The plan compiler (plan/compile.h). Boxes only on the common path (the search
// compiles thousands of plans a second); ISL only where reads of one device
// overlap without being equal, to cut their union into disjoint boxes.
#include "plan/compile.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>
#include <set>
#include <unordered_map>

#include "common/checked_size.h"
#include "graph/order.h"
#include "graph/resolve.h"
#include "index/index_set.h"
#include "ops/fused.h"
#include "ops/library.h"
#include "schedule/arena.h"

namespace tapestry::plan {
namespace {

struct Pending {  // a region before buffers exist
    int device;
    int tensor;  // graph tensor index
    ZRange box;  // a box computed here (transfers, collectives) …
    ZRange *ref = nullptr;  // … or one of the pieces' selections, which the plan takes over at the end (copies, when a memo keeps them)
    int buffer = -1;              // set when the buffers are made
    const ZRange &get() const { return ref ? *ref : box; }
};

struct PendingStep {
    Step step;
    std::vector<Pending> reads, writes;
};

struct Piece {
    std::string shard;
    int device = 0;
    ZRange index;
    std::vector<PortBinding> inputs, outputs;
};

const char *class_of(const OpDef &def, const Operation &op) {
    const std::string_view cat = def.category();
    const std::string &kind = op.kind;
    if (kind.find("pool") != std::string::npos) return "reduction";
    if (cat == "linear algebra" || cat == "attention") return "gemm";
    if (cat == "convolution") return "convolution";
    if (cat == "elementwise") return "elementwise";
    if (cat == "reduction" || cat == "normalization") return "reduction";
    if (cat == "fused") {
        auto chain = parse_fused_chain(op.params);
        if (chain && !chain->members.empty()) {
            const OpDef *head = OpLibrary::standard().find(chain->members.front().kind);
            if (head) {
                Operation h;
                h.kind = chain->members.front().kind;
                return class_of(*head, h);
            }
        }
        return "elementwise";
    }
    return "copy";  // shape, embedding, data movement
}

// Whether `piece` is one contiguous run of the row-major layout of `whole`.
bool contiguous_in(const ZRange &piece, const ZRange &whole) {
    int d = 0;
    const int rank = whole.rank();
    while (d < rank && piece.extent(d) == 1) ++d;  // leading unit dims
    if (d < rank) ++d;                             // the one partial dim
    for (; d < rank; ++d)
        if (piece.start()[d] != whole.start()[d] || piece.end()[d] != whole.end()[d]) return false;
    return true;
}

// Disjoint boxes covering the union of `boxes` (duplicates dropped).
std::vector<ZRange> disjoint(std::vector<ZRange> boxes, int rank) {
    std::vector<ZRange> out;
    out.reserve(boxes.size());
    for (ZRange &b : boxes) {
        if (b.empty()) continue;
        if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(std::move(b));
    }
    bool overlap = false;
    for (size_t i = 0; i < out.size() && !overlap; ++i)
        for (size_t j = i + 1; j < out.size() && !overlap; ++j) overlap = schedule::boxes_meet(out[i], out[j]);
    if (!overlap) return out;
    auto cut = IndexSet::of_ranges(rank, out).as_boxes();
    return cut ? *cut : std::vector<ZRange>{IndexSet::of_ranges(rank, out).bounding_box()};
}

// A collective of `move` over `devices` (ascending), its regions still to add.
PendingStep collective_step(const Operation &move, const char *collective, const std::vector<int> &devices, DType dtype) {
    PendingStep s;
    s.step.kind = StepKind::collective;
    s.step.stream = Stream::communication;
    s.step.device = devices.front();
    s.step.participants = devices;
    s.step.op = move.id.value;
    s.step.collective = collective;
    s.step.kernel_class = "copy";
    s.step.dtype = dtype;
    return s;
}

// Whether two boxes have one shape (without building the shapes).
bool same_shape(const ZRange &a, const ZRange &b) {
    if (a.rank() != b.rank()) return false;
    for (int d = 0; d < a.rank(); ++d)
        if (a.extent(d) != b.extent(d)) return false;
    return true;
}

// The box with dim 0 set to [lo, hi).
ZRange with_dim0(const ZRange &r, Coord lo, Coord hi) {
    ZPoint s = r.start(), e = r.end();
    s[0] = lo;
    e[0] = hi;
    return ZRange(s, e);
}

// What add_kernels derives of an op beyond its pieces.
struct Kernels {
    const OpDef *def = nullptr;
    const char *kernel_class = "";
    DType dtype = DType::f32;
    std::vector<std::string> fused;  // a fused op's members
    std::vector<OpCost> costs;       // per piece
};

}  // namespace

struct PieceTables {
    std::vector<std::string> devices;  // the cluster the entries are for
    struct Entry {
        OpPtr op;  // held: the key's node
        std::optional<std::vector<Piece>> pieces;
        std::optional<Kernels> kernels;
    };
    std::unordered_map<const Operation *, Entry> ops;
    std::size_t pieces = 0;  // held by the entries
};

PieceMemo::PieceMemo(std::size_t pieces) : NodeMemo(pieces, std::make_shared<PieceTables>()) {}

namespace {

class Compiler {
public:
    Compiler(const Graph &g, const cost::Model &model, const SignatureSource *signatures, PieceMemo *memo)
        : g_(g), model_(model), lib_(OpLibrary::standard()), sigs_(signatures ? *signatures : lib_), memo_(memo) {
        for (int d = 0; d < model.shape().devices(); ++d) device_index_[model.shape().device_name(d)] = d;
        if (memo_) {
            PieceTables &t = memo_->tables();
            bool same = t.devices.size() == device_index_.size();
            for (size_t d = 0; d < t.devices.size() && same; ++d)
                same = t.devices[d] == model.shape().device_name(static_cast<int>(d));
            if (!same || t.pieces > memo_->bound()) {
                memo_->start_over(std::make_shared<PieceTables>());
                for (int d = 0; d < model.shape().devices(); ++d) memo_->tables().devices.push_back(model.shape().device_name(d));
            }
        }
        for (const OpPtr &op : g.operations()) {
            op->for_each_output_tensor([&](const TensorId &t) {
                auto &v = producers_[t];
                if (v.empty() || v.back() != op.get()) v.push_back(op.get());
            });
            op->for_each_input_tensor([&](const TensorId &t) {
                auto &v = consumers_[t];
                if (v.empty() || v.back() != op.get()) v.push_back(op.get());
            });
        }
    }

    Expected<Plan, std::string> run(const PlanSource &source);

private:
    Expected<int, std::string> device_of(const Operation &op, size_t k) const;
    // Each op's pieces, resolved once.
    Expected<std::vector<Piece> *, std::string> pieces(const Operation &op);
    Expected<std::vector<Piece>, std::string> make_pieces(const Operation &op);
    // What add_kernels needs of `op` beyond its pieces, once per op (or from the memo).
    Expected<const Kernels *, std::string> kernels(const Operation &op, const std::vector<Piece> &pieces);
    Expected<Kernels, std::string> make_kernels(const Operation &op, const std::vector<Piece> &pieces);
    // What is derived of `op`: the memo's entry, or this compile's own (the graph
    // holds its nodes while it lasts).
    PieceTables::Entry &entry(const Operation &op) {
        if (!memo_) return own_.ops[&op];
        PieceTables::Entry &e = memo_->tables().ops[&op];
        if (!e.op) e.op = g_.op_ptr(op.id);
        return e;
    }
    const std::vector<const Operation *> &producers(const TensorId &t) const { return lookup(producers_, t); }
    const std::vector<const Operation *> &consumers(const TensorId &t) const { return lookup(consumers_, t); }
    using Ops = std::vector<const Operation *>;
    static const Ops &lookup(const std::unordered_map<TensorId, Ops> &m, const TensorId &t) {
        static const Ops none;
        const auto it = m.find(t);
        return it == m.end() ? none : it->second;
    }
    Expected<bool, std::string> lower_reduction(const Operation &move, const Operation &reduce);
    Expected<std::monostate, std::string> lower_move(const Operation &move);
    Expected<std::monostate, std::string> add_kernels(const Operation &op);
    void add(PendingStep s) {
        steps_.push_back(std::move(s.step));
        regions_.push_back({std::move(s.reads), std::move(s.writes)});
    }
    int tensor_index(const TensorId &id) const { return g_.tensor_index(id); }
    bool available(int device, int tensor, const ZRange &box) const {
        const auto it = available_.find({device, tensor});
        if (it == available_.end()) return false;
        for (const ZRange &r : it->second)
            if (r.contains(box)) return true;
        return false;
    }

    const Graph &g_;
    const cost::Model &model_;
    const OpLibrary &lib_;
    const SignatureSource &sigs_;  // derivations (lib_ or a memo in front of it)
    std::map<std::string, int> device_index_;
    std::vector<Step> steps_;  // the plan's steps, their regions still pending:
    std::vector<std::pair<std::vector<Pending>, std::vector<Pending>>> regions_;  // (reads, writes) per step
    std::map<std::pair<int, int>, std::vector<ZRange>> available_;  // (device, tensor) → boxes a collective left there
    std::set<std::string> lowered_;                                   // reduces a collective replaced
    std::vector<Pending> outputs_;                                    // graph output pieces
    PieceMemo *memo_ = nullptr;
    PieceTables own_;  // without a memo
    std::unordered_map<TensorId, Ops> producers_, consumers_;  // by operation order
};

Expected<int, std::string> Compiler::device_of(const Operation &op, size_t k) const {
    const int n = model_.shape().devices();
    if (op.shards.empty()) return 0;
    const Shard &s = op.shards[k];
    if (s.device.empty()) {
        if (static_cast<int>(k) >= n)
            return unexpected("operation '" + op.id.value + "' has " + std::to_string(op.shards.size()) +
                              " shards but the cluster has " + std::to_string(n) +
                              " devices: place the stage first (the place pass)");
        return static_cast<int>(k);
    }
    const auto it = device_index_.find(s.device);
    if (it == device_index_.end())
        return unexpected("operation '" + op.id.value + "' shard '" + s.id.value + "' is placed on '" + s.device +
                          "', which the cluster (" + std::to_string(model_.shape().nodes) + " node(s) × " +
                          std::to_string(model_.shape().devices_per_node) + " devices of " + model_.shape().target +
                          ") lacks");
    return it->second;
}

Expected<std::vector<Piece> *, std::string> Compiler::pieces(const Operation &op) {
    PieceTables::Entry &e = entry(op);
    if (memo_) memo_->note(e.pieces.has_value());
    if (!e.pieces) {
        auto made = make_pieces(op);
        if (!made) return unexpected(made.error());
        e.pieces = std::move(made).value();
        if (memo_) memo_->tables().pieces += e.pieces->size() + 1;
    }
    return &*e.pieces;
}

Expected<std::vector<Piece>, std::string> Compiler::make_pieces(const Operation &op) {
    std::vector<Piece> out;
    if (op.shards.empty()) {
        auto d = resolve(g_, op, sigs_);
        if (!d) return unexpected("operation '" + op.id.value + "' does not resolve: " + d.error().message);
        out.push_back(Piece{"", 0, d->signature.index_space, op.inputs, op.outputs});
        return out;
    }
    auto d = resolve(g_, op, sigs_);
    if (!d) return unexpected("operation '" + op.id.value + "' does not resolve: " + d.error().message);
    // Projections are affine: a piece of the same shape as the first reads and
    // writes the first's boxes moved by A·(its start − the first's start) — unless
    // a projection is clipped at its operand's edge.
    bool clipped = false;
    for (const auto *side : {&d->signature.inputs, &d->signature.outputs})
        for (const PortProjections &pp : *side)
            for (const OperandProjection &o : pp.operands) clipped = clipped || o.clipped;
    auto moved = [](const std::vector<PortBinding> &first, const std::vector<PortProjections> &ports, const ZPoint &delta) {
        std::vector<PortBinding> out_side = first;
        for (PortBinding &b : out_side) {
            const PortProjections *pp = nullptr;
            for (const PortProjections &cand : ports)
                if (cand.port == b.name) pp = &cand;
            for (size_t i = 0; i < b.selections.size(); ++i) {
                const ZMatrix &a = pp->operands[i].projection.map().matrix();
                std::vector<Coord> shift(static_cast<size_t>(a.rows()), 0);
                for (int r = 0; r < a.rows(); ++r)
                    for (int c = 0; c < a.cols(); ++c) shift[static_cast<size_t>(r)] += a.at(r, c) * delta[c];
                b.selections[i].range = b.selections[i].range.translated(ZPoint(std::move(shift)));
            }
        }
        return out_side;
    };
    int first = -1;
    for (size_t k = 0; k < op.shards.size(); ++k) {
        auto dev = device_of(op, k);
        if (!dev) return unexpected(dev.error());
        const Shard &s = op.shards[k];
        if (s.index.empty()) continue;
        if (!clipped && first >= 0 && same_shape(s.index, out[static_cast<size_t>(first)].index)) {
            const Piece &f = out[static_cast<size_t>(first)];
            const ZPoint delta = s.index.start() - f.index.start();
            Piece p{s.id.value, *dev, s.index, moved(f.inputs, d->signature.inputs, delta),
                    moved(f.outputs, d->signature.outputs, delta)};
            out.push_back(std::move(p));
            continue;
        }
        ShardSelections sel = derive_shard_selections(g_, op, d->signature, s.index);
        // A plan's regions are boxes: a piece must write exactly the box of each of its
        // output selections (a split of a head's features writes a strided part of the
        // output — the box around it would claim elements another piece writes).
        for (const PortProjections &pp : d->signature.outputs)
            for (size_t i = 0; i < pp.operands.size(); ++i)
                for (const PortBinding &b : sel.outputs)
                    if (b.name == pp.port && i < b.selections.size()) {
                        const ZRange &box = b.selections[i].range;
                        IndexSet exact = IndexSet::of_range(s.index).image(pp.operands[i].projection);
                        if (pp.operands[i].clipped) exact = exact.intersect(IndexSet::of_range(box));
                        const std::int64_t written = exact.count();
                        if (written != box.size())
                            return unexpected("operation '" + op.id.value + "' shard '" + s.id.value + "' writes " +
                                              std::to_string(written) + " strided elements of '" +
                                              b.selections[i].tensor.value + "' inside the box " + box.to_string() +
                                              " of " + std::to_string(box.size()) +
                                              ": a plan's regions are boxes — split the operation along another dim");
                    }
        out.push_back(Piece{s.id.value, *dev, s.index, std::move(sel.inputs), std::move(sel.outputs)});
        if (first < 0) first = static_cast<int>(out.size()) - 1;
    }
    return out;
}

Expected<const Kernels *, std::string> Compiler::kernels(const Operation &op, const std::vector<Piece> &pieces) {
    PieceTables::Entry &e = entry(op);
    if (!e.kernels) {
        auto made = make_kernels(op, pieces);
        if (!made) return unexpected(made.error());
        e.kernels = std::move(made).value();
    }
    return &*e.kernels;
}

Expected<Kernels, std::string> Compiler::make_kernels(const Operation &op, const std::vector<Piece> &pieces) {
    Kernels k;
    k.def = lib_.find(op.kind);
    if (!k.def) return unexpected("operation '" + op.id.value + "': unknown kind '" + op.kind + "'");
    auto types = operand_types(g_, op);
    if (!types) return unexpected("operation '" + op.id.value + "': " + types.error().message);
    auto rel = sigs_.derive(op.kind, op.params, *types);
    if (!rel) return unexpected("operation '" + op.id.value + "': " + rel.error().message);
    if (op.kind == "fused")
        if (auto chain = parse_fused_chain(op.params))
            for (const FusedMember &m : chain->members) k.fused.push_back(m.kind);
    k.kernel_class = class_of(*k.def, op);
    bool clipped = false;
    for (const PortProjections &pp : rel->signature.inputs)
        for (const OperandProjection &o : pp.operands) clipped = clipped || o.clipped;
    for (const TensorId &t : op.output_tensors())
        if (const Tensor *tt = g_.find_tensor(t)) k.dtype = tt->dtype;
    // Pieces of one shape cost the same (projections are affine) unless a read is
    // clipped at the operand's edge: ask the library once per shape.
    std::vector<std::pair<ZRange, OpCost>> by_shape;
    for (const Piece &p : pieces) {
        auto cached = clipped ? by_shape.end() : std::find_if(by_shape.begin(), by_shape.end(), [&](const auto &e) {
            return same_shape(e.first, p.index);
        });
        if (cached == by_shape.end()) {
            by_shape.emplace_back(p.index, lib_.cost(*k.def, op.params, *rel, *types, p.index));
            cached = by_shape.end() - 1;
        }
        k.costs.push_back(cached->second);
    }
    return k;
}

Expected<std::monostate, std::string> Compiler::add_kernels(const Operation &op) {
    auto ps = pieces(op);
    if (!ps) return unexpected(ps.error());
    auto ks = kernels(op, **ps);
    if (!ks) return unexpected(ks.error());
    const Kernels &k = **ks;
    for (size_t i = 0; i < (*ps)->size(); ++i) {
        Piece &p = (**ps)[i];
        PendingStep s;
        s.step.kind = StepKind::kernel;
        s.step.stream = Stream::compute;
        s.step.device = p.device;
        s.step.op = op.id.value;
        s.step.shard = p.shard;
        s.step.op_kind = op.kind;
        s.step.fused = k.fused;
        s.step.kernel_class = k.kernel_class;
        s.step.dtype = k.dtype;
        const OpCost &c = k.costs[i];
        s.step.flops = c.flops;
        s.step.bytes = c.bytes_read + c.bytes_written;
        size_t nin = 0;
        for (const PortBinding &b : p.inputs) nin += b.selections.size();
        s.reads.reserve(nin);
        for (PortBinding &b : p.inputs)
            for (TensorSelection &sel : b.selections)
                if (!sel.range.empty() || sel.range.rank() == 0)
                    s.reads.push_back(Pending{p.device, tensor_index(sel.tensor), {}, &sel.range});
        for (PortBinding &b : p.outputs)
            for (TensorSelection &sel : b.selections) {
                if (sel.range.empty() && sel.range.rank() != 0) continue;
                const Pending w{p.device, tensor_index(sel.tensor), {}, &sel.range};
                s.writes.push_back(w);
                const Tensor *t = g_.find_tensor(sel.tensor);
                if (t && t->role == TensorRole::output) outputs_.push_back(w);
            }
        add(std::move(s));
    }
    return std::monostate{};
}

// move(partials) → reduce_sum over axis 0: one all_reduce or reduce_scatter per
// group of devices holding the partials of one output box. False when the
// pattern does not hold (the caller lowers the move and the reduce as usual).
Expected<bool, std::string> Compiler::lower_reduction(const Operation &move, const Operation &reduce) {
    if (reduce.kind != "reduce_sum") return false;
    const PortBinding *x = move.input("x");
    const PortBinding *y = move.output("y");
    const PortBinding *rx = reduce.input("x");
    if (!x || !y || !rx || rx->selections.size() != 1 || rx->selections[0].tensor != y->selections[0].tensor)
        return false;
    const std::vector<const Operation *> &writers_of_t = producers(x->selections[0].tensor);
    if (writers_of_t.size() != 1) return false;
    const Operation &producer = *writers_of_t.front();
    // The partials of a split contraction: [parts, *y], summed over axis 0.
    if (producer.kind != "partial_matmul" || reduce.params.get_ints("axes", {}) != std::vector<std::int64_t>{0} ||
        reduce.params.get_bool("keepdims", true))
        return false;
    auto writer_pieces = pieces(producer);
    if (!writer_pieces) return unexpected(writer_pieces.error());
    auto reader_pieces = pieces(reduce);
    if (!reader_pieces) return unexpected(reader_pieces.error());
    const int t_index = tensor_index(x->selections[0].tensor);
    const ZRange t_range = x->selections[0].range;
    if (t_range.rank() < 1) return false;
    const ZPoint shift = x->selections[0].range.start() - y->selections[0].range.start();
    // The partials each piece writes, grouped by the output box they add up to.
    struct Group {
        ZRange rest;  // the box with dim 0 spanning every partial
        std::vector<std::pair<int, ZRange>> writes;  // (device, box)
        Coord covered = 0;
    };
    std::vector<Group> groups;
    for (const Piece &p : **writer_pieces)
        for (const PortBinding &b : p.outputs)
            for (const TensorSelection &sel : b.selections) {
                if (tensor_index(sel.tensor) != t_index || sel.range.empty()) continue;
                const ZRange rest = with_dim0(sel.range, t_range.start()[0], t_range.end()[0]);
                auto it = std::find_if(groups.begin(), groups.end(), [&](const Group &gr) { return gr.rest == rest; });
                if (it == groups.end()) {
                    groups.push_back(Group{rest, {}, 0});
                    it = groups.end() - 1;
                }
                for (const auto &[dev, box] : it->writes)
                    if (dev == p.device) return false;  // two partials on one device: not a collective
                it->writes.emplace_back(p.device, sel.range);
                it->covered += sel.range.extent(0);
            }
    const TensorId z_id = reduce.output("y") && reduce.output("y")->selections.size() == 1
                              ? reduce.output("y")->selections[0].tensor
                              : TensorId("");
    const int z_index = tensor_index(z_id);
    if (z_index < 0) return false;
    struct Reader {
        int device;
        ZRange read;    // in T coordinates
        ZRange output;  // in Z coordinates
    };
    std::vector<Reader> readers;
    for (const Piece &p : **reader_pieces) {
        if (p.inputs.empty() || p.outputs.empty()) return false;
        const ZRange read = p.inputs.front().selections.front().range.translated(shift);
        readers.push_back(Reader{p.device, read, p.outputs.front().selections.front().range});
    }
    std::vector<PendingStep> planned;
    for (const Group &gr : groups) {
        if (gr.covered != t_range.extent(0)) return false;  // not every partial of this box
        std::vector<const Reader *> mine;
        Coord rest_points = 0;
        for (const Reader &r : readers)
            if (schedule::boxes_meet(r.read, gr.rest)) {
                if (!gr.rest.contains(r.read)) return false;
                mine.push_back(&r);
                rest_points += r.read.size();
            }
        if (mine.empty() || rest_points != gr.rest.size()) return false;
        std::vector<int> devices;
        for (const auto &[dev, box] : gr.writes) devices.push_back(dev);
        std::sort(devices.begin(), devices.end());
        const bool scatter = mine.size() > 1;
        std::set<int> reader_devices;
        for (const Reader *r : mine) {
            if (!std::binary_search(devices.begin(), devices.end(), r->device)) return false;
            if (!reader_devices.insert(r->device).second) return false;
        }
        if (scatter && mine.size() != devices.size()) return false;
        const Tensor *z = g_.find_tensor(z_id);
        PendingStep s = collective_step(move, scatter ? "reduce_scatter" : "all_reduce", devices, z->dtype);
        s.step.shard = reduce.id.value;
        const double elem = dtype_bytes(z->dtype);
        s.step.bytes = static_cast<double>(mine.size() == 1 ? mine.front()->output.size() : gr.rest.size() / t_range.extent(0)) * elem;
        for (const auto &[dev, box] : gr.writes) s.reads.push_back(Pending{dev, t_index, box});
        for (const Reader *r : mine) {
            if (scatter) {
                s.writes.push_back(Pending{r->device, z_index, r->output});
            } else {
                for (int d : devices) s.writes.push_back(Pending{d, z_index, r->output});
            }
        }
        planned.push_back(std::move(s));
    }
    for (PendingStep &s : planned) {
        for (const Pending &w : s.writes) available_[{w.device, w.tensor}].push_back(w.get());
        add(std::move(s));
    }
    // The output pieces: each reduce piece's own device.
    if (const Tensor *z = g_.find_tensor(z_id); z && z->role == TensorRole::output)
        for (const Reader &r : readers) outputs_.push_back(Pending{r.device, z_index, r.output});
    lowered_.insert(reduce.id.value);
    return true;
}

Expected<std::monostate, std::string> Compiler::lower_move(const Operation &move) {
    const PortBinding *x = move.input("x");
    const PortBinding *y = move.output("y");
    if (!x || !y || x->selections.size() != 1 || y->selections.size() != 1)
        return unexpected("move '" + move.id.value + "' must read one selection and write one");
    const TensorId t_id = x->selections[0].tensor, y_id = y->selections[0].tensor;
    const int t_index = tensor_index(t_id), y_index = tensor_index(y_id);
    const Tensor *t = g_.find_tensor(t_id);
    if (!t || y_index < 0) return unexpected("move '" + move.id.value + "' names a tensor the graph lacks");
    const ZPoint shift = x->selections[0].range.start() - y->selections[0].range.start();
    const ZPoint back = ZPoint::zeros(shift.rank()) - shift;
    const bool shifted = shift != ZPoint::zeros(shift.rank());
    const std::string collective = move.params.get_string("collective", "");
    const std::vector<const Operation *> &readers_of_y = consumers(y_id);
    // Partials summed by a reduce_sum: collectives, whatever the move was labelled
    // (a batch-split product is labelled send_recv, yet reduces within groups).
    if (readers_of_y.size() == 1) {
        auto done = lower_reduction(move, *readers_of_y.front());
        if (!done) return unexpected(done.error());
        if (*done) return std::monostate{};
    }
    // What each device reads of the moved tensor (in the source tensor's coordinates).
    std::map<int, std::vector<ZRange>> need;
    for (const Operation *reader : readers_of_y) {
        auto ps = pieces(*reader);
        if (!ps) return unexpected(ps.error());
        for (const Piece &p : **ps)
            for (const PortBinding &b : p.inputs)
                for (const TensorSelection &sel : b.selections)
                    if (sel.tensor == y_id && !sel.range.empty())
                        need[p.device].push_back(shifted ? sel.range.translated(shift) : sel.range);
    }
    // Who wrote which box of the source.
    std::vector<std::pair<int, const ZRange *>> writes;  // (device, box): boxes of the cached pieces, or of `need`
    // Every producer's pieces: a tensor may have several (the partials of a split
    // reduction whose parts are ops of their own each write a slice).
    const std::vector<const Operation *> &writers_of_t = producers(t_id);
    for (const Operation *w : writers_of_t) {
        auto ps = pieces(*w);
        if (!ps) return unexpected(ps.error());
        for (const Piece &p : **ps)
            for (const PortBinding &b : p.outputs)
                for (const TensorSelection &sel : b.selections)
                    if (sel.tensor == t_id && !sel.range.empty()) writes.emplace_back(p.device, &sel.range);
    }
    if (writers_of_t.empty()) {
        // An input or parameter: every device holds what it reads (loaded before the plan starts).
        for (const auto &[dev, boxes] : need)
            for (const ZRange &b : boxes) writes.emplace_back(dev, &b);
    }
    const double elem = dtype_bytes(t->dtype);
    std::set<int> done;
    // Each device's reads as disjoint boxes (`need` stays as it is: `writes` may point into it).
    std::map<int, std::vector<ZRange>> cut;
    for (const auto &[dev, boxes] : need) cut[dev] = disjoint(boxes, t->range.rank());
    // All-gathers: devices needing the same single box, written there as equal
    // contiguous pieces, one per device.
    if (collective == "all_gather") {
        std::map<std::pair<ZPoint, ZPoint>, std::vector<int>> by_box;
        for (const auto &[dev, boxes] : cut)
            if (boxes.size() == 1) by_box[{boxes[0].start(), boxes[0].end()}].push_back(dev);
        for (const auto &[key, devs] : by_box) {
            if (devs.size() < 2) continue;
            const ZRange box(key.first, key.second);
            std::vector<std::pair<int, const ZRange *>> inside;
            bool ok = true;
            for (const auto &w : writes)
                if (schedule::boxes_meet(*w.second, box)) {
                    if (!box.contains(*w.second) || !contiguous_in(*w.second, box)) ok = false;
                    inside.push_back(w);
                }
            std::vector<int> writers;
            Coord points = 0;
            for (const auto &w : inside) {
                writers.push_back(w.first);
                points += w.second->size();
                if (w.second->size() != inside.front().second->size()) ok = false;
            }
            std::sort(writers.begin(), writers.end());
            ok = ok && points == box.size() && std::adjacent_find(writers.begin(), writers.end()) == writers.end() &&
                 writers == devs;
            if (!ok) continue;
            PendingStep s = collective_step(move, "all_gather", devs, t->dtype);
            s.step.bytes = static_cast<double>(box.size()) * elem;
            for (const auto &w : inside) s.reads.push_back(Pending{w.first, t_index, *w.second});
            for (int d : devs) s.writes.push_back(Pending{d, y_index, shifted ? box.translated(back) : box});
            add(std::move(s));
            done.insert(devs.begin(), devs.end());
        }
    }
    // The rest: one transfer per (reader, writer) overlap. A box one device sends
    // to two or more others becomes one broadcast from it.
    struct Transfer {
        int dev, src;
        ZRange part;
        bool local;
    };
    std::vector<Transfer> transfers;
    for (const auto &[dev, boxes] : cut) {
        if (done.count(dev)) continue;
        for (const ZRange &r : boxes)
            for (const auto &[src, wbox] : writes) {
                if (!schedule::boxes_meet(*wbox, r)) continue;
                ZRange part = wbox->intersect(r);
                const bool local = src == dev || available(dev, t_index, part);
                transfers.push_back(Transfer{dev, src, std::move(part), local});
            }
    }
    // Sends of one box from one device, grouped: sorted by (sender, box), then runs.
    std::vector<size_t> sends;
    for (size_t i = 0; i < transfers.size(); ++i)
        if (!transfers[i].local) sends.push_back(i);
    auto key_less = [&](size_t a, size_t b) {
        const Transfer &p = transfers[a], &q = transfers[b];
        if (p.src != q.src) return p.src < q.src;
        if (p.part.start() != q.part.start()) return p.part.start() < q.part.start();
        if (p.part.end() != q.part.end()) return p.part.end() < q.part.end();
        return a < b;
    };
    std::vector<bool> broadcast(transfers.size(), false);
    if (sends.size() >= 2) std::sort(sends.begin(), sends.end(), key_less);
    for (size_t lo = 0; lo < sends.size();) {
        const Transfer &first = transfers[sends[lo]];
        size_t hi = lo + 1;
        while (hi < sends.size() && transfers[sends[hi]].src == first.src && transfers[sends[hi]].part == first.part) ++hi;
        if (hi - lo >= 2) {
            std::vector<int> devs{first.src};
            for (size_t k = lo; k < hi; ++k) devs.push_back(transfers[sends[k]].dev);
            std::sort(devs.begin(), devs.end());
            PendingStep s = collective_step(move, "broadcast", devs, t->dtype);
            s.step.device = first.src;  // the root
            s.step.bytes = static_cast<double>(first.part.size()) * elem;
            s.reads.push_back(Pending{first.src, t_index, first.part});
            for (size_t k = lo; k < hi; ++k) {
                const Transfer &to = transfers[sends[k]];
                s.writes.push_back(Pending{to.dev, y_index, shifted ? to.part.translated(back) : to.part});
                broadcast[sends[k]] = true;
            }
            add(std::move(s));
        }
        lo = hi;
    }
    for (size_t i = 0; i < transfers.size(); ++i) {
        if (broadcast[i]) continue;
        auto &[dev, src, part, local] = transfers[i];
        PendingStep s;
        s.step.kind = local ? StepKind::copy : StepKind::send_recv;
        s.step.stream = local ? Stream::compute : Stream::communication;
        s.step.device = local ? dev : src;
        s.step.peer = local ? -1 : dev;
        s.step.op = move.id.value;
        s.step.collective = local ? "" : "send_recv";
        s.step.kernel_class = "copy";
        s.step.dtype = t->dtype;
        s.step.bytes = static_cast<double>(part.size()) * elem;
        s.writes.push_back(Pending{dev, y_index, shifted ? part.translated(back) : part});
        s.reads.push_back(Pending{local ? dev : src, t_index, std::move(part)});
        add(std::move(s));
    }
    return std::monostate{};
}

// Kernel workspace: a device whose kernels take workspace (the target's figure for
// their class) gets one buffer of the largest such figure, alive from the device's
// first step to its last — backends allocate it once, so no other buffer shares
// its bytes and no dependency is needed for it.
void add_workspace(Plan &plan, const cost::Model &model) {
    const auto &figures = model.target().device.workspace;
    const size_t n = plan.devices.size();
    std::vector<std::int64_t> bytes(n, 0);
    std::vector<int> first(n, -1), last(n, -1);
    auto span = [&](int d, int i) {
        const size_t k = static_cast<size_t>(d);
        if (first[k] < 0) first[k] = i;
        last[k] = i;
    };
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const Step &s = plan.steps[i];
        const int at = static_cast<int>(i);
        if (s.kind == StepKind::collective) {
            for (int d : s.participants) span(d, at);
            continue;
        }
        span(s.device, at);
        if (s.peer >= 0) span(s.peer, at);
        if (s.kind != StepKind::kernel) continue;
        const auto c = cost::parse_kernel_class(s.kernel_class);
        if (!c) continue;
        const cost::Figure &f = figures[static_cast<size_t>(*c)];
        if (f.present) bytes[static_cast<size_t>(s.device)] = std::max(bytes[static_cast<size_t>(s.device)], static_cast<std::int64_t>(f.value));
    }
    for (size_t d = 0; d < n; ++d) {
        if (bytes[d] <= 0) continue;
        Buffer b;
        b.device = static_cast<int>(d);
        b.region = ZRange::of_shape({bytes[d]});
        b.dtype = DType::boolean;
        b.bytes = bytes[d];
        b.kind = BufferKind::workspace;
        b.first = first[d];
        b.last = last[d];
        plan.buffers.push_back(std::move(b));
    }
}

// Each step's reads and writes as schedule::conflict_dependencies takes them.
std::vector<std::vector<schedule::Access>> step_accesses(const Plan &plan) {
    std::vector<std::vector<schedule::Access>> accesses(plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        accesses[i].reserve(plan.steps[i].reads.size() + plan.steps[i].writes.size());
        for (const Region &r : plan.steps[i].reads) accesses[i].push_back(schedule::Access{r.buffer, &r.box, false, -1});
        for (const Region &r : plan.steps[i].writes) accesses[i].push_back(schedule::Access{r.buffer, &r.box, true, -1});
    }
    return accesses;
}

// Lifetimes in plan order, the kernel workspace, arena offsets per device, then
// dependencies (including those between buffers that share arena bytes) and each
// device's steps — once, when the steps are in their final order.
void lay_out(Plan &plan, const cost::Model &model) {
    const int n = static_cast<int>(plan.devices.size());
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        auto live = [&](const Region &r) {
            Buffer &b = plan.buffers[static_cast<size_t>(r.buffer)];
            if (b.first < 0) b.first = static_cast<int>(i);
            b.last = static_cast<int>(i);
        };
        for (const Region &r : plan.steps[i].reads) live(r);
        for (const Region &r : plan.steps[i].writes) live(r);
    }
    add_workspace(plan, model);
    std::vector<std::vector<int>> aliases(plan.buffers.size());
    std::vector<std::vector<int>> on_device(static_cast<size_t>(n));
    for (size_t b = 0; b < plan.buffers.size(); ++b) on_device[static_cast<size_t>(plan.buffers[b].device)].push_back(static_cast<int>(b));
    for (int d = 0; d < n; ++d) {
        Device &device = plan.devices[static_cast<size_t>(d)];
        std::vector<int> arena;
        std::vector<schedule::Interval> intervals;
        for (int b : on_device[static_cast<size_t>(d)]) {
            const Buffer &buf = plan.buffers[static_cast<size_t>(b)];
            if (!buf.in_arena()) {
                device.resident_bytes = size_add(device.resident_bytes, buf.bytes);
                continue;
            }
            arena.push_back(b);
            intervals.push_back(schedule::Interval{static_cast<std::size_t>(buf.bytes), buf.first, buf.last});
        }
        const schedule::Packing packing = schedule::pack_intervals(intervals);
        device.arena_bytes = static_cast<std::int64_t>(packing.total);
        for (size_t k = 0; k < arena.size(); ++k)
            plan.buffers[static_cast<size_t>(arena[k])].offset = static_cast<std::int64_t>(packing.offsets[k]);
        // A buffer reusing bytes waits for the buffers that used them before (through its writes).
        const std::vector<std::vector<int>> before = schedule::reuse_predecessors(intervals, packing);
        for (size_t k = 0; k < arena.size(); ++k)
            for (int j : before[k]) aliases[static_cast<size_t>(arena[k])].push_back(arena[static_cast<size_t>(j)]);
    }
    std::vector<std::vector<int>> deps = schedule::conflict_dependencies(step_accesses(plan), aliases);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        Step &s = plan.steps[i];
        s.deps = std::move(deps[i]);
        if (s.kind == StepKind::collective) {
            for (int d : s.participants) plan.devices[static_cast<size_t>(d)].steps.push_back(static_cast<int>(i));
        } else {
            plan.devices[static_cast<size_t>(s.device)].steps.push_back(static_cast<int>(i));
            if (s.peer >= 0 && s.peer != s.device)
                plan.devices[static_cast<size_t>(s.peer)].steps.push_back(static_cast<int>(i));
        }
    }
}

// The steps by when they can start (StepOrder::ready): a list schedule over the
// data dependencies alone (the arena's reuse follows the order, so it cannot lead
// it), every device with a compute and a communication stream as the simulation
// has them (for_each_stream); the ready step that can start first goes next, on
// a tie the deepest (the longest chain of dependencies behind it: a chain goes on
// before another begins), then plan order (one op's micro-batches in their
// order). The steps sorted by their start in that schedule are a topological
// order (a step starts no earlier than its inputs end; a step of no duration
// sorts after its inputs by plan order), and the plan is laid out in it.
void order_by_readiness(Plan &plan, const cost::Model &model) {
    const size_t n = plan.steps.size();
    if (n < 2) return lay_out(plan, model);
    const std::vector<std::vector<int>> deps = schedule::conflict_dependencies(step_accesses(plan), {});
    std::vector<std::vector<int>> next(n);
    std::vector<int> waiting(n, 0), depth(n, 0);
    for (size_t j = 0; j < n; ++j) {
        waiting[j] = static_cast<int>(deps[j].size());
        for (int i : deps[j]) {
            next[static_cast<size_t>(i)].push_back(static_cast<int>(j));
            depth[j] = std::max(depth[j], depth[static_cast<size_t>(i)] + 1);
        }
    }
    const size_t devices = plan.devices.size();
    std::vector<double> free(2 * devices, 0);  // per device: compute, then communication
    auto streams = [&](const Step &s, auto &&f) {
        for_each_stream(s, [&](int d, Stream stream) {
            f(free[(stream == Stream::compute ? 0 : devices) + static_cast<size_t>(d)]);
        });
    };
    std::vector<double> ready(n, 0), start(n, 0);
    auto earliest = [&](size_t j) {
        double t = ready[j];
        streams(plan.steps[j], [&](double f) { t = std::max(t, f); });
        return t;
    };
    // (start, −depth, index): the smallest first. A key goes stale when a stream it
    // waits for is taken; it is looked at again when it comes up (starts only grow).
    using Key = std::tuple<double, int, size_t>;
    std::priority_queue<Key, std::vector<Key>, std::greater<>> queue;
    for (size_t j = 0; j < n; ++j)
        if (waiting[j] == 0) queue.emplace(earliest(j), -depth[j], j);
    while (!queue.empty()) {
        const auto [key, deeper, j] = queue.top();
        queue.pop();
        const double t = earliest(j);
        if (t > key) {
            queue.emplace(t, deeper, j);
            continue;
        }
        start[j] = t;
        const double end = t + plan.steps[j].predicted;
        streams(plan.steps[j], [&](double &f) { f = end; });
        for (int k : next[j]) {
            const size_t s = static_cast<size_t>(k);
            ready[s] = std::max(ready[s], end);
            if (--waiting[s] == 0) queue.emplace(earliest(s), -depth[s], s);
        }
    }
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return start[a] < start[b]; });
    bool same = true;
    for (size_t i = 0; i < n && same; ++i) same = order[i] == i;
    if (!same) {
        std::vector<Step> steps;
        steps.reserve(n);
        for (size_t i : order) steps.push_back(std::move(plan.steps[i]));
        plan.steps = std::move(steps);
    }
    lay_out(plan, model);
}

// ---- slices as views ---------------------------------------------------------------------

// Whether the slice operation `op` is a translation: every step 1, so its output
// is a box of its input moved by a constant offset (ONNX steps may skip or run
// backwards, which no box of the input is).
bool slice_is_translation(const Graph &g, const std::string &op) {
    const Operation *o = g.find_op(OpId(op));
    if (o == nullptr) return false;
    const std::vector<std::int64_t> steps = o->params.get_ints("steps", {});
    return std::all_of(steps.begin(), steps.end(), [](std::int64_t s) { return s == 1; });
}

// Drops the buffers no step touches and no output names, renumbering the rest.
void drop_untouched_buffers(Plan &plan) {
    std::vector<char> used(plan.buffers.size(), 0);
    for (const Step &s : plan.steps) {
        for (const Region &r : s.reads) used[static_cast<size_t>(r.buffer)] = 1;
        for (const Region &r : s.writes) used[static_cast<size_t>(r.buffer)] = 1;
    }
    for (const OutputPiece &o : plan.outputs) used[static_cast<size_t>(o.buffer)] = 1;
    std::vector<int> renumbered(plan.buffers.size(), -1);
    std::vector<Buffer> kept;
    kept.reserve(plan.buffers.size());
    for (size_t b = 0; b < plan.buffers.size(); ++b)
        if (used[b]) {
            renumbered[b] = static_cast<int>(kept.size());
            kept.push_back(std::move(plan.buffers[b]));
        }
    if (kept.size() == plan.buffers.size()) return;
    plan.buffers = std::move(kept);
    for (Step &s : plan.steps) {
        for (Region &r : s.reads) r.buffer = renumbered[static_cast<size_t>(r.buffer)];
        for (Region &r : s.writes) r.buffer = renumbered[static_cast<size_t>(r.buffer)];
    }
    for (OutputPiece &o : plan.outputs) o.buffer = renumbered[static_cast<size_t>(o.buffer)];
}

// On a GPU target a slice that is a translation is not copied: each kernel step
// on its device that reads (a box of) its output reads the box of its input in
// place instead — a strided view, which every backend makes of any box of a
// buffer — and the slice's step and buffer go when nothing else reads it. The
// q/k/v slices of a fused QKV product are the case that matters (docs/plans.md,
// "Slices as views"). Runs before lifetimes and arena offsets, so the input's
// buffer lives until its last reader.
void forward_slices(Plan &plan, const Graph &g) {
    const size_t nb = plan.buffers.size();
    std::vector<int> writers(nb, 0);
    std::vector<std::vector<int>> slices(nb);  // per buffer: the translating slice steps writing it
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const Step &s = plan.steps[i];
        for (const Region &w : s.writes) writers[static_cast<size_t>(w.buffer)]++;
        if (s.kind != StepKind::kernel || s.op_kind != "slice" || s.reads.size() != 1 || s.writes.size() != 1) continue;
        const Buffer &from = plan.buffers[static_cast<size_t>(s.reads[0].buffer)];
        const Buffer &to = plan.buffers[static_cast<size_t>(s.writes[0].buffer)];
        if (to.kind != BufferKind::activation || from.device != to.device || from.dtype != to.dtype) continue;
        if (s.reads[0].box.shape() != s.writes[0].box.shape() || !slice_is_translation(g, s.op)) continue;
        slices[static_cast<size_t>(s.writes[0].buffer)].push_back(static_cast<int>(i));
    }
    // Only a buffer that translating slices alone write: every element read was copied.
    std::vector<char> eligible(nb, 0);
    bool some = false;
    for (size_t y = 0; y < nb; ++y) {
        eligible[y] = !slices[y].empty() && writers[y] == static_cast<int>(slices[y].size());
        some = some || eligible[y];
    }
    if (!some) return;
    std::vector<int> kept_readers(nb, 0);
    bool any = false;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        Step &c = plan.steps[i];
        for (Region &r : c.reads) {
            const size_t y = static_cast<size_t>(r.buffer);
            if (!eligible[y]) continue;
            // The earlier slice on this kernel's device that wrote every element read.
            int source = -1;
            if (c.kind == StepKind::kernel && c.device == plan.buffers[y].device)
                for (int k : slices[y])
                    if (k < static_cast<int>(i) && plan.steps[static_cast<size_t>(k)].writes[0].box.contains(r.box)) {
                        source = k;
                        break;
                    }
            if (source < 0) {
                ++kept_readers[y];
                continue;
            }
            const Step &slice = plan.steps[static_cast<size_t>(source)];
            r = Region{slice.reads[0].buffer, r.box.translated(slice.reads[0].box.start() - slice.writes[0].box.start()),
                       plan.buffers[y].tensor, r.box};
            any = true;
        }
    }
    std::vector<char> drop(plan.steps.size(), 0);
    for (size_t y = 0; y < nb; ++y)
        if (eligible[y] && kept_readers[y] == 0)
            for (int k : slices[y]) drop[static_cast<size_t>(k)] = 1;
    if (!any) return;
    std::vector<Step> steps;
    steps.reserve(plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i)
        if (!drop[i]) steps.push_back(std::move(plan.steps[i]));
    plan.steps = std::move(steps);
    drop_untouched_buffers(plan);
}

Expected<Plan, std::string> Compiler::run(const PlanSource &source) {
    const DependencyOrder order = dependency_order(g_);
    if (!order.cyclic.empty())
        return unexpected("the graph has a cycle through '" + order.cyclic.front()->id.value + "'");
    size_t pieces_total = 0;
    for (const Operation *op : order.order) pieces_total += std::max<size_t>(1, op->shards.size());
    steps_.reserve(pieces_total * 2);
    regions_.reserve(pieces_total * 2);  // kernels, and about as many copies and transfers at most on the usual plans
    for (const Operation *op : order.order) {
        if (op->kind == "move") {
            auto r = lower_move(*op);
            if (!r) return unexpected(r.error());
        } else if (!lowered_.count(op->id.value)) {
            auto r = add_kernels(*op);
            if (!r) return unexpected(r.error());
        }
    }

    Plan plan;
    plan.source = source;
    plan.target = model_.target().name;
    plan.cluster = model_.shape();
    if (plan.cluster.shared_cores > 0 && model_.calibration().wake_launches() > 0)
        plan.cluster.wake = model_.calibration().wake();
    const int n = model_.shape().devices();
    for (int d = 0; d < n; ++d) plan.devices.push_back(Device{model_.shape().device_name(d), model_.shape().node_of(d), {}, 0, 0});

    // Buffers: per (device, tensor), the box holding every region touched there.
    std::unordered_map<std::int64_t, int> buffer_of;
    size_t touches = 0;
    for (const auto &[reads, writes] : regions_) touches += reads.size() + writes.size();
    buffer_of.reserve(touches);
    plan.buffers.reserve(touches);  // at most one buffer per touch; untouched capacity costs no pages
    const std::int64_t tensors = static_cast<std::int64_t>(g_.tensors().size());
    auto key_of = [&](const Pending &p) { return static_cast<std::int64_t>(p.device) * tensors + p.tensor; };
    auto touch = [&](Pending &p) {
        const std::int64_t key = key_of(p);
        const auto it = buffer_of.find(key);
        if (it == buffer_of.end()) {
            p.buffer = static_cast<int>(plan.buffers.size());
            buffer_of.emplace(key, p.buffer);
            Buffer b;
            b.device = p.device;
            const Tensor &t = *g_.tensors()[static_cast<size_t>(p.tensor)];
            b.tensor = t.id;
            b.dtype = t.dtype;
            b.region = p.get();
            switch (t.role) {
                case TensorRole::parameter: b.kind = BufferKind::parameter; break;
                case TensorRole::input: b.kind = BufferKind::input; break;
                case TensorRole::output: b.kind = BufferKind::output; break;
                case TensorRole::intermediate: b.kind = BufferKind::activation; break;
            }
            plan.buffers.push_back(std::move(b));
        } else {
            p.buffer = it->second;
            Buffer &b = plan.buffers[static_cast<size_t>(it->second)];
            if (!b.region.contains(p.get())) b.region = b.region.bounding(p.get());
        }
    };
    for (auto &[reads, writes] : regions_) {
        for (Pending &p : reads) touch(p);
        for (Pending &p : writes) touch(p);
    }
    for (Buffer &b : plan.buffers) {
        b.bytes = size_mul(b.region.size(), dtype_bytes(b.dtype));
        if (b.kind == BufferKind::activation) {
            const std::vector<const Operation *> &prod = producers(b.tensor);
            if (prod.size() == 1 && prod.front()->kind == "move") b.kind = BufferKind::received;
        }
    }
    for (const Pending &p : outputs_) {
        const Tensor &t = *g_.tensors()[static_cast<size_t>(p.tensor)];
        plan.outputs.push_back(OutputPiece{t.id, buffer_of.at(key_of(p)), p.get()});
    }
    // The steps take their boxes: a cached piece's selection belongs to exactly one
    // step (its kernel), and nothing reads the cache after this.
    auto region = [&](Pending &p) {
        return Region{p.buffer, p.ref ? (memo_ ? ZRange(*p.ref) : std::move(*p.ref)) : std::move(p.box), {}, {}};
    };
    plan.steps = std::move(steps_);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        Step &step = plan.steps[i];
        auto &[reads, writes] = regions_[i];
        step.reads.reserve(reads.size());
        step.writes.reserve(writes.size());
        for (Pending &p : reads) step.reads.push_back(region(p));
        for (Pending &p : writes) step.writes.push_back(region(p));
    }

    if (model_.target().kind == "gpu") forward_slices(plan, g_);

    // The steps' predictions first: ordering by readiness schedules by them, and
    // lays the plan out itself (once, in its order).
    predict_steps(plan, model_);
    if (source.order == StepOrder::ready) order_by_readiness(plan, model_);
    else lay_out(plan, model_);
    return plan;
}

}  // namespace

void predict_steps(Plan &plan, const cost::Model &model) {
    for (Step &s : plan.steps) {
        switch (s.kind) {
            case StepKind::kernel: {
                const auto kc = cost::parse_kernel_class(s.kernel_class).value_or(cost::KernelClass::elementwise);
                // The exact shape only where the calibration has shapes to look up.
                s.predicted = model.kernel_seconds(cost::KernelWork{
                    kc, s.dtype, s.flops, s.bytes, s.op_kind, model.calibration().has_shapes() ? step_shape(s) : std::string()});
                break;
            }
            case StepKind::copy:
                s.predicted = model.copy_seconds(s.bytes, model.calibration().has_shapes() ? step_shape(s) : std::string());
                break;
            case StepKind::send_recv:
                s.predicted = model.transfer_seconds(s.bytes, s.device, s.peer,
                                                     model.calibration().has_shapes() ? step_shape(s) : std::string());
                s.crosses_nodes = model.shape().node_of(s.device) != model.shape().node_of(s.peer);
                break;
            case StepKind::collective: {
                const cost::Collective c = cost::parse_collective(s.collective).value_or(cost::Collective::all_reduce);
                const cost::CollectiveTime t = model.collective_seconds(c, s.bytes, s.participants);
                s.predicted = t.seconds;
                s.algorithm = cost::algorithm_name(t.algorithm);
                s.crosses_nodes = t.crosses_nodes;
                break;
            }
        }
    }
}

Expected<Plan, std::string> compile_plan(const Graph &g, const cost::Model &model, const PlanSource &source,
                                         const SignatureSource *signatures, PieceMemo *memo) {
    auto plan = Compiler(g, model, signatures, memo).run(source);
    if (plan) plan->graph = g;
    return plan;
}

Expected<Plan, std::string> compile_plan(Graph &&g, const cost::Model &model, const PlanSource &source,
                                         const SignatureSource *signatures, PieceMemo *memo) {
    auto plan = Compiler(g, model, signatures, memo).run(source);
    if (plan) plan->graph = std::move(g);
    return plan;
}

Expected<Plan, std::string> compile_plan(const Stage &stage, const cost::Model &model, PlanSource source,
                                         const SignatureSource *signatures) {
    if (source.pass.empty()) source.pass = stage.pass;
    if (source.options.empty()) source.options = stage.options;
    if (source.certificate.empty() && stage.certificate.certified()) source.certificate = stage.certificate.badge();
    return compile_plan(stage.graph, model, source, signatures);
}

const char *step_order_name(StepOrder o) {
    return o == StepOrder::ready ? "ready" : "dependency";
}

std::optional<StepOrder> parse_step_order(std::string_view name) {
    if (name == "dependency") return StepOrder::dependency;
    if (name == "ready") return StepOrder::ready;
    return std::nullopt;
}

const char *buffer_kind_name(BufferKind k) {
    switch (k) {
        case BufferKind::parameter: return "parameter";
        case BufferKind::input: return "input";
        case BufferKind::output: return "output";
        case BufferKind::activation: return "activation";
        case BufferKind::received: return "received";
        case BufferKind::workspace: return "workspace";
    }
    return "?";
}

std::string step_shape(const Step &s) {
    if (s.kind != StepKind::kernel && s.kind != StepKind::copy && s.kind != StepKind::send_recv) return {};
    std::string out;
    auto boxes = [&](const std::vector<Region> &regions) {
        for (const Region &r : regions) {
            if (!out.empty() && out.back() != ' ') out += ' ';
            for (int d = 0; d < r.box.rank(); ++d) out += (d ? "x" : "") + std::to_string(r.box.extent(d));
            if (r.box.rank() == 0) out += "1";
        }
    };
    boxes(s.reads);
    out += out.empty() ? "> " : " > ";
    boxes(s.writes);
    return out;
}

const char *step_kind_name(StepKind k) {
    switch (k) {
        case StepKind::kernel: return "kernel";
        case StepKind::copy: return "copy";
        case StepKind::send_recv: return "send_recv";
        case StepKind::collective: return "collective";
    }
    return "?";
}

}  // namespace tapestry::plan
