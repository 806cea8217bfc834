// Explicit data movement (issue 5, DESIGN.md §5): where a consumer's shards read
// elements that another shard of the producer wrote, the sharding pass inserts a
// `move` node labelled with the collective it becomes across devices, and
// data_movement() says — exactly, with ISL — which elements move between which shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/node_memo.h"
#include "graph/delta.h"
#include "graph/signature.h"

namespace tapestry {

// Elements move when a consumer shard reads what a producer shard on another
// device wrote. In a placed graph (every operation sharded, every shard with a
// Shard::device: what the placement pass, passes/place.h, makes) each piece sits
// on its device ("node:index"); otherwise — devices stated for some shards only
// count as unplaced — shard k of every operation sits on virtual device k ("#k"),
// and an unsharded operation on "#0".
// Placement changes the devices and so the transfers: it inserts the moves its
// devices need, and a move whose pieces end up on one device moves nothing.

// Whether every operation of `g` is sharded and every shard has a device.
bool every_piece_placed(const Graph &g);
// The device piece k of `op` sits on in a placed graph: shard k's device, or "#k"
// when it has none (an unsharded operation is one piece, k = 0).
std::string shard_device(const Operation &op, size_t k);

// One shard-to-shard transfer carried by a move op.
struct Transfer {
    OpId op;                 // the move op
    TensorId tensor;         // the tensor it moves (its input x)
    std::string collective;  // the move's collective parameter
    ShardId from_shard;      // the producer shard that wrote the elements (the op id when unsharded)
    ShardId to_shard;        // the consumer shard that reads them (the op id when unsharded)
    std::int64_t elements = 0;
    std::int64_t bytes = 0;
};

// Every transfer of every move op of `g`, in op order, then producer shard order,
// then consumer shard order: for producer piece i and consumer piece j on different
// devices, the number of points of (elements i writes) ∩ (elements j reads through
// the move's output), counted exactly (halos included; clipped reads clipped).
std::vector<Transfer> data_movement(const Graph &g, const SignatureSource &lib);
// The same against the standard op library.
std::vector<Transfer> data_movement(const Graph &g);

// Inserts a `move` between each tensor and each consumer that reads some of it
// from a producer shard on another device (a tensor read only by same-device
// shards gets nothing; inputs and parameters, which no op produces, are left to
// placement). A move is sharded like the producer and placed on its devices. The move reads the whole tensor and writes the new tensor
// "<tensor>.<collective>" (".<consumer>" appended when taken), which the consumer
// now reads in its place. The move is sharded like the producer (shard k of the
// move carries what producer shard k wrote, so it starts on device k); it is
// inserted only where the producers' writes partition the tensor into boxes.
// Collective: a reduce_* consumer reducing over every split dim of the producer →
// reduce_scatter (several consumer shards) or all_reduce (one); every consumer
// shard (two or more) reading all that the producer shards (two or more) wrote →
// all_gather; otherwise send_recv (halo exchange, re-partitioning, a gather onto
// an unsharded consumer). Returns the ids of the move ops, in insertion order.
//
// `memo` (null: none) keeps what the walk decided and made, for the search, which
// builds graphs from the same nodes again and again (search/evaluate.h).
class MovementMemo;
std::vector<OpId> insert_data_movement(RecordingRewriter &rw, const SignatureSource &lib,
                                       MovementMemo *memo = nullptr);

// insert_data_movement's decisions, kept by the nodes that decide them: per tensor
// and consumer — the tensor, its producers and the consumer, by pointer (nodes are
// immutable, and the memo holds the ones it is keyed by, so no address is reused
// while an entry lives) — whether a move goes between them and how (its collective,
// the producers' boxes and devices); and the nodes each decision made (the moved
// tensor, the move, the consumer reading it), so a graph built again from the same
// nodes gets the same nodes back and its rewrites compare pointers, not contents.
// Exact: the walk's result is the same with or without it. Past `pieces` shards
// held it starts over. Not thread-safe: one per thread.
struct MovementTables;  // movement.cpp
class MovementMemo : public NodeMemo<MovementTables> {
public:
    explicit MovementMemo(std::size_t pieces = 1 << 19);
    std::size_t size() const;  // the shards of the nodes it holds, and one per entry
};

// "moves 393216 elements (1572864 bytes) in 6 transfers: all_gather 6" — counts
// are transfers per collective; "moves nothing" when there is none.
std::string movement_summary(const std::vector<Transfer> &transfers);

}  // namespace tapestry
