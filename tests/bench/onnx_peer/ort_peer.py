#!/usr/bin/env python3
"""ONNX Runtime's side of the peer benchmark, and the final report.

  ort_peer.py inputs MODEL.onnx DIR          random inputs (seed 0, uniform [-1, 1)) as DIR/<input name>.npy
  ort_peer.py run MODEL.onnx INPUTS OUTPUTS JSON [--threads 2] [--runs N] [--warmup W]
        times session.run with intra_op_num_threads=T, inter_op_num_threads=1, sequential
        execution, all graph optimizations; writes the outputs of the last run and
        {model, runs_ms, median_ms} to JSON
  ort_peer.py report WORK
        prints per model the medians (over every round), the ratio ORT/ours (>= 1
        means we are faster), the max error of our outputs against ORT's, and for
        the MLP its FLOP rate against the oneDNN 4096^3 peak measured by
        bench_onnx_peer in the same run (see run_peer.sh for WORK's layout)
"""
import json
import os
import statistics
import sys
import time

import numpy as np


def cmd_inputs(model_path, out_dir):
    import onnx
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    os.makedirs(out_dir, exist_ok=True)
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        np.save(os.path.join(out_dir, inp.name + ".npy"), rng.uniform(-1, 1, size=shape).astype(np.float32))


def cmd_run(model_path, inputs_dir, outputs_dir, json_path, threads=2, runs=10, warmup=3):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(inputs_dir, i.name + ".npy")) for i in session.get_inputs()}
    times, outputs = [], None
    for i in range(warmup + runs):
        t = time.perf_counter()
        outputs = session.run(None, feeds)
        ms = (time.perf_counter() - t) * 1e3
        if i >= warmup:
            times.append(ms)
    os.makedirs(outputs_dir, exist_ok=True)
    for meta, value in zip(session.get_outputs(), outputs):
        np.save(os.path.join(outputs_dir, meta.name + ".npy"), value)
    name = os.path.splitext(os.path.basename(model_path))[0]
    result = {"model": name, "runs_ms": times, "median_ms": statistics.median(times),
              "onnxruntime": ort.__version__, "threads": threads}
    with open(json_path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"ort   {name:<12} median {result['median_ms']:9.2f} ms  min {min(times):9.2f} ms  ({runs} runs)", flush=True)


def merged(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        runs += data["models"][0]["runs_ms"] if "models" in data else data["runs_ms"]
    return runs, data


def cmd_report(work):
    """Reads WORK/ort/<model>.<round>.json, WORK/ours/<model>.<round>.json,
    WORK/peak.json and the outputs WORK/ort_out/<model>/, WORK/ours_out/<model>/."""
    # A name "<model>+<variant>" (e.g. mlp+bf16) is our run of <model> with other
    # options, held against the same ONNX Runtime runs and outputs.
    order = ["mlp", "gpt2_block", "convnet"]
    models = sorted({f.split(".")[0] for f in os.listdir(os.path.join(work, "ours"))},
                    key=lambda m: (order.index(m.split("+")[0]) if m.split("+")[0] in order else 9, m))
    peak = None
    if os.path.exists(os.path.join(work, "peak.json")):
        with open(os.path.join(work, "peak.json")) as f:
            peak = json.load(f).get("peak_gflops")
    rows = []
    for name in models:
        ours_files = sorted(os.path.join(work, "ours", f) for f in os.listdir(os.path.join(work, "ours"))
                            if f.split(".")[0] == name)
        base = name.split("+")[0]
        ort_files = sorted(os.path.join(work, "ort", f) for f in os.listdir(os.path.join(work, "ort"))
                           if f.split(".")[0] == base)
        our_runs, ours = merged(ours_files)
        ort_runs, _ = merged(ort_files)
        ort_ms, our_ms = statistics.median(ort_runs), statistics.median(our_runs)
        max_abs, max_rel, note = 0.0, 0.0, ""
        ort_out = os.path.join(work, "ort_out", base)
        for file in sorted(os.listdir(ort_out)):
            ref = np.load(os.path.join(ort_out, file)).astype(np.float64)
            ours_file = os.path.join(work, "ours_out", name, file)
            if not os.path.exists(ours_file):
                note, max_abs, max_rel = f"{file} missing from our outputs", float("inf"), float("inf")
                continue
            got = np.load(ours_file).astype(np.float64)
            if got.shape != ref.shape:
                note, max_abs, max_rel = f"{file}: shape {got.shape} vs {ref.shape}", float("inf"), float("inf")
                continue
            err = float(np.abs(got - ref).max())
            max_abs = max(max_abs, err)
            max_rel = max(max_rel, err / max(float(np.abs(ref).max()), 1e-30))
        flops = ours["models"][0]["flops"]
        rate = flops / (our_ms * 1e-3) / 1e9
        rows.append((name, ort_ms, our_ms, ort_ms / our_ms, max_abs, max_rel, rate, len(our_runs), note))
    isas = set()
    for f in os.listdir(os.path.join(work, "ours")):
        with open(os.path.join(work, "ours", f)) as fh:
            isas.add(json.load(fh).get("isa", "?"))
    print(f"\nours on oneDNN ISA {', '.join(sorted(isas))}; ONNX Runtime on the CPU's own dispatch")
    print(f"{'model':<12} {'ORT ms':>10} {'ours ms':>10} {'ORT/ours':>9} {'max abs err':>12} {'err/max|y|':>11}"
          f" {'GFLOP/s':>8} {'runs':>5}")
    for name, ort_ms, our_ms, ratio, max_abs, max_rel, rate, n, note in rows:
        print(f"{name:<12} {ort_ms:10.2f} {our_ms:10.2f} {ratio:9.2f} {max_abs:12.3g} {max_rel:11.3g} {rate:8.1f}"
              f" {n:5d}" + (f"  ({note})" if note else ""))
    if peak:
        print(f"\npeak: oneDNN fp32 matmul 4096^3 = {peak:.1f} GFLOP/s (the better of before and after)")
        for name, _, _, _, _, _, rate, _, _ in rows:
            if name == "mlp":
                print(f"mlp end-to-end: {rate:.1f} GFLOP/s = {100 * rate / peak:.0f}% of peak")
        for name, _, _, _, _, _, rate, _, _ in rows:
            if name == "mlp+bf16":
                print(f"mlp+bf16 (bf16 matmuls, f32 accumulation): {rate:.1f} GFLOP/s = {100 * rate / peak:.0f}% of the"
                      " f32 peak")
    # f32 runs must agree to 1e-3 of the largest output value; reduced-precision
    # variants (bf16 inputs to the matmuls) to 1e-2.
    failed = [r[0] for r in rows if not r[5] <= (1e-2 if "+bf16" in r[0] else 1e-3)]
    if failed:
        print("\nWARNING: outputs differ from ONNX Runtime by more than the tolerance (1e-3 of their largest value,"
              " 1e-2 for bf16): " + ", ".join(failed))
        return 1
    return 0


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    cmd, rest = args[0], args[1:]
    opts = {}
    positional = []
    i = 0
    while i < len(rest):
        if rest[i].startswith("--"):
            opts[rest[i][2:]] = int(rest[i + 1])
            i += 2
        else:
            positional.append(rest[i])
            i += 1
    if cmd == "inputs" and len(positional) == 2:
        cmd_inputs(*positional)
    elif cmd == "run" and len(positional) == 4:
        cmd_run(*positional, **opts)
    elif cmd == "report" and len(positional) == 1:
        sys.exit(cmd_report(*positional))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
