#!/usr/bin/env bash
# The demo: installs what is missing, builds stepwatch, generates a small training trace with
# known faults (the project's own synthetic-workload model: a host thread launching onto GPU
# streams, written as a PyTorch-profiler/Kineto trace), and analyzes it as a user would.
#
#   examples/demo.sh [SCENARIO...]     default: slow_dataloader item_sync serialized_allreduce ddp_overlap,
#                                      then a 4-rank job with an input-slow rank (the merged analysis)
#   (scenarios: build/bin/stepwatch-synth --list)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/install-deps.sh
echo "== building stepwatch (build/) ==" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target stepwatch_cli stepwatch_synth >/dev/null

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  scenarios=(slow_dataloader item_sync serialized_allreduce ddp_overlap)
fi
out=build/demo
mkdir -p "$out"
for s in "${scenarios[@]}"; do
  build/bin/stepwatch-synth --scenario "$s" --steps 6 --first-step 100 -o "$out/$s.json.gz"
  echo
  echo "################ $s: $(build/bin/stepwatch-synth --list | awk -F'\t' -v s="$s" '$1 == s {print $2}')"
  build/bin/stepwatch analyze --json "$out/$s.jsonl" "$out/$s.json.gz"
done
if [ $# -eq 0 ]; then
  # Four ranks of one data-parallel job whose clocks disagree by up to 50 ms; rank 2's input
  # pipeline is slow, so the others wait for it inside every all-reduce. Only the merged analysis
  # across ranks can name it (each rank alone sees its own exposed all-reduce).
  rm -rf "$out/ranks"
  build/bin/stepwatch-synth --ranks 4 --straggler input --straggler-rank 2 --clock-offsets-ms 0,50,-50,37 \
    --steps 6 -o "$out/ranks" >/dev/null
  echo
  echo "################ 4 ranks, rank 2 input-slow, clocks offset by up to 50 ms: the merged analysis"
  build/bin/stepwatch analyze --json "$out/ranks.jsonl" "$out/ranks" 2>&1 | sed -n '/^== merged ranks/,$p'
fi
echo
echo "Traces and JSONL findings are in $out/ (open a .json.gz in https://ui.perfetto.dev to see the timeline)."
