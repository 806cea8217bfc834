// The table of op cases: every kind of the standard op library applied to
// operands of given types, with the value bounds its reference kernel needs.
// Shared by the projection suites (test_op_projections_boxes: the elementwise and
// linear-algebra families with box checks; test_op_projections_exact: the shape,
// convolution, embedding and attention families with exact ISL images) and the CPU kernel suite,
// which runs every row in every floating dtype the op accepts. See op_check.h
// (HOW TO ADD ROWS) for where a new kind goes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "op_check.h"

namespace tapestry::testing {

using Ints = std::vector<std::int64_t>;

// ---- elementwise, linear algebra, reduction, normalization ---------------------------
inline std::vector<OpCase> elementwise_linalg_cases() {
    std::vector<OpCase> c;
    for (const char *k : {"add", "sub", "mul", "div", "max", "min"}) {
        const std::string kind = k;
        c.push_back({kind + "/same", kind, {}, {port("a", {3, 4}), port("b", {3, 4})}});
        c.push_back({kind + "/broadcast-row", kind, {}, {port("a", {4, 3, 5}), port("b", {1, 5})}});
        c.push_back({kind + "/broadcast-both", kind, {}, {port("a", {4, 1, 3}), port("b", {2, 1})}});
        c.push_back({kind + "/scalar", kind, {}, {port("a", {}), port("b", {2, 3})}});
    }
    c.push_back({"add/scalars", "add", {}, {port("a", {}), port("b", {})}});
    c.push_back({"add/ones", "add", {}, {port("a", {1, 1}), port("b", {1})}});
    for (const char *k : {"relu", "sigmoid", "tanh", "exp"}) {
        c.push_back({std::string(k) + "/3d", k, {}, {port("x", {2, 3, 4})}});
        c.push_back({std::string(k) + "/scalar", k, {}, {port("x", {})}});
    }
    for (const char *k : {"neg", "abs", "leaky_relu", "elu", "selu", "softplus", "softsign", "hard_sigmoid",
                          "hard_swish", "clip"}) {
        c.push_back({std::string(k) + "/3d", k, {}, {port("x", {2, 3, 4})}});
        c.push_back({std::string(k) + "/scalar", k, {}, {port("x", {})}});
    }
    c.push_back({"clip/bounds", "clip", Params{{"min", -0.25}, {"max", 0.5}}, {port("x", {3, 5})}});
    c.push_back({"leaky_relu/alpha", "leaky_relu", Params{{"alpha", 0.3}}, {port("x", {6}, DType::bf16)}});
    {
        OpCase l{"log/positive", "log", {}, {port("x", {4, 5})}};
        l.lo = 0.1;
        c.push_back(l);
        OpCase r{"reciprocal/positive", "reciprocal", {}, {port("x", {3, 2})}};
        r.lo = 0.1;
        c.push_back(r);
    }
    c.push_back({"erf/3d", "erf", {}, {port("x", {2, 3, 4})}});
    c.push_back({"erf/scalar", "erf", {}, {port("x", {})}});
    c.push_back({"cast/f32-to-f16", "cast", Params{{"to", std::string("f16")}}, {port("x", {3, 5})}});
    c.push_back({"cast/f32-to-i64", "cast", Params{{"to", std::string("i64")}}, {port("x", {2, 2, 3})}});
    c.push_back({"cast/i32-to-bf16", "cast", Params{{"to", std::string("bf16")}}, {port("x", {4}, DType::i32)}});
    c.push_back({"cast/i64-to-bool", "cast", Params{{"to", std::string("bool")}}, {port("x", {}, DType::i64)}});
    c.push_back({"gelu/erf", "gelu", {}, {port("x", {5, 6})}});
    c.push_back({"gelu/tanh", "gelu", Params{{"approximate", std::string("tanh")}}, {port("x", {5, 6}, DType::bf16)}});
    {
        OpCase s{"sqrt/positive", "sqrt", {}, {port("x", {4, 5})}};
        s.lo = 0.1;
        c.push_back(s);
        OpCase p{"pow/fractional", "pow", Params{{"exponent", 1.5}}, {port("x", {3, 7})}};
        p.lo = 0.1;
        c.push_back(p);
        OpCase q{"pow/int-exponent", "pow", Params{{"exponent", std::int64_t{3}}}, {port("x", {6})}};
        c.push_back(q);
    }

    c.push_back({"matmul/2d", "matmul", {}, {port("a", {5, 4}), port("b", {4, 6})}});
    c.push_back({"matmul/batched", "matmul", {}, {port("a", {2, 3, 4}), port("b", {2, 4, 5})}});
    c.push_back({"matmul/broadcast-batch", "matmul", {}, {port("a", {3, 1, 2, 4}), port("b", {2, 4, 3})}});
    c.push_back({"matmul/batch-one-side", "matmul", {}, {port("a", {4, 3}), port("b", {2, 3, 5})}});
    c.push_back({"linear/no-bias", "linear", {}, {port("x", {6, 5}), port("w", {5, 4})}});
    c.push_back({"linear/bias", "linear", {}, {port("x", {2, 3, 5}), port("w", {5, 4}), port("bias", {4})}});
    c.push_back({"linear/vector", "linear", {}, {port("x", {5}), port("w", {5, 3}), port("bias", {3})}});
    c.push_back({"partial_matmul/even", "partial_matmul", Params{{"parts", std::int64_t{4}}},
                 {port("a", {3, 8}), port("b", {8, 2})}});
    c.push_back({"partial_matmul/clipped", "partial_matmul", Params{{"parts", std::int64_t{4}}},
                 {port("a", {2, 3, 10}), port("b", {10, 4})}});
    c.push_back({"partial_matmul/broadcast-batch", "partial_matmul", Params{{"parts", std::int64_t{2}}},
                 {port("a", {3, 1, 2, 7}), port("b", {2, 7, 3})}});

    for (const char *k : {"reduce_sum", "reduce_mean", "reduce_max"}) {
        const std::string kind = k;
        c.push_back({kind + "/last-keep", kind, Params{{"axes", Ints{-1}}}, {port("x", {3, 4, 5})}});
        c.push_back({kind + "/middle-drop", kind, Params{{"axes", Ints{1}}, {"keepdims", false}},
                     {port("x", {3, 4, 5})}});
        c.push_back({kind + "/two-axes", kind, Params{{"axes", Ints{2, 0}}}, {port("x", {3, 4, 5})}});
        c.push_back({kind + "/all-drop", kind, Params{{"axes", Ints{0, 1}}, {"keepdims", false}},
                     {port("x", {4, 3})}});
    }
    c.push_back({"softmax/last", "softmax", {}, {port("x", {3, 6})}});
    c.push_back({"softmax/first", "softmax", Params{{"axis", std::int64_t{0}}}, {port("x", {4, 3, 2})}});
    c.push_back({"softmax/1d", "softmax", {}, {port("x", {7})}});

    c.push_back({"layernorm/last", "layernorm", {}, {port("x", {4, 6}), port("gamma", {6}), port("beta", {6})}});
    c.push_back({"layernorm/two-axes", "layernorm", Params{{"axis", std::int64_t{-2}}},
                 {port("x", {3, 4, 5}), port("gamma", {4, 5})}});
    c.push_back({"layernorm/beta-only", "layernorm", {}, {port("x", {3, 5}), port("beta", {5})}});
    c.push_back({"layernorm/plain", "layernorm", Params{{"axis", std::int64_t{0}}}, {port("x", {3, 4})}});
    {
        OpCase b{"batchnorm/4d", "batchnorm", Params{{"epsilon", 1e-3}},
                 {port("x", {2, 3, 4, 2}), port("scale", {3}), port("bias", {3}), port("mean", {3}), port("var", {3})}};
        b.lo = 0.1;  // var must stay positive
        c.push_back(b);
        OpCase m{"batchnorm/2d", "batchnorm", {},
                 {port("x", {5, 4}), port("scale", {4}), port("bias", {4}), port("mean", {4}), port("var", {4})}};
        m.lo = 0.1;
        c.push_back(m);
    }
    c.push_back({"rmsnorm/gamma", "rmsnorm", {}, {port("x", {4, 6}), port("gamma", {6})}});
    c.push_back({"rmsnorm/plain", "rmsnorm", Params{{"axis", std::int64_t{1}}}, {port("x", {2, 3, 4})}});
    c.push_back({"move/all_gather", "move", Params{{"collective", std::string("all_gather")}}, {port("x", {3, 4, 2})}});
    // fused (ops/fused.h): a head and its epilogues; extra operands read through
    // the consumer's projection composed with the head's output projection.
    auto fused = [](std::string chain, std::vector<std::int64_t> head, std::vector<std::int64_t> chain_ports) {
        Params p{{"chain", std::move(chain)}, {"head_operands", std::move(head)}};
        if (!chain_ports.empty()) p.set("chain_ports", std::move(chain_ports));
        return p;
    };
    c.push_back({"fused/linear-relu", "fused", fused("linear;relu", {1, 1, 1}, {-1}),
                 {ports("x", {{6, 5}, {5, 4}, {4}})}});
    c.push_back({"fused/matmul-bias-gelu", "fused", fused("matmul;add;gelu{approximate=\"tanh\"}", {1, 1}, {0, -1}),
                 {ports("x", {{2, 3, 4}, {4, 5}, {5}})}});
    c.push_back({"fused/elementwise", "fused", fused("add;sub;tanh;mul", {1, 1}, {1, -1, 0}),
                 {ports("x", {{3, 4}, {4}, {1, 4}, {3, 1}})}});
    c.push_back({"fused/conv-relu", "fused", fused("conv2d{padding=[1,1,1,1]};relu", {1, 1, 0}, {-1}),
                 {ports("x", {{1, 2, 5, 5}, {3, 2, 3, 3}})}});
    return c;
}

// ---- shape, convolution, embedding, attention -----------------------------------------
inline std::vector<OpCase> shape_conv_attention_cases() {
    std::vector<OpCase> c;
    // transpose
    c.push_back({"transpose/perm", "transpose", Params{{"perm", Ints{2, 0, 1}}}, {port("x", {2, 3, 4})}});
    c.push_back({"transpose/default", "transpose", {}, {port("x", {3, 5})}});
    c.push_back({"transpose/rank1", "transpose", {}, {port("x", {4}, DType::i64)}});
    c.push_back({"transpose/scalar", "transpose", {}, {port("x", {})}});
    // reshape
    c.push_back({"reshape/split", "reshape", Params{{"shape", Ints{3, 4}}}, {port("x", {12})}});
    c.push_back({"reshape/merge", "reshape", Params{{"shape", Ints{6, 4}}}, {port("x", {2, 3, 4})}});
    c.push_back({"reshape/refined", "reshape", Params{{"shape", Ints{8, 3}}}, {port("x", {4, 6})}});
    c.push_back({"reshape/no-refinement", "reshape", Params{{"shape", Ints{3, 2}}}, {port("x", {2, 3})}});
    c.push_back({"reshape/mixed-groups", "reshape", Params{{"shape", Ints{3, 2, 2, 6}}}, {port("x", {2, 3, 12})}});
    c.push_back({"reshape/units", "reshape", Params{{"shape", Ints{2, 1, 3}}}, {port("x", {1, 6, 1})}});
    c.push_back({"reshape/batch-split", "reshape", Params{{"shape", Ints{2, 4, -1}}}, {port("x", {2, 12})}});
    c.push_back({"reshape/from-scalar", "reshape", Params{{"shape", Ints{1, 1}}}, {port("x", {})}});
    // concat
    c.push_back(
        {"concat/rows", "concat", Params{{"axis", std::int64_t{0}}}, {ports("inputs", {{1, 3}, {3, 3}, {2, 3}})}});
    c.push_back(
        {"concat/last", "concat", Params{{"axis", std::int64_t{-1}}}, {ports("inputs", {{2, 2, 3}, {2, 2, 1}})}});
    c.push_back({"concat/empty-piece",
                 "concat",
                 Params{{"axis", std::int64_t{1}}},
                 {ports("inputs", {{2, 2}, {2, 0}, {2, 3}})}});
    c.push_back({"concat/single", "concat", Params{{"axis", std::int64_t{0}}}, {ports("inputs", {{4}})}});
    // slice
    c.push_back({"slice/steps",
                 "slice",
                 Params{{"starts", Ints{1, 7}}, {"ends", Ints{9, 0}}, {"steps", Ints{3, -2}}},
                 {port("x", {10, 8})}});
    c.push_back({"slice/negative-start",
                 "slice",
                 Params{{"starts", Ints{-3}}, {"ends", Ints{100}}, {"axes", Ints{1}}},
                 {port("x", {4, 5})}});
    c.push_back({"slice/reverse",
                 "slice",
                 Params{{"starts", Ints{-1}}, {"ends", Ints{-100}}, {"steps", Ints{-1}}},
                 {port("x", {6})}});
    c.push_back({"slice/middle-axis",
                 "slice",
                 Params{{"starts", Ints{1}}, {"ends", Ints{6}}, {"axes", Ints{-2}}, {"steps", Ints{2}}},
                 {port("x", {2, 7, 3})}});
    c.push_back({"slice/empty", "slice", Params{{"starts", Ints{3}}, {"ends", Ints{1}}}, {port("x", {5, 2})}});
    // conv2d
    c.push_back({"conv2d/plain", "conv2d", {}, {port("x", {2, 3, 5, 4}), port("w", {4, 3, 3, 2})}});
    c.push_back({"conv2d/pad",
                 "conv2d",
                 Params{{"padding", Ints{1, 2, 0, 1}}},
                 {port("x", {1, 2, 5, 5}), port("w", {3, 2, 3, 3}), port("bias", {3})}});
    c.push_back({"conv2d/stride-dilation",
                 "conv2d",
                 Params{{"stride", Ints{2, 1}}, {"dilation", Ints{2, 2}}, {"padding", Ints{0, 1, 1, 0}}},
                 {port("x", {2, 2, 8, 7}), port("w", {3, 2, 2, 3}), port("bias", {3})}});
    c.push_back({"conv2d/groups",
                 "conv2d",
                 Params{{"groups", std::int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}},
                 {port("x", {1, 4, 4, 4}), port("w", {6, 2, 3, 3}), port("bias", {6})}});
    c.push_back({"conv2d/depthwise",
                 "conv2d",
                 Params{{"groups", std::int64_t{3}}, {"stride", Ints{2, 2}}},
                 {port("x", {2, 3, 5, 5}), port("w", {3, 1, 2, 2})}});
    c.push_back({"conv2d/pointwise-stride",
                 "conv2d",
                 Params{{"stride", Ints{2, 3}}},
                 {port("x", {1, 3, 5, 7}), port("w", {2, 3, 1, 1})}});
    // pools
    c.push_back({"max_pool2d/default-stride", "max_pool2d", Params{{"kernel", Ints{2, 3}}}, {port("x", {2, 2, 6, 7})}});
    c.push_back({"max_pool2d/overlap-pad",
                 "max_pool2d",
                 Params{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 1}}, {"padding", Ints{1, 2, 2, 1}}},
                 {port("x", {1, 3, 6, 5})}});
    c.push_back({"max_pool2d/gaps",
                 "max_pool2d",
                 Params{{"kernel", Ints{1, 2}}, {"stride", Ints{2, 3}}},
                 {port("x", {1, 2, 5, 8})}});
    c.push_back({"avg_pool2d/pad",
                 "avg_pool2d",
                 Params{{"kernel", Ints{3, 2}}, {"stride", Ints{2, 1}}, {"padding", Ints{1, 1, 1, 0}}},
                 {port("x", {2, 1, 5, 5})}});
    c.push_back({"avg_pool2d/include-pad",
                 "avg_pool2d",
                 Params{{"kernel", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}, {"count_include_pad", true}},
                 {port("x", {1, 2, 4, 3})}});
    // embedding
    {
        OpCase e{"embedding/2d-ids", "embedding", {}, {port("ids", {2, 3}, DType::i64), port("table", {6, 4})}};
        e.int_bound = 6;
        c.push_back(e);
        OpCase s{"embedding/scalar-id", "embedding", {}, {port("ids", {}, DType::i32), port("table", {5, 3})}};
        s.int_bound = 5;
        c.push_back(s);
        OpCase r{"embedding/1d", "embedding", {}, {port("ids", {7}, DType::i32), port("table", {3, 5}, DType::bf16)}};
        r.int_bound = 3;
        c.push_back(r);
    }
    // gather (ONNX Gather: any axis, negative indices wrap)
    {
        OpCase a0{"gather/axis0", "gather", {}, {port("data", {5, 3}), port("indices", {2, 2}, DType::i64)}};
        a0.int_bound = 5;
        c.push_back(a0);
        OpCase a1{"gather/axis1-3d", "gather", Params{{"axis", std::int64_t{1}}},
                  {port("data", {2, 4, 3}), port("indices", {3}, DType::i32)}};
        a1.int_bound = 4;
        c.push_back(a1);
        OpCase sc{"gather/scalar-index-last-axis", "gather", Params{{"axis", std::int64_t{-1}}},
                  {port("data", {3, 4}, DType::i64), port("indices", {}, DType::i64)}};
        sc.int_bound = 4;
        c.push_back(sc);
    }
    // attention
    c.push_back({"attention/one-head",
                 "attention",
                 Params{{"heads", std::int64_t{1}}},
                 {port("q", {2, 3, 4}), port("k", {2, 5, 4}), port("v", {2, 5, 3})}});
    c.push_back({"attention/heads",
                 "attention",
                 Params{{"heads", std::int64_t{2}}},
                 {port("q", {2, 4, 6}), port("k", {2, 3, 6}), port("v", {2, 3, 4})}});
    c.push_back({"attention/causal-mask",
                 "attention",
                 Params{{"heads", std::int64_t{3}}, {"causal", true}},
                 {port("q", {1, 4, 6}), port("k", {1, 4, 6}), port("v", {1, 4, 3}), port("mask", {4, 4})}});
    c.push_back({"attention/scale-rect",
                 "attention",
                 Params{{"heads", std::int64_t{2}}, {"scale", 0.3}, {"causal", true}},
                 {port("q", {1, 2, 4}), port("k", {1, 5, 4}), port("v", {1, 5, 6})}});
    return c;
}

// Every row of both tables.
inline std::vector<OpCase> all_op_cases() {
    std::vector<OpCase> all = elementwise_linalg_cases();
    for (OpCase &c : shape_conv_attention_cases()) all.push_back(std::move(c));
    return all;
}

}  // namespace tapestry::testing
