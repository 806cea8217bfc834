// What the op library tells the graph about one operation: output types, index
// space and one index projection per operand (DESIGN.md §3–§4). Declared here, in
// the graph layer, so validation can ask the op library (a higher layer) through
// the SignatureSource interface without depending on it.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/dtype.h"
#include "graph/params.h"
#include "index/index_projection.h"

namespace tapestry {

// The type of one operand as the op sees it: dtype and the shape of its selection.
struct OperandType {
    DType dtype = DType::f32;
    ZPoint shape;
    friend bool operator==(const OperandType &, const OperandType &) = default;
};

// Operands bound to one named port, in order (a port may be variadic, e.g. concat).
struct PortTypes {
    std::string port;
    std::vector<OperandType> operands;
};

// How one operand is accessed. `clipped` marks operands whose projected boxes may
// reach outside the operand (zero padding of convolutions, the pieces of a
// concat): the elements actually read are the image intersected with the
// operand's extent. Unclipped images must lie inside the operand.
struct OperandProjection {
    IndexProjection projection;
    bool clipped = false;
    friend bool operator==(const OperandProjection &, const OperandProjection &) = default;
};

struct PortProjections {
    std::string port;
    std::vector<OperandProjection> operands;
    friend bool operator==(const PortProjections &, const PortProjections &) = default;
};

// An operation's index space and projections. Projections produced by the op
// library are relative to zero-origin operands; the graph translates them by each
// selection's start (Tapestry's applyRelativeSignature).
struct Signature {
    ZRange index_space;
    std::vector<PortProjections> inputs;
    std::vector<PortProjections> outputs;

    const OperandProjection *input(const std::string &port, size_t i) const;
    const OperandProjection *output(const std::string &port, size_t i) const;
    // Whether index dim `dim` is a reduction: no output projection reads it (its
    // column is zero in every output map), so its points combine into one element.
    bool is_reduction_dim(int dim) const;
    friend bool operator==(const Signature &, const Signature &) = default;
};

struct Derivation {
    std::vector<PortTypes> outputs;  // one entry per output port, in the op's port order
    Signature signature;
};

// Why an op's parameters or operands are unacceptable. `field` is relative to the
// operation: "params.stride", "inputs.x[0]", "inputs" (a missing port), "kind".
struct DerivationError {
    std::string code;  // "bad-param", "missing-param", "rank-mismatch", "shape-mismatch", "dtype-mismatch", "unknown-op", "arity"
    std::string field;
    std::string message;
};

class SignatureSource {
public:
    virtual ~SignatureSource() = default;
    virtual bool knows(const std::string &kind) const = 0;
    // Output types and signature of an op of `kind` with `params` applied to operands of
    // the given types (ports in any order; missing optional ports simply absent).
    virtual Expected<Derivation, DerivationError> derive(const std::string &kind, const Params &params,
                                                         const std::vector<PortTypes> &inputs) const = 0;
};

}  // namespace tapestry
