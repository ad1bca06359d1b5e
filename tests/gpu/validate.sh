#!/usr/bin/env bash
# stepwatch GPU validation: the one script a GPU session runs on the device machine, from the
# repository root, against a bundle built here by tests/gpu/make_bundle.sh (default build-gpu/).
#
#   bash tests/gpu/validate.sh [--build DIR] [--out DIR]            on the GPU machine (≤ 5 minutes)
#   bash tests/gpu/validate.sh --dry-run [--build DIR] [--out DIR]  anywhere: bundle check + plan + JSON self-test
#
# GPU run: records nvidia-smi; runs examples' fault_loop once per fault with libstepwatch.so
# injected and asserts the expected detector in findings.jsonl (none → no non-info finding);
# measures overhead (median step time with and without injection, interleaved repeats); writes
# $OUT/gpu-validation.json (machine-readable), validate.log, nvidia-smi.txt and gpu-runs.tar.gz
# (every run's stdout, stderr = job log, and stepwatch output folder), prints a table, and exits
# non-zero when an assertion failed. See tests/gpu/README.md.
set -uo pipefail  # no -e: one failing run must not stop the others

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
results_py="$here/gpu_results.py"

usage() {
  cat <<'EOF'
usage: tests/gpu/validate.sh [options]
  --build DIR             bundle / build folder with bin/ and lib/ (default build-gpu)
  --out DIR               where results go (default $OUT, else a new temp folder)
  --work-dir DIR          where the runs' folders go (default a new temp folder; packed into OUT)
  --dry-run               no GPU: check the bundle, print every command, test the JSON path on fake results
  --allow-missing-lib     dry run: a missing lib/libstepwatch.so is reported but not an error
  --skip-if-no-fault-loop dry run: exit 77 (skipped) when bin/fault_loop was not built (no CUDA compiler)
  --steps N               steps per fault run (default 60)
  --overhead-steps N      steps per overhead run (default 200)
  --repeats N             overhead: runs with and without injection, each (default 3)
  --only LIST             comma-separated faults to run (default all); overhead runs only if it names them
  --no-overhead           skip the overhead runs
  --strict-overhead       overhead above budget (1% compute-bound, 3% launch-bound) fails the run
  --budget-s S            stop starting runs after S seconds (default 270)
EOF
}

build="build-gpu"
out=""
work=""
dry=0
allow_missing_lib=0
skip_no_fault_loop=0
steps=60
overhead_steps=200
repeats=3
only=""
do_overhead=1
strict_overhead=0
budget_s=270
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "validate.sh: $1 needs a value" >&2; usage >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    "") ;;  # empty arguments (CMake generator expressions that evaluate to nothing) are ignored
    --build) need_value "$@"; build=$2; shift ;;
    --out) need_value "$@"; out=$2; shift ;;
    --work-dir) need_value "$@"; work=$2; shift ;;
    --dry-run) dry=1 ;;
    --allow-missing-lib) allow_missing_lib=1 ;;
    --skip-if-no-fault-loop) skip_no_fault_loop=1 ;;
    --steps) need_value "$@"; steps=$2; shift ;;
    --overhead-steps) need_value "$@"; overhead_steps=$2; shift ;;
    --repeats) need_value "$@"; repeats=$2; shift ;;
    --only) need_value "$@"; only=$2; shift ;;
    --no-overhead) do_overhead=0 ;;
    --strict-overhead) strict_overhead=1 ;;
    --budget-s) need_value "$@"; budget_s=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "validate.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for v in steps overhead_steps repeats budget_s; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "validate.sh: --${v//_/-} expects a number, got '${!v}'" >&2; exit 2; }
done

if [ ! -d "$build" ]; then
  echo "validate.sh: build folder '$build' not found (run from the repository root, or pass --build DIR;" \
       "make it with tests/gpu/make_bundle.sh)" >&2
  exit 2
fi
build=$(cd "$build" && pwd)
if [ -z "$out" ]; then out=${OUT:-}; fi
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/stepwatch-gpu-out.XXXXXX"); fi
mkdir -p "$out" && out=$(cd "$out" && pwd)
work_is_temp=0
if [ -z "$work" ]; then work=$(mktemp -d "${TMPDIR:-/tmp}/stepwatch-gpu-work.XXXXXX"); work_is_temp=1; fi
mkdir -p "$work" && work=$(cd "$work" && pwd)
envdir=$work/env
records=$work/records.jsonl
rm -rf "$envdir" "$work/runs" && mkdir -p "$envdir" "$work/runs"
: >"$records"
: >"$envdir/problems.txt"

tee_pid=""
if [ "$dry" = 0 ]; then
  # Everything printed also goes to $OUT/validate.log.
  exec > >(tee -a "$out/validate.log") 2>&1
  tee_pid=$!
fi
finish() {  # exit after the log has been written out
  if [ -n "$tee_pid" ]; then exec 1>&- 2>&-; wait "$tee_pid" 2>/dev/null; fi
  exit "$1"
}

lib=$build/lib/libstepwatch.so
fault_loop=$build/bin/fault_loop
cli=$build/bin/stepwatch
fallback_dir=$build/lib/cuda-fallback
faults=(none starvation item-sync pageable exposed-comm launch-bound)
run_env_extra=()  # extra environment for the injected runs of one section
declare -A expected=([none]=none-clean [starvation]=input_starvation [item-sync]=hidden_sync [pageable]=hidden_sync
                     [exposed-comm]=exposed_collective [launch-bound]=launch_bound)
# Libraries the GPU machine provides (driver, CUDA runtime, NCCL): not required to resolve in a dry run.
cuda_lib_re='^lib(cuda|cudart|cupti|nccl|nvidia-|nvrtc|nvJitLink|cublas|nvToolsExt)'

problem() { echo "PROBLEM: $*"; echo "$*" >>"$envdir/problems.txt"; }
q() { local s; s=$(printf '%q ' "$@"); echo "${s% }"; }
selected() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
section() { echo; echo "== $* =="; }
remaining_s() { echo $((budget_s - SECONDS)); }

echo "stepwatch GPU validation$([ "$dry" = 1 ] && echo ' — DRY RUN (no GPU used)')"
echo "date:  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "host:  $(hostname 2>/dev/null || echo '?') ($(uname -srm))"
echo "build: $build"
echo "out:   $out"
echo "work:  $work"
{
  echo "build=$build"
  echo "host=$(hostname 2>/dev/null || echo '?')"
  echo "uname=$(uname -srm)"
  echo "steps=$steps"
  echo "overhead_steps=$overhead_steps"
  echo "repeats=$repeats"
  echo "only=${only:-all}"
  echo "python=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || echo '?')"
} >"$envdir/settings.txt"

# ------------------------------------------------------------------------------------------------
# 1. The bundle: files present, their libraries resolvable.
section "bundle"
bundle_ok=1
check_file() {  # path what allowed-missing
  if [ -f "$1" ]; then
    printf '  %-28s %s (%s bytes)\n' "$2" "$1" "$(stat -c %s "$1")"
    return 0
  fi
  if [ "$3" = 1 ]; then
    printf '  %-28s MISSING: %s — allowed by --allow-missing-lib (the live library, target stepwatch_inject, is not built yet)\n' "$2" "$1"
    return 0
  fi
  printf '  %-28s MISSING: %s\n' "$2" "$1"
  bundle_ok=0
  return 1
}
if [ ! -f "$fault_loop" ] && [ "$skip_no_fault_loop" = 1 ]; then
  echo "  $fault_loop was not built (no CUDA compiler or NCCL at configure time): skipping"
  exit 77
fi
have_lib=0; check_file "$lib" "lib/libstepwatch.so" "$([ "$dry" = 1 ] && echo "$allow_missing_lib" || echo 0)" && [ -f "$lib" ] && have_lib=1
check_file "$fault_loop" "bin/fault_loop" 0
check_file "$cli" "bin/stepwatch" 0
if [ -d "$fallback_dir" ]; then
  echo "  lib/cuda-fallback/: $(cd "$fallback_dir" && ls | tr '\n' ' ')(used only where the machine lacks them)"
fi
echo "  bundle size (bin + lib): $(du -sch "$build/bin" "$build/lib" 2>/dev/null | tail -1 | cut -f1)"

# Directories added to LD_LIBRARY_PATH after $build/lib for CUDA libraries the machine keeps
# outside the loader's default path (the toolkit folder, PyTorch's pip packages).
extra_dirs=()
ld_path() { local p=$build/lib d; for d in "${extra_dirs[@]}"; do p=$p:$d; done; echo "$p${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }

# Where this machine keeps a library: the loader's cache, the CUDA toolkit, then a bounded search.
find_system_lib() {
  local name=$1 d hit
  hit=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}')
  [ -n "$hit" ] && [ -e "$hit" ] && { dirname "$hit"; return 0; }
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64 \
           /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /usr/local/lib; do
    [ -e "$d/$name" ] && { echo "$d"; return 0; }
  done
  hit=$(timeout 30 find /opt /usr/local /usr/lib /root -name "$name" \( -type f -o -type l \) -print -quit 2>/dev/null)
  [ -n "$hit" ] && { dirname "$hit"; return 0; }
  return 1
}

: >"$envdir/libs.txt"
: >"$work/ldd.txt"
resolve_libs() {  # the GPU machine: make every dependency resolvable, record where each comes from
  local f name dir missing
  for f in "$fault_loop" "$cli" "$lib"; do
    [ -f "$f" ] || continue
    missing=$(LD_LIBRARY_PATH=$(ld_path) ldd "$f" 2>&1 | awk '/not found/ {print $1}')
    for name in $missing; do
      if dir=$(find_system_lib "$name"); then
        extra_dirs+=("$dir"); echo "  $name: not on the loader's path; found in $dir"
      elif [ -e "$fallback_dir/$name" ]; then
        extra_dirs+=("$fallback_dir"); echo "  $name: not on this machine; using the bundle's lib/cuda-fallback"
      else
        problem "$(basename "$f") needs $name, which is not on this machine nor in the bundle"
      fi
    done
  done
  # libcupti is dlopen'ed by libstepwatch.so (the loader's search, then the toolkit): not in ldd.
  if ! ldconfig -p 2>/dev/null | grep -q 'libcupti.so.13 '; then
    if dir=$(find_system_lib libcupti.so.13); then
      extra_dirs+=("$dir"); echo "  libcupti.so.13: found in $dir"
    elif [ -e "$fallback_dir/libcupti.so.13" ]; then
      extra_dirs+=("$fallback_dir"); echo "  libcupti.so.13: not on this machine; using the bundle's lib/cuda-fallback"
    else
      problem "libcupti.so.13 not found on this machine nor in the bundle: stepwatch cannot trace"
    fi
  fi
}

ldd_report() {  # dry run: non-CUDA dependencies must resolve with LD_LIBRARY_PATH=$build/lib
  local f line name where
  for f in "$fault_loop" "$cli" "$lib"; do
    [ -f "$f" ] || continue
    echo "  ldd $(basename "$f"):"
    while IFS= read -r line; do
      name=$(echo "$line" | awk '{print $1}')
      [ -z "$name" ] && continue
      case "$name" in linux-vdso.so.*|/lib*/ld-linux*) continue ;; esac
      if [[ $line == *"not found"* ]]; then
        if [ "$dry" = 1 ] && [[ $name =~ $cuda_lib_re ]]; then
          where="not here — provided by the GPU machine$([ -e "$fallback_dir/$name" ] && echo ' (or lib/cuda-fallback)')"
        else
          where="NOT FOUND"; bundle_ok=0
        fi
      else
        where=$(echo "$line" | awk '{print $3}')
        [[ $name =~ $cuda_lib_re ]] && where="$where (CUDA: the GPU machine's copy is used there)"
      fi
      printf '    %-26s %s\n' "$name" "$where"
      printf '%s\t%s\n' "$(basename "$f"):$name" "$where" >>"$envdir/libs.txt"
    done < <(LD_LIBRARY_PATH=$(ld_path) ldd "$f" 2>&1 | grep '=>\|not found' )
    LD_LIBRARY_PATH=$(ld_path) ldd "$f" >>"$work/ldd.txt" 2>&1
  done
}

if [ "$dry" = 0 ]; then
  if [ "$bundle_ok" = 0 ]; then problem "the bundle in $build is incomplete"; fi
  resolve_libs
fi
ldd_report
if [ "$bundle_ok" = 0 ]; then
  problem "bundle incomplete or unresolvable dependencies (see above)"
fi
echo "  LD_LIBRARY_PATH for the runs: $(ld_path)"

# ------------------------------------------------------------------------------------------------
# 2. The machine, the tools.
section "GPU"
if [ "$dry" = 1 ]; then
  echo "  would run: $(q timeout 20 nvidia-smi) > $out/nvidia-smi.txt"
  echo "  would run: $(q timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv,noheader)"
  echo "FAKE GPU (dry run), 000.00, 0 MiB, 0 MHz, 0 MHz, 0, 0 W" >"$envdir/nvidia-smi-query.csv"
else
  if timeout 20 nvidia-smi >"$out/nvidia-smi.txt" 2>&1; then
    sed 's/^/  /' "$out/nvidia-smi.txt" | head -20
  else
    problem "nvidia-smi failed: $(tail -1 "$out/nvidia-smi.txt")"
  fi
  timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,temperature.gpu,power.draw \
    --format=csv,noheader >"$envdir/nvidia-smi-query.csv" 2>/dev/null
  echo "  $(head -1 "$envdir/nvidia-smi-query.csv")"
fi

# The driver must support the bundle's CUDA version (nvidia-smi's "CUDA Version" is the newest the
# driver supports): said in one line, instead of every injected run failing as if stepwatch had.
bundle_cuda=$(sed -n 's/^cuda=//p' "$build/lib/bundle-info.txt" 2>/dev/null | head -1)
bundle_cuda=${bundle_cuda:-13.0}
driver_ok=1
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
if [ "$dry" = 1 ]; then
  echo "  would check: nvidia-smi's 'CUDA Version' >= $bundle_cuda (the bundle's CUDA), one line either way"
  echo "driver_cuda=dry-run" >>"$envdir/settings.txt"
else
  driver_cuda=$(sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' "$out/nvidia-smi.txt" | head -1)
  echo "driver_cuda=${driver_cuda:-unknown}" >>"$envdir/settings.txt"
  if [ -z "$driver_cuda" ]; then
    echo "  driver/CUDA: nvidia-smi shows no 'CUDA Version': cannot tell whether the driver supports CUDA $bundle_cuda"
  elif version_ge "$driver_cuda" "$bundle_cuda"; then
    echo "  driver/CUDA: the driver supports CUDA $driver_cuda >= the bundle's $bundle_cuda: ok"
  else
    driver_ok=0
    problem "driver/CUDA: the driver supports CUDA $driver_cuda, the bundle is CUDA $bundle_cuda: a newer driver is needed; the injected runs below fail in cuInit/CUPTI, not in stepwatch"
  fi
fi
echo "bundle_cuda=$bundle_cuda" >>"$envdir/settings.txt"
echo "driver_supports_bundle=$driver_ok" >>"$envdir/settings.txt"

section "stepwatch CLI and fault_loop"
launch_bound_built=0
if [ -x "$cli" ]; then
  echo "  running: $(q timeout 20 "$cli" detectors)"
  if LD_LIBRARY_PATH=$(ld_path) timeout 20 "$cli" detectors >"$envdir/detectors.txt" 2>&1; then
    sed 's/^/    /' "$envdir/detectors.txt"
    awk '{print $1}' "$envdir/detectors.txt" | grep -qx launch_bound && launch_bound_built=1
  else
    problem "'stepwatch detectors' failed: $(tail -1 "$envdir/detectors.txt")"; : >"$envdir/detectors.txt"
  fi
  LD_LIBRARY_PATH=$(ld_path) timeout 20 "$cli" --version >"$envdir/version.txt" 2>&1 || true
fi
echo "  launch_bound detector: $([ "$launch_bound_built" = 1 ] && echo built || echo 'not built (launch-bound: not checked)')"
if [ -x "$fault_loop" ]; then
  # --help makes no CUDA call: it checks that the binary loads and knows every fault we run.
  if help=$(LD_LIBRARY_PATH=$(ld_path) timeout 20 "$fault_loop" --help 2>&1); then
    for f in "${faults[@]}"; do
      grep -q "^  $f " <<<"$help" || { problem "fault_loop --help does not list the fault '$f'"; bundle_ok=0; }
    done
    echo "  fault_loop --help: ok (lists: ${faults[*]})"
  elif [ "$dry" = 1 ] && LD_LIBRARY_PATH=$(ld_path) ldd "$fault_loop" | grep -q 'not found'; then
    echo "  fault_loop --help: not run (its CUDA libraries are not on this machine)"
  else
    problem "fault_loop --help failed: $(tail -1 <<<"$help")"; bundle_ok=0
  fi
fi

# ------------------------------------------------------------------------------------------------
# 3. The runs. run_one NAME KIND FAULT INJECTED EXPECT TIMEOUT_S -- fault_loop ARGS...
run_one() {
  local name=$1 kind=$2 fault=$3 injected=$4 expect=$5 tmo=$6
  shift 7
  local dir=$work/runs/$name rc wall t0 left
  mkdir -p "$dir"
  # LD_LIBRARY_PATH only for fault_loop (the bundle's own binaries); never for the torch runs below.
  local envs=(LD_LIBRARY_PATH="$(ld_path)")
  if [ "$injected" = 1 ]; then
    # Debug level: one line per flush (buffers/records delivered, calls waited for, watermark hold,
    # steps judged/incomplete): a watermark problem reads differently from a detector problem.
    envs+=(CUDA_INJECTION64_PATH="$lib" NVTX_INJECTION64_PATH="$lib" STEPWATCH_OUTPUT_DIR="$dir/sw"
           STEPWATCH_LOG_LEVEL=debug)
    envs+=("${run_env_extra[@]}")
  fi
  left=$(( $(remaining_s) + 15 ))
  (( tmo > left )) && tmo=$left
  local cmd=(timeout -k 10 "$tmo" env "${envs[@]}" "$fault_loop" "$@")
  q "${cmd[@]}" >"$dir/command.txt"
  echo
  echo "[$name] ${kind} fault=$fault injected=$injected expect=${expect:--}"
  local eval_args=(evaluate --name "$name" --kind "$kind" --fault "$fault" --injected "$injected" --expect "$expect"
                   --run-dir "$dir" --records "$records" --steps "${run_steps:-0}")
  last_rc=skipped
  last_dir=$dir
  if (( $(remaining_s) <= 5 )); then
    echo "  skipped: the time budget (--budget-s $budget_s) is spent"
    python3 "$results_py" "${eval_args[@]}" --rc skipped --skip-reason "time budget (--budget-s $budget_s) spent"
    return 0
  fi
  if [ "$driver_ok" = 0 ]; then
    # Said once above ("driver/CUDA: ..."): these runs would fail in cuInit, not in stepwatch.
    echo "  skipped: the driver does not support the bundle's CUDA $bundle_cuda"
    python3 "$results_py" "${eval_args[@]}" --rc skipped --skip-reason "the driver does not support CUDA $bundle_cuda"
    return 0
  fi
  if [ "$dry" = 1 ]; then
    echo "  would run: $(q "${cmd[@]}") >$dir/stdout.txt 2>$dir/stderr.txt"
    local fake=(fake-run --fault "$fault" --injected "$injected" --steps "${run_steps:-60}" --run-dir "$dir" --kind "$kind")
    [ "$kind" = calibrate ] && fake+=(--calibrate)
    python3 "$results_py" "${fake[@]}"
    rc=0; wall=0
  else
    echo "  $(q "${cmd[@]}")"
    t0=$(date +%s.%N)
    "${cmd[@]}" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
    rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
  fi
  last_rc=$rc
  last_dir=$dir
  [ "$kind" = calibrate ] && return 0
  python3 "$results_py" "${eval_args[@]}" --rc "$rc" --wall "$wall"
  return 0
}

section "calibration"
# One kernel_iters for every run, so that runs with and without injection do the same work.
iters_arg=()
run_steps=0 run_one calibrate calibrate none 0 "" 60 -- --calibrate
cp "$last_dir/stdout.txt" "$envdir/calibration.txt" 2>/dev/null
iters=$(awk '$1 == "kernel_iters" {print $2}' "$envdir/calibration.txt" 2>/dev/null)
if [ "$last_rc" = 0 ] && [[ $iters =~ ^[0-9]+$ ]]; then
  iters_arg=(--kernel-iters "$iters")
  echo "  kernel_iters $iters ($(awk '$1 == "gpu_compute_ms_per_step" {print $2 " ms of compute per step"}' "$envdir/calibration.txt"))"
else
  problem "calibration failed (rc $last_rc): $(tail -2 "$last_dir/stderr.txt" | tr '\n' ' ')— each run calibrates itself"
fi

section "fault runs ($steps steps each, libstepwatch.so injected)"
for f in "${faults[@]}"; do
  selected "$f" || continue
  exp=${expected[$f]}
  if [ "$f" = launch-bound ] && [ "$launch_bound_built" = 0 ]; then
    exp="unchecked:not checked: detector not built ('stepwatch detectors' does not list launch_bound)"
  fi
  run_steps=$steps run_one "fault-$f" fault "$f" 1 "$exp" 60 -- --fault "$f" --steps "$steps" "${iters_arg[@]}"
  if [ "$f" = exposed-comm ] && [ "$dry" = 1 ]; then
    echo "  (only if the NCCL run exits 4, NCCL error:) would also run the probe and the stand-in variant:"
    echo "    $(q "$fault_loop" --fault exposed-comm --steps 3 --warmup 0 "${iters_arg[@]}")   (no injection)"
    echo "    $(q "$fault_loop" --fault exposed-comm --comm standin --steps "$steps" "${iters_arg[@]}")   (injected)"
  elif [ "$f" = exposed-comm ] && [ "$last_rc" = 4 ]; then
    echo "  NCCL failed under injection: is it NCCL on this machine or stepwatch? A short run without injection:"
    run_steps=3 run_one "probe-exposed-comm-noinject" probe exposed-comm 0 "" 60 -- \
      --fault exposed-comm --steps 3 --warmup 0 "${iters_arg[@]}"
    echo "  and the stand-in all-reduce only (no NCCL communicator), injected:"
    run_steps=$steps run_one "fault-exposed-comm-standin" fault exposed-comm 1 "$exp" 60 -- \
      --fault exposed-comm --comm standin --steps "$steps" "${iters_arg[@]}"
  fi
done

# The live extras on a real GPU: NVML sampling starts (the throttle detector's confirming evidence),
# the host-state sampler runs, and the metrics textfile holds a valid exposition; the healthy loop
# stays silent with all of them on.
if selected extras; then
  section "live extras (NVML sampling, host sampler, metrics textfile)"
  run_env_extra=(STEPWATCH_HOST_SAMPLE_HZ=100 STEPWATCH_METRICS_TEXTFILE="$work/runs/extras-none/metrics.prom")
  run_steps=$steps run_one "extras-none" fault none 1 none-clean 60 -- --fault none --steps "$steps" "${iters_arg[@]}"
  run_env_extra=()
  prom=$work/runs/extras-none/metrics.rank0.prom
  if [ "$dry" = 1 ]; then
    echo "  would check: the job log says 'NVML: sampling ...'; $prom parses as Prometheus text with stepwatch_steps_total > 0"
  elif [ "$last_rc" = 0 ]; then
    if grep -q "NVML: sampling" "$last_dir/stderr.txt"; then
      echo "  NVML: $(grep -o 'NVML: sampling.*' "$last_dir/stderr.txt" | head -1)"
    else
      problem "NVML sampling did not start on the GPU: $(grep -o 'NVML: .*' "$last_dir/stderr.txt" | head -1)"
    fi
    if msg=$(python3 "$results_py" check-metrics "$prom" 2>&1); then
      echo "  metrics textfile: $msg"
    else
      problem "metrics textfile: $msg"
    fi
  fi
fi

# CUPTI releases whose record parser needs a driver (13.2: Kernel11; 13.4: Kernel13, Memcpy7,
# Memset5), carried in lib/cupti-releases/<version>/ by make_bundle.sh: one fault run with each
# (STEPWATCH_CUPTI_PATH; fault_loop loads no CUPTI of its own), asserting the finding and that the
# start-up line names that release. A driver older than the release may refuse it: then the
# "not active" line must name the release, and that is a note, not a stepwatch failure.
if selected cupti-releases; then
  section "CUPTI releases (one fault run each)"
  found_release=0
  for release_lib in "$build"/lib/cupti-releases/*/libcupti.so.*; do
    [ -e "$release_lib" ] || continue
    found_release=1
    release=$(basename "$(dirname "$release_lib")")
    minor=${release%.*}  # 13.4.92 -> 13.4
    run_env_extra=(STEPWATCH_CUPTI_PATH="$release_lib")
    run_steps=$steps run_one "cupti-$release-item-sync" fault item-sync 1 "${expected[item-sync]}" 60 -- \
      --fault item-sync --steps "$steps" "${iters_arg[@]}"
    run_env_extra=()
    if [ "$dry" = 1 ]; then
      echo "  would check: the job log's 'active:' line names CUPTI $minor at $release_lib"
    elif grep -q "active: .*CUPTI $minor (API [0-9]*) at $release_lib" "$last_dir/stderr.txt"; then
      echo "  CUPTI $release: $(grep -o "CUPTI $minor (API [0-9]*)" "$last_dir/stderr.txt" | head -1) traced the run"
    elif grep -q "not active: .*CUPTI $minor" "$last_dir/stderr.txt"; then
      echo "  note: CUPTI $release refused on this machine: $(grep -o 'not active: .*' "$last_dir/stderr.txt" | head -1)"
    else
      problem "CUPTI $release: the job log names no CUPTI $minor: $(grep -o 'active: .*' "$last_dir/stderr.txt" | head -1)"
    fi
  done
  [ "$found_release" = 1 ] || echo "  none in $build/lib/cupti-releases (scripts/fetch-cupti.sh, then make_bundle.sh)"
fi

if [ "$do_overhead" = 1 ]; then
  section "overhead ($overhead_steps steps, $repeats× without and with injection, interleaved)"
  for f in none launch-bound; do
    selected "$f" || continue
    for ((r = 1; r <= repeats; r++)); do
      order=(0 1); (( r % 2 == 0 )) && order=(1 0)  # alternate who goes first: clock/thermal drift cancels
      for inj in "${order[@]}"; do
        tag=$([ "$inj" = 1 ] && echo inj || echo base)
        run_steps=$overhead_steps run_one "overhead-$f-$tag-$r" overhead "$f" "$inj" "" 60 -- \
          --fault "$f" --steps "$overhead_steps" --warmup 20 "${iters_arg[@]}"
      done
    done
  done
fi

# ------------------------------------------------------------------------------------------------
# 4. PyTorch loop (the GPU machine has torch): examples/pytorch/train.py through the Python shim and
# `python -m stepwatch run`, each fault asserted like the fault runs above, plus its step time
# uninstrumented, injected, and under torch.profiler; and torch.profiler inside an injected run
# (coexistence): stepwatch pauses around it, then either resumes (TEARDOWN_CUPTI=1, which the script
# sets as a user would — stepwatch never does) or says in one line who holds CUPTI; either way no
# finding from missing records or mixed clocks. No LD_LIBRARY_PATH for any torch run: torch brings
# its own CUDA libraries (and libcupti), and the bundle's fallbacks must never load a second copy.
# Results in $envdir/pytorch.json.
pytorch_checks() {
  local root; root=$(cd "$here/../.." && pwd)
  local py=python3 shim=$root/python_shim/src train=$root/examples/pytorch/train.py
  local res=$envdir/pytorch.json runs=$work/runs/pytorch
  mkdir -p "$runs"
  local sw_env=(PYTHONPATH="$shim" STEPWATCH_LOG_LEVEL=debug)
  if [ "$dry" = 1 ]; then
    for f in none dataloader item pageable; do
      echo "  would run: $(q env "${sw_env[@]}") $py -m stepwatch run --library $lib --output-dir $runs/$f/sw -- $py $train --fault $f --steps 30 --json $runs/$f/result.json"
    done
    echo "  would check: the item run's hidden_sync findings name train.py:$(grep -n 'loss.item()' "$train" | head -1 | cut -d: -f1) in main (the live call site)"
    echo "  would run: $(q env "${sw_env[@]}") $py -m stepwatch run --library $lib --output-dir $runs/profiler/sw -- $py $train --fault none --steps 40 --profiler --profiler-steps 5   (coexistence: resumed or one line naming the holder)"
    echo "  would run: the same with TEARDOWN_CUPTI=1 (set by this script, as a user would)   (coexistence: tracing resumes, timestamps aligned)"
    echo "  would run: $py $train --fault none --steps 60 --no-stepwatch --json …   (baseline, no LD_LIBRARY_PATH)"
    echo "  would run: $py $train --fault none --steps 60 --no-stepwatch --profiler --profiler-steps all --json …   (torch.profiler)"
    echo '{"status": "dry_run"}' >"$res"
    return 0
  fi
  if ! timeout 60 "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)' >/dev/null 2>&1; then
    echo '{"status": "not_run", "note": "torch with CUDA not importable on this machine"}' >"$res"
    echo "  not run: torch with CUDA is not importable here"
    return 0
  fi
  local f rc
  for f in none dataloader item pageable profiler profiler-teardown; do
    (( $(remaining_s) > 40 )) || { echo "  $f: skipped (time budget)"; continue; }
    mkdir -p "$runs/$f"
    local fault=$f extra=() env_extra=()
    case "$f" in
      profiler) fault=none; extra=(--profiler --profiler-steps 5) ;;
      profiler-teardown) fault=none; extra=(--profiler --profiler-steps 5); env_extra=(TEARDOWN_CUPTI=1) ;;
    esac
    local steps=30; [ "$fault" = none ] && [ ${#extra[@]} -gt 0 ] && steps=40
    echo "  [$f] injected"
    timeout -k 10 90 env "${sw_env[@]}" "${env_extra[@]}" "$py" -m stepwatch run --library "$lib" \
      --output-dir "$runs/$f/sw" -- "$py" "$train" --fault "$fault" --steps "$steps" "${extra[@]}" \
      --json "$runs/$f/result.json" >"$runs/$f/stdout.txt" 2>"$runs/$f/stderr.txt"
    echo $? >"$runs/$f/rc"
  done
  for mode in baseline profiler-only; do
    (( $(remaining_s) > 40 )) || { echo "  $mode: skipped (time budget)"; continue; }
    mkdir -p "$runs/$mode"
    local extra=(--no-stepwatch)
    [ "$mode" = profiler-only ] && extra+=(--profiler --profiler-steps all)
    echo "  [$mode] not injected"
    timeout -k 10 90 env PYTHONPATH="$shim" "$py" "$train" --fault none --steps 60 "${extra[@]}" \
      --json "$runs/$mode/result.json" >"$runs/$mode/stdout.txt" 2>"$runs/$mode/stderr.txt"
    echo $? >"$runs/$mode/rc"
  done
  python3 "$results_py" pytorch --runs "$runs" --out "$res" --train "$train"
  rc=$?
  [ "$rc" = 0 ] || problem "PyTorch runs: an expected finding is missing, --fault none has a warning, or torch.profiler coexistence failed (see $res)"
}
section "PyTorch loop"
pytorch_checks

# ------------------------------------------------------------------------------------------------
# 5. Results.
section "results"
json_name=gpu-validation.json
[ "$dry" = 1 ] && json_name=gpu-validation.dry-run.json
report_args=(report --records "$records" --env-dir "$envdir" --out "$out/$json_name")
[ "$dry" = 1 ] && report_args+=(--dry-run)
[ "$strict_overhead" = 1 ] && report_args+=(--strict-overhead)
python3 "$results_py" "${report_args[@]}"
rc=$?

# Every run's folder in one archive: $OUT brings back 8 files at most, 2 folders deep.
tarball=$out/gpu-runs.tar.gz
tar -czf "$tarball" -C "$work" runs env records.jsonl ldd.txt 2>/dev/null
if [ "$(stat -c %s "$tarball" 2>/dev/null || echo 0)" -gt $((15 * 1024 * 1024)) ]; then
  echo "  the archive is over 15 MiB: flight-recorder dumps left out"
  tar -czf "$tarball" -C "$work" --exclude='*/sw/*/*.json.gz' --exclude='*/sw/*/dump*' --exclude='*/sw/*/*trace*' \
    runs env records.jsonl ldd.txt 2>/dev/null
fi
echo "archive: $tarball ($(du -h "$tarball" | cut -f1))"

if [ "$dry" = 1 ]; then
  section "dry-run self-test of the result path"
  python3 "$results_py" check --json "$out/$json_name" || { echo "the dry-run JSON does not match the schema"; rc=1; }
  python3 "$results_py" selftest --work "$work/selftest" || rc=1
  [ "$work_is_temp" = 1 ] && rm -rf "$work"
  if [ "$rc" = 0 ] && [ "$bundle_ok" = 1 ]; then
    echo
    echo "dry run: OK — the bundle is complete$([ "$have_lib" = 0 ] && echo ' except lib/libstepwatch.so (allowed)')," \
         "and the results path works (sample: $out/$json_name)"
    exit 0
  fi
  echo
  echo "dry run: FAILED$([ "$bundle_ok" = 0 ] && echo ' — the bundle is incomplete')"
  exit 1
fi
echo "elapsed: ${SECONDS}s"
finish "$rc"
