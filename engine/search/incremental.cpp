// Incremental evaluation (see incremental.h).
#include "search/incremental.h"

#include <algorithm>

#include "passes/shard.h"

namespace tapestry::search {

namespace {

// A node change replayed as the shard pass's rewriter made it: a put appends a new
// node or replaces the one of its id in place, a removal drops it.
void replay(Graph &g, const NodeChange &c) {
    if (c.kind == NodeChange::Kind::operation) {
        if (c.op_after) g.put_op(c.op_after);
        else g.remove_op(OpId(c.id));
    } else {
        if (c.tensor_after) g.put_tensor(c.tensor_after);
        else g.remove_tensor(TensorId(c.id));
    }
}

bool names_below(const Graph &g, const std::string &prefix) {
    for (const OpPtr &op : g.operations())
        if (op->id.value.rfind(prefix, 0) == 0) return true;
    for (const TensorPtr &t : g.tensors())
        if (t->id.value.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace

std::optional<Expected<Graph, std::string>> Workspace::sharded(const Space &space, const Graph &base,
                                                               const Candidate &c, const SignatureSource &lib) {
    Graph g = base;
    for (size_t i = 0; i < space.ops().size() && i < c.dim.size(); ++i) {
        if (c.dim[i] < 0 || c.parts[i] < 2) continue;
        const bool second = c.has_second(i);
        const SplitKey key{&space, i, c.dim[i], c.parts[i], second ? c.dim2[i] : -1, second ? c.parts2[i] : 1};
        auto it = splits_.find(key);
        if (it == splits_.end()) {
            // The op's own specs, as Space::specs writes them, through the pass alone.
            Candidate alone = space.unsplit();
            alone.dim[i] = c.dim[i];
            alone.parts[i] = c.parts[i];
            if (second) alone.set_second(i, space.ops().size(), c.dim2[i], c.parts2[i]);
            ShardOptions o;
            o.specs = space.specs(alone);
            o.propagate = false;
            o.movement = false;
            o.describe_movement = false;
            o.library = &lib;
            Split split;
            auto st = shard(base, o);
            if (!st) {
                split.error = st.error();
            } else {
                split.changes = st->diff.changes();
                // A contraction's rewrite names what it makes after the op ("fc1.partial",
                // "fc1.reduce"), with a suffix where that is taken: taken in `base`, the
                // name depends on what the other ops' rewrites removed or made.
                const bool makes = std::any_of(split.changes.begin(), split.changes.end(),
                                               [](const NodeChange &ch) { return ch.added(); });
                split.composes = !makes || !names_below(base, space.ops()[i].op.value + ".");
            }
            it = splits_.emplace(key, std::move(split)).first;
            ++splits_made_;
        } else {
            ++splits_replayed_;
        }
        const Split &split = it->second;
        if (!split.error.empty()) return Expected<Graph, std::string>(unexpected(split.error));
        if (!split.composes) return std::nullopt;
        for (const NodeChange &change : split.changes) {
            if (change.added() && g.has_id(change.id)) return std::nullopt;
            replay(g, change);
        }
    }
    RecordingRewriter rw(g);
    insert_data_movement(rw, lib, &movement);
    return Expected<Graph, std::string>(std::move(g));
}

std::unique_ptr<Workspace> WorkspacePool::take() {
    {
        std::lock_guard lock(mutex_);
        if (!free_.empty()) {
            std::unique_ptr<Workspace> w = std::move(free_.back());
            free_.pop_back();
            return w;
        }
    }
    return std::make_unique<Workspace>();
}

void WorkspacePool::give(std::unique_ptr<Workspace> w) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(w));
}

}  // namespace tapestry::search
