# Shared by ./studio.sh and ./test.sh: install missing Debian packages, then
# configure and build incrementally. Sourced, not executed.

TAPESTRY_PACKAGES=(
  cmake ninja-build pkg-config g++ ccache
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev qt6-charts-dev libgl-dev
  libqt6opengl6-dev  # Qt6Charts' CMake config needs Qt6OpenGL's
  libgraphviz-dev graphviz libisl-dev libsqlite3-dev
  nlohmann-json3-dev libcli11-dev librapidcheck-dev
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN's CMake config needs OpenCL (its GPU runtime)
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  clang-14 libclang-rt-14-dev
  xvfb xauth fonts-dejavu-core
  python3  # tests/campaign/bad_inputs.py
  python3-jsonschema  # tests/targets/check_targets.py
  openmpi-bin libopenmpi-dev  # the mpi backend of tapestry launch (CTest label mpi)
  libmimalloc-dev  # the allocator of tapestry, tapestry-studio and the benchmarks
)

tapestry_install_packages() {
  local missing=()
  for p in "${TAPESTRY_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "== packages: all ${#TAPESTRY_PACKAGES[@]} present"
    return 0
  fi
  echo "== installing missing packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# tapestry_build DIR [cmake args…]: configure once, then build incrementally.
tapestry_build() {
  local dir="$1"; shift
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" -G Ninja "$@"
  else
    cmake "$dir" "$@" > /dev/null
  fi
  cmake --build "$dir" -j"$(nproc)"
}

# After a failed ctest run in build dir $1: what a truncated CI log must still
# show at its end — the failed tests, the sanitizer's and libFuzzer's verdict
# lines, and each fuzzer reproducer (crash-/leak-/oom-/timeout-) with its bytes in
# base64 when small, so a CI failure can be replayed here:
#   base64 -d > unit && build-asan/tests/fuzz/<fuzzer> unit
tapestry_failure_digest() {
  local dir=$1
  local failed="$dir/Testing/Temporary/LastTestsFailed.log"
  local log="$dir/Testing/Temporary/LastTest.log"
  echo "== digest of the failures in $dir"
  [ -f "$failed" ] && sed 's/^/failed: /' "$failed"
  if [ -f "$log" ]; then
    grep -a -E '==[0-9]+==ERROR|^SUMMARY:|libFuzzer: |runtime error:|Test unit written to|^fuzz_[a-z_]+: ' "$log" |
      head -n 40
  fi
  local unit
  for unit in "$dir"/tests/fuzz/crash-* "$dir"/tests/fuzz/leak-* "$dir"/tests/fuzz/oom-* \
              "$dir"/tests/fuzz/timeout-* "$dir"/tests/fuzz/slow-unit-*; do
    [ -f "$unit" ] || continue
    echo "reproducer $unit ($(stat -c %s "$unit") bytes)"
    if [ "$(stat -c %s "$unit")" -le 8192 ]; then base64 -w 0 "$unit"; echo; fi
  done
}
