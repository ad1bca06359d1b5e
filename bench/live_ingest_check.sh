#!/usr/bin/env bash
# Live ingest end to end (real CUPTI record parse + per-thread queue + pipeline ingest) against
# issue 18's goals: >= 20M records/s per core at 10,000 distinct kernel names, and >= 0.8x the
# 16-name rate of the same run. Prints both rates (medians of REPS repetitions, CPU time, as Google
# Benchmark counts items_per_second) and a verdict; exit status 1 when a goal is missed.
#
#   bench/live_ingest_check.sh [REPS]     (default 5; build/ must hold stepwatch_bench:
#                                          cmake --build build --target stepwatch_bench)
#   NICE=-10 bench/live_ingest_check.sh   at a higher priority (needs root), on a shared machine
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bench=$build/bin/stepwatch_bench
reps=${1:-5}
[ -x "$bench" ] || { echo "missing $bench: cmake --build $build --target stepwatch_bench" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
nice -n "${NICE:-0}" "$bench" --benchmark_filter='BM_LiveIngestEndToEnd' --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out" 2>/dev/null
python3 - "$out" <<'PY'
import json, sys

rates = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        rates[b["run_name"].rsplit("/", 1)[1]] = b["items_per_second"]
few, many = rates.get("16"), rates.get("10000")
if few is None or many is None:
    print("live ingest: the benchmark gave no 16- and 10,000-name medians", file=sys.stderr)
    sys.exit(2)
ratio = many / few
ok = many >= 20e6 and ratio >= 0.8
print(f"live ingest end to end: 16 names {few / 1e6:.1f}M records/s, 10,000 names {many / 1e6:.1f}M records/s "
      f"(ratio {ratio:.2f})")
print(f"verdict: >= 20M records/s/core at 10,000 names and >= 0.8x the 16-name rate: {'met' if ok else 'MISSED'}")
sys.exit(0 if ok else 1)
PY
