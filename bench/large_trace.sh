#!/usr/bin/env bash
# Offline analysis of generated traces far past simdjson's 4 GiB document limit: time and peak RSS
# of `stepwatch analyze` (whole process) and of the importer alone, on stepwatch-synth's
# launch_bound scenario (2,000 kernels per step, ~1.15 MB of JSON per step) at each size, plain
# JSON; then the largest size gzipped (its size trailer wraps past 4 GiB). Traces are written to a
# temporary directory and deleted after each measurement, never kept (no pipe: the generator holds
# its whole trace in memory, and a pipe would time the generator, not the analysis).
#
#   bench/large_trace.sh [GB ...]      (default: 1.5 3 6; needs build/ with stepwatch_cli,
#                                       stepwatch_synth and stepwatch_import_floor)
#   NICE=-10 bench/large_trace.sh      the measured runs at a higher priority (needs root): on a
#                                       machine shared with other work
#
# Each line: size, steps, wall seconds (and CPU seconds, user + system: on a loaded machine the
# steadier measure of work) and MB/s of wall time, peak RSS in MiB and as a share of the JSON's size,
# for the analysis and for the import alone; and whether every generated step was analyzed. The
# file is in the page cache when measured (written back and read once before).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cli=$build/bin/stepwatch
synth=$build/bin/stepwatch-synth
probe=$build/bin/stepwatch-import-floor
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1.5 3 6)
for b in "$cli" "$synth" "$probe"; do
  [ -x "$b" ] || { echo "missing $b (cmake --build $build --target stepwatch_cli stepwatch_synth stepwatch_import_floor)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time) for peak RSS" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stepwatch-large.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$synth" -s launch_bound -n 10 -o "$tmp/probe.json" >/dev/null
bytes_per_step=$(( $(stat -c %s "$tmp/probe.json") / 10 ))
largest=$(printf '%s\n' "${sizes[@]}" | sort -g | tail -1)
need=$(awk -v gb="$largest" 'BEGIN { printf "%d", gb * 1.3e9 }')
avail=$(df --output=avail -B1 "$tmp" | tail -1)
[ "$avail" -gt "$need" ] || { echo "need $((need / 1000000000)) GB free in $tmp, have $((avail / 1000000000)) GB" >&2; exit 2; }

echo "launch_bound, $bytes_per_step bytes of JSON per step; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), nice ${NICE:-0}"
printf '%-18s %7s | %-47s | %-47s | %s\n' trace steps "stepwatch analyze: wall (cpu), MB/s, RSS" "import alone: wall (cpu), MB/s, RSS" analyzed
measure() {  # measure FILE STEPS LABEL
  local file=$1 steps=$2 label=$3
  # The generator's gigabytes of dirty pages are written back first, and the file is read once:
  # the runs then measure the analysis of a trace in the page cache, not the disk.
  sync
  cat "$file" >/dev/null
  local json_bytes
  json_bytes=$(if [[ $file == *.gz ]]; then gzip -dc "$file" | wc -c; else stat -c %s "$file"; fi)
  /usr/bin/time -f "%e %M %U %S" -o "$tmp/analyze.time" nice -n "${NICE:-0}" "$cli" analyze -q --json "$tmp/out.jsonl" "$file"
  local analyzed
  analyzed=$(grep -c '"type":"step"' "$tmp/out.jsonl" || true)
  /usr/bin/time -f "%e %M %U %S" -o "$tmp/import.time" nice -n "${NICE:-0}" "$probe" import "$file" >/dev/null
  awk -v label="$label" -v steps="$steps" -v bytes="$json_bytes" -v analyzed="$analyzed" \
      -v a="$(tail -1 "$tmp/analyze.time")" -v i="$(tail -1 "$tmp/import.time")" 'BEGIN {
    split(a, A, " "); split(i, I, " ")
    printf "%5.2f GB %-9s %7d | %6.1f s (cpu %6.1f s) %5.0f MB/s %6.0f MiB %.2fx | %6.1f s (cpu %6.1f s) %5.0f MB/s %6.0f MiB %.2fx | %s\n",
      bytes / 1e9, label, steps, A[1], A[3] + A[4], bytes / 1e6 / A[1], A[2] / 1024, A[2] * 1024 / bytes,
      I[1], I[3] + I[4], bytes / 1e6 / I[1], I[2] / 1024, I[2] * 1024 / bytes,
      (analyzed == steps) ? "all " analyzed " steps" : "ONLY " analyzed " of " steps " steps"
    # For the verdict: RSS share, CPU seconds per GB, whether every step was analyzed.
    printf "%.4f %.4f %d\n", A[2] * 1024 / bytes, (A[3] + A[4]) / (bytes / 1e9), analyzed == steps > "/dev/stderr" }' \
    2>>"$tmp/verdict"
}

for gb in "${sizes[@]}"; do
  steps=$(awk -v gb="$gb" -v b="$bytes_per_step" 'BEGIN { printf "%d", gb * 1e9 / b + 0.5 }')
  "$synth" -s launch_bound -n "$steps" -o "$tmp/t.json" >/dev/null
  measure "$tmp/t.json" "$steps" json
  rm -f "$tmp/t.json"
done
steps=$(awk -v gb="$largest" -v b="$bytes_per_step" 'BEGIN { printf "%d", gb * 1e9 / b + 0.5 }')
"$synth" -s launch_bound -n "$steps" -o "$tmp/t.json.gz" >/dev/null
measure "$tmp/t.json.gz" "$steps" json.gz

# The goals (issue 18): peak RSS of the whole analysis at most 0.35x the JSON at every size, time
# linear in size (CPU seconds per GB within 1.25x of each other: wall times scatter with the
# load), every step analyzed. Exit 1 when one is missed.
awk -v goal=0.35 '{ rss = $1 > rss ? $1 : rss; lo = (NR == 1 || $2 < lo) ? $2 : lo; hi = $2 > hi ? $2 : hi; all += $3 }
  END {
    ok = rss <= goal && hi <= 1.25 * lo && all == NR
    printf "verdict: peak RSS at most %.2fx the JSON (goal <= %.2fx); analysis CPU %.2f-%.2f s per GB (spread %.2fx, goal <= 1.25x); %s: %s\n",
      rss, goal, lo, hi, hi / lo, all == NR ? "every step analyzed" : "STEPS MISSING", ok ? "met" : "NOT MET"
    exit ok ? 0 : 1 }' "$tmp/verdict"
