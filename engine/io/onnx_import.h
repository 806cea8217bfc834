// ONNX import (opsets 13–17; older models converted to 13 with ONNX's version
// converter): reads a model with the ONNX library, runs ONNX shape
// inference, and maps every node to operations of the op library. Initializers and
// Constant nodes become parameter tensors carrying their values. A model with
// unsupported operators is refused with the list of operator types and node
// names; nothing is dropped silently.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"

namespace tapestry {

struct OnnxImportOptions {
    // Values for symbolic/unknown input dimensions, by dim_param name ("batch" → 8).
    std::vector<std::pair<std::string, std::int64_t>> dim_values;
    // Fold an inference BatchNormalization that is a Conv's only consumer into that
    // conv2d (new parameter tensors "<W>.folded_<bn>", "<B>.folded_<bn>").
    bool fold_batchnorm = true;
    // Map the exported multi-head attention subgraph (head Reshape/Transpose, MatMul,
    // scale, additive mask, Softmax, MatMul, merge) onto one `attention` operation.
    bool fuse_attention = true;
    // The most values one constant the importer makes may hold — a folded
    // ConstantOfShape, Range or Expand (io/onnx_fold.h), a pad block, a mask, the
    // zeros of a transposed convolution — and the folded ones together at most
    // four times that. The default takes VGG-19's largest weight (103 M values)
    // as a ConstantOfShape makes it; larger is refused naming the node. (A file
    // a few bytes long can ask for these: the fuzzer sets a small bound.)
    std::int64_t max_made_values = std::int64_t{1} << 27;
};

struct OnnxImportError {
    std::string message;  // one paragraph naming the file and what is wrong
    // For unsupported operators: "OpType (node name)" entries. Also non-empty, naming
    // what, when a valid model uses a feature the importer lacks (an attribute value,
    // an element type, an older opset); empty for errors in the file itself.
    std::vector<std::string> unsupported;
};

Expected<Graph, OnnxImportError> import_onnx(const std::filesystem::path &model, const OnnxImportOptions &options = {});

// "converted from opset N to 13 by ONNX's version converter" when import_onnx had
// the model converted (its description ends with that), else "".
std::string onnx_conversion_note(const Graph &imported);

}  // namespace tapestry
