// Private to engine/io: finds the multi-head attention subgraph that exporters emit
// (head Reshape/Transpose of q, k, v; MatMul; scale Mul/Div; optional additive mask
// Add; Softmax; MatMul; Transpose and Reshape back) so that the importer maps it
// onto one `attention` operation when the shapes and constants fit.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace tapestry::onnx_detail {

struct AttentionMatch {
    int root = -1;            // index of the final Reshape (its output is the attention's)
    std::vector<int> nodes;   // every node of the pattern, ascending, root included
    std::string q, k, v;      // the [B, S, H·E] values the heads are cut from
    std::string q_heads_shape, k_heads_shape, v_heads_shape;  // the head Reshapes' shape inputs
    std::string merge_shape;  // the final Reshape's shape input
    std::string scale;        // the scalar of the scale node ("" when there is none)
    bool scale_divides = false;  // Div (scores / c) rather than Mul (scores · c)
    std::string mask;         // the additive mask ("" when there is none)
};

// Every attention subgraph of `graph`, in node order: Reshape(Transpose(MatMul(
// Softmax(axis −1 of [Add(mask,] Mul|Div(MatMul(Tq, Tk), c)[)]), Tv), perm 0 2 1 3))
// with Tq = Transpose(Reshape(q), perm 0 2 1 3), Tk = Transpose(Reshape(k), perm
// 0 2 3 1), Tv = Transpose(Reshape(v), perm 0 2 1 3). Each intermediate value has one
// consumer and is not a graph output. Shapes and constant values are the
// importer's to check (it maps the nodes one by one when they do not fit).
std::vector<AttentionMatch> find_attention_patterns(const onnx::GraphProto &graph);

}  // namespace tapestry::onnx_detail
