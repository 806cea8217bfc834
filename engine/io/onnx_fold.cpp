// Shape arithmetic folded at import (see onnx_fold.h).
#include "io/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <onnx/shape_inference/implementation.h>

#include "common/checked_size.h"
#include "io/onnx_tensor.h"

namespace tapestry::onnx_detail {

const std::vector<std::string> &shape_arithmetic_operators() {
    static const std::vector<std::string> ops{"ConstantOfShape", "Equal", "Expand", "Greater", "Less",
                                              "Not",             "Range", "Shape",  "Size"};
    return ops;
}

namespace {

bool shape_only(const std::string &type) {
    const auto &ops = shape_arithmetic_operators();
    return std::binary_search(ops.begin(), ops.end(), type);
}

// Operators the importer also maps as operations: folded only on integer,
// boolean or shape-made constants.
bool mappable_foldable(const std::string &type) {
    static const std::set<std::string> ops{"Add",     "Sub",     "Mul",   "Div",       "Pow",      "Sqrt",
                                           "Neg",     "Cast",    "Identity", "Gather", "Concat",   "Slice",
                                           "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Where",  "Trilu"};
    return ops.count(type) > 0;
}

// A constant's values: integers for i32, i64 and bool, doubles for floats.
struct Const {
    DType dtype = DType::i64;
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> ints;
    std::vector<double> reals;
    bool made_of_shape = false;  // a Shape's, Size's, … or computed from one

    bool integral() const { return dtype == DType::i32 || dtype == DType::i64 || dtype == DType::boolean; }
    std::int64_t count() const {
        std::int64_t n = 1;
        for (std::int64_t d : dims) n = size_mul(n, d);
        return n;
    }
    double real(size_t i) const { return integral() ? static_cast<double>(ints[i]) : reals[i]; }
    std::int64_t integer(size_t i) const { return integral() ? ints[i] : static_cast<std::int64_t>(reals[i]); }
};

struct Failed {
    std::string message;
};

Const from_data(const TensorData &d) {
    Const c;
    c.dtype = d.dtype;
    for (int k = 0; k < d.shape.rank(); ++k) c.dims.push_back(d.shape[k]);
    const auto n = static_cast<size_t>(d.element_count());
    if (c.integral()) {
        c.ints.resize(n);
        for (size_t i = 0; i < n; ++i)
            c.ints[i] = d.dtype == DType::i64   ? d.as<std::int64_t>()[i]
                        : d.dtype == DType::i32 ? d.as<std::int32_t>()[i]
                                                : (std::to_integer<int>(d.bytes[i]) != 0 ? 1 : 0);
    } else {
        c.reals.resize(n);
        for (size_t i = 0; i < n; ++i) c.reals[i] = d.get(static_cast<std::int64_t>(i));
    }
    return c;
}

int elem_type_of(DType t) {
    switch (t) {
        case DType::f32: return onnx::TensorProto::FLOAT;
        case DType::f16: return onnx::TensorProto::FLOAT16;
        case DType::bf16: return onnx::TensorProto::BFLOAT16;
        case DType::i32: return onnx::TensorProto::INT32;
        case DType::i64: return onnx::TensorProto::INT64;
        case DType::boolean: return onnx::TensorProto::BOOL;
    }
    return onnx::TensorProto::UNDEFINED;
}

onnx::TensorProto to_proto(const Const &c, const std::string &name) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(elem_type_of(c.dtype));
    for (std::int64_t d : c.dims) t.add_dims(d);
    switch (c.dtype) {
        case DType::i64:
            for (std::int64_t v : c.ints) t.add_int64_data(v);
            break;
        case DType::i32:
        case DType::boolean:
            for (std::int64_t v : c.ints) t.add_int32_data(static_cast<std::int32_t>(v));
            break;
        case DType::f32:
            for (double v : c.reals) t.add_float_data(static_cast<float>(v));
            break;
        case DType::f16:
        case DType::bf16:
            for (double v : c.reals)
                t.add_int32_data(c.dtype == DType::f16 ? f16_bits(static_cast<float>(v)) : bf16_bits(static_cast<float>(v)));
            break;
    }
    return t;
}

// A result of `dtype` and `dims`, refused past the element bound.
Const make(DType dtype, std::vector<std::int64_t> dims, std::int64_t max_elements) {
    Const c;
    c.dtype = dtype;
    c.dims = std::move(dims);
    const std::int64_t n = c.count();
    if (n < 0 || n > max_elements)
        throw Failed{"its result would hold " + (n >= kSizeSaturated ? std::string("more than 2^63") : std::to_string(n)) +
                     " values, more than the " + std::to_string(max_elements) + " the importer folds"};
    if (c.integral()) c.ints.assign(static_cast<size_t>(n), 0);
    else c.reals.assign(static_cast<size_t>(n), 0.0);
    return c;
}

// Element `from` of `src` into element `to` of `dst` (same kind of values).
void copy_element(const Const &src, size_t from, Const &dst, size_t to) {
    if (dst.integral()) dst.ints[to] = src.integer(from);
    else dst.reals[to] = src.real(from);
}

std::int64_t axis_of(std::int64_t axis, size_t rank, const std::string &what) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r)
        throw Failed{what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank)};
    return axis < 0 ? axis + r : axis;
}

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t> &dims) {
    std::vector<std::int64_t> s(dims.size(), 1);
    for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
    return s;
}

// NumPy broadcasting of several shapes.
std::vector<std::int64_t> broadcast(const std::vector<const std::vector<std::int64_t> *> &shapes) {
    size_t rank = 0;
    for (const auto *s : shapes) rank = std::max(rank, s->size());
    std::vector<std::int64_t> out(rank, 1);
    for (const auto *s : shapes)
        for (size_t k = 0; k < s->size(); ++k) {
            const std::int64_t d = (*s)[k];
            std::int64_t &o = out[rank - s->size() + k];
            if (d == o || d == 1) continue;
            if (o != 1) throw Failed{"its operands' shapes do not broadcast"};
            o = d;
        }
    return out;
}

// For each element of `out_dims`, the element of a `dims` operand broadcast to it.
std::vector<size_t> broadcast_index(const std::vector<std::int64_t> &dims, const std::vector<std::int64_t> &out_dims) {
    const std::vector<std::int64_t> in_strides = strides_of(dims);
    std::int64_t n = 1;
    for (std::int64_t d : out_dims) n *= d;
    std::vector<size_t> idx(static_cast<size_t>(n));
    std::vector<std::int64_t> at(out_dims.size(), 0);
    const size_t shift = out_dims.size() - dims.size();
    for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t from = 0;
        for (size_t k = 0; k < dims.size(); ++k)
            if (dims[k] != 1) from += at[shift + k] * in_strides[k];
        idx[static_cast<size_t>(i)] = static_cast<size_t>(from);
        for (size_t k = out_dims.size(); k-- > 0;) {
            if (++at[k] < out_dims[k]) break;
            at[k] = 0;
        }
    }
    return idx;
}

std::vector<std::int64_t> int_list(const Const &c) {
    std::vector<std::int64_t> v;
    for (size_t i = 0; i < static_cast<size_t>(c.count()); ++i) v.push_back(c.integer(i));
    return v;
}

std::int64_t attr_int(const onnx::NodeProto &n, const std::string &name, std::int64_t fallback) {
    for (const auto &a : n.attribute())
        if (a.name() == name) return a.i();
    return fallback;
}

// The dims of a reshape of `count` values to `target` (0 copies `in`'s dim, one −1).
std::vector<std::int64_t> reshaped(const std::vector<std::int64_t> &in, const std::vector<std::int64_t> &target,
                                   bool allowzero) {
    std::vector<std::int64_t> out = target;
    std::int64_t known = 1, count = 1;
    for (std::int64_t d : in) count *= d;
    int infer = -1;
    for (size_t k = 0; k < out.size(); ++k) {
        if (out[k] == 0 && !allowzero) {
            if (k >= in.size()) throw Failed{"its shape copies a dimension the input lacks"};
            out[k] = in[k];
        }
        if (out[k] == -1) {
            if (infer >= 0) throw Failed{"its shape has more than one -1"};
            infer = static_cast<int>(k);
            continue;
        }
        if (out[k] < 0) throw Failed{"its shape has a negative dimension"};
        known = size_mul(known, out[k]);
    }
    if (infer >= 0) {
        if (known == 0 || count % known != 0) throw Failed{"its shape's -1 cannot be inferred"};
        out[static_cast<size_t>(infer)] = count / known;
        known = count;
    }
    if (known != count) throw Failed{"its shape holds a different number of values than its input"};
    return out;
}

class Folder {
public:
    Folder(onnx::ModelProto &model, std::int64_t max_elements, std::int64_t max_total)
        : model_(model), max_(max_elements), max_total_(max_total) {}

    Expected<int, FoldFailure> run() {
        onnx::GraphProto &graph = *model_.mutable_graph();
        int folded = 0;
        for (int round = 0; round <= graph.node_size(); ++round) {
            // Shapes for Shape and Size only (the importer runs the inference itself
            // afterwards, and reports a failing one).
            const bool needs_shapes = std::any_of(graph.node().begin(), graph.node().end(), [](const onnx::NodeProto &n) {
                return n.op_type() == "Shape" || n.op_type() == "Size";
            });
            if (needs_shapes) {
                try {
                    onnx::shape_inference::InferShapes(model_);
                } catch (const std::exception &) {
                }
            }
            read_sources(graph);
            std::vector<int> keep;
            int now = 0;
            for (int i = 0; i < graph.node_size(); ++i) {
                const onnx::NodeProto &n = graph.node(i);
                std::optional<std::vector<Const>> out;
                try {
                    out = fold(n);
                } catch (const Failed &f) {
                    return unexpected(FoldFailure{label(n, i) + ": " + f.message, label(n, i)});
                }
                if (!out) {
                    keep.push_back(i);
                    continue;
                }
                for (int k = 0; k < n.output_size() && k < static_cast<int>(out->size()); ++k) {
                    if (n.output(k).empty()) continue;
                    made_ = size_add(made_, (*out)[static_cast<size_t>(k)].count());
                    if (made_ > max_total_)
                        return unexpected(FoldFailure{label(n, i) + ": the constants folded so far would hold " +
                                                          std::to_string(made_) + " values, more than the " +
                                                          std::to_string(max_total_) + " the importer folds in all",
                                                      label(n, i)});
                    *graph.add_initializer() = to_proto((*out)[static_cast<size_t>(k)], n.output(k));
                    values_[n.output(k)] = std::move((*out)[static_cast<size_t>(k)]);
                }
                ++now;
            }
            if (now == 0) break;
            // Unnamed nodes are named by their index (ids "<OpType>_<index>", labels
            // "node #k"): the ones left keep their index in the user's model.
            if (folded == 0)
                for (int i : keep)
                    if (graph.node(i).name().empty())
                        graph.mutable_node(i)->set_name(graph.node(i).op_type() + "_" + std::to_string(i));
            folded += now;
            google::protobuf::RepeatedPtrField<onnx::NodeProto> left;
            for (int i : keep) *left.Add() = graph.node(i);
            graph.mutable_node()->Swap(&left);
        }
        for (int i = 0; i < graph.node_size(); ++i) {
            const onnx::NodeProto &n = graph.node(i);
            if (!shape_only(n.op_type())) continue;
            std::string why = "the importer takes " + n.op_type() + " only as shape arithmetic, folded where every operand is a constant";
            for (const std::string &in : n.input())
                if (!in.empty() && !is_constant(in)) {
                    why = n.op_type() == "Shape" || n.op_type() == "Size"
                              ? "the shape of '" + in + "' is not known statically"
                              : "its operand '" + in + "' is not a constant: " + why;
                    break;
                }
            return unexpected(FoldFailure{label(n, i) + ": " + why, label(n, i)});
        }
        return folded;
    }

private:
    static std::string label(const onnx::NodeProto &n, int i) {
        return n.op_type() + " (" + (n.name().empty() ? "node #" + std::to_string(i) : n.name()) + ")";
    }

    void read_sources(const onnx::GraphProto &graph) {
        initializers_.clear();
        constant_nodes_.clear();
        shapes_.clear();
        for (const auto &t : graph.initializer()) initializers_[t.name()] = &t;
        for (const auto &n : graph.node())
            if (n.op_type() == "Constant" && n.output_size() == 1 && n.attribute_size() == 1)
                constant_nodes_[n.output(0)] = &n;
        auto note = [&](const onnx::ValueInfoProto &vi) {
            if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
            std::vector<std::int64_t> dims;
            for (const auto &d : vi.type().tensor_type().shape().dim()) {
                if (!d.has_dim_value() || d.dim_value() < 0) return;
                dims.push_back(d.dim_value());
            }
            shapes_[vi.name()] = std::move(dims);
        };
        for (const auto &vi : graph.input()) note(vi);
        for (const auto &vi : graph.value_info()) note(vi);
        for (const auto &vi : graph.output()) note(vi);
    }

    bool is_constant(const std::string &name) const {
        return values_.count(name) || initializers_.count(name) || constant_nodes_.count(name);
    }

    // Whether `name` is an integer or boolean constant, without reading a float weight.
    bool integral_constant(const std::string &name) const {
        if (auto it = values_.find(name); it != values_.end()) return it->second.integral() || it->second.made_of_shape;
        int type = onnx::TensorProto::UNDEFINED;
        if (auto it = initializers_.find(name); it != initializers_.end()) type = it->second->data_type();
        else if (auto c = constant_nodes_.find(name); c != constant_nodes_.end()) {
            const auto &a = c->second->attribute(0);
            type = a.name() == "value" ? a.t().data_type()
                   : a.name() == "value_int" || a.name() == "value_ints" ? onnx::TensorProto::INT64
                                                                         : onnx::TensorProto::FLOAT;
        }
        return type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32 || type == onnx::TensorProto::BOOL;
    }

    const Const &value(const std::string &name) {
        if (auto it = values_.find(name); it != values_.end()) return it->second;
        std::optional<Expected<TensorData, std::string>> d;
        if (auto it = initializers_.find(name); it != initializers_.end()) d = tensor_from_proto(*it->second);
        else d = constant_node_value(*constant_nodes_.at(name));
        if (!*d) throw Failed{"its operand '" + name + "': " + d->error()};
        return values_[name] = from_data(**d);
    }

    // The node's outputs when it folds; nullopt when it stays in the graph.
    std::optional<std::vector<Const>> fold(const onnx::NodeProto &n) {
        const std::string &type = n.op_type();
        const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
        if (!default_domain || (!shape_only(type) && !mappable_foldable(type))) return std::nullopt;
        if (n.output_size() < 1) return std::nullopt;
        if (type == "Shape" || type == "Size") {
            if (n.input_size() < 1) return std::nullopt;
            const std::string &x = n.input(0);
            std::vector<std::int64_t> dims;
            if (auto it = shapes_.find(x); it != shapes_.end()) dims = it->second;
            else if (is_constant(x)) dims = value(x).dims;
            else return std::nullopt;
            Const out;
            out.made_of_shape = true;
            if (type == "Size") {
                std::int64_t count = 1;
                for (std::int64_t d : dims) count = size_mul(count, d);
                out.ints = {count};
                return std::vector<Const>{out};
            }
            const auto rank = static_cast<std::int64_t>(dims.size());
            auto clamp = [&](std::int64_t v) { return v < -rank ? 0 : std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank); };
            const std::int64_t start = clamp(attr_int(n, "start", 0)), end = clamp(attr_int(n, "end", rank));
            for (std::int64_t k = start; k < end; ++k) out.ints.push_back(dims[static_cast<size_t>(k)]);
            out.dims = {static_cast<std::int64_t>(out.ints.size())};
            return std::vector<Const>{out};
        }
        if (type == "ConstantOfShape") {
            if (n.input_size() < 1 || !is_constant(n.input(0))) return std::nullopt;
        } else {
            for (const std::string &in : n.input())
                if (!in.empty() && !is_constant(in)) return std::nullopt;
        }
        // Where and Trilu select among constants whatever their type (the importer
        // maps them on tensors the graph computes, with a constant condition).
        if (!shape_only(type) && type != "Where" && type != "Trilu") {
            for (const std::string &in : n.input())
                if (!in.empty() && !integral_constant(in)) return std::nullopt;
        }
        std::vector<const Const *> in;
        bool made_of_shape = false;
        for (const std::string &name : n.input()) {
            in.push_back(name.empty() ? nullptr : &value(name));
            if (!name.empty()) made_of_shape = made_of_shape || in.back()->made_of_shape;
        }
        Const out = evaluate(n, in);
        out.made_of_shape = made_of_shape || type == "ConstantOfShape" || type == "Range";
        return std::vector<Const>{std::move(out)};
    }

    const Const &operand(const std::vector<const Const *> &in, size_t k, const std::string &what) const {
        if (k >= in.size() || !in[k]) throw Failed{"it has no " + what};
        return *in[k];
    }

    Const evaluate(const onnx::NodeProto &n, const std::vector<const Const *> &in) {
        const std::string &type = n.op_type();
        if (type == "Identity") return operand(in, 0, "input");
        if (type == "Cast") return cast(operand(in, 0, "input"), static_cast<int>(attr_int(n, "to", 0)));
        if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze")
            return reshape(n, in);
        if (type == "Concat") return concat(n, in);
        if (type == "Gather") return gather(n, in);
        if (type == "Slice") return slice(in);
        if (type == "Expand") {
            const Const &x = operand(in, 0, "input");
            const std::vector<std::int64_t> shape = int_list(operand(in, 1, "shape"));
            Const out = make(x.dtype, broadcast({&x.dims, &shape}), max_);
            const auto idx = broadcast_index(x.dims, out.dims);
            for (size_t i = 0; i < idx.size(); ++i) copy_element(x, idx[i], out, i);
            return out;
        }
        if (type == "ConstantOfShape") {
            std::vector<std::int64_t> dims = int_list(operand(in, 0, "shape"));
            for (std::int64_t d : dims)
                if (d < 0) throw Failed{"its shape has a negative dimension"};
            Const fill;
            fill.dtype = DType::f32;
            fill.reals = {0.0};
            for (const auto &a : n.attribute())
                if (a.name() == "value") {
                    auto d = tensor_from_proto(a.t());
                    if (!d) throw Failed{"its value: " + d.error()};
                    if (d->element_count() != 1) throw Failed{"its value must hold one element"};
                    fill = from_data(*d);
                }
            Const out = make(fill.dtype, std::move(dims), max_);
            for (size_t i = 0; i < static_cast<size_t>(out.count()); ++i) copy_element(fill, 0, out, i);
            return out;
        }
        if (type == "Range") {
            const Const &s = operand(in, 0, "start"), &l = operand(in, 1, "limit"), &d = operand(in, 2, "delta");
            if (s.count() != 1 || l.count() != 1 || d.count() != 1) throw Failed{"start, limit and delta must be scalars"};
            const double start = s.real(0), limit = l.real(0), delta = d.real(0);
            if (delta == 0) throw Failed{"its delta is 0"};
            const double steps = std::ceil((limit - start) / delta);
            const std::int64_t count =
                steps > 0 ? (steps > static_cast<double>(max_) ? max_ + 1 : static_cast<std::int64_t>(steps)) : 0;
            Const out = make(s.dtype, {count}, max_);
            for (std::int64_t i = 0; i < count; ++i) {
                if (out.integral()) {
                    const auto step = checked_mul(i, d.integer(0));
                    const auto v = step ? checked_add(s.integer(0), *step) : std::nullopt;
                    if (!v) throw Failed{"an integer result past 64 bits"};
                    out.ints[static_cast<size_t>(i)] = *v;
                }
                else out.reals[static_cast<size_t>(i)] = start + static_cast<double>(i) * delta;
            }
            return out;
        }
        if (type == "Trilu") {
            const Const &x = operand(in, 0, "input");
            if (x.dims.size() < 2) throw Failed{"its input must have rank at least 2"};
            const std::int64_t k = in.size() > 1 && in[1] ? operand(in, 1, "k").integer(0) : 0;
            const bool upper = attr_int(n, "upper", 1) != 0;
            Const out = x;
            const std::int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
            for (size_t i = 0; i < static_cast<size_t>(out.count()); ++i) {
                const auto r = static_cast<std::int64_t>(i / static_cast<size_t>(cols)) % rows,
                           c = static_cast<std::int64_t>(i % static_cast<size_t>(cols));
                if (upper ? c - r >= k : c - r <= k) continue;
                if (out.integral()) out.ints[i] = 0;
                else out.reals[i] = 0;
            }
            return out;
        }
        if (type == "Not") {
            const Const &x = operand(in, 0, "input");
            Const out = make(DType::boolean, x.dims, max_);
            for (size_t i = 0; i < out.ints.size(); ++i) out.ints[i] = x.integer(i) == 0 ? 1 : 0;
            return out;
        }
        if (type == "Sqrt" || type == "Neg") {
            const Const &x = operand(in, 0, "input");
            Const out = make(x.dtype, x.dims, max_);
            for (size_t i = 0; i < static_cast<size_t>(out.count()); ++i) {
                if (type == "Neg") {
                    if (out.integral() && x.ints[i] == std::numeric_limits<std::int64_t>::min())
                        throw Failed{"an integer result past 64 bits"};
                    if (out.integral()) out.ints[i] = -x.ints[i];
                    else out.reals[i] = -x.reals[i];
                } else {
                    if (out.integral()) throw Failed{"Sqrt of an integer tensor"};
                    out.reals[i] = std::sqrt(x.reals[i]);
                }
            }
            return out;
        }
        if (type == "Where") {
            const Const &c = operand(in, 0, "condition"), &x = operand(in, 1, "X"), &y = operand(in, 2, "Y");
            if (x.dtype != y.dtype) throw Failed{"X and Y differ in element type"};
            Const out = make(x.dtype, broadcast({&c.dims, &x.dims, &y.dims}), max_);
            const auto ic = broadcast_index(c.dims, out.dims), ix = broadcast_index(x.dims, out.dims),
                       iy = broadcast_index(y.dims, out.dims);
            for (size_t i = 0; i < ic.size(); ++i) copy_element(c.integer(ic[i]) != 0 ? x : y, c.integer(ic[i]) != 0 ? ix[i] : iy[i], out, i);
            return out;
        }
        return binary(type, operand(in, 0, "A"), operand(in, 1, "B"));
    }

    Const cast(const Const &x, int to) {
        const std::optional<DType> target = dtype_of(to);
        if (!target) throw Failed{"a cast to " + elem_type_name(to)};
        Const out = make(*target, x.dims, max_);
        for (size_t i = 0; i < static_cast<size_t>(out.count()); ++i) {
            if (*target == DType::boolean) out.ints[i] = x.real(i) != 0 ? 1 : 0;
            else if (out.integral()) {
                const double v = x.integral() ? 0 : std::trunc(x.reals[i]);
                if (!x.integral() && !(v >= -9.2e18 && v <= 9.2e18)) throw Failed{"a cast of an out-of-range value to an integer"};
                out.ints[i] = x.integral() ? x.ints[i] : static_cast<std::int64_t>(v);
                if (*target == DType::i32) out.ints[i] = static_cast<std::int32_t>(out.ints[i]);
            } else {
                out.reals[i] = x.real(i);
            }
        }
        return out;
    }

    Const reshape(const onnx::NodeProto &n, const std::vector<const Const *> &in) {
        const Const &x = operand(in, 0, "input");
        const std::string &type = n.op_type();
        std::vector<std::int64_t> dims;
        if (type == "Reshape") {
            dims = reshaped(x.dims, int_list(operand(in, 1, "shape")), attr_int(n, "allowzero", 0) != 0);
        } else if (type == "Flatten") {
            const std::int64_t axis = attr_int(n, "axis", 1);
            const auto rank = static_cast<std::int64_t>(x.dims.size());
            const std::int64_t a = axis < 0 ? axis + rank : axis;
            if (a < 0 || a > rank) throw Failed{"its axis is out of range"};
            std::int64_t outer = 1, inner = 1;
            for (std::int64_t k = 0; k < rank; ++k) (k < a ? outer : inner) *= x.dims[static_cast<size_t>(k)];
            dims = {outer, inner};
        } else {
            std::vector<std::int64_t> axes = in.size() > 1 && in[1] ? int_list(*in[1]) : std::vector<std::int64_t>{};
            if (type == "Unsqueeze") {
                const size_t rank = x.dims.size() + axes.size();
                std::vector<bool> added(rank, false);
                for (std::int64_t a : axes) {
                    const auto k = static_cast<size_t>(axis_of(a, rank, "its axis"));
                    if (added[k]) throw Failed{"its axes repeat"};
                    added[k] = true;
                }
                for (size_t k = 0, next = 0; k < rank; ++k) dims.push_back(added[k] ? 1 : x.dims[next++]);
            } else {
                std::set<size_t> removed;
                for (std::int64_t a : axes) removed.insert(static_cast<size_t>(axis_of(a, x.dims.size(), "its axis")));
                for (size_t k = 0; k < x.dims.size(); ++k) {
                    const bool drop = axes.empty() ? x.dims[k] == 1 : removed.count(k) > 0;
                    if (drop && x.dims[k] != 1) throw Failed{"it squeezes a dimension that is not 1"};
                    if (!drop) dims.push_back(x.dims[k]);
                }
            }
        }
        Const out = x;
        out.dims = std::move(dims);
        return out;
    }

    Const concat(const onnx::NodeProto &n, const std::vector<const Const *> &in) {
        std::vector<const Const *> parts;
        for (const Const *c : in)
            if (c) parts.push_back(c);
        if (parts.empty()) throw Failed{"it has no inputs"};
        const Const &first = *parts.front();
        const auto axis = static_cast<size_t>(axis_of(attr_int(n, "axis", 0), first.dims.size(), "its axis"));
        std::vector<std::int64_t> dims = first.dims;
        dims[axis] = 0;
        for (const Const *p : parts) {
            if (p->dtype != first.dtype || p->dims.size() != first.dims.size())
                throw Failed{"its inputs differ in element type or rank"};
            for (size_t k = 0; k < dims.size(); ++k)
                if (k != axis && p->dims[k] != first.dims[k]) throw Failed{"its inputs differ outside the axis"};
            dims[axis] = size_add(dims[axis], p->dims[axis]);
        }
        Const out = make(first.dtype, dims, max_);
        std::int64_t outer = 1;
        for (size_t k = 0; k < axis; ++k) outer *= dims[k];
        size_t at = 0;
        for (std::int64_t o = 0; o < outer; ++o)
            for (const Const *p : parts) {
                std::int64_t block = 1;
                for (size_t k = axis; k < p->dims.size(); ++k) block *= p->dims[k];
                for (std::int64_t e = 0; e < block; ++e) copy_element(*p, static_cast<size_t>(o * block + e), out, at++);
            }
        return out;
    }

    Const gather(const onnx::NodeProto &n, const std::vector<const Const *> &in) {
        const Const &data = operand(in, 0, "data"), &indices = operand(in, 1, "indices");
        if (data.dims.empty()) throw Failed{"its data is a scalar"};
        const auto axis = static_cast<size_t>(axis_of(attr_int(n, "axis", 0), data.dims.size(), "its axis"));
        std::vector<std::int64_t> dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
        dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
        dims.insert(dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
        Const out = make(data.dtype, dims, max_);
        std::int64_t outer = 1, inner = 1;
        for (size_t k = 0; k < axis; ++k) outer *= data.dims[k];
        for (size_t k = axis + 1; k < data.dims.size(); ++k) inner *= data.dims[k];
        const std::int64_t extent = data.dims[axis], count = indices.count();
        size_t at = 0;
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t j = 0; j < count; ++j) {
                std::int64_t i = indices.integer(static_cast<size_t>(j));
                if (i < -extent || i >= extent)
                    throw Failed{"index " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(extent)};
                if (i < 0) i += extent;
                for (std::int64_t e = 0; e < inner; ++e)
                    copy_element(data, static_cast<size_t>((o * extent + i) * inner + e), out, at++);
            }
        return out;
    }

    Const slice(const std::vector<const Const *> &in) {
        const Const &x = operand(in, 0, "data");
        const std::vector<std::int64_t> starts = int_list(operand(in, 1, "starts")), ends = int_list(operand(in, 2, "ends"));
        std::vector<std::int64_t> axes, steps;
        if (in.size() > 3 && in[3]) axes = int_list(*in[3]);
        else for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
        if (in.size() > 4 && in[4]) steps = int_list(*in[4]);
        else steps.assign(starts.size(), 1);
        if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
            throw Failed{"its starts, ends, axes and steps differ in length"};
        const size_t rank = x.dims.size();
        std::vector<std::int64_t> first(rank, 0), step(rank, 1), dims = x.dims;
        for (size_t j = 0; j < starts.size(); ++j) {
            const auto k = static_cast<size_t>(axis_of(axes[j], rank, "its axis"));
            const std::int64_t d = x.dims[k], s = steps[j];
            if (s == 0) throw Failed{"its step is 0"};
            auto bound = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
                if (v < 0) v = v < -d ? lo : v + d;  // v + d only where it cannot wrap
                return std::clamp(v, lo, hi);
            };
            const std::int64_t b = s > 0 ? bound(starts[j], 0, d) : bound(starts[j], -1, d - 1);
            const std::int64_t e = s > 0 ? bound(ends[j], 0, d) : bound(ends[j], -1, d - 1);
            // ⌈span / |s|⌉ without overflow (|INT64_MIN| taken as INT64_MAX: one element either way)
            const std::int64_t span = s > 0 ? e - b : b - e;
            const std::int64_t mag = s > 0 ? s : (s == std::numeric_limits<std::int64_t>::min() ? std::numeric_limits<std::int64_t>::max() : -s);
            const std::int64_t n = span > 0 ? (span - 1) / mag + 1 : 0;
            first[k] = b;
            step[k] = s;
            dims[k] = n;
        }
        Const out = make(x.dtype, dims, max_);
        const std::vector<std::int64_t> strides = strides_of(x.dims);
        std::vector<std::int64_t> at(rank, 0);
        for (size_t i = 0; i < static_cast<size_t>(out.count()); ++i) {
            std::int64_t from = 0;
            for (size_t k = 0; k < rank; ++k) from += (first[k] + at[k] * step[k]) * strides[k];
            copy_element(x, static_cast<size_t>(from), out, i);
            for (size_t k = rank; k-- > 0;) {
                if (++at[k] < dims[k]) break;
                at[k] = 0;
            }
        }
        return out;
    }

    Const binary(const std::string &type, const Const &a, const Const &b) {
        const bool compare = type == "Equal" || type == "Less" || type == "Greater";
        if (a.dtype != b.dtype) throw Failed{"its operands differ in element type"};
        Const out = make(compare ? DType::boolean : a.dtype, broadcast({&a.dims, &b.dims}), max_);
        const auto ia = broadcast_index(a.dims, out.dims), ib = broadcast_index(b.dims, out.dims);
        for (size_t i = 0; i < ia.size(); ++i) {
            if (compare) {
                const bool r = a.integral() ? (type == "Equal"  ? a.ints[ia[i]] == b.ints[ib[i]]
                                               : type == "Less" ? a.ints[ia[i]] < b.ints[ib[i]]
                                                                : a.ints[ia[i]] > b.ints[ib[i]])
                                            : (type == "Equal"  ? a.reals[ia[i]] == b.reals[ib[i]]
                                               : type == "Less" ? a.reals[ia[i]] < b.reals[ib[i]]
                                                                : a.reals[ia[i]] > b.reals[ib[i]]);
                out.ints[i] = r ? 1 : 0;
            } else if (a.integral()) {
                if (a.dtype == DType::boolean) throw Failed{"arithmetic on booleans"};
                const std::int64_t x = a.ints[ia[i]], y = b.ints[ib[i]];
                std::optional<std::int64_t> r;
                if (type == "Add") r = checked_add(x, y);
                else if (type == "Sub") r = y == std::numeric_limits<std::int64_t>::min() ? std::nullopt : checked_add(x, -y);
                else if (type == "Mul") r = checked_mul(x, y);
                else if (type == "Div") {
                    if (y == 0) throw Failed{"an integer division by zero"};
                    r = (x == std::numeric_limits<std::int64_t>::min() && y == -1) ? std::nullopt : std::optional(x / y);
                } else {  // Pow, by squaring
                    if (y < 0) throw Failed{"an integer power with a negative exponent"};
                    std::optional<std::int64_t> p = 1, base = x;
                    for (std::int64_t e = y; e > 0 && p && base; e >>= 1) {
                        if (e & 1) p = checked_mul(*p, *base);
                        if (e > 1) base = checked_mul(*base, *base);
                    }
                    r = base ? p : std::nullopt;
                }
                if (!r) throw Failed{"an integer result past 64 bits"};
                out.ints[i] = a.dtype == DType::i32 ? static_cast<std::int32_t>(*r) : *r;
            } else {
                const double x = a.reals[ia[i]], y = b.reals[ib[i]];
                out.reals[i] = type == "Add" ? x + y : type == "Sub" ? x - y : type == "Mul" ? x * y : type == "Div" ? x / y : std::pow(x, y);
            }
        }
        return out;
    }

    onnx::ModelProto &model_;
    std::int64_t max_, max_total_;
    std::int64_t made_ = 0;  // values folded so far
    std::map<std::string, const onnx::TensorProto *> initializers_;
    std::map<std::string, const onnx::NodeProto *> constant_nodes_;
    std::map<std::string, std::vector<std::int64_t>> shapes_;
    std::map<std::string, Const> values_;  // every constant read or folded, by name
};

}  // namespace

Expected<int, FoldFailure> fold_shape_arithmetic(onnx::ModelProto &model, std::int64_t max_elements,
                                                 std::int64_t max_total) {
    return Folder(model, max_elements, max_total).run();
}

}  // namespace tapestry::onnx_detail
