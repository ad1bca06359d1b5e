#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the full suite once, then the unit,
# scenario, live and CLI tests again under ASan+UBSan, everything but the injected library built
# without the CUDA toolkit (its unit, scenario and live/offline parity tests run there), the
# libFuzzer targets over their committed
# corpus and past crashes (a deterministic replay: no random fuzzing decides whether this passes;
# exploration is tests/fuzz/explore.sh), and the concurrency tests under ThreadSanitizer.
# Usage: tests/run.sh [--no-sanitizers]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sanitizers=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=0 ;;
    *) echo "usage: tests/run.sh [--no-sanitizers]" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -d "$root/../shared/corpus" ]; then
  echo "note: ../shared/corpus not found: corpus tests will be skipped" >&2
fi

echo "== build (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests =="
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "$sanitizers" = 1 ]; then
  echo "== build (ASan+UBSan) =="
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTEPWATCH_SANITIZE=ON -DSTEPWATCH_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  echo "== tests under ASan+UBSan =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -E 'corpus|cli_html|gpu_validate'
  echo "== build without the CUDA toolkit (the libFuzzer build: clang, ASan+UBSan) =="
  tests/cudaless.sh
  echo "== fuzz (libFuzzer: replay of the committed corpus and regression inputs) =="
  tests/fuzz/run_fuzzers.sh
  echo "== ThreadSanitizer (queues, analysis thread, NVTX, CUPTI adapter, injected library) =="
  tests/tsan/run_tsan.sh
fi
echo "stepwatch: all tests passed"
