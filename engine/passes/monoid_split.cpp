// The monoid split of a contraction: matmul/linear → partial_matmul + reduce_sum
// (+ add of linear's bias); reduce_* → one partial reduce per block + the reduce of
// the partials. Matches first (kind, blocks, the partial derivation), then rewrites
// through the RecordingRewriter, so a refused spec changes nothing.
#include "passes/monoid_split.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "common/check.h"
#include "graph/resolve.h"
#include "ops/library.h"

namespace tapestry {
namespace {

std::string join_sizes(const std::vector<Coord> &sizes) {
    std::string out;
    for (size_t i = 0; i < sizes.size(); ++i) out += (i ? "+" : "") + std::to_string(sizes[i]);
    return out;
}

// `base`, or `base.2`, `base.3`, … when a node of `g` (or an id handed out
// before) already uses it.
std::string unused_id(const Graph &g, const std::string &base, std::set<std::string> &taken) {
    std::string id = base;
    for (int n = 2; g.has_id(id) || taken.count(id); ++n) id = base + "." + std::to_string(n);
    taken.insert(id);
    return id;
}

const PortTypes *find_types(const std::vector<PortTypes> &types, const std::string &port) {
    for (const PortTypes &p : types)
        if (p.port == port) return &p;
    return nullptr;
}

// The suffix of shard `s` (the k-th of op `op`) a shard of a replacement op takes:
// "1" for "fc1/1", else its position.
std::string shard_suffix(const std::string &op, const Shard &s, size_t k) {
    const std::string prefix = op + "/";
    if (s.id.value.size() > prefix.size() && s.id.value.compare(0, prefix.size(), prefix) == 0)
        return s.id.value.substr(prefix.size());
    return std::to_string(k);
}

// [p, p+1) × rest.
ZRange block_range(Coord p, const ZRange &rest) {
    std::vector<Coord> s{p}, e{p + 1};
    s.insert(s.end(), rest.start().coords().begin(), rest.start().coords().end());
    e.insert(e.end(), rest.end().coords().begin(), rest.end().coords().end());
    return ZRange(ZPoint(s), ZPoint(e));
}

bool is_reduce_kind(const std::string &kind) {
    return kind == "reduce_sum" || kind == "reduce_mean" || kind == "reduce_max";
}

bool states_selections(const Operation &op) {
    for (const Shard &s : op.shards)
        if (!s.inputs.empty() || !s.outputs.empty()) return true;
    return false;
}

// Fills every shard's stated selections from the op's derivation in `g`.
Operation with_stated_selections(const Graph &g, Operation op, const SignatureSource &lib) {
    auto derived = resolve(g, op, lib);
    TAPESTRY_CHECK(derived.has_value(), "a replacement op of the monoid split does not resolve");
    for (Shard &s : op.shards) {
        ShardSelections sel = derive_shard_selections(g, op, derived->signature, s.index);
        s.inputs = std::move(sel.inputs);
        s.outputs = std::move(sel.outputs);
    }
    return op;
}

}  // namespace

std::vector<Contraction> contractions_of(const Graph &g, const Operation &op, const SignatureSource &lib) {
    const bool linear = op.kind == "linear";
    const bool reduce = is_reduce_kind(op.kind);
    if (!linear && !reduce && op.kind != "matmul") return {};
    auto derived = resolve(g, op, lib);
    if (!derived) return {};
    const int rank = derived->signature.index_space.rank();
    const OperandProjection *p = derived->signature.input(linear || reduce ? "x" : "a", 0);
    if (!p || p->projection.tensor_rank() == 0) return {};
    const IndexProjection &proj = p->projection;
    if (!reduce)
        return {Contraction{rank, linear ? "in" : "k", proj.window()[proj.tensor_rank() - 1], -1}};
    // A reduced axis is a zero row with the axis' extent as window.
    std::vector<Contraction> out;
    const auto axes = op.params.get_ints("axes", {});
    for (int r = 0; r < proj.tensor_rank(); ++r) {
        bool zero = true;
        for (int c = 0; c < proj.index_rank(); ++c) zero = zero && proj.map().matrix().at(r, c) == 0;
        const bool named = std::any_of(axes.begin(), axes.end(), [&](std::int64_t a) {
            return a == r || a + proj.tensor_rank() == r;
        });
        if (zero && named)
            out.push_back(Contraction{rank + static_cast<int>(out.size()), "axis " + std::to_string(r),
                                      proj.window()[r], r});
    }
    return out;
}

Expected<std::vector<Coord>, std::string> reduction_blocks(Coord extent, int parts, const std::string &where) {
    if (parts < 1 || parts > extent)
        return unexpected("cannot split " + where + " (extent " + std::to_string(extent) + ") into " +
                          std::to_string(parts) + " parts");
    const Coord block = (extent + parts - 1) / parts;
    const Coord used = (extent + block - 1) / block;
    if (used != parts)
        return unexpected("cannot split " + where + " (extent " + std::to_string(extent) + ") into " +
                          std::to_string(parts) + " blocks: a reduction splits into blocks of equal size, the last "
                          "one clipped, and blocks of " + std::to_string(block) + " cover it in " +
                          std::to_string(used));
    std::vector<Coord> sizes(static_cast<size_t>(parts), block);
    sizes.back() = extent - block * (parts - 1);
    return sizes;
}

Expected<std::vector<Coord>, std::string> reduction_blocks(Coord extent, const std::vector<Coord> &sizes,
                                                           const std::string &where) {
    const Coord sum = std::accumulate(sizes.begin(), sizes.end(), Coord{0});
    if (sum != extent)
        return unexpected("sizes " + join_sizes(sizes) + " sum to " + std::to_string(sum) + ", but " + where +
                          " has extent " + std::to_string(extent));
    auto even = reduction_blocks(extent, static_cast<int>(sizes.size()), where);
    if (!even || *even != sizes)
        return unexpected("sizes " + join_sizes(sizes) + " do not split " + where +
                          " into blocks of equal size with the last one clipped" +
                          (even ? " (in " + std::to_string(sizes.size()) + " parts: " + join_sizes(*even) + ")"
                                : std::string()));
    return sizes;
}

namespace {

// An index range of a reduce without keepdims in the form it has with keepdims:
// [0, 1) inserted at each reduced axis.
ZRange with_kept_dims(const ZRange &r, const std::vector<int> &axes, int rank) {
    std::vector<Coord> s, e;
    int j = 0;
    for (int d = 0; d < rank; ++d) {
        if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
            s.push_back(0);
            e.push_back(1);
        } else {
            s.push_back(r.start()[j]);
            e.push_back(r.end()[j]);
            ++j;
        }
    }
    return ZRange(ZPoint(s), ZPoint(e));
}

// reduce_* over axes A split on axis c.axis: one reduce of the op's kind per block
// (keepdims) into <op>.partials, then the op's own reduce over the partials.
Expected<std::string, std::string> split_reduction(RecordingRewriter &rw, const ShardSpec &spec,
                                                   const SignatureSource &lib, const Operation &op,
                                                   const Contraction &c) {
    const std::string prefix = "shard spec '" + spec.text + "': ";
    const Graph &g = rw.graph();
    const std::string &id = op.id.value;
    const std::string where = "the reduced " + c.name + " (dim " + std::to_string(c.dim) + ") of '" + id + "'";
    auto blocks = spec.sizes.empty() ? reduction_blocks(c.extent, spec.count, where)
                                     : reduction_blocks(c.extent, spec.sizes, where);
    if (!blocks) return unexpected(prefix + blocks.error());
    const std::vector<Coord> &sizes = *blocks;
    const auto parts = static_cast<Coord>(sizes.size());
    if (op.kind == "reduce_mean" && sizes.front() != sizes.back())
        return unexpected(prefix + "reduce_mean '" + id + "' splits only into blocks of equal size (a mean of " +
                          "block means is the mean only then), but " + where + " (extent " +
                          std::to_string(c.extent) + ") into " + std::to_string(parts) + " gives " + join_sizes(sizes));
    const PortBinding *x = op.input("x");
    const PortBinding *y = op.output("y");
    if (!x || !y || x->selections.size() != 1 || y->selections.size() != 1)
        return unexpected(prefix + "'" + id + "' does not bind one operand to each of its ports");
    const TensorSelection &xs = x->selections[0];
    const Tensor *yt = g.find_tensor(y->selections[0].tensor);
    if (!yt) return unexpected(prefix + "'" + id + "' writes an unknown tensor");
    const int rank = xs.range.rank();
    std::vector<int> axes;
    for (std::int64_t a : op.params.get_ints("axes", {})) axes.push_back(static_cast<int>(a < 0 ? a + rank : a));
    std::sort(axes.begin(), axes.end());
    const bool keep = op.params.get_bool("keepdims", true);
    auto reduced = [&](int d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
    std::vector<Coord> partials_shape;
    for (int d = 0; d < rank; ++d) partials_shape.push_back(d == c.axis ? parts : reduced(d) ? 1 : xs.range.extent(d));

    std::set<std::string> taken;
    const std::string partials_id = unused_id(g, id + ".partials", taken);
    const std::string reduce_id = unused_id(g, id + ".reduce", taken);
    const TensorSelection partials_sel{TensorId(partials_id), ZRange::of_shape(ZPoint(partials_shape))};
    const bool stated = states_selections(op);
    Params partial_params = op.params;
    partial_params.set("keepdims", true);

    rw.remove_op(op.id);
    rw.put_tensor(Tensor{TensorId(partials_id), partials_id, yt->dtype, partials_sel.range, TensorRole::intermediate,
                         {}, {}});
    Coord pos = xs.range.start()[c.axis];
    size_t partial_shards = 0;
    std::string first_id, last_id;
    for (Coord p = 0; p < parts; ++p) {
        Operation part;
        part.id = OpId(unused_id(g, id + ".partial." + std::to_string(p), taken));
        part.name = part.id.value;
        part.kind = op.kind;
        part.params = partial_params;
        ZPoint xs_start = xs.range.start(), xs_end = xs.range.end();
        xs_start[c.axis] = pos;
        xs_end[c.axis] = pos + sizes[static_cast<size_t>(p)];
        pos += sizes[static_cast<size_t>(p)];
        part.inputs = {PortBinding{"x", {TensorSelection{xs.tensor, ZRange(xs_start, xs_end)}}}};
        ZPoint ys_start = ZPoint::zeros(rank), ys_end(partials_shape);
        ys_start[c.axis] = p;
        ys_end[c.axis] = p + 1;
        part.outputs = {PortBinding{"y", {TensorSelection{TensorId(partials_id), ZRange(ys_start, ys_end)}}}};
        for (const Shard &parent : op.shards)
            part.shards.push_back(Shard{ShardId(parent.id.value + "." + std::to_string(p)),
                                        keep ? parent.index : with_kept_dims(parent.index, axes, rank),
                                        parent.device, {}, {}});
        partial_shards += part.shards.size();
        if (p == 0) first_id = part.id.value;
        last_id = part.id.value;
        rw.put_op(stated ? with_stated_selections(rw.graph(), part, lib) : part);
    }
    Operation reduce;
    reduce.id = OpId(reduce_id);
    reduce.name = reduce_id;
    reduce.kind = op.kind;
    reduce.params = op.params;
    reduce.inputs = {PortBinding{"x", {partials_sel}}};
    reduce.outputs = {PortBinding{"y", y->selections}};
    for (size_t k = 0; k < op.shards.size(); ++k)
        reduce.shards.push_back(Shard{ShardId(reduce_id + "/" + shard_suffix(id, op.shards[k], k)), op.shards[k].index,
                                      op.shards[k].device, {}, {}});
    rw.put_op(stated ? with_stated_selections(rw.graph(), reduce, lib) : reduce);

    std::string text = id + " reduced " + c.name + " (dim " + std::to_string(c.dim) + ", extent " +
                       std::to_string(c.extent) + ") into " + std::to_string(parts) + " blocks (" +
                       (sizes.front() == sizes.back() ? std::to_string(sizes.front()) + " each" : join_sizes(sizes)) +
                       "): " + std::to_string(parts) + " partial " + op.kind + " " +
                       (parts == 1 ? first_id : first_id + " … " + last_id);
    if (!op.shards.empty())
        text += " (" + std::to_string(partial_shards) + " shards, product with its " + std::to_string(op.shards.size()) +
                " shards)";
    text += ", " + reduce_id + " (reduction of partials: " +
            collective_of(rw.graph(), *rw.graph().find_op(OpId(reduce_id))) + ")";
    return text;
}

}  // namespace

Expected<std::string, std::string> split_contraction(RecordingRewriter &rw, const ShardSpec &spec,
                                                     const SignatureSource &lib) {
    const std::string prefix = "shard spec '" + spec.text + "': ";
    const Graph &g = rw.graph();
    const OpPtr op = g.op_ptr(spec.op);
    if (!op) return unexpected(prefix + "unknown operation '" + spec.op.value + "'");
    const std::string &id = op->id.value;
    const std::vector<Contraction> all = contractions_of(g, *op, lib);
    const auto found = std::find_if(all.begin(), all.end(), [&](const Contraction &x) { return x.dim == spec.dim; });
    if (found == all.end())
        return unexpected(prefix + "dim " + std::to_string(spec.dim) + " of '" + id + "' is not a contraction");
    const Contraction *c = &*found;
    if (is_reduce_kind(op->kind)) return split_reduction(rw, spec, lib, *op, *c);
    if (!lib.knows("partial_matmul"))
        return unexpected(prefix + "splitting the contraction of '" + id +
                          "' needs the op kind partial_matmul, which the op library lacks");
    const std::string where = "the contraction " + c->name + " (dim " + std::to_string(c->dim) + ") of '" + id + "'";
    auto blocks = spec.sizes.empty() ? reduction_blocks(c->extent, spec.count, where)
                                     : reduction_blocks(c->extent, spec.sizes, where);
    if (!blocks) return unexpected(prefix + blocks.error());
    const auto parts = static_cast<Coord>(blocks->size());

    // Match: the operands, and the partial product's derivation.
    const bool linear = op->kind == "linear";
    const PortBinding *a = op->input(linear ? "x" : "a");
    const PortBinding *b = op->input(linear ? "w" : "b");
    const PortBinding *bias = linear ? op->input("bias") : nullptr;
    if (bias && bias->selections.empty()) bias = nullptr;
    const PortBinding *y = op->output("y");
    if (!a || !b || !y || a->selections.size() != 1 || b->selections.size() != 1 || y->selections.size() != 1)
        return unexpected(prefix + "'" + id + "' does not bind one operand to each of its ports");
    auto types = operand_types(g, *op);
    if (!types) return unexpected(prefix + "'" + id + "' does not resolve: " + types.error().message);
    const PortTypes *a_types = find_types(*types, a->name);
    const PortTypes *b_types = find_types(*types, b->name);
    TAPESTRY_CHECK(a_types && b_types, "operand_types lost a port");
    Params partial_params;
    partial_params.set("parts", std::int64_t{parts});
    auto partial_d = lib.derive("partial_matmul", partial_params,
                                {PortTypes{"a", a_types->operands}, PortTypes{"b", b_types->operands}});
    if (!partial_d) {
        std::string why = partial_d.error().message;
        if (linear && a_types->operands.at(0).shape.rank() < 2)
            why += " (reshape x to [1, " + std::to_string(c->extent) + "])";
        return unexpected(prefix + "'" + id + "' cannot be split on its contraction: " + why);
    }
    const OperandType partials_type = partial_d->outputs.at(0).operands.at(0);

    // Rewrite.
    std::set<std::string> taken;
    const std::string partial_id = unused_id(g, id + ".partial", taken);
    const std::string reduce_id = unused_id(g, id + ".reduce", taken);
    const std::string bias_id = bias ? unused_id(g, id + ".bias", taken) : std::string();
    const std::string partials_id = unused_id(g, id + ".partials", taken);
    const std::string reduced_id = bias ? unused_id(g, id + ".reduced", taken) : std::string();
    const TensorSelection partials_sel{TensorId(partials_id), ZRange::of_shape(partials_type.shape)};
    const TensorSelection out_sel = y->selections[0];
    const TensorSelection reduced_sel{TensorId(reduced_id), ZRange::of_shape(out_sel.range.shape())};
    const bool stated = states_selections(*op);
    const ZRange whole = ZRange::of_shape(ZPoint(std::vector<Coord>(partials_type.shape.coords().begin() + 1,
                                                                    partials_type.shape.coords().end())));

    Operation partial;
    partial.id = OpId(partial_id);
    partial.name = partial_id;
    partial.kind = "partial_matmul";
    partial.params = partial_params;
    partial.inputs = {PortBinding{"a", a->selections}, PortBinding{"b", b->selections}};
    partial.outputs = {PortBinding{"y", {partials_sel}}};
    if (op->shards.empty()) {
        for (Coord p = 0; p < parts; ++p)
            partial.shards.push_back(Shard{ShardId(id + "/" + std::to_string(p)), block_range(p, whole), "", {}, {}});
    } else {
        for (const Shard &parent : op->shards)
            for (Coord p = 0; p < parts; ++p)
                partial.shards.push_back(Shard{ShardId(parent.id.value + "." + std::to_string(p)),
                                               block_range(p, parent.index), parent.device, {}, {}});
    }
    // The reduce and the bias add have the op's own index space: they keep its shards.
    auto carried = [&](const std::string &new_id) {
        std::vector<Shard> out;
        for (size_t k = 0; k < op->shards.size(); ++k)
            out.push_back(Shard{ShardId(new_id + "/" + shard_suffix(id, op->shards[k], k)), op->shards[k].index,
                                op->shards[k].device, {}, {}});
        return out;
    };
    Operation reduce;
    reduce.id = OpId(reduce_id);
    reduce.name = reduce_id;
    reduce.kind = "reduce_sum";
    reduce.params.set("axes", std::vector<std::int64_t>{0});
    reduce.params.set("keepdims", false);
    reduce.inputs = {PortBinding{"x", {partials_sel}}};
    reduce.outputs = {PortBinding{"y", {bias ? reduced_sel : out_sel}}};
    reduce.shards = carried(reduce_id);

    rw.remove_op(op->id);
    rw.put_tensor(Tensor{TensorId(partials_id), partials_id, partials_type.dtype, partials_sel.range,
                         TensorRole::intermediate, {}, {}});
    if (bias)
        rw.put_tensor(Tensor{TensorId(reduced_id), reduced_id, partials_type.dtype, reduced_sel.range,
                             TensorRole::intermediate, {}, {}});
    rw.put_op(stated ? with_stated_selections(rw.graph(), partial, lib) : partial);
    rw.put_op(stated ? with_stated_selections(rw.graph(), reduce, lib) : reduce);
    if (bias) {
        Operation add;
        add.id = OpId(bias_id);
        add.name = bias_id;
        add.kind = "add";
        add.inputs = {PortBinding{"a", {reduced_sel}}, PortBinding{"b", bias->selections}};
        add.outputs = {PortBinding{"y", {out_sel}}};
        add.shards = carried(bias_id);
        rw.put_op(stated ? with_stated_selections(rw.graph(), add, lib) : add);
    }

    const std::vector<Coord> &sizes = *blocks;
    std::string text = id + " contraction " + c->name + " (dim " + std::to_string(c->dim) + ", extent " +
                       std::to_string(c->extent) + ") into " + std::to_string(parts) + " blocks (" +
                       (sizes.front() == sizes.back() ? std::to_string(sizes.front()) + " each" : join_sizes(sizes)) +
                       "): " + partial_id + " " + std::to_string(partial.shards.size()) +
                       (partial.shards.size() == 1 ? " shard" : " shards");
    if (!op->shards.empty()) text += " (product with its " + std::to_string(op->shards.size()) + " shards)";
    text += ", " + reduce_id + " (reduction of partials: " + collective_of(rw.graph(), *rw.graph().find_op(OpId(reduce_id))) + ")";
    if (bias) text += ", " + bias_id + " (bias)";
    return text;
}

std::string collective_of(const Graph &g, const Operation &op) {
    if (!is_reduce_kind(op.kind)) return "";
    const PortBinding *x = op.input("x");
    if (!x || x->selections.size() != 1) return "";
    const std::vector<OpId> producers = g.producers(x->selections[0].tensor);
    if (producers.empty()) return "";
    const SignatureSource &lib = OpLibrary::standard();
    // What each producer shard (an unsharded producer: the op) writes, and where it sits.
    std::vector<ZRange> writes;
    std::vector<std::string> devices;
    for (const OpId &pid : producers) {
        const Operation *producer = g.find_op(pid);
        if (!producer) return "";
        const bool partial_product = producer->kind == "partial_matmul" && op.kind == "reduce_sum";
        if (!partial_product && producer->kind != op.kind) return "";
        if (partial_product && producers.size() != 1) return "";
        auto d = resolve(g, *producer, lib);
        const PortBinding *written = producer->output("y");
        if (!d || !written || written->selections.size() != 1) return "";
        const OperandProjection *write = d->signature.output("y", 0);
        if (!write) return "";
        if (producer->shards.empty()) {
            writes.push_back(selection_of(*write, d->signature.index_space, written->selections[0].range));
            devices.push_back("#" + pid.value);
        }
        for (const Shard &s : producer->shards) {
            writes.push_back(selection_of(*write, s.index, written->selections[0].range));
            devices.push_back(s.device.empty() ? "#" + s.id.value : s.device);
        }
    }
    auto reduce_d = resolve(g, op, lib);
    if (!reduce_d) return "";
    const OperandProjection *read = reduce_d->signature.input("x", 0);
    if (!read) return "";
    std::vector<ZRange> reduce_ranges;
    for (const Shard &s : op.shards) reduce_ranges.push_back(s.index);
    if (reduce_ranges.empty()) reduce_ranges.push_back(reduce_d->signature.index_space);
    bool spread = false;
    for (const ZRange &r : reduce_ranges) {
        if (r.empty()) continue;
        const ZRange reads = selection_of(*read, r, x->selections[0].range);
        std::set<std::string> sources;
        for (size_t k = 0; k < writes.size(); ++k)
            if (reads.intersects(writes[k])) sources.insert(devices[k]);
        if (sources.size() > 1) spread = true;
    }
    if (!spread) return "none";
    return op.shards.size() > 1 ? "reduce_scatter" : "all_reduce";
}

}  // namespace tapestry
