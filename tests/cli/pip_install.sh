#!/usr/bin/env bash
# `pip install ./python_shim` in a fresh venv (package index reachable) and offline
# (--no-index --no-build-isolation, in a venv that has setuptools and wheel); then
# `import stepwatch; stepwatch.step()` is a no-op without the library.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/online" >/dev/null 2>&1 || { echo "python3 -m venv unavailable: skipped"; exit 77; }
if ! "$tmp/online/bin/pip" install -q "$root/python_shim" >"$tmp/online.log" 2>&1; then
  if grep -qiE "connection|network|resolve|No matching distribution" "$tmp/online.log"; then
    echo "package index unreachable: skipped"; cat "$tmp/online.log" | tail -2; exit 77
  fi
  echo "FAIL: pip install ./python_shim"; cat "$tmp/online.log"; exit 1
fi
check='import stepwatch, sys; r = stepwatch.step(); assert not stepwatch.enabled(); print("no-op ok", r)'
env -u STEPWATCH_LIBRARY -u CUDA_INJECTION64_PATH "$tmp/online/bin/python" -c "$check" || { echo "FAIL: import (online venv)"; exit 1; }

python3 -m venv "$tmp/offline" >/dev/null 2>&1
"$tmp/offline/bin/pip" install -q setuptools wheel >/dev/null 2>&1 || { echo "cannot get setuptools/wheel: offline part skipped"; exit 0; }
"$tmp/offline/bin/pip" install -q --no-index --no-build-isolation "$root/python_shim" >"$tmp/offline.log" 2>&1 \
  || { echo "FAIL: offline pip install"; cat "$tmp/offline.log"; exit 1; }
env -u STEPWATCH_LIBRARY -u CUDA_INJECTION64_PATH "$tmp/offline/bin/python" -c "$check" || { echo "FAIL: import (offline venv)"; exit 1; }
"$tmp/offline/bin/python" -c 'import stepwatch; print(stepwatch.__file__)' | grep -q "$tmp/offline" \
  || { echo "FAIL: the offline venv did not install the package"; exit 1; }
echo "ok: pip install (online and offline)"
