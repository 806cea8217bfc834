// The placement pass (DESIGN.md §6): every piece of every operation (a shard, or
// the whole of an unsharded op, which becomes one shard) gets a device of the
// plan's cluster, written into Shard::device as "node:index". Data movement then
// follows the devices (passes/movement.h): a move sits where its producer's
// pieces sit, and moves are inserted where placement makes a consumer read what
// another device wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "common/node_memo.h"
#include "graph/graph.h"
#include "graph/signature.h"
#include "passes/certificate.h"
#include "passes/stage.h"

namespace tapestry {

class MovementMemo;  // passes/movement.h
class PlacementMemo;  // below

class OpLibrary;

enum class PlacementRule {
    by_shard,     // shard k → device k mod n (the implicit rule of unplaced graphs, made explicit)
    round_robin,  // every piece, in dependency order, takes the next device
    pipeline,     // ops in dependency order cut into contiguous stages of about equal FLOPs;
                  // stage s owns a contiguous group of devices, shard k → its group's device k mod size
    spread        // shard k of an op's P pieces → device k·⌊n/P⌋: an op split fewer ways than the
                  // devices spreads over the cluster (each group's first device) instead of piling
                  // onto the first devices — data parallel over tensor-parallel groups
};

struct PlacementOptions {
    std::vector<std::string> devices;  // "0:0", "0:1", … (cost::ClusterShape::device_name)
    PlacementRule rule = PlacementRule::by_shard;
    int stages = 0;  // pipeline: the number of stages (0: one per device, or one more than the cuts)
    // Pipeline: the ops where stages 2, 3, … begin, in the dependency order the
    // placement walks (moves aside); empty: stages of about equal FLOPs. The stages
    // are then the cuts plus one.
    std::vector<OpId> cuts;
    // Explicit maps: op → the devices of its pieces in shard order (one device: all
    // of them there). Overrides the rule for that op.
    std::map<OpId, std::vector<std::string>> ops;
    bool movement = true;  // insert the moves the devices need
    // Count what the moves carry for the stage's summary (a second pass over them:
    // the search's evaluations, whose summaries nobody reads, leave it out).
    bool describe_movement = true;
    const SignatureSource *library = nullptr;  // null: OpLibrary::standard()
    // Keeps what placement decided and made (null: none): the search's, whose
    // candidates place the same nodes again and again.
    PlacementMemo *memo = nullptr;
    MovementMemo *movement_memo = nullptr;  // the movement walk's (passes/movement.h)
    std::optional<CertifyOptions> certify;
    std::string text;  // the options as the user wrote them, for the stage
};

// "shard", "round-robin", "pipeline", "pipeline:S" or "pipeline:S@op,op" (stage 2
// begins at the first op named, stage 3 at the next, …), then any number of
// ";op=dev,dev,…" explicit maps (or given separately as `maps`, "op=0:0,0:1").
// Errors name the part: "placement 'pipline': unknown rule (known: shard,
// round-robin, pipeline[:stages])".
Expected<PlacementOptions, std::string> parse_placement(const std::string &rule, const std::vector<std::string> &maps,
                                                        const std::vector<std::string> &devices);

// The FLOPs of a whole operation as the cost model counts them (at least 1; 1 when
// it does not resolve): what the pipeline rule balances.
double op_flops(const Graph &g, const Operation &op, const OpLibrary &lib);
// The pipeline rule's stages: ops in order, with these FLOPs, cut into `stages`
// stages of about equal FLOPs — each op in the stage its FLOP midpoint falls in
// (stages may be empty where one op outweighs a stage).
std::vector<int> balanced_stages(const std::vector<double> &flops, int stages);

// What placement made, kept for the search (whose candidates place the same nodes
// again and again): each placed operation and move by the node it placed (by
// pointer: nodes are immutable, and the memo holds them, so no address is reused
// while an entry lives) and the devices its pieces got, and each operation's FLOPs
// for the pipeline rule. Kept for one list of devices (another list starts it
// over). Exact: placement's result is the same with or without it. Past `pieces`
// shards held it starts over. Not thread-safe: one per thread.
struct PlacementTables;  // place.cpp
class PlacementMemo : public NodeMemo<PlacementTables> {
public:
    explicit PlacementMemo(std::size_t pieces = 1 << 19);
};

// The placement stage. Refuses (naming the op or device) an explicit map naming
// an unknown op or a device outside `devices`, a map whose length is neither 1
// nor the op's piece count, no devices, or more pipeline stages than devices; and
// pipeline cuts that name no op (or a move), that do not follow one another in
// dependency order, that cut before the first op, whose count is not the stages
// less one, or that come with another rule.
Expected<Stage, std::string> place(const Graph &g, const PlacementOptions &options);

}  // namespace tapestry
