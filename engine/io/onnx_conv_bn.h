// Private to engine/io: finds Conv → BatchNormalization (inference) pairs whose
// parameters are all constants, so that the importer maps each onto one conv2d
// with folded weights and bias (new parameter tensors, named as folded).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/tensor_data.h"
#include "io/onnx_gelu.h"

namespace tapestry::onnx_detail {

struct ConvBnMatch {
    int conv = -1;          // index of the Conv node
    int batchnorm = -1;     // index of the BatchNormalization node reading its output (only consumer)
    double epsilon = 1e-5;  // the BatchNormalization's epsilon
};

// Every foldable pair of `graph`: an f32 Conv with a constant W (and B, if any)
// whose output is read only by one inference BatchNormalization (training_mode 0,
// one output) with constant f32 scale, B, mean and var of W's output-channel
// count, and is not a graph output.
std::vector<ConvBnMatch> find_conv_batchnorm(const onnx::GraphProto &graph, const InitializerLookup &initializer);

// The folded parameters: with s = scale/√(var+ε) per output channel (in double),
// w' = w·s and b' = (b − mean)·s + bias (b = 0 when the Conv has none).
struct FoldedConv {
    std::shared_ptr<const TensorData> weight, bias;
};
FoldedConv fold_conv_batchnorm(const TensorData &w, const TensorData *b, const TensorData &scale,
                               const TensorData &bias, const TensorData &mean, const TensorData &var, double epsilon);

}  // namespace tapestry::onnx_detail
