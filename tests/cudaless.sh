#!/usr/bin/env bash
# The build without the CUDA toolkit (STEPWATCH_WITH_CUDA=OFF): every target but the injected
# library builds — the core, the detectors, the CLI, the live library's CUDA-free part and all
# their tests — and the unit, scenario, live-base (the live/offline parity test among them) and
# CLI error tests pass. It reuses the libFuzzer build (build-fuzz/: clang, ASan+UBSan), which is
# CUDA-free already, rather than adding a build of its own.   Usage: tests/cudaless.sh
set -euo pipefail
# shellcheck source=tests/fuzz/fuzzers.sh
source "$(dirname "$0")/fuzz/fuzzers.sh"
cd "$fuzz_root"
fuzz_toolchain_ok || { echo "cudaless: no clang/libFuzzer: the CUDA-less build is skipped" >&2; exit 0; }
fuzz_build
echo "== cudaless: every target ($fuzz_bdir, STEPWATCH_WITH_CUDA=OFF) =="
cmake --build "$fuzz_bdir" -j"$(nproc 2>/dev/null || echo 2)"
if [ -e "$fuzz_bdir/lib/libstepwatch.so" ]; then
  echo "cudaless: libstepwatch.so was built: this build is not CUDA-free" >&2
  exit 1
fi
echo "== cudaless: tests =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$fuzz_bdir" --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" \
  -R '^(stepwatch_unit_tests|stepwatch_scenario_tests|stepwatch_live_base_tests|cli_errors)$'
