#!/usr/bin/env bash
# `stepwatch run -- CMD`: sets both injection variables to the library next to the CLI and execs.
set -uo pipefail
cli=$1; build=$2
lib="$build/lib/libstepwatch.so"
if [ ! -f "$lib" ]; then echo "libstepwatch.so not built (no CUDA toolkit): skipped"; exit 77; fi
want=$(cd "$(dirname "$lib")" && pwd -P)/libstepwatch.so
got=$("$cli" run --output-dir /tmp/sw-run-test -- sh -c 'echo "$CUDA_INJECTION64_PATH|$NVTX_INJECTION64_PATH|$STEPWATCH_OUTPUT_DIR"')
[ "$got" = "$want|$want|/tmp/sw-run-test" ] || { echo "FAIL: got '$got', want '$want|$want|/tmp/sw-run-test'"; exit 1; }
"$cli" run --library /no/such/lib.so -- true 2>/dev/null; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: missing library exit $rc"; exit 1; }
"$cli" run -- /no/such/command 2>/dev/null; rc=$?
[ $rc -eq 127 ] || { echo "FAIL: missing command exit $rc"; exit 1; }
echo "ok: run"

# The launcher waits for the job and says what happened: a job that never starts CUDA (nothing
# loads the library) is told from one that was traced; the job's exit status is passed through.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$cli" run --output-dir "$tmp/idle" -- sh -c 'exit 3' 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || { echo "FAIL: exit status not passed through: $rc"; cat "$tmp/err"; exit 1; }
grep -q "^stepwatch: running sh with .*libstepwatch.so injected; outputs in $tmp/idle/" "$tmp/err" \
  || { echo "FAIL: no start-up line"; cat "$tmp/err"; exit 1; }
grep -q "no process of it loaded the library: CUDA never started" "$tmp/err" \
  || { echo "FAIL: no 'CUDA never started' line"; cat "$tmp/err"; exit 1; }
echo "ok: run says when nothing loaded the library"
# A process that loads the library (as the CUDA driver would) is active under `stepwatch run`:
# CUDA_INJECTION64_PATH names it, so it traces even before any cuInit.
# (Not with a sanitized library: Python is not built with the sanitizer runtime, which must load first.)
if command -v python3 >/dev/null && ! grep -qa -e "__asan_init" -e "__tsan_init" "$lib"; then
  (cd "$tmp" && STEPWATCH_LOG_LEVEL=warn "$cli" run --output-dir out -- python3 -c '
import ctypes, os, sys
lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
sys.exit(0 if lib.stepwatch_enabled() == 1 and lib.stepwatch_step_begin(0) == 0 else 9)' 2>"$tmp/err"); rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: the loaded library was not active under stepwatch run (exit $rc)"; cat "$tmp/err"; exit 1; }
  grep -q "1 process traced, exit summaries in $tmp/out/rank\*-pid\*/summary.txt" "$tmp/err" \
    || { echo "FAIL: no 'traced' line"; cat "$tmp/err"; exit 1; }
  echo "ok: run counts the traced process"
fi
# SIGTERM to the launcher reaches the job (torchrun/slurm end jobs so): 128 + 15.
"$cli" run --output-dir "$tmp/term" -- sh -c 'trap "exit 143" TERM; sleep 30 & wait' 2>/dev/null &
launcher=$!
sleep 1; kill -TERM "$launcher"; wait "$launcher"; rc=$?
[ $rc -eq 143 ] || { echo "FAIL: SIGTERM not passed to the job: exit $rc"; exit 1; }
echo "ok: run passes SIGTERM to the job"
