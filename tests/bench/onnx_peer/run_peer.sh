#!/usr/bin/env bash
# The ONNX Runtime peer benchmark (README.md beside this file): the same ONNX
# models run by ONNX Runtime (CPU) and by Tapestry's CPU executor in the same run,
# both at the same thread count, plus the oneDNN 4096³ matmul peak.
#
#   tests/bench/onnx_peer/run_peer.sh [BUILD_DIR]
#
# BUILD_DIR holds app/tapestry and tests/bench/bench_onnx_peer (default:
# build-release; configure it with -DCMAKE_BUILD_TYPE=Release). Environment:
# THREADS (2), RUNS (10 timed runs per round), WARMUP (3), ROUNDS (2: the models
# run ORT, ours, ORT, ours… so that a change of machine load hits both sides).
# Makes a virtual environment in build/bench-venv with onnx, onnxruntime and
# numpy from PyPI — a benchmark-only dependency, never a build or runtime one.
# ISA=AVX2 (or any ONEDNN_MAX_CPU_ISA value) caps oneDNN's dispatch for our side and
# the peak, so an AVX-512 machine measures what an AVX2-only one would run; ONNX
# Runtime's MLAS reads cpuid itself and has no such cap, so it keeps the CPU's
# full instruction set — a comparison harder for us than on a real AVX2 machine.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="$(cd "${1:-$root/build-release}" && pwd)"
threads="${THREADS:-2}"
runs="${RUNS:-10}"
warmup="${WARMUP:-3}"
rounds="${ROUNDS:-2}"
if [ -n "${ISA:-}" ]; then export ONEDNN_MAX_CPU_ISA="$ISA"; fi
venv="$root/build/bench-venv"
work="$root/build/bench-peer"
tapestry="$build/app/tapestry"
bench="$build/tests/bench/bench_onnx_peer"
models=(mlp gpt2_block convnet)

for exe in "$tapestry" "$bench"; do
  if [ ! -x "$exe" ]; then
    echo "run_peer.sh: $exe is missing; build the targets tapestry and bench_onnx_peer in $build" >&2
    exit 1
  fi
done

if [ ! -x "$venv/bin/python" ]; then
  echo "== making $venv (onnx, onnxruntime, numpy from PyPI)"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet onnx onnxruntime numpy
fi
py="$venv/bin/python"

rm -rf "$work"
mkdir -p "$work"/{models,projects,inputs,ort,ours,ort_out,ours_out}

echo "== models"
"$py" "$here/generate_models.py" "$work/models"
for m in "${models[@]}"; do
  # The project and its values (<m>.data/*.npy) land beside each other.
  "$tapestry" import "$work/models/$m.onnx" -o "$work/projects/$m.tapestry.json"
  "$py" "$here/ort_peer.py" inputs "$work/models/$m.onnx" "$work/inputs/$m"
done

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "== onnxruntime $("$py" -c 'import onnxruntime; print(onnxruntime.__version__)'), threads $threads, $runs runs x $rounds rounds, $warmup warm-up"
echo "== ours: oneDNN ${ONEDNN_MAX_CPU_ISA:+capped at $ONEDNN_MAX_CPU_ISA, }$("$bench" --isa); ONNX Runtime: the CPU's own dispatch"
echo "== load before: $(uptime)"
"$bench" --peak --runs "$runs" --json "$work/peak.json"
for r in $(seq 1 "$rounds"); do
  for m in "${models[@]}"; do
    "$py" "$here/ort_peer.py" run "$work/models/$m.onnx" "$work/inputs/$m" "$work/ort_out/$m" "$work/ort/$m.$r.json" \
      --threads "$threads" --runs "$runs" --warmup "$warmup"
    OMP_NUM_THREADS="$threads" "$bench" --threads "$threads" --runs "$runs" --warmup "$warmup" \
      --inputs-root "$work/inputs" --outputs-root "$work/ours_out" --json "$work/ours/$m.$r.json" \
      "$work/projects/$m.tapestry.json"
  done
  # The MLP again with bf16 matmuls (CpuOptions::bf16_matmul): reduced precision,
  # reported on its own row against the same ONNX Runtime (f32) runs.
  OMP_NUM_THREADS="$threads" "$bench" --threads "$threads" --runs "$runs" --warmup "$warmup" --bf16-matmul --label +bf16 \
    --inputs-root "$work/inputs" --outputs-root "$work/ours_out" --json "$work/ours/mlp+bf16.$r.json" \
    "$work/projects/mlp.tapestry.json"
done
"$bench" --peak --runs "$runs" --json "$work/peak_after.json"
echo "== load after: $(uptime)"
# The better of the two peak measurements is the one the MLP is held against.
"$py" - "$work" <<'EOF'
import json, sys, os
work = sys.argv[1]
a = json.load(open(os.path.join(work, "peak.json")))["peak_gflops"]
b = json.load(open(os.path.join(work, "peak_after.json")))["peak_gflops"]
json.dump({"peak_gflops": max(a, b), "before": a, "after": b}, open(os.path.join(work, "peak.json"), "w"))
EOF
"$py" "$here/ort_peer.py" report "$work"
