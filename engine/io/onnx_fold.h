// Private to engine/io: shape arithmetic folded at import (docs/onnx.md, "Shape
// arithmetic"). Exporters such as PyTorch's compute a Reshape's target from the
// input's own shape — Shape, Gather, Unsqueeze, Concat — and masks from
// ConstantOfShape, Range, Where. Our graphs have static shapes, so all of it is
// known at import: each such node is evaluated once, here, and replaced by an
// initializer holding its value, before anything else reads the model (the GELU
// and attention matchers then see plain constants, as in a model built by hand).
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "common/expected.h"

namespace tapestry::onnx_detail {

// Operators that exist in our import only as shape arithmetic: supported where
// folding takes them (every operand a constant; Shape and Size of a value whose
// shape is known), refused otherwise. Sorted.
const std::vector<std::string> &shape_arithmetic_operators();

struct FoldFailure {
    std::string message;  // names the node and the operand
    std::string node;     // "Where (mask_fill)", for the unsupported list
};

// Folds, in node order and until nothing more folds, every node of `model`'s
// graph that computes on constants alone:
//  * the shape-arithmetic operators above (Shape and Size need only their
//    operand's static shape, as ONNX shape inference gives it);
//  * Add, Sub, Mul, Div, Pow, Sqrt, Neg, Cast, Identity, Gather, Concat, Slice,
//    Reshape, Flatten, Squeeze and Unsqueeze when every operand is a constant
//    and each is an integer or boolean tensor or was itself made of a shape — a
//    float weight scaled by a constant stays an operation of the graph, as before;
//  * Where and Trilu when every operand is a constant, of any type (on a tensor
//    the graph computes the importer maps them, with a constant condition).
// Constants are initializers and Constant nodes. Each folded node becomes an
// initializer named after its output (one per output) and leaves the graph.
// Integer division truncates toward zero (as ONNX Runtime's). Returns the number
// of nodes folded. Fails, naming the node, where a shape-arithmetic operator
// reads a value the graph computes, an operand is malformed, a division by zero,
// a result would hold more than `max_elements` values, or the results together
// more than `max_total`.
Expected<int, FoldFailure> fold_shape_arithmetic(onnx::ModelProto &model, std::int64_t max_elements,
                                                 std::int64_t max_total);

}  // namespace tapestry::onnx_detail
