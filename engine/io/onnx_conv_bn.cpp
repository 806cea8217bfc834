// Conv + inference BatchNormalization folding for the ONNX importer
// (io/onnx_conv_bn.h). BatchNormalization of a Conv's output is an affine map per
// output channel, y = (conv(x) − mean)·s + bias with s = scale/√(var+ε), which
// equals a Conv with its filters scaled by s and its bias shifted.
#include "io/onnx_conv_bn.h"

#include <cmath>
#include <map>
#include <set>

namespace tapestry::onnx_detail {

namespace {

bool default_domain(const onnx::NodeProto &n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool per_channel(const TensorData *t, std::int64_t channels) {
    return t && t->dtype == DType::f32 && t->shape.rank() == 1 && t->shape[0] == channels;
}

}  // namespace

std::vector<ConvBnMatch> find_conv_batchnorm(const onnx::GraphProto &graph, const InitializerLookup &initializer) {
    std::map<std::string, int> uses;
    std::map<std::string, int> consumer;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const std::string &in : graph.node(i).input())
            if (!in.empty()) {
                ++uses[in];
                consumer[in] = i;
            }
    std::set<std::string> outputs;
    for (const auto &o : graph.output()) outputs.insert(o.name());

    std::vector<ConvBnMatch> out;
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto &c = graph.node(i);
        if (c.op_type() != "Conv" || !default_domain(c) || c.input_size() < 2 || c.output_size() != 1) continue;
        const std::string &y = c.output(0);
        if (y.empty() || outputs.count(y) || uses[y] != 1) continue;
        const TensorData *w = initializer(c.input(1));
        if (!w || w->dtype != DType::f32 || w->shape.rank() < 3) continue;
        const std::int64_t channels = w->shape[0];
        const bool has_bias = c.input_size() > 2 && !c.input(2).empty();
        if (has_bias && !per_channel(initializer(c.input(2)), channels)) continue;
        const int k = consumer[y];
        const onnx::NodeProto &bn = graph.node(k);
        if (k <= i || bn.op_type() != "BatchNormalization" || !default_domain(bn) || bn.input_size() != 5 ||
            bn.input(0) != y)
            continue;
        if (bn.output_size() < 1 || bn.output(0).empty()) continue;
        bool extra_outputs = false;
        for (int o = 1; o < bn.output_size(); ++o) extra_outputs = extra_outputs || !bn.output(o).empty();
        if (extra_outputs) continue;
        ConvBnMatch m;
        m.conv = i;
        m.batchnorm = k;
        bool training = false;
        for (const auto &a : bn.attribute()) {
            if (a.name() == "epsilon") m.epsilon = static_cast<double>(a.f());
            if (a.name() == "training_mode" && a.i() != 0) training = true;
        }
        if (training) continue;
        bool constants = true;
        for (int p = 1; p < 5; ++p) constants = constants && per_channel(initializer(bn.input(p)), channels);
        if (!constants) continue;
        out.push_back(m);
    }
    return out;
}

FoldedConv fold_conv_batchnorm(const TensorData &w, const TensorData *b, const TensorData &scale,
                               const TensorData &bias, const TensorData &mean, const TensorData &var, double epsilon) {
    const std::int64_t channels = w.shape[0];
    const std::int64_t per = channels > 0 ? w.element_count() / channels : 0;
    auto w2 = std::make_shared<TensorData>(DType::f32, w.shape);
    auto b2 = std::make_shared<TensorData>(DType::f32, ZPoint{channels});
    const auto wi = w.as<float>();
    const auto sc = scale.as<float>(), bi = bias.as<float>(), mu = mean.as<float>(), va = var.as<float>();
    auto wo = w2->as<float>();
    auto bo = b2->as<float>();
    for (std::int64_t o = 0; o < channels; ++o) {
        const auto c = static_cast<size_t>(o);
        const double s = static_cast<double>(sc[c]) / std::sqrt(static_cast<double>(va[c]) + epsilon);
        for (std::int64_t j = 0; j < per; ++j) {
            const auto at = static_cast<size_t>(o * per + j);
            wo[at] = static_cast<float>(static_cast<double>(wi[at]) * s);
        }
        const double b0 = b ? static_cast<double>(b->as<float>()[c]) : 0.0;
        bo[c] = static_cast<float>((b0 - static_cast<double>(mu[c])) * s + static_cast<double>(bi[c]));
    }
    return FoldedConv{std::move(w2), std::move(b2)};
}

}  // namespace tapestry::onnx_detail
