#!/usr/bin/env bash
# Nsight Systems SQLite exports: a corrupt or truncated export is one clear error naming the file
# (exit 2); a .nsys-rep asks to be exported; `stepwatch analyze --json -` exits 0 on every corpus
# nsys file. Skipped (77) without the corpus.
set -uo pipefail
cli=$1; build=$2; corpus=$3
here=$(dirname "$0")
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

# Synthetic: an SQLite header followed by garbage, a real export cut short, a plain SQLite file.
python3 - "$tmp" <<'PY'
import os, sqlite3, sys
d = sys.argv[1]
hdr = b"SQLite format 3\x00" + bytes([0x10, 0x00, 1, 1, 0, 64, 32, 32]) + bytes(76)
open(d + "/corrupt.sqlite", "wb").write(hdr + bytes((i * 131) & 0xFF for i in range(8192)))
db = sqlite3.connect(d + "/full.sqlite")
db.executescript("""
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
  correlationId INTEGER, demangledName INTEGER);
""")
db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, "kernel_%d" % i * 8) for i in range(2000)])
db.commit(); db.close()
data = open(d + "/full.sqlite", "rb").read()
open(d + "/truncated.sqlite", "wb").write(data[: len(data) // 2])
db = sqlite3.connect(d + "/plain.sqlite"); db.execute("CREATE TABLE t (x)"); db.commit(); db.close()
open(d + "/report1.nsys-rep", "wb").write(b"\x00NSYS-REP binary")
PY
expect_error corrupt-sqlite "corrupt.sqlite" "$cli" analyze "$tmp/corrupt.sqlite"
expect_error truncated-sqlite "truncated.sqlite" "$cli" analyze "$tmp/truncated.sqlite"
expect_error not-nsys "plain.sqlite: not an Nsight Systems export" "$cli" analyze "$tmp/plain.sqlite"
expect_error nsys-rep "nsys export --type sqlite" "$cli" analyze "$tmp/report1.nsys-rep"
# By content, not by name: the corrupt export renamed still reaches the nsys importer.
cp "$tmp/corrupt.sqlite" "$tmp/corrupt.json"
expect_error corrupt-by-content "corrupt.json: .*SQLite" "$cli" analyze "$tmp/corrupt.json"

# A directory where `nsys export` left the report next to its export: the report is not a trace
# of the directory (named directly it gets the error above).
mkdir "$tmp/exported"
"$build/bin/stepwatch-synth" --scenario ddp_overlap --steps 3 -o "$tmp/exported/report1.json" >/dev/null ||
  { echo "FAIL: stepwatch-synth"; exit 1; }
cp "$tmp/report1.nsys-rep" "$tmp/exported/"
"$cli" analyze --json "$tmp/exported.jsonl" "$tmp/exported" >/dev/null 2>"$tmp/err" ||
  { echo "FAIL [report-next-to-trace]: the directory did not analyze"; cat "$tmp/err"; exit 1; }
echo "ok [report-next-to-trace]"

if [ ! -d "$corpus/nsys" ]; then echo "nsys corpus not found at $corpus: skipped"; exit 77; fi
n=0
while IFS= read -r f; do
  "$cli" analyze --json - "$f" >"$tmp/o.jsonl" 2>"$tmp/err.txt"
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: exit $rc on $f"; cat "$tmp/err.txt"; exit 1; fi
  python3 "$here/check_jsonl.py" "$tmp/o.jsonl" >/dev/null || { echo "FAIL: schema on $f"; exit 1; }
  n=$((n + 1))
done < <(find "$corpus/nsys" -name '*.sqlite' | sort)
[ $n -eq 6 ] || { echo "FAIL: $n corpus nsys files, expected 6"; exit 1; }
# A directory of exports: one rank per file, in name order.
"$cli" analyze --json - "$corpus/nsys" >"$tmp/dir.jsonl" || { echo "FAIL: directory"; exit 1; }
python3 - "$tmp/dir.jsonl" <<'PY' || exit 1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ranks = sorted(r["rank"] for r in recs if r["type"] == "summary")
assert ranks == list(range(6)), ranks
PY
echo "ok: $n corpus nsys files"
