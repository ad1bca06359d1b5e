#!/usr/bin/env bash
# Builds the GPU-validation bundle here (no GPU needed): build-gpu/ with
#   bin/stepwatch, bin/fault_loop, lib/libstepwatch.so            (Release, STEPWATCH_WITH_CUDA=ON)
#   lib/<third-party .so the binaries need>  (libsimdjson.so.*, … — the GPU machine has no registry)
#   lib/cuda-fallback/{libcudart.so.13,libcupti.so.13}  (used there only where the machine lacks them)
#   lib/cupti-releases/<version>/libcupti.so.13  (CUPTI 13.2, 13.4: one fault run each there)
# and prints the bundle's size: the GPU session carries build-gpu/bin and build-gpu/lib, which must
# stay well under the 64 MiB a device call may carry (the working tree counts too).
#
#   tests/gpu/make_bundle.sh [--build DIR] [--jobs N]
# NCCL (libnccl.so.2, ~210 MB) is not carried: the GPU machine has it (PyTorch's nvidia-nccl package
# or the CUDA toolkit); validate.sh finds it there.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

build="build-gpu"
jobs=$(nproc 2>/dev/null || echo 2)
max_mb=48  # leaves room for the working tree within a call's 64 MiB
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "make_bundle.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done

echo "== configure $build (Release, STEPWATCH_WITH_CUDA=ON, no tests/bench) =="
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTEPWATCH_WITH_CUDA=ON -DSTEPWATCH_BUILD_TESTS=OFF \
  -DSTEPWATCH_BUILD_BENCH=OFF -DSTEPWATCH_SANITIZE=OFF >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; exit 1; }
grep -i "warning\|not built\|not found" "$build/configure.log" | sed 's/^/  /' || true

targets=(stepwatch_cli)
if [ -d "$build/libtrace/src/live/CMakeFiles/stepwatch_inject.dir" ]; then
  targets+=(stepwatch_inject)
else
  echo "WARNING: target stepwatch_inject (lib/libstepwatch.so) does not exist: the live library is not built yet" >&2
fi
standalone_examples=1
if [ -d "$build/examples/CMakeFiles/fault_loop.dir" ]; then
  targets+=(fault_loop)
  standalone_examples=0
fi
echo "== build: ${targets[*]} =="
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

if [ "$standalone_examples" = 1 ]; then
  # The top-level CMakeLists.txt does not add examples/ (yet): build it on its own.
  echo "== build fault_loop (examples/ configured on its own: the top level does not add it) =="
  cmake -S examples -B "$build/examples-standalone" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build/examples-standalone" -j "$jobs" --target fault_loop
  mkdir -p "$build/bin"
  cp -f "$build/examples-standalone/bin/fault_loop" "$build/bin/fault_loop"
fi
[ -f "$build/bin/fault_loop" ] || { echo "make_bundle.sh: bin/fault_loop was not built (no CUDA compiler or NCCL?)" >&2; exit 1; }

echo "== libraries =="
mkdir -p "$build/lib/cuda-fallback"
base_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libgcc_s\.so|libstdc\+\+\.so|libutil\.so|libresolv\.so)'
copy_lib() {  # src dest-dir
  local name; name=$(basename "$1")
  if [ ! -e "$2/$name" ] || ! cmp -s "$1" "$2/$name"; then cp -fL "$1" "$2/$name"; fi
  echo "  $name -> ${2#"$root"/}/"
}
for f in "$build/bin/stepwatch" "$build/bin/fault_loop" "$build/lib/libstepwatch.so"; do
  [ -f "$f" ] || continue
  while read -r name path; do
    [[ $name =~ $base_re ]] && continue
    case "$name" in
      libcuda.so*|libnvidia-*) ;;                             # the driver's: never carried
      libnccl.so*) echo "  $name: not carried (~210 MB); the GPU machine provides it" ;;
      libcudart.so*) copy_lib "$path" "$build/lib/cuda-fallback" ;;
      *) [ "$(dirname "$(readlink -f "$path")")" = "$(readlink -f "$build/lib")" ] || copy_lib "$path" "$build/lib" ;;
    esac
  done < <(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
# libcupti is dlopen'ed by libstepwatch.so (not an ldd dependency).
cupti=$(ldconfig -p | awk '$1 == "libcupti.so.13" {print $NF; exit}')
[ -n "$cupti" ] || cupti=/usr/local/cuda/lib64/libcupti.so.13
if [ -e "$cupti" ]; then copy_lib "$cupti" "$build/lib/cuda-fallback"; else echo "  libcupti.so.13 not found here: not carried"; fi
# CUPTI releases whose record parser needs a driver (13.2 and later): validate.sh runs one fault
# with each (STEPWATCH_CUPTI_PATH), on the GPU machine's driver. Fetched by scripts/fetch-cupti.sh.
cupti_cache="${STEPWATCH_CUPTI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stepwatch/cupti}"
for release in 13.2.86 13.4.92; do
  if [ -e "$cupti_cache/$release/lib/libcupti.so.13" ]; then
    mkdir -p "$build/lib/cupti-releases/$release"
    copy_lib "$cupti_cache/$release/lib/libcupti.so.13" "$build/lib/cupti-releases/$release"
  else
    echo "  CUPTI $release not in $cupti_cache (scripts/fetch-cupti.sh): not carried"
  fi
done

# Non-system dependencies must now resolve from the bundle alone.
for f in "$build/bin/stepwatch" "$build/bin/fault_loop" "$build/lib/libstepwatch.so"; do
  [ -f "$f" ] || continue
  LD_LIBRARY_PATH=$build/lib ldd "$f" | awk '/not found/ {print $1}' | grep -Ev '^lib(cuda|cudart|nccl|cupti)' \
    && { echo "make_bundle.sh: $(basename "$f") has unresolved dependencies" >&2; exit 1; }
done

size_mb() { du -scm "$build/bin" "$build/lib" | tail -1 | cut -f1; }
if [ "$(size_mb)" -gt "$max_mb" ]; then
  echo "== over ${max_mb} MiB: stripping =="
  strip --strip-unneeded "$build"/lib/*.so* "$build"/lib/cuda-fallback/*.so* "$build"/bin/* 2>/dev/null || true
fi
if [ "$(size_mb)" -gt "$max_mb" ]; then
  echo "== still over ${max_mb} MiB: not carrying the extra CUPTI releases (lib/cupti-releases) =="
  rm -rf "$build/lib/cupti-releases"
fi
if [ "$(size_mb)" -gt "$max_mb" ]; then
  echo "== still over ${max_mb} MiB: removing static archives (lib/*.a; rebuilt by the next build) =="
  rm -f "$build"/lib/*.a
fi

# The CUDA version the bundle was built with: validate.sh checks first that the machine's driver
# supports it (a CUDA 13 bundle on a CUDA 12 driver fails in cuInit, not in stepwatch).
cuda_version=$(sed -n 's/.*"cuda" *: *{ *"name" *: *"[^"]*" *, *"version" *: *"\([0-9]*\.[0-9]*\).*/\1/p' \
  /usr/local/cuda/version.json 2>/dev/null | head -1)
[ -n "$cuda_version" ] || cuda_version=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
echo "cuda=${cuda_version:-13.0}" >"$build/lib/bundle-info.txt"
echo "  built with CUDA ${cuda_version:-13.0 (assumed)}"

echo "== bundle =="
(cd "$build" && ls -l bin/stepwatch bin/fault_loop lib/*.so* lib/cuda-fallback/* 2>/dev/null | awk '{printf "  %10s  %s\n", $5, $NF}')
echo "  total: $(du -sch "$build/bin" "$build/lib" | tail -1 | cut -f1) (bin + lib; limit ${max_mb} MiB)"
if [ "$(size_mb)" -gt "$max_mb" ]; then
  echo "make_bundle.sh: the bundle is over ${max_mb} MiB" >&2
  exit 1
fi
[ -f "$build/lib/libstepwatch.so" ] || echo "NOTE: lib/libstepwatch.so is missing: validate.sh --dry-run needs --allow-missing-lib"
echo
echo "GPU session: run(command=\"bash tests/gpu/validate.sh --build $build\", carry=[\"$build/bin\", \"$build/lib\"], timeout_s=420)"
