#!/usr/bin/env bash
# The fuzz stage of the test gate: deterministic. Builds the libFuzzer targets (build-fuzz/) and
# runs every committed input once under ASan+UBSan+leak detection: the minimised corpus
# (tests/fuzz/corpus/<fuzzer>/) and every past crash (tests/fuzz/regressions/<fuzzer>/). No random
# mutation happens here, so the gate passes or fails on the code alone, never on luck.
#
# Random exploration is a separate command, run before stopping work (tests/fuzz/explore.sh);
# what it finds becomes a regression input plus a fix.
#
#   tests/fuzz/run_fuzzers.sh
#
# Skips (exit 0, with a message) when clang/clang++ or libFuzzer is not installed.
set -euo pipefail
# shellcheck source=tests/fuzz/fuzzers.sh
source "$(dirname "$0")/fuzzers.sh"
cd "$fuzz_root"
fuzz_toolchain_ok || exit 0
fuzz_build

status=0
logs=$fuzz_bdir/fuzz-replay
rm -rf "$logs"
mkdir -p "$logs"
for f in "${fuzzers[@]}"; do
  dirs=()
  for d in "$fuzz_dir/corpus/$f" "$fuzz_dir/regressions/$f"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  if ((${#dirs[@]} == 0)); then
    echo "fuzz: $f has no committed inputs (tests/fuzz/corpus/$f): run tests/fuzz/explore.sh --update" >&2
    status=1
    continue
  fi
  inputs=$(find "${dirs[@]}" -type f | wc -l)
  # -runs=0: execute each input of the given directories once, mutate nothing. Into an empty work
  # directory first, so that libFuzzer never writes into the committed corpus.
  work=$logs/$f.work
  mkdir -p "$work"
  if "$fuzz_bdir/bin/$f" "$work" "${dirs[@]}" -runs=0 "${fuzz_common_flags[@]}" \
      -artifact_prefix="$logs/$f-" >"$logs/$f.log" 2>&1; then
    echo "fuzz: $f replayed $inputs inputs: ok"
  else
    echo "fuzz: $f FAILED on a committed input (log: $logs/$f.log)" >&2
    tail -40 "$logs/$f.log" >&2
    status=1
  fi
  rm -rf "$work"
done
[ "$status" = 0 ] && echo "fuzz: every committed input replayed without a crash, leak or sanitizer report"
exit "$status"
