#!/usr/bin/env bash
# A trace without GPU activity (an empty traceEvents, a CPU-only profiler trace): one line saying
# so and exit status 3 (README "Exit status"), not a table of zeros with status 0.
set -uo pipefail
cli=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

printf '{"traceEvents": []}' >"$tmp/empty_events.json"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]}' \
  >"$tmp/cpu_only.json"
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 50},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]}' \
  >"$tmp/gpu.json"

for f in empty_events cpu_only; do
  "$cli" analyze "$tmp/$f.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 3 ]; then echo "FAIL [$f]: exit $rc, expected 3"; cat "$tmp/out" "$tmp/err"; exit 1; fi
  if [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "no GPU activity" "$tmp/err"; then
    echo "FAIL [$f]: expected one 'no GPU activity' line:"; cat "$tmp/err"; exit 1
  fi
  if [ -s "$tmp/out" ]; then echo "FAIL [$f]: a report was printed:"; cat "$tmp/out"; exit 1; fi
  echo "ok [$f]: $(cat "$tmp/err")"
done

# One rank without GPU activity among others: said, the rest analyzed, status 0.
"$cli" analyze "$tmp/gpu.json" "$tmp/cpu_only.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL [mixed]: exit $rc, expected 0"; cat "$tmp/err"; exit 1; fi
grep -q "cpu_only.json: no GPU activity" "$tmp/err" || { echo "FAIL [mixed]: no line for the CPU-only rank"; exit 1; }
grep -q "gpu.json" "$tmp/out" || { echo "FAIL [mixed]: the GPU rank was not reported"; exit 1; }
echo "ok [mixed]"
