// ONNX import (io/onnx_import.h): small models built here with the ONNX protobuf
// API — an MLP, a conv block, a transformer piece — are imported, validated and
// run through the oracle, and compared with results computed by hand in this file;
// every refusal with the exact message a user sees; and an imported graph survives
// a round trip through the project file with its values embedded or beside it.
#include <QtTest/QtTest>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "graph/validate.h"
#include "io/onnx_import.h"
#include "io/project_file.h"
#include "io/tensor_values.h"
#include "ops/evaluate.h"
#include "runtime/cpu/executor.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

// ---- building models ----------------------------------------------------------------

struct ModelBuilder {
    onnx::ModelProto m;
    explicit ModelBuilder(int opset = 17) {
        m.set_ir_version(8);
        m.set_producer_name("tapestry-tests");
        auto *o = m.add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        m.mutable_graph()->set_name("g");
    }
    static void type(onnx::ValueInfoProto *v, const std::string &name, const std::vector<std::int64_t> &dims,
                     int elem = onnx::TensorProto::FLOAT) {
        v->set_name(name);
        auto *t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(elem);
        for (std::int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    }
    ModelBuilder &input(const std::string &name, const std::vector<std::int64_t> &dims) {
        type(m.mutable_graph()->add_input(), name, dims);
        return *this;
    }
    ModelBuilder &output(const std::string &name, const std::vector<std::int64_t> &dims) {
        type(m.mutable_graph()->add_output(), name, dims);
        return *this;
    }
    ModelBuilder &floats(const std::string &name, const std::vector<std::int64_t> &dims, const std::vector<float> &v) {
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        for (std::int64_t d : dims) t->add_dims(d);
        for (float x : v) t->add_float_data(x);
        return *this;
    }
    ModelBuilder &ints(const std::string &name, const std::vector<std::int64_t> &dims, const std::vector<std::int64_t> &v) {
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        for (std::int64_t d : dims) t->add_dims(d);
        // Stored as raw little-endian bytes, the other TensorProto layout.
        t->set_raw_data(std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(std::int64_t)));
        return *this;
    }
    onnx::NodeProto &node(const std::string &op, const std::vector<std::string> &in, const std::vector<std::string> &out,
                          const std::string &name = "") {
        auto *n = m.mutable_graph()->add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (const auto &s : in) n->add_input(s);
        for (const auto &s : out) n->add_output(s);
        return *n;
    }
    std::string save(const fs::path &dir, const std::string &file) const {
        const fs::path p = dir / file;
        std::ofstream f(p, std::ios::binary);
        m.SerializeToOstream(&f);
        return p.string();
    }
};

void attr(onnx::NodeProto &n, const std::string &name, std::int64_t v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}
void attr(onnx::NodeProto &n, const std::string &name, float v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
}
void attr(onnx::NodeProto &n, const std::string &name, const std::vector<std::int64_t> &v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
}
// A Constant node holding a float scalar.
void constant_scalar(ModelBuilder &b, const std::string &out, float v) {
    auto &n = b.node("Constant", {}, {out});
    auto *a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(v);
}

std::vector<float> values(int n, double phase) {
    std::vector<float> v;
    for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(std::sin(0.7 * i + phase)));
    return v;
}

// ---- running an imported graph ----------------------------------------------------------

const Tensor *named(const Graph &g, const std::string &name) {
    for (const TensorPtr &t : g.tensors())
        if (t->name == name) return t.get();
    return nullptr;
}

// Runs the oracle with the inputs given by name; returns the outputs by name.
std::map<std::string, std::vector<double>> run_oracle(const Graph &g,
                                                      const std::map<std::string, std::vector<float>> &inputs) {
    std::map<TensorId, RefArray> given;
    for (const TensorPtr &t : g.tensors()) {
        RefArray a(t->range);
        if (t->role == TensorRole::input) {
            const std::vector<float> &v = inputs.at(t->name);
            if (v.size() != a.data.size()) qFatal("input %s has the wrong size", t->name.c_str());
            for (size_t i = 0; i < v.size(); ++i) a.data[i] = v[i];
        } else if (t->role == TensorRole::parameter) {
            for (std::int64_t i = 0; i < t->value->element_count(); ++i) a.data[static_cast<size_t>(i)] = t->value->get(i);
        } else {
            continue;
        }
        given[t->id] = std::move(a);
    }
    auto out = evaluate_reference(g, given, OpLibrary::standard());
    if (!out) qFatal("oracle: %s", out.error().c_str());
    std::map<std::string, std::vector<double>> result;
    for (const TensorPtr &t : g.tensors())
        if (t->role == TensorRole::output) result[t->name] = out->at(t->id).data;
    return result;
}

std::vector<std::string> kinds(const Graph &g) {
    std::vector<std::string> k;
    for (const OpPtr &op : g.operations()) k.push_back(op->kind);
    return k;
}

bool contains(const std::vector<std::string> &v, const std::string &s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

bool close(const std::vector<double> &a, const std::vector<double> &b, double tol = 1e-5) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!(std::fabs(a[i] - b[i]) <= tol * (1 + std::fabs(b[i])))) return false;
    return true;
}

std::string data_dir() {
    const char *root = std::getenv("TAPESTRY_SOURCE_DIR");
    return (fs::path(root ? root : ".") / "tests" / "data" / "onnx").string();
}


// ---- GELU subgraphs ---------------------------------------------------------------------

// How a test model states a constant: an initializer or a Constant node.
void scalar_operand(ModelBuilder &b, bool as_node, const std::string &name, float v) {
    if (as_node) constant_scalar(b, name, v);
    else b.floats(name, {}, {v});
}

// The GELU variants exporters emit, on x [3, 5] → y. `variant` picks the form and the
// operand order; `as_node` gives the constants as Constant nodes instead of
// initializers; `leak` also makes one intermediate a graph output (`leaked`), or
// feeds it to a second consumer (`leak_to_node`), which must stop the fusion.
enum class Leak { none, graph_output, second_consumer };
void build_gelu(ModelBuilder &b, int variant, bool as_node, Leak leak) {
    const float sqrt2 = static_cast<float>(std::numbers::sqrt2), inv_sqrt2 = static_cast<float>(1 / std::numbers::sqrt2);
    const float k = static_cast<float>(std::sqrt(2 / std::numbers::pi));
    b.input("x", {3, 5}).output("y", {3, 5});
    scalar_operand(b, as_node, "half", 0.5f);
    scalar_operand(b, as_node, "one", 1.0f);
    std::string leaked;  // the intermediate that `leak` exposes
    switch (variant) {
        case 0:  // torch: Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5)
            scalar_operand(b, as_node, "sqrt2", sqrt2);
            b.node("Div", {"x", "sqrt2"}, {"d"}, "div");
            b.node("Erf", {"d"}, {"e"}, "erf");
            b.node("Add", {"e", "one"}, {"a"}, "add");
            b.node("Mul", {"x", "a"}, {"m"}, "mul");
            b.node("Mul", {"m", "half"}, {"y"}, "mul_half");
            leaked = "e";
            break;
        case 1:  // (x · 0.5) · (1 + erf(x · 1/√2)), constants first
            scalar_operand(b, as_node, "inv_sqrt2", inv_sqrt2);
            b.node("Mul", {"inv_sqrt2", "x"}, {"d"}, "scale");
            b.node("Erf", {"d"}, {"e"}, "erf");
            b.node("Add", {"one", "e"}, {"a"}, "add");
            b.node("Mul", {"x", "half"}, {"h"}, "halve");
            b.node("Mul", {"h", "a"}, {"y"}, "mul");
            leaked = "h";
            break;
        case 2:  // x · (0.5 · (1 + erf(x / √2)))
            scalar_operand(b, as_node, "sqrt2", sqrt2);
            b.node("Div", {"x", "sqrt2"}, {"d"}, "div");
            b.node("Erf", {"d"}, {"e"}, "erf");
            b.node("Add", {"e", "one"}, {"a"}, "add");
            b.node("Mul", {"half", "a"}, {"h"}, "halve");
            b.node("Mul", {"x", "h"}, {"y"}, "mul");
            leaked = "a";
            break;
        case 3:  // (0.5 · x) · (1 + erf(x / √2))
            scalar_operand(b, as_node, "sqrt2", sqrt2);
            b.node("Div", {"x", "sqrt2"}, {"d"}, "div");
            b.node("Erf", {"d"}, {"e"}, "erf");
            b.node("Add", {"e", "one"}, {"a"}, "add");
            b.node("Mul", {"half", "x"}, {"h"}, "halve");
            b.node("Mul", {"a", "h"}, {"y"}, "mul");
            leaked = "d";
            break;
        case 4:    // GPT-2 (as tests/bench/onnx_peer/generate_models.py emits it): Pow(x, 3)
        case 5: {  // x³ as Mul(x, Mul(x, x)), other operand orders
            scalar_operand(b, as_node, "c", 0.044715f);
            scalar_operand(b, as_node, "k", k);
            if (variant == 4) {
                scalar_operand(b, as_node, "three", 3.0f);
                b.node("Pow", {"x", "three"}, {"cube"}, "pow");
                b.node("Mul", {"cube", "c"}, {"cc"}, "mul_c");
                b.node("Add", {"x", "cc"}, {"inner"}, "add_inner");
                b.node("Mul", {"inner", "k"}, {"scaled"}, "mul_k");
            } else {
                b.node("Mul", {"x", "x"}, {"sq"}, "square");
                b.node("Mul", {"sq", "x"}, {"cube"}, "cube");
                b.node("Mul", {"c", "cube"}, {"cc"}, "mul_c");
                b.node("Add", {"cc", "x"}, {"inner"}, "add_inner");
                b.node("Mul", {"k", "inner"}, {"scaled"}, "mul_k");
            }
            b.node("Tanh", {"scaled"}, {"t"}, "tanh");
            b.node("Add", {"t", "one"}, {"a"}, "add_one");
            if (variant == 4) {
                b.node("Mul", {"x", "a"}, {"xm"}, "mul_x");
                b.node("Mul", {"xm", "half"}, {"y"}, "mul_half");
            } else {
                b.node("Mul", {"half", "x"}, {"xm"}, "mul_x");
                b.node("Mul", {"a", "xm"}, {"y"}, "mul_half");
            }
            leaked = variant == 4 ? "cube" : "sq";
            break;
        }
        default: qFatal("no GELU variant %d", variant);
    }
    if (leak == Leak::graph_output) {
        b.output(leaked, {3, 5});
    } else if (leak == Leak::second_consumer) {
        b.output("z", {3, 5});
        b.node("Relu", {leaked}, {"z"}, "other");
    }
}

std::vector<float> gelu_inputs() {
    std::vector<float> v;
    for (int i = 0; i < 15; ++i) v.push_back(static_cast<float>(-3.5 + 0.5 * i));
    return v;
}

}  // namespace

class TestOnnxImport : public QObject {
    Q_OBJECT
    QTemporaryDir temp_;
    fs::path dir() const { return temp_.path().toStdString(); }

private slots:
    // x [2, 3] → MatMul W1 → Add b1 → Relu → Gemm (transB, W2, b2) → Softmax → y.
    void mlp_matches_hand_computation() {
        const std::vector<float> x = values(6, 0.1), w1 = values(12, 0.5), b1 = values(4, 1.5), w2 = values(8, 2.5),
                                 b2 = {0.25f, -0.5f};
        ModelBuilder b;
        b.input("x", {2, 3}).output("y", {2, 2});
        b.floats("W1", {3, 4}, w1).floats("b1", {4}, b1).floats("W2", {2, 4}, w2).floats("b2", {2}, b2);
        b.node("MatMul", {"x", "W1"}, {"h0"}, "fc1");
        b.node("Add", {"h0", "b1"}, {"h1"}, "bias1");
        b.node("Relu", {"h1"}, {"h2"}, "act");
        attr(b.node("Gemm", {"h2", "W2", "b2"}, {"logits"}, "fc2"), "transB", std::int64_t{1});
        b.node("Softmax", {"logits"}, {"y"}, "probs");
        auto g = import_onnx(b.save(dir(), "mlp.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QCOMPARE(kinds(*g), (std::vector<std::string>{"linear", "add", "relu", "linear", "softmax"}));
        QVERIFY(validate(*g, OpLibrary::standard()).empty());
        QCOMPARE(named(*g, "x")->role, TensorRole::input);
        QCOMPARE(named(*g, "y")->role, TensorRole::output);
        QCOMPARE(named(*g, "W2.T")->shape(), (ZPoint{4, 2}));  // transB folded into the weight

        std::vector<double> want;
        for (int r = 0; r < 2; ++r) {
            double h[4];
            for (int o = 0; o < 4; ++o) {
                double s = b1[o];
                for (int f = 0; f < 3; ++f) s += double(x[r * 3 + f]) * w1[f * 4 + o];
                h[o] = std::max(s, 0.0);
            }
            double l[2];
            for (int o = 0; o < 2; ++o) {
                l[o] = b2[o];
                for (int f = 0; f < 4; ++f) l[o] += h[f] * w2[o * 4 + f];  // W2 is [out, in] (transB)
            }
            const double m = std::max(l[0], l[1]), e0 = std::exp(l[0] - m), e1 = std::exp(l[1] - m);
            want.push_back(e0 / (e0 + e1));
            want.push_back(e1 / (e0 + e1));
        }
        QVERIFY(close(run_oracle(*g, {{"x", x}})["y"], want));
    }

    // x [1, 2, 4, 4] → Conv (3×3, pad 1, stride 2, bias) → BatchNormalization → Relu
    // → AveragePool 2×2 → Flatten → y [1, 3].
    // With folding (the default) Conv + BatchNormalization import as one conv2d with
    // new parameter tensors named after the fold; without, as two operations. Both
    // match the hand computation.
    void conv_block_matches_hand_computation_data() {
        QTest::addColumn<bool>("fold");
        QTest::newRow("batchnorm folded into the conv") << true;
        QTest::newRow("batchnorm kept") << false;
    }
    void conv_block_matches_hand_computation() {
        QFETCH(bool, fold);
        const std::vector<float> x = values(32, 0.3), w = values(54, 1.1), bias = {0.1f, -0.2f, 0.3f};
        const std::vector<float> scale = {1.5f, 0.5f, -1.0f}, shift = {0.0f, 0.25f, 0.5f}, mean = {0.1f, -0.1f, 0.2f},
                                 var = {0.5f, 1.0f, 2.0f};
        ModelBuilder b;
        b.input("x", {1, 2, 4, 4}).output("y", {1, 3});
        b.floats("W", {3, 2, 3, 3}, w).floats("B", {3}, bias);
        b.floats("scale", {3}, scale).floats("shift", {3}, shift).floats("mean", {3}, mean).floats("var", {3}, var);
        auto &conv = b.node("Conv", {"x", "W", "B"}, {"c"}, "conv");
        attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
        attr(conv, "strides", std::vector<std::int64_t>{2, 2});
        attr(b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn"), "epsilon", 1e-3f);
        b.node("Relu", {"n"}, {"r"}, "act");
        attr(b.node("AveragePool", {"r"}, {"p"}, "pool"), "kernel_shape", std::vector<std::int64_t>{2, 2});
        b.node("Flatten", {"p"}, {"y"}, "flat");
        OnnxImportOptions options;
        options.fold_batchnorm = fold;
        auto g = import_onnx(b.save(dir(), "conv.onnx"), options);
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        if (fold) {
            QCOMPARE(kinds(*g), (std::vector<std::string>{"conv2d", "relu", "avg_pool2d", "reshape"}));
            QVERIFY(named(*g, "W.folded_bn") && named(*g, "W.folded_bn")->value);
            QVERIFY(named(*g, "B.folded_bn") && named(*g, "B.folded_bn")->value);
            QVERIFY(!named(*g, "W") && !named(*g, "scale"));  // the originals are not read
            QVERIFY(named(*g, "n"));                          // the BatchNormalization's output, the conv's
        } else {
            QCOMPARE(kinds(*g), (std::vector<std::string>{"conv2d", "batchnorm", "relu", "avg_pool2d", "reshape"}));
        }
        QVERIFY(validate(*g, OpLibrary::standard()).empty());

        std::vector<double> want;
        for (int k = 0; k < 3; ++k) {
            double pooled = 0;
            for (int p = 0; p < 2; ++p)
                for (int q = 0; q < 2; ++q) {
                    double s = bias[k];
                    for (int c = 0; c < 2; ++c)
                        for (int r = 0; r < 3; ++r)
                            for (int t = 0; t < 3; ++t) {
                                const int h = 2 * p - 1 + r, wi = 2 * q - 1 + t;
                                if (h < 0 || h >= 4 || wi < 0 || wi >= 4) continue;
                                s += double(x[(c * 4 + h) * 4 + wi]) * w[((k * 2 + c) * 3 + r) * 3 + t];
                            }
                    const double n = (s - mean[k]) / std::sqrt(double(var[k]) + double(1e-3f)) * scale[k] + shift[k];
                    pooled += std::max(n, 0.0) / 4;
                }
            want.push_back(pooled);
        }
        QVERIFY(close(run_oracle(*g, {{"x", x}})["y"], want));
    }

    // Conv → BatchNormalization is folded only when the BatchNormalization is the
    // conv's only consumer and every parameter is a constant.
    void conv_batchnorm_near_misses_are_not_folded_data() {
        QTest::addColumn<int>("variant");
        QTest::newRow("conv output read twice") << 0;
        QTest::newRow("scale is a graph input") << 1;
        QTest::newRow("conv without bias is folded") << 2;
    }
    void conv_batchnorm_near_misses_are_not_folded() {
        QFETCH(int, variant);
        const std::vector<float> x = values(16, 0.2), w = values(8, 0.9);
        ModelBuilder b;
        b.input("x", {1, 2, 2, 4}).output("y", {1, 4, 2, 4});
        b.floats("W", {4, 2, 1, 1}, w).floats("shift", {4}, {0.f, 0.1f, 0.2f, 0.3f});
        b.floats("mean", {4}, {0.f, 0.5f, -0.5f, 1.f}).floats("var", {4}, {1.f, 2.f, 0.5f, 1.f});
        if (variant == 1) b.input("scale", {4});
        else b.floats("scale", {4}, {1.f, -1.f, 2.f, 0.5f});
        b.node("Conv", {"x", "W"}, {"c"}, "conv");
        b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {variant == 0 ? "n" : "y"}, "bn");
        if (variant == 0) b.node("Add", {"n", "c"}, {"y"}, "again");
        auto g = import_onnx(b.save(dir(), "conv_bn.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QCOMPARE(contains(kinds(*g), "batchnorm"), variant != 2);
        QCOMPARE(named(*g, "conv.bias.folded_bn") != nullptr, variant == 2);
        QVERIFY(validate(*g, OpLibrary::standard()).empty());
        // Folded or not, the values are the BatchNormalization's of the convolution.
        const std::vector<float> scale = {1.f, -1.f, 2.f, 0.5f}, shift = {0.f, 0.1f, 0.2f, 0.3f},
                                 mean = {0.f, 0.5f, -0.5f, 1.f}, var = {1.f, 2.f, 0.5f, 1.f};
        std::vector<double> want;
        for (int k = 0; k < 4; ++k)
            for (int p = 0; p < 8; ++p) {
                const double c = double(x[p]) * w[k * 2] + double(x[8 + p]) * w[k * 2 + 1];
                const double n = (c - mean[k]) / std::sqrt(double(var[k]) + 1e-5) * scale[k] + shift[k];
                want.push_back(variant == 0 ? n + c : n);
            }
        std::map<std::string, std::vector<float>> inputs{{"x", x}};
        if (variant == 1) inputs["scale"] = scale;
        QVERIFY(close(run_oracle(*g, inputs)["y"], want));
    }

    // The exported attention subgraph (head Reshape/Transpose of q, k, v; MatMul;
    // Mul or Div by a scale; an additive mask; Softmax; MatMul; Transpose; Reshape)
    // becomes one `attention` operation; the values equal the node-by-node import's,
    // through the oracle and the CPU executor. A near miss (Softmax over axis 2, the
    // queries, which computes something else) stays node by node.
    void attention_subgraph_becomes_one_operation_data() {
        QTest::addColumn<int>("variant");
        QTest::newRow("mul scale and mask") << 0;
        QTest::newRow("div scale, no mask") << 1;
        QTest::newRow("mask [1, 1, S, S]") << 2;
        QTest::newRow("near miss: softmax over the queries") << 3;
    }
    void attention_subgraph_becomes_one_operation() {
        QFETCH(int, variant);
        const std::int64_t B = 2, S = 3, H = 2, E = 2, D = H * E;
        ModelBuilder b;
        b.input("q", {B, S, D}).input("k", {B, S, D}).input("v", {B, S, D}).output("y", {B, S, D});
        b.ints("heads", {4}, {B, S, H, E}).ints("merge", {3}, {0, 0, -1});
        std::vector<float> mask(S * S, 0.f);
        for (int i = 0; i < S; ++i)
            for (int j = i + 1; j < S; ++j) mask[static_cast<size_t>(i * S + j)] = -1e4f;
        if (variant == 2) b.floats("mask", {1, 1, S, S}, mask);
        else b.floats("mask", {S, S}, mask);
        b.floats("c", {}, {variant == 1 ? 1.4142135f : 0.7071068f});
        for (const char *x : {"q", "k", "v"}) b.node("Reshape", {x, "heads"}, {std::string(x) + "h"});
        attr(b.node("Transpose", {"qh"}, {"qt"}), "perm", std::vector<std::int64_t>{0, 2, 1, 3});
        attr(b.node("Transpose", {"kh"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 2, 3, 1});
        attr(b.node("Transpose", {"vh"}, {"vt"}), "perm", std::vector<std::int64_t>{0, 2, 1, 3});
        b.node("MatMul", {"qt", "kt"}, {"s"});
        b.node(variant == 1 ? "Div" : "Mul", {"s", "c"}, {"ss"});
        if (variant != 1) b.node("Add", {"ss", "mask"}, {"sm"});
        attr(b.node("Softmax", {variant == 1 ? "ss" : "sm"}, {"p"}), "axis", std::int64_t{variant == 3 ? 2 : -1});
        b.node("MatMul", {"p", "vt"}, {"ctx"});
        attr(b.node("Transpose", {"ctx"}, {"ctxt"}), "perm", std::vector<std::int64_t>{0, 2, 1, 3});
        b.node("Reshape", {"ctxt", "merge"}, {"y"}, "merge_heads");
        const std::string path = b.save(dir(), "attention.onnx");
        auto fused = import_onnx(path);
        OnnxImportOptions plain_options;
        plain_options.fuse_attention = false;
        auto plain = import_onnx(path, plain_options);
        QVERIFY2(fused.has_value(), fused ? "" : fused.error().message.c_str());
        QVERIFY2(plain.has_value(), plain ? "" : plain.error().message.c_str());
        QCOMPARE(contains(kinds(*fused), "attention"), variant != 3);
        QVERIFY(!contains(kinds(*plain), "attention"));
        if (variant != 3) QCOMPARE(kinds(*fused).size(), size_t{variant == 2 ? 2u : 1u});  // (+ the mask's reshape)
        QVERIFY(validate(*fused, OpLibrary::standard()).empty());
        const std::map<std::string, std::vector<float>> inputs{
            {"q", values(int(B * S * D), 0.1)}, {"k", values(int(B * S * D), 0.5)}, {"v", values(int(B * S * D), 0.9)}};
        const auto want = run_oracle(*plain, inputs)["y"];
        QVERIFY(close(run_oracle(*fused, inputs)["y"], want));
        // The CPU executor on the fused graph.
        std::map<TensorId, TensorData> given;
        for (const auto &[name, v] : inputs) {
            TensorData d(DType::f32, ZPoint{B, S, D});
            std::copy(v.begin(), v.end(), d.as<float>().begin());
            given[named(*fused, name)->id] = std::move(d);
        }
        auto program = cpu::Program::compile(*fused, OpLibrary::standard());
        QVERIFY2(program.has_value(), program ? "" : program.error().c_str());
        auto run = (*program)->run(given);
        QVERIFY2(run.has_value(), run ? "" : run.error().c_str());
        const TensorData &y = run->outputs.at(named(*fused, "y")->id);
        std::vector<double> got;
        for (std::int64_t i = 0; i < y.element_count(); ++i) got.push_back(y.get(i));
        QVERIFY(close(got, want, 1e-5));
    }

    // Attention as PyTorch exports it: each head reshape's target computed from the
    // input's own shape (Shape, Gather, Unsqueeze, Concat), the scale from the head
    // width (Shape start −1, Cast, Sqrt, Div) and the causal mask from Range, Less
    // and Where. The shape arithmetic folds into constants at import, so the
    // subgraph still becomes one attention operation, equal to the model written
    // with constants; unnamed nodes keep their index in the model as ids.
    void attention_exported_with_shape_arithmetic_is_one_operation() {
        const std::int64_t B = 2, S = 3, H = 2, E = 2, D = H * E;
        ModelBuilder b;
        b.input("q", {B, S, D}).input("k", {B, S, D}).input("v", {B, S, D}).output("y", {B, S, D});
        b.ints("i0", {}, {0}).ints("i1", {}, {1}).ints("ax0", {1}, {0}).ints("split", {2}, {H, E}).ints("minus1", {1}, {-1});
        b.floats("zero", {}, {0.f}).floats("neg", {}, {-1e4f});
        b.node("Shape", {"q"}, {"qs"});
        attr(b.node("Gather", {"qs", "i0"}, {"bdim"}), "axis", std::int64_t{0});
        b.node("Gather", {"qs", "i1"}, {"sdim"});
        b.node("Unsqueeze", {"bdim", "ax0"}, {"bu"});
        b.node("Unsqueeze", {"sdim", "ax0"}, {"su"});
        attr(b.node("Concat", {"bu", "su", "split"}, {"heads"}), "axis", std::int64_t{0});
        attr(b.node("Concat", {"bu", "su", "minus1"}, {"merge"}), "axis", std::int64_t{0});
        // the causal mask: j > i is masked
        b.node("Range", {"i0", "sdim", "i1"}, {"pos"});
        b.node("Unsqueeze", {"pos", "ax0"}, {"cols"});
        b.ints("ax1", {1}, {1});
        b.node("Unsqueeze", {"pos", "ax1"}, {"rows"});
        b.node("Less", {"rows", "cols"}, {"later"});
        b.node("Where", {"later", "neg", "zero"}, {"mask"});
        for (const char *x : {"q", "k", "v"}) b.node("Reshape", {x, "heads"}, {std::string(x) + "h"});
        attr(b.node("Transpose", {"qh"}, {"qt"}), "perm", std::vector<std::int64_t>{0, 2, 1, 3});
        attr(b.node("Transpose", {"kh"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 2, 3, 1});
        attr(b.node("Transpose", {"vh"}, {"vt"}), "perm", std::vector<std::int64_t>{0, 2, 1, 3});
        attr(b.node("Shape", {"qt"}, {"width"}), "start", std::int64_t{-1});
        attr(b.node("Cast", {"width"}, {"widthf"}), "to", std::int64_t{onnx::TensorProto::FLOAT});
        b.node("Sqrt", {"widthf"}, {"c"});
        b.node("MatMul", {"qt", "kt"}, {"s"});
        b.node("Div", {"s", "c"}, {"ss"});
        b.node("Add", {"ss", "mask"}, {"sm"});
        attr(b.node("Softmax", {"sm"}, {"p"}), "axis", std::int64_t{-1});
        b.node("MatMul", {"p", "vt"}, {"ctx"});
        attr(b.node("Transpose", {"ctx"}, {"ctxt"}), "perm", std::vector<std::int64_t>{0, 2, 1, 3});
        b.node("Reshape", {"ctxt", "merge"}, {"y"});
        const std::string path = b.save(dir(), "exported_attention.onnx");
        auto fused = import_onnx(path);
        QVERIFY2(fused.has_value(), fused ? "" : fused.error().message.c_str());
        QCOMPARE(kinds(*fused), std::vector<std::string>{"attention"});
        QCOMPARE(fused->operations().front()->id.value, std::string("Reshape_27"));  // the last node, #27
        QVERIFY(validate(*fused, OpLibrary::standard()).empty());
        OnnxImportOptions plain_options;
        plain_options.fuse_attention = false;
        auto plain = import_onnx(path, plain_options);
        QVERIFY2(plain.has_value(), plain ? "" : plain.error().message.c_str());
        // Not vacuous: unfused, the folded constants are the reshapes' targets, the
        // scale √2 and the mask.
        const Tensor *mask = named(*plain, "mask");
        QVERIFY(mask && mask->role == TensorRole::parameter && mask->range.shape() == (ZPoint{S, S}));
        for (std::int64_t i = 0; i < S; ++i)
            for (std::int64_t j = 0; j < S; ++j) QCOMPARE(mask->value->get(i * S + j), j > i ? -1e4 : 0.0);
        const Tensor *c = named(*plain, "c");
        QVERIFY(c && c->role == TensorRole::parameter);
        QCOMPARE(static_cast<float>(c->value->get(0)), std::sqrt(2.f));
        const std::map<std::string, std::vector<float>> inputs{
            {"q", values(int(B * S * D), 0.1)}, {"k", values(int(B * S * D), 0.5)}, {"v", values(int(B * S * D), 0.9)}};
        QVERIFY(close(run_oracle(*fused, inputs)["y"], run_oracle(*plain, inputs)["y"]));
    }

    // x [1, 5, 2, 1] → LRN (size 3, α 0.1, β 0.75, bias 2) → Dropout (inference:
    // the identity, its mask named but read by nothing) → GlobalAveragePool →
    // y [1, 5, 1, 1], against the formulas by hand.
    void lrn_dropout_and_global_pooling_match_hand_computation() {
        const std::int64_t C = 5, H = 2;
        ModelBuilder b;
        b.input("x", {1, C, H, 1}).output("y", {1, C, 1, 1});
        auto &lrn = b.node("LRN", {"x"}, {"n"}, "norm");
        attr(lrn, "size", std::int64_t{3});
        attr(lrn, "alpha", 0.1f);
        attr(lrn, "beta", 0.75f);
        attr(lrn, "bias", 2.f);
        b.node("Dropout", {"n"}, {"d", "unused_mask"}, "drop");
        b.node("GlobalAveragePool", {"d"}, {"y"}, "gap");
        auto g = import_onnx(b.save(dir(), "lrn.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QVERIFY(validate(*g, OpLibrary::standard()).empty());
        QVERIFY(contains(kinds(*g), "avg_pool2d") && contains(kinds(*g), "reduce_mean"));
        const std::vector<float> x = values(int(C * H), 0.3);
        const auto got = run_oracle(*g, {{"x", x}})["y"];
        std::vector<double> want;
        for (std::int64_t c = 0; c < C; ++c) {
            double mean = 0;
            for (std::int64_t h = 0; h < H; ++h) {
                double sum = 0;  // channels c − 1 … c + 1 that exist
                for (std::int64_t k = std::max<std::int64_t>(0, c - 1); k <= std::min(C - 1, c + 1); ++k)
                    sum += double(x[size_t(k * H + h)]) * x[size_t(k * H + h)];
                mean += x[size_t(c * H + h)] / std::pow(2.0 + 0.1 / 3 * sum, 0.75) / H;
            }
            want.push_back(mean);
        }
        QVERIFY(close(got, want));
        // A mask that is read is refused.
        ModelBuilder m;
        m.input("x", {1, 2}).output("y", {1, 2});
        m.node("Dropout", {"x"}, {"d", "mask"}, "drop");
        attr(m.node("Cast", {"mask"}, {"y"}), "to", std::int64_t{onnx::TensorProto::FLOAT});
        auto refused = import_onnx(m.save(dir(), "dropout_mask.onnx"));
        QVERIFY(!refused.has_value());
        QVERIFY2(refused.error().message.find("Dropout (drop): Dropout's mask output is read") != std::string::npos,
                 refused.error().message.c_str());
    }

    // LogSoftmax stays finite where log(softmax(x)) underflows to −inf; Pad in its
    // three modes, with a crop, against the values by hand.
    void log_softmax_and_pad_match_hand_computation() {
        {
            ModelBuilder b;
            b.input("x", {2, 3}).output("y", {2, 3});
            attr(b.node("LogSoftmax", {"x"}, {"y"}, "lsm"), "axis", std::int64_t{1});
            auto g = import_onnx(b.save(dir(), "log_softmax.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            const auto y = run_oracle(*g, {{"x", {-1000.f, 0.f, 1.f, 0.5f, 0.5f, 0.5f}}})["y"];
            const double l = std::log(1 + std::exp(-1.0));  // row 0: log Σ exp(x − 1)
            QVERIFY(close(y, {-1001 - l, -1 - l, -l, -std::log(3.0), -std::log(3.0), -std::log(3.0)}));
        }
        // x = [[1, 2, 3]]: pads (before, after) per dim; dim 0 gets (1, 0), dim 1 (2, -1) — cropping the 3.
        const std::vector<float> x{1, 2, 3};
        const std::map<std::string, std::vector<double>> want{
            {"constant", {9, 9, 9, 9, 9, 9, 1, 2}},   // a row of 9s, then [9, 9, 1, 2]
            {"edge", {1, 1, 1, 2, 1, 1, 1, 2}}};      // the row repeated; [1, 2] edge-padded
        for (const char *mode : {"constant", "edge"}) {
            ModelBuilder b;
            b.input("x", {1, 3}).output("y", {2, 4});
            b.ints("pads", {4}, {1, 2, 0, -1}).floats("fill", {}, {9.f});
            auto &n = b.node("Pad", std::string(mode) == "constant" ? std::vector<std::string>{"x", "pads", "fill"}
                                                                   : std::vector<std::string>{"x", "pads"},
                             {"y"}, "pad");
            auto *a = n.add_attribute();
            a->set_name("mode");
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s(mode);
            auto g = import_onnx(b.save(dir(), std::string("pad_") + mode + ".onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QVERIFY2(close(run_oracle(*g, {{"x", x}})["y"], want.at(mode)), mode);
        }
        {  // reflect: [1, 2, 3, 4] by (2, 1) is [3, 2, 1, 2, 3, 4, 3]; by 4 it is refused
            ModelBuilder b;
            b.input("x", {4}).output("y", {7});
            b.ints("pads", {2}, {2, 1});
            auto &n = b.node("Pad", {"x", "pads"}, {"y"}, "mirror");
            auto *a = n.add_attribute();
            a->set_name("mode");
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s("reflect");
            auto g = import_onnx(b.save(dir(), "pad_reflect.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QVERIFY(close(run_oracle(*g, {{"x", {1, 2, 3, 4}}})["y"], {3, 2, 1, 2, 3, 4, 3}));
            b.m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string("\x04\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0", 16));
            b.m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(9);
            auto refused = import_onnx(b.save(dir(), "pad_reflect_far.onnx"));
            QVERIFY(!refused.has_value());
            QCOMPARE(QString::fromStdString(refused.error().message),
                     QStringLiteral("pad_reflect_far.onnx: Pad (mirror): reflect pads of 4 on dimension 0 of 4 (a "
                                    "reflection pads at most the dimension less one)"));
        }
    }

    // Masking as Hugging Face's GPT-2 exports it: Where(causal mask, scores, −inf)
    // with the mask a constant (Trilu of ones, folded), then Softmax; and Trilu and
    // ReduceLogSumExp on tensors the graph computes. The fill stays −inf (x·m + fill),
    // so the masked probabilities are exactly 0 and nothing is NaN.
    void where_with_a_constant_mask_and_trilu() {
        const std::int64_t S = 3;
        ModelBuilder b;
        b.input("scores", {S, S}).output("p", {S, S}).output("t", {S, S}).output("lse", {S});
        b.ints("square", {2}, {S, S});
        auto &ones = b.node("ConstantOfShape", {"square"}, {"ones"});
        auto *v = ones.add_attribute();
        v->set_name("value");
        v->set_type(onnx::AttributeProto::TENSOR);
        v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
        v->mutable_t()->add_dims(1);
        v->mutable_t()->add_int32_data(1);
        attr(b.node("Trilu", {"ones"}, {"causal"}), "upper", std::int64_t{0});
        b.floats("minus_inf", {}, {-std::numeric_limits<float>::infinity()});
        b.node("Where", {"causal", "scores", "minus_inf"}, {"masked"}, "mask_fill");
        attr(b.node("Softmax", {"masked"}, {"p"}), "axis", std::int64_t{-1});
        b.node("Trilu", {"scores"}, {"t"}, "upper_part");
        auto &lse = b.node("ReduceLogSumExp", {"scores"}, {"lse"});
        attr(lse, "axes", std::vector<std::int64_t>{1});
        attr(lse, "keepdims", std::int64_t{0});
        auto g = import_onnx(b.save(dir(), "masked.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QVERIFY(validate(*g, OpLibrary::standard()).empty());
        const std::vector<float> x{0.5f, 1.f, 2.f, -1.f, 0.f, 3.f, 0.25f, 0.75f, -0.5f};
        auto out = run_oracle(*g, {{"scores", x}});
        std::vector<double> p, t, l;
        for (std::int64_t r = 0; r < S; ++r) {
            double sum = 0, all = 0;
            for (std::int64_t c = 0; c <= r; ++c) sum += std::exp(double(x[size_t(r * S + c)]));
            for (std::int64_t c = 0; c < S; ++c) {
                p.push_back(c <= r ? std::exp(double(x[size_t(r * S + c)])) / sum : 0.0);
                t.push_back(c >= r ? double(x[size_t(r * S + c)]) : 0.0);
                all += std::exp(double(x[size_t(r * S + c)]));
            }
            l.push_back(std::log(all));
        }
        QVERIFY(close(out["p"], p));
        for (double prob : out["p"]) QVERIFY(!std::isnan(prob));
        QVERIFY(close(out["t"], t));
        QVERIFY(close(out["lse"], l));
    }

    // OnnxImportOptions::max_made_values bounds each constant the importer makes
    // and the folded ones together (four times it): a few bytes may ask for more.
    void made_constants_are_bounded() {
        ModelBuilder b;
        b.input("x", {1, 4}).output("y", {1, 4});
        b.ints("shape", {1}, {300}).ints("pads", {4}, {0, 0, 0, 0});
        for (int k = 0; k < 4; ++k) b.node("ConstantOfShape", {"shape"}, {"c" + std::to_string(k)}, "fill" + std::to_string(k));
        b.node("Pad", {"x", "pads"}, {"y"}, "pad");
        OnnxImportOptions bound;
        bound.max_made_values = 300;  // four fills of 300: each at the bound, 1200 in all, at 4 × 300
        auto four = import_onnx(b.save(dir(), "made.onnx"), bound);
        QVERIFY2(four.has_value(), four ? "" : four.error().message.c_str());
        bound.max_made_values = 299;
        auto each = import_onnx(dir() / "made.onnx", bound);
        QVERIFY(!each.has_value());
        QCOMPARE(QString::fromStdString(each.error().message),
                 QStringLiteral("made.onnx: ConstantOfShape (fill0): its result would hold 300 values, more than the "
                                "299 the importer folds"));
        bound.max_made_values = 300;
        b.node("ConstantOfShape", {"shape"}, {"c4"}, "fill4");
        auto five = import_onnx(b.save(dir(), "made_more.onnx"), bound);
        QVERIFY(!five.has_value());
        QCOMPARE(QString::fromStdString(five.error().message),
                 QStringLiteral("made_more.onnx: ConstantOfShape (fill4): the constants folded so far would hold 1500 "
                                "values, more than the 1200 the importer folds in all"));
    }

    // x [2, 4] → LayerNormalization → MatMul Wq [4, 6] → GELU (x/√2, Erf, +1, ·x, ·0.5, imported as one gelu)
    // → Reshape [2, 2, 3] → Transpose [1, 0, 2] → ReduceMean axis 2 → y [2, 2];
    // and Gather (x, indices [-1, 0], axis 1) → picked [2, 2] (negative indices wrap).
    void transformer_piece_matches_hand_computation() {
        const std::vector<float> x = values(8, 0.9), gamma = {1.0f, 0.5f, 2.0f, -1.0f}, beta = {0.f, 0.1f, 0.2f, 0.3f},
                                 wq = values(24, 0.2);
        ModelBuilder b;
        b.input("x", {2, 4}).output("y", {2, 2}).output("picked", {2, 2});
        b.floats("gamma", {4}, gamma).floats("beta", {4}, beta).floats("Wq", {4, 6}, wq);
        b.ints("shape", {3}, {2, 2, -1}).ints("idx", {2}, {-1, 0});
        b.node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"}, "ln");
        b.node("MatMul", {"ln", "Wq"}, {"q"}, "proj");
        constant_scalar(b, "sqrt2", static_cast<float>(std::numbers::sqrt2));
        constant_scalar(b, "one", 1.0f);
        constant_scalar(b, "half", 0.5f);
        b.node("Div", {"q", "sqrt2"}, {"g0"}, "gelu_div");
        b.node("Erf", {"g0"}, {"g1"}, "gelu_erf");
        b.node("Add", {"g1", "one"}, {"g2"}, "gelu_add");
        b.node("Mul", {"q", "g2"}, {"g3"}, "gelu_mul");
        b.node("Mul", {"g3", "half"}, {"gelu"}, "gelu_half");
        b.node("Reshape", {"gelu", "shape"}, {"heads"}, "split_heads");
        attr(b.node("Transpose", {"heads"}, {"t"}, "swap"), "perm", std::vector<std::int64_t>{1, 0, 2});
        auto &mean = b.node("ReduceMean", {"t"}, {"y"}, "mean");
        attr(mean, "axes", std::vector<std::int64_t>{2});
        attr(mean, "keepdims", std::int64_t{0});
        attr(b.node("Gather", {"x", "idx"}, {"picked"}, "pick"), "axis", std::int64_t{1});
        auto g = import_onnx(b.save(dir(), "block.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        // The five GELU nodes are one operation (gelu_tests below cover the patterns).
        QCOMPARE(kinds(*g), (std::vector<std::string>{"layernorm", "linear", "gelu", "reshape", "transpose",
                                                      "reduce_mean", "gather"}));
        QVERIFY(validate(*g, OpLibrary::standard()).empty());
        QVERIFY(named(*g, "shape") == nullptr);  // a shape operand stays a constant, not a tensor

        double gelu[2][6];
        for (int r = 0; r < 2; ++r) {
            double m = 0, v = 0;
            for (int f = 0; f < 4; ++f) m += x[r * 4 + f] / 4.0;
            for (int f = 0; f < 4; ++f) v += (x[r * 4 + f] - m) * (x[r * 4 + f] - m) / 4.0;
            double ln[4];
            for (int f = 0; f < 4; ++f) ln[f] = (x[r * 4 + f] - m) / std::sqrt(v + double(1e-5f)) * gamma[f] + beta[f];
            for (int o = 0; o < 6; ++o) {
                double q = 0;
                for (int f = 0; f < 4; ++f) q += ln[f] * wq[f * 6 + o];
                gelu[r][o] = 0.5 * q * (1 + std::erf(q / std::numbers::sqrt2));
            }
        }
        std::vector<double> want_y, want_picked;
        for (int h = 0; h < 2; ++h)      // after the transpose: [head, row]
            for (int r = 0; r < 2; ++r)
                want_y.push_back((gelu[r][h * 3] + gelu[r][h * 3 + 1] + gelu[r][h * 3 + 2]) / 3);
        for (int r = 0; r < 2; ++r) {
            want_picked.push_back(x[r * 4 + 3]);
            want_picked.push_back(x[r * 4 + 0]);
        }
        auto out = run_oracle(*g, {{"x", x}});
        QVERIFY(close(out["y"], want_y));
        QVERIFY(close(out["picked"], want_picked, 0));
    }

    // ---- GELU subgraphs -------------------------------------------------------------------
    void gelu_subgraph_becomes_one_operation_data() {
        QTest::addColumn<int>("variant");
        QTest::addColumn<bool>("as_node");
        QTest::addColumn<QString>("approximate");
        const char *names[] = {"erf-torch", "erf-x-half-first-mul-inv-sqrt2", "erf-x-times-half-one-plus",
                               "erf-half-x-first", "tanh-gpt2-pow", "tanh-mul-cube"};
        for (int v = 0; v < 6; ++v)
            for (bool as_node : {false, true})
                QTest::newRow((std::string(names[v]) + (as_node ? "-constant-nodes" : "-initializers")).c_str())
                    << v << as_node << QString(v >= 4 ? "tanh" : "none");
    }
    void gelu_subgraph_becomes_one_operation() {
        QFETCH(int, variant);
        QFETCH(bool, as_node);
        QFETCH(QString, approximate);
        ModelBuilder fused_model, plain_model;
        build_gelu(fused_model, variant, as_node, Leak::none);
        // The same GELU with an intermediate also a graph output: imported node by node.
        build_gelu(plain_model, variant, as_node, Leak::graph_output);
        auto fused = import_onnx(fused_model.save(dir(), "gelu.onnx"));
        auto plain = import_onnx(plain_model.save(dir(), "gelu_plain.onnx"));
        QVERIFY2(fused.has_value(), fused ? "" : fused.error().message.c_str());
        QVERIFY2(plain.has_value(), plain ? "" : plain.error().message.c_str());

        QCOMPARE(kinds(*fused), (std::vector<std::string>{"gelu"}));
        const Operation &op = *fused->operations().front();
        QCOMPARE(QString::fromStdString(op.params.get_string("approximate", "")), approximate);
        QCOMPARE(op.inputs.at(0).selections.at(0).tensor, named(*fused, "x")->id);
        QCOMPARE(named(*fused, "y")->role, TensorRole::output);
        QVERIFY(validate(*fused, OpLibrary::standard()).empty());
        QVERIFY(plain->operations().size() >= 5);
        QVERIFY(!contains(kinds(*plain), "gelu"));

        const std::vector<float> x = gelu_inputs();
        const std::vector<double> got = run_oracle(*fused, {{"x", x}})["y"], want = run_oracle(*plain, {{"x", x}})["y"];
        QVERIFY(close(got, want, 1e-6));
        // And the formula itself, so that a wrong `approximate` cannot pass.
        for (size_t i = 0; i < x.size(); ++i) {
            const double v = x[i];
            const double exact = approximate == "tanh"
                                     ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)))
                                     : 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2));
            QVERIFY2(std::fabs(got[i] - exact) <= 1e-12 * (1 + std::fabs(exact)), std::to_string(v).c_str());
        }
    }

    // An intermediate of the pattern that something else also reads (a graph output or
    // a second node) keeps the nodes as they are.
    void gelu_with_a_shared_intermediate_is_not_fused_data() {
        QTest::addColumn<int>("variant");
        QTest::addColumn<int>("leak");
        for (int v = 0; v < 6; ++v) {
            QTest::newRow(("variant-" + std::to_string(v) + "-graph-output").c_str()) << v << int(Leak::graph_output);
            QTest::newRow(("variant-" + std::to_string(v) + "-second-consumer").c_str()) << v << int(Leak::second_consumer);
        }
    }
    void gelu_with_a_shared_intermediate_is_not_fused() {
        QFETCH(int, variant);
        QFETCH(int, leak);
        ModelBuilder b;
        build_gelu(b, variant, false, Leak(leak));
        auto g = import_onnx(b.save(dir(), "gelu_shared.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QVERIFY(!contains(kinds(*g), "gelu"));
        QVERIFY(validate(*g, OpLibrary::standard()).empty());
        const std::vector<float> x = gelu_inputs();
        const std::vector<double> y = run_oracle(*g, {{"x", x}})["y"];
        for (size_t i = 0; i < x.size(); ++i) {
            const double v = x[i];
            const double exact = variant >= 4
                                     ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)))
                                     : 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2));
            QVERIFY(std::fabs(y[i] - exact) <= 1e-5 * (1 + std::fabs(exact)));
        }
    }

    // Near misses: a constant off by more than 1e-6, or the wrong variable in the
    // erf argument, are ordinary nodes.
    void gelu_near_misses_are_not_fused_data() {
        QTest::addColumn<int>("which");
        QTest::newRow("half-is-0.5001") << 0;
        QTest::newRow("sqrt2-is-1.4142") << 1;
        QTest::newRow("tanh-coefficient-0.0447") << 2;
        QTest::newRow("erf-reads-another-value") << 3;
        QTest::newRow("cube-is-x-squared") << 4;
    }
    void gelu_near_misses_are_not_fused() {
        QFETCH(int, which);
        ModelBuilder b;
        b.input("x", {3, 5}).input("w", {3, 5}).output("y", {3, 5});
        b.floats("half", {}, {which == 0 ? 0.5001f : 0.5f}).floats("one", {}, {1.0f});
        if (which <= 1 || which == 3) {
            b.floats("sqrt2", {}, {which == 1 ? 1.4142f : static_cast<float>(std::numbers::sqrt2)});
            b.node("Div", {which == 3 ? "w" : "x", "sqrt2"}, {"d"});
            b.node("Erf", {"d"}, {"e"});
            b.node("Add", {"e", "one"}, {"a"});
        } else {
            b.floats("c", {}, {which == 2 ? 0.0447f : 0.044715f})
                .floats("k", {}, {static_cast<float>(std::sqrt(2 / std::numbers::pi))})
                .floats("p", {}, {which == 4 ? 2.0f : 3.0f});
            b.node("Pow", {"x", "p"}, {"cube"});
            b.node("Mul", {"cube", "c"}, {"cc"});
            b.node("Add", {"x", "cc"}, {"inner"});
            b.node("Mul", {"inner", "k"}, {"scaled"});
            b.node("Tanh", {"scaled"}, {"t"});
            b.node("Add", {"t", "one"}, {"a"});
        }
        b.node("Mul", {"x", "a"}, {"m"});
        b.node("Mul", {"m", "half"}, {"y"});
        auto g = import_onnx(b.save(dir(), "near_miss.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QVERIFY(!contains(kinds(*g), "gelu"));
        QCOMPARE(g->operations().size(), size_t(which <= 1 || which == 3 ? 5 : 8));
    }

    // Two GELUs in a row, sharing their constant initializers (as the benchmark MLP
    // does), and a GELU whose constants have rank 1 ([1]) on a rank-0 x.
    void gelus_sharing_constants_and_broadcasting_constants() {
        {
            ModelBuilder b;
            b.input("x", {4}).output("y", {4});
            b.floats("sqrt2", {}, {static_cast<float>(std::numbers::sqrt2)}).floats("one", {}, {1.0f}).floats("half", {}, {0.5f});
            for (const std::string p : {"g1", "g2"}) {
                const std::string in = p == "g1" ? "x" : "g1_out", out = p == "g1" ? "g1_out" : "y";
                b.node("Div", {in, "sqrt2"}, {p + "_d"});
                b.node("Erf", {p + "_d"}, {p + "_e"});
                b.node("Add", {p + "_e", "one"}, {p + "_a"});
                b.node("Mul", {in, p + "_a"}, {p + "_m"});
                b.node("Mul", {p + "_m", "half"}, {out}, p);
            }
            auto g = import_onnx(b.save(dir(), "two_gelus.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QCOMPARE(kinds(*g), (std::vector<std::string>{"gelu", "gelu"}));
            QVERIFY(validate(*g, OpLibrary::standard()).empty());
            const std::vector<double> y = run_oracle(*g, {{"x", {-1.f, 0.f, 0.5f, 2.f}}})["y"];
            auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); };
            QVERIFY(close(y, {gelu(gelu(-1)), 0, gelu(gelu(0.5)), gelu(gelu(2))}, 1e-12));
        }
        {
            ModelBuilder b;
            b.input("x", {}).output("y", {1});
            b.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();  // rank 0
            b.floats("sqrt2", {1}, {static_cast<float>(std::numbers::sqrt2)}).floats("one", {}, {1.0f}).floats("half", {1}, {0.5f});
            b.node("Div", {"x", "sqrt2"}, {"d"});
            b.node("Erf", {"d"}, {"e"});
            b.node("Add", {"e", "one"}, {"a"});
            b.node("Mul", {"x", "a"}, {"m"});
            b.node("Mul", {"m", "half"}, {"y"}, "gelu");
            auto g = import_onnx(b.save(dir(), "gelu_rank.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QCOMPARE(kinds(*g), (std::vector<std::string>{"gelu", "reshape"}));
            QCOMPARE(named(*g, "y")->shape(), (ZPoint{1}));
            QVERIFY(validate(*g, OpLibrary::standard()).empty());
            QVERIFY(close(run_oracle(*g, {{"x", {1.5f}}})["y"], {0.5 * 1.5 * (1 + std::erf(1.5 / std::numbers::sqrt2))}, 1e-12));
        }
    }

    // A symbolic dimension takes its value from the options (--dim batch=3).
    void dynamic_dimension_with_a_value() {
        OnnxImportOptions options;
        options.dim_values = {{"batch", 3}};
        auto g = import_onnx(data_dir() + "/dynamic_dim.onnx", options);
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QCOMPARE(named(*g, "x")->shape(), (ZPoint{3, 4}));
        QCOMPARE(named(*g, "y")->shape(), (ZPoint{3, 4}));
        QCOMPARE(named(*g, "y")->role, TensorRole::output);
    }

    // The activations of exported CNNs and their constants: LeakyRelu and
    // HardSigmoid attributes, Clip's min and max inputs (constants; max absent here,
    // so no upper bound), Selu's defaults; then Neg and Abs.
    void activations_with_constants() {
        ModelBuilder b;
        b.input("x", {2, 4}).output("y", {2, 4});
        b.floats("lo", {}, {-0.5f});
        attr(b.node("LeakyRelu", {"x"}, {"a"}, "leaky"), "alpha", 0.25f);
        b.node("Clip", {"a", "lo"}, {"c"}, "clip");
        auto &hs = b.node("HardSigmoid", {"c"}, {"h"}, "hsig");
        attr(hs, "alpha", 0.3f);
        attr(hs, "beta", 0.4f);
        b.node("Selu", {"h"}, {"s"}, "selu");
        b.node("Neg", {"s"}, {"n"}, "neg");
        b.node("Abs", {"n"}, {"y"}, "abs");
        auto g = import_onnx(b.save(dir(), "activations.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QCOMPARE(kinds(*g), (std::vector<std::string>{"leaky_relu", "clip", "hard_sigmoid", "selu", "neg", "abs"}));
        const Operation *clip = g->find_op(OpId("clip"));
        QVERIFY(clip);
        QCOMPARE(clip->params.get_float("min", 0), -0.5);
        QVERIFY(!clip->params.has("max"));
        QCOMPARE(g->find_op(OpId("leaky"))->params.get_float("alpha", 0), double(0.25f));
        QCOMPARE(g->find_op(OpId("selu"))->params.get_float("alpha", 0), 1.67326319217681884765625);
        const std::vector<float> x = {-4, -1, -0.1f, 0, 0.5f, 1, 3, 10};
        std::vector<double> want;
        for (float v : x) {
            double t = v >= 0 ? v : 0.25 * double(v);
            t = std::max(t, -0.5);
            t = std::max(0.0, std::min(1.0, double(0.3f) * t + double(0.4f)));
            t = t > 0 ? 1.05070102214813232421875 * t : 1.05070102214813232421875 * 1.67326319217681884765625 * std::expm1(t);
            want.push_back(std::fabs(-t));
        }
        QVERIFY(close(run_oracle(*g, {{"x", x}})["y"], want));
    }

    // Split (sizes from a constant, and equal parts), Max, Sum of three operands
    // (a chain of binary operations, broadcasting) and PRelu with a per-channel
    // slope ([C, 1] against [N, C, W]).
    void split_variadic_and_prelu() {
        ModelBuilder b;
        b.input("x", {2, 6}).output("y", {2, 2}).output("s", {2, 3}).output("p", {1, 2, 3});
        b.ints("sizes", {3}, {1, 2, 3});
        auto &sp = b.node("Split", {"x", "sizes"}, {"x0", "x1", "x2"}, "split");
        attr(sp, "axis", std::int64_t{1});
        b.node("Split", {"x2"}, {"h0", "h1"}, "halves");  // axis 0, equal parts: [1, 3] each
        b.node("Max", {"x1", "x0"}, {"y"}, "max");
        b.node("Sum", {"h0", "h1", "x2"}, {"s"}, "sum");
        b.input("q", {1, 2, 3});
        b.floats("slope", {2, 1}, {0.5f, -2.0f});
        b.node("PRelu", {"q", "slope"}, {"p"}, "prelu");
        auto g = import_onnx(b.save(dir(), "split.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QCOMPARE(named(*g, "x1")->shape(), (ZPoint{2, 2}));
        QCOMPARE(named(*g, "h0")->shape(), (ZPoint{1, 3}));
        const std::vector<float> x = {1, -2, 3, 4, -5, 6, -7, 8, 9, -10, 11, 12}, q = {-1, 2, -3, 4, -5, 6};
        auto out = run_oracle(*g, {{"x", x}, {"q", q}});
        // x0 = x[:, 0:1], x1 = x[:, 1:3], x2 = x[:, 3:6]
        QCOMPARE(out["y"], (std::vector<double>{1, 3, 8, 9}));  // max(x1, x0 broadcast)
        // h0 = x2[0], h1 = x2[1]; s = h0 + h1 + x2
        std::vector<double> want;
        for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 3; ++c) want.push_back(double(x[3 + c]) + x[9 + c] + x[r * 6 + 3 + c]);
        QCOMPARE(out["s"], want);
        QCOMPARE(out["p"], (std::vector<double>{-0.5, 2, -1.5, 4, 10, 6}));  // channel 0 × 0.5, 1 × −2
    }

    // Models older than opset 13. One whose operators all kept their definition
    // (Conv is the same from opset 11 to 13) is read as it is; one with an operator
    // that changed is converted to opset 13 by ONNX's version converter, and says so
    // in its description: Relu of opset 9; Softmax of opset 11, which flattened its
    // input to 2-D at `axis` (the converter writes Flatten, Softmax, Reshape); Gemm of
    // opset 6 with a dynamic batch, which needs its --dim value before the
    // conversion and is refused with the usual message without it.
    void older_opsets_are_converted() {
        {
            ModelBuilder b(11);
            b.input("x", {1, 1, 3, 3}).output("y", {1, 1, 1, 1});
            b.floats("W", {1, 1, 3, 3}, values(9, 0.3));
            b.node("Conv", {"x", "W"}, {"y"}, "conv");
            auto g = import_onnx(b.save(dir(), "conv11.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QVERIFY2(g->description.find("converted") == std::string::npos, g->description.c_str());
            const std::vector<float> x = values(9, 0.7), w = values(9, 0.3);
            double want = 0;
            for (int i = 0; i < 9; ++i) want += double(x[i]) * w[i];
            QVERIFY(close(run_oracle(*g, {{"x", x}})["y"], {want}));
        }
        {
            ModelBuilder b(9);
            b.input("x", {2, 3}).output("y", {2, 3});
            b.node("Relu", {"x"}, {"y"}, "act");
            auto g = import_onnx(b.save(dir(), "relu9.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QCOMPARE(g->description, std::string("imported from relu9.onnx (tapestry-tests), converted from opset 9 to "
                                                 "13 by ONNX's version converter"));
            QCOMPARE(kinds(*g), (std::vector<std::string>{"relu"}));
            const std::vector<float> x = {-1, 2, -3, 4, 0, -0.5f};
            QCOMPARE(run_oracle(*g, {{"x", x}})["y"], (std::vector<double>{0, 2, 0, 4, 0, 0}));
        }
        {
            ModelBuilder b(11);
            b.input("x", {2, 3, 4}).output("y", {2, 3, 4});
            attr(b.node("Softmax", {"x"}, {"y"}, "sm"), "axis", std::int64_t{1});
            auto g = import_onnx(b.save(dir(), "softmax11.onnx"));
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QVERIFY(g->description.find("converted from opset 11 to 13") != std::string::npos);
            const std::vector<float> x = values(24, 0.2);
            std::vector<double> want(24);
            for (int n = 0; n < 2; ++n) {  // opset 11: one softmax over the 12 values of each item
                double m = -1e300, sum = 0;
                for (int i = 0; i < 12; ++i) m = std::max(m, double(x[n * 12 + i]));
                for (int i = 0; i < 12; ++i) sum += std::exp(double(x[n * 12 + i]) - m);
                for (int i = 0; i < 12; ++i) want[n * 12 + i] = std::exp(double(x[n * 12 + i]) - m) / sum;
            }
            QVERIFY(close(run_oracle(*g, {{"x", x}})["y"], want));
        }
        {
            ModelBuilder b(6);
            b.m.set_ir_version(3);  // before IR 4, initializers are graph inputs too
            b.input("x", {1, 4}).output("y", {1, 2});
            auto *batch = b.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
            batch->set_dim_param("batch");
            b.m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
            const std::vector<float> w = values(8, 0.4), c = {0.5f, -0.25f};
            b.floats("W", {4, 2}, w).floats("C", {2}, c);
            b.input("W", {4, 2}).input("C", {2});
            attr(b.node("Gemm", {"x", "W", "C"}, {"y"}, "fc"), "broadcast", std::int64_t{1});
            const std::string path = b.save(dir(), "gemm6.onnx");
            auto refused = import_onnx(path);
            QVERIFY(!refused.has_value());
            QCOMPARE(refused.error().message, std::string("gemm6.onnx: input 'x' has a dynamic dimension 'batch' "
                                                          "(dimension 0) without a value; give one with --dim batch=N"));
            OnnxImportOptions options;
            options.dim_values = {{"batch", 3}};
            auto g = import_onnx(path, options);
            QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
            QVERIFY(g->description.find("converted from opset 6 to 13") != std::string::npos);
            QCOMPARE(named(*g, "x")->shape(), (ZPoint{3, 4}));
            QCOMPARE(named(*g, "W")->role, TensorRole::parameter);
            const std::vector<float> x = values(12, 0.9);
            std::vector<double> want;
            for (int r = 0; r < 3; ++r)
                for (int o = 0; o < 2; ++o) {
                    double sum = c[o];
                    for (int f = 0; f < 4; ++f) sum += double(x[r * 4 + f]) * w[f * 2 + o];
                    want.push_back(sum);
                }
            QVERIFY(close(run_oracle(*g, {{"x", x}})["y"], want));
        }
    }

    // An output that is an input under another name gets a copy; ids stay safe.
    void identity_output_and_unsafe_names() {
        ModelBuilder b;
        b.input("in/put:0", {2}).output("out", {2});
        b.node("Identity", {"in/put:0"}, {"out"}, "id");
        auto g = import_onnx(b.save(dir(), "identity.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        QCOMPARE(named(*g, "in/put:0")->id.value, std::string("in_put_0"));
        QCOMPARE(named(*g, "out")->role, TensorRole::output);
        QCOMPARE(kinds(*g), (std::vector<std::string>{"reshape"}));
        QCOMPARE(run_oracle(*g, {{"in/put:0", {1.5f, -2.0f}}})["out"], (std::vector<double>{1.5, -2.0}));
    }

    // ---- errors: each bad input, the exact message ---------------------------------------
    void refusals_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QStringList>("unsupported");
        const QString d = QString::fromStdString(data_dir());
        QTest::newRow("truncated") << d + "/truncated.onnx"
                                   << "truncated.onnx: not an ONNX model, or a truncated one: its protobuf data "
                                      "cannot be parsed"
                                   << QStringList{};
        QTest::newRow("not-onnx") << d + "/not_onnx.onnx"
                                  << "not_onnx.onnx: not an ONNX model, or a truncated one: its protobuf data cannot "
                                     "be parsed"
                                  << QStringList{};
        // Found by the bad-input campaign: 118 bytes declaring a 2^64-element
        // initializer; the count wrapped, then the allocation aborted.
        QTest::newRow("huge-initializer") << d + "/huge_initializer.onnx"
                                          << "huge_initializer.onnx: initializer 'W': tensor 'W' holds 0 values but its "
                                             "shape [4294967296, 4294967296] needs more than 2^63"
                                          << QStringList{"initializer 'W'"};
        // Found by fuzz_onnx_import: it crashed ONNX's version converter.
        QTest::newRow("undefined-output") << d + "/undefined_output.onnx"
                                          << "undefined_output.onnx: the model is not valid ONNX: graph output '1' is not "
                                             "defined by any input, initializer or node"
                                          << QStringList{};
        // Found by fuzz_onnx_import: libonnx 1.12 crashed (SIGSEGV) in the shape
        // inference and in the adapter of an opset-6 Gemm with malformed shapes. The
        // conversion runs in a child process, so the crash is this model's error.
        for (const char *name : {"gemm6_crashes_inference", "gemm6_crashes_converter"})
            QTest::newRow(name) << d + "/" + name + ".onnx"
                                << QString(name) + ".onnx: opset 6 of the default ONNX domain, in which Gemm (node #0) "
                                                   "differs from opset 13: ONNX's version converter cannot take it to "
                                                   "opset 13 (libonnx crashed on this model (signal 11, Segmentation "
                                                   "fault); the model is malformed for its opset); convert the model, "
                                                   "e.g. with onnx.version_converter.convert_version(model, 17)"
                                << QStringList{"opset 6"};
        QTest::newRow("unsupported-ops")
            << d + "/unsupported_ops.onnx"
            << "unsupported_ops.onnx: 2 operators are not supported: Hardmax (hm), LpNormalization (node #2)"
            << QStringList{"Hardmax (hm)", "LpNormalization (node #2)"};
        QTest::newRow("dynamic-dim") << d + "/dynamic_dim.onnx"
                                     << "dynamic_dim.onnx: input 'x' has a dynamic dimension 'batch' (dimension 0) "
                                        "without a value; give one with --dim batch=N"
                                     << QStringList{};
        QTest::newRow("missing") << d + "/no_such.onnx" << "no_such.onnx: cannot open: No such file or directory"
                                 << QStringList{};
    }
    void refusals() {
        QFETCH(QString, file);
        QFETCH(QString, message);
        QFETCH(QStringList, unsupported);
        auto g = import_onnx(file.toStdString());
        QVERIFY(!g.has_value());
        QCOMPARE(QString::fromStdString(g.error().message), message);
        QStringList got;
        for (const std::string &u : g.error().unsupported) got << QString::fromStdString(u);
        QCOMPARE(got, unsupported);
    }

    void refusals_of_built_models_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("message");
        QTest::newRow("opset-18") << 0
                                  << "model.onnx: opset 18 of the default ONNX domain is not supported (supported: "
                                     "opsets 13 to 17); convert the model, e.g. with "
                                     "onnx.version_converter.convert_version(model, 17)";
        QTest::newRow("ceil-mode") << 2 << "model.onnx: MaxPool (pool): ceil_mode=1 is not supported";
        QTest::newRow("empty-file") << 3 << "model.onnx: the file is empty; it is not an ONNX model";
        QTest::newRow("pow-tensor-exponent")
            << 4 << "model.onnx: Pow (p): the exponent Y must be a constant holding one value";
        QTest::newRow("comparison-of-an-input")
            << 6
            << "model.onnx: Greater (more): its operand 'x' is not a constant: the importer takes Greater only as "
               "shape arithmetic, folded where every operand is a constant";
        QTest::newRow("folded-too-large")
            << 7
            << "model.onnx: ConstantOfShape (fill): its result would hold 268435456 values, more than the 134217728 the "
               "importer folds";
        QTest::newRow("folded-division-by-zero") << 8 << "model.onnx: Div (node #0): an integer division by zero";
        QTest::newRow("dynamic-dim-no-name")
            << 5
            << "model.onnx: input 'x' has an unnamed dynamic dimension (dimension 1); the importer needs a static size "
               "for it";
    }
    void refusals_of_built_models() {
        QFETCH(int, which);
        QFETCH(QString, message);
        ModelBuilder b(which == 0 ? 18 : which == 1 ? 9 : 17);
        b.input("x", {1, 1, 4, 4}).output("y", which == 2 ? std::vector<std::int64_t>{1, 1, 3, 3}
                                                         : std::vector<std::int64_t>{1, 1, 4, 4});
        if (which <= 1) b.node("Relu", {"x"}, {"y"}, "act");
        if (which == 2) {
            auto &n = b.node("MaxPool", {"x"}, {"y"}, "pool");
            attr(n, "kernel_shape", std::vector<std::int64_t>{2, 2});
            attr(n, "ceil_mode", std::int64_t{1});
        }
        if (which == 4) {
            b.input("e", {4});
            b.node("Pow", {"x", "e"}, {"y"}, "p");
        }
        if (which == 6) {
            b.node("Greater", {"x", "x"}, {"m"}, "more");
            b.node("Where", {"m", "x", "x"}, {"y"}, "select");
        }
        if (which == 7) {
            b.ints("big", {2}, {16384, 16384});
            b.node("ConstantOfShape", {"big"}, {"ones"}, "fill");
            b.node("Relu", {"x"}, {"y"}, "act");
        }
        if (which == 8) {
            b.ints("four", {1}, {4}).ints("none", {1}, {0});
            b.node("Div", {"four", "none"}, {"q"});
            b.node("Relu", {"x"}, {"y"}, "act");
        }
        if (which == 5) {
            b.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->clear_dim_value();
            b.node("Relu", {"x"}, {"y"}, "act");
        }
        std::string path = b.save(dir(), "model.onnx");
        if (which == 3) std::ofstream(path, std::ios::trunc).close();
        auto g = import_onnx(path);
        QVERIFY(!g.has_value());
        QCOMPARE(QString::fromStdString(g.error().message), message);
        QCOMPARE(g.error().unsupported.empty(), which == 3 || which == 5);
    }

    // ---- the project file ---------------------------------------------------------------
    void round_trip_through_the_project_file_data() {
        QTest::addColumn<qint64>("embed_limit");
        QTest::newRow("values-embedded") << (qint64(1) << 20);
        QTest::newRow("values-beside-as-npy") << qint64(0);
    }
    void round_trip_through_the_project_file() {
        QFETCH(qint64, embed_limit);
        ModelBuilder b;
        b.input("x", {2, 3}).output("y", {2, 4});
        b.floats("W", {3, 4}, values(12, 0.4)).floats("bias", {4}, values(4, 0.8));
        b.node("Gemm", {"x", "W", "bias"}, {"y"}, "fc");
        auto g = import_onnx(b.save(dir(), "fc.onnx"));
        QVERIFY2(g.has_value(), g ? "" : g.error().message.c_str());
        const fs::path project = dir() / ("fc" + std::to_string(embed_limit) + ".tapestry.json");
        QCOMPARE(QString::fromStdString(save_project_with_values(*g, project, embed_limit)), QString());
        LoadResult loaded = load_project(project);
        QVERIFY(loaded.ok());
        QVERIFY(load_tensor_values(loaded.graph, project.parent_path()).empty());
        QCOMPARE(loaded.graph.tensors().size(), g->tensors().size());
        for (const TensorPtr &t : g->tensors()) {
            const Tensor *u = loaded.graph.find_tensor(t->id);
            QVERIFY(u);
            QCOMPARE(u->name, t->name);
            QCOMPARE(u->role, t->role);
            QVERIFY(u->range == t->range);
            QCOMPARE(bool(u->value), bool(t->value));
            if (t->value) QVERIFY(*u->value == *t->value);
            QCOMPARE(u->data.has_value(), t->value != nullptr && t->value->element_count() > embed_limit);
        }
        QCOMPARE(loaded.graph.operations().size(), g->operations().size());
        for (const OpPtr &op : g->operations()) QVERIFY(*loaded.graph.find_op(op->id) == *op);
        const std::vector<float> x = values(6, 0.0);
        QCOMPARE(run_oracle(loaded.graph, {{"x", x}})["y"], run_oracle(*g, {{"x", x}})["y"]);
    }
};

QTEST_GUILESS_MAIN(TestOnnxImport)
#include "test_onnx_import.moc"
