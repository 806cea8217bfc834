// Shard regions of a tensor: derive each shard's selections through the op's
// resolved signature (the same derivation validation and the passes use), keep
// the ones on the tensor, and let ISL count the union and the multiply-read part
// exactly — boxes of neighbouring shards may overlap in any pattern, so summing
// pairwise intersections would count a point read by three shards twice.
#include "passes/shard_regions.h"

#include <algorithm>

#include "graph/resolve.h"
#include "index/index_set.h"
#include "ops/library.h"

namespace tapestry {
namespace {

enum class Side { writes, reads };

// Regions of `tensor` in the selections of one side of an op's shards.
Expected<std::vector<ShardRegion>, std::string> regions_of(const Graph &g, const Operation &op, const Tensor &tensor,
                                                           Side side, const SignatureSource &lib) {
    auto derived = resolve(g, op, lib);
    if (!derived)
        return unexpected("operation '" + op.id.value + "' does not resolve: " + derived.error().field + ": " +
                          derived.error().message);
    const Signature &sig = derived->signature;
    std::vector<ShardRegion> out;
    auto collect = [&](const ShardId &shard, const ZRange &index) {
        const ShardSelections sel = derive_shard_selections(g, op, sig, index);
        const std::vector<PortBinding> &ports = side == Side::writes ? sel.outputs : sel.inputs;
        for (const PortBinding &b : ports)
            for (const TensorSelection &s : b.selections) {
                if (s.tensor != tensor.id || index.empty()) continue;
                // Keep what lies in the tensor: a clipped projection is already inside
                // its operand; an unclipped one must be (validation says so otherwise).
                const ZRange box = s.range.rank() == tensor.range.rank() ? s.range.intersect(tensor.range) : ZRange();
                if (box.rank() != tensor.range.rank() || box.empty()) continue;
                out.push_back(ShardRegion{op.id, shard, b.name, box});
            }
    };
    if (op.shards.empty()) {
        collect(ShardId(), sig.index_space);
    } else {
        for (const Shard &s : op.shards) {
            if (s.index.rank() != sig.index_space.rank())
                return unexpected("shard '" + s.id.value + "' of '" + op.id.value + "' has index range " +
                                  s.index.to_string() + " of the wrong rank");
            collect(s.id, s.index);
        }
    }
    return out;
}

void finish(TensorShardMap &map) {
    const int rank = map.extent.rank();
    std::vector<ZRange> boxes;
    for (const ShardRegion &r : map.regions) boxes.push_back(r.box);
    map.covered = IndexSet::of_ranges(rank, boxes).count();
    IndexSet shared(rank);
    for (size_t i = 0; i < map.regions.size(); ++i)
        for (size_t j = i + 1; j < map.regions.size(); ++j) {
            const ShardRegion &a = map.regions[i], &b = map.regions[j];
            if (a.op == b.op && a.shard == b.shard) continue;  // one shard reading twice is no halo
            const ZRange meet = a.box.intersect(b.box);
            if (meet.empty()) continue;
            map.overlaps.push_back(RegionOverlap{i, j, meet});
            shared = shared.unite(IndexSet::of_range(meet));
        }
    map.shared = shared.count();
    if (auto parts = shared.as_boxes()) map.shared_boxes = std::move(*parts);
}

Expected<const Tensor *, std::string> find(const Graph &g, const TensorId &id) {
    const Tensor *t = g.find_tensor(id);
    if (!t) return unexpected("no tensor '" + id.value + "' in the graph");
    return t;
}

}  // namespace

bool TensorShardMap::sharded() const {
    return std::any_of(regions.begin(), regions.end(), [](const ShardRegion &r) { return !r.shard.empty(); });
}

std::vector<std::string> TensorShardMap::labels() const {
    std::vector<std::string> out;
    for (const ShardRegion &r : regions)
        if (std::find(out.begin(), out.end(), r.label()) == out.end()) out.push_back(r.label());
    return out;
}

Expected<TensorShardMap, std::string> tensor_writers(const Graph &g, const TensorId &tensor,
                                                     const SignatureSource *library) {
    const SignatureSource &lib = library ? *library : OpLibrary::standard();
    auto t = find(g, tensor);
    if (!t) return unexpected(t.error());
    TensorShardMap map{tensor, (*t)->range, {}, {}, 0, 0, {}};
    for (const OpId &id : g.producers(tensor)) {
        auto regions = regions_of(g, *g.find_op(id), **t, Side::writes, lib);
        if (!regions) return unexpected(regions.error());
        map.regions.insert(map.regions.end(), regions->begin(), regions->end());
    }
    finish(map);
    return map;
}

Expected<TensorShardMap, std::string> tensor_readers(const Graph &g, const TensorId &tensor, const OpId &consumer,
                                                     const SignatureSource *library) {
    const SignatureSource &lib = library ? *library : OpLibrary::standard();
    auto t = find(g, tensor);
    if (!t) return unexpected(t.error());
    const Operation *op = g.find_op(consumer);
    if (!op) return unexpected("no operation '" + consumer.value + "' in the graph");
    const std::vector<TensorId> reads = op->input_tensors();
    if (std::find(reads.begin(), reads.end(), tensor) == reads.end())
        return unexpected("operation '" + consumer.value + "' does not read tensor '" + tensor.value + "'");
    TensorShardMap map{tensor, (*t)->range, {}, {}, 0, 0, {}};
    auto regions = regions_of(g, *op, **t, Side::reads, lib);
    if (!regions) return unexpected(regions.error());
    map.regions = std::move(regions).value();
    finish(map);
    return map;
}

std::string overlap_shapes_text(const std::vector<RegionOverlap> &overlaps) {
    std::vector<std::pair<std::string, int>> groups;  // first-seen order
    for (const RegionOverlap &o : overlaps) {
        std::string shape;
        for (int d = 0; d < o.box.rank(); ++d) shape += (d ? "×" : "") + std::to_string(o.box.extent(d));
        if (o.box.rank() == 0) shape = "1";
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == shape; });
        if (it == groups.end())
            groups.emplace_back(shape, 1);
        else
            ++it->second;
    }
    std::string out;
    for (const auto &[shape, n] : groups) out += (out.empty() ? "" : " + ") + std::to_string(n) + "×(" + shape + ")";
    return out;
}

}  // namespace tapestry
