#!/usr/bin/env python3
"""Builds the three ONNX models of the peer benchmark (README.md) with the `onnx`
package, opset 17, fp32, random weights from a fixed seed:

  mlp.onnx         batch 512, 1024 -> 4096 -> 4096 -> 4096 -> 4096, each layer a
                   Gemm with bias (weights [out, in], transB=1, as PyTorch exports
                   nn.Linear); GELU (erf form, as exported: Div, Erf, Add, Mul, Mul)
                   after layers 1 and 3, ReLU after layer 2.
  gpt2_block.onnx  one GPT-2-small block, batch 8, sequence 256, width 768, 12 heads:
                   LayerNormalization, fused QKV MatMul+Add, Slice into q/k/v,
                   Reshape+Transpose into heads, MatMul+Mul(scale)+Add(causal mask)+
                   Softmax+MatMul attention, output projection, residual, second
                   LayerNormalization, MLP 768 -> 3072 -> 768 with GPT-2's tanh GELU
                   (Pow, Mul, Add, Tanh), residual.
  convnet.onnx     batch 32 at 3x64x64: three Conv(3x3, pad 1)+BatchNormalization+Relu
                   blocks (32, 64, 128 channels) with MaxPool 2x2 after the first two,
                   AveragePool 16x16, Flatten, Gemm to 10 classes, Softmax.

usage: generate_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
rng = np.random.default_rng(20240907)


def weight(name, shape, fan_in):
    """Uniform in ±1/sqrt(fan_in) (PyTorch's default init), so activations stay O(1)."""
    bound = 1.0 / np.sqrt(fan_in)
    return numpy_helper.from_array(rng.uniform(-bound, bound, size=shape).astype(np.float32), name)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def save(model, path):
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(f"wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB)")


def model_of(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="tapestry-bench")
    # IR version 8 (ONNX 1.10–1.12) is what opset 17 needs; newer `onnx` packages
    # stamp a higher one that older readers (Debian's libonnx 1.12) refuse.
    model.ir_version = 8
    return model


def gelu_erf(nodes, inits, x, prefix):
    """0.5 * x * (1 + erf(x / sqrt(2))), the node pattern torch.onnx exports for nn.GELU()."""
    if "sqrt2" not in {i.name for i in inits}:
        inits += [const("sqrt2", np.sqrt(2.0)), const("one", 1.0), const("half", 0.5)]
    nodes += [
        helper.make_node("Div", [x, "sqrt2"], [f"{prefix}_div"], name=f"{prefix}_div"),
        helper.make_node("Erf", [f"{prefix}_div"], [f"{prefix}_erf"], name=f"{prefix}_erf"),
        helper.make_node("Add", [f"{prefix}_erf", "one"], [f"{prefix}_add"], name=f"{prefix}_add"),
        helper.make_node("Mul", [x, f"{prefix}_add"], [f"{prefix}_mul"], name=f"{prefix}_mul"),
        helper.make_node("Mul", [f"{prefix}_mul", "half"], [f"{prefix}_out"], name=f"{prefix}_out"),
    ]
    return f"{prefix}_out"


def gelu_tanh(nodes, inits, x, prefix):
    """GPT-2's gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."""
    inits += [const(f"{prefix}_three", 3.0), const(f"{prefix}_c", 0.044715),
              const(f"{prefix}_k", np.sqrt(2.0 / np.pi)), const(f"{prefix}_one", 1.0), const(f"{prefix}_half", 0.5)]
    nodes += [
        helper.make_node("Pow", [x, f"{prefix}_three"], [f"{prefix}_cube"], name=f"{prefix}_pow"),
        helper.make_node("Mul", [f"{prefix}_cube", f"{prefix}_c"], [f"{prefix}_cc"], name=f"{prefix}_mul_c"),
        helper.make_node("Add", [x, f"{prefix}_cc"], [f"{prefix}_inner"], name=f"{prefix}_add_inner"),
        helper.make_node("Mul", [f"{prefix}_inner", f"{prefix}_k"], [f"{prefix}_scaled"], name=f"{prefix}_mul_k"),
        helper.make_node("Tanh", [f"{prefix}_scaled"], [f"{prefix}_tanh"], name=f"{prefix}_tanh"),
        helper.make_node("Add", [f"{prefix}_tanh", f"{prefix}_one"], [f"{prefix}_1p"], name=f"{prefix}_add_one"),
        helper.make_node("Mul", [x, f"{prefix}_1p"], [f"{prefix}_xm"], name=f"{prefix}_mul_x"),
        helper.make_node("Mul", [f"{prefix}_xm", f"{prefix}_half"], [f"{prefix}_out"], name=f"{prefix}_mul_half"),
    ]
    return f"{prefix}_out"


def mlp():
    batch, widths = 512, [1024, 4096, 4096, 4096, 4096]
    nodes, inits = [], []
    x = "x"
    for layer in range(4):
        fin, fout = widths[layer], widths[layer + 1]
        w, b = f"fc{layer + 1}.weight", f"fc{layer + 1}.bias"
        inits += [weight(w, (fout, fin), fin), weight(b, (fout,), fin)]
        y = f"fc{layer + 1}_out"
        nodes.append(helper.make_node("Gemm", [x, w, b], [y], name=f"fc{layer + 1}", transB=1))
        if layer in (0, 2):
            y = gelu_erf(nodes, inits, y, f"gelu{layer + 1}")
        elif layer == 1:
            nodes.append(helper.make_node("Relu", [y], [f"relu{layer + 1}_out"], name=f"relu{layer + 1}"))
            y = f"relu{layer + 1}_out"
        x = y
    nodes.append(helper.make_node("Identity", [x], ["y"], name="output"))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, widths[0]])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, widths[-1]])], inits)
    return model_of(graph)


def gpt2_block():
    B, S, D, H = 8, 256, 768, 12
    E = D // H
    nodes, inits = [], []

    def layernorm(x, name):
        inits.extend([const(f"{name}.weight", np.ones(D) + rng.uniform(-0.1, 0.1, D)),
                      const(f"{name}.bias", rng.uniform(-0.1, 0.1, D))])
        nodes.append(helper.make_node("LayerNormalization", [x, f"{name}.weight", f"{name}.bias"], [f"{name}_out"],
                                      name=name, axis=-1, epsilon=1e-5))
        return f"{name}_out"

    def linear(x, name, fin, fout):
        inits.extend([weight(f"{name}.weight", (fin, fout), fin), weight(f"{name}.bias", (fout,), fin)])
        nodes.append(helper.make_node("MatMul", [x, f"{name}.weight"], [f"{name}_mm"], name=f"{name}_matmul"))
        nodes.append(helper.make_node("Add", [f"{name}_mm", f"{name}.bias"], [f"{name}_out"], name=f"{name}_bias"))
        return f"{name}_out"

    ln1 = layernorm("x", "ln_1")
    qkv = linear(ln1, "c_attn", D, 3 * D)
    inits += [ints("axis2", [2]), ints("heads_shape", [B, S, H, E]), ints("merge_shape", [B, S, D])]
    heads = {}
    for i, part in enumerate("qkv"):
        inits += [ints(f"{part}_start", [i * D]), ints(f"{part}_end", [(i + 1) * D])]
        nodes.append(helper.make_node("Slice", [qkv, f"{part}_start", f"{part}_end", "axis2"], [f"{part}"],
                                      name=f"split_{part}"))
        nodes.append(helper.make_node("Reshape", [part, "heads_shape"], [f"{part}_heads"], name=f"{part}_reshape"))
        perm = [0, 2, 3, 1] if part == "k" else [0, 2, 1, 3]  # k as [B, H, E, S] for q·kᵀ
        nodes.append(helper.make_node("Transpose", [f"{part}_heads"], [f"{part}_t"], name=f"{part}_transpose",
                                      perm=perm))
        heads[part] = f"{part}_t"
    mask = np.triu(np.full((S, S), -1e4, dtype=np.float32), k=1)  # GPT-2's masked_bias
    inits += [const("scale", 1.0 / np.sqrt(E)), const("causal_mask", mask)]
    nodes += [
        helper.make_node("MatMul", [heads["q"], heads["k"]], ["scores"], name="attn_scores"),
        helper.make_node("Mul", ["scores", "scale"], ["scores_scaled"], name="attn_scale"),
        helper.make_node("Add", ["scores_scaled", "causal_mask"], ["scores_masked"], name="attn_mask"),
        helper.make_node("Softmax", ["scores_masked"], ["probs"], name="attn_softmax", axis=-1),
        helper.make_node("MatMul", ["probs", heads["v"]], ["context"], name="attn_context"),
        helper.make_node("Transpose", ["context"], ["context_t"], name="context_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["context_t", "merge_shape"], ["attn_out"], name="context_merge"),
    ]
    proj = linear("attn_out", "c_proj", D, D)
    nodes.append(helper.make_node("Add", ["x", proj], ["h"], name="residual_1"))
    ln2 = layernorm("h", "ln_2")
    fc = linear(ln2, "c_fc", D, 4 * D)
    act = gelu_tanh(nodes, inits, fc, "gelu")
    out = linear(act, "mlp_proj", 4 * D, D)
    nodes.append(helper.make_node("Add", ["h", out], ["y"], name="residual_2"))
    graph = helper.make_graph(nodes, "gpt2_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])], inits)
    return model_of(graph)


def convnet():
    N = 32
    nodes, inits = [], []
    x, channels = "images", 3
    for i, (cout, pool) in enumerate([(32, True), (64, True), (128, False)], start=1):
        inits += [weight(f"conv{i}.weight", (cout, channels, 3, 3), channels * 9), weight(f"conv{i}.bias", (cout,), channels * 9),
                  const(f"bn{i}.scale", 1.0 + rng.uniform(-0.1, 0.1, cout)), const(f"bn{i}.bias", rng.uniform(-0.1, 0.1, cout)),
                  const(f"bn{i}.mean", rng.uniform(-0.1, 0.1, cout)), const(f"bn{i}.var", rng.uniform(0.5, 1.5, cout))]
        nodes += [
            helper.make_node("Conv", [x, f"conv{i}.weight", f"conv{i}.bias"], [f"conv{i}_out"], name=f"conv{i}",
                             kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", [f"conv{i}_out", f"bn{i}.scale", f"bn{i}.bias", f"bn{i}.mean",
                                                    f"bn{i}.var"], [f"bn{i}_out"], name=f"bn{i}", epsilon=1e-5),
            helper.make_node("Relu", [f"bn{i}_out"], [f"relu{i}_out"], name=f"relu{i}"),
        ]
        x = f"relu{i}_out"
        if pool:
            nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}_out"], name=f"pool{i}", kernel_shape=[2, 2],
                                          strides=[2, 2]))
            x = f"pool{i}_out"
        channels = cout
    inits += [weight("fc.weight", (10, 128), 128), weight("fc.bias", (10,), 128)]
    nodes += [
        helper.make_node("AveragePool", [x], ["gap"], name="global_pool", kernel_shape=[16, 16]),
        helper.make_node("Flatten", ["gap"], ["features"], name="flatten", axis=1),
        helper.make_node("Gemm", ["features", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(nodes, "convnet",
                              [helper.make_tensor_value_info("images", TensorProto.FLOAT, [N, 3, 64, 64])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [N, 10])], inits)
    return model_of(graph)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(mlp(), os.path.join(out, "mlp.onnx"))
    save(gpt2_block(), os.path.join(out, "gpt2_block.onnx"))
    save(convnet(), os.path.join(out, "convnet.onnx"))


if __name__ == "__main__":
    main()
