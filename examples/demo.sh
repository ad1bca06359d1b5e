#!/usr/bin/env bash
# The demo: installs what is missing, builds stepwatch, generates a small training trace with
# known faults (the project's own synthetic-workload model: a host thread launching onto GPU
# streams, written as a PyTorch-profiler/Kineto trace), and analyzes it as a user would.
#
#   examples/demo.sh [SCENARIO...]     default: slow_dataloader item_sync serialized_allreduce ddp_overlap
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
echo
echo "Traces and JSONL findings are in $out/ (open a .json.gz in https://ui.perfetto.dev to see the timeline)."
