#!/usr/bin/env bash
# Inputs that can be read only once, and inputs that must not make memory grow (issue 17 items 1
# and 2): `-` and /dev/stdin from a pipe, a FIFO, an nsys export on stdin, /dev/zero, a gzip bomb
# of zeros (fails at its first bytes), a bomb of whitespace and an event with a huge string (both
# imported in bounded memory), and the input cap (--max-input-gb). Every run has a timeout: a
# hang fails the test instead of stalling it.
set -uo pipefail
cli=$1; build=$2
synth="$build/bin/stepwatch-synth"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ -x "$synth" ] || { echo "stepwatch-synth not built: skipped"; exit 77; }
fail() { echo "FAIL [$1]: $2"; [ -f "$tmp/err" ] && cat "$tmp/err"; exit 1; }

"$synth" -s launch_bound -n 3 -o "$tmp/t.json" >/dev/null || fail synth "stepwatch-synth failed"
gzip -c "$tmp/t.json" >"$tmp/t.json.gz"
timeout 60 "$cli" analyze -q --json "$tmp/ref.jsonl" "$tmp/t.json" 2>"$tmp/err" || fail reference "exit $?"

same_as_reference() {  # same_as_reference NAME  (compares $tmp/out.jsonl with the path-based run)
  cmp -s "$tmp/ref.jsonl" "$tmp/out.jsonl" || fail "$1" "JSONL differs from the run on the file itself"
  echo "ok [$1]"
}

# 1. Read once: pipes, /dev/stdin, a FIFO (before: a 16-byte sniff drained the pipe and a reopen
#    then hung on the FIFO or read "malformed JSON").
cat "$tmp/t.json" | timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" - 2>"$tmp/err" || fail stdin-pipe "exit $?"
same_as_reference stdin-pipe
cat "$tmp/t.json.gz" | timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" - 2>"$tmp/err" || fail stdin-gzip "exit $?"
same_as_reference stdin-gzip
timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" - <"$tmp/t.json.gz" 2>"$tmp/err" || fail stdin-file "exit $?"
same_as_reference stdin-redirected-file
cat "$tmp/t.json" | timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" /dev/stdin 2>"$tmp/err" || fail dev-stdin "exit $?"
same_as_reference dev-stdin
mkfifo "$tmp/fifo"
(cat "$tmp/t.json.gz" >"$tmp/fifo" &)
timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" "$tmp/fifo" 2>"$tmp/err" || fail fifo "exit $? (124: hung)"
same_as_reference fifo
timeout 10 "$cli" analyze -q - - </dev/null >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "standard input" "$tmp/err" || fail stdin-twice "expected exit 2 naming standard input"
echo "ok [stdin-twice]"

# An nsys export arriving on a pipe (SQLite needs random access: read into memory).
python3 - "$tmp/n.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'gemm'), (3, 'train_step');
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1100, 71172111450, 1, 1);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, demangledName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 900000, 0, 7, 1, 2);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, textId INTEGER, globalTid INTEGER);
INSERT INTO NVTX_EVENTS VALUES (500, 1000000, 59, 3, 71172111450);
""")
db.commit()
PY
timeout 60 "$cli" analyze -q --json "$tmp/ref.jsonl" "$tmp/n.sqlite" 2>"$tmp/err" || fail nsys-file "exit $?"
cat "$tmp/n.sqlite" | timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" - 2>"$tmp/err" || fail nsys-stdin "exit $?"
same_as_reference nsys-stdin

# 2. Bounded memory. RSS limits are checked where GNU time exists (peak RSS in KiB). Under ASan the
# shadow memory and the free quarantine add their own (bounded) share: the limits scale by 4 there.
rss_factor=1
if grep -qa -e "__asan_init" -e "AddressSanitizer" "$cli"; then rss_factor=4; fi
measure() {  # measure NAME EXPECTED_RC MAX_SECONDS MAX_RSS_MIB ARGS...: runs the CLI, checks rc, time, RSS
  local name=$1 want=$2 seconds=$3 mib=$(($4 * rss_factor)); shift 4
  local start=$SECONDS
  if [ -x /usr/bin/time ]; then
    timeout "$seconds" /usr/bin/time -f "%M" -o "$tmp/rss" "$cli" analyze -q "$@" >/dev/null 2>"$tmp/err"
  else
    timeout "$seconds" "$cli" analyze -q "$@" >/dev/null 2>"$tmp/err"
  fi
  local rc=$?
  [ $rc -eq "$want" ] || fail "$name" "exit $rc, expected $want (124: over ${seconds}s)"
  if [ -x /usr/bin/time ]; then
    local kib; kib=$(tail -1 "$tmp/rss")
    [ "$kib" -le $((mib * 1024)) ] || fail "$name" "peak RSS $((kib / 1024)) MiB, limit $mib MiB"
    echo "ok [$name]: $((SECONDS - start)) s, peak RSS $((kib / 1024)) MiB"
  else
    echo "ok [$name]: $((SECONDS - start)) s (no /usr/bin/time: RSS not checked)"
  fi
}

# /dev/zero is not JSON: it fails at its first byte (before: it grew until OOM).
measure dev-zero 2 10 64 /dev/zero
grep -q "starts with byte 0x00" "$tmp/err" || fail dev-zero "no 'starts with byte 0x00' in the message"

python3 - "$tmp" <<'PY'
import gzip, sys, zlib
d = sys.argv[1]
def member(data_chunk, times):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = b"".join(c.compress(data_chunk) for _ in range(times))
    return out + c.flush()
# 2 GiB of zeros as 32 gzip members of 64 MiB (multi-member gzip is one valid stream): ~2 MB.
zeros = member(bytes(1 << 20), 64)
open(d + "/zeros.json.gz", "wb").write(zeros * 32)
# 1 GiB of whitespace, then a real trace.
spaces = member(b" " * (1 << 20), 64)
open(d + "/spaces.json.gz", "wb").write(spaces * 16 + gzip.compress(open(d + "/t.json", "rb").read()))
# One event whose name is a 100 MiB string (over the 16 MiB default record cap), then the trace's events.
text = open(d + "/t.json", "rb").read()
at = text.index(b"[", text.index(b'"traceEvents"')) + 1
huge = b'{"ph": "X", "cat": "kernel", "name": "' + b"x" * (100 << 20) + b'", "ts": 1, "dur": 1},\n'
open(d + "/huge.json.gz", "wb").write(gzip.compress(text[:at] + huge + text[at:], 1))
PY
# A bomb of zeros fails at its first bytes (before: 2 GiB inflated, then "malformed JSON").
measure gzip-bomb 2 10 64 "$tmp/zeros.json.gz"
grep -q "starts with byte 0x00 (a Kineto trace starts with" "$tmp/err" || fail gzip-bomb "message lacks the first byte"
grep -q "at byte 0)" "$tmp/err" || fail gzip-bomb "not at byte 0"
# Whitespace is not kept: 1 GiB of it before the trace costs time, not memory.
measure whitespace-bomb 0 60 100 "$tmp/spaces.json.gz"
# A huge string in one event: the event is scanned, not held, and counted.
measure huge-string 0 60 128 "$tmp/huge.json.gz"
timeout 60 "$cli" analyze "$tmp/huge.json.gz" 2>"$tmp/err" | grep -q "records left out by the importer: 1 (event_too_large 1)" ||
  fail huge-string "the left-out event is not reported"
echo "ok [huge-string-reported]"
timeout 60 "$cli" analyze -q --json "$tmp/out.jsonl" --max-event-mb 128 "$tmp/huge.json.gz" 2>"$tmp/err" ||
  fail max-event-mb "exit $?"
echo "ok [max-event-mb: kept under a raised cap]"

# The input cap is explicit and configurable: past it the import fails with one clear line.
measure input-cap 2 10 64 --max-input-gb 0.0005 "$tmp/spaces.json.gz"
grep -q "input cap of 0.0005 GiB" "$tmp/err" || fail input-cap "message does not name the cap"
exit 0
