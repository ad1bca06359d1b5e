#!/usr/bin/env bash
# `stepwatch analyze` over several ranks (files or a directory), on synthetic jobs written by
# stepwatch-synth: the injected straggler is named in text and JSONL, the JSONL passes the schema
# checker, balanced ranks are silent, and ±50 ms clock offsets between the files change nothing.
# Args: $1 = stepwatch binary, $2 = build dir, $3 = corpus dir.
set -euo pipefail
SW="$1"
BUILD="$2"
CORPUS="${3:-}"
SYNTH="$BUILD/bin/stepwatch-synth"
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -x "$SYNTH" ] || { echo "stepwatch-synth not built: skipping"; exit 77; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# The straggler set and cause of every merged finding, one line each.
verdict() {
  python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
last_summary = max(i for i, r in enumerate(recs) if r["type"] == "summary")
for r in recs[last_summary + 1:]:
    e = r["evidence"]
    print(r["detector"], e["straggler_ranks"], e["cause"], e["steps"])
PY
}

# Compute-slow rank 2, clocks offset +50/-50/+37 ms; files given one by one.
"$SYNTH" --ranks 4 --straggler compute --straggler-rank 2 --clock-offsets-ms 0,50,-50,37 -o "$TMP/compute"
"$SW" analyze --json "$TMP/compute.jsonl" "$TMP/compute/rank0.json" "$TMP/compute/rank1.json" \
  "$TMP/compute/rank2.json" "$TMP/compute/rank3.json" > "$TMP/compute.txt"
python3 "$HERE/check_jsonl.py" "$TMP/compute.jsonl" --expect-steps 32
[ "$(verdict "$TMP/compute.jsonl")" = "late_rank [2] compute 8" ] || { echo "compute verdict: $(verdict "$TMP/compute.jsonl")"; exit 1; }
grep -q "== merged ranks 0,1,2,3" "$TMP/compute.txt" || { echo "no merged section"; cat "$TMP/compute.txt"; exit 1; }
grep -q "\[rank 2\]\[step 1\] late_rank: rank 2 is the straggler on 8 of 8 steps" "$TMP/compute.txt" \
  || { echo "no straggler line"; exit 1; }

# The same job without offsets: the same verdict. A directory stands for its files.
"$SYNTH" --ranks 4 --straggler compute --straggler-rank 2 -o "$TMP/compute0"
"$SW" analyze -q --json "$TMP/compute0.jsonl" "$TMP/compute0"
[ "$(verdict "$TMP/compute0.jsonl")" = "$(verdict "$TMP/compute.jsonl")" ] || { echo "offsets changed the verdict"; exit 1; }

# Input-slow rank 1 (JSONL on stdout, the report on stderr).
"$SYNTH" --ranks 4 --straggler input --straggler-rank 1 --clock-offsets-ms -50,37,0,50 -o "$TMP/input"
"$SW" analyze --json - "$TMP/input" > "$TMP/input.jsonl" 2> "$TMP/input.txt"
python3 "$HERE/check_jsonl.py" "$TMP/input.jsonl"
[ "$(verdict "$TMP/input.jsonl")" = "late_rank [1] input 8" ] || { echo "input verdict: $(verdict "$TMP/input.jsonl")"; exit 1; }

# Balanced ranks: the merged stage runs and stays silent.
"$SYNTH" --ranks 4 --clock-offsets-ms 0,-50,50,37 -o "$TMP/balanced"
"$SW" analyze --json "$TMP/balanced.jsonl" "$TMP/balanced" > "$TMP/balanced.txt"
python3 "$HERE/check_jsonl.py" "$TMP/balanced.jsonl"
[ -z "$(verdict "$TMP/balanced.jsonl")" ] || { echo "balanced ranks flagged: $(verdict "$TMP/balanced.jsonl")"; exit 1; }
grep -q "findings (across ranks): none" "$TMP/balanced.txt" || { echo "no merged verdict on balanced ranks"; exit 1; }

# A single file: no merged section, output as before.
"$SW" analyze "$TMP/balanced/rank0.json" > "$TMP/single.txt"
if grep -q "merged" "$TMP/single.txt"; then echo "merged section for one file"; exit 1; fi

# The corpus's two sampled ranks, when present.
if [ -n "$CORPUS" ] && [ -d "$CORPUS/kineto/hta-sampled-2ranks" ]; then
  "$SW" analyze --json "$TMP/hta.jsonl" "$CORPUS/kineto/hta-sampled-2ranks" > "$TMP/hta.txt"
  python3 "$HERE/check_jsonl.py" "$TMP/hta.jsonl" --expect-steps 4
  grep -q "rank 1: offset" "$TMP/hta.txt" || { echo "corpus ranks not aligned"; cat "$TMP/hta.txt"; exit 1; }
fi
echo "multi_rank: ok"
