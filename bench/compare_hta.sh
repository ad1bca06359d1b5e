#!/usr/bin/env bash
# stepwatch vs Holistic Trace Analysis (HTA), and vs the import's floor, on every corpus Kineto
# trace: whole-process wall time, runs interleaved (stepwatch, HTA, floor, then again) so that a
# change in machine load hits all three alike; the median of REPS runs each.
#
#   bench/compare_hta.sh [REPS]          (default 3; build/ must hold a Release-like build with
#                                         the bench tools: cmake --build build --target
#                                         stepwatch_cli stepwatch_import_floor)
#   NICE=-10 bench/compare_hta.sh 5      all three at a higher priority, alike: on a machine shared
#                                         with other work (needs root), what a quiet machine gives
#
# The same work on both sides: `stepwatch analyze -q --json /dev/null TRACE` (import, steps,
# breakdown, overlap, detectors) against bench/hta_same_work.py (HTA's TraceAnalysis load,
# get_comm_comp_overlap, get_temporal_breakdown, get_idle_time_breakdown). The floor is
# `stepwatch-import-floor floor`: libdeflate inflating the whole file plus simdjson On-Demand
# visiting every key of every event (bench/tools/import_floor.cpp).
#
# HTA is installed from PyPI into a venv under build/ (HTA_VENV overrides; never committed), its
# bytecode compiled once so that no run pays for compiling pandas. Goals (issue 18): stepwatch
# >= 40x faster than HTA on every trace above 10 MB of JSON, and <= 1.5x the floor; the last line
# is the verdict on them, and the exit status 1 when one is missed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
corpus=${CORPUS_DIR:-$root/../shared/corpus}
reps=${1:-3}
venv=${HTA_VENV:-$build/hta-venv}
cli=$build/bin/stepwatch
floor=$build/bin/stepwatch-import-floor

[ -d "$corpus/kineto" ] || { echo "corpus not found at $corpus" >&2; exit 77; }
for b in "$cli" "$floor"; do
  [ -x "$b" ] || { echo "missing $b: cmake --build $build --target stepwatch_cli stepwatch_import_floor" >&2; exit 2; }
done
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
  echo "installing HolisticTraceAnalysis into $venv ..." >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet HolisticTraceAnalysis
  "$venv/bin/python" -m compileall -q "$venv/lib" >/dev/null 2>&1 || true
fi
hta_version=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('HolisticTraceAnalysis'))")

nice_level=${NICE:-0}
# Wall seconds of one run of "$@" (output discarded); "fail" when it exits non-zero.
wall() {
  local t0=$EPOCHREALTIME
  if ! nice -n "$nice_level" "$@" >/dev/null 2>&1; then echo fail; return; fi
  local t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "fail"; else print v[int((NR + 1) / 2)] }'; }

echo "stepwatch $("$cli" --version | awk '{print $2}') vs HolisticTraceAnalysis $hta_version; $reps interleaved runs each, medians;" \
     "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), nice $nice_level"
printf '%-58s %8s %9s %9s %8s %9s %8s %s\n' trace JSON_MB stepwatch HTA ratio floor vs_floor verdict
large=0 under=0 over_floor=0
while IFS= read -r f; do
  json_mb=$(gzip -dc "$f" | wc -c | awk '{ printf "%.1f", $1 / 1e6 }')
  sw=() hta=() fl=()
  for ((r = 0; r < reps; ++r)); do
    sw+=("$(wall "$cli" analyze -q --json /dev/null "$f")")
    hta+=("$(wall "$venv/bin/python" "$root/bench/hta_same_work.py" "$f")")
    fl+=("$(wall "$floor" floor "$f")")
  done
  s=$(echo "${sw[*]}" | median)
  h=$(echo "${hta[*]}" | median)
  fm=$(echo "${fl[*]}" | median)
  read -r ratio vs_floor verdict < <(awk -v s="$s" -v h="$h" -v f="$fm" -v mb="$json_mb" 'BEGIN {
    r = (h == "fail" || s == "fail") ? "-" : sprintf("%.1f", h / s)
    v = (f == "fail" || s == "fail") ? "-" : sprintf("%.2f", s / f)
    if (h == "fail") verdict = "HTA failed"
    else if (mb + 0 <= 10) verdict = "(under 10 MB)"
    else verdict = (h / s >= 40) ? "ok >=40x" : "UNDER 40x"
    print r, v, verdict }')
  printf '%-58s %8s %9s %9s %8s %9s %8s %s\n' "${f#"$corpus"/kineto/}" "$json_mb" "$s" "$h" "$ratio" "$fm" "$vs_floor" "$verdict"
  if awk -v mb="$json_mb" 'BEGIN { exit !(mb + 0 > 10) }'; then
    ((++large))
    [ "$verdict" = "ok >=40x" ] || ((++under))
    awk -v v="$vs_floor" 'BEGIN { exit !(v == "-" || v + 0 > 1.5) }' && ((++over_floor))
  fi
done < <(find "$corpus/kineto" -name '*.json.gz' | sort)
# The goals, over the traces above 10 MB of JSON: exit 1 when one is missed.
if [ "$under" -eq 0 ] && [ "$over_floor" -eq 0 ]; then
  echo "verdict: all $large traces above 10 MB at >= 40x HTA and <= 1.5x the floor: met"
else
  echo "verdict: of $large traces above 10 MB, $under under 40x HTA, $over_floor over 1.5x the floor: missed"
  exit 1
fi
