#!/usr/bin/env bash
# `pip install .` as a PyTorch user does it: builds the wheel from the source tree (scikit-build-core,
# build-wheel/; reused between runs), installs it into a fresh venv, and runs from there, with no
# CUDA toolkit on the way: `stepwatch detectors`, `stepwatch analyze` on a generated trace, and
# `stepwatch run` (the launcher injects the wheel's own libstepwatch.so when it holds one).
#   Usage: tests/wheel.sh [BUILD_DIR_WITH_stepwatch-synth]      (exit 77: no package index: skipped)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
synth_build=${1:-$root/build}
work=$root/build-wheel
mkdir -p "$work"
venv=$(mktemp -d); trap 'rm -rf "$venv"' EXIT

python3 -m venv "$venv/build-env" >/dev/null 2>&1 || { echo "wheel: python3 -m venv unavailable: skipped"; exit 77; }
echo "== wheel: build (pip wheel ., build dir $work/cmake) =="
started=$(date +%s)
if ! "$venv/build-env/bin/pip" wheel "$root" --no-deps -w "$work/dist" -C build-dir="$work/cmake" \
     >"$work/build.log" 2>&1; then
  if grep -qiE "connection|network|resolve|No matching distribution|Could not find a version" "$work/build.log"; then
    echo "wheel: the package index is unreachable (scikit-build-core): skipped"; tail -2 "$work/build.log"; exit 77
  fi
  echo "FAIL: pip wheel ."; tail -40 "$work/build.log"; exit 1
fi
wheel=$(ls -t "$work"/dist/stepwatch-*.whl | head -1)
echo "wheel: $(basename "$wheel") in $(( $(date +%s) - started )) s"
case "$(basename "$wheel")" in
  *linux_x86_64.whl) ;;
  *) echo "FAIL: expected a linux_x86_64 wheel, got $(basename "$wheel")"; exit 1 ;;
esac
python3 - "$wheel" <<'PY' || exit 1
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["stepwatch/__init__.py", "stepwatch/__main__.py", "stepwatch/bin/stepwatch"]
missing = [n for n in need if n not in names]
if missing:
    print("FAIL: the wheel lacks", missing); sys.exit(1)
print("wheel holds:", ", ".join(n for n in names if n.startswith(("stepwatch/bin", "stepwatch/lib"))))
PY

echo "== wheel: a fresh venv, no toolkit on PATH =="
python3 -m venv "$venv/user" >/dev/null 2>&1
"$venv/user/bin/pip" install -q --no-deps "$wheel" || { echo "FAIL: pip install the wheel"; exit 1; }
export PATH="$venv/user/bin:/usr/bin:/bin"
unset CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH STEPWATCH_LIBRARY LD_LIBRARY_PATH
cd "$venv"
sw=$venv/user/bin/stepwatch
"$sw" detectors >"$venv/det.txt" || { echo "FAIL: stepwatch detectors"; exit 1; }
grep -q '^hidden_sync ' "$venv/det.txt" || { echo "FAIL: stepwatch detectors lists no hidden_sync"; exit 1; }
"$synth_build/bin/stepwatch-synth" --scenario item_sync -o "$venv/item_sync.json.gz" >/dev/null \
  || { echo "FAIL: stepwatch-synth"; exit 1; }
"$sw" analyze "$venv/item_sync.json.gz" >"$venv/report.txt" 2>&1 || { echo "FAIL: stepwatch analyze"; cat "$venv/report.txt"; exit 1; }
grep -q 'hidden_sync' "$venv/report.txt" || { echo "FAIL: the report lacks hidden_sync"; cat "$venv/report.txt"; exit 1; }
echo "ok: stepwatch analyze from the wheel"
if python3 -c "import zipfile,sys; sys.exit(0 if 'stepwatch/lib/libstepwatch.so' in zipfile.ZipFile('$wheel').namelist() else 1)"; then
  out=$("$sw" run -- python3 -c 'import os; print(os.environ["CUDA_INJECTION64_PATH"])') || { echo "FAIL: stepwatch run"; exit 1; }
  case "$out" in
    "$venv"/user/*/stepwatch/lib/libstepwatch.so) echo "ok: stepwatch run injects the wheel's library ($out)" ;;
    *) echo "FAIL: stepwatch run injected '$out'"; exit 1 ;;
  esac
else
  "$sw" run -- true 2>"$venv/run.err"
  grep -q "libstepwatch.so not found" "$venv/run.err" || { echo "FAIL: stepwatch run without the library"; cat "$venv/run.err"; exit 1; }
  echo "ok: a wheel without the live library says so on stepwatch run"
fi
echo "ok: wheel"
