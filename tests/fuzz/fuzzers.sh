# Sourced by run_fuzzers.sh (the CI replay) and explore.sh (random exploration): the fuzz targets,
# their dictionaries, and the build of build-fuzz/ (clang, ASan+UBSan+coverage on every target,
# no CUDA toolkit needed).
fuzz_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fuzz_dir=$fuzz_root/tests/fuzz
fuzz_bdir=${FUZZ_BUILD_DIR:-$fuzz_root/build-fuzz}
fuzzers=(fuzz_kineto_import fuzz_analysis fuzz_live_config fuzz_metrics_request fuzz_nsys_import fuzz_nsys_rows)

# The dictionary of a target ("" for the binary-encoded ones, whose bytes are not tokens).
fuzz_dict() {
  case "$1" in
    fuzz_kineto_import) echo "$fuzz_dir/dict/kineto.dict" ;;
    fuzz_nsys_import) echo "$fuzz_dir/dict/nsys.dict" ;;
    fuzz_metrics_request) echo "$fuzz_dir/dict/http.dict" ;;
    fuzz_live_config) echo "$fuzz_dir/dict/live_config.dict" ;;
    *) echo "" ;;
  esac
}

# The per-target options both modes share. -rss_limit_mb: ASan's shadow plus the importer's
# buffers; a leak or runaway allocation fails. -max_len: what the committed corpus was minimised at.
fuzz_common_flags=(-timeout=25 -rss_limit_mb=4096 -max_len=65536)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Returns 1 (with a message) when clang or its libFuzzer runtime is missing: the caller skips.
fuzz_toolchain_ok() {
  if ! command -v clang >/dev/null 2>&1 || ! command -v clang++ >/dev/null 2>&1; then
    echo "fuzz: clang/clang++ not found: fuzzers skipped" >&2
    return 1
  fi
  local probe
  probe=$(mktemp -d)
  printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t){return 0;}\n' >"$probe/p.cpp"
  if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
    rm -rf "$probe"
    echo "fuzz: clang++ cannot link -fsanitize=fuzzer (libFuzzer runtime missing): fuzzers skipped" >&2
    return 1
  fi
  rm -rf "$probe"
}

# Builds the targets (plus extra targets given as arguments).
fuzz_build() {
  echo "== fuzz: build ($fuzz_bdir) =="
  CC=clang CXX=clang++ cmake -S "$fuzz_root" -B "$fuzz_bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPWATCH_FUZZ=ON \
    -DSTEPWATCH_BUILD_BENCH=OFF -DSTEPWATCH_WITH_CUDA=OFF >/dev/null
  cmake --build "$fuzz_bdir" -j"$(nproc 2>/dev/null || echo 2)" --target "${fuzzers[@]}" "$@"
}
