// Data movement. Who writes and who reads each element is an ISL question: the
// exact image of each shard's index range through its projection (clipped reads
// clipped), intersected pairwise between producer and consumer shards on
// different devices. The same counting decides where a move is needed and, after
// insertion, what each move carries.
#include "passes/movement.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>

#include "graph/resolve.h"
#include "graph/value_hash.h"
#include "index/index_set.h"
#include "ops/library.h"

namespace tapestry {
namespace {

// What one piece of an op (a shard, or the whole op when unsharded) touches of a tensor.
struct Piece {
    ShardId id;
    std::string device;
    IndexSet elements;
};

IndexSet touched(const OperandProjection &p, const ZRange &index, const ZRange &operand_range) {
    if (index.empty()) return IndexSet(operand_range.rank());
    IndexSet s = IndexSet::of_range(index).image(p.projection);
    if (p.clipped) s = s.intersect(IndexSet::of_range(operand_range));
    return s;
}

// Per piece of `op`, the elements of tensor `t` its operands on one side touch
// (all operands bound to `t` together), and the device it sits on (shard_device).
std::vector<Piece> pieces_touching(const Operation &op, const Signature &sig, const TensorId &t, int rank,
                                   bool outputs, bool placed) {
    std::vector<std::pair<ShardId, ZRange>> ranges;
    if (op.shards.empty())
        ranges.emplace_back(ShardId(op.id.value), sig.index_space);
    else
        for (const Shard &s : op.shards) ranges.emplace_back(s.id, s.index);
    const std::vector<PortBinding> &bindings = outputs ? op.outputs : op.inputs;
    const std::vector<PortProjections> &ports = outputs ? sig.outputs : sig.inputs;
    std::vector<Piece> out;
    for (const auto &[id, index] : ranges) {
        Piece piece{id, placed ? shard_device(op, out.size()) : "#" + std::to_string(out.size()), IndexSet(rank)};
        if (index.rank() == sig.index_space.rank())
            for (const PortBinding &b : bindings)
                for (const PortProjections &pp : ports)
                    if (pp.port == b.name)
                        for (size_t i = 0; i < b.selections.size() && i < pp.operands.size(); ++i)
                            if (b.selections[i].tensor == t)
                                piece.elements =
                                    piece.elements.unite(touched(pp.operands[i], index, b.selections[i].range));
        out.push_back(std::move(piece));
    }
    return out;
}

struct Flow {
    size_t from, to;
    std::int64_t elements;
};

// Elements that piece j of the readers needs from piece i of the writers on
// another device.
// The points two boxes share, without building their meeting.
std::int64_t common_points(const ZRange &a, const ZRange &b) {
    std::int64_t n = 1;
    for (int d = 0; d < a.rank(); ++d) {
        const Coord lo = std::max(a.start()[d], b.start()[d]), hi = std::min(a.end()[d], b.end()[d]);
        if (hi <= lo) return 0;
        n *= hi - lo;  // inside both boxes: no more points than either has
    }
    return n;
}

std::vector<Flow> cross_device(const std::vector<Piece> &writers, const std::vector<Piece> &readers) {
    // Each piece as disjoint boxes, once: the elements two pieces share are then the
    // summed sizes of their boxes' meetings (exact, as each side's boxes are
    // disjoint), with no set built per pair — thousands of pairs on 64 devices.
    auto boxes_of = [](const std::vector<Piece> &pieces) {
        std::vector<std::optional<std::vector<ZRange>>> out;
        out.reserve(pieces.size());
        for (const Piece &p : pieces) out.push_back(p.elements.as_boxes());
        return out;
    };
    const auto wb = boxes_of(writers), rb = boxes_of(readers);
    std::vector<Flow> out;
    for (size_t i = 0; i < writers.size(); ++i)
        for (size_t j = 0; j < readers.size(); ++j) {
            if (writers[i].device == readers[j].device) continue;
            std::int64_t n = 0;
            if (wb[i] && rb[j]) {
                for (const ZRange &a : *wb[i])
                    for (const ZRange &b : *rb[j]) n += common_points(a, b);
            } else {
                n = writers[i].elements.intersect(readers[j].elements).count();
            }
            if (n > 0) out.push_back(Flow{i, j, n});
        }
    return out;
}

// The writers of tensor `t`: the pieces of every op that writes it, in producer
// order, or empty when it has none or one does not resolve. A tensor may have
// several producers — the partials of a split reduction whose parts became ops
// of their own (op.partial.0, op.partial.1, …) each write a slice — and placement
// can put them on devices other than their reader's.
struct Writers {
    std::vector<Piece> pieces;
};

// resolve() once per operation version within one walk over a graph: a producer is
// resolved for every tensor its consumers read, a consumer for each of its inputs.
// An entry holds its operation, so no later version can take its address.
class Resolved {
public:
    Resolved(const Graph &g, const SignatureSource &lib) : g_(g), lib_(lib) {}
    const Derivation *of(const OpPtr &op) {
        auto it = memo_.find(op.get());
        if (it == memo_.end()) {
            auto d = resolve(g_, *op, lib_);
            it = memo_.emplace(op.get(), Entry{op, d ? std::optional<Derivation>(std::move(d).value()) : std::nullopt}).first;
        }
        return it->second.derivation ? &*it->second.derivation : nullptr;
    }

private:
    struct Entry {
        OpPtr op;
        std::optional<Derivation> derivation;
    };
    const Graph &g_;
    const SignatureSource &lib_;
    std::unordered_map<const Operation *, Entry> memo_;
};

std::optional<Writers> writers_of(const Graph &g, const Tensor &t, Resolved &resolved, bool placed) {
    const std::vector<OpId> producers = g.producers(t.id);
    if (producers.empty()) return std::nullopt;
    Writers w;
    for (const OpId &id : producers) {
        const OpPtr p = g.op_ptr(id);
        const Derivation *d = resolved.of(p);
        if (!d) return std::nullopt;
        std::vector<Piece> pieces = pieces_touching(*p, d->signature, t.id, t.range.rank(), true, placed);
        w.pieces.insert(w.pieces.end(), std::make_move_iterator(pieces.begin()), std::make_move_iterator(pieces.end()));
    }
    return w;
}

std::string choose_collective(const Operation &consumer, const Signature &sig, const Tensor &t,
                              const std::vector<Piece> &writers, const std::vector<Piece> &readers) {
    // The tensor dims along which the producer's writes differ.
    std::vector<int> split;
    std::vector<ZRange> boxes;
    for (const Piece &w : writers) boxes.push_back(w.elements.bounding_box());
    for (int d = 0; d < t.range.rank(); ++d)
        for (const ZRange &b : boxes)
            if (b.start()[d] != boxes.front().start()[d] || b.end()[d] != boxes.front().end()[d]) {
                split.push_back(d);
                break;
            }
    if (consumer.kind.rfind("reduce_", 0) == 0 && !split.empty()) {
        bool reduces_all = true;
        for (const PortBinding &b : consumer.inputs)
            for (const PortProjections &pp : sig.inputs)
                if (pp.port == b.name)
                    for (size_t i = 0; i < b.selections.size() && i < pp.operands.size(); ++i) {
                        if (b.selections[i].tensor != t.id) continue;
                        const ZMatrix &a = pp.operands[i].projection.map().matrix();
                        for (int d : split)
                            for (int c = 0; c < a.cols(); ++c)
                                if (a.at(d, c) != 0) reduces_all = false;
                    }
        if (reduces_all) return readers.size() >= 2 ? "reduce_scatter" : "all_reduce";
    }
    if (writers.size() >= 2 && readers.size() >= 2 && std::all_of(readers.begin(), readers.end(), [&](const Piece &r) {
            return r.elements.equals(readers.front().elements);
        }))
        return "all_gather";
    return "send_recv";
}

// A placed device name, or "" for a virtual one ("#k").
std::string placed(const std::string &device) {
    return device.rfind("#", 0) == 0 ? std::string() : device;
}

std::string unique_id(const Graph &g, const std::string &base, const std::string &alternative) {
    if (!g.has_id(base)) return base;
    if (!g.has_id(alternative)) return alternative;
    for (int k = 2;; ++k)
        if (!g.has_id(alternative + "." + std::to_string(k))) return alternative + "." + std::to_string(k);
}

// The producer's writes as shards of a move over the tensor: one box per piece,
// partitioning the tensor; nullopt when they do not.
std::optional<std::vector<ZRange>> partition_boxes(const Tensor &t, const std::vector<Piece> &writers) {
    std::vector<ZRange> boxes;
    IndexSet all(t.range.rank());
    std::int64_t total = 0;
    for (const Piece &w : writers) {
        const ZRange box = w.elements.bounding_box();
        if (box.size() != w.elements.count()) return std::nullopt;
        boxes.push_back(box);
        total += box.size();
        all = all.unite(w.elements);
    }
    if (total != t.range.size() || !all.equals(IndexSet::of_range(t.range))) return std::nullopt;
    return boxes;
}

}  // namespace

bool every_piece_placed(const Graph &g) {
    for (const OpPtr &op : g.operations()) {
        if (op->shards.empty()) return false;
        for (const Shard &s : op->shards)
            if (s.device.empty()) return false;
    }
    return !g.operations().empty();
}

std::string shard_device(const Operation &op, size_t k) {
    if (k < op.shards.size() && !op.shards[k].device.empty()) return op.shards[k].device;
    return "#" + std::to_string(k);
}

std::vector<Transfer> data_movement(const Graph &g, const SignatureSource &lib) {
    std::vector<Transfer> out;
    const bool placed = every_piece_placed(g);
    Resolved resolved(g, lib);
    for (const OpPtr &move : g.operations()) {
        if (move->kind != "move") continue;
        const PortBinding *x = move->input("x");
        const PortBinding *y = move->output("y");
        if (!x || !y || x->selections.size() != 1 || y->selections.size() != 1) continue;
        const Tensor *t = g.find_tensor(x->selections[0].tensor);
        const Tensor *moved = g.find_tensor(y->selections[0].tensor);
        if (!t || !moved) continue;
        auto writers = writers_of(g, *t, resolved, placed);
        if (!writers) continue;
        const std::string collective = move->params.get_string("collective", "");
        // A y element at e is the x element at e − y.start + x.start.
        const ZPoint shift = x->selections[0].range.start() - y->selections[0].range.start();
        for (const OpId &cid : g.consumers(moved->id)) {
            const OpPtr c = g.op_ptr(cid);
            const Derivation *d = resolved.of(c);
            if (!d) continue;
            std::vector<Piece> readers =
                pieces_touching(*c, d->signature, moved->id, moved->range.rank(), false, placed);
            for (Piece &r : readers) {
                auto boxes = r.elements.as_boxes();
                std::vector<ZRange> shifted;
                for (const ZRange &b : boxes ? *boxes : std::vector<ZRange>{r.elements.bounding_box()})
                    shifted.push_back(b.translated(shift));
                r.elements = IndexSet::of_ranges(t->range.rank(), shifted);
            }
            for (const Flow &f : cross_device(writers->pieces, readers))
                out.push_back(Transfer{move->id, t->id, collective, writers->pieces[f.from].id, readers[f.to].id,
                                       f.elements, f.elements * dtype_bytes(t->dtype)});
        }
    }
    return out;
}

std::vector<Transfer> data_movement(const Graph &g) {
    return data_movement(g, OpLibrary::standard());
}

namespace {

// What the walk decides for one tensor and one consumer: no move, or a move with
// this collective, sharded on these boxes (the producers' writes, in the tensor's
// own frame; none when one producer piece writes it all) on these devices ("":
// unplaced) — and the nodes made for it, by the ids they were made under.
struct Decision {
    bool move = false;
    std::string collective;
    std::vector<ZRange> shards;
    std::vector<std::string> devices;
    struct Made {
        std::string moved_id, move_id;
        TensorPtr moved;
        OpPtr move;
    };
    std::vector<Made> made;
};

Decision decide(const Operation &c, const Signature &sig, const Tensor &t, const Writers &writers, bool all_placed) {
    Decision d;
    const std::vector<Piece> readers = pieces_touching(c, sig, t.id, t.range.rank(), false, all_placed);
    if (cross_device(writers.pieces, readers).empty()) return d;
    auto boxes = partition_boxes(t, writers.pieces);
    if (!boxes) return d;
    d.move = true;
    d.collective = choose_collective(c, sig, t, writers.pieces, readers);
    const ZPoint origin = ZPoint::zeros(t.range.rank()) - t.range.start();
    if (boxes->size() > 1) {
        for (size_t k = 0; k < boxes->size(); ++k) {
            d.shards.push_back((*boxes)[k].translated(origin));
            d.devices.push_back(placed(writers.pieces[k].device));
        }
    } else if (!placed(writers.pieces.front().device).empty()) {
        d.shards.push_back(ZRange::of_shape(t.range.shape()));
        d.devices.push_back(writers.pieces.front().device);
    }
    return d;
}

// The moved tensor and the move of a decision, under these ids.
std::pair<TensorPtr, OpPtr> make_move(const Decision &d, const Tensor &t, const std::string &moved_id,
                                      const std::string &move_id) {
    auto moved = std::make_shared<const Tensor>(
        Tensor{TensorId(moved_id), moved_id, t.dtype, t.range, TensorRole::intermediate, {}, {}});
    Operation move;
    move.id = OpId(move_id);
    move.name = move_id;
    move.kind = "move";
    move.params.set("collective", d.collective);
    move.inputs.push_back(PortBinding{"x", {TensorSelection{t.id, t.range}}});
    move.outputs.push_back(PortBinding{"y", {TensorSelection{moved->id, t.range}}});
    for (size_t k = 0; k < d.shards.size(); ++k)
        move.shards.push_back(Shard{ShardId(move_id + "/" + std::to_string(k)), d.shards[k], d.devices[k], {}, {}});
    return {std::move(moved), std::make_shared<const Operation>(std::move(move))};
}

// The consumer reading `moved` where it read `tid`.
OpPtr rebind(const Operation &c, const TensorId &tid, const TensorId &moved) {
    Operation consumer = c;
    for (PortBinding &b : consumer.inputs)
        for (TensorSelection &s : b.selections)
            if (s.tensor == tid) s.tensor = moved;
    for (Shard &s : consumer.shards)  // stated shard selections follow the rebinding
        for (PortBinding &b : s.inputs)
            for (TensorSelection &sel : b.selections)
                if (sel.tensor == tid) sel.tensor = moved;
    return std::make_shared<const Operation>(std::move(consumer));
}

}  // namespace

struct MovementTables {
    // A decision's key: the tensor, the consumer as the walk found it, the tensor's
    // producers, and whether the graph was placed.
    struct Key {
        const Tensor *tensor;
        const Operation *consumer;
        std::vector<const Operation *> writers;
        bool placed;
    };
    struct View {  // a key looked up without a copy of its writers
        const Tensor *tensor;
        const Operation *consumer;
        std::span<const Operation *const> writers;
        bool placed;
        std::size_t hash() const {
            std::uint64_t h = value_hash::kSeed;
            value_hash::mix(h, &tensor, sizeof tensor);
            value_hash::mix(h, &consumer, sizeof consumer);
            for (const Operation *w : writers) value_hash::mix(h, &w, sizeof w);
            value_hash::mix(h, static_cast<std::int64_t>(placed));
            return h;
        }
        bool operator==(const View &o) const {
            return tensor == o.tensor && consumer == o.consumer && placed == o.placed &&
                   std::equal(writers.begin(), writers.end(), o.writers.begin(), o.writers.end());
        }
    };
    static View view(const Key &k) { return {k.tensor, k.consumer, k.writers, k.placed}; }
    static View view(const View &v) { return v; }
    struct Entry {  // the nodes its key points at, held
        TensorPtr tensor;
        OpPtr consumer;
        std::vector<OpPtr> writers;
        Decision decision;
    };
    std::unordered_map<Key, Entry, ViewHash<MovementTables>, ViewEqual<MovementTables>> decisions;
    // A rebound consumer: (the consumer, the tensor, the moved tensor).
    struct Rebound {
        const Operation *consumer;
        std::string tensor, moved;
        friend bool operator==(const Rebound &, const Rebound &) = default;
    };
    struct ReboundHash {
        std::size_t operator()(const Rebound &k) const {
            std::uint64_t h = value_hash::kSeed;
            value_hash::mix(h, &k.consumer, sizeof k.consumer);
            value_hash::mix(h, k.tensor);
            value_hash::mix(h, k.moved);
            return h;
        }
    };
    std::unordered_map<Rebound, std::pair<OpPtr, OpPtr>, ReboundHash> rebound;  // (before, after)
    std::size_t pieces = 0;  // the nodes' shards held (and one per entry)
};

MovementMemo::MovementMemo(std::size_t pieces) : NodeMemo(pieces, std::make_shared<MovementTables>()) {}
std::size_t MovementMemo::size() const { return tables().pieces; }

std::vector<OpId> insert_data_movement(RecordingRewriter &rw, const SignatureSource &lib, MovementMemo *memo) {
    std::vector<OpId> inserted;
    std::vector<OpId> order;
    const bool all_placed = every_piece_placed(rw.graph());
    Resolved resolved(rw.graph(), lib);
    // Each tensor's writers, once per walk: the walk rebinds consumers and adds
    // moves, but never changes what a tensor's producers write or where — nor who
    // they are (a move writes a tensor of its own), so they are listed once.
    std::unordered_map<TensorId, std::optional<Writers>> writers_memo;
    std::unordered_map<TensorId, std::vector<OpId>> producers_of;
    for (const OpPtr &op : rw.graph().operations()) {
        if (op->kind != "move") order.push_back(op->id);
        op->for_each_output_tensor([&](const TensorId &t) {
            std::vector<OpId> &v = producers_of[t];
            if (v.empty() || v.back() != op->id) v.push_back(op->id);
        });
    }
    if (memo && memo->size() > memo->bound()) memo->start_over(std::make_shared<MovementTables>());
    static const std::vector<OpId> none;
    std::vector<const Operation *> writer_ops;  // a decision's key's, reused
    for (const OpId &cid : order) {
        std::set<TensorId> seen;
        const OpPtr found = rw.graph().op_ptr(cid);  // as the walk found it (the decisions' key)
        for (const TensorId &tid : found->input_tensors()) {
            if (!seen.insert(tid).second) continue;
            const OpPtr c = rw.graph().op_ptr(cid);  // the latest version: an earlier tensor may have rebound it
            const TensorPtr t = rw.graph().tensor_ptr(tid);
            if (!t) continue;
            const auto at = producers_of.find(tid);
            const std::vector<OpId> &producers = at == producers_of.end() ? none : at->second;
            // Both sides whole on device 0: nothing can move (and big unsharded graphs stay cheap).
            if (c->shards.empty() && producers.size() == 1 && rw.graph().find_op(producers.front())->shards.empty())
                continue;
            // What a move writes is already moved: its transfers follow its consumers' devices.
            if (producers.size() == 1 && rw.graph().find_op(producers.front())->kind == "move") continue;
            if (producers.empty()) continue;  // an input or parameter: placement's to hold where it is read
            // The decision: from the memo, or made (and kept).
            Decision made_here;
            Decision *decision = &made_here;
            if (memo) {
                writer_ops.clear();
                for (const OpId &p : producers) writer_ops.push_back(rw.graph().find_op(p));
                const auto hit =
                    memo->tables().decisions.find(MovementTables::View{t.get(), found.get(), writer_ops, all_placed});
                if (hit != memo->tables().decisions.end()) {
                    memo->note(true);
                    decision = &hit->second.decision;
                }
            }
            if (decision == &made_here) {
                auto memoised = writers_memo.find(tid);
                if (memoised == writers_memo.end())
                    memoised = writers_memo.emplace(tid, writers_of(rw.graph(), *t, resolved, all_placed)).first;
                const std::optional<Writers> &writers = memoised->second;
                if (!writers) continue;
                const Derivation *d = resolved.of(c);
                if (!d) continue;
                made_here = decide(*c, d->signature, *t, *writers, all_placed);
                if (memo) {
                    memo->note(false);
                    MovementTables::Entry entry{t, found, {}, std::move(made_here)};
                    for (const OpId &p : producers) entry.writers.push_back(rw.graph().op_ptr(p));
                    memo->tables().pieces += 1 + c->shards.size() + 2 * entry.decision.shards.size();
                    MovementTables::Key key{t.get(), found.get(), writer_ops, all_placed};
                    decision = &memo->tables().decisions.emplace(std::move(key), std::move(entry)).first->second.decision;
                }
            }
            if (!decision->move) continue;
            const std::string &collective = decision->collective;
            const std::string moved_id =
                unique_id(rw.graph(), tid.value + "." + collective, tid.value + "." + collective + "." + cid.value);
            const std::string move_id = unique_id(rw.graph(), "move." + tid.value + "." + cid.value,
                                                  "move." + tid.value + "." + cid.value + "." + collective);
            // The move's nodes: made once per decision and ids.
            auto same_ids = [&](const Decision::Made &m) { return m.moved_id == moved_id && m.move_id == move_id; };
            auto made = std::find_if(decision->made.begin(), decision->made.end(), same_ids);
            std::pair<TensorPtr, OpPtr> nodes;
            if (made != decision->made.end()) {
                nodes = {made->moved, made->move};
            } else {
                nodes = make_move(*decision, *t, moved_id, move_id);
                if (memo) decision->made.push_back(Decision::Made{moved_id, move_id, nodes.first, nodes.second});
            }
            // The consumer reading the moved tensor.
            OpPtr consumer;
            if (memo) {
                const MovementTables::Rebound rk{c.get(), tid.value, moved_id};
                auto &slot = memo->tables().rebound[rk];
                if (!slot.second) {
                    slot = {c, rebind(*c, tid, nodes.first->id)};
                    memo->tables().pieces += 1 + 2 * c->shards.size();
                }
                consumer = slot.second;
            } else {
                consumer = rebind(*c, tid, nodes.first->id);
            }
            rw.put_tensor(nodes.first);
            rw.put_changed_op(nodes.second);  // a new id
            rw.put_changed_op(consumer);      // reads the moved tensor
            inserted.push_back(OpId(move_id));
        }
    }
    return inserted;
}

std::string movement_summary(const std::vector<Transfer> &transfers) {
    if (transfers.empty()) return "moves nothing";
    std::int64_t elements = 0, bytes = 0;
    std::map<std::string, int> per;
    for (const Transfer &t : transfers) {
        elements += t.elements;
        bytes += t.bytes;
        ++per[t.collective];
    }
    std::string out = "moves " + std::to_string(elements) + " elements (" + std::to_string(bytes) + " bytes) in " +
                      std::to_string(transfers.size()) + (transfers.size() == 1 ? " transfer:" : " transfers:");
    bool first = true;
    for (const auto &[name, n] : per) {
        out += (first ? " " : ", ") + name + " " + std::to_string(n);
        first = false;
    }
    return out;
}

}  // namespace tapestry
