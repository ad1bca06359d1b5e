#!/usr/bin/env bash
# `stepwatch analyze --json -` exits 0 on every corpus Kineto file, and the JSONL holds the
# output contract with every step's breakdown summing to dur_ms (within 0.1%).
set -uo pipefail
cli=$1; build=$2; corpus=$3
here=$(dirname "$0")
if [ ! -d "$corpus/kineto" ]; then echo "corpus not found at $corpus: skipped"; exit 77; fi
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
n=0
while IFS= read -r f; do
  "$cli" analyze --json - "$f" >"$out/o.jsonl" 2>"$out/err.txt"
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: exit $rc on $f"; cat "$out/err.txt"; exit 1; fi
  python3 "$here/check_jsonl.py" "$out/o.jsonl" >/dev/null || { echo "FAIL: schema on $f"; exit 1; }
  n=$((n + 1))
done < <(find "$corpus/kineto" -name '*.json.gz' | sort)
[ $n -ge 15 ] || { echo "FAIL: only $n corpus files"; exit 1; }
# A directory is one rank per file.
"$cli" analyze --json - "$corpus/kineto/hta-sampled-2ranks" >"$out/ranks.jsonl" || exit 1
python3 - "$out/ranks.jsonl" <<'PY' || exit 1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ranks = sorted(r["rank"] for r in recs if r["type"] == "summary")
assert ranks == [0, 1], ranks
PY
echo "ok: $n corpus files"
