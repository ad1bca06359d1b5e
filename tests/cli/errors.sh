#!/usr/bin/env bash
# Malformed, truncated or missing input: one clear error naming the file, exit 2, no crash.
set -uo pipefail
cli=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

expect_error() {  # expect_error NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL [$name]: exit $rc, expected 2"; cat "$tmp/err"; exit 1; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then echo "FAIL [$name]: stderr lacks '$pattern':"; cat "$tmp/err"; exit 1; fi
  if [ "$(wc -l <"$tmp/err")" -gt 3 ]; then echo "FAIL [$name]: more than a short message:"; cat "$tmp/err"; exit 1; fi
  echo "ok [$name]: $(head -1 "$tmp/err")"
}

printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur"' >"$tmp/truncated.json"
printf 'this is not json' >"$tmp/garbage.json"
: >"$tmp/empty.json"
python3 - "$tmp" <<'PY'
import gzip, sys
data = gzip.compress(b'{"traceEvents": [' + b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2},' * 2000 + b'{}]}')
open(sys.argv[1] + "/truncated.json.gz", "wb").write(data[: len(data) // 2])
PY
mkdir "$tmp/emptydir"

expect_error missing-file "no_such_trace.json" "$cli" analyze "$tmp/no_such_trace.json"
expect_error truncated-json "truncated.json" "$cli" analyze "$tmp/truncated.json"
expect_error garbage "garbage.json" "$cli" analyze "$tmp/garbage.json"
expect_error empty-file "empty.json" "$cli" analyze "$tmp/empty.json"
expect_error truncated-gzip "truncated.json.gz" "$cli" analyze "$tmp/truncated.json.gz"
expect_error empty-dir "emptydir" "$cli" analyze "$tmp/emptydir"
expect_error bad-pattern "step-pattern" "$cli" analyze --step-pattern '([' "$tmp/garbage.json"
expect_error unknown-detector "no_such_detector" "$cli" analyze --disable no_such_detector "$tmp/garbage.json"
expect_error bad-threshold "min-pct" "$cli" analyze --min-pct 500 "$tmp/garbage.json"
expect_error bad-detector-threshold "hidden_sync:x:1" "$cli" analyze --threshold hidden_sync:x:1 "$tmp/garbage.json"
expect_error costless-threshold "no cost" "$cli" analyze --threshold data_loss:5:1 "$tmp/garbage.json"
expect_error no-input "inputs" "$cli" analyze

"$cli" detectors >"$tmp/det" || { echo "FAIL: detectors"; exit 1; }
for id in input_starvation hidden_sync exposed_collective no_step_marks data_loss individual_score late_rank host_bound initialization; do
  grep -q "^$id " "$tmp/det" || { echo "FAIL: detectors lacks $id"; exit 1; }
done
echo "ok: detectors"
