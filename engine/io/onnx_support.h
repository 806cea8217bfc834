// What the ONNX importer (io/onnx_import.h) supports, and reading the ONNX
// TensorProto files of the ONNX backend tests (input_0.pb, output_0.pb), for the
// conformance suite and tools that feed imported models with ONNX data.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/tensor_data.h"

namespace tapestry {

// The operator types of the default ONNX domain that import_onnx maps, sorted.
const std::vector<std::string> &onnx_supported_operators();
bool onnx_operator_supported(const std::string &op_type);

struct OnnxTensorFile {
    std::string name;  // the TensorProto's name (may be empty)
    TensorData data;   // double becomes f32, as in import_onnx
};

// Reads one serialized onnx.TensorProto. Errors name the file: unreadable, not a
// TensorProto, an element type the importer does not map, external data, or
// values that do not fill the shape.
Expected<OnnxTensorFile, std::string> read_onnx_tensor_file(const std::filesystem::path &path);

}  // namespace tapestry
