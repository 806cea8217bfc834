// Resolving an operation against the op library: the operand types it sees, its
// absolute signature (projections translated to its selections), and the
// selections a shard derives from them. Shared by validation, export, the
// inspector and, later, the passes and executors.
#pragma once

#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/signature.h"

namespace tapestry {

// Operand types of an operation's inputs, from its selections and the tensors'
// dtypes. Fails (with the offending field) when a tensor is missing.
Expected<std::vector<PortTypes>, DerivationError> operand_types(const Graph &g, const Operation &op);

// The library's derivation with every projection translated by its selection's
// start, so that it maps the op's index space into tensor coordinates.
Expected<Derivation, DerivationError> resolve(const Graph &g, const Operation &op, const SignatureSource &lib);

// The selection an index sub-range reads/writes through one operand projection:
// its image, intersected with the operand's extent (the operation's selection of
// that tensor) when the projection is clipped. For an empty index range the
// result is empty — except into a rank-0 operand, where the 0-dim range always
// holds its one point: callers that count elements must treat an empty index
// range as touching nothing.
ZRange selection_of(const OperandProjection &p, const ZRange &index_range, const ZRange &operand_range);

// Input and output selections of a shard with index range `index`, derived from an
// absolute signature (ports and operands in the operation's order).
struct ShardSelections {
    std::vector<PortBinding> inputs;
    std::vector<PortBinding> outputs;
};
ShardSelections derive_shard_selections(const Graph &g, const Operation &op, const Signature &absolute,
                                        const ZRange &index);

}  // namespace tapestry
