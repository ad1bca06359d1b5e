#!/usr/bin/env bash
# Fetches the CUPTI releases stepwatch is tested against — NVIDIA's own wheels from PyPI
# (nvidia-cuda-cupti-cu12 for CUDA 12, nvidia-cuda-cupti for CUDA 13) — into a cache:
#   ${STEPWATCH_CUPTI_CACHE:-~/.cache/stepwatch/cupti}/<version>/include/   the release's headers
#   ${STEPWATCH_CUPTI_CACHE:-~/.cache/stepwatch/cupti}/<version>/lib/       its libcupti.so.N
# tests/live/cupti_versions.cmake builds a layout probe against each release's headers and runs the
# record-parser and fake end-to-end tests against each libcupti whose parser runs without a GPU
# (12.x, 13.0, 13.1). From 13.2 every call needs a driver: their headers are probed here, and the
# libraries of 13.2 and 13.4 are kept for the GPU validation (tests/gpu/make_bundle.sh carries them).
# Cached: a release already there is not fetched again. Offline, it says so and the tests skip.
set -uo pipefail

cache="${STEPWATCH_CUPTI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stepwatch/cupti}"
# One 12.x below 12.8 (Memcpy5, Synchronization), 12.8 and 12.9 (Memcpy6, Synchronization2), and
# each 13.x layout: 13.0 Kernel10, 13.1/13.2 Kernel11, 13.3 Kernel12, 13.4/13.5 Kernel13.
pins=(
  "nvidia-cuda-cupti-cu12==12.6.80 lib"
  "nvidia-cuda-cupti-cu12==12.8.90 lib"
  "nvidia-cuda-cupti-cu12==12.9.79 lib"
  "nvidia-cuda-cupti==13.0.85 lib"
  "nvidia-cuda-cupti==13.1.115 lib"
  "nvidia-cuda-cupti==13.2.86 lib"
  "nvidia-cuda-cupti==13.3.75 headers"
  "nvidia-cuda-cupti==13.4.92 lib"
  "nvidia-cuda-cupti==13.5.25 headers"
)

mkdir -p "$cache" || { echo "stepwatch: cannot create $cache: the per-CUPTI-version tests skip" >&2; exit 0; }
fetched=0
failed=()
for pin in "${pins[@]}"; do
  read -r spec keep <<<"$pin"
  version="${spec##*==}"
  if [ -f "$cache/$version/include/cupti_activity.h" ] &&
     { [ "$keep" != lib ] || compgen -G "$cache/$version/lib/libcupti.so.*" >/dev/null; }; then
    continue
  fi
  rm -rf "$cache/$version" "$cache/$version.partial"
  tmp="$(mktemp -d)"
  if python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "$spec" >"$tmp/log" 2>&1; then
    if python3 - "$tmp" "$cache/$version" "$keep" <<'PY'
import glob, os, sys, zipfile
tmp, dest, keep = sys.argv[1:4]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
staging = dest + ".partial"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        parts = name.split("/")
        # nvidia/cuda_cupti/{include,lib}/... (cu12) or nvidia/cu13/{include,lib}/... (cu13)
        if len(parts) < 4 or parts[0] != "nvidia":
            continue
        where, base = parts[2], parts[-1]
        if where == "include" and base.endswith(".h") and len(parts) == 4:
            pass
        elif where == "lib" and keep == "lib" and base.startswith("libcupti.so"):
            pass
        else:
            continue
        out = os.path.join(staging, where, base)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(name) as src, open(out, "wb") as dst:
            dst.write(src.read())
os.rename(staging, dest)
PY
    then
      fetched=$((fetched + 1))
    else
      failed+=("$spec")
    fi
  else
    failed+=("$spec")
  fi
  rm -rf "$tmp"
done
if ((fetched)); then echo "stepwatch: fetched $fetched CUPTI release(s) into $cache" >&2; fi
if ((${#failed[@]})); then
  echo "stepwatch: could not fetch ${failed[*]} (offline?): the tests for those CUPTI versions skip" >&2
fi
exit 0
