// ONNX import: parse, check the opset, list unsupported operators, fix dynamic
// dimensions, run ONNX shape inference, then map node by node onto the op library
// (docs/onnx.md has the table). Internally a refusal is thrown as ImportFailure and
// caught in import_onnx, together with anything protobuf or ONNX throws, so that
// no exception leaves this file.
#include "io/onnx_import.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "common/checked_size.h"
#include "graph/validate.h"
#include "io/bounded_file.h"
#include "io/onnx_attention.h"
#include "io/onnx_conv_bn.h"
#include "io/onnx_fold.h"
#include "io/onnx_gelu.h"
#include "io/onnx_support.h"
#include "io/onnx_tensor.h"
#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {

const std::vector<std::string> &onnx_supported_operators() {
    static const std::vector<std::string> ops = [] {
        std::vector<std::string> v{"Abs",        "Add",         "AveragePool", "BatchNormalization", "Cast",
                                   "Clip",       "Concat",      "Constant",    "Conv",               "Div",
                                   "Elu",        "Erf",         "Exp",         "Flatten",            "Gather",
                                   "Gemm",       "HardSigmoid", "HardSwish",   "Identity",           "LayerNormalization",
                                   "LeakyRelu",  "Log",         "MatMul",      "MaxPool",            "Mul",
                                   "Max",        "Min",         "Neg",         "PRelu",              "Pow",
                                   "Reciprocal", "ReduceMax",   "ReduceMean",  "ReduceSum",          "Relu",
                                   "Reshape",    "Selu",        "Sigmoid",     "Slice",              "Softmax",
                                   "Softplus",   "Softsign",    "Split",       "Sqrt",               "Squeeze",
                                   "Sub",        "Sum",         "Tanh",        "Transpose",          "Unsqueeze",
                                   "Dropout",    "GlobalAveragePool", "GlobalMaxPool", "LRN",
                                   "LogSoftmax", "Pad",         "InstanceNormalization", "Tile",
                                   "ConvTranspose", "Where",    "Trilu",       "ReduceSumSquare",    "ReduceLogSum",
                                   "ReduceLogSumExp", "ReduceMin", "Mean",      "CastLike"};
        // Shape arithmetic: folded into constants at import (io/onnx_fold.h).
        for (const std::string &op : onnx_detail::shape_arithmetic_operators()) v.push_back(op);
        std::sort(v.begin(), v.end());
        return v;
    }();
    return ops;
}

bool onnx_operator_supported(const std::string &op_type) {
    const auto &ops = onnx_supported_operators();
    return std::binary_search(ops.begin(), ops.end(), op_type);
}

namespace {

using onnx_detail::dtype_of;
using onnx_detail::elem_type_name;

constexpr int kMinOpset = 13, kMaxOpset = 17;
// Protobuf parses at most 2 GiB, and external data files are not read.
constexpr std::uint64_t kMaxModelBytes = 2 * kGiB;
constexpr const char *kConvertHint = "; convert the model, e.g. with onnx.version_converter.convert_version(model, 17)";

// A refusal: the message (without the file name) and, when the importer lacks a
// feature the model uses, the "what (where)" entries naming it.
struct ImportFailure {
    std::string message;
    std::vector<std::string> unsupported;
};

// An ONNX value mapped to a graph tensor.
struct Value {
    TensorId id;
    DType dtype = DType::f32;
    ZPoint shape;
};

using Ports = std::vector<std::pair<std::string, std::vector<Value>>>;

std::string quoted(const std::string &s) { return "'" + s + "'"; }

std::string safe_id(const std::string &name) {
    std::string out;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '.' || c == '-';
        out += ok ? c : '_';
    }
    while (!out.empty() && (out.front() == '.' || out.front() == '-')) out.erase(out.begin());
    return out.empty() ? std::string("t") : out;
}

std::int64_t product(const std::vector<Coord> &dims, size_t from, size_t to) {
    std::int64_t p = 1;
    for (size_t i = from; i < to; ++i) p *= dims[i];
    return p;
}

class Importer {
public:
    Importer(const OnnxImportOptions &options) : options_(options) {}

    Graph run(onnx::ModelProto &model);  // the steps below, in order
    std::vector<Coord> static_dims(onnx::ValueInfoProto &vi, const std::string &who) const;
    // The default domain's opset the model was written in, when the importer had
    // it converted to opset 13 by ONNX's version converter (else 0).
    int converted_from() const { return converted_from_; }

private:
    void convert_to_opset_13(onnx::ModelProto &model, int opset, const std::vector<std::string> &changed);
    std::set<std::string> read_initializers(const onnx::GraphProto &graph);
    void read_inputs(onnx::GraphProto &graph, const std::set<std::string> &initializers);
    void map_nodes(onnx::GraphProto &graph, const std::set<std::string> &initializers);
    void mark_outputs(const onnx::GraphProto &graph);
    void check_shapes(const onnx::GraphProto &graph) const;
    // ---- failures --------------------------------------------------------------------
    [[noreturn]] void fail(const std::string &message) const { throw ImportFailure{message, {}}; }
    // The importer does not support something this node uses.
    [[noreturn]] void unsupported(const std::string &what) const {
        throw ImportFailure{node_label_ + ": " + what, {node_label_}};
    }

    // ---- values ------------------------------------------------------------------------
    std::string unique_id(const std::string &base) {
        std::string id = safe_id(base);
        for (int k = 2; used_ids_.count(id); ++k) id = safe_id(base) + "_" + std::to_string(k);
        used_ids_.insert(id);
        return id;
    }
    const TensorData *constant(const std::string &name) const {
        auto it = constants_.find(name);
        return it == constants_.end() ? nullptr : it->second.get();
    }
    Value operand(const std::string &name);
    Value add_parameter(const std::string &name, std::shared_ptr<const TensorData> data);
    Value scalar(double v, DType t, const std::string &suffix);
    std::vector<std::int64_t> constant_ints(int input, const std::string &what) const;
    double constant_scalar(int input, const std::string &what) const;
    bool has_input(int i) const { return node_->input_size() > i && !node_->input(i).empty(); }
    bool has_output(int i) const { return node_->output_size() > i && !node_->output(i).empty(); }
    void require_float(const Value &v, const std::string &port) const {
        if (!dtype_is_float(v.dtype))
            unsupported(port + " is " + std::string(dtype_name(v.dtype)) + "; only floating operands are supported");
    }

    // Adds one operation of `kind` and its output tensor. `onnx_output` names the
    // ONNX value it defines ("" for an intermediate of a multi-op mapping, named
    // after the node and `suffix`).
    Value emit(const std::string &kind, const Params &params, const Ports &ports, const std::string &onnx_output,
               const std::string &suffix = "");
    Value reshape(const Value &v, const ZPoint &shape, const std::string &onnx_output, const std::string &suffix);
    void alias(const std::string &onnx_output, const Value &v) { values_[onnx_output] = v; }

    // ---- attributes -----------------------------------------------------------------------
    const onnx::AttributeProto *attribute(const std::string &name) const {
        for (const auto &a : node_->attribute())
            if (a.name() == name) return &a;
        return nullptr;
    }
    std::int64_t attr_int(const std::string &name, std::int64_t fallback) const {
        const auto *a = attribute(name);
        return a ? a->i() : fallback;
    }
    double attr_float(const std::string &name, double fallback) const {
        const auto *a = attribute(name);
        return a ? static_cast<double>(a->f()) : fallback;
    }
    std::string attr_string(const std::string &name, const std::string &fallback) const {
        const auto *a = attribute(name);
        return a ? a->s() : fallback;
    }
    std::optional<std::vector<std::int64_t>> attr_ints(const std::string &name) const {
        const auto *a = attribute(name);
        if (!a) return std::nullopt;
        return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
    }

    // ---- nodes ------------------------------------------------------------------------
    void map_node();
    void map_gelu(const onnx_detail::GeluMatch &m, const onnx::GraphProto &graph);
    void map_at(const onnx::GraphProto &graph, int index);
    void map_attention(const onnx_detail::AttentionMatch &m, const onnx::GraphProto &graph);
    bool fused_attention(const onnx_detail::AttentionMatch &m);
    std::optional<std::vector<std::int64_t>> reshape_target(const std::string &shape_input, const ZPoint &in) const;
    void map_matmul();
    void map_gemm();
    void map_pow();
    void map_reduce(const std::string &kind);
    void map_layernorm();
    void map_batchnorm();
    void map_reshape();
    void map_slice();
    void map_split();
    void map_variadic(const std::string &kind);
    // The node's operands combined by `kind` left to right (NumPy broadcasting),
    // written to `onnx_output` (an alias when there is one operand); and how many.
    std::pair<Value, size_t> chain(const std::string &kind, const std::string &onnx_output);
    // A slice of `v` along one axis, [start, end) by `step` (ONNX semantics).
    Value slice_along(const Value &v, std::int64_t axis, std::int64_t start, std::int64_t end,
                      const std::string &onnx_output, const std::string &suffix, std::int64_t step = 1);
    // An attribute of `count` integers, each `fallback` when it is absent.
    std::vector<std::int64_t> per_axis(const std::string &name, std::int64_t fallback, int count) const;
    // Along `axes`, kept as 1s: the max m, d = x − m, and log Σ exp(d).
    struct LogSumExp {
        Value max, shifted, log_sum;
    };
    LogSumExp log_sum_exp(const Value &x, const std::vector<std::int64_t> &axes);
    void map_prelu();
    void map_gather();
    void map_conv_or_pool(const std::string &op_type);
    void map_constant();
    void map_cast(std::optional<DType> like = std::nullopt);  // like: CastLike's target
    void map_lrn();
    void map_log_softmax();
    void map_pad();
    void map_instance_norm();
    void map_tile();
    void map_conv_transpose();
    void map_where();
    void map_trilu();
    void map_reduce_derived(const std::string &type);
    // A constant of x's dtype at the broadcast shape of `shape_a` and `shape_b`,
    // element i = f(index into a, index into b) (NumPy broadcasting).
    std::shared_ptr<TensorData> broadcast_constant(DType dtype, const ZPoint &shape_a, const ZPoint &shape_b,
                                                   const std::function<double(std::int64_t, std::int64_t)> &f) const;

    const OnnxImportOptions &options_;
    const OpLibrary &lib_ = OpLibrary::standard();
    Graph g_;
    std::map<std::string, Value> values_;
    std::map<std::string, std::shared_ptr<const TensorData>> constants_;
    std::set<std::string> used_ids_;
    const onnx::NodeProto *node_ = nullptr;
    std::string node_label_;  // "Gemm (fc1)"
    int converted_from_ = 0;
    int node_index_ = -1;
    const onnx::GraphProto *graph_ = nullptr;
    // Conv → BatchNormalization pairs folded into one conv2d (io/onnx_conv_bn.h),
    // by Conv node index; the BatchNormalization nodes are skipped.
    std::map<int, onnx_detail::ConvBnMatch> conv_bn_at_;
    std::set<int> folded_bn_;
    std::string node_base_;   // id base of the node's operations
};

Value Importer::add_parameter(const std::string &name, std::shared_ptr<const TensorData> data) {
    Tensor t;
    t.id = TensorId(unique_id(name));
    t.name = name;
    t.dtype = data->dtype;
    t.range = ZRange::of_shape(data->shape);
    t.role = TensorRole::parameter;
    t.value = std::move(data);
    Value v{t.id, t.dtype, t.range.shape()};
    g_.put_tensor(std::move(t));
    return v;
}

Value Importer::operand(const std::string &name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (auto it = constants_.find(name); it != constants_.end()) {
        Value v = add_parameter(name, it->second);
        values_[name] = v;
        return v;
    }
    fail(node_label_ + " reads " + quoted(name) + ", which no input, initializer or earlier node defines");
}

Value Importer::scalar(double v, DType t, const std::string &suffix) {
    return add_parameter(node_base_ + "." + suffix, std::make_shared<const TensorData>(onnx_detail::float_scalar(t, v)));
}

std::vector<std::int64_t> Importer::constant_ints(int input, const std::string &what) const {
    const TensorData *c = has_input(input) ? constant(node_->input(input)) : nullptr;
    if (!c) unsupported(what + " must be a constant (an initializer or a Constant node)");
    std::vector<std::int64_t> out;
    if (c->dtype == DType::i64)
        for (std::int64_t v : c->as<std::int64_t>()) out.push_back(v);
    else if (c->dtype == DType::i32)
        for (std::int32_t v : c->as<std::int32_t>()) out.push_back(v);
    else
        fail(node_label_ + ": " + what + " must hold integers, got " + std::string(dtype_name(c->dtype)));
    return out;
}

double Importer::constant_scalar(int input, const std::string &what) const {
    const TensorData *c = has_input(input) ? constant(node_->input(input)) : nullptr;
    if (!c || c->element_count() != 1) unsupported(what + " must be a constant holding one value");
    switch (c->dtype) {
        case DType::f32: return c->as<float>()[0];
        case DType::i32: return c->as<std::int32_t>()[0];
        case DType::i64: return static_cast<double>(c->as<std::int64_t>()[0]);
        default: break;
    }
    unsupported(what + " must be an f32, i32 or i64 constant, got " + std::string(dtype_name(c->dtype)));
}

Value Importer::emit(const std::string &kind, const Params &params, const Ports &ports, const std::string &onnx_output,
                     const std::string &suffix) {
    std::vector<PortTypes> types;
    Operation op;
    for (const auto &[port, operands] : ports) {
        PortTypes pt{port, {}};
        PortBinding b{port, {}};
        for (const Value &v : operands) {
            pt.operands.push_back(OperandType{v.dtype, v.shape});
            b.selections.push_back(TensorSelection{v.id, ZRange::of_shape(v.shape)});
        }
        types.push_back(std::move(pt));
        op.inputs.push_back(std::move(b));
    }
    auto d = lib_.derive(kind, params, types);
    if (!d) fail(node_label_ + ": " + d.error().message);
    const OperandType &out = d->outputs.at(0).operands.at(0);

    Tensor t;
    const std::string tensor_name = onnx_output.empty() ? node_base_ + "." + suffix : onnx_output;
    t.id = TensorId(unique_id(tensor_name));
    t.name = tensor_name;
    t.dtype = out.dtype;
    t.range = ZRange::of_shape(out.shape);
    t.role = TensorRole::intermediate;
    Value v{t.id, t.dtype, out.shape};
    g_.put_tensor(std::move(t));

    op.id = OpId(unique_id(suffix.empty() ? node_base_ : node_base_ + "." + suffix));
    op.name = suffix.empty() ? node_base_ : node_base_ + "." + suffix;
    op.kind = kind;
    op.params = params;
    op.outputs.push_back(PortBinding{"y", {TensorSelection{v.id, ZRange::of_shape(v.shape)}}});
    g_.put_op(std::move(op));
    if (!onnx_output.empty()) values_[onnx_output] = v;
    return v;
}

Value Importer::reshape(const Value &v, const ZPoint &shape, const std::string &onnx_output,
                        const std::string &suffix) {
    if (shape == v.shape && onnx_output.empty()) return v;
    if (shape == v.shape) {
        alias(onnx_output, v);
        return v;
    }
    return emit("reshape", Params{{"shape", shape.to_vector()}}, {{"x", {v}}}, onnx_output, suffix);
}

// ---- node mappings ----------------------------------------------------------------------

std::string node_label(const onnx::NodeProto &n, int index) {
    return n.op_type() + " (" + (n.name().empty() ? "node #" + std::to_string(index) : n.name()) + ")";
}

void Importer::map_at(const onnx::GraphProto &graph, int index) {
    node_ = &graph.node(index);
    node_label_ = node_label(*node_, index);
    node_index_ = index;
    node_base_ = node_->name().empty() ? node_->op_type() + "_" + std::to_string(index) : node_->name();
    if (node_->output_size() < 1 || node_->output(0).empty()) fail(node_label_ + " has no output");
    map_node();
}

// A matched GELU subgraph (io/onnx_gelu.h) as one `gelu` operation named after its
// final Mul. Its other nodes were skipped; they read only x and constants, so when
// the fused form does not fit (a constant of another dtype than x) they are mapped
// one by one here instead, still after x and before every consumer of the result.
void Importer::map_gelu(const onnx_detail::GeluMatch &m, const onnx::GraphProto &graph) {
    const Value x = values_.count(m.x) ? values_.at(m.x) : Value{};
    bool fits = values_.count(m.x) && dtype_is_float(x.dtype);
    int rank = x.shape.rank();
    for (const std::string &c : m.constants) {
        const TensorData *t = constant(c);
        // (an integer constant can only be Pow's exponent, which may differ from x)
        if (!t || (dtype_is_float(t->dtype) && t->dtype != x.dtype)) fits = false;
        else rank = std::max(rank, t->shape.rank());
    }
    if (!fits) {
        for (int k : m.nodes) map_at(graph, k);
        return;
    }
    node_ = &graph.node(m.root);
    node_label_ = node_label(*node_, m.root);
    node_base_ = node_->name().empty() ? node_->op_type() + "_" + std::to_string(m.root) : node_->name();
    const Params params{{"approximate", m.approximate}};
    if (rank == x.shape.rank()) {
        emit("gelu", params, {{"x", {x}}}, node_->output(0));
        return;
    }
    // Constants of a higher rank (all their dimensions are 1) broadcast x up to it.
    const Value y = emit("gelu", params, {{"x", {x}}}, "", "gelu");
    std::vector<Coord> dims(static_cast<size_t>(rank - x.shape.rank()), 1);
    for (Coord d : x.shape.coords()) dims.push_back(d);
    reshape(y, ZPoint(dims), node_->output(0), "");
}

// A matched attention subgraph (io/onnx_attention.h) as one `attention` operation
// named after its final Reshape, when its shapes and constants fit the op (q, k, v
// f32 [B, S, H·E] cut into H heads, a scalar scale, a mask [Sq, Sk] up to leading
// 1s); otherwise its nodes are mapped one by one here, still after q, k, v and the
// mask and before every consumer of the result.
void Importer::map_attention(const onnx_detail::AttentionMatch &m, const onnx::GraphProto &graph) {
    node_ = &graph.node(m.root);
    node_label_ = node_label(*node_, m.root);
    node_index_ = m.root;
    node_base_ = node_->name().empty() ? node_->op_type() + "_" + std::to_string(m.root) : node_->name();
    if (fused_attention(m)) return;
    for (int k : m.nodes) map_at(graph, k);
}

// The shape a Reshape with constant shape input `shape_input` gives a value of
// shape `in` (0 copies the input's dim, one −1 is inferred); none when it is not a
// constant or does not fit.
std::optional<std::vector<std::int64_t>> Importer::reshape_target(const std::string &shape_input,
                                                                  const ZPoint &in) const {
    const TensorData *c = constant(shape_input);
    if (!c || c->dtype != DType::i64 || c->shape.rank() != 1) return std::nullopt;
    std::vector<std::int64_t> dims(c->as<std::int64_t>().begin(), c->as<std::int64_t>().end());
    std::int64_t known = 1;
    int infer = -1;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] == 0) {
            if (static_cast<int>(d) >= in.rank()) return std::nullopt;
            dims[d] = in[static_cast<int>(d)];
        }
        if (dims[d] == -1) {
            if (infer >= 0) return std::nullopt;
            infer = static_cast<int>(d);
        } else if (dims[d] < 1) {
            return std::nullopt;
        } else {
            known = size_mul(known, dims[d]);
        }
    }
    if (infer >= 0) {
        if (known == 0 || in.product() % known != 0) return std::nullopt;
        dims[static_cast<size_t>(infer)] = in.product() / known;
    }
    std::int64_t total = 1;
    for (std::int64_t d : dims) total = size_mul(total, d);
    if (total != in.product()) return std::nullopt;
    return dims;
}

bool Importer::fused_attention(const onnx_detail::AttentionMatch &m) {
    if (!values_.count(m.q) || !values_.count(m.k) || !values_.count(m.v)) return false;
    const Value q = values_.at(m.q), k = values_.at(m.k), v = values_.at(m.v);
    for (const Value *x : {&q, &k, &v})
        if (x->dtype != DType::f32 || x->shape.rank() != 3) return false;
    const std::int64_t b = q.shape[0], sq = q.shape[1], d = q.shape[2], sk = k.shape[1];
    if (k.shape[0] != b || v.shape[0] != b || v.shape[1] != sk || k.shape[2] != d) return false;
    const auto qh = reshape_target(m.q_heads_shape, q.shape), kh = reshape_target(m.k_heads_shape, k.shape),
               vh = reshape_target(m.v_heads_shape, v.shape);
    if (!qh || !kh || !vh || qh->size() != 4 || kh->size() != 4 || vh->size() != 4) return false;
    const std::int64_t heads = (*qh)[2], e = (*qh)[3], ev = (*vh)[3];
    if (*qh != std::vector<std::int64_t>{b, sq, heads, e} || *kh != std::vector<std::int64_t>{b, sk, heads, e} ||
        *vh != std::vector<std::int64_t>{b, sk, heads, ev})
        return false;
    const auto merged = reshape_target(m.merge_shape, ZPoint{b, sq, heads, ev});
    if (!merged || *merged != std::vector<std::int64_t>{b, sq, heads * ev}) return false;
    double scale = 1.0;
    if (!m.scale.empty()) {
        const TensorData *c = constant(m.scale);
        if (!c || c->dtype != DType::f32 || c->element_count() != 1) return false;
        const double value = c->get(0);
        scale = m.scale_divides ? 1.0 / value : value;
        if (!std::isfinite(scale) || scale == 0.0) return false;  // (0 would mean the op's default 1/√E)
    }
    std::optional<ZPoint> mask_shape;
    if (!m.mask.empty()) {
        if (const TensorData *c = constant(m.mask)) {
            if (c->dtype != DType::f32) return false;
            mask_shape = c->shape;
        } else if (values_.count(m.mask) && values_.at(m.mask).dtype == DType::f32) {
            mask_shape = values_.at(m.mask).shape;
        } else {
            return false;
        }
        // [Sq, Sk] with any leading 1s (they broadcast over batch and heads).
        const int r = mask_shape->rank();
        if (r < 2 || r > 4 || (*mask_shape)[r - 2] != sq || (*mask_shape)[r - 1] != sk) return false;
        for (int i = 0; i + 2 < r; ++i)
            if ((*mask_shape)[i] != 1) return false;
    }
    Ports ports{{"q", {q}}, {"k", {k}}, {"v", {v}}};
    if (mask_shape) {
        Value mask = operand(m.mask);
        if (mask.shape.rank() != 2) mask = reshape(mask, ZPoint{sq, sk}, "", "mask2d");
        ports.push_back({"mask", {mask}});
    }
    emit("attention", Params{{"heads", heads}, {"scale", scale}}, ports, node_->output(0));
    return true;
}

void Importer::map_node() {
    const std::string &type = node_->op_type();
    const std::string out = node_->output(0);
    static const std::map<std::string, std::string> binary{{"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}};
    static const std::map<std::string, std::string> unary{
        {"Sqrt", "sqrt"},         {"Exp", "exp"},           {"Erf", "erf"},           {"Tanh", "tanh"},
        {"Sigmoid", "sigmoid"},   {"Relu", "relu"},         {"Neg", "neg"},           {"Abs", "abs"},
        {"Log", "log"},           {"Reciprocal", "reciprocal"}, {"Softplus", "softplus"}, {"Softsign", "softsign"},
        {"HardSwish", "hard_swish"}};
    // Unary functions with constants given as attributes: (attribute, default, our
    // parameter) by ONNX operator.
    struct UnaryConstant {
        const char *attribute;
        double fallback;
        const char *param;
    };
    static const std::map<std::string, std::pair<std::string, std::vector<UnaryConstant>>> unary_with_constants{
        {"LeakyRelu", {"leaky_relu", {{"alpha", 0.01, "alpha"}}}},
        {"Elu", {"elu", {{"alpha", 1.0, "alpha"}}}},
        {"Selu", {"selu", {{"alpha", 1.67326319217681884765625, "alpha"}, {"gamma", 1.05070102214813232421875, "gamma"}}}},
        {"HardSigmoid", {"hard_sigmoid", {{"alpha", 0.2, "alpha"}, {"beta", 0.5, "beta"}}}}};
    if (auto it = binary.find(type); it != binary.end()) {
        const Value a = operand(node_->input(0)), b = operand(node_->input(1));
        require_float(a, "A");
        require_float(b, "B");
        emit(it->second, {}, {{"a", {a}}, {"b", {b}}}, out);
    } else if (auto u = unary.find(type); u != unary.end()) {
        const Value x = operand(node_->input(0));
        require_float(x, "X");
        emit(u->second, {}, {{"x", {x}}}, out);
    } else if (auto uc = unary_with_constants.find(type); uc != unary_with_constants.end()) {
        const Value x = operand(node_->input(0));
        require_float(x, "X");
        Params params;
        for (const UnaryConstant &c : uc->second.second) params.set(c.param, attr_float(c.attribute, c.fallback));
        emit(uc->second.first, params, {{"x", {x}}}, out);
    } else if (type == "Clip") {
        // Opset 11+: min and max are optional inputs, which must be constants.
        const Value x = operand(node_->input(0));
        require_float(x, "input");
        Params params;
        if (has_input(1)) params.set("min", constant_scalar(1, "Clip's min"));
        if (has_input(2)) params.set("max", constant_scalar(2, "Clip's max"));
        emit("clip", params, {{"x", {x}}}, out);
    } else if (type == "MatMul") {
        map_matmul();
    } else if (type == "Gemm") {
        map_gemm();
    } else if (type == "Pow") {
        map_pow();
    } else if (type == "Softmax") {
        const Value x = operand(node_->input(0));
        require_float(x, "input");
        emit("softmax", Params{{"axis", attr_int("axis", -1)}}, {{"x", {x}}}, out);
    } else if (type == "LayerNormalization") {
        map_layernorm();
    } else if (type == "BatchNormalization") {
        map_batchnorm();
    } else if (type == "ReduceSum") {
        map_reduce("reduce_sum");
    } else if (type == "ReduceMean") {
        map_reduce("reduce_mean");
    } else if (type == "ReduceMax") {
        map_reduce("reduce_max");
    } else if (type == "Transpose") {
        const Value x = operand(node_->input(0));
        std::vector<std::int64_t> perm = attr_ints("perm").value_or(std::vector<std::int64_t>{});
        if (perm.empty())
            for (int d = x.shape.rank() - 1; d >= 0; --d) perm.push_back(d);
        emit("transpose", Params{{"perm", perm}}, {{"x", {x}}}, out);
    } else if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze") {
        map_reshape();
    } else if (type == "Concat") {
        std::vector<Value> pieces;
        for (const std::string &in : node_->input())
            if (!in.empty()) pieces.push_back(operand(in));
        emit("concat", Params{{"axis", attr_int("axis", 0)}}, {{"inputs", pieces}}, out);
    } else if (type == "Slice") {
        map_slice();
    } else if (type == "Split") {
        map_split();
    } else if (type == "Max" || type == "Min" || type == "Sum") {
        map_variadic(type == "Max" ? "max" : type == "Min" ? "min" : "add");
    } else if (type == "PRelu") {
        map_prelu();
    } else if (type == "Gather") {
        map_gather();
    } else if (type == "Conv" || type == "MaxPool" || type == "AveragePool") {
        map_conv_or_pool(type);
    } else if (type == "Constant") {
        map_constant();
    } else if (type == "Dropout") {
        // Inference: the identity. Training mode and the mask output are refused.
        if (has_input(2) && (!constant(node_->input(2)) || constant_scalar(2, "training_mode") != 0))
            unsupported("a training_mode that is not a constant 0 (only inference dropout is supported)");
        if (has_output(1)) {  // a mask output named but read by nothing is fine
            const std::string &mask = node_->output(1);
            bool read = std::any_of(graph_->output().begin(), graph_->output().end(),
                                    [&](const onnx::ValueInfoProto &o) { return o.name() == mask; });
            for (const onnx::NodeProto &n : graph_->node())
                read = read || std::find(n.input().begin(), n.input().end(), mask) != n.input().end();
            if (read) unsupported("Dropout's mask output is read (only inference dropout, without a mask, is supported)");
        }
        alias(out, operand(node_->input(0)));
    } else if (type == "GlobalAveragePool" || type == "GlobalMaxPool") {
        // A mean or max over every spatial dimension, kept as 1s.
        const Value x = operand(node_->input(0));
        require_float(x, "X");
        if (x.shape.rank() < 3) fail(node_label_ + ": X must have rank at least 3 (N, C, spatial…)");
        std::vector<std::int64_t> axes;
        for (int d = 2; d < x.shape.rank(); ++d) axes.push_back(d);
        emit(type == "GlobalAveragePool" ? "reduce_mean" : "reduce_max", Params{{"axes", axes}, {"keepdims", true}},
             {{"x", {x}}}, out);
    } else if (type == "LRN") {
        map_lrn();
    } else if (type == "LogSoftmax") {
        map_log_softmax();
    } else if (type == "Pad") {
        map_pad();
    } else if (type == "InstanceNormalization") {
        map_instance_norm();
    } else if (type == "Tile") {
        map_tile();
    } else if (type == "ConvTranspose") {
        map_conv_transpose();
    } else if (type == "Where") {
        map_where();
    } else if (type == "Trilu") {
        map_trilu();
    } else if (type == "ReduceSumSquare" || type == "ReduceLogSum" || type == "ReduceLogSumExp" || type == "ReduceMin") {
        map_reduce_derived(type);
    } else if (type == "Mean") {
        // The inputs summed left to right (NumPy broadcasting), then divided by their count.
        const bool one = std::count_if(node_->input().begin(), node_->input().end(), [](const std::string &i) { return !i.empty(); }) == 1;
        const auto [sum, count] = chain("add", one ? out : std::string());
        if (count > 1)
            emit("div", {}, {{"a", {sum}}, {"b", {scalar(static_cast<double>(count), sum.dtype, "count")}}}, out);
    } else if (type == "CastLike") {
        const TensorData *like_c = constant(node_->input(1));
        map_cast(like_c ? like_c->dtype : operand(node_->input(1)).dtype);
    } else if (type == "Identity") {
        if (constant(node_->input(0))) constants_[out] = constants_.at(node_->input(0));
        else alias(out, operand(node_->input(0)));
    } else if (type == "Cast") {
        map_cast();
    } else {
        unsupported("the operator is not supported");  // (the pre-pass lists these)
    }
}

void Importer::map_matmul() {
    Value a = operand(node_->input(0)), b = operand(node_->input(1));
    require_float(a, "A");
    require_float(b, "B");
    if (a.shape.rank() == 0 || b.shape.rank() == 0) fail(node_label_ + ": MatMul operands must have rank at least 1");
    // NumPy promotion of 1-D operands: [K] → [1, K] on the left, [K] → [K, 1] on the
    // right, and the added dimension is removed from the result.
    const bool a_vector = a.shape.rank() == 1, b_vector = b.shape.rank() == 1;
    // A constant 2-D right operand is a weight: linear (the executor's best path).
    const bool weight = !b_vector && b.shape.rank() == 2 && constant(node_->input(1)) != nullptr;
    if (weight && !a_vector) {
        emit("linear", {}, {{"x", {a}}, {"w", {b}}}, node_->output(0));
        return;
    }
    if (a_vector) a = reshape(a, ZPoint{1, a.shape[0]}, "", "a2d");
    if (b_vector) b = reshape(b, ZPoint{b.shape[0], 1}, "", "b2d");
    if (!a_vector && !b_vector) {
        emit("matmul", {}, {{"a", {a}}, {"b", {b}}}, node_->output(0));
        return;
    }
    const Value y = emit("matmul", {}, {{"a", {a}}, {"b", {b}}}, "", "matmul");
    std::vector<Coord> dims = y.shape.to_vector();
    if (b_vector) dims.erase(dims.end() - 1);
    if (a_vector) dims.erase(dims.end() - 1 - (b_vector ? 0 : 1));
    reshape(y, ZPoint(dims), node_->output(0), "");
}

void Importer::map_gemm() {
    Value a = operand(node_->input(0));
    require_float(a, "A");
    const double alpha = attr_float("alpha", 1.0), beta = attr_float("beta", 1.0);
    const bool trans_a = attr_int("transA", 0) != 0, trans_b = attr_int("transB", 0) != 0;
    const bool has_c = has_input(2) && beta != 0.0;
    if (a.shape.rank() != 2) fail(node_label_ + ": A must have rank 2, got " + a.shape.to_string());
    if (trans_a) a = emit("transpose", Params{{"perm", std::vector<std::int64_t>{1, 0}}}, {{"x", {a}}}, "", "At");

    Value b;
    const TensorData *b_const = constant(node_->input(1));
    if (trans_b && b_const && b_const->shape.rank() == 2) {
        // Transpose a constant B once, here, so that it is the [K, N] weight of a linear.
        auto t = std::make_shared<TensorData>(b_const->dtype, ZPoint{b_const->shape[1], b_const->shape[0]});
        const size_t es = static_cast<size_t>(dtype_bytes(b_const->dtype));
        const Coord rows = b_const->shape[0], cols = b_const->shape[1];
        for (Coord r = 0; r < rows; ++r)
            for (Coord c = 0; c < cols; ++c)
                std::memcpy(t->bytes.data() + static_cast<size_t>(c * rows + r) * es,
                            b_const->bytes.data() + static_cast<size_t>(r * cols + c) * es, es);
        b = add_parameter(node_->input(1) + ".T", std::move(t));
    } else {
        b = operand(node_->input(1));
        if (b.shape.rank() != 2) fail(node_label_ + ": B must have rank 2, got " + b.shape.to_string());
        if (trans_b) b = emit("transpose", Params{{"perm", std::vector<std::int64_t>{1, 0}}}, {{"x", {b}}}, "", "Bt");
    }
    require_float(b, "B");

    const bool last_is_product = !has_c && alpha == 1.0;
    std::optional<Value> c;
    if (has_c) {
        c = operand(node_->input(2));
        require_float(*c, "C");
    }
    // The bias joins a linear when it is a plain [N] vector added once.
    const bool bias_in_linear = c && beta == 1.0 && alpha == 1.0 && c->shape.rank() == 1 && c->shape[0] == b.shape[1];
    Value y;
    if (bias_in_linear) {
        emit("linear", {}, {{"x", {a}}, {"w", {b}}, {"bias", {*c}}}, node_->output(0));
        return;
    }
    y = emit(b_const ? "linear" : "matmul", {},
             b_const ? Ports{{"x", {a}}, {"w", {b}}} : Ports{{"a", {a}}, {"b", {b}}},
             last_is_product ? node_->output(0) : "", "product");
    if (last_is_product) return;
    if (alpha != 1.0)
        y = emit("mul", {}, {{"a", {y}}, {"b", {scalar(alpha, y.dtype, "alpha")}}}, c ? "" : node_->output(0),
                 c ? "scaled" : "");
    if (c) {
        Value cc = *c;
        if (beta != 1.0) cc = emit("mul", {}, {{"a", {cc}}, {"b", {scalar(beta, cc.dtype, "beta")}}}, "", "betaC");
        emit("add", {}, {{"a", {y}}, {"b", {cc}}}, node_->output(0));
    }
}

void Importer::map_pow() {
    const Value x = operand(node_->input(0));
    require_float(x, "X");
    const TensorData *e = constant(node_->input(1));
    if (!e || e->element_count() != 1) unsupported("the exponent Y must be a constant holding one value");
    const double exponent = constant_scalar(1, "the exponent Y");
    // Pow broadcasts: an exponent of shape [1] makes a scalar base [1].
    if (e->shape.rank() > x.shape.rank()) {
        const Value y = emit("pow", Params{{"exponent", exponent}}, {{"x", {x}}}, "", "pow");
        reshape(y, ZPoint(std::vector<Coord>(static_cast<size_t>(e->shape.rank()), 1)), node_->output(0), "");
        return;
    }
    emit("pow", Params{{"exponent", exponent}}, {{"x", {x}}}, node_->output(0));
}

void Importer::map_reduce(const std::string &kind) {
    const Value x = operand(node_->input(0));
    require_float(x, "data");
    const bool keepdims = attr_int("keepdims", 1) != 0;
    std::vector<std::int64_t> axes;
    bool noop_when_empty = false;
    if (kind == "reduce_sum") {  // opset 13: axes is an optional input
        if (has_input(1)) axes = constant_ints(1, "axes");
        noop_when_empty = attr_int("noop_with_empty_axes", 0) != 0;
    } else {
        axes = attr_ints("axes").value_or(std::vector<std::int64_t>{});
    }
    if (axes.empty()) {
        if (noop_when_empty) {
            alias(node_->output(0), x);
            return;
        }
        for (int d = 0; d < x.shape.rank(); ++d) axes.push_back(d);
    }
    if (axes.empty()) {  // a scalar: nothing to reduce
        alias(node_->output(0), x);
        return;
    }
    emit(kind, Params{{"axes", axes}, {"keepdims", keepdims}}, {{"x", {x}}}, node_->output(0));
}

void Importer::map_layernorm() {
    const Value x = operand(node_->input(0));
    require_float(x, "X");
    const std::int64_t axis = attr_int("axis", -1);
    const double eps = attr_float("epsilon", 1e-5);
    Ports ports{{"x", {x}}};
    if (has_input(1)) ports.push_back({"gamma", {operand(node_->input(1))}});
    if (has_input(2)) ports.push_back({"beta", {operand(node_->input(2))}});
    emit("layernorm", Params{{"axis", axis}, {"epsilon", eps}}, ports, node_->output(0));
    if (!has_output(1) && !has_output(2)) return;
    // The optional Mean and InvStdDev outputs (shaped like X with the normalized
    // axes kept as 1): reduce_mean of x, and (mean((x − mean)²) + ε)^−½.
    const int rank = x.shape.rank();
    const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
    std::vector<std::int64_t> axes;
    for (int d = a; d < rank; ++d) axes.push_back(d);
    const Params mean_params{{"axes", axes}, {"keepdims", true}};
    const Value mean = emit("reduce_mean", mean_params, {{"x", {x}}}, has_output(1) ? node_->output(1) : "", "mean");
    if (!has_output(2)) return;
    const Value centred = emit("sub", {}, {{"a", {x}}, {"b", {mean}}}, "", "centred");
    const Value square = emit("mul", {}, {{"a", {centred}}, {"b", {centred}}}, "", "square");
    const Value var = emit("reduce_mean", mean_params, {{"x", {square}}}, "", "var");
    const Value shifted = emit("add", {}, {{"a", {var}}, {"b", {scalar(eps, x.dtype, "epsilon")}}}, "", "var_eps");
    emit("pow", Params{{"exponent", -0.5}}, {{"x", {shifted}}}, node_->output(2), "inv_std");
}

void Importer::map_batchnorm() {
    if (attr_int("training_mode", 0) != 0)
        unsupported("training_mode=1 (only inference batch normalization is supported)");
    if (has_output(1) || has_output(2)) unsupported("the running mean/var outputs (training only)");
    const Value x = operand(node_->input(0));
    require_float(x, "X");
    emit("batchnorm", Params{{"epsilon", attr_float("epsilon", 1e-5)}},
         {{"x", {x}},
          {"scale", {operand(node_->input(1))}},
          {"bias", {operand(node_->input(2))}},
          {"mean", {operand(node_->input(3))}},
          {"var", {operand(node_->input(4))}}},
         node_->output(0));
}

void Importer::map_reshape() {
    const std::string &type = node_->op_type();
    // A reshaped constant stays a constant (its bytes do not move).
    const TensorData *c = constant(node_->input(0));
    const ZPoint x_shape = c ? c->shape : operand(node_->input(0)).shape;
    const std::vector<Coord> in = x_shape.to_vector();
    const int rank = static_cast<int>(in.size());
    std::vector<Coord> dims;
    auto norm_axis = [&](std::int64_t a, int r, const std::string &what) {
        if (a < -r || a >= r)
            fail(node_label_ + ": " + what + " " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
        return static_cast<int>(a < 0 ? a + r : a);
    };
    if (type == "Reshape") {
        const std::vector<std::int64_t> shape = constant_ints(1, "the shape input");
        const bool allow_zero = attr_int("allowzero", 0) != 0;
        int infer = -1;
        for (size_t i = 0; i < shape.size(); ++i) {
            std::int64_t s = shape[i];
            if (s == 0 && allow_zero) unsupported("a zero-size dimension (allowzero=1 with a 0 in the shape)");
            if (s == 0) {
                if (static_cast<int>(i) >= rank) fail(node_label_ + ": shape entry 0 copies a dimension X lacks");
                s = in[i];
            }
            if (s == -1) {
                if (infer >= 0) fail(node_label_ + ": the shape has more than one -1");
                infer = static_cast<int>(i);
                s = 1;
            } else if (s < 0) {
                fail(node_label_ + ": shape entry " + std::to_string(s) + " is invalid");
            }
            dims.push_back(s);
        }
        const std::int64_t total = product(in, 0, in.size());
        if (infer >= 0) {
            const std::int64_t known = product(dims, 0, dims.size());
            if (known == 0 || total % known != 0)
                fail(node_label_ + ": cannot infer the -1 of the shape for " + std::to_string(total) + " elements");
            dims[static_cast<size_t>(infer)] = total / known;
        }
        if (product(dims, 0, dims.size()) != total)
            fail(node_label_ + ": the shape " + ZPoint(dims).to_string() + " does not hold the " +
                 std::to_string(total) + " elements of X " + x_shape.to_string());
    } else if (type == "Flatten") {
        const std::int64_t a = attr_int("axis", 1);
        const int axis = a == rank ? rank : norm_axis(a, rank, "axis");
        dims = {product(in, 0, static_cast<size_t>(axis)), product(in, static_cast<size_t>(axis), in.size())};
    } else if (type == "Squeeze") {
        std::set<int> axes;
        if (has_input(1))
            for (std::int64_t a : constant_ints(1, "the axes input")) axes.insert(norm_axis(a, rank, "axis"));
        for (int d = 0; d < rank; ++d) {
            const bool named = axes.count(d) > 0;
            if (named && in[static_cast<size_t>(d)] != 1)
                fail(node_label_ + ": axis " + std::to_string(d) + " has size " +
                     std::to_string(in[static_cast<size_t>(d)]) + ", not 1");
            if (axes.empty() ? in[static_cast<size_t>(d)] != 1 : !named) dims.push_back(in[static_cast<size_t>(d)]);
        }
    } else {  // Unsqueeze
        const std::vector<std::int64_t> axes = constant_ints(1, "the axes input");
        const int out_rank = rank + static_cast<int>(axes.size());
        std::set<int> at;
        for (std::int64_t a : axes)
            if (!at.insert(norm_axis(a, out_rank, "axis")).second) fail(node_label_ + ": an axis is named twice");
        size_t next = 0;
        for (int d = 0; d < out_rank; ++d) dims.push_back(at.count(d) ? 1 : in[next++]);
    }
    if (c) {
        auto t = std::make_shared<TensorData>(*c);
        t->shape = ZPoint(dims);
        constants_[node_->output(0)] = std::move(t);
        return;
    }
    reshape(operand(node_->input(0)), ZPoint(dims), node_->output(0), "");
}

void Importer::map_slice() {
    const Value x = operand(node_->input(0));
    Params p{{"starts", constant_ints(1, "starts")}, {"ends", constant_ints(2, "ends")}};
    if (has_input(3)) p.set("axes", constant_ints(3, "axes"));
    if (has_input(4)) p.set("steps", constant_ints(4, "steps"));
    emit("slice", p, {{"x", {x}}}, node_->output(0));
}

// Split (opset 13): one slice per output, along `axis`, of the sizes in the
// optional constant `split` input, else equal parts.
void Importer::map_split() {
    const Value x = operand(node_->input(0));
    const std::optional<int> normalized = op_util::normalize_axis(attr_int("axis", 0), x.shape.rank());
    if (!normalized)
        fail(node_label_ + ": axis " + std::to_string(attr_int("axis", 0)) + " is outside a rank-" +
             std::to_string(x.shape.rank()) + " input");
    const std::int64_t axis = *normalized;
    const std::int64_t extent = x.shape[*normalized];
    const int parts = node_->output_size();
    std::vector<std::int64_t> sizes;
    if (has_input(1)) {
        sizes = constant_ints(1, "split");
        std::int64_t total = 0;
        for (std::int64_t v : sizes) total += v;
        if (static_cast<int>(sizes.size()) != parts || total != extent ||
            std::any_of(sizes.begin(), sizes.end(), [](std::int64_t v) { return v < 0; }))
            fail(node_label_ + ": split sizes must be " + std::to_string(parts) + " non-negative numbers summing to " +
                 std::to_string(extent) + ", the extent of axis " + std::to_string(axis));
    } else {
        if (parts < 1 || extent % parts != 0)
            fail(node_label_ + ": axis " + std::to_string(axis) + " of extent " + std::to_string(extent) +
                 " does not split into " + std::to_string(parts) + " equal parts");
        sizes.assign(static_cast<size_t>(parts), extent / parts);
    }
    std::int64_t start = 0;
    for (int k = 0; k < parts; ++k) {
        const std::int64_t size = sizes[static_cast<size_t>(k)];
        if (has_output(k)) slice_along(x, axis, start, start + size, node_->output(k), "part" + std::to_string(k));
        start += size;
    }
}

// Max, Min, Sum of one or more operands (NumPy broadcasting): a chain of binary
// operations, left to right; one operand is the operand itself.
void Importer::map_variadic(const std::string &kind) {
    chain(kind, node_->output(0));
}

std::pair<Value, size_t> Importer::chain(const std::string &kind, const std::string &onnx_output) {
    std::vector<Value> in;
    for (int i = 0; i < node_->input_size(); ++i)
        if (!node_->input(i).empty()) {
            in.push_back(operand(node_->input(i)));
            require_float(in.back(), "input " + std::to_string(i));
        }
    if (in.empty()) fail(node_label_ + " has no input");
    if (in.size() == 1) {
        if (!onnx_output.empty()) alias(onnx_output, in[0]);
        return {in[0], 1};
    }
    Value v = in[0];
    for (size_t k = 1; k < in.size(); ++k) {
        const bool last = k + 1 == in.size();
        v = emit(kind, {}, {{"a", {v}}, {"b", {in[k]}}}, last ? onnx_output : "", "step" + std::to_string(k));
    }
    return {v, in.size()};
}

Value Importer::slice_along(const Value &v, std::int64_t axis, std::int64_t start, std::int64_t end,
                            const std::string &onnx_output, const std::string &suffix, std::int64_t step) {
    Params p{{"starts", std::vector<std::int64_t>{start}}, {"ends", std::vector<std::int64_t>{end}},
             {"axes", std::vector<std::int64_t>{axis}}};
    if (step != 1) p.set("steps", std::vector<std::int64_t>{step});
    return emit("slice", p, {{"x", {v}}}, onnx_output, suffix);
}

std::vector<std::int64_t> Importer::per_axis(const std::string &name, std::int64_t fallback, int count) const {
    std::vector<std::int64_t> v = attr_ints(name).value_or(std::vector<std::int64_t>{});
    if (v.empty()) v.assign(static_cast<size_t>(count), fallback);
    if (static_cast<int>(v.size()) != count)
        fail(node_label_ + ": " + name + " must have " + std::to_string(count) + " entries");
    return v;
}

Importer::LogSumExp Importer::log_sum_exp(const Value &x, const std::vector<std::int64_t> &axes) {
    const Params along{{"axes", axes}, {"keepdims", true}};
    LogSumExp r{emit("reduce_max", along, {{"x", {x}}}, "", "max"), {}, {}};
    r.shifted = emit("sub", {}, {{"a", {x}}, {"b", {r.max}}}, "", "shifted");
    const Value e = emit("exp", {}, {{"x", {r.shifted}}}, "", "exp");
    r.log_sum = emit("log", {}, {{"x", {emit("reduce_sum", along, {{"x", {e}}}, "", "sum")}}}, "", "log");
    return r;
}

// PRelu: y = max(x, 0) + slope · min(x, 0), slope broadcast to x; exact in
// floating point (one of the two terms is zero).
void Importer::map_prelu() {
    const Value x = operand(node_->input(0));
    Value slope = operand(node_->input(1));
    require_float(x, "X");
    require_float(slope, "slope");
    // Before opset 7 a 1-D slope of C values was per channel (dim 1), which the
    // version converter leaves as it is: make it [C, 1, …] for the broadcast.
    if (converted_from_ > 0 && converted_from_ < 7 && slope.shape.rank() == 1 && x.shape.rank() > 2 &&
        slope.shape[0] == x.shape[1] && slope.shape[0] != x.shape[x.shape.rank() - 1]) {
        std::vector<Coord> dims{slope.shape[0]};
        dims.resize(static_cast<size_t>(x.shape.rank() - 1), 1);
        slope = reshape(slope, ZPoint(dims), "", "slope_per_channel");
    }
    const Value zero = scalar(0.0, x.dtype, "zero");
    const Value pos = emit("max", {}, {{"a", {x}}, {"b", {zero}}}, "", "positive");
    const Value neg = emit("min", {}, {{"a", {x}}, {"b", {zero}}}, "", "negative");
    const Value scaled = emit("mul", {}, {{"a", {neg}}, {"b", {slope}}}, "", "scaled");
    emit("add", {}, {{"a", {pos}}, {"b", {scaled}}}, node_->output(0));
}

void Importer::map_gather() {
    const Value data = operand(node_->input(0));
    const std::int64_t axis = attr_int("axis", 0);
    // Constant, non-negative ids into the rows of a 2-D float table: an embedding.
    if (const TensorData *ids = constant(node_->input(1)); ids && (axis == 0 || axis == -2) &&
                                                            data.shape.rank() == 2 && dtype_is_float(data.dtype)) {
        bool in_range = true;
        for (std::int64_t k : constant_ints(1, "indices")) in_range = in_range && k >= 0 && k < data.shape[0];
        if (in_range) {
            emit("embedding", {}, {{"ids", {operand(node_->input(1))}}, {"table", {data}}}, node_->output(0));
            return;
        }
    }
    const Value indices = operand(node_->input(1));
    if (indices.dtype != DType::i32 && indices.dtype != DType::i64)
        fail(node_label_ + ": indices must be int32 or int64, got " + std::string(dtype_name(indices.dtype)));
    emit("gather", Params{{"axis", axis}}, {{"data", {data}}, {"indices", {indices}}}, node_->output(0));
}

void Importer::map_conv_or_pool(const std::string &type) {
    const bool conv = type == "Conv";
    Value x = operand(node_->input(0));
    require_float(x, "X");
    const int spatial = x.shape.rank() - 2;
    if (spatial != 1 && spatial != 2)
        unsupported(std::to_string(std::max(spatial, 0)) + "-D input " + x.shape.to_string() +
                    " (only 1-D and 2-D convolution and pooling are supported)");
    if (!conv && attr_int("ceil_mode", 0) != 0) unsupported("ceil_mode=1 is not supported");
    if (!conv && has_output(1)) unsupported("the Indices output is not supported");

    Value w;
    std::optional<Value> folded_bias;
    std::string final_out = node_->output(0);
    std::vector<std::int64_t> kernel;
    const auto fold = conv ? conv_bn_at_.find(node_index_) : conv_bn_at_.end();
    if (fold != conv_bn_at_.end()) {
        // Conv + BatchNormalization as one conv2d with folded parameters: new tensors
        // named after the originals and the folded node, the BatchNormalization's
        // output its output.
        const onnx::NodeProto &bn = graph_->node(fold->second.batchnorm);
        const std::string bn_name = bn.name().empty() ? "batchnorm_" + std::to_string(fold->second.batchnorm) : bn.name();
        const auto f = onnx_detail::fold_conv_batchnorm(
            *constant(node_->input(1)), has_input(2) ? constant(node_->input(2)) : nullptr, *constant(bn.input(1)),
            *constant(bn.input(2)), *constant(bn.input(3)), *constant(bn.input(4)), fold->second.epsilon);
        w = add_parameter(node_->input(1) + ".folded_" + bn_name, f.weight);
        folded_bias = add_parameter((has_input(2) ? node_->input(2) : node_base_ + ".bias") + ".folded_" + bn_name, f.bias);
        final_out = bn.output(0);
        node_base_ = node_base_ + "_" + bn_name;
    }
    if (conv) {
        if (!folded_bias) w = operand(node_->input(1));
        if (w.shape.rank() != spatial + 2)
            fail(node_label_ + ": W " + w.shape.to_string() + " does not match the " + std::to_string(spatial) +
                 "-D input");
        for (int d = 0; d < spatial; ++d) kernel.push_back(w.shape[2 + d]);
    } else {
        kernel = attr_ints("kernel_shape").value_or(std::vector<std::int64_t>{});
        if (static_cast<int>(kernel.size()) != spatial)
            fail(node_label_ + ": kernel_shape must have " + std::to_string(spatial) + " entries");
    }
    const std::vector<std::int64_t> strides = per_axis("strides", 1, spatial), dilations = per_axis("dilations", 1, spatial);
    if (!conv)
        for (std::int64_t d : dilations)
            if (d != 1) unsupported("dilations other than 1 are not supported");
    std::vector<std::int64_t> pads = attr_ints("pads").value_or(std::vector<std::int64_t>(2 * spatial, 0));
    if (static_cast<int>(pads.size()) != 2 * spatial)
        fail(node_label_ + ": pads must have " + std::to_string(2 * spatial) + " entries");
    const std::string auto_pad = attr_string("auto_pad", "NOTSET");
    if (auto_pad == "VALID") {
        pads.assign(pads.size(), 0);
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        for (int d = 0; d < spatial; ++d) {
            const std::int64_t in = x.shape[2 + d], s = strides[static_cast<size_t>(d)];
            const std::int64_t out = (in + s - 1) / s;
            const std::int64_t extent = dilations[static_cast<size_t>(d)] * (kernel[static_cast<size_t>(d)] - 1) + 1;
            const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * s + extent - in);
            const std::int64_t small = total / 2, large = total - small;
            pads[static_cast<size_t>(d)] = auto_pad == "SAME_UPPER" ? small : large;
            pads[static_cast<size_t>(d + spatial)] = auto_pad == "SAME_UPPER" ? large : small;
        }
    } else if (auto_pad != "NOTSET") {
        fail(node_label_ + ": auto_pad \"" + auto_pad + "\" is not an ONNX value");
    }

    // 1-D as 2-D with a height of 1.
    std::vector<std::int64_t> stride2 = strides, dilation2 = dilations, kernel2 = kernel;
    std::vector<std::int64_t> padding{pads[0], pads.size() > 2 ? pads[1] : 0, pads.size() > 2 ? pads[2] : 0,
                                      pads.size() > 2 ? pads[3] : 0};
    if (spatial == 1) {
        stride2 = {1, strides[0]};
        dilation2 = {1, dilations[0]};
        kernel2 = {1, kernel[0]};
        padding = {0, pads[0], 0, pads[1]};
        x = reshape(x, ZPoint{x.shape[0], x.shape[1], 1, x.shape[2]}, "", "x2d");
        if (conv) w = reshape(w, ZPoint{w.shape[0], w.shape[1], 1, w.shape[2]}, "", "w2d");
    }
    const std::string onnx_out = final_out;
    if (spatial == 1) final_out = "";
    Value y;
    if (conv) {
        Ports ports{{"x", {x}}, {"w", {w}}};
        if (folded_bias) ports.push_back({"bias", {*folded_bias}});
        else if (has_input(2)) ports.push_back({"bias", {operand(node_->input(2))}});
        y = emit("conv2d",
                 Params{{"stride", stride2}, {"padding", padding}, {"dilation", dilation2}, {"groups", attr_int("group", 1)}},
                 ports, final_out, "conv");
    } else if (type == "MaxPool") {
        y = emit("max_pool2d", Params{{"kernel", kernel2}, {"stride", stride2}, {"padding", padding}}, {{"x", {x}}},
                 final_out, "pool");
    } else {
        y = emit("avg_pool2d",
                 Params{{"kernel", kernel2},
                        {"stride", stride2},
                        {"padding", padding},
                        {"count_include_pad", attr_int("count_include_pad", 0) != 0}},
                 {{"x", {x}}}, final_out, "pool");
    }
    if (spatial == 1) reshape(y, ZPoint{y.shape[0], y.shape[1], y.shape[3]}, onnx_out, "");
}

// LRN (AlexNet, Inception v1): y = x · (bias + α/size · Σ x²)^−β, the sum over the
// channels c − ⌊(size−1)/2⌋ … c + ⌈(size−1)/2⌉ that exist. The window sum as a
// mean: avg_pool2d over the channels of x² seen as [N, 1, C, rest], the padded
// zeros counted, so that α · mean = α/size · Σ.
void Importer::map_lrn() {
    const Value x = operand(node_->input(0));
    require_float(x, "X");
    if (x.shape.rank() < 3) fail(node_label_ + ": X must have rank at least 3 (N, C, spatial…)");
    const std::int64_t size = attr_int("size", 0);
    if (size < 1) fail(node_label_ + ": size must be at least 1 (it is required)");
    const double alpha = attr_float("alpha", 1e-4), beta = attr_float("beta", 0.75), bias = attr_float("bias", 1.0);
    Coord rest = 1;
    for (int d = 2; d < x.shape.rank(); ++d) rest *= x.shape[d];
    const Value squared = emit("mul", {}, {{"a", {x}}, {"b", {x}}}, "", "square");
    const Value by_channel = reshape(squared, ZPoint{x.shape[0], 1, x.shape[1], rest}, "", "channels");
    const Value mean = emit("avg_pool2d",
                            Params{{"kernel", std::vector<std::int64_t>{size, 1}},
                                   {"stride", std::vector<std::int64_t>{1, 1}},
                                   {"padding", std::vector<std::int64_t>{(size - 1) / 2, 0, size / 2, 0}},
                                   {"count_include_pad", true}},
                            {{"x", {by_channel}}}, "", "window");
    const Value back = reshape(mean, x.shape, "", "window_shape");
    const Value scaled = emit("mul", {}, {{"a", {back}}, {"b", {scalar(alpha, x.dtype, "alpha")}}}, "", "scaled");
    const Value base = emit("add", {}, {{"a", {scaled}}, {"b", {scalar(bias, x.dtype, "bias")}}}, "", "base");
    const Value factor = emit("pow", Params{{"exponent", -beta}}, {{"x", {base}}}, "", "factor");
    emit("mul", {}, {{"a", {x}}, {"b", {factor}}}, node_->output(0));
}

// LogSoftmax (opset 13, one axis): y = d − log Σ exp(d) with d = x − max(x), the
// max and the sum kept as 1s along the axis — finite where log(softmax(x)) would
// underflow to −inf.
void Importer::map_log_softmax() {
    const Value x = operand(node_->input(0));
    require_float(x, "input");
    const std::int64_t rank = x.shape.rank();
    std::int64_t axis = attr_int("axis", -1);
    if (axis < -rank || axis >= rank) fail(node_label_ + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    const LogSumExp r = log_sum_exp(x, {axis});
    emit("sub", {}, {{"a", {r.shifted}}, {"b", {r.log_sum}}}, node_->output(0));
}

// Pad (opset 13; modes constant, reflect, edge), axis by axis: a negative pad
// crops (a slice); a positive one concatenates, before and after, a constant block
// (a parameter filled with constant_value), the edge slice repeated, or the
// mirrored slice (a slice with step −1, the edge itself not repeated).
void Importer::map_pad() {
    Value x = operand(node_->input(0));
    const std::string mode = attr_string("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge")
        fail(node_label_ + ": mode \"" + mode + "\" is not an ONNX value (constant, reflect, edge)");
    const int rank = x.shape.rank();
    const std::vector<std::int64_t> pads = constant_ints(1, "pads");
    if (static_cast<int>(pads.size()) != 2 * rank)
        fail(node_label_ + ": pads must have " + std::to_string(2 * rank) + " entries (two per dimension), got " +
             std::to_string(pads.size()));
    const double fill = has_input(2) ? constant_scalar(2, "constant_value") : 0.0;
    int last = -1;  // the last axis that changes: it writes the ONNX output
    for (int d = 0; d < rank; ++d)
        if (pads[static_cast<size_t>(d)] != 0 || pads[static_cast<size_t>(d + rank)] != 0) last = d;
    if (last < 0) {
        alias(node_->output(0), x);
        return;
    }
    for (int d = 0; d <= last; ++d) {
        std::int64_t before = pads[static_cast<size_t>(d)], after = pads[static_cast<size_t>(d + rank)];
        if (before == 0 && after == 0) continue;
        const std::string axis = std::to_string(d);
        const std::string out = d == last ? node_->output(0) : std::string();
        // Crops first.
        const std::int64_t n0 = x.shape[d];
        if (before < -n0 || after < -n0 || before + after < -n0)
            fail(node_label_ + ": pads crop more than dimension " + axis + "'s " + std::to_string(n0));
        if (before < 0 || after < 0) {
            x = slice_along(x, d, before < 0 ? -before : 0, n0 + std::min<std::int64_t>(after, 0), "", "crop" + axis);
            before = std::max<std::int64_t>(before, 0);
            after = std::max<std::int64_t>(after, 0);
            if (before == 0 && after == 0) {
                if (!out.empty()) alias(out, x);
                continue;
            }
        }
        const std::int64_t n = x.shape[d];
        if (mode == "reflect" && (before >= n || after >= n))
            unsupported("reflect pads of " + std::to_string(std::max(before, after)) + " on dimension " + axis +
                        " of " + std::to_string(n) + " (a reflection pads at most the dimension less one)");
        if (mode == "edge" && n == 0) fail(node_label_ + ": edge pads of an empty dimension " + axis);
        std::vector<Value> pieces;
        auto block = [&](std::int64_t width, bool first_side) {
            const std::string side = std::string(first_side ? "before" : "after") + axis;
            if (mode == "constant") {
                std::vector<Coord> dims = x.shape.to_vector();
                dims[static_cast<size_t>(d)] = width;
                const ZPoint shape(dims);
                if (shape.product() > options_.max_made_values)
                    unsupported("a pad block of " + std::to_string(shape.product()) + " values (at most " +
                                std::to_string(options_.max_made_values) + ")");
                auto data = std::make_shared<TensorData>(x.dtype, shape);
                for (std::int64_t i = 0; i < data->element_count(); ++i) data->set(i, fill);
                pieces.push_back(add_parameter(node_base_ + "." + side, std::move(data)));
            } else if (mode == "edge") {
                const Value edge = first_side ? slice_along(x, d, 0, 1, "", "edge_" + side)
                                              : slice_along(x, d, n - 1, n, "", "edge_" + side);
                for (std::int64_t k = 0; k < width; ++k) pieces.push_back(edge);
            } else {  // reflect: x[width] … x[1] before, x[n−2] … x[n−1−width] after
                const std::int64_t end = first_side ? 0 : n - 2 - width;
                pieces.push_back(slice_along(x, d, first_side ? width : n - 2, end >= 0 ? end : -n - 1, "", "mirror_" + side, -1));
            }
        };
        if (before > 0) block(before, true);
        pieces.push_back(x);
        if (after > 0) block(after, false);
        x = emit("concat", Params{{"axis", static_cast<std::int64_t>(d)}}, {{"inputs", pieces}}, out, "pad" + axis);
    }
}

// InstanceNormalization: each (n, c) normalized over its spatial axes — a
// layernorm from axis 2 without its own scale — then scale and B per channel,
// broadcast as [C, 1, …].
void Importer::map_instance_norm() {
    const Value x = operand(node_->input(0));
    require_float(x, "input");
    const int rank = x.shape.rank();
    if (rank < 3) fail(node_label_ + ": input must have rank at least 3 (N, C, spatial…)");
    const Value scale = operand(node_->input(1)), bias = operand(node_->input(2));
    const Coord c = x.shape[1];
    if (scale.shape != ZPoint{c} || bias.shape != ZPoint{c})
        fail(node_label_ + ": scale and B must be [" + std::to_string(c) + "] (one per channel), got " +
             scale.shape.to_string() + " and " + bias.shape.to_string());
    std::vector<Coord> per_channel(static_cast<size_t>(rank - 1), 1);
    per_channel[0] = c;
    const Value n = emit("layernorm", Params{{"axis", std::int64_t{2}}, {"epsilon", attr_float("epsilon", 1e-5)}},
                         {{"x", {x}}}, "", "normalized");
    const Value scaled = emit("mul", {}, {{"a", {n}}, {"b", {reshape(scale, ZPoint(per_channel), "", "scale_c")}}}, "", "scaled");
    emit("add", {}, {{"a", {scaled}}, {"b", {reshape(bias, ZPoint(per_channel), "", "bias_c")}}}, node_->output(0));
}

// Tile: along each axis repeated r times, a concat of r copies.
void Importer::map_tile() {
    Value x = operand(node_->input(0));
    const std::vector<std::int64_t> repeats = constant_ints(1, "repeats");
    const int rank = x.shape.rank();
    if (static_cast<int>(repeats.size()) != rank)
        fail(node_label_ + ": repeats must have " + std::to_string(rank) + " entries (one per dimension), got " +
             std::to_string(repeats.size()));
    int last = -1;
    for (int d = 0; d < rank; ++d) {
        if (repeats[static_cast<size_t>(d)] < 0) fail(node_label_ + ": repeats must not be negative");
        if (repeats[static_cast<size_t>(d)] != 1) last = d;
    }
    for (int d = 0; d <= last; ++d) {
        const std::int64_t r = repeats[static_cast<size_t>(d)];
        if (r == 1) continue;
        if (r == 0 || r > 4096)
            unsupported("a repeat count of " + std::to_string(r) + " on dimension " + std::to_string(d) +
                        " (1 to 4096 are supported)");
        x = emit("concat", Params{{"axis", static_cast<std::int64_t>(d)}},
                 {{"inputs", std::vector<Value>(static_cast<size_t>(r), x)}}, d == last ? node_->output(0) : "",
                 "tile" + std::to_string(d));
    }
    if (last < 0) alias(node_->output(0), x);
}

// ConvTranspose (1-D and 2-D, a constant W) as the convolution it is the transpose
// of: the input with s − 1 zeros between neighbours along each strided axis
// (reshape, concat with a zero block, reshape, slice), padded by (k − 1)·d − pad
// at each end (+ output_padding at the end; a negative amount crops), then a
// conv2d of stride 1 and dilation d with W flipped in space and its channel axes
// swapped per group — W′[g·Co + o, i] = W[g·Ci + i, o] reversed. Exact up to
// rounding; the convolution runs s² times the FLOPs of a native transposed one
// (the zeros are multiplied), which the cost model counts.
void Importer::map_conv_transpose() {
    Value x = operand(node_->input(0));
    require_float(x, "X");
    const int spatial = x.shape.rank() - 2;
    if (spatial != 1 && spatial != 2)
        unsupported(std::to_string(std::max(spatial, 0)) + "-D input " + x.shape.to_string() +
                    " (only 1-D and 2-D transposed convolution is supported)");
    const TensorData *wc = constant(node_->input(1));
    if (!wc) unsupported("W must be a constant (an initializer or a Constant node)");
    const Value w = operand(node_->input(1));
    require_float(w, "W");
    const std::int64_t groups = attr_int("group", 1);
    const Coord cin = x.shape[1];
    if (w.shape.rank() != spatial + 2 || groups < 1 || w.shape[0] != cin || cin % groups != 0)
        fail(node_label_ + ": W " + w.shape.to_string() + " does not match X " + x.shape.to_string() + " in " +
             std::to_string(groups) + " group(s) (W is [C_in, C_out/group, k…])");
    const Coord cout_g = w.shape[1], cin_g = cin / groups, cout = cout_g * groups;
    std::vector<std::int64_t> kernel;
    for (int d = 0; d < spatial; ++d) kernel.push_back(w.shape[2 + d]);
    const std::vector<std::int64_t> strides = per_axis("strides", 1, spatial), dilations = per_axis("dilations", 1, spatial),
                                    extra = per_axis("output_padding", 0, spatial);
    std::vector<std::int64_t> pads = per_axis("pads", 0, 2 * spatial);
    for (int d = 0; d < spatial; ++d)
        if (strides[d] < 1 || dilations[d] < 1 || extra[d] < 0 || extra[d] >= std::max(strides[d], dilations[d]))
            fail(node_label_ + ": strides and dilations must be at least 1, and output_padding below the stride or the dilation");
    const std::string auto_pad = attr_string("auto_pad", "NOTSET");
    const auto output_shape = attr_ints("output_shape");
    if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        // The total padding from the output size asked for (ONNX's formula).
        for (int d = 0; d < spatial; ++d) {
            const std::int64_t in = x.shape[2 + d], extent = (kernel[d] - 1) * dilations[d] + 1;
            std::int64_t want = in * strides[d];
            if (output_shape) {
                if (static_cast<int>(output_shape->size()) != spatial)
                    fail(node_label_ + ": output_shape must have " + std::to_string(spatial) + " entries");
                want = (*output_shape)[d];
            }
            // Negative: the output longer than the transposed convolution's reach, zeros at the end.
            const std::int64_t total = strides[d] * (in - 1) + extra[d] + extent - want;
            const std::int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // ⌊total / 2⌋
            if (auto_pad == "SAME_UPPER") pads[d] = half;
            else if (auto_pad == "SAME_LOWER") pads[d] = total - half;
            else pads[d] = 0;  // output_shape alone: the result from the origin, cut or extended at the end
            pads[d + spatial] = total - pads[d];
        }
    } else if (auto_pad == "VALID") {
        pads.assign(pads.size(), 0);
    } else if (auto_pad != "NOTSET") {
        fail(node_label_ + ": auto_pad \"" + auto_pad + "\" is not an ONNX value");
    }
    // 1-D as 2-D with a height of 1.
    if (spatial == 1) x = reshape(x, ZPoint{x.shape[0], x.shape[1], 1, x.shape[2]}, "", "x2d");
    const auto at2 = [&](const std::vector<std::int64_t> &v, std::int64_t pad1) {
        return spatial == 1 ? std::vector<std::int64_t>{pad1, v[0]} : v;
    };
    const std::vector<std::int64_t> s2 = at2(strides, 1), d2 = at2(dilations, 1), k2 = at2(kernel, 1), e2 = at2(extra, 0);
    const std::vector<std::int64_t> begin = spatial == 1 ? std::vector<std::int64_t>{0, pads[0]} : std::vector<std::int64_t>{pads[0], pads[1]};
    const std::vector<std::int64_t> end = spatial == 1 ? std::vector<std::int64_t>{0, pads[1]} : std::vector<std::int64_t>{pads[2], pads[3]};

    // Zeros between neighbours along each strided axis.
    for (int a = 0; a < 2; ++a) {
        const std::int64_t st = s2[static_cast<size_t>(a)];
        if (st == 1) continue;
        const int axis = 2 + a;
        std::vector<Coord> unit = x.shape.to_vector();
        unit.insert(unit.begin() + axis + 1, 1);
        const Value column = reshape(x, ZPoint(unit), "", "spread" + std::to_string(a));
        std::vector<Coord> gap = unit;
        gap[static_cast<size_t>(axis + 1)] = st - 1;
        if (ZPoint(gap).product() > options_.max_made_values)
            unsupported("a zero block of " + std::to_string(ZPoint(gap).product()) + " values to spread the input (at most " +
                        std::to_string(options_.max_made_values) + ")");
        auto zeros = std::make_shared<TensorData>(x.dtype, ZPoint(gap));  // zero-filled
        const Value z = add_parameter(node_base_ + ".zeros" + std::to_string(a), std::move(zeros));
        const Value both = emit("concat", Params{{"axis", static_cast<std::int64_t>(axis + 1)}}, {{"inputs", {column, z}}}, "",
                                "interleave" + std::to_string(a));
        std::vector<Coord> merged = x.shape.to_vector();
        merged[static_cast<size_t>(axis)] *= st;
        const Value flat = reshape(both, ZPoint(merged), "", "interleaved" + std::to_string(a));
        const std::int64_t len = (x.shape[axis] - 1) * st + 1;
        x = slice_along(flat, axis, 0, len, "", "spread_end" + std::to_string(a));
    }
    // The convolution's padding: (k − 1)·d − pad at each end; a negative one crops.
    std::vector<std::int64_t> padding(4, 0);  // top, left, bottom, right
    for (int a = 0; a < 2; ++a) {
        const std::int64_t reach = (k2[static_cast<size_t>(a)] - 1) * d2[static_cast<size_t>(a)];
        std::int64_t lo = reach - begin[static_cast<size_t>(a)], hi = reach - end[static_cast<size_t>(a)] + e2[static_cast<size_t>(a)];
        const int axis = 2 + a;
        if (lo < 0 || hi < 0) {
            const std::int64_t n = x.shape[axis];
            const std::int64_t from = std::max<std::int64_t>(-lo, 0), to = n - std::max<std::int64_t>(-hi, 0);
            if (to <= from) fail(node_label_ + ": its pads leave no output along axis " + std::to_string(axis));
            x = slice_along(x, axis, from, to, "", "crop" + std::to_string(a));
            lo = std::max<std::int64_t>(lo, 0);
            hi = std::max<std::int64_t>(hi, 0);
        }
        padding[static_cast<size_t>(a)] = lo;
        padding[static_cast<size_t>(a + 2)] = hi;
    }
    // W′: [C_out, C_in/group, k…], flipped in space.
    const Coord kh = k2[0], kw = k2[1];
    auto flipped = std::make_shared<TensorData>(wc->dtype, ZPoint{cout, cin_g, kh, kw});
    for (Coord g = 0; g < groups; ++g)
        for (Coord o = 0; o < cout_g; ++o)
            for (Coord i = 0; i < cin_g; ++i)
                for (Coord a = 0; a < kh; ++a)
                    for (Coord b = 0; b < kw; ++b) {
                        const Coord from = (((g * cin_g + i) * cout_g + o) * kh + (kh - 1 - a)) * kw + (kw - 1 - b);
                        const Coord to = (((g * cout_g + o) * cin_g + i) * kh + a) * kw + b;
                        flipped->set(to, wc->get(from));
                    }
    const Value wt = add_parameter(node_->input(1) + ".transposed", std::move(flipped));
    Ports ports{{"x", {x}}, {"w", {wt}}};
    if (has_input(2)) ports.push_back({"bias", {operand(node_->input(2))}});
    const std::string out = node_->output(0);
    const Value y = emit("conv2d",
                         Params{{"stride", std::vector<std::int64_t>{1, 1}}, {"padding", padding}, {"dilation", d2}, {"groups", groups}},
                         ports, spatial == 1 ? "" : out, "conv");
    if (spatial == 1) reshape(y, ZPoint{y.shape[0], y.shape[1], y.shape[3]}, out, "");
}

std::shared_ptr<TensorData> Importer::broadcast_constant(DType dtype, const ZPoint &a, const ZPoint &b,
                                                         const std::function<double(std::int64_t, std::int64_t)> &f) const {
    const int rank = std::max(a.rank(), b.rank());
    std::vector<Coord> dims(static_cast<size_t>(rank), 1);
    for (int k = 0; k < rank; ++k) {
        const Coord da = k - (rank - a.rank()) >= 0 ? a[k - (rank - a.rank())] : 1;
        const Coord db = k - (rank - b.rank()) >= 0 ? b[k - (rank - b.rank())] : 1;
        if (da != db && da != 1 && db != 1)
            fail(node_label_ + ": shapes " + a.to_string() + " and " + b.to_string() + " do not broadcast");
        dims[static_cast<size_t>(k)] = da == 1 ? db : da;
    }
    const ZPoint shape(dims);
    if (shape.product() > options_.max_made_values)
        unsupported("a mask of " + std::to_string(shape.product()) + " values (at most " + std::to_string(options_.max_made_values) + ")");
    auto out = std::make_shared<TensorData>(dtype, shape);
    std::vector<Coord> at(static_cast<size_t>(rank), 0);
    for (std::int64_t i = 0; i < shape.product(); ++i) {
        std::int64_t ia = 0, ib = 0;
        for (int k = 0; k < rank; ++k) {
            const int ka = k - (rank - a.rank()), kb = k - (rank - b.rank());
            if (ka >= 0) ia = ia * a[ka] + (a[ka] == 1 ? 0 : at[static_cast<size_t>(k)]);
            if (kb >= 0) ib = ib * b[kb] + (b[kb] == 1 ? 0 : at[static_cast<size_t>(k)]);
        }
        out->set(i, f(ia, ib));
        for (int k = rank - 1; k >= 0; --k) {
            if (++at[static_cast<size_t>(k)] < dims[static_cast<size_t>(k)]) break;
            at[static_cast<size_t>(k)] = 0;
        }
    }
    return out;
}

// Where with a constant condition (a mask the exporter built, folded above):
// x·m + y·(1 − m) with m the condition as 0 and 1; a constant branch joins the
// additive constant instead (x·m + (c ? 0 : y)), so a −inf fill stays −inf. Exact
// where the computed branches are finite (0 · inf is NaN). A condition the graph
// computes is refused.
void Importer::map_where() {
    const TensorData *c = constant(node_->input(0));
    if (!c) unsupported("a condition that is not a constant (the importer takes Where with a constant mask only)");
    const TensorData *xc = constant(node_->input(1)), *yc = constant(node_->input(2));
    // Only the branches the graph computes become operands (a constant one joins the fill).
    const std::optional<Value> x = xc ? std::nullopt : std::optional<Value>(operand(node_->input(1)));
    const std::optional<Value> y = yc ? std::nullopt : std::optional<Value>(operand(node_->input(2)));
    if (x) require_float(*x, "X");
    if (y) require_float(*y, "Y");
    const DType t = x ? x->dtype : y->dtype;
    if ((x ? x->dtype : xc->dtype) != (y ? y->dtype : yc->dtype)) fail(node_label_ + ": X and Y differ in element type");
    auto mask = [&](bool keep_true, const std::string &suffix) {
        return add_parameter(node_base_ + "." + suffix,
                             broadcast_constant(t, c->shape, ZPoint{}, [&](std::int64_t i, std::int64_t) {
                                 return (c->get(i) != 0) == keep_true ? 1.0 : 0.0;
                             }));
    };
    auto fill = [&](const TensorData &v, bool where_true, const std::string &suffix) {
        return add_parameter(node_base_ + "." + suffix, broadcast_constant(t, c->shape, v.shape, [&](std::int64_t i, std::int64_t j) {
                                 return (c->get(i) != 0) == where_true ? v.get(j) : 0.0;
                             }));
    };
    const std::string out = node_->output(0);
    if (!xc && yc) {
        const Value kept = emit("mul", {}, {{"a", {*x}}, {"b", {mask(true, "mask")}}}, "", "kept");
        emit("add", {}, {{"a", {kept}}, {"b", {fill(*yc, false, "fill")}}}, out);
    } else if (xc && !yc) {
        const Value kept = emit("mul", {}, {{"a", {*y}}, {"b", {mask(false, "mask")}}}, "", "kept");
        emit("add", {}, {{"a", {kept}}, {"b", {fill(*xc, true, "fill")}}}, out);
    } else {
        const Value a = emit("mul", {}, {{"a", {*x}}, {"b", {mask(true, "mask_x")}}}, "", "from_x");
        const Value b = emit("mul", {}, {{"a", {*y}}, {"b", {mask(false, "mask_y")}}}, "", "from_y");
        emit("add", {}, {{"a", {a}}, {"b", {b}}}, out);
    }
}

// Trilu on a tensor the graph computes: x times the constant 0/1 triangle of its
// last two dims (kept where column − row ≥ k for upper, ≤ k for lower). Exact
// where x is finite.
void Importer::map_trilu() {
    const Value x = operand(node_->input(0));
    require_float(x, "input");
    if (x.shape.rank() < 2) fail(node_label_ + ": input must have rank at least 2");
    const std::int64_t k = has_input(1) ? static_cast<std::int64_t>(constant_scalar(1, "k")) : 0;
    const bool upper = attr_int("upper", 1) != 0;
    const Coord rows = x.shape[x.shape.rank() - 2], cols = x.shape[x.shape.rank() - 1];
    auto tri = broadcast_constant(x.dtype, ZPoint{rows, cols}, ZPoint{}, [&](std::int64_t i, std::int64_t) {
        const std::int64_t r = i / cols, c = i % cols;
        return (upper ? c - r >= k : c - r <= k) ? 1.0 : 0.0;
    });
    emit("mul", {}, {{"a", {x}}, {"b", {add_parameter(node_base_ + ".triangle", std::move(tri))}}}, node_->output(0));
}

// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp and ReduceMin (opset ≤ 17: axes an
// attribute, all axes when absent) from the reductions there are: Σ x², log Σ x,
// max + log Σ exp(x − max) (the max kept as 1s, then dropped when keepdims = 0),
// −max(−x).
void Importer::map_reduce_derived(const std::string &type) {
    const Value x = operand(node_->input(0));
    require_float(x, "data");
    const bool keepdims = attr_int("keepdims", 1) != 0;
    std::vector<std::int64_t> axes = attr_ints("axes").value_or(std::vector<std::int64_t>{});
    if (axes.empty())
        for (int d = 0; d < x.shape.rank(); ++d) axes.push_back(d);
    const std::string out = node_->output(0);
    auto reduce = [&](const std::string &kind, const Value &v, bool keep, const std::string &onnx_out, const std::string &suffix) {
        if (axes.empty()) {  // a scalar: nothing to reduce
            if (!onnx_out.empty()) alias(onnx_out, v);
            return v;
        }
        return emit(kind, Params{{"axes", axes}, {"keepdims", keep}}, {{"x", {v}}}, onnx_out, suffix);
    };
    if (type == "ReduceSumSquare") {
        reduce("reduce_sum", emit("mul", {}, {{"a", {x}}, {"b", {x}}}, "", "square"), keepdims, out, "sum");
    } else if (type == "ReduceLogSum") {
        emit("log", {}, {{"x", {reduce("reduce_sum", x, keepdims, "", "sum")}}}, out);
    } else if (type == "ReduceMin") {
        const Value neg = emit("neg", {}, {{"x", {x}}}, "", "negated");
        emit("neg", {}, {{"x", {reduce("reduce_max", neg, keepdims, "", "max")}}}, out);
    } else {  // ReduceLogSumExp
        if (axes.empty()) {  // a scalar: log exp x
            alias(out, x);
            return;
        }
        const LogSumExp r = log_sum_exp(x, axes);
        const Value &l = r.log_sum, &m = r.max;
        if (keepdims) {
            emit("add", {}, {{"a", {l}}, {"b", {m}}}, out);
        } else {
            const Value kept = emit("add", {}, {{"a", {l}}, {"b", {m}}}, "", "kept");
            std::vector<Coord> dims;
            for (int d = 0; d < x.shape.rank(); ++d) {
                const bool reduced = std::any_of(axes.begin(), axes.end(), [&](std::int64_t a) {
                    return (a < 0 ? a + x.shape.rank() : a) == d;
                });
                if (!reduced) dims.push_back(x.shape[d]);
            }
            reshape(kept, ZPoint(dims), out, "dropped");
        }
    }
}

void Importer::map_constant() {
    auto d = onnx_detail::constant_node_value(*node_);
    if (!d) {
        if (node_->attribute_size() != 1) fail(node_label_ + ": " + d.error());
        unsupported(d.error());
    }
    constants_[node_->output(0)] = std::make_shared<const TensorData>(std::move(d).value());
}

void Importer::map_cast(std::optional<DType> like) {
    const int to = static_cast<int>(attr_int("to", 0));
    const std::optional<DType> target = like ? like : dtype_of(to);
    if (!target) unsupported("a cast to " + elem_type_name(to));
    if (const TensorData *c = constant(node_->input(0)); c && c->dtype == *target) {
        constants_[node_->output(0)] = constants_.at(node_->input(0));
        return;
    }
    const Value x = operand(node_->input(0));
    if (x.dtype == *target) {
        alias(node_->output(0), x);
        return;
    }
    emit("cast", Params{{"to", std::string(dtype_name(*target))}}, {{"x", {x}}}, node_->output(0));
}

// The sizes of a graph input, each dynamic dimension given its value from
// OnnxImportOptions::dim_values (written into the proto, so that shape inference and
// the version converter see it); refused when one has none.
std::vector<Coord> Importer::static_dims(onnx::ValueInfoProto &vi, const std::string &who) const {
    onnx::TypeProto_Tensor &tt = *vi.mutable_type()->mutable_tensor_type();
    std::vector<Coord> dims;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
        onnx::TensorShapeProto_Dimension &dim = *tt.mutable_shape()->mutable_dim(d);
        if (dim.has_dim_value()) {
            if (dim.dim_value() < 0) throw ImportFailure{who + " has a negative dimension " + std::to_string(d), {}};
            dims.push_back(dim.dim_value());
            continue;
        }
        if (!dim.has_dim_param() || dim.dim_param().empty())
            throw ImportFailure{who + " has an unnamed dynamic dimension (dimension " + std::to_string(d) +
                                    "); the importer needs a static size for it",
                                {}};
        const std::string param = dim.dim_param();
        auto it = std::find_if(options_.dim_values.begin(), options_.dim_values.end(),
                               [&](const auto &p) { return p.first == param; });
        if (it == options_.dim_values.end())
            throw ImportFailure{who + " has a dynamic dimension " + quoted(param) + " (dimension " +
                                    std::to_string(d) + ") without a value; give one with --dim " + param + "=N",
                                {}};
        if (it->second < 1)
            throw ImportFailure{"the value " + std::to_string(it->second) + " given for dimension " + quoted(param) +
                                    " must be at least 1",
                                {}};
        dim.set_dim_value(it->second);  // so that shape inference sees it
        dims.push_back(it->second);
    }
    return dims;
}

// ---- the whole model ----------------------------------------------------------------------

// The model's opset of the default domain, refused outside 1..kMaxOpset.
int default_opset(const onnx::ModelProto &model) {
    int opset = -1;
    for (const auto &o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
    if (opset < 0) throw ImportFailure{"not an ONNX model: it imports no opset of the default domain", {}};
    if (opset > kMaxOpset || opset < 1)
        throw ImportFailure{"opset " + std::to_string(opset) +
                                " of the default ONNX domain is not supported (supported: opsets 13 to 17)" +
                                kConvertHint,
                            {"opset " + std::to_string(opset)}};
    return opset;
}

// The nodes of an older model whose operator changed between `opset` and 13.
std::vector<std::string> changed_since(const onnx::GraphProto &graph, int opset) {
    std::vector<std::string> changed;
    if (opset >= kMinOpset) return changed;
    const auto *registry = onnx::OpSchemaRegistry::Instance();
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto &n = graph.node(i);
        if (!(n.domain().empty() || n.domain() == "ai.onnx")) continue;
        const onnx::OpSchema *old_schema = registry->GetSchema(n.op_type(), opset, "");
        const onnx::OpSchema *new_schema = registry->GetSchema(n.op_type(), kMinOpset, "");
        if (!old_schema || !new_schema || old_schema->SinceVersion() != new_schema->SinceVersion())
            changed.push_back(node_label(n, i));
    }
    return changed;
}

// Refuses a model with any unsupported operator, naming every one.
void refuse_unsupported(const onnx::GraphProto &graph) {
    std::vector<std::string> missing;
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto &n = graph.node(i);
        const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
        if (!default_domain || !onnx_operator_supported(n.op_type()))
            missing.push_back((default_domain ? n.op_type() : n.domain() + "." + n.op_type()) + " (" +
                              (n.name().empty() ? "node #" + std::to_string(i) : n.name()) + ")");
    }
    if (missing.empty()) return;
    std::string list;
    for (const std::string &m : missing) list += (list.empty() ? "" : ", ") + m;
    throw ImportFailure{std::to_string(missing.size()) +
                            (missing.size() == 1 ? " operator is not supported: " : " operators are not supported: ") +
                            list,
                        missing};
}

// Every value a node reads and every graph output is defined before its use: by
// a graph input, an initializer or an earlier node. ONNX's checker leaves this to
// the version converter, which dereferences a null node on an undefined value
// (a crash the ONNX import fuzzer found in libonnx 1.12's graphProtoToGraph).
void check_references(const onnx::GraphProto &graph) {
    std::set<std::string> defined;
    for (const onnx::ValueInfoProto &vi : graph.input()) defined.insert(vi.name());
    for (const onnx::TensorProto &t : graph.initializer()) defined.insert(t.name());
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto &n = graph.node(i);
        const std::string node = n.name().empty() ? "node #" + std::to_string(i + 1) : quoted(n.name());
        for (const std::string &in : n.input())
            if (!in.empty() && !defined.count(in))
                throw ImportFailure{"the model is not valid ONNX: " + node + " (" + n.op_type() + ") reads " + quoted(in) +
                                        ", which no input, initializer or earlier node defines",
                                    {}};
        for (const std::string &out : n.output())
            if (!out.empty()) defined.insert(out);
    }
    for (const onnx::ValueInfoProto &vi : graph.output())
        if (!defined.count(vi.name()))
            throw ImportFailure{"the model is not valid ONNX: graph output " + quoted(vi.name()) +
                                    " is not defined by any input, initializer or node",
                                {}};
}

void check_model(const onnx::ModelProto &model) {
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception &e) {
        throw ImportFailure{std::string("the model is not valid ONNX: ") + e.what(), {}};
    }
    check_references(model.graph());
}

// ONNX's shape inference then its version converter on `prepared`, in a child
// process (fork; the child only runs libonnx and protobuf, writes the converted
// model or the converter's message to a pipe and leaves with _exit). The parent
// reads it within kConversionSeconds; a child that crashes, is killed or runs out
// of time is an error naming what happened.
constexpr int kConversionSeconds = 60;

Expected<onnx::ModelProto, std::string> isolated_conversion(onnx::ModelProto &prepared) {
    (void)onnx::OpSchemaRegistry::Instance();  // the schemas built once, in the parent
    int fds[2];
    if (::pipe(fds) != 0) return unexpected(std::string("cannot make a pipe: ") + std::strerror(errno));
    const pid_t child = ::fork();
    if (child < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return unexpected(std::string("cannot start the conversion process: ") + std::strerror(errno));
    }
    if (child == 0) {
        ::close(fds[0]);
        // A fault ends the child by its signal, whatever handlers the host process
        // set (a test framework's, a sanitizer's): the parent names the signal.
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
        std::string out;
        try {
            try {
                onnx::shape_inference::InferShapes(prepared);
            } catch (const std::exception &) {
                // The converter then says which shape it lacks.
            }
            out = "+" + onnx::version_conversion::ConvertVersion(prepared, kMinOpset).SerializeAsString();
        } catch (const std::exception &e) {
            out = std::string("-") + e.what();
        } catch (...) {
            out = "-an unknown exception";
        }
        size_t at = 0;
        while (at < out.size()) {
            const ssize_t n = ::write(fds[1], out.data() + at, out.size() - at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) ::_exit(3);
            at += static_cast<size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string in;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kConversionSeconds);
    bool timed_out = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            timed_out = ready == 0;
            break;
        }
        char buf[65536];
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
    }
    ::close(fds[0]);
    if (timed_out) ::kill(child, SIGKILL);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) return unexpected("it did not finish within " + std::to_string(kConversionSeconds) + " s");
    if (WIFSIGNALED(status))
        return unexpected("libonnx crashed on this model (signal " + std::to_string(WTERMSIG(status)) + ", " +
                          strsignal(WTERMSIG(status)) + "); the model is malformed for its opset");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || in.empty())
        return unexpected("the conversion process ended without an answer (exit code " +
                          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    if (in[0] == '-') return unexpected(in.substr(1));
    onnx::ModelProto converted;
    if (!converted.ParseFromArray(in.data() + 1, static_cast<int>(in.size() - 1)))
        return unexpected(std::string("the converted model cannot be read back"));
    return converted;
}

// An older model whose operators changed is taken to opset 13 by ONNX's version
// converter, as a user would do by hand, with a clear error when it cannot be.
void Importer::convert_to_opset_13(onnx::ModelProto &model, int opset, const std::vector<std::string> &changed) {
    std::string list;
    for (const std::string &c : changed) list += (list.empty() ? "" : ", ") + c;
    const std::string why = "opset " + std::to_string(opset) + " of the default ONNX domain, in which " + list +
                            (changed.size() == 1 ? " differs" : " differ") + " from opset 13";
    // The converter's adapters need the shapes of the values they touch: give it
    // the user's dimension values and ONNX's shape inference first.
    onnx::ModelProto prepared = model;
    std::set<std::string> initialized;
    for (const onnx::TensorProto &t : prepared.graph().initializer()) initialized.insert(t.name());
    for (onnx::ValueInfoProto &vi : *prepared.mutable_graph()->mutable_input())
        if (!initialized.count(vi.name()) && vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
            static_dims(vi, "input " + quoted(vi.name()));
    // libonnx 1.12's shape inference of old operator versions and its conversion
    // adapters index shapes without checking their rank (an opset-6 Gemm whose
    // inputs declare malformed shapes crashes both; the ONNX import fuzzer found
    // them, tests/data/onnx/gemm6_crashes_*.onnx): they run in a child process,
    // so a crash there is an error about this model, not the end of the studio.
    auto converted = isolated_conversion(prepared);
    if (!converted)
        throw ImportFailure{why + ": ONNX's version converter cannot take it to opset 13 (" + converted.error() + ")" +
                                kConvertHint,
                            {"opset " + std::to_string(opset)}};
    model.Swap(&*converted);
    converted_from_ = opset;
    // The converter keeps the model's IR version; below 4 every initializer must
    // also be a graph input, which the initializers its adapters add (Pad's pads)
    // are not. Opset 13 is IR version 7.
    if (model.ir_version() < 7) model.set_ir_version(7);
    // Operators the conversion brought in must be supported too.
    for (int i = 0; i < model.graph().node_size(); ++i) {
        const onnx::NodeProto &n = model.graph().node(i);
        if (!onnx_operator_supported(n.op_type()))
            throw ImportFailure{why + ": " + node_label(n, i) + " is not supported", {node_label(n, i)}};
    }
    check_model(model);
}

// Initializers: constants, made graph parameters when an operation reads them.
std::set<std::string> Importer::read_initializers(const onnx::GraphProto &graph) {
    std::set<std::string> names;
    for (const onnx::TensorProto &t : graph.initializer()) {
        auto d = onnx_detail::tensor_from_proto(t);
        if (!d) throw ImportFailure{"initializer " + quoted(t.name()) + ": " + d.error(), {"initializer " + quoted(t.name())}};
        constants_[t.name()] = std::make_shared<const TensorData>(std::move(d).value());
        names.insert(t.name());
    }
    return names;
}

// Inputs: static shapes, with --dim values for symbolic dimensions.
void Importer::read_inputs(onnx::GraphProto &graph, const std::set<std::string> &initializers) {
    for (onnx::ValueInfoProto &vi : *graph.mutable_input()) {
        if (initializers.count(vi.name())) continue;
        const std::string who = "input " + quoted(vi.name());
        if (!vi.type().has_tensor_type()) throw ImportFailure{who + " is not a tensor", {who}};
        onnx::TypeProto_Tensor &tt = *vi.mutable_type()->mutable_tensor_type();
        const std::optional<DType> dtype = dtype_of(tt.elem_type());
        if (!dtype)
            throw ImportFailure{who + " has element type " + elem_type_name(tt.elem_type()) + ", which is not supported",
                                {elem_type_name(tt.elem_type()) + " tensor (" + who + ")"}};
        if (!tt.has_shape()) throw ImportFailure{who + " has no shape; the importer needs its rank and sizes", {}};
        const std::vector<Coord> dims = static_dims(vi, who);
        Tensor t;
        t.id = TensorId(unique_id(vi.name()));
        t.name = vi.name();
        t.dtype = *dtype;
        t.range = ZRange::of_shape(ZPoint(dims));
        t.role = TensorRole::input;
        values_[vi.name()] = Value{t.id, t.dtype, ZPoint(dims)};
        g_.put_tensor(std::move(t));
    }
}

// Match, then rewrite: GELU subgraphs, conv+batchnorm pairs and attention
// subgraphs become one operation each at their final node (their other nodes are
// skipped); every other node maps on its own.
void Importer::map_nodes(onnx::GraphProto &graph, const std::set<std::string> &initializers) {
    const auto initializer = [&](const std::string &name) -> const TensorData * {
        return initializers.count(name) ? constant(name) : nullptr;
    };
    const auto gelus = onnx_detail::find_gelu_patterns(graph, initializer);
    std::map<int, const onnx_detail::GeluMatch *> gelu_at;
    std::set<int> inside_gelu;
    for (const auto &m : gelus) {
        gelu_at[m.root] = &m;
        inside_gelu.insert(m.nodes.begin(), m.nodes.end());
    }
    graph_ = &graph;
    if (options_.fold_batchnorm)
        for (const auto &m : onnx_detail::find_conv_batchnorm(graph, initializer)) {
            if (inside_gelu.count(m.conv) || inside_gelu.count(m.batchnorm)) continue;
            conv_bn_at_[m.conv] = m;
            folded_bn_.insert(m.batchnorm);
        }
    std::map<int, onnx_detail::AttentionMatch> attention_at;
    std::set<int> inside_attention;
    if (options_.fuse_attention)
        for (auto &m : onnx_detail::find_attention_patterns(graph)) {
            if (std::any_of(m.nodes.begin(), m.nodes.end(), [&](int k) { return inside_gelu.count(k) > 0; })) continue;
            inside_attention.insert(m.nodes.begin(), m.nodes.end());
            attention_at[m.root] = std::move(m);
        }
    for (int i = 0; i < graph.node_size(); ++i) {
        if (auto it = gelu_at.find(i); it != gelu_at.end()) map_gelu(*it->second, graph);
        else if (auto at = attention_at.find(i); at != attention_at.end()) map_attention(at->second, graph);
        else if (!inside_gelu.count(i) && !folded_bn_.count(i) && !inside_attention.count(i)) map_at(graph, i);
    }
}

// Graph outputs: the tensor that holds each; a copy where it is an input, a
// parameter or already another output.
void Importer::mark_outputs(const onnx::GraphProto &graph) {
    std::set<TensorId> claimed;
    for (int k = 0; k < graph.output_size(); ++k) {
        const std::string &name = graph.output(k).name();
        node_label_ = "output " + quoted(name);
        node_base_ = name;
        Value v = operand(name);
        const Tensor *t = g_.find_tensor(v.id);
        if (t->role == TensorRole::intermediate && !claimed.count(v.id)) {
            Tensor out = *t;
            out.role = TensorRole::output;
            out.name = name;
            g_.put_tensor(std::move(out));
            claimed.insert(v.id);
            continue;
        }
        Value copy = emit("reshape", Params{{"shape", v.shape.to_vector()}}, {{"x", {v}}}, name, "copy");
        Tensor out = *g_.find_tensor(copy.id);
        out.role = TensorRole::output;
        out.name = name;
        g_.put_tensor(std::move(out));
        claimed.insert(copy.id);
        values_[name] = copy;
    }
}

// Our shapes must agree with ONNX's where it inferred static ones.
void Importer::check_shapes(const onnx::GraphProto &graph) const {
    auto check_shape = [&](const onnx::ValueInfoProto &vi) {
        auto it = values_.find(vi.name());
        if (it == values_.end() || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
        const auto &shape = vi.type().tensor_type().shape();
        if (shape.dim_size() != it->second.shape.rank()) {
            fail("the importer computed shape " + it->second.shape.to_string() + " for " + quoted(vi.name()) +
                 " but ONNX shape inference gives rank " + std::to_string(shape.dim_size()));
        }
        for (int d = 0; d < shape.dim_size(); ++d)
            if (shape.dim(d).has_dim_value() && shape.dim(d).dim_value() != it->second.shape[d])
                fail("the importer computed shape " + it->second.shape.to_string() + " for " + quoted(vi.name()) +
                     " but ONNX shape inference gives " + std::to_string(shape.dim(d).dim_value()) + " for dimension " +
                     std::to_string(d));
    };
    for (const auto &vi : graph.value_info()) check_shape(vi);
    for (const auto &vi : graph.output()) check_shape(vi);
}

Graph Importer::run(onnx::ModelProto &model) {
    if (!model.has_graph()) throw ImportFailure{"not an ONNX model: it has no graph", {}};
    const int opset = default_opset(model);
    const std::vector<std::string> changed = changed_since(model.graph(), opset);
    refuse_unsupported(model.graph());  // every unsupported operator, before anything else
    check_model(model);
    if (!changed.empty()) convert_to_opset_13(model, opset, changed);
    onnx::GraphProto &graph = *model.mutable_graph();
    std::set<std::string> given;
    for (const onnx::TensorProto &t : graph.initializer()) given.insert(t.name());
    read_inputs(graph, given);  // the inputs' dimension values first: Shape folds them
    if (auto folded = onnx_detail::fold_shape_arithmetic(model, options_.max_made_values,
                                                         size_mul(options_.max_made_values, 4));
        !folded)
        throw ImportFailure{folded.error().message, {folded.error().node}};
    const std::set<std::string> initializers = read_initializers(graph);
    try {  // ONNX shape inference: its shapes are compared with ours at the end
        onnx::shape_inference::InferShapes(model);
    } catch (const std::exception &e) {
        throw ImportFailure{std::string("ONNX shape inference failed: ") + e.what(), {}};
    }
    map_nodes(graph, initializers);
    mark_outputs(graph);
    check_shapes(graph);
    for (const Issue &issue : validate(g_, lib_, ValidationOptions{false, false}))
        if (issue.severity == Severity::error)
            fail("the imported graph does not validate (an importer bug): " + issue.message);
    return std::move(g_);
}

}  // namespace

namespace {

std::string conversion_note(int from) {
    return "converted from opset " + std::to_string(from) + " to 13 by ONNX's version converter";
}

}  // namespace

std::string onnx_conversion_note(const Graph &imported) {
    const auto at = imported.description.find("converted from opset ");
    return at == std::string::npos ? std::string() : imported.description.substr(at);
}

Expected<Graph, OnnxImportError> import_onnx(const std::filesystem::path &model_path, const OnnxImportOptions &options) {
    const std::string file = model_path.filename().string();
    auto error = [&](const std::string &message, std::vector<std::string> unsupported = {}) {
        return unexpected(OnnxImportError{file + ": " + message, std::move(unsupported)});
    };
    Importer importer(options);
    // A refusal after a conversion may be about nodes the converter wrote: say so.
    auto context = [&importer](std::string message) {
        if (importer.converted_from() > 0) message += " (in the model as " + conversion_note(importer.converted_from()) + ")";
        return message;
    };
    try {
        auto read = read_regular_file(model_path, kMaxModelBytes, "an ONNX model");
        if (!read) return error(read.error());
        const std::string data = std::move(read).value();
        if (data.empty()) return error("the file is empty; it is not an ONNX model");
        onnx::ModelProto model;
        if (!model.ParseFromString(data))
            return error("not an ONNX model, or a truncated one: its protobuf data cannot be parsed");
        const std::string producer = model.producer_name();
        Graph g = importer.run(model);
        g.name = model_path.stem().string();
        g.description = "imported from " + file + (producer.empty() ? "" : " (" + producer + ")");
        if (importer.converted_from() > 0) g.description += ", " + conversion_note(importer.converted_from());
        return g;
    } catch (const ImportFailure &f) {
        return error(context(f.message), f.unsupported);
    } catch (const std::exception &e) {
        return error(context(std::string("cannot import the model: ") + e.what()));
    }
}

}  // namespace tapestry
