#!/usr/bin/env bash
# Random exploration with the libFuzzer targets — the developers' command, run before stopping
# work; never part of the test gate (tests/fuzz/run_fuzzers.sh replays committed inputs only).
#
#   tests/fuzz/explore.sh [SECONDS]            # SECONDS per fuzzer (default 300), from the committed
#                                              # corpus + generated seeds, with the dictionaries
#   tests/fuzz/explore.sh --update [SECONDS]   # then merge the inputs that add coverage into
#                                              # tests/fuzz/corpus/<fuzzer>/ (commit them)
#   FUZZ_JOBS=4 tests/fuzz/explore.sh 3600     # 4 workers per fuzzer
#   FUZZ_ONLY=fuzz_nsys_rows tests/fuzz/explore.sh 1800
#
# A crash, leak, timeout or OOM lands in build-fuzz/fuzz-artifacts/<fuzzer>/; reproduce it with
#   build-fuzz/bin/<fuzzer> build-fuzz/fuzz-artifacts/<fuzzer>/crash-...
# then fix it and commit the input as tests/fuzz/regressions/<fuzzer>/<what-it-found> (the gate
# replays it from then on). Exit status 1 when anything was found.
set -euo pipefail
# shellcheck source=tests/fuzz/fuzzers.sh
source "$(dirname "$0")/fuzzers.sh"
# shellcheck source=tests/fuzz/make_seeds.sh
source "$(dirname "$0")/make_seeds.sh"
cd "$fuzz_root"
update=0
if [ "${1:-}" = "--update" ]; then
  update=1
  shift
fi
seconds=${1:-300}
jobs=${FUZZ_JOBS:-1}
only=${FUZZ_ONLY:-}
fuzz_toolchain_ok || exit 0
command -v python3 >/dev/null 2>&1 || { echo "fuzz: python3 is needed for the generated seeds" >&2; exit 2; }
fuzz_build stepwatch_synth

seeds=$fuzz_bdir/fuzz-seeds
explore=$fuzz_bdir/fuzz-explore
artifacts=$fuzz_bdir/fuzz-artifacts
rm -rf "$seeds" "$artifacts"
make_fuzz_seeds "$seeds"
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
status=0
for f in "${fuzzers[@]}"; do
  [ -n "$only" ] && [ "$only" != "$f" ] && continue
  mkdir -p "$explore/$f" "$artifacts/$f"
  dict=$(fuzz_dict "$f")
  dict_flag=()
  [ -n "$dict" ] && dict_flag=(-dict="$dict")
  inputs=("$explore/$f" "$seeds/$f")
  for d in "$fuzz_dir/corpus/$f" "$fuzz_dir/regressions/$f"; do
    [ -d "$d" ] && inputs+=("$d")
  done
  echo "== fuzz: explore $f for ${seconds}s =="
  if ! "$fuzz_bdir/bin/$f" "${inputs[@]}" -max_total_time="$seconds" "${fuzz_common_flags[@]}" "${dict_flag[@]}" \
      -print_final_stats=1 -artifact_prefix="$artifacts/$f/" "${parallel[@]}" >"$artifacts/$f.log" 2>&1; then
    echo "fuzz: $f FOUND SOMETHING (log: $artifacts/$f.log; inputs: $artifacts/$f/)" >&2
    tail -40 "$artifacts/$f.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$artifacts/$f.log" | tr '\n' ' '
    echo "explored corpus: $(find "$explore/$f" -type f | wc -l) inputs"
  fi
  if [ "$update" = 1 ]; then
    # Adds to the committed corpus only the inputs that bring new coverage (libFuzzer's merge), by
    # edges rather than hit counts (-use_counters=0) and at most 16 KiB each: the replayed corpus
    # stays a few MB while every branch the exploration reached is kept.
    mkdir -p "$fuzz_dir/corpus/$f"
    before=$(find "$fuzz_dir/corpus/$f" -type f | wc -l)
    "$fuzz_bdir/bin/$f" -merge=1 -use_counters=0 "$fuzz_dir/corpus/$f" "$explore/$f" "$seeds/$f" \
      -timeout=25 -rss_limit_mb=4096 -max_len=16384 \
      >"$artifacts/$f.merge.log" 2>&1 || { echo "fuzz: merge for $f failed ($artifacts/$f.merge.log)" >&2; status=1; }
    echo "fuzz: tests/fuzz/corpus/$f: $before -> $(find "$fuzz_dir/corpus/$f" -type f | wc -l) inputs"
  fi
done
if [ -n "$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | head -1)" ]; then
  status=1
fi
[ "$status" = 0 ] && echo "fuzz: exploration found no crashes, leaks or timeouts"
exit "$status"
