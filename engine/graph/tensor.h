// Tensor: an aggregate tensor of the graph — dtype, index range (shape with an
// origin), role, optional reference to initial data (DESIGN.md §4).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/checked_size.h"
#include "graph/dtype.h"
#include "graph/tensor_data.h"
#include "graph/ids.h"
#include "index/zrange.h"

namespace tapestry {

enum class TensorRole { input, parameter, intermediate, output };
std::string_view role_name(TensorRole r);  // "input", "parameter", "intermediate", "output"
std::optional<TensorRole> parse_role(std::string_view name);

struct Tensor {
    TensorId id;
    std::string name;  // display name; defaults to the id
    DType dtype = DType::f32;
    ZRange range;      // the tensor's extent, [start, end); usually [0, shape)
    TensorRole role = TensorRole::intermediate;
    std::optional<std::string> data;  // initial data reference (a .npy path beside the project)
    // The values, when known in memory (embedded in the file, loaded from `data`,
    // or imported from ONNX). Shared between graph versions like the node itself.
    std::shared_ptr<const TensorData> value;

    ZPoint shape() const { return range.shape(); }
    // Overflow-checked: kSizeSaturated where it would not fit in 64 bits.
    std::int64_t bytes() const { return size_mul(range.size(), dtype_bytes(dtype)); }
    // Values compare by content, not by pointer.
    friend bool operator==(const Tensor &a, const Tensor &b) {
        const bool same_value = a.value == b.value || (a.value && b.value && *a.value == *b.value);
        return a.id == b.id && a.name == b.name && a.dtype == b.dtype && a.range == b.range && a.role == b.role &&
               a.data == b.data && same_value;
    }
};

using TensorPtr = std::shared_ptr<const Tensor>;

// A box of a tensor, as an operation or shard reads or writes it.
struct TensorSelection {
    TensorId tensor;
    ZRange range;
    friend bool operator==(const TensorSelection &, const TensorSelection &) = default;
};

}  // namespace tapestry
