// Private to engine/io: conversions between ONNX protobuf types and ours — element
// types and TensorProto contents (raw_data or the typed fields) to TensorData.
// Only io/*.cpp files that link the ONNX library include it.
#pragma once

#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "common/expected.h"
#include "graph/dtype.h"
#include "graph/tensor_data.h"

namespace tapestry::onnx_detail {

// Our dtype for an ONNX element type (TensorProto::DataType); double maps to f32.
// nullopt for types we do not hold (strings, unsigned and 8/16-bit integers, complex).
std::optional<DType> dtype_of(int onnx_elem_type);
// "FLOAT", "UINT8", … (the TensorProto::DataType name).
std::string elem_type_name(int onnx_elem_type);

// The values of a TensorProto. Errors are one sentence without the file name.
Expected<TensorData, std::string> tensor_from_proto(const onnx::TensorProto &t);

// The value of a Constant node (its one attribute: value, value_float(s) or
// value_int(s)). Errors are one sentence without the file name.
Expected<TensorData, std::string> constant_node_value(const onnx::NodeProto &node);

// f32 → f16 / bf16 bit patterns, round to nearest even (for constants the importer makes).
std::uint16_t f16_bits(float v);
std::uint16_t bf16_bits(float v);
// A rank-0 TensorData of a floating dtype holding v.
TensorData float_scalar(DType t, double v);

}  // namespace tapestry::onnx_detail
