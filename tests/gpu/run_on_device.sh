#!/usr/bin/env bash
# Runs the GPU checks of issue 18 on a lent GPU machine (docs/gpu.md), in two halves:
#
#   tests/gpu/run_on_device.sh pack [--quick]
#       here (Debian, our packages, no GPU): builds tapestry-gpu-check and
#       tapestry-gpu-pack, makes the pack of cases (plans, inputs, references),
#       and gathers into .gpu/program.tar.xz the program with every library `ldd`
#       lists that the device machine lacks (not libc, libstdc++ or the CUDA
#       libraries, which it has) — checked against the 64 MiB a device call may
#       carry; with .gpu-cli (pack-cli, below) both fit in one call:
#       run(command="bash tests/gpu/run_on_device.sh device; bash tests/gpu/run_on_device.sh device-cli",
#           carry=[".gpu", ".gpu-cli"], …)
#
#   then, through the device tool:  run(command="bash tests/gpu/run_on_device.sh device",
#                                       carry=[".gpu"], timeout_s=…)
#   tests/gpu/run_on_device.sh device [--only TEXT] [--no-sanitizer] [--no-torch] [--no-bench] [--no-cases]
#                                     [--bench-env NAME=VALUE]… [--ncu KERNEL_REGEX]
#       there (nvcc, PyTorch, none of our packages): prints which CUDA, cuBLASLt,
#       cuDNN, NCCL and NVRTC the image has; runs tapestry-gpu-check on the pack
#       (every case against its reference, every step timed), the example cases
#       of several devices again with every transfer an NCCL message
#       (--transport nccl, into $OUT/nccl), the quick cases
#       again under compute-sanitizer (memcheck), and the PyTorch baselines
#       (tests/gpu/bench_torch.py); everything it writes lands in $OUT.
#       Each --bench-env times the benchmark plans again with that environment
#       setting (a kernel tuning knob, e.g. TAPESTRY_CUDA_FLASH_TILE=1x64q), into
#       $OUT/bench-NAME-VALUE; --ncu profiles the first warm launch of the matching
#       kernel in the first benchmark plan with Nsight Compute (speed of light,
#       occupancy, memory), into $OUT/ncu.txt.
#
#   tests/gpu/run_on_device.sh pack-cli      here: the whole `tapestry` program with its
#                                            libraries, packed (.gpu-cli/, xz)
#   then run(command="bash tests/gpu/run_on_device.sh device-cli", carry=[".gpu-cli"], …)
#       there: `tapestry devices`, and every example planned and launched with
#       --backend cuda as a user would (one GPU, fused, four virtual devices, the bf16
#       GPT-2 block), kept in a session (calibration points only where each plan device
#       had a GPU), a plan over the device memory refused; each checked for its exit
#       status and what it says, everything in $OUT/cli.log and the session.
set -uo pipefail
cd "$(dirname "$0")/../.."
mode="${1:-}"
shift || true

pack_here() {
  local quick=""
  [ "${1:-}" = "--quick" ] && quick="--quick"
  cmake --build build --target tapestry-gpu-check tapestry-gpu-pack || exit 1
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >> .git/info/exclude; }
  rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
  build/tests/gpu/tapestry-gpu-pack .gpu/pack $quick || exit 1
  cp build/app/tapestry-gpu-check .gpu/bin/
  strip --strip-debug .gpu/bin/tapestry-gpu-check
  # The libraries the device machine lacks: everything ldd resolves here except the C
  # and C++ runtimes (it has newer ones) and CUDA's (it has its own, found at run time).
  ldd build/app/tapestry-gpu-check | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda.so*|libcudart*|libcublas*|libcudnn*|libnvrtc*|libnccl*|libnvJitLink*) ;;
      *) cp -L "$lib" .gpu/lib/ ;;
    esac
  done
  strip --strip-unneeded .gpu/lib/* 2>/dev/null || true
  local size
  size=$(du -sm --apparent-size .gpu | cut -f1)
  echo "== .gpu: $(ls .gpu/lib | wc -l) libraries, $(find .gpu/pack -name plan.json | wc -l) cases, ${size} MiB"
  ls .gpu/lib
  # The program and its libraries as one xz archive (a third of their size), so that
  # .gpu and .gpu-cli (pack-cli) fit in one device call's 64 MiB together.
  tar -C .gpu -cJf .gpu/program.tar.xz bin lib && rm -rf .gpu/bin .gpu/lib
  size=$(du -sm --apparent-size .gpu | cut -f1)
  echo "== .gpu packed: ${size} MiB"
  if [ "$size" -gt 60 ]; then echo "run_on_device.sh: .gpu is ${size} MiB, over what a device call carries" >&2; exit 1; fi
}

# There: the program unpacked into /tmp/tapestry-gpu (bin/, lib/), afresh each call (a
# warm machine may hold an older one).
unpack_program() {
  local dir=/tmp/tapestry-gpu
  rm -rf "$dir" && mkdir -p "$dir" && tar -xJf .gpu/program.tar.xz -C "$dir"
}

# The directories holding the CUDA libraries of the device image (the toolkit's, and
# PyTorch's pip wheels: nvidia-cublas, nvidia-cudnn-cu13, nvidia-nccl-cu13, …).
cuda_library_dirs() {
  find /usr/local/cuda/lib64 /usr/local/cuda/targets /opt /usr/lib /usr/local/lib -maxdepth 8 \
       \( -name 'libcublasLt.so.13*' -o -name 'libcudnn.so.9*' -o -name 'libnvrtc.so.13*' -o -name 'libnccl.so.2*' \) \
       2>/dev/null | xargs -r -n1 dirname | sort -u
}

device_here() {
  local only="" sanitizer=1 torch=1 bench=1 cases=1 ncu_kernel="" setting
  local -a bench_envs=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --only) only="$2"; shift ;;
      --no-sanitizer) sanitizer=0 ;;
      --no-torch) torch=0 ;;
      --no-bench) bench=0 ;;
      --no-cases) cases=0 ;;
      --bench-env) bench_envs+=("$2"); shift ;;
      --ncu) ncu_kernel="$2"; shift ;;
    esac
    shift
  done
  local out="${OUT:-/tmp/tapestry-gpu-out}"
  mkdir -p "$out"
  {
    echo "== machine"
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -1
    echo "== CUDA libraries found"
    for d in $(cuda_library_dirs); do echo "$d:"; ls "$d" | grep -E 'cublasLt|cudnn\.so|nvrtc\.so|nccl' | sed 's/^/  /'; done
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'nccl', torch.cuda.nccl.version())" 2>&1
  } | tee "$out/environment.txt"
  local libdirs torch_path="${LD_LIBRARY_PATH:-}"
  libdirs=$(cuda_library_dirs | paste -sd:)
  unpack_program || { echo "run_on_device.sh: .gpu/program.tar.xz could not be unpacked" >&2; return 1; }
  local gpu_check=/tmp/tapestry-gpu/bin/tapestry-gpu-check
  export LD_LIBRARY_PATH="/tmp/tapestry-gpu/lib:${libdirs}:${LD_LIBRARY_PATH:-}"
  # Each part bounded (seconds; TAPESTRY_GPU_*_S), so that a device call's limit still
  # brings back what ran: the benchmark plans first, then PyTorch's, then every case.
  local bench_s="${TAPESTRY_GPU_BENCH_S:-120}" torch_s="${TAPESTRY_GPU_TORCH_S:-240}"
  local cases_s="${TAPESTRY_GPU_CASES_S:-900}" sanitizer_s="${TAPESTRY_GPU_SANITIZER_S:-300}"
  if [ $bench = 1 ]; then
    echo "== tapestry-gpu-check: the benchmark plans"
    timeout "$bench_s" "$gpu_check" .gpu/pack --only gpt2_block_bf16 --out "$out/bench" 2>&1 | tee "$out/bench.log"
  fi
  for setting in "${bench_envs[@]}"; do
    echo "== tapestry-gpu-check: the benchmark plans again with $setting"
    env "$setting" timeout "$bench_s" "$gpu_check" .gpu/pack --only gpt2_block_bf16 \
      --out "$out/bench-${setting//=/-}" 2>&1 | tee "$out/bench-${setting//=/-}.log"
  done
  if [ -n "$ncu_kernel" ] && command -v ncu >/dev/null; then
    echo "== Nsight Compute: the kernel matching '$ncu_kernel' in the first benchmark plan"
    timeout "${TAPESTRY_GPU_NCU_S:-120}" ncu --kernel-name "regex:$ncu_kernel" --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section LaunchStats --section WarpStateStats \
      "$gpu_check" .gpu/pack --only gpt2_block_bf16.1dev.fuse --out /tmp/tapestry-ncu > "$out/ncu.txt" 2>&1
    echo "ncu exit: $?" >> "$out/ncu.txt"
    grep -E "Duration|Throughput|Achieved Occupancy|Registers Per|Block Limit|Stall|ncu exit|==ERR|==WARNING" "$out/ncu.txt" | head -40
  fi
  if [ $torch = 1 ]; then
    echo "== PyTorch baselines (tests/gpu/bench_torch.py)"
    # PyTorch with its own libraries: the image's cuDNN ahead of its bundled one is refused.
    LD_LIBRARY_PATH="$torch_path" PYTHONUNBUFFERED=1 timeout "$torch_s" python3 tests/gpu/bench_torch.py --warmup 5 --iters 20 2>&1 | tee "$out/torch.log"
  fi
  local check=("$gpu_check" .gpu/pack --no-bench --out "$out" --resume)
  [ -n "$only" ] && check+=(--only "$only")
  rm -f "$out/results.jsonl"
  local rc=0 group crashed=0
  # The example plans first, then the kernel cases, each with half the time. A kernel
  # fault leaves the GPU unusable to its process: it exits 3, and a new process goes on
  # after the cases already recorded (--resume).
  local groups="example kernel"
  [ $cases = 1 ] || groups=""
  for group in $groups; do
    echo "== tapestry-gpu-check: the $group cases"
    local deadline=$((SECONDS + cases_s / 2)) grc=3
    while [ "$grc" = 3 ] && [ $SECONDS -lt $deadline ]; do
      timeout $((deadline - SECONDS)) "${check[@]}" --group $group 2>&1 | tee -a "$out/check.log"
      grc=${PIPESTATUS[0]}
      if [ "$grc" -gt 128 ] && [ "$grc" != 137 ]; then echo "(the check crashed: exit $grc; going on after the crashed case)"; grc=3; crashed=1; fi
    done
    [ "$grc" = 0 ] || rc=$grc
    [ "$crashed" = 1 ] && rc=1
  done
  [ -f "$out/check.log" ] && grep -E "^(summary|  )" "$out/check.log" | tail -40
  # The example plans of several devices again with every transfer an NCCL message: on
  # one GPU a one-rank communicator sending to itself (NCCL refuses two ranks on one GPU).
  echo "== tapestry-gpu-check: the example cases of 2 or more devices over NCCL (--transport nccl)"
  mkdir -p "$out/nccl"
  local deadline=$((SECONDS + ${TAPESTRY_GPU_NCCL_S:-240})) nrc=3 ncrashed=0
  while [ "$nrc" = 3 ] && [ $SECONDS -lt $deadline ]; do
    timeout $((deadline - SECONDS)) "$gpu_check" .gpu/pack --no-bench --group example --min-devices 2 \
      --transport nccl --out "$out/nccl" --resume ${only:+--only "$only"} 2>&1 | tee -a "$out/nccl.log" | grep -v "^ok "
    nrc=${PIPESTATUS[0]}
    # A crash (killed by a signal: 128 + its number) recorded its case as failed: go on after it.
    if [ "$nrc" -gt 128 ] && [ "$nrc" != 137 ]; then echo "(the check crashed: exit $nrc; going on after the crashed case)"; nrc=3; ncrashed=1; fi
  done
  [ "$ncrashed" = 1 ] && [ "$nrc" = 0 ] && nrc=1
  [ "$nrc" = 0 ] || rc=$nrc
  if [ $sanitizer = 1 ] && command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer (memcheck) on the quick cases"
    timeout "$sanitizer_s" compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$gpu_check" .gpu/pack --quick --no-bench 2>&1 | tail -30 | tee "$out/sanitizer.log"
    echo "compute-sanitizer exit: ${PIPESTATUS[0]}" | tee -a "$out/sanitizer.log"
  fi
  return "$rc"
}

# The whole command-line program, for `tapestry launch --backend cuda` on the device:
# the stripped binary with every library ldd lists that the device lacks (oneDNN for
# the reference run among them), as one xz archive — over 64 MiB unpacked.
pack_cli_here() {
  cmake --build build --target tapestry || exit 1
  grep -qx '/.gpu-cli/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu-cli/' >> .git/info/exclude; }
  rm -rf .gpu-cli && mkdir -p .gpu-cli/stage/bin .gpu-cli/stage/lib
  cp build/app/tapestry .gpu-cli/stage/bin/
  strip --strip-unneeded .gpu-cli/stage/bin/tapestry
  ldd build/app/tapestry | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda.so*|libcudart*|libcublas*|libcudnn*|libnvrtc*|libnccl*|libnvJitLink*) ;;
      *) cp -L "$lib" .gpu-cli/stage/lib/ ;;
    esac
  done
  strip --strip-unneeded .gpu-cli/stage/lib/* 2>/dev/null || true
  tar -C .gpu-cli/stage -cJf .gpu-cli/tapestry-cli.tar.xz . && rm -rf .gpu-cli/stage
  local size
  size=$(du -sm --apparent-size .gpu-cli | cut -f1)
  echo "== .gpu-cli: tapestry and its libraries, ${size} MiB packed"
  if [ "$size" -gt 60 ]; then echo "run_on_device.sh: .gpu-cli is ${size} MiB, over what a device call carries" >&2; exit 1; fi
}

# There: unpacks the program and runs the commands a user would, each checked for its
# exit status and what it must say; a line "ok"/"FAIL" each, everything in $OUT/cli.log.
device_cli_here() {
  local oracle=0
  [ "${1:-}" = "--oracle" ] && oracle=1
  local out="${OUT:-/tmp/tapestry-gpu-out}" work=/tmp/tapestry-cli
  mkdir -p "$out" && rm -rf "$work" && mkdir -p "$work/run"
  tar -xJf .gpu-cli/tapestry-cli.tar.xz -C "$work" || exit 1
  local libdirs
  libdirs=$(cuda_library_dirs | paste -sd:)
  export LD_LIBRARY_PATH="$work/lib:${libdirs}:${LD_LIBRARY_PATH:-}"
  local t="$work/bin/tapestry" w="$work/run" failed=0 target
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
    *H200*) target=h200 ;;
    *H100*) target=h100-sxm ;;
    *) target=h100-sxm ;;
  esac
  # check TITLE WANTED_EXIT TEXT_IT_MUST_SAY -- COMMAND…
  check() {
    local title="$1" want="$2" says="$3"
    shift 4
    { echo "== $title"; echo "\$ $*"; } >> "$out/cli.log"
    local got
    "$@" > "$w/last.txt" 2>&1
    got=$?
    cat "$w/last.txt" >> "$out/cli.log"
    echo "(exit $got)" >> "$out/cli.log"
    if [ "$got" = "$want" ] && { [ -z "$says" ] || grep -qE -- "$says" "$w/last.txt"; }; then
      echo "ok   $title"
    else
      echo "FAIL $title (exit $got, wanted $want${says:+, saying /$says/})"; tail -5 "$w/last.txt"; failed=$((failed + 1))
    fi
  }
  local s="$w/launches.tapestry-session"
  check "tapestry devices lists the GPU" 0 "GPU 0: NVIDIA H(100|200)" -- "$t" devices
  check "tapestry devices --json" 0 '"peers"' -- "$t" devices --json
  local p
  for p in projects/*.tapestry.json; do
    local name
    name=$(basename "$p" .tapestry.json)
    check "plan $name for $target, 1 device" 0 "" -- "$t" plan "$p" --target "$target" --devices 1 -o "$w/$name.1.plan.json"
    check "launch $name on 1 GPU (kept, calibration points for $target)" 0 "calibration point" -- \
      "$t" launch "$w/$name.1.plan.json" --backend cuda --session "$s" --steps
    check "plan $name fused, 1 device" 0 "" -- "$t" plan "$p" --target "$target" --pipeline fuse --devices 1 -o "$w/$name.fuse.plan.json"
    check "launch $name fused on 1 GPU" 0 "" -- "$t" launch "$w/$name.fuse.plan.json" --backend cuda --session "$s"
    check "plan $name on 4 devices (tp)" 0 "" -- "$t" plan "$p" --target "$target" --devices 4 --baseline tp -o "$w/$name.4.plan.json"
    check "launch $name on 4 virtual devices of 1 GPU (no calibration points)" 0 "no calibration points" -- \
      "$t" launch "$w/$name.4.plan.json" --backend cuda --session "$s"
  done
  check "plan the bf16 GPT-2 block (batch 8, sequence 1024), fused" 0 "" -- \
    "$t" plan projects/benchmarks/gpt2_block_bf16.tapestry.json --target "$target" --pipeline fuse --devices 1 -o "$w/bench.plan.json"
  check "launch the bf16 GPT-2 block on the GPU" 0 "" -- "$t" launch "$w/bench.plan.json" --backend cuda --session "$s" --steps
  check "a plan over the device memory is refused before launch" 1 "needs" -- \
    "$t" launch "$w/mlp.1.plan.json" --backend cuda --device-memory 1KiB
  check "the bf16 GPT-2 block in 64 MiB a device is refused, naming the device" 1 "device .* needs" -- \
    "$t" launch "$w/bench.plan.json" --backend cuda --device-memory 64MiB
  check "the session keeps the launches" 0 "" -- "$t" session list "$s"
  check "launch mlp on 4 virtual devices with every transfer an NCCL message" 0 "every transfer by NCCL" -- \
    "$t" launch "$w/mlp.4.plan.json" --backend cuda --transport nccl
  # Under mpirun, where the image has one: each rank a block of the devices (the ranks of
  # one GPU cannot exchange by NCCL, which refuses two ranks on one GPU). Reported apart:
  # an image's MPI may not speak to the OpenMPI this program was built with.
  if command -v mpirun > /dev/null; then
    echo "== mpirun on this image: $(command -v mpirun) ($(mpirun --version 2>&1 | head -1))" | tee -a "$out/cli.log"
    local mpi_failed=$failed
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    check "plan mlp on 2 devices (dp)" 0 "" -- "$t" plan projects/mlp.tapestry.json --target "$target" --devices 2 --baseline dp -o "$w/mlp.2dp.plan.json"
    check "mpirun -np 1: one rank owns mlp's 4 devices (tp) on the GPU" 0 "" -- \
      timeout 120 mpirun -np 1 "$t" launch "$w/mlp.4.plan.json" --backend cuda --timeout 60
    check "mpirun -np 2: mlp's 2 devices (dp, no messages between ranks) on one GPU" 0 "" -- \
      timeout 120 mpirun --oversubscribe -np 2 "$t" launch "$w/mlp.2dp.plan.json" --backend cuda --timeout 60
    check "mpirun -np 2: a plan with messages between ranks sharing one GPU is refused" 1 "NCCL refuses two ranks on one GPU" -- \
      timeout 120 mpirun --oversubscribe -np 2 "$t" launch "$w/mlp.4.plan.json" --backend cuda --timeout 60
    echo "mpi checks: $((failed - mpi_failed)) failed (not counted below)"
    failed=$mpi_failed
  else
    echo "== no mpirun on this image: the cuda backend under mpirun is not run here"
  fi
  if [ $oracle = 1 ]; then
    # Which is nearer the truth where the GPU's and the CPU's bf16 differ: each against
    # the double-precision oracle (minutes on a big graph, bounded).
    check "the bf16 GPT-2 block on the GPU against the oracle" 0 "" -- \
      timeout "${TAPESTRY_GPU_ORACLE_S:-150}" "$t" launch "$w/bench.plan.json" --backend cuda --oracle
    check "the bf16 GPT-2 block on the CPU against the oracle" 0 "" -- \
      timeout "${TAPESTRY_GPU_ORACLE_S:-150}" "$t" launch "$w/bench.plan.json" --backend cpu --oracle
  fi
  cp "$s" "$out/" 2>/dev/null
  echo "cli checks: $failed failed"
  return $((failed > 0))
}

case "$mode" in
  pack) pack_here "$@" ;;
  device) device_here "$@" ;;
  pack-cli) pack_cli_here "$@" ;;
  device-cli) device_cli_here "$@" ;;
  *) echo "usage: $0 pack [--quick] | device [--only TEXT] [--no-sanitizer] [--no-torch] | pack-cli | device-cli [--oracle]" >&2; exit 2 ;;
esac
