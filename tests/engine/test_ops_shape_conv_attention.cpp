// The shape, convolution, embedding and attention ops: golden derivations (shapes,
// index spaces, projection texts), every derivation error with its exact message,
// FLOP counts and monoids, and the reference kernels against independently
// written closed forms.
#include <QtTest/QtTest>
#include <cmath>
#include <limits>
#include <random>

#include "op_check.h"

using namespace tapestry;
using namespace tapestry::testing;
using Ints = std::vector<std::int64_t>;

namespace {

// ---- helpers ------------------------------------------------------------------------

// "space [0:2, 0:3]; x[0] [3 1 | 0 | 1]; y[0] [...]" with " clipped" after clipped
// projections; inputs in port order, then outputs.
std::string signature_text(const Derivation &d) {
    std::string s = "space " + d.signature.index_space.to_string();
    for (const auto *side : {&d.signature.inputs, &d.signature.outputs})
        for (const PortProjections &pp : *side)
            for (size_t i = 0; i < pp.operands.size(); ++i)
                s += "; " + pp.port + "[" + std::to_string(i) + "] " + pp.operands[i].projection.to_string() +
                     (pp.operands[i].clipped ? " clipped" : "");
    return s;
}

// "y f32 [2, 3]"
std::string outputs_text(const Derivation &d) {
    std::string s;
    for (const PortTypes &pt : d.outputs)
        for (const OperandType &t : pt.operands)
            s += (s.empty() ? "" : "; ") + pt.port + " " + std::string(dtype_name(t.dtype)) + " " + t.shape.to_string();
    return s;
}

Expected<Derivation, DerivationError> derive(const OpCase &c) {
    return OpLibrary::standard().derive(c.kind, c.params, c.inputs);
}

RefArray random_array(const ZPoint &shape, std::mt19937_64 &rng, double lo = -2, double hi = 2) {
    RefArray a(ZRange::of_shape(shape));
    std::uniform_real_distribution<double> u(lo, hi);
    for (double &v : a.data) v = u(rng);
    return a;
}

RefArray array_of(const ZPoint &shape, std::vector<double> values) {
    RefArray a(ZRange::of_shape(shape));
    a.data = std::move(values);
    return a;
}

// Runs the op of `c` over its whole index space on `inputs` (port order of the
// OpDef; one vector per port, empty for an absent optional port); returns y.
RefArray run_y(const OpCase &c, const std::vector<std::vector<RefArray>> &inputs) {
    auto out = evaluate_case(c, inputs);
    if (!out) qFatal("evaluate_case failed: %s", out.error().c_str());
    return out.value().at(0).at(0);
}

double flops(const OpCase &c) {
    const OpDef *def = OpLibrary::standard().find(c.kind);
    auto d = derive(c);
    if (!d) qFatal("derive failed: %s", describe(d.error()).c_str());
    return def->flops_per_point(OpLibrary::standard().with_defaults(*def, c.params), d.value());
}

constexpr double kTol = 1e-12;

// ---- golden derivations ---------------------------------------------------------------

struct Golden {
    OpCase c;
    std::string outputs;
    std::string signature;
};

std::vector<Golden> golden_cases() {
    const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    return {
        // transpose
        {{"transpose/perm", "transpose", Params{{"perm", Ints{2, 0, 1}}}, {port("x", {2, 3, 4})}},
         "y f32 [4, 2, 3]",
         "space [0:4, 0:2, 0:3]; x[0] [0 1 0 | 0 | 1; 0 0 1 | 0 | 1; 1 0 0 | 0 | 1]; "
         "y[0] [1 0 0 | 0 | 1; 0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"},
        {{"transpose/default-reverses", "transpose", {}, {port("x", {2, 3}, DType::i64)}},
         "y i64 [3, 2]",
         "space [0:3, 0:2]; x[0] [0 1 | 0 | 1; 1 0 | 0 | 1]; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        {{"transpose/negative-axes", "transpose", Params{{"perm", Ints{-1, 0}}}, {port("x", {5, 7})}},
         "y f32 [7, 5]",
         "space [0:7, 0:5]; x[0] [0 1 | 0 | 1; 1 0 | 0 | 1]; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        // reshape
        {{"reshape/split", "reshape", Params{{"shape", Ints{2, 3}}}, {port("x", {6})}},
         "y f32 [2, 3]",
         "space [0:2, 0:3]; x[0] [3 1 | 0 | 1]; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        {{"reshape/merge", "reshape", Params{{"shape", Ints{-1}}}, {port("x", {2, 3})}},
         "y f32 [6]",
         "space [0:2, 0:3]; x[0] [1 0 | 0 | 1; 0 1 | 0 | 1]; y[0] [3 1 | 0 | 1]"},
        {{"reshape/refined", "reshape", Params{{"shape", Ints{8, 3}}}, {port("x", {4, 6})}},
         "y f32 [8, 3]",
         "space [0:4, 0:2, 0:3]; x[0] [1 0 0 | 0 | 1; 0 3 1 | 0 | 1]; y[0] [2 1 0 | 0 | 1; 0 0 1 | 0 | 1]"},
        {{"reshape/no-refinement", "reshape", Params{{"shape", Ints{3, 2}}}, {port("x", {2, 3})}},
         "y f32 [3, 2]",
         "space [0:3, 0:2]; x[0] [0 0 | 0 | 2; 0 0 | 0 | 3]; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        {{"reshape/unit-inside", "reshape", Params{{"shape", Ints{-1}}}, {port("x", {2, 1, 3})}},
         "y f32 [6]",
         "space [0:2, 0:3]; x[0] [1 0 | 0 | 1; 0 0 | 0 | 1; 0 1 | 0 | 1]; y[0] [3 1 | 0 | 1]"},
        {{"reshape/unit-dims", "reshape", Params{{"shape", Ints{1, 3, 1}}}, {port("x", {3})}},
         "y f32 [1, 3, 1]",
         "space [0:1, 0:3, 0:1]; x[0] [0 1 0 | 0 | 1]; y[0] [1 0 0 | 0 | 1; 0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"},
        {{"reshape/leading-batch", "reshape", Params{{"shape", Ints{2, 4, -1}}}, {port("x", {2, 12})}},
         "y f32 [2, 4, 3]",
         "space [0:2, 0:4, 0:3]; x[0] [1 0 0 | 0 | 1; 0 3 1 | 0 | 1]; "
         "y[0] [1 0 0 | 0 | 1; 0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"},
        {{"reshape/scalar", "reshape", Params{{"shape", Ints{1}}}, {port("x", {})}},
         "y f32 [1]",
         "space [0:1]; x[0] []; y[0] [1 | 0 | 1]"},
        // concat
        {{"concat/last", "concat", Params{{"axis", std::int64_t{-1}}}, {ports("inputs", {{2, 3}, {2, 1}})}},
         "y f32 [2, 4]",
         "space [0:2, 0:4]; inputs[0] [1 0 | 0 | 1; 0 1 | 0 | 1] clipped; "
         "inputs[1] [1 0 | 0 | 1; 0 1 | -3 | 1] clipped; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        {{"concat/three", "concat", Params{{"axis", std::int64_t{0}}}, {ports("inputs", {{1, 2}, {3, 2}, {2, 2}})}},
         "y f32 [6, 2]",
         "space [0:6, 0:2]; inputs[0] [1 0 | 0 | 1; 0 1 | 0 | 1] clipped; "
         "inputs[1] [1 0 | -1 | 1; 0 1 | 0 | 1] clipped; inputs[2] [1 0 | -4 | 1; 0 1 | 0 | 1] clipped; "
         "y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        // slice
        {{"slice/steps",
          "slice",
          Params{{"starts", Ints{1, 7}}, {"ends", Ints{9, 0}}, {"steps", Ints{3, -2}}},
          {port("x", {10, 8})}},
         "y f32 [3, 4]",
         "space [0:3, 0:4]; x[0] [3 0 | 1 | 1; 0 -2 | 7 | 1]; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        {{"slice/negative-start-clamped-end",
          "slice",
          Params{{"starts", Ints{-3}}, {"ends", Ints{100}}, {"axes", Ints{1}}},
          {port("x", {4, 5})}},
         "y f32 [4, 3]",
         "space [0:4, 0:3]; x[0] [1 0 | 0 | 1; 0 1 | 2 | 1]; y[0] [1 0 | 0 | 1; 0 1 | 0 | 1]"},
        {{"slice/reverse",
          "slice",
          Params{{"starts", Ints{-1}}, {"ends", Ints{lowest}}, {"steps", Ints{-1}}},
          {port("x", {5})}},
         "y f32 [5]",
         "space [0:5]; x[0] [-1 | 4 | 1]; y[0] [1 | 0 | 1]"},
        {{"slice/empty", "slice", Params{{"starts", Ints{3}}, {"ends", Ints{1}}}, {port("x", {5})}},
         "y f32 [0]",
         "space [0:0]; x[0] [1 | 3 | 1]; y[0] [1 | 0 | 1]"},
        {{"slice/one-element-big-step",
          "slice",
          Params{{"starts", Ints{2}}, {"ends", Ints{5}}, {"steps", Ints{1000}}},
          {port("x", {5})}},
         "y f32 [1]",
         "space [0:1]; x[0] [1 | 2 | 1]; y[0] [1 | 0 | 1]"},
        // conv2d
        {{"conv2d/padding",
          "conv2d",
          Params{{"padding", Ints{1, 1, 1, 1}}},
          {port("x", {1, 2, 5, 5}), port("w", {3, 2, 3, 3})}},
         "y f32 [1, 3, 5, 5]",
         "space [0:1, 0:3, 0:5, 0:5]; "
         "x[0] [1 0 0 0 | 0 | 1; 0 0 0 0 | 0 | 2; 0 0 1 0 | -1 | 3; 0 0 0 1 | -1 | 3] clipped; "
         "w[0] [0 1 0 0 | 0 | 1; 0 0 0 0 | 0 | 2; 0 0 0 0 | 0 | 3; 0 0 0 0 | 0 | 3]; "
         "y[0] [1 0 0 0 | 0 | 1; 0 1 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 0 0 1 | 0 | 1]"},
        {{"conv2d/stride-dilation-bias",
          "conv2d",
          Params{{"stride", Ints{2, 1}}, {"dilation", Ints{2, 1}}, {"padding", Ints{0, 1, 1, 0}}},
          {port("x", {2, 4, 7, 6}), port("w", {6, 4, 2, 3}), port("bias", {6})}},
         "y f32 [2, 6, 3, 5]",
         "space [0:2, 0:6, 0:3, 0:5]; "
         "x[0] [1 0 0 0 | 0 | 1; 0 0 0 0 | 0 | 4; 0 0 2 0 | 0 | 3; 0 0 0 1 | -1 | 3] clipped; "
         "w[0] [0 1 0 0 | 0 | 1; 0 0 0 0 | 0 | 4; 0 0 0 0 | 0 | 2; 0 0 0 0 | 0 | 3]; "
         "bias[0] [0 1 0 0 | 0 | 1]; "
         "y[0] [1 0 0 0 | 0 | 1; 0 1 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 0 0 1 | 0 | 1]"},
        {{"conv2d/groups",
          "conv2d",
          Params{{"groups", std::int64_t{2}}},
          {port("x", {1, 4, 4, 4}, DType::bf16), port("w", {6, 2, 3, 3}, DType::bf16), port("bias", {6}, DType::bf16)}},
         "y bf16 [1, 6, 2, 2]",
         "space [0:1, 0:2, 0:3, 0:2, 0:2]; "
         "x[0] [1 0 0 0 0 | 0 | 1; 0 2 0 0 0 | 0 | 2; 0 0 0 1 0 | 0 | 3; 0 0 0 0 1 | 0 | 3] clipped; "
         "w[0] [0 3 1 0 0 | 0 | 1; 0 0 0 0 0 | 0 | 2; 0 0 0 0 0 | 0 | 3; 0 0 0 0 0 | 0 | 3]; "
         "bias[0] [0 3 1 0 0 | 0 | 1]; "
         "y[0] [1 0 0 0 0 | 0 | 1; 0 3 1 0 0 | 0 | 1; 0 0 0 1 0 | 0 | 1; 0 0 0 0 1 | 0 | 1]"},
        // pools
        {{"max_pool2d/default-stride", "max_pool2d", Params{{"kernel", Ints{3, 3}}}, {port("x", {1, 2, 6, 7})}},
         "y f32 [1, 2, 2, 2]",
         "space [0:1, 0:2, 0:2, 0:2]; "
         "x[0] [1 0 0 0 | 0 | 1; 0 1 0 0 | 0 | 1; 0 0 3 0 | 0 | 3; 0 0 0 3 | 0 | 3] clipped; "
         "y[0] [1 0 0 0 | 0 | 1; 0 1 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 0 0 1 | 0 | 1]"},
        {{"avg_pool2d/padding",
          "avg_pool2d",
          Params{{"kernel", Ints{3, 2}}, {"stride", Ints{2, 1}}, {"padding", Ints{1, 0, 2, 1}}},
          {port("x", {1, 1, 5, 5})}},
         "y f32 [1, 1, 3, 5]",
         "space [0:1, 0:1, 0:3, 0:5]; "
         "x[0] [1 0 0 0 | 0 | 1; 0 1 0 0 | 0 | 1; 0 0 2 0 | -1 | 3; 0 0 0 1 | 0 | 2] clipped; "
         "y[0] [1 0 0 0 | 0 | 1; 0 1 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 0 0 1 | 0 | 1]"},
        // embedding
        {{"embedding/2d-ids", "embedding", {}, {port("ids", {2, 3}, DType::i64), port("table", {10, 4})}},
         "y f32 [2, 3, 4]",
         "space [0:2, 0:3, 0:4]; ids[0] [1 0 0 | 0 | 1; 0 1 0 | 0 | 1]; table[0] [0 0 0 | 0 | 10; 0 0 1 | 0 | 1]; "
         "y[0] [1 0 0 | 0 | 1; 0 1 0 | 0 | 1; 0 0 1 | 0 | 1]"},
        {{"embedding/scalar-id", "embedding", {}, {port("ids", {}, DType::i32), port("table", {7, 3}, DType::f16)}},
         "y f16 [3]",
         "space [0:3]; ids[0] []; table[0] [0 | 0 | 7; 1 | 0 | 1]; y[0] [1 | 0 | 1]"},
        // attention
        {{"attention/mask",
          "attention",
          Params{{"heads", std::int64_t{2}}},
          {port("q", {2, 5, 8}), port("k", {2, 7, 8}), port("v", {2, 7, 6}), port("mask", {5, 7})}},
         "y f32 [2, 5, 6]",
         "space [0:2, 0:2, 0:5, 0:3]; "
         "q[0] [1 0 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 4 0 0 | 0 | 4]; "
         "k[0] [1 0 0 0 | 0 | 1; 0 0 0 0 | 0 | 7; 0 4 0 0 | 0 | 4]; "
         "v[0] [1 0 0 0 | 0 | 1; 0 0 0 0 | 0 | 7; 0 3 0 1 | 0 | 1]; "
         "mask[0] [0 0 1 0 | 0 | 1; 0 0 0 0 | 0 | 7]; "
         "y[0] [1 0 0 0 | 0 | 1; 0 0 1 0 | 0 | 1; 0 3 0 1 | 0 | 1]"},
    };
}

// ---- derivation errors -------------------------------------------------------------------

struct ErrorCase {
    OpCase c;
    std::string code, field, message;
};

std::vector<ErrorCase> error_cases() {
    const auto x4 = [](std::vector<Coord> s, DType t = DType::f32) { return port("x", std::move(s), t); };
    const std::vector<PortTypes> conv_ok{x4({1, 4, 5, 5}), port("w", {6, 2, 3, 3})};
    const std::vector<PortTypes> attn_ok{port("q", {2, 5, 8}), port("k", {2, 7, 8}), port("v", {2, 7, 6})};
    auto with = [](std::vector<PortTypes> base, PortTypes replace) {
        for (PortTypes &p : base)
            if (p.port == replace.port) {
                p = replace;
                return base;
            }
        base.push_back(std::move(replace));
        return base;
    };
    const Params heads2{{"heads", std::int64_t{2}}};
    return {
        // transpose
        {{"transpose/perm-length", "transpose", Params{{"perm", Ints{0}}}, {port("x", {2, 3})}},
         "bad-param",
         "params.perm",
         "transpose: perm [0] must name each of the 2 axes of x once"},
        {{"transpose/perm-twice", "transpose", Params{{"perm", Ints{1, -1}}}, {port("x", {2, 3})}},
         "bad-param",
         "params.perm",
         "transpose: axis 1 is named twice in perm"},
        {{"transpose/perm-range", "transpose", Params{{"perm", Ints{0, 2}}}, {port("x", {2, 3})}},
         "bad-param",
         "params.perm",
         "transpose: axis 2 is out of range for x of rank 2"},
        // reshape
        {{"reshape/missing-shape", "reshape", {}, {port("x", {6})}},
         "missing-param",
         "params.shape",
         "reshape needs parameter 'shape'"},
        {{"reshape/two-inferred", "reshape", Params{{"shape", Ints{-1, -1}}}, {port("x", {6})}},
         "bad-param",
         "params.shape",
         "reshape: shape may contain only one -1, got [-1, -1]"},
        {{"reshape/zero", "reshape", Params{{"shape", Ints{0, 6}}}, {port("x", {6})}},
         "bad-param",
         "params.shape",
         "reshape: shape entries must be positive or -1, got 0 in [0, 6]"},
        {{"reshape/count", "reshape", Params{{"shape", Ints{4, 2}}}, {port("x", {2, 3})}},
         "shape-mismatch",
         "inputs.x[0]",
         "reshape: cannot reshape x [2, 3] (6 elements) into [4, 2] (8 elements)"},
        {{"reshape/indivisible", "reshape", Params{{"shape", Ints{4, -1}}}, {port("x", {2, 3})}},
         "shape-mismatch",
         "inputs.x[0]",
         "reshape: cannot reshape x [2, 3] (6 elements) into [4, -1]"},
        // concat
        {{"concat/axis-range", "concat", Params{{"axis", std::int64_t{2}}}, {ports("inputs", {{2, 3}, {2, 3}})}},
         "bad-param",
         "params.axis",
         "concat: axis 2 is out of range for inputs[0] of rank 2"},
        {{"concat/shape", "concat", Params{{"axis", std::int64_t{0}}}, {ports("inputs", {{2, 3}, {2, 3}, {1, 4}})}},
         "shape-mismatch",
         "inputs.inputs[2]",
         "concat: inputs[2] [1, 4] does not match inputs[0] [2, 3] outside axis 0"},
        {{"concat/rank", "concat", Params{{"axis", std::int64_t{0}}}, {ports("inputs", {{2, 3}, {2}})}},
         "rank-mismatch",
         "inputs.inputs[1]",
         "concat: inputs[1] [2] does not match inputs[0] [2, 3] outside axis 0"},
        {{"concat/dtype",
          "concat",
          Params{{"axis", std::int64_t{0}}},
          {PortTypes{"inputs", {OperandType{DType::f32, {2}}, OperandType{DType::f16, {2}}}}}},
         "dtype-mismatch",
         "inputs.inputs[1]",
         "concat: inputs[1] is f16 but inputs[0] is f32"},
        // slice
        {{"slice/step-zero",
          "slice",
          Params{{"starts", Ints{0, 0}}, {"ends", Ints{2, 2}}, {"steps", Ints{1, 0}}},
          {port("x", {4, 4})}},
         "bad-param",
         "params.steps",
         "slice: step 0 on axis 1 is invalid (steps must be non-zero)"},
        {{"slice/ends-length", "slice", Params{{"starts", Ints{0, 0}}, {"ends", Ints{2}}}, {port("x", {4, 4})}},
         "bad-param",
         "params.ends",
         "slice: ends has 1 entry but starts has 2 entries"},
        {{"slice/too-many", "slice", Params{{"starts", Ints{0, 0, 0}}, {"ends", Ints{1, 1, 1}}}, {port("x", {4, 4})}},
         "bad-param",
         "params.starts",
         "slice: starts has 3 entries but x has rank 2"},
        {{"slice/axes-length",
          "slice",
          Params{{"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{0, 1}}},
          {port("x", {4, 4})}},
         "bad-param",
         "params.axes",
         "slice: axes has 2 entries but starts has 1 entry"},
        {{"slice/steps-length",
          "slice",
          Params{{"starts", Ints{0}}, {"ends", Ints{1}}, {"steps", Ints{1, 1}}},
          {port("x", {4, 4})}},
         "bad-param",
         "params.steps",
         "slice: steps has 2 entries but starts has 1 entry"},
        {{"slice/axis-twice",
          "slice",
          Params{{"starts", Ints{0, 1}}, {"ends", Ints{1, 2}}, {"axes", Ints{1, -1}}},
          {port("x", {4, 4})}},
         "bad-param",
         "params.axes",
         "slice: axis 1 is named twice in axes"},
        {{"slice/axis-range",
          "slice",
          Params{{"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{-3}}},
          {port("x", {4, 4})}},
         "bad-param",
         "params.axes",
         "slice: axis -3 is out of range for x of rank 2"},
        // conv2d
        {{"conv2d/x-rank", "conv2d", {}, with(conv_ok, x4({4, 5, 5}))},
         "rank-mismatch",
         "inputs.x[0]",
         "conv2d: x must have rank 4 (N, C, H, W), got [4, 5, 5]"},
        {{"conv2d/w-rank", "conv2d", {}, with(conv_ok, port("w", {6, 4, 3}))},
         "rank-mismatch",
         "inputs.w[0]",
         "conv2d: w must have rank 4 (K, C/groups, R, S), got [6, 4, 3]"},
        {{"conv2d/x-dtype", "conv2d", {}, with(conv_ok, x4({1, 4, 5, 5}, DType::i32))},
         "dtype-mismatch",
         "inputs.x[0]",
         "conv2d: x must have a floating dtype, got i32"},
        {{"conv2d/w-dtype", "conv2d", {}, with(conv_ok, port("w", {6, 4, 3, 3}, DType::f16))},
         "dtype-mismatch",
         "inputs.w[0]",
         "conv2d: w is f16 but x is f32"},
        {{"conv2d/channels", "conv2d", {}, conv_ok},
         "shape-mismatch",
         "inputs.w[0]",
         "conv2d: w [6, 2, 3, 3] has 2 channels per filter, expected 4 (x has 4 channels in 1 group)"},
        {{"conv2d/groups-channels", "conv2d", Params{{"groups", std::int64_t{3}}},
          with(conv_ok, port("w", {6, 1, 3, 3}))},
         "bad-param",
         "params.groups",
         "conv2d: groups 3 does not divide the 4 channels of x"},
        {{"conv2d/groups-filters", "conv2d", Params{{"groups", std::int64_t{4}}},
          with(conv_ok, port("w", {6, 1, 3, 3}))},
         "bad-param",
         "params.groups",
         "conv2d: groups 4 does not divide the 6 filters of w"},
        {{"conv2d/groups-zero", "conv2d", Params{{"groups", std::int64_t{0}}}, conv_ok},
         "bad-param",
         "params.groups",
         "conv2d: groups must be at least 1, got 0"},
        {{"conv2d/stride-count", "conv2d", Params{{"stride", Ints{2}}, {"groups", std::int64_t{2}}}, conv_ok},
         "bad-param",
         "params.stride",
         "conv2d: stride needs 2 entries, got [2]"},
        {{"conv2d/stride-zero", "conv2d", Params{{"stride", Ints{1, 0}}, {"groups", std::int64_t{2}}}, conv_ok},
         "bad-param",
         "params.stride",
         "conv2d: stride entries must be at least 1, got [1, 0]"},
        {{"conv2d/padding-negative", "conv2d", Params{{"padding", Ints{0, -1, 0, 0}}, {"groups", std::int64_t{2}}},
          conv_ok},
         "bad-param",
         "params.padding",
         "conv2d: padding entries must be at least 0, got [0, -1, 0, 0]"},
        {{"conv2d/dilation-zero", "conv2d", Params{{"dilation", Ints{0, 1}}, {"groups", std::int64_t{2}}}, conv_ok},
         "bad-param",
         "params.dilation",
         "conv2d: dilation entries must be at least 1, got [0, 1]"},
        {{"conv2d/window-too-large", "conv2d", Params{{"dilation", Ints{3, 1}}, {"groups", std::int64_t{2}}}, conv_ok},
         "shape-mismatch",
         "inputs.x[0]",
         "conv2d: the window (7 × 3) is larger than the padded input (5 × 5) of x [1, 4, 5, 5]"},
        {{"conv2d/bias-shape", "conv2d", Params{{"groups", std::int64_t{2}}}, with(conv_ok, port("bias", {3}))},
         "shape-mismatch",
         "inputs.bias[0]",
         "conv2d: bias must be [6] (one per filter), got [3]"},
        {{"conv2d/bias-rank", "conv2d", Params{{"groups", std::int64_t{2}}}, with(conv_ok, port("bias", {1, 6}))},
         "rank-mismatch",
         "inputs.bias[0]",
         "conv2d: bias must be [6] (one per filter), got [1, 6]"},
        {{"conv2d/empty-kernel", "conv2d", Params{{"groups", std::int64_t{2}}}, with(conv_ok, port("w", {6, 2, 0, 3}))},
         "shape-mismatch",
         "inputs.w[0]",
         "conv2d: w [6, 2, 0, 3] has an empty kernel"},
        // pools
        {{"max_pool2d/missing-kernel", "max_pool2d", {}, {x4({1, 1, 4, 4})}},
         "missing-param",
         "params.kernel",
         "max_pool2d needs parameter 'kernel'"},
        {{"max_pool2d/kernel-count", "max_pool2d", Params{{"kernel", Ints{2, 2, 2}}}, {x4({1, 1, 4, 4})}},
         "bad-param",
         "params.kernel",
         "max_pool2d: kernel needs 2 entries, got [2, 2, 2]"},
        {{"avg_pool2d/kernel-zero", "avg_pool2d", Params{{"kernel", Ints{0, 2}}}, {x4({1, 1, 4, 4})}},
         "bad-param",
         "params.kernel",
         "avg_pool2d: kernel entries must be at least 1, got [0, 2]"},
        {{"max_pool2d/padding-too-large",
          "max_pool2d",
          Params{{"kernel", Ints{2, 3}}, {"padding", Ints{0, 0, 0, 3}}},
          {x4({1, 1, 4, 4})}},
         "bad-param",
         "params.padding",
         "max_pool2d: padding [0, 0, 0, 3] must be smaller than the kernel [2, 3] along each axis"},
        {{"avg_pool2d/too-small", "avg_pool2d", Params{{"kernel", Ints{5, 1}}}, {x4({1, 1, 4, 4})}},
         "shape-mismatch",
         "inputs.x[0]",
         "avg_pool2d: the window (5 × 1) is larger than the padded input (4 × 4) of x [1, 1, 4, 4]"},
        {{"avg_pool2d/x-rank", "avg_pool2d", Params{{"kernel", Ints{2, 2}}}, {x4({4, 4})}},
         "rank-mismatch",
         "inputs.x[0]",
         "avg_pool2d: x must have rank 4 (N, C, H, W), got [4, 4]"},
        {{"max_pool2d/stride-count",
          "max_pool2d",
          Params{{"kernel", Ints{2, 2}}, {"stride", Ints{1}}},
          {x4({1, 1, 4, 4})}},
         "bad-param",
         "params.stride",
         "max_pool2d: stride needs 2 entries, got [1]"},
        // embedding
        {{"embedding/ids-float", "embedding", {}, {port("ids", {3}), port("table", {5, 2})}},
         "dtype-mismatch",
         "inputs.ids[0]",
         "embedding: ids must be i32 or i64, got f32"},
        {{"embedding/table-int", "embedding", {}, {port("ids", {3}, DType::i32), port("table", {5, 2}, DType::i64)}},
         "dtype-mismatch",
         "inputs.table[0]",
         "embedding: table must have a floating dtype, got i64"},
        {{"embedding/table-rank", "embedding", {}, {port("ids", {3}, DType::i32), port("table", {5})}},
         "rank-mismatch",
         "inputs.table[0]",
         "embedding: table must have rank 2 [V, D], got [5]"},
        {{"embedding/table-empty", "embedding", {}, {port("ids", {3}, DType::i32), port("table", {0, 4})}},
         "shape-mismatch",
         "inputs.table[0]",
         "embedding: table [0, 4] has no rows"},
        // attention
        {{"attention/missing-heads", "attention", {}, attn_ok},
         "missing-param",
         "params.heads",
         "attention needs parameter 'heads'"},
        {{"attention/heads-zero", "attention", Params{{"heads", std::int64_t{0}}}, attn_ok},
         "bad-param",
         "params.heads",
         "attention: heads must be at least 1, got 0"},
        {{"attention/heads-divide", "attention", Params{{"heads", std::int64_t{3}}}, attn_ok},
         "bad-param",
         "params.heads",
         "attention: heads 3 does not divide the 8 features of q into non-empty heads"},
        {{"attention/q-rank", "attention", heads2, with(attn_ok, port("q", {5, 8}))},
         "rank-mismatch",
         "inputs.q[0]",
         "attention: q must have rank 3 [B, S, H·E], got [5, 8]"},
        {{"attention/q-dtype", "attention", heads2, with(attn_ok, port("q", {2, 5, 8}, DType::i64))},
         "dtype-mismatch",
         "inputs.q[0]",
         "attention: q must have a floating dtype, got i64"},
        {{"attention/v-dtype", "attention", heads2, with(attn_ok, port("v", {2, 7, 6}, DType::bf16))},
         "dtype-mismatch",
         "inputs.v[0]",
         "attention: v is bf16 but q is f32"},
        {{"attention/k-features", "attention", heads2, with(attn_ok, port("k", {2, 7, 6}))},
         "shape-mismatch",
         "inputs.k[0]",
         "attention: k [2, 7, 6] must be [2, Sk, 8] to match q [2, 5, 8]"},
        {{"attention/k-batch", "attention", heads2, with(attn_ok, port("k", {1, 7, 8}))},
         "shape-mismatch",
         "inputs.k[0]",
         "attention: k [1, 7, 8] must be [2, Sk, 8] to match q [2, 5, 8]"},
        {{"attention/k-empty", "attention", heads2, with(with(attn_ok, port("k", {2, 0, 8})), port("v", {2, 0, 6}))},
         "shape-mismatch",
         "inputs.k[0]",
         "attention: k [2, 0, 8] has no key positions"},
        {{"attention/v-positions", "attention", heads2, with(attn_ok, port("v", {2, 6, 6}))},
         "shape-mismatch",
         "inputs.v[0]",
         "attention: v [2, 6, 6] must be [2, 7, H·Ev] to match k [2, 7, 8]"},
        {{"attention/v-heads", "attention", heads2, with(attn_ok, port("v", {2, 7, 5}))},
         "shape-mismatch",
         "inputs.v[0]",
         "attention: heads 2 does not divide the 5 features of v into non-empty heads"},
        {{"attention/mask-shape", "attention", heads2, with(attn_ok, port("mask", {7, 5}))},
         "shape-mismatch",
         "inputs.mask[0]",
         "attention: mask must be [Sq, Sk] = [5, 7], got [7, 5]"},
        {{"attention/mask-rank", "attention", heads2, with(attn_ok, port("mask", {2, 5, 7}))},
         "rank-mismatch",
         "inputs.mask[0]",
         "attention: mask must be [Sq, Sk] = [5, 7], got [2, 5, 7]"},
    };
}

// ---- independent closed forms --------------------------------------------------------------

// Direct NCHW convolution from flat arrays (no ZPoint, no shared code with the op).
std::vector<double> conv_direct(const std::vector<double> &x, const std::vector<double> &w, const double *bias, int n_,
                                int c_, int h_, int w_, int k_, int r_, int s_, int sh, int sw, int pt, int pl, int pb,
                                int pr, int dh, int dw, int groups, int &p_out, int &q_out) {
    const int p_ = (h_ + pt + pb - (dh * (r_ - 1) + 1)) / sh + 1;
    const int q_ = (w_ + pl + pr - (dw * (s_ - 1) + 1)) / sw + 1;
    p_out = p_;
    q_out = q_;
    const int cg = c_ / groups, kg = k_ / groups;
    std::vector<double> y(static_cast<size_t>(n_ * k_ * p_ * q_));
    for (int n = 0; n < n_; ++n)
        for (int k = 0; k < k_; ++k)
            for (int p = 0; p < p_; ++p)
                for (int q = 0; q < q_; ++q) {
                    double acc = bias ? bias[k] : 0.0;
                    const int g = k / kg;
                    for (int c = 0; c < cg; ++c)
                        for (int r = 0; r < r_; ++r)
                            for (int s = 0; s < s_; ++s) {
                                const int hh = p * sh + r * dh - pt, ww = q * sw + s * dw - pl;
                                if (hh < 0 || hh >= h_ || ww < 0 || ww >= w_) continue;
                                const int ch = g * cg + c;
                                acc += x[static_cast<size_t>(((n * c_ + ch) * h_ + hh) * w_ + ww)] *
                                       w[static_cast<size_t>(((k * cg + c) * r_ + r) * s_ + s)];
                            }
                    y[static_cast<size_t>(((n * k_ + k) * p_ + p) * q_ + q)] = acc;
                }
    return y;
}

// Naive attention written from the formula, per (b, h): S = Q·Kᵀ·scale + M,
// causal entries −∞, P = softmax over rows, Y = P·V.
std::vector<double> attention_direct(const std::vector<double> &q, const std::vector<double> &k,
                                     const std::vector<double> &v, const std::vector<double> *mask, int b_, int sq,
                                     int sk, int heads, int e_, int ev, double scale, bool causal) {
    std::vector<double> y(static_cast<size_t>(b_ * sq * heads * ev), 0.0);
    for (int b = 0; b < b_; ++b)
        for (int h = 0; h < heads; ++h) {
            std::vector<std::vector<double>> s(static_cast<size_t>(sq), std::vector<double>(static_cast<size_t>(sk)));
            for (int i = 0; i < sq; ++i)
                for (int j = 0; j < sk; ++j) {
                    double dot = 0;
                    for (int c = 0; c < e_; ++c)
                        dot += q[static_cast<size_t>((b * sq + i) * heads * e_ + h * e_ + c)] *
                               k[static_cast<size_t>((b * sk + j) * heads * e_ + h * e_ + c)];
                    double val = dot * scale;
                    if (mask) val += (*mask)[static_cast<size_t>(i * sk + j)];
                    if (causal && j > i) val = -std::numeric_limits<double>::infinity();
                    s[static_cast<size_t>(i)][static_cast<size_t>(j)] = val;
                }
            for (int i = 0; i < sq; ++i) {
                auto &row = s[static_cast<size_t>(i)];
                const double mx = *std::max_element(row.begin(), row.end());
                double z = 0;
                for (double &val : row) z += (val = std::exp(val - mx));
                for (int e = 0; e < ev; ++e) {
                    double acc = 0;
                    for (int j = 0; j < sk; ++j)
                        acc += row[static_cast<size_t>(j)] / z *
                               v[static_cast<size_t>((b * sk + j) * heads * ev + h * ev + e)];
                    y[static_cast<size_t>((b * sq + i) * heads * ev + h * ev + e)] = acc;
                }
            }
        }
    return y;
}

}  // namespace

class TestOpsShapeConvAttention : public QObject {
    Q_OBJECT
private slots:
    // ---- derivations ----
    void golden_derivation_data() {
        QTest::addColumn<int>("row");
        const auto cases = golden_cases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].c.name.c_str()) << static_cast<int>(i);
    }
    void golden_derivation() {
        QFETCH(int, row);
        const Golden g = golden_cases()[static_cast<size_t>(row)];
        auto d = derive(g.c);
        QVERIFY2(d.has_value(), d.has_value() ? "" : describe(d.error()).c_str());
        QCOMPARE(outputs_text(d.value()), g.outputs);
        QCOMPARE(signature_text(d.value()), g.signature);
    }

    void derivation_errors_data() {
        QTest::addColumn<int>("row");
        const auto cases = error_cases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].c.name.c_str()) << static_cast<int>(i);
    }
    void derivation_errors() {
        QFETCH(int, row);
        const ErrorCase e = error_cases()[static_cast<size_t>(row)];
        auto d = derive(e.c);
        QVERIFY2(!d.has_value(), ("derived " + (d.has_value() ? signature_text(d.value()) : "")).c_str());
        QCOMPARE(d.error().message, e.message);
        QCOMPARE(d.error().field, e.field);
        QCOMPARE(d.error().code, e.code);
    }

    void catalog_entries() {
        const OpLibrary &lib = OpLibrary::standard();
        const std::map<std::string, std::string> categories{
            {"transpose", "shape"},        {"reshape", "shape"},
            {"concat", "shape"},           {"slice", "shape"},
            {"conv2d", "convolution"},     {"max_pool2d", "convolution"},
            {"avg_pool2d", "convolution"}, {"embedding", "embedding"},
            {"attention", "attention"}};
        for (const auto &[kind, category] : categories) {
            const OpDef *def = lib.find(kind);
            QVERIFY2(def, kind.c_str());
            QCOMPARE(std::string(def->category()), category);
            QVERIFY(!def->summary().empty());
            for (const ParamSpec &p : def->params()) QVERIFY2(!p.doc.empty(), (kind + "." + p.name).c_str());
            QCOMPARE(def->output_ports().size(), size_t{1});
            QCOMPARE(def->output_ports()[0].name, std::string("y"));
            QCOMPARE(def->composite(), kind == "attention");
        }
        QVERIFY(lib.find("concat")->input_ports()[0].variadic);
        QVERIFY(lib.find("conv2d")->input_ports()[2].optional);
        QVERIFY(lib.find("attention")->input_ports()[3].optional);
    }

    // The default-filled parameters of the catalog (docs/ops.md).
    void defaults() {
        const OpLibrary &lib = OpLibrary::standard();
        const Params conv = lib.with_defaults(*lib.find("conv2d"), {});
        QCOMPARE(conv.get_ints("stride", {}), (Ints{1, 1}));
        QCOMPARE(conv.get_ints("padding", {}), (Ints{0, 0, 0, 0}));
        QCOMPARE(conv.get_ints("dilation", {}), (Ints{1, 1}));
        QCOMPARE(conv.get_int("groups", 0), std::int64_t{1});
        const Params avg = lib.with_defaults(*lib.find("avg_pool2d"), Params{{"kernel", Ints{2, 2}}});
        QCOMPARE(avg.get_bool("count_include_pad", true), false);
        const Params attn = lib.with_defaults(*lib.find("attention"), Params{{"heads", std::int64_t{1}}});
        QCOMPARE(attn.get_bool("causal", true), false);
    }

    // ---- costs, monoids, read patterns ----
    void flops_per_point_data() {
        QTest::addColumn<int>("row");
        QTest::addColumn<double>("expected");
        // 2·(C/groups)·R·S, plus 1 with a bias.
        QTest::newRow("conv2d") << 0 << 2.0 * 2 * 3 * 3;
        QTest::newRow("conv2d/bias-groups") << 1 << 2.0 * 2 * 3 * 3 + 1;
        QTest::newRow("conv2d/dilated") << 2 << 2.0 * 4 * 2 * 3 + 1;
        QTest::newRow("max_pool2d") << 3 << 3.0 * 3 - 1;
        QTest::newRow("avg_pool2d") << 4 << 3.0 * 2;
        // 2·Sk + Sk·(2E + 6)/Ev; +1 per score with a mask. E = 4, Sk = 7, Ev = 3.
        QTest::newRow("attention") << 5 << 2.0 * 7 + 7.0 * (2 * 4 + 6) / 3;
        QTest::newRow("attention/mask") << 6 << 2.0 * 7 + 7.0 * (2 * 4 + 7) / 3;
        for (int i = 7; i < 11; ++i) QTest::newRow(("shape/" + std::to_string(i)).c_str()) << i << 0.0;
        QTest::newRow("embedding") << 11 << 0.0;
    }
    void flops_per_point() {
        QFETCH(int, row);
        QFETCH(double, expected);
        const std::vector<PortTypes> attn{port("q", {2, 5, 8}), port("k", {2, 7, 8}), port("v", {2, 7, 6})};
        std::vector<PortTypes> attn_mask = attn;
        attn_mask.push_back(port("mask", {5, 7}));
        const std::vector<OpCase> cases{
            {"", "conv2d", {}, {port("x", {1, 2, 5, 5}), port("w", {3, 2, 3, 3})}},
            {"",
             "conv2d",
             Params{{"groups", std::int64_t{2}}},
             {port("x", {1, 4, 5, 5}), port("w", {6, 2, 3, 3}), port("bias", {6})}},
            {"",
             "conv2d",
             Params{{"dilation", Ints{2, 2}}},
             {port("x", {1, 4, 9, 9}), port("w", {5, 4, 2, 3}), port("bias", {5})}},
            {"", "max_pool2d", Params{{"kernel", Ints{3, 3}}}, {port("x", {1, 2, 6, 6})}},
            {"", "avg_pool2d", Params{{"kernel", Ints{3, 2}}}, {port("x", {1, 2, 6, 6})}},
            {"", "attention", Params{{"heads", std::int64_t{2}}}, attn},
            {"", "attention", Params{{"heads", std::int64_t{2}}, {"causal", true}}, attn_mask},
            {"", "transpose", {}, {port("x", {2, 3})}},
            {"", "reshape", Params{{"shape", Ints{3, 2}}}, {port("x", {2, 3})}},
            {"", "concat", Params{{"axis", std::int64_t{0}}}, {ports("inputs", {{2}, {3}})}},
            {"", "slice", Params{{"starts", Ints{1}}, {"ends", Ints{2}}}, {port("x", {4})}},
            {"", "embedding", {}, {port("ids", {3}, DType::i32), port("table", {4, 2})}},
        };
        QCOMPARE(flops(cases[static_cast<size_t>(row)]), expected);
    }

    // The library's cost multiplies by the points and sizes the clipped selections.
    void conv_cost_of_a_padded_shard() {
        const OpLibrary &lib = OpLibrary::standard();
        const OpCase c{
            "", "conv2d", Params{{"padding", Ints{1, 1, 1, 1}}}, {port("x", {1, 2, 5, 5}), port("w", {3, 2, 3, 3})}};
        auto d = derive(c);
        QVERIFY(d.has_value());
        // Output rows 0:2, columns 0:2 of filter 0: x rows −1:3 clipped to 0:3, columns 0:3.
        const OpCost cost =
            lib.cost(*lib.find("conv2d"), c.params, d.value(), c.inputs, ZRange({0, 0, 0, 0}, {1, 1, 2, 2}));
        QCOMPARE(cost.flops, 4.0 * 2 * 2 * 3 * 3);
        QCOMPARE(cost.bytes_read, (2.0 * 3 * 3 + 2 * 3 * 3) * 4);
        QCOMPARE(cost.bytes_written, 4.0 * 4);
    }

    void monoids_and_patterns() {
        const OpLibrary &lib = OpLibrary::standard();
        QCOMPARE(lib.find("conv2d")->monoid({})->name, std::string("sum"));
        QCOMPARE(lib.find("max_pool2d")->monoid({})->name, std::string("max"));
        const auto mean = lib.find("avg_pool2d")->monoid({});
        QCOMPARE(mean->width, 2);
        QCOMPARE(op_util::reduce_with(*mean, {1, 2, 6}), 3.0);
        QVERIFY(!lib.find("attention")->monoid({}));
        QVERIFY(!lib.find("transpose")->monoid({}));

        const OpDef &conv = *lib.find("conv2d");
        QCOMPARE(conv.read_pattern({}), ReadPattern::dense);
        QCOMPARE(conv.read_pattern(Params{{"dilation", Ints{1, 2}}}), ReadPattern::strided);
        QCOMPARE(conv.read_pattern(Params{{"dilation", Ints{1, 2}}, {"padding", Ints{0, 0, 1, 0}}}),
                 ReadPattern::subset);
        QCOMPARE(conv.read_pattern(Params{{"padding", Ints{0, 0, 1, 0}}}), ReadPattern::dense);
        QCOMPARE(conv.read_pattern(Params{{"stride", Ints{2, 1}}}), ReadPattern::strided);
        QCOMPARE(conv.read_pattern(Params{{"groups", std::int64_t{2}}}), ReadPattern::strided);
        const OpDef &pool = *lib.find("max_pool2d");
        QCOMPARE(pool.read_pattern(Params{{"kernel", Ints{2, 2}}}), ReadPattern::dense);
        QCOMPARE(pool.read_pattern(Params{{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}}), ReadPattern::dense);
        QCOMPARE(pool.read_pattern(Params{{"kernel", Ints{2, 2}}, {"stride", Ints{3, 2}}}), ReadPattern::strided);
        QCOMPARE(lib.find("embedding")->read_pattern({}), ReadPattern::data_dependent);
        QCOMPARE(lib.find("slice")->read_pattern(Params{{"steps", Ints{1, -1}}}), ReadPattern::dense);
        QCOMPARE(lib.find("slice")->read_pattern(Params{{"steps", Ints{1, -2}}}), ReadPattern::strided);
        QCOMPARE(lib.find("reshape")->read_pattern({}), ReadPattern::subset);
        QCOMPARE(lib.find("attention")->read_pattern(Params{{"heads", std::int64_t{1}}}), ReadPattern::dense);
        QCOMPARE(lib.find("attention")->read_pattern(Params{{"heads", std::int64_t{4}}}), ReadPattern::strided);
    }

    // ---- numeric checks against closed forms ----
    void transpose_twice_is_identity() {
        std::mt19937_64 rng(11);
        const RefArray x = random_array({2, 3, 4}, rng);
        const RefArray y = run_y({"", "transpose", Params{{"perm", Ints{2, 0, 1}}}, {port("x", {2, 3, 4})}}, {{x}});
        QCOMPARE(y.range, ZRange::of_shape({4, 2, 3}));
        QCOMPARE(y.at({3, 1, 2}), x.at({1, 2, 3}));
        const RefArray z = run_y({"", "transpose", Params{{"perm", Ints{1, 2, 0}}}, {port("x", {4, 2, 3})}}, {{y}});
        QCOMPARE(z.range, x.range);
        QVERIFY(z.data == x.data);
        // The default reverses: y[k, j, i] = x[i, j, k].
        const RefArray r = run_y({"", "transpose", {}, {port("x", {2, 3, 4})}}, {{x}});
        x.range.for_each_point([&](const ZPoint &p) { QCOMPARE(r.at({p[2], p[1], p[0]}), x.at(p)); });
    }

    void reshape_keeps_row_major_order_data() {
        QTest::addColumn<QList<qint64>>("in");
        QTest::addColumn<QList<qint64>>("shape");
        QTest::newRow("split") << QList<qint64>{12} << QList<qint64>{3, -1};
        QTest::newRow("merge") << QList<qint64>{2, 3, 4} << QList<qint64>{6, 4};
        QTest::newRow("refined") << QList<qint64>{4, 6} << QList<qint64>{8, 3};
        QTest::newRow("no-refinement") << QList<qint64>{2, 3, 5} << QList<qint64>{3, 2, 5};
        QTest::newRow("units") << QList<qint64>{1, 6, 1} << QList<qint64>{2, 1, 3};
        QTest::newRow("to-scalar") << QList<qint64>{1, 1} << QList<qint64>{};
    }
    void reshape_keeps_row_major_order() {
        QFETCH(QList<qint64>, in);
        QFETCH(QList<qint64>, shape);
        std::mt19937_64 rng(5);
        const ZPoint in_shape(std::vector<Coord>(in.begin(), in.end()));
        const RefArray x = random_array(in_shape, rng);
        const RefArray y = run_y({"",
                                  "reshape",
                                  Params{{"shape", Ints(shape.begin(), shape.end())}},
                                  {port("x", std::vector<Coord>(in.begin(), in.end()))}},
                                 {{x}});
        QCOMPARE(y.range.size(), x.range.size());
        QVERIFY(y.data == x.data);  // row-major order is preserved element for element
    }

    void concat_values() {
        std::mt19937_64 rng(3);
        const RefArray a = random_array({2, 2}, rng), b = random_array({2, 3}, rng), c = random_array({2, 1}, rng);
        const RefArray y =
            run_y({"", "concat", Params{{"axis", std::int64_t{1}}}, {ports("inputs", {{2, 2}, {2, 3}, {2, 1}})}},
                  {{a, b, c}});
        QCOMPARE(y.range, ZRange::of_shape({2, 6}));
        for (Coord i = 0; i < 2; ++i) {
            const std::vector<double> row{a.at({i, 0}), a.at({i, 1}), b.at({i, 0}),
                                          b.at({i, 1}), b.at({i, 2}), c.at({i, 0})};
            for (Coord j = 0; j < 6; ++j) QCOMPARE(y.at({i, j}), row[static_cast<size_t>(j)]);
        }
    }

    void slice_values() {
        std::mt19937_64 rng(4);
        const RefArray x = random_array({10, 8}, rng);
        const RefArray y = run_y({"",
                                  "slice",
                                  Params{{"starts", Ints{1, 7}}, {"ends", Ints{9, 0}}, {"steps", Ints{3, -2}}},
                                  {port("x", {10, 8})}},
                                 {{x}});
        QCOMPARE(y.range, ZRange::of_shape({3, 4}));
        const Coord rows[] = {1, 4, 7}, cols[] = {7, 5, 3, 1};
        for (Coord i = 0; i < 3; ++i)
            for (Coord j = 0; j < 4; ++j) QCOMPARE(y.at({i, j}), x.at({rows[i], cols[j]}));
        // x[-3:] along axis 1 of a [2, 5].
        const RefArray x2 = random_array({2, 5}, rng);
        const RefArray t = run_y(
            {"", "slice", Params{{"starts", Ints{-3}}, {"ends", Ints{1000}}, {"axes", Ints{-1}}}, {port("x", {2, 5})}},
            {{x2}});
        QCOMPARE(t.range, ZRange::of_shape({2, 3}));
        QCOMPARE(t.at({1, 0}), x2.at({1, 2}));
        QCOMPARE(t.at({0, 2}), x2.at({0, 4}));
    }

    // A hand-computed case: x = 1…9 in a 3×3 image, w = [[1, 0], [0, 1]]:
    // y[p, q] = x[p, q] + x[p+1, q+1].
    void conv2d_by_hand() {
        const RefArray x = array_of({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
        const RefArray w = array_of({1, 1, 2, 2}, {1, 0, 0, 1});
        const RefArray y =
            run_y({"", "conv2d", {}, {port("x", {1, 1, 3, 3}), port("w", {1, 1, 2, 2})}}, {{x}, {w}, {}});
        QCOMPARE(y.data, (std::vector<double>{6, 8, 12, 14}));
        // Padding 1 on the top only, stride 2 across: rows −1…1, columns 0 and 2.
        const RefArray y2 = run_y({"",
                                   "conv2d",
                                   Params{{"padding", Ints{1, 0, 0, 0}}, {"stride", Ints{1, 2}}},
                                   {port("x", {1, 1, 3, 3}), port("w", {1, 1, 2, 2})}},
                                  {{x}, {w}, {}});
        QCOMPARE(y2.range, ZRange::of_shape({1, 1, 3, 1}));
        QCOMPARE(y2.data, (std::vector<double>{0 + 2, 1 + 5, 4 + 8}));
    }

    void conv2d_against_direct_formula_data() {
        QTest::addColumn<QList<int>>("cfg");  // N C H W K R S sh sw pt pl pb pr dh dw groups bias
        QTest::newRow("plain") << QList<int>{2, 3, 5, 6, 4, 3, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};
        QTest::newRow("stride") << QList<int>{1, 2, 7, 7, 3, 3, 3, 2, 3, 0, 0, 0, 0, 1, 1, 1, 1};
        QTest::newRow("padding") << QList<int>{1, 2, 4, 5, 2, 3, 3, 1, 1, 1, 2, 0, 1, 1, 1, 1, 1};
        QTest::newRow("dilation") << QList<int>{1, 2, 7, 6, 2, 2, 3, 1, 1, 0, 0, 0, 0, 3, 2, 1, 0};
        QTest::newRow("groups") << QList<int>{2, 4, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1};
        QTest::newRow("depthwise") << QList<int>{1, 3, 4, 4, 3, 2, 2, 2, 2, 1, 0, 1, 1, 1, 1, 3, 0};
        QTest::newRow("all") << QList<int>{2, 6, 9, 8, 4, 2, 3, 2, 1, 2, 1, 0, 2, 2, 3, 2, 1};
    }
    void conv2d_against_direct_formula() {
        QFETCH(QList<int>, cfg);
        const int n = cfg[0], c = cfg[1], h = cfg[2], w = cfg[3], k = cfg[4], r = cfg[5], s = cfg[6];
        const int sh = cfg[7], sw = cfg[8], pt = cfg[9], pl = cfg[10], pb = cfg[11], pr = cfg[12];
        const int dh = cfg[13], dw = cfg[14], groups = cfg[15];
        const bool has_bias = cfg[16] != 0;
        std::mt19937_64 rng(static_cast<std::uint64_t>(n * 1000 + c * 100 + k));
        const RefArray x = random_array({n, c, h, w}, rng);
        const RefArray wt = random_array({k, c / groups, r, s}, rng);
        const RefArray bias = random_array({k}, rng);
        OpCase oc{"",
                  "conv2d",
                  Params{{"stride", Ints{sh, sw}},
                         {"padding", Ints{pt, pl, pb, pr}},
                         {"dilation", Ints{dh, dw}},
                         {"groups", std::int64_t{groups}}},
                  {port("x", {n, c, h, w}), port("w", {k, c / groups, r, s})}};
        if (has_bias) oc.inputs.push_back(port("bias", {k}));
        const RefArray y = run_y(oc, {{x}, {wt}, has_bias ? std::vector<RefArray>{bias} : std::vector<RefArray>{}});
        int p = 0, q = 0;
        const std::vector<double> expected = conv_direct(x.data, wt.data, has_bias ? bias.data.data() : nullptr, n, c,
                                                         h, w, k, r, s, sh, sw, pt, pl, pb, pr, dh, dw, groups, p, q);
        QCOMPARE(y.range, ZRange::of_shape({n, k, p, q}));
        QCOMPARE(y.data.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
            QVERIFY2(std::abs(y.data[i] - expected[i]) < kTol, ("element " + std::to_string(i)).c_str());
    }

    void pools_by_hand() {
        // 4×4 image 0…15; 2×2 windows, stride 2.
        std::vector<double> v(16);
        for (size_t i = 0; i < 16; ++i) v[i] = static_cast<double>(i);
        const RefArray x = array_of({1, 1, 4, 4}, v);
        const PortTypes px = port("x", {1, 1, 4, 4});
        QCOMPARE(run_y({"", "max_pool2d", Params{{"kernel", Ints{2, 2}}}, {px}}, {{x}}).data,
                 (std::vector<double>{5, 7, 13, 15}));
        QCOMPARE(run_y({"", "avg_pool2d", Params{{"kernel", Ints{2, 2}}}, {px}}, {{x}}).data,
                 (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
        // 3×3 windows, stride 2, padding 1: the corner window holds x[0:2, 0:2] = {0, 1, 4, 5}.
        const Params padded{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}};
        const RefArray mx = run_y({"", "max_pool2d", padded, {px}}, {{x}});
        QCOMPARE(mx.data, (std::vector<double>{5, 7, 13, 15}));
        const RefArray avg = run_y({"", "avg_pool2d", padded, {px}}, {{x}});
        QCOMPARE(avg.at({0, 0, 0, 0}), (0.0 + 1 + 4 + 5) / 4);
        QCOMPARE(avg.at({0, 0, 1, 1}), (5.0 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9);
        QCOMPARE(avg.at({0, 0, 0, 1}), (1.0 + 2 + 3 + 5 + 6 + 7) / 6);
        Params incl = padded;
        incl.set("count_include_pad", true);
        const RefArray avg_incl = run_y({"", "avg_pool2d", incl, {px}}, {{x}});
        QCOMPARE(avg_incl.at({0, 0, 0, 0}), (0.0 + 1 + 4 + 5) / 9);
        QCOMPARE(avg_incl.at({0, 0, 0, 1}), (1.0 + 2 + 3 + 5 + 6 + 7) / 9);
        QCOMPARE(avg_incl.at({0, 0, 1, 1}), avg.at({0, 0, 1, 1}));
        // NaN propagates through max pooling.
        RefArray xn = x;
        xn.data[1] = std::numeric_limits<double>::quiet_NaN();
        const RefArray mn = run_y({"", "max_pool2d", Params{{"kernel", Ints{2, 2}}}, {px}}, {{xn}});
        QVERIFY(std::isnan(mn.data[0]));
        QCOMPARE(mn.data[1], 7.0);
    }

    void embedding_rows() {
        std::mt19937_64 rng(8);
        const RefArray table = random_array({5, 3}, rng);
        const RefArray ids = array_of({2, 2}, {4, 0, 2, 4});
        const RefArray y =
            run_y({"", "embedding", {}, {port("ids", {2, 2}, DType::i64), port("table", {5, 3})}}, {{ids}, {table}});
        QCOMPARE(y.range, ZRange::of_shape({2, 2, 3}));
        const Coord rows[2][2] = {{4, 0}, {2, 4}};
        for (Coord i = 0; i < 2; ++i)
            for (Coord j = 0; j < 2; ++j)
                for (Coord d = 0; d < 3; ++d) QCOMPARE(y.at({i, j, d}), table.at({rows[i][j], d}));
    }

    // Ids are data: one outside [0, V) cannot be refused at derivation. The row
    // comes out NaN — never a clamped (plausible but wrong) row, never a crash.
    void embedding_out_of_range_ids_give_nan_rows() {
        std::mt19937_64 rng(9);
        const RefArray table = random_array({4, 2}, rng);
        const RefArray ids = array_of({4}, {-1, 4, 1, 1000000});
        const RefArray y =
            run_y({"", "embedding", {}, {port("ids", {4}, DType::i32), port("table", {4, 2})}}, {{ids}, {table}});
        for (Coord d = 0; d < 2; ++d) {
            QVERIFY(std::isnan(y.at({0, d})));
            QVERIFY(std::isnan(y.at({1, d})));
            QCOMPARE(y.at({2, d}), table.at({1, d}));
            QVERIFY(std::isnan(y.at({3, d})));
        }
    }

    void attention_against_naive_data() {
        QTest::addColumn<QList<int>>("cfg");  // B Sq Sk H E Ev causal mask
        QTest::addColumn<double>("scale");    // 0 = default
        QTest::newRow("one-head") << QList<int>{1, 3, 4, 1, 2, 3, 0, 0} << 0.0;
        QTest::newRow("heads") << QList<int>{2, 4, 5, 2, 3, 2, 0, 0} << 0.0;
        QTest::newRow("causal") << QList<int>{2, 5, 5, 3, 2, 2, 1, 0} << 0.0;
        QTest::newRow("causal-rect") << QList<int>{1, 3, 6, 2, 2, 1, 1, 0} << 0.0;
        QTest::newRow("mask") << QList<int>{1, 4, 3, 2, 2, 3, 0, 1} << 0.7;
        QTest::newRow("causal-mask-scale") << QList<int>{2, 4, 4, 2, 3, 2, 1, 1} << -0.25;
    }
    void attention_against_naive() {
        QFETCH(QList<int>, cfg);
        QFETCH(double, scale);
        const int b = cfg[0], sq = cfg[1], sk = cfg[2], heads = cfg[3], e = cfg[4], ev = cfg[5];
        const bool causal = cfg[6] != 0, has_mask = cfg[7] != 0;
        std::mt19937_64 rng(static_cast<std::uint64_t>(b * 100 + sq * 10 + sk));
        const RefArray q = random_array({b, sq, heads * e}, rng), k = random_array({b, sk, heads * e}, rng),
                       v = random_array({b, sk, heads * ev}, rng), mask = random_array({sq, sk}, rng, -1, 1);
        Params p{{"heads", std::int64_t{heads}}, {"causal", causal}};
        if (scale != 0.0) p.set("scale", scale);
        OpCase oc{"",
                  "attention",
                  p,
                  {port("q", {b, sq, heads * e}), port("k", {b, sk, heads * e}), port("v", {b, sk, heads * ev})}};
        if (has_mask) oc.inputs.push_back(port("mask", {sq, sk}));
        const RefArray y = run_y(oc, {{q}, {k}, {v}, has_mask ? std::vector<RefArray>{mask} : std::vector<RefArray>{}});
        const double used = scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(e));
        const std::vector<double> expected = attention_direct(q.data, k.data, v.data, has_mask ? &mask.data : nullptr,
                                                              b, sq, sk, heads, e, ev, used, causal);
        QCOMPARE(y.range, ZRange::of_shape({b, sq, heads * ev}));
        for (size_t i = 0; i < expected.size(); ++i)
            QVERIFY2(std::abs(y.data[i] - expected[i]) < kTol,
                     ("element " + std::to_string(i) + ": " + std::to_string(y.data[i]) + " vs " +
                      std::to_string(expected[i]))
                         .c_str());
    }

    // Causal attention: the first query sees only the first key, so its output
    // row is exactly v's first row, whatever the scores.
    void causal_first_row_is_first_value() {
        std::mt19937_64 rng(21);
        const RefArray q = random_array({1, 3, 4}, rng), k = random_array({1, 3, 4}, rng),
                       v = random_array({1, 3, 4}, rng);
        const RefArray y = run_y({"",
                                  "attention",
                                  Params{{"heads", std::int64_t{2}}, {"causal", true}},
                                  {port("q", {1, 3, 4}), port("k", {1, 3, 4}), port("v", {1, 3, 4})}},
                                 {{q}, {k}, {v}, {}});
        for (Coord c = 0; c < 4; ++c) QCOMPARE(y.at({0, 0, c}), v.at({0, 0, c}));
        // A fully masked row has no softmax: NaN, not a made-up average.
        const RefArray mask = array_of({3, 3}, {-INFINITY, -INFINITY, -INFINITY, 0, 0, 0, 0, 0, 0});
        const RefArray ym =
            run_y({"",
                   "attention",
                   Params{{"heads", std::int64_t{1}}},
                   {port("q", {1, 3, 4}), port("k", {1, 3, 4}), port("v", {1, 3, 4}), port("mask", {3, 3})}},
                  {{q}, {k}, {v}, {mask}});
        QVERIFY(std::isnan(ym.at({0, 0, 0})));
        QVERIFY(!std::isnan(ym.at({0, 1, 0})));
    }
};

QTEST_GUILESS_MAIN(TestOpsShapeConvAttention)
#include "test_ops_shape_conv_attention.moc"
