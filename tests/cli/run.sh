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
