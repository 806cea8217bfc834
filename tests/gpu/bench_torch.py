#!/usr/bin/env python3
"""PyTorch baseline of the GPU benchmark (issue 18, docs/gpu.md).

The block of projects/benchmarks/gpt2_block_bf16.tapestry.json — GPT-2 small, batch 8,
sequence 1024, width 768, 12 heads, causal, bf16 — in PyTorch eager and under
torch.compile, forward only, with the project's parameter shapes (Conv1D layout:
weights [in, out], y = x·W + b, as Hugging Face's GPT-2) and its operation
order: ln_1, c_attn, the q/k/v slices, causal attention (SDPA), c_proj, the
residual add, ln_2, c_fc, gelu (tanh), mlp_proj, the residual add. Then
the block's causal attention alone (SDPA on its q/k/v slices) and torch.matmul
alone on each large GEMM shape of the block.

Timing: CUDA events around each call, after warm-up calls (which also compile),
the median of --iters calls. Prints one JSON line per measurement:
  {"name": "torch_eager", "ms": 1.23, "device": "NVIDIA H200", ...}
  {"name": "torch_matmul_m8192_k768_n2304", "ms": ..., "tflops": ..., ...}
Runs on the lent GPU machine (Python 3.12, torch with CUDA); needs a GPU.
"""

import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

BATCH, SEQUENCE, WIDTH, HEADS = 8, 1024, 768, 12
EPSILON = 1e-5
# The large GEMMs of the block as (k, n) with m = batch × sequence = 8192:
# c_attn, c_proj, c_fc, mlp_proj.
GEMMS = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]


def uniform(shape, generator, device, dtype):
    """Uniform in [-1, 1), as make_random_inputs draws a project's values."""
    return (torch.rand(shape, generator=generator, device=device, dtype=torch.float32) * 2 - 1).to(dtype)


def make_parameters(device, dtype, seed):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    shapes = {
        "ln1_gamma": (WIDTH,), "ln1_beta": (WIDTH,),
        "w_qkv": (WIDTH, 3 * WIDTH), "b_qkv": (3 * WIDTH,),
        "w_proj": (WIDTH, WIDTH), "b_proj": (WIDTH,),
        "ln2_gamma": (WIDTH,), "ln2_beta": (WIDTH,),
        "w_fc": (WIDTH, 4 * WIDTH), "b_fc": (4 * WIDTH,),
        "w_out": (4 * WIDTH, WIDTH), "b_out": (WIDTH,),
    }
    params = {name: uniform(shape, g, device, dtype) for name, shape in shapes.items()}
    x = uniform((BATCH, SEQUENCE, WIDTH), g, device, dtype)
    return params, x


def conv1d(x, w, b):
    """y = x·W + b with W [in, out], one addmm over the flattened rows (HF GPT-2's Conv1D)."""
    rows = x.reshape(-1, x.shape[-1])
    return torch.addmm(b, rows, w).view(*x.shape[:-1], w.shape[-1])


def block(x, p):
    b, t, c = x.shape
    ln1 = F.layer_norm(x, (c,), p["ln1_gamma"], p["ln1_beta"], EPSILON)
    qkv = conv1d(ln1, p["w_qkv"], p["b_qkv"])
    q, k, v = qkv[..., :c], qkv[..., c:2 * c], qkv[..., 2 * c:]
    heads = lambda z: z.view(b, t, HEADS, c // HEADS).transpose(1, 2)  # noqa: E731
    attn = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
    attn = attn.transpose(1, 2).reshape(b, t, c)
    proj = conv1d(attn, p["w_proj"], p["b_proj"])
    h = x + proj
    ln2 = F.layer_norm(h, (c,), p["ln2_gamma"], p["ln2_beta"], EPSILON)
    fc = conv1d(ln2, p["w_fc"], p["b_fc"])
    gelu_out = F.gelu(fc, approximate="tanh")
    mlp_out = conv1d(gelu_out, p["w_out"], p["b_out"])
    return h + mlp_out


def time_ms(fn, warmup, iters):
    """Median and minimum milliseconds of `iters` calls, each between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)


def emit(record, common):
    print(json.dumps({**record, **common}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=50, help="timed calls per measurement (median; at least 20)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls first (torch.compile compiles in the first)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (e.g. without a C compiler)")
    args = ap.parse_args()
    if args.iters < 20:
        ap.error("--iters must be at least 20")
    if not torch.cuda.is_available():
        print(json.dumps({"name": "torch", "error": "no CUDA device: torch.cuda.is_available() is False"}), flush=True)
        return 1

    device, dtype = "cuda", torch.bfloat16
    common = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "warmup": args.warmup,
        "iters": args.iters,
    }
    params, x = make_parameters(device, dtype, args.seed)
    shape = {"batch": BATCH, "sequence": SEQUENCE, "width": WIDTH, "heads": HEADS, "dtype": "bf16"}

    with torch.inference_mode():
        eager = lambda: block(x, params)  # noqa: E731
        ms, best = time_ms(eager, args.warmup, args.iters)
        emit({"name": "torch_eager", "ms": ms, "min_ms": best, **shape}, common)

        if not args.no_compile:
            compiled_block = torch.compile(block)
            compiled = lambda: compiled_block(x, params)  # noqa: E731
            try:
                ms, best = time_ms(compiled, max(args.warmup, 3), args.iters)
                reference, mine = eager().float(), compiled().float()
                scale = max(1.0, reference.abs().max().item())
                emit({"name": "torch_compile", "ms": ms, "min_ms": best,
                      "max_abs_difference_vs_eager": (mine - reference).abs().max().item(), "scale": scale, **shape},
                     common)
            except Exception as e:  # noqa: BLE001 — a compiler failure is a result to report, not a crash
                emit({"name": "torch_compile", "error": f"{type(e).__name__}: {e}"}, common)

        # The block's attention alone: SDPA (causal) on q, k, v as the block's slices of
        # one qkv tensor give them, the attention step of our plan beside it.
        g = torch.Generator(device=device)
        g.manual_seed(args.seed)
        qkv = uniform((BATCH, SEQUENCE, 3 * WIDTH), g, device, dtype)
        heads = lambda z: z.view(BATCH, SEQUENCE, HEADS, WIDTH // HEADS).transpose(1, 2)  # noqa: E731
        q, k, v = (heads(qkv[..., i * WIDTH:(i + 1) * WIDTH]) for i in range(3))
        ms, best = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), args.warmup, args.iters)
        flops = 4.0 * BATCH * HEADS * SEQUENCE * SEQUENCE * (WIDTH // HEADS) / 2  # causal: half the scores
        emit({"name": "torch_sdpa_causal", "ms": ms, "min_ms": best, "tflops": flops / (ms * 1e-3) / 1e12, **shape},
             common)

        m = BATCH * SEQUENCE
        g.manual_seed(args.seed)
        for k, n in GEMMS:
            a, b = uniform((m, k), g, device, dtype), uniform((k, n), g, device, dtype)
            ms, best = time_ms(lambda: torch.matmul(a, b), args.warmup, args.iters)
            emit({"name": f"torch_matmul_m{m}_k{k}_n{n}", "m": m, "k": k, "n": n, "dtype": "bf16", "ms": ms,
                  "min_ms": best, "tflops": 2.0 * m * k * n / (ms * 1e-3) / 1e12}, common)
    return 0


if __name__ == "__main__":
    sys.exit(main())
