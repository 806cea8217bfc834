// TensorProto ↔ TensorData, and the TensorProto files of the ONNX backend tests.
#include "io/onnx_tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/checked_size.h"
#include "io/bounded_file.h"
#include "io/onnx_support.h"

namespace tapestry::onnx_detail {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

std::optional<DType> dtype_of(int t) {
    switch (t) {
        case TensorProto::FLOAT:
        case TensorProto::DOUBLE: return DType::f32;
        case TensorProto::FLOAT16: return DType::f16;
        case TensorProto::BFLOAT16: return DType::bf16;
        case TensorProto::INT32: return DType::i32;
        case TensorProto::INT64: return DType::i64;
        case TensorProto::BOOL: return DType::boolean;
        default: return std::nullopt;
    }
}

std::string elem_type_name(int t) {
    if (TensorProto::DataType_IsValid(t)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
    return "type " + std::to_string(t);
}

std::uint16_t f16_bits(float v) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(v);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to ∞ (≥ 65520)
    if (abs < 0x38800000u) {  // below the smallest normal f16 (2^-14): subnormal or zero
        const float a = std::bit_cast<float>(abs);
        // The subnormal quantum is 2^-24; nearbyint rounds ties to even.
        return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f)));
    }
    // Normal: rebias the exponent (127 → 15) and round 23 → 10 mantissa bits, ties to even.
    const std::uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

std::uint16_t bf16_bits(float v) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(v);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

TensorData float_scalar(DType t, double v) {
    TensorData d(t, ZPoint{});
    const float f = static_cast<float>(v);
    if (t == DType::f32) std::memcpy(d.bytes.data(), &f, 4);
    else {
        const std::uint16_t b = t == DType::f16 ? f16_bits(f) : bf16_bits(f);
        std::memcpy(d.bytes.data(), &b, 2);
    }
    return d;
}

namespace {

template <typename T> void store(TensorData &d, std::int64_t i, T v) {
    std::memcpy(d.bytes.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

}  // namespace

Expected<TensorData, std::string> tensor_from_proto(const TensorProto &t) {
    const std::string what = t.name().empty() ? std::string("a tensor") : "tensor '" + t.name() + "'";
    const std::optional<DType> dtype = dtype_of(t.data_type());
    if (!dtype) return unexpected(what + " has element type " + elem_type_name(t.data_type()) + ", which is not supported");
    if (t.data_location() == TensorProto::EXTERNAL)
        return unexpected(what + " keeps its values in an external file, which is not supported");
    std::vector<Coord> dims;
    for (std::int64_t d : t.dims()) {
        if (d < 0) return unexpected(what + " has a negative dimension " + std::to_string(d));
        dims.push_back(d);
    }
    // Sizes before the allocation: a small file may declare a huge tensor. The
    // count saturates (common/checked_size.h) and must not exceed the values the
    // file holds, so nothing larger than the file's data is ever allocated.
    const ZPoint shape(dims);
    const std::int64_t n = shape.product();
    const bool is_double = t.data_type() == TensorProto::DOUBLE;
    const size_t source_size = is_double ? 8 : static_cast<size_t>(dtype_bytes(*dtype));
    auto count_error = [&](std::int64_t have) {
        return unexpected(what + " holds " + std::to_string(have) + " values but its shape " + shape.to_string() +
                          " needs " + (n >= kSizeSaturated ? std::string("more than 2^63") : std::to_string(n)));
    };
    const std::int64_t present =
        t.has_raw_data() ? static_cast<std::int64_t>(t.raw_data().size() / source_size)
                         : std::max({std::int64_t{t.float_data_size()}, std::int64_t{t.int32_data_size()},
                                     std::int64_t{t.int64_data_size()}, std::int64_t{t.double_data_size()},
                                     std::int64_t{t.uint64_data_size()}});
    if (n > present || n > kMaxElements) return count_error(present);
    TensorData out(*dtype, shape);

    if (t.has_raw_data()) {
        const std::string &raw = t.raw_data();
        if (raw.size() != static_cast<size_t>(n) * source_size)
            return count_error(static_cast<std::int64_t>(raw.size() / source_size));
        if (is_double) {
            for (std::int64_t i = 0; i < n; ++i) {
                double v = 0;
                std::memcpy(&v, raw.data() + static_cast<size_t>(i) * 8, 8);
                store(out, i, static_cast<float>(v));
            }
        } else {
            // little-endian, like the host; an empty tensor has no buffer to copy into
            if (!raw.empty()) std::memcpy(out.bytes.data(), raw.data(), raw.size());
        }
        return out;
    }
    switch (t.data_type()) {
        case TensorProto::FLOAT:
            if (t.float_data_size() != n) return count_error(t.float_data_size());
            for (std::int64_t i = 0; i < n; ++i) store(out, i, t.float_data(static_cast<int>(i)));
            break;
        case TensorProto::DOUBLE:
            if (t.double_data_size() != n) return count_error(t.double_data_size());
            for (std::int64_t i = 0; i < n; ++i) store(out, i, static_cast<float>(t.double_data(static_cast<int>(i))));
            break;
        case TensorProto::INT64:
            if (t.int64_data_size() != n) return count_error(t.int64_data_size());
            for (std::int64_t i = 0; i < n; ++i) store(out, i, static_cast<std::int64_t>(t.int64_data(static_cast<int>(i))));
            break;
        case TensorProto::INT32:
            if (t.int32_data_size() != n) return count_error(t.int32_data_size());
            for (std::int64_t i = 0; i < n; ++i) store(out, i, static_cast<std::int32_t>(t.int32_data(static_cast<int>(i))));
            break;
        case TensorProto::FLOAT16:
        case TensorProto::BFLOAT16:  // int32_data holds the 16-bit patterns
            if (t.int32_data_size() != n) return count_error(t.int32_data_size());
            for (std::int64_t i = 0; i < n; ++i)
                store(out, i, static_cast<std::uint16_t>(t.int32_data(static_cast<int>(i)) & 0xffff));
            break;
        case TensorProto::BOOL:
            if (t.int32_data_size() != n) return count_error(t.int32_data_size());
            for (std::int64_t i = 0; i < n; ++i)
                store(out, i, static_cast<std::uint8_t>(t.int32_data(static_cast<int>(i)) != 0 ? 1 : 0));
            break;
        default: break;
    }
    return out;
}

Expected<TensorData, std::string> constant_node_value(const NodeProto &node) {
    const auto &attrs = node.attribute();
    if (attrs.size() != 1) return unexpected(std::string("a Constant needs exactly one value attribute"));
    const AttributeProto &a = attrs.Get(0);
    if (a.name() == "value") return tensor_from_proto(a.t());
    if (a.name() == "value_float" || a.name() == "value_floats") {
        const bool one = a.name() == "value_float";
        const int n = one ? 1 : a.floats_size();
        TensorData t(DType::f32, one ? ZPoint{} : ZPoint{n});
        for (int i = 0; i < n; ++i) t.as<float>()[static_cast<size_t>(i)] = one ? a.f() : a.floats(i);
        return t;
    }
    if (a.name() == "value_int" || a.name() == "value_ints") {
        const bool one = a.name() == "value_int";
        const int n = one ? 1 : a.ints_size();
        TensorData t(DType::i64, one ? ZPoint{} : ZPoint{n});
        for (int i = 0; i < n; ++i) t.as<std::int64_t>()[static_cast<size_t>(i)] = one ? a.i() : a.ints(i);
        return t;
    }
    return unexpected("a Constant given by attribute '" + a.name() + "'");
}

}  // namespace tapestry::onnx_detail

namespace tapestry {

Expected<OnnxTensorFile, std::string> read_onnx_tensor_file(const std::filesystem::path &path) {
    const std::string file = path.string();
    // Protobuf parses at most 2 GiB; a larger file cannot be a TensorProto.
    auto bytes = read_regular_file(path, 2 * kGiB, "an ONNX tensor file");
    if (!bytes) return unexpected(file + ": " + bytes.error());
    onnx::TensorProto proto;
    try {
        if (!proto.ParseFromString(*bytes))
            return unexpected(file + ": not a serialized ONNX tensor (TensorProto): the data is truncated or malformed");
    } catch (const std::exception &e) {
        return unexpected(file + ": cannot read the ONNX tensor: " + e.what());
    }
    auto data = onnx_detail::tensor_from_proto(proto);
    if (!data) return unexpected(file + ": " + data.error());
    return OnnxTensorFile{proto.name(), std::move(data).value()};
}

}  // namespace tapestry
