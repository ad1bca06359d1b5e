#!/usr/bin/env bash
# Installs what is missing, builds, and runs the tests.
#
#   tests/run.sh              the complete suite once (unit, scenario, corpus, live, CLI, Python,
#                             GPU-validation dry run): one build, ~9 min on 2 cores from scratch
#   tests/run.sh --sanitizers also the unit, scenario, live and CLI tests under ASan+UBSan
#   tests/run.sh --cudaless   also everything but the injected library built without the CUDA
#                             toolkit (clang, ASan+UBSan), its unit, scenario and live/offline
#                             parity tests run there
#   tests/run.sh --fuzz       also the libFuzzer targets over their committed corpus and past
#                             crashes (a deterministic replay: no random fuzzing decides whether
#                             this passes; exploration is tests/fuzz/explore.sh)
#   tests/run.sh --tsan       also the concurrency tests under ThreadSanitizer
#   tests/run.sh --wheel      also `pip install .` into a fresh venv and stepwatch run/analyze from it
#   tests/run.sh --all        all of the above: what CI runs (.ci/run)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sanitizers=0 cudaless=0 fuzz=0 tsan=0 wheel=0
for arg in "$@"; do
  case "$arg" in
    --sanitizers) sanitizers=1 ;;
    --cudaless) cudaless=1 ;;
    --fuzz) fuzz=1 ;;
    --tsan) tsan=1 ;;
    --wheel) wheel=1 ;;
    --all) sanitizers=1 cudaless=1 fuzz=1 tsan=1 wheel=1 ;;
    --no-sanitizers) ;;  # the old spelling of the default
    *) echo "usage: tests/run.sh [--sanitizers] [--cudaless] [--fuzz] [--tsan] [--wheel] [--all]" >&2; exit 2 ;;
  esac
done

started=$(date +%s)
stage() { echo "== $1 ($(( $(date +%s) - started )) s) =="; }
scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -d "$root/../shared/corpus" ]; then
  echo "note: ../shared/corpus not found: corpus tests will be skipped" >&2
fi

stage "build (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
stage "tests"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "$sanitizers" = 1 ]; then
  stage "build (ASan+UBSan)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTEPWATCH_SANITIZE=ON -DSTEPWATCH_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  stage "tests under ASan+UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -E 'corpus|cli_html|gpu_validate|stepwatch_live_tests|live_cupti_'
  # The live tests' processes exit with CUPTI's (the fake's) threads still running, as a real CUDA
  # process does; LeakSanitizer's stop-the-world scan at exit then crashes now and then ("Tracer
  # caught signal 11") on threads that exit under it. ASan and UBSan stay on; leaks are checked above.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -R 'stepwatch_live_tests|live_cupti_'
fi
if [ "$cudaless" = 1 ]; then
  stage "build without the CUDA toolkit (the libFuzzer build: clang, ASan+UBSan)"
  tests/cudaless.sh
fi
if [ "$fuzz" = 1 ]; then
  stage "fuzz (libFuzzer: replay of the committed corpus and regression inputs)"
  tests/fuzz/run_fuzzers.sh
fi
if [ "$tsan" = 1 ]; then
  stage "ThreadSanitizer (queues, analysis thread, NVTX, CUPTI adapter, injected library)"
  tests/tsan/run_tsan.sh
fi
if [ "$wheel" = 1 ]; then
  stage "wheel (pip install . into a fresh venv)"
  rc=0
  tests/wheel.sh "$root/build" || rc=$?
  # 77: no package index to get the build backend from; anything else fails the run.
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then exit "$rc"; fi
fi
stage "done"
echo "stepwatch: all tests passed"
