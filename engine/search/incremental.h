// Incremental evaluation (docs/search.md, "Incremental evaluation"): a child differs
// from its parent in one choice, so most of what its evaluation builds — each
// op's split, the moves between ops whose splits did not change, the placed
// pieces, the compiler's pieces and kernel costs — was built before. A Workspace
// keeps it, by the nodes it was built from: each op's split as the shard pass
// rewrites it alone (replayed to build a candidate's sharded graph), the movement
// walks' decisions (passes/movement.h), the fused ops (passes/fuse.h),
// placement's nodes (passes/place.h) and the
// compiler's pieces (plan/compile.h). Nodes are immutable and kept nodes are
// handed out again, so a graph built from kept nodes has the same pointers as the
// last one, and every memo after it hits. Exact: every figure is the compiled
// plan's own (a test builds each candidate both ways and compares the graphs and
// plans). One workspace serves one evaluation at a time; a pool lends them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/expected.h"
#include "graph/delta.h"
#include "graph/signature.h"
#include "passes/fuse.h"
#include "passes/movement.h"
#include "passes/place.h"
#include "plan/compile.h"
#include "search/space.h"

namespace tapestry::search {

class Workspace {
public:
    MovementMemo movement;
    FuseMemo fusion;  // for one evaluator's fusion backends
    PlacementMemo placement;
    plan::PieceMemo pieces;

    // The shard stage's graph of `c` on `base` (the graph of `space`), as
    // shard(base, its specs, no propagation, with movement) makes it: each split
    // op's rewrite by its own specs (made once per op and choice, on `base`),
    // replayed in the specs' order, then the movement walk. Fails with the shard
    // pass's words where a spec is refused. nullopt where the rewrites do not
    // compose — an op's rewrite names a node another's makes or `base` holds under
    // its op's id ("fc1.partial" beside "fc1"): the caller runs the pass.
    std::optional<Expected<Graph, std::string>> sharded(const Space &space, const Graph &base, const Candidate &c,
                                                        const SignatureSource &lib);

    // Splits made and replayed (tests, benchmarks).
    std::int64_t splits_made() const { return splits_made_; }
    std::int64_t splits_replayed() const { return splits_replayed_; }

private:
    // One op's rewrite by its own specs, on the base graph.
    struct Split {
        std::string error;  // the pass's refusal, or empty
        std::vector<NodeChange> changes;
        bool composes = true;
    };
    // (space, op, dim, parts, second dim, second parts)
    using SplitKey = std::tuple<const Space *, size_t, int, int, int, int>;
    std::map<SplitKey, Split> splits_;
    std::int64_t splits_made_ = 0, splits_replayed_ = 0;
};

// Workspaces lent to evaluations: one per evaluation running at once, kept
// between them. Thread-safe.
class WorkspacePool {
public:
    std::unique_ptr<Workspace> take();
    void give(std::unique_ptr<Workspace> w);
    // Calls f(const Workspace &) on each workspace not lent out.
    template <class F>
    void for_each(F &&f) {
        std::lock_guard lock(mutex_);
        for (const auto &w : free_) f(*w);
    }

private:
    std::mutex mutex_;
    std::vector<std::unique_ptr<Workspace>> free_;
};

}  // namespace tapestry::search
