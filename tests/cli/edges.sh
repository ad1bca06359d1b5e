#!/usr/bin/env bash
# The edges a new user hits with `stepwatch analyze`, and the exit-status table (README "Exit
# status"): the report on stderr beside JSONL on stdout, an nsys-named file that is not SQLite, a
# directory with one corrupt rank file, the OS's reason for an unwritable output, the same rank
# twice, traces of two different jobs, and --fail-on.
# Args: $1 = stepwatch binary, $2 = build dir.
set -uo pipefail
SW="$1"
SYNTH="$2/bin/stepwatch-synth"
[ -x "$SYNTH" ] || { echo "stepwatch-synth not built: skipping"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL [$1]: $2"; [ -f "$tmp/err" ] && cat "$tmp/err"; exit 1; }

"$SYNTH" -s slow_dataloader -n 8 -o "$tmp/starved.json" >/dev/null || fail synth "slow_dataloader"
"$SYNTH" -s gpu_bound -n 8 -o "$tmp/healthy.json" >/dev/null || fail synth gpu_bound

# 0, with JSONL on stdout and the human report on stderr.
"$SW" analyze --json - "$tmp/starved.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail json-stdout "exit $rc"
head -1 "$tmp/out" | grep -q '"type":"meta"' || fail json-stdout "stdout is not the JSONL"
grep -q "input_starvation" "$tmp/err" || fail json-stdout "no human report on stderr"
grep -q '"type"' "$tmp/err" && fail json-stdout "JSONL on stderr"
echo "ok [json-stdout]: JSONL on stdout, the report on stderr"

# 2: named as an nsys export, but not SQLite — never "malformed JSON".
printf 'not a database' >"$tmp/bad.sqlite"; : >"$tmp/empty.sqlite"
for f in bad empty; do
  "$SW" analyze "$tmp/$f.sqlite" >/dev/null 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] || fail "$f-sqlite" "exit $rc, expected 2"
  grep -q "not an SQLite database" "$tmp/err" || fail "$f-sqlite" "no 'not an SQLite database'"
  grep -q "JSON" "$tmp/err" && fail "$f-sqlite" "talks about JSON"
  echo "ok [$f-sqlite]: $(head -1 "$tmp/err")"
done

# 2, after analyzing the rest: one corrupt rank file in a job's directory.
mkdir "$tmp/job" && "$SYNTH" --ranks 3 -n 8 -o "$tmp/job" >/dev/null || fail synth "--ranks 3"
printf '{"traceEvents": [{"ph": "X"' >"$tmp/job/rank1.json"
"$SW" analyze --json "$tmp/job.jsonl" "$tmp/job" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail corrupt-rank "exit $rc, expected 2"
grep -q "rank1.json" "$tmp/err" || fail corrupt-rank "the bad file is not named"
grep -q "1 of 3 inputs could not be analyzed" "$tmp/err" || fail corrupt-rank "no count of the failed inputs"
ranks=$(python3 -c 'import json,sys; print(sorted({r["rank"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "summary" and "rank" in r}))' "$tmp/job.jsonl")
[ "$ranks" = "[0, 2]" ] || fail corrupt-rank "summaries for $ranks, expected [0, 2]"
echo "ok [corrupt-rank]: ranks 0 and 2 analyzed, rank1.json reported, exit 2"

# 2: an output that cannot be opened says why.
"$SW" analyze --json "$tmp/no/such/dir/out.jsonl" "$tmp/starved.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail cannot-write "exit $rc"
grep -q "cannot write .*: No such file or directory" "$tmp/err" || fail cannot-write "no OS reason"
echo "ok [cannot-write]: $(head -1 "$tmp/err")"

# 0 with a warning: the same rank twice is not a job; each file is still reported.
"$SW" analyze --json "$tmp/twice.jsonl" "$tmp/job/rank0.json" "$tmp/job/rank0.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail same-rank "exit $rc"
grep -q "rank 0 appears twice" "$tmp/err" || fail same-rank "no warning"
grep -q '"late_rank"\|"type":"merged' "$tmp/twice.jsonl" && fail same-rank "merged anyway"
echo "ok [same-rank]: $(head -1 "$tmp/err")"

# Two jobs: rank files whose wall-clock bases are days apart get no cross-rank verdict.
mkdir "$tmp/other" && "$SYNTH" --ranks 2 -n 8 --straggler compute --straggler-rank 1 -o "$tmp/other" >/dev/null
python3 - "$tmp/other/rank0.json" "$tmp/other/rank1.json" <<'PY'
import json, sys
for i, p in enumerate(sys.argv[1:]):
    t = json.load(open(p))
    t["baseTimeNanoseconds"] = 1_700_000_000_000_000_000 + i * 3 * 86400 * 10**9  # three days apart
    json.dump(t, open(p, "w"))
PY
"$SW" analyze "$tmp/other/rank0.json" "$tmp/other/rank1.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail other-job "exit $rc"
grep -q "72 h apart from rank 0's trace" "$tmp/out" || { cat "$tmp/out"; fail other-job "no note on the clock bases"; }
grep -q "late_rank" "$tmp/out" && fail other-job "a cross-rank verdict across two jobs"
echo "ok [other-job]: no verdict across traces recorded 3 days apart"

# 4: --fail-on at or below a finding's severity; 0 above it and on a healthy trace.
"$SW" analyze -q --fail-on warning "$tmp/starved.json"; rc=$?
[ $rc -eq 4 ] || fail fail-on "exit $rc, expected 4 for a warning finding"
"$SW" analyze -q --fail-on critical "$tmp/healthy.json"; rc=$?
[ $rc -eq 0 ] || fail fail-on "exit $rc on a healthy trace, expected 0"
"$SW" analyze -q --fail-on sometimes "$tmp/healthy.json" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail fail-on "exit $rc for a bad severity, expected 2"
echo "ok [fail-on]: 4 on a warning, 0 when healthy, 2 for a bad value"

"$SW" --help | grep -q "analyze .*Nsight Systems" || fail help "analyze's description does not name nsys exports"
echo "ok [help]"
