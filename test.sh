#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite; ends with CTest's
# summary and exits non-zero on any failure.
#   build/       the product (g++, warnings are errors): unit, gui, conformance suites
#   build-asan/  engine + engine tests under AddressSanitizer+UBSan (clang), and the
#                libFuzzer target of the project loader, run for a bounded time
# Set TAPESTRY_SLOW=1 to include the `slow` suites.
set -uo pipefail
cd "$(dirname "$0")"
source .ci/common.sh

tapestry_install_packages || exit 1

echo "== build (g++, -Werror)"
tapestry_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAPESTRY_WERROR=ON || exit 1

echo "== build-asan (clang, ASan+UBSan, engine only, fuzzers)"
CC=clang-14 CXX=clang++-14 tapestry_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTAPESTRY_SANITIZE=ON -DTAPESTRY_ENGINE_ONLY=ON -DTAPESTRY_FUZZ=ON -DTAPESTRY_WERROR=ON \
  -DTAPESTRY_WITH_CUDA=OFF || exit 1

exclude=(-LE slow)
if [ "${TAPESTRY_SLOW:-0}" = "1" ]; then exclude=(); fi

echo "== engine tests under ASan+UBSan, and the fuzzer"
(cd build-asan && ctest --output-on-failure -j"$(nproc)" "${exclude[@]}")
asan_rc=$?

echo "== all suites"
(cd build && ctest --output-on-failure -j"$(nproc)" "${exclude[@]}")
rc=$?

if [ $rc -ne 0 ]; then tapestry_failure_digest build; fi
if [ $asan_rc -ne 0 ]; then
  tapestry_failure_digest build-asan
  echo "test.sh: the sanitizer/fuzz run above (build-asan) failed" >&2
  exit $asan_rc
fi
exit $rc
