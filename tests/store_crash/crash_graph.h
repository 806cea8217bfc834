// The graph the crash-safety child saves as version `n`: rebuilt from n alone, so
// that the parent can check what the file holds after a kill. It grows and
// changes with n: a chain of 4 + n % 37 relu operations, a parameter whose value
// depends on n and one whose value never changes (the deduplicated path).
#pragma once

#include <memory>
#include <string>

#include "graph/graph.h"

namespace tapestry::crash_test {

inline Graph graph_for_version(int n) {
    Graph g;
    g.name = "crash stream";
    g.description = "version " + std::to_string(n);
    const ZRange range = ZRange::of_shape({16, 64});
    auto tensor = [&](const std::string &id, TensorRole role) {
        Tensor t;
        t.id = TensorId(id);
        t.name = id;
        t.range = range;
        t.role = role;
        return t;
    };
    const int length = 4 + n % 37;
    g.put_tensor(tensor("t0", TensorRole::input));
    for (int i = 1; i <= length; ++i) {
        g.put_tensor(tensor("t" + std::to_string(i), i == length ? TensorRole::output : TensorRole::intermediate));
        Operation op;
        op.id = OpId("relu" + std::to_string(i));
        op.name = op.id.value;
        op.kind = "relu";
        op.inputs = {PortBinding{"x", {TensorSelection{TensorId("t" + std::to_string(i - 1)), range}}}};
        op.outputs = {PortBinding{"y", {TensorSelection{TensorId("t" + std::to_string(i)), range}}}};
        g.put_op(std::move(op));
    }
    Tensor changing = tensor("w_changing", TensorRole::parameter);
    auto value = std::make_shared<TensorData>(DType::f32, range.shape());
    for (std::int64_t i = 0; i < value->element_count(); ++i) value->set(i, static_cast<double>(n * 7 + i % 13));
    changing.value = value;
    g.put_tensor(std::move(changing));
    Tensor constant = tensor("w_constant", TensorRole::parameter);
    auto fixed = std::make_shared<TensorData>(DType::f32, range.shape());
    for (std::int64_t i = 0; i < fixed->element_count(); ++i) fixed->set(i, static_cast<double>(i % 5));
    constant.value = fixed;
    g.put_tensor(std::move(constant));
    return g;
}

}  // namespace tapestry::crash_test
