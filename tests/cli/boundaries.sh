#!/usr/bin/env bash
# The injected library exports exactly the C API and the injection entry points, and no file
# outside libtrace/src/cupti/ (tests aside) includes a CUPTI header.
set -uo pipefail
cli=$1; build=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
bad=$(cd "$root" && grep -rlE '#include *[<"]cupti' --include='*.h' --include='*.cpp' --include='*.cu' \
        libtrace detectors examples bench python_shim 2>/dev/null | grep -v '^libtrace/src/cupti/')
[ -z "$bad" ] || { echo "FAIL: CUPTI headers included outside libtrace/src/cupti/: $bad"; exit 1; }
echo "ok: CUPTI headers only in libtrace/src/cupti/"
lib="$build/lib/libstepwatch.so"
if [ ! -f "$lib" ]; then echo "libstepwatch.so not built (no CUDA toolkit): export check skipped"; exit 77; fi
want="InitializeInjection InitializeInjectionNvtx2 InitializeInjectionNvtxExtension stepwatch_enabled stepwatch_flush stepwatch_last_step stepwatch_pause stepwatch_phase_pop stepwatch_phase_push stepwatch_resume stepwatch_step_begin stepwatch_step_end stepwatch_version"
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWVBDR]$/ {print $3}' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || { echo "FAIL: exported symbols differ"; echo " got:  $got"; echo " want: $want"; exit 1; }
echo "ok: libstepwatch.so exports exactly: $got"
