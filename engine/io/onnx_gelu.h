// Private to engine/io: finds the node subgraphs that ONNX exporters emit for one
// GELU (the erf form and the tanh approximation; docs/onnx.md lists the accepted
// shapes) so that the importer maps each onto a single `gelu` operation.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/tensor_data.h"

namespace tapestry::onnx_detail {

struct GeluMatch {
    int root = -1;              // index of the final Mul node; its output is the GELU's
    std::vector<int> nodes;     // every node of the pattern except Constant nodes, ascending, root included
    std::string x;              // the ONNX value the GELU reads
    std::string approximate;    // "none" (erf form) or "tanh"
    std::vector<std::string> constants;  // the constant operands of the pattern (each holds one value)
};

// Looks up the initializer of a name (nullptr when it is none).
using InitializerLookup = std::function<const TensorData *(const std::string &)>;

// Every GELU subgraph of `graph`, in node order. A pattern is matched only when its
// constants equal the expected values within 1e-6 (relative) and each of its
// intermediate values has exactly one consumer and is not a graph output. The
// matches are disjoint (a candidate sharing a node with an earlier match is dropped).
std::vector<GeluMatch> find_gelu_patterns(const onnx::GraphProto &graph, const InitializerLookup &initializer);

}  // namespace tapestry::onnx_detail
