#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/: ASan+UBSan+coverage on every target),
# generates seed corpora from synthetic traces (stepwatch-synth; never from ../shared) and runs
# each fuzzer for SECONDS (default 60). Fails on any crash, leak, timeout, OOM or sanitizer report.
#
#   tests/fuzz/run_fuzzers.sh            # CI: 60 s per fuzzer
#   tests/fuzz/run_fuzzers.sh 1800       # the documented longer run (30 min per fuzzer)
#   FUZZ_JOBS=4 tests/fuzz/run_fuzzers.sh 3600   # longer still, 4 workers per fuzzer
#
# Crash inputs land in build-fuzz/fuzz-artifacts/<fuzzer>/; reproduce with
#   build-fuzz/bin/<fuzzer> build-fuzz/fuzz-artifacts/<fuzzer>/crash-...
# Skips (exit 0, with a message) when clang/clang++ or libFuzzer is not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seconds=${1:-60}
jobs=${FUZZ_JOBS:-1}
bdir=${FUZZ_BUILD_DIR:-$root/build-fuzz}

if ! command -v clang >/dev/null 2>&1 || ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang/clang++ not found: fuzzers skipped" >&2
  exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t){return 0;}\n' >"$probe/p.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
  echo "fuzz: clang++ cannot link -fsanitize=fuzzer (libFuzzer runtime missing): fuzzers skipped" >&2
  exit 0
fi

echo "== fuzz: build ($bdir) =="
CC=clang CXX=clang++ cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPWATCH_FUZZ=ON \
  -DSTEPWATCH_BUILD_BENCH=OFF -DSTEPWATCH_WITH_CUDA=OFF >/dev/null
cmake --build "$bdir" -j"$(nproc 2>/dev/null || echo 2)" --target fuzz_kineto_import fuzz_analysis fuzz_live_config fuzz_metrics_request fuzz_nsys_import fuzz_nsys_rows stepwatch_synth

corpus=$bdir/fuzz-corpus
artifacts=$bdir/fuzz-artifacts
mkdir -p "$corpus"/{fuzz_kineto_import,fuzz_analysis,fuzz_live_config,fuzz_metrics_request,fuzz_nsys_import,fuzz_nsys_rows}
rm -rf "$artifacts"
mkdir -p "$artifacts"/{fuzz_kineto_import,fuzz_analysis,fuzz_live_config,fuzz_metrics_request,fuzz_nsys_import,fuzz_nsys_rows}

echo "== fuzz: seeds =="
seeds=$corpus/fuzz_kineto_import
synth=$bdir/bin/stepwatch-synth
for s in gpu_bound ddp_overlap slow_dataloader item_sync pageable_copy serialized_allreduce launch_bound \
         sync_copy slow_h2d allocator_churn no_marks; do
  full=$probe/$s.json
  "$synth" -s "$s" -n 2 -o "$full" >/dev/null
  if command -v python3 >/dev/null 2>&1; then
    python3 tests/fuzz/make_seeds.py "$full" "$seeds/seed_$s.json" 80
    python3 tests/fuzz/make_seeds.py "$full" "$seeds/seed_${s}_small.json" 12
  else
    head -c 8192 "$full" >"$seeds/seed_$s.json"  # truncated: still a useful prefix seed
  fi
done
"$synth" -s item_sync -n 1 -o "$probe/one.json.gz" >/dev/null && cp "$probe/one.json.gz" "$seeds/seed_gzip.json.gz"
printf '{"traceEvents":[]}' >"$seeds/seed_empty.json"
printf '[]' >"$seeds/seed_array.json"
# The analysis fuzzer decodes 12-byte records: seed it with the same traces' bytes (any bytes are
# valid input) and a few hand-made soups.
cp "$seeds"/seed_*_small.json "$corpus/fuzz_analysis/" 2>/dev/null || true
printf '\x06\x00\x00\x00\xff\x7f\x00\x00\x00\x00\x00\x01\x04\x10\x00\x00\x05\x00\x11\x03\x01\x00\x00\x00\x00\x20\x00\x00\x40\x00\x11\x08\x00\x00\x00\x00' \
  >"$corpus/fuzz_analysis/seed_step_launch_kernel"
# The config fuzzer reads NAME=VALUE lines.
cfg=$corpus/fuzz_live_config
printf 'STEPWATCH_ENABLE=1\nSTEPWATCH_FLUSH_MS=200\nSTEPWATCH_MEMORY_MB=64\nSTEPWATCH_SUSTAIN=3/5\nRANK=3\n' >"$cfg/seed_basic"
printf 'STEPWATCH_STEP_PATTERN=^(ProfilerStep#\\d+|step)$\nSTEPWATCH_DATA_PATTERN=DataLoader\nSTEPWATCH_DISABLE=launch_bound, gc_pause\n' >"$cfg/seed_patterns"
printf 'STEPWATCH_MIN_PCT=5.5\nSTEPWATCH_MIN_MS=1e3\nSTEPWATCH_CUPTI_BUFFER_KB=4096\nSTEPWATCH_CUPTI_MAX_BUFFERS=64\nSTEPWATCH_LOG_LEVEL=warning\n' >"$cfg/seed_numbers"
printf 'STEPWATCH_FLUSH_MS=abc\nSTEPWATCH_SUSTAIN=9/2\nSTEPWATCH_STEP_PATTERN=(\nOMPI_COMM_WORLD_RANK=-1\nSLURM_PROCID=7\n' >"$cfg/seed_bad"
# The metrics endpoint's request parser reads raw HTTP requests.
printf 'GET /metrics HTTP/1.1\r\nHost: localhost:9400\r\nAccept: */*\r\n\r\n' >"$corpus/fuzz_metrics_request/seed_get"
printf 'HEAD /metrics?x=1 HTTP/1.0\n\n' >"$corpus/fuzz_metrics_request/seed_head"
# The nsys fuzzers: small nsys-shaped SQLite exports written with python3's sqlite3, and a step in
# fuzz_nsys_rows' row encoding. Without python3 they start from empty corpora (they still run).
if command -v python3 >/dev/null 2>&1; then
  python3 tests/fuzz/make_nsys_seeds.py "$corpus/fuzz_nsys_import" "$corpus/fuzz_nsys_rows"
fi

parallel=()
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
status=0
for f in fuzz_kineto_import fuzz_analysis fuzz_live_config fuzz_metrics_request fuzz_nsys_import fuzz_nsys_rows; do
  echo "== fuzz: $f for ${seconds}s =="
  # -rss_limit_mb: ASan's shadow plus the importer's buffers; a leak or runaway allocation fails.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bdir/bin/$f" "$corpus/$f" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$artifacts/$f/" "${parallel[@]}" \
      >"$artifacts/$f.log" 2>&1; then
    echo "fuzz: $f FAILED (log: $artifacts/$f.log; inputs: $artifacts/$f/)" >&2
    tail -40 "$artifacts/$f.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$artifacts/$f.log" | tr '\n' ' '
    echo "corpus: $(ls "$corpus/$f" | wc -l) inputs"
  fi
done
if [ -n "$(find "$artifacts" -type f -name 'crash-*' -o -type f -name 'leak-*' -o -type f -name 'timeout-*' -o -type f -name 'oom-*' | head -1)" ]; then
  status=1
fi
[ "$status" = 0 ] && echo "fuzz: no crashes, leaks or timeouts"
exit "$status"
