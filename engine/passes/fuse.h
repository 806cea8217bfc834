// The fusion pass (issue 5): producer–consumer shard fusion where selections match
// exactly (Tapestry's fusion edge). A head (matmul, linear, conv2d or an
// elementwise op) and the chain of elementwise ops consuming its value, optionally
// ending in a normalization, become one `fused` operation (ops/fused.h); the
// intermediate tensors disappear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "common/node_memo.h"
#include "graph/graph.h"
#include "ops/fusion.h"
#include "ops/library.h"
#include "passes/certificate.h"
#include "passes/stage.h"

namespace tapestry {

class FuseMemo;

struct FuseOptions {
    // Kinds that may take part (as head or epilogue); empty: every fusable kind.
    std::vector<std::string> kinds;
    // Operations never fused.
    std::vector<OpId> exclude;
    const OpLibrary *library = nullptr;  // null: OpLibrary::standard()
    // The backends every fused op must run on (ops/fusion.h), e.g.
    // cpu::fusion_backend(): a chain is fused only when each can run every piece.
    // At least one is required.
    std::vector<const FusionBackend *> backends;
    // Certify the stage against the input graph when set.
    std::optional<CertifyOptions> certify;
    // Keeps the fused ops the pass built (null: none): the search's, whose candidates
    // fuse the same nodes again and again. For one set of kinds, library and backends.
    FuseMemo *memo = nullptr;
};

// The fused operations the pass built, by the chain of nodes each was built from
// (the head and its members, by pointer: nodes are immutable, and the memo holds
// the ones it keys on), or why the backends or the library refused the chain — so
// a chain fused again is the same node, and what is built from it (placement, the
// compiler: passes/place.h, plan/compile.h) is found in their memos too. Exact:
// the stage is the same with or without it. Past `chains` chains it starts over.
// Not thread-safe: one per thread.
struct FuseTables;  // fuse.cpp
class FuseMemo : public NodeMemo<FuseTables> {
public:
    explicit FuseMemo(std::size_t chains = 1 << 14);
};

// The fusion stage. For each producer P (in dependency order) whose one output
// tensor T is not a graph output and is read by exactly one consumer C, an
// elementwise op reading T one-to-one (or a softmax/layernorm/rmsnorm normalizing
// T in place, split only along dims it does not normalize: it ends the chain, and
// the fused op takes its index space), whose pieces (shards, or the whole op when
// unsharded) read exactly the selections P's pieces write (same count, equal
// selections, compatible devices), P and C are replaced by one `fused` op with
// P's id and P's shards; greedily, C's own consumer may join the chain. T is
// removed. A chain is fused only when every backend of FuseOptions::backends can
// run it (ops/fusion.h; the CPU's: runtime/cpu/fusion_backend.h). Edges between fusable kinds that are not fused
// are named in the summary with the reason. Fails only when the graph does not
// resolve or no backend is given.
Expected<Stage, std::string> fuse(const Graph &g, const FuseOptions &options = {});

}  // namespace tapestry
