// The search space (docs/search.md): what a candidate plan chooses — for every
// operation, whether and how it is split (an index dimension or a contraction,
// into how many parts), and the placement rule that puts the pieces on devices.
// A candidate becomes shard specs for the shard pass and options for `place`, so
// every candidate is a stage and a plan the passes and the compiler build.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "passes/place.h"
#include "passes/shard.h"

namespace tapestry::search {

// The ways one operation may be split: its index dims that are not reductions and
// its contractions (named by the dims past the index dims, passes/shard.h), each
// with its extent.
struct OpChoices {
    OpId op;
    std::vector<int> dims;
    std::vector<Coord> extents;  // per entry of dims
    std::vector<std::string> names;  // "dim 0", "k", "in", …
    double flops = 1;  // of the whole op (the cost model's count; at least 1): where pipeline cuts start
};

// One point of the space. Per operation of the space (its order): the split dim
// (-1: not split) and the number of parts (1 when not split); and optionally a
// second split of each of those parts along another dim (a product split: the
// batch over data-parallel groups, features within each group), with at most
// `devices` pieces in all. `dim2`/`parts2` are empty when no op has one.
struct Candidate {
    std::vector<int> dim;
    std::vector<int> parts;
    std::vector<int> dim2;   // empty, or per op: the second split's dim (-1: none)
    std::vector<int> parts2; // empty, or per op: its parts (1: none)
    PlacementRule rule = PlacementRule::by_shard;
    int stages = 0;  // pipeline: its stages (2 … devices); 0 for the other rules
    // Fusion (a space that allows it, Space::fusion): the fuse pass runs on the
    // sharded graph before placement — each producer whose pieces feed one
    // consumer's pieces one-to-one joins it in one kernel (docs/passes.md) —
    // except the ops listed (indices into the space's ops, ascending), which stay
    // kernels of their own.
    bool fused = false;
    std::vector<int> unfused;
    // Device maps (a space that allows them, Space::maps): empty, or per op of the
    // space the device its pieces start from — piece k on device (at + k) mod n,
    // overriding the rule for that op (place's explicit maps) — or -1: the rule
    // places it. An op the fuse pass joins to its producer goes with that producer.
    std::vector<int> at;
    // Pipeline cuts (a space that allows them, Space::cuts; rule pipeline): empty —
    // stages of about equal FLOPs, placement's own cut — or stages − 1 indices into
    // the space's ops, ascending, none 0: stage s + 1 begins at op cuts[s] (at the
    // first op placement walks that comes of it or of an op after it: a contraction
    // split's `op.partial`, an op the fuse pass kept).
    std::vector<int> cuts;
    // Substitution (an evaluator that offers it, Evaluator::offer_substitutions):
    // empty — the graph as given — or the goal of the substitution pass run on it
    // first ("expand": composites such as attention and layer norm made of
    // shardable ops; "fuse"). The per-op choices above are then those of the
    // substituted graph's space (its operations, its order).
    std::string substitution;
    friend bool operator==(const Candidate &, const Candidate &) = default;
    // A stable text key ("0=4 -1 0=2x2=4 | shard", "… | shard | fuse -2,5", a map
    // "0=4@2", cuts "… | pipeline:3@4,9", a substitution "… | substitute:expand")
    // for caches and files.
    std::string key() const;
    // The second split of op i, when it has one.
    bool has_second(size_t i) const { return i < dim2.size() && dim2[i] >= 0; }
    // Drops op i's second split.
    void clear_second(size_t i);
    // Sets op i's second split (sizing dim2/parts2 to `ops` first).
    void set_second(size_t i, size_t ops, int d, int p);
    // The key's splits alone ("0=4 - 0=2x1=2"): what the shard pass's stage depends on.
    std::string split_key() const;
    // The key's fusion alone ("fuse -2,5", "" unfused).
    std::string fusion_key() const;
    // Whether op i is placed by a device map.
    bool has_map(size_t i) const { return i < at.size() && at[i] >= 0; }
    // Drops op i's map (the rule places it again).
    void clear_map(size_t i);
    // Maps op i's pieces from `device` on (sizing `at` to `ops` first).
    void set_map(size_t i, size_t ops, int device);
    // Pieces of op i: parts × the second split's parts.
    int pieces(size_t i) const { return parts[i] * (has_second(i) ? parts2[i] : 1); }
};

class Space {
public:
    // The operations of `g` in dependency order with their choices; `devices` caps
    // the parts. Fails on a graph with nothing to split or on devices < 1.
    static Expected<Space, std::string> of(const Graph &g, int devices);

    const std::vector<OpChoices> &ops() const { return ops_; }
    int devices() const { return devices_; }
    // Whether candidates may fuse (the evaluator has a fusion backend to ask).
    bool fusion() const { return fusion_; }
    void allow_fusion(bool on) { fusion_ = on; }
    // Whether candidates may place ops by device maps (Candidate::at).
    bool maps() const { return maps_; }
    void allow_maps(bool on) { maps_ = on; }
    // Whether pipeline candidates may cut their stages where they say (Candidate::cuts).
    bool cuts() const { return cuts_; }
    void allow_cuts(bool on) { cuts_ = on; }
    // The substitution whose graph this space is of ("" for the graph as given):
    // its candidates carry it (Candidate::substitution).
    const std::string &substitution() const { return substitution_; }
    void set_substitution(std::string goal) { substitution_ = std::move(goal); }

    // Nothing split (one device).
    Candidate unsplit() const;
    // Every operation split `parts` ways along its first dim (the batch where the
    // graph has one), where the extent allows.
    Candidate batch_split(int parts) const;
    // Every operation split `parts` ways along its `choice`-th dim (0: the first it
    // offers — the batch —, 1: the next — a linear's output features —, …), where it
    // has one and the extent allows.
    Candidate uniform_split(size_t choice, int parts) const;
    // Every operation split `outer` ways along its first dim (the batch) and each of
    // those parts `inner` ways along its `choice`-th dim, where it offers both: the
    // shape of data parallelism over tensor-parallel groups of `inner` devices.
    Candidate product_split(int outer, size_t choice, int inner) const;
    // The candidate of shard specs (the first spec of an op its split, a second its
    // second split) and a placement: how a hand baseline enters the search. Fails
    // naming the spec that no candidate holds.
    Expected<Candidate, std::string> from_specs(const std::vector<ShardSpec> &specs, PlacementRule rule,
                                                int stages = 0) const;
    // The first op index of each stage s ≥ 1 of a pipeline of `stages`, by
    // placement's own rule (balanced_stages, passes/place.h) on the space's ops,
    // made strictly ascending where a stage came out empty (empty when the ops are
    // fewer than the stages).
    std::vector<int> balanced_cuts(int stages) const;
    // The twins of op i: the other ops of the space with its kind, index space and
    // choices whose id differs from its id only in its first number, where more of
    // the id follows that number — the same op of another layer of a stack
    // ("b3_c_fc" of "b0_c_fc", "/h.7/attn/…" of "/h.0/attn/…"; not "ln_2" of
    // "ln_1"). Empty when it has none.
    const std::vector<int> &twins(size_t i) const;
    // Whether any op has twins (a graph of repeated layers).
    bool has_twins() const { return has_twins_; }
    // The most dims any operation offers.
    size_t most_choices() const;
    // The shard specs of a candidate, in the space's order ("fc1:0=4"; a product
    // split is two specs on one op, the second splitting the first's shards).
    std::vector<ShardSpec> specs(const Candidate &c) const;
    // "fc1:0=4 fc2:2=2 · round-robin" (specs as the CLI writes them, then the rule;
    // "pipeline:2" with its stages, "pipeline:3 cut at fc2, attn" with cuts; then the
    // maps, "· fc1 from device 2, gelu from device 5"; then "· fused", or "· fused
    // but fc1, gelu"; then "· substituted (expand)").
    std::string describe(const Candidate &c) const;
    // The same, brief enough for a table row or a status line on a graph of
    // hundreds of operations: a run of three or more consecutive operations (in the
    // space's order) split alike is written once — "n92 … n175:1=8 (44 ops)", a
    // product split "fc1:0=2,1=2" — and the cuts, maps and unfused operations past
    // the first three are counted ("· fused but n3.pool, n9, n28 and 4 more"). The
    // exports and the session keep describe().
    std::string summary(const Candidate &c) const;
    // Whether the candidate fits the space (sizes, dims offered, parts ≤ extent and devices).
    bool valid(const Candidate &c) const;

private:
    // " · rule[ cut at …][ · maps][ · fused[ but …]][ · substituted (goal)]", each
    // list past `most` names counted (0: every name).
    std::string placement_text(const Candidate &c, size_t most) const;
    std::vector<OpChoices> ops_;
    int devices_ = 1;
    bool fusion_ = false;
    bool maps_ = false;
    bool cuts_ = false;
    std::vector<std::vector<int>> twins_;  // per op
    bool has_twins_ = false;
    std::string substitution_;
};

// A candidate of space `from` (an earlier graph's) carried to space `to` (the
// graph since an edit) by operation id, for a warm start after the edit: each op
// of `to` takes the split the op of its id had, where `to` still offers that dim
// with the extent and devices for it, and is left whole otherwise (an op new to
// the graph, a dim gone, fewer devices); the rule and pipeline stages as they
// were; fusion with its kept-out ops by id, device maps by id (a device past
// `to`'s dropped) and pipeline cuts by id (placement's own cut when an op they
// named is gone), each only where `to` allows it. `c` must be of `from` and `to`
// of the same substitution. Empty when the result is not a candidate of `to`
// (a pipeline of more stages than its devices or ops).
std::optional<Candidate> carry_over(const Space &from, const Candidate &c, const Space &to);

const char *rule_name(PlacementRule r);  // "shard", "round-robin", "pipeline", "spread"
// rule_name's inverse; errors name the unknown rule and the known ones.
Expected<PlacementRule, std::string> parse_rule_name(const std::string &name);

}  // namespace tapestry::search
