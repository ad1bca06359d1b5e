#!/usr/bin/env bash
# Installs the Debian packages stepwatch builds and tests with, when they are missing.
# Used by tests/run.sh and examples/demo.sh; safe to run repeatedly.
set -euo pipefail

packages=(
  cmake make g++ pkg-config python3
  libspdlog-dev libfmt-dev libsimdjson-dev nlohmann-json3-dev libcli11-dev
  libdeflate-dev zlib1g-dev libisal-dev libsqlite3-dev libgtest-dev libbenchmark-dev
  chromium  # tests/cli/html.sh renders the HTML report headless (~620 MB, ~30 s to install)
  clang libclang-rt-14-dev  # the libFuzzer targets (tests/fuzz/run_fuzzers.sh)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "stepwatch: installing missing packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages the tests use that Debian's python3-* packages would not give the python3 on
# PATH (a pyenv or venv interpreter does not see /usr/lib/python3/dist-packages).
#   prometheus-client: tests/python/test_metrics.py parses the metrics endpoint with Prometheus's own parser
pip_packages=(prometheus-client)
pip_modules=(prometheus_client)
pip_missing=()
for i in "${!pip_modules[@]}"; do
  python3 -c "import ${pip_modules[$i]}" >/dev/null 2>&1 || pip_missing+=("${pip_packages[$i]}")
done
if ((${#pip_missing[@]})); then
  echo "stepwatch: installing missing Python packages: ${pip_missing[*]}" >&2
  python3 -m pip install --quiet "${pip_missing[@]}" >&2 ||
    echo "stepwatch: could not install ${pip_missing[*]} (offline?): the tests that need them skip" >&2
fi

# The CUPTI releases the per-version tests run against (NVIDIA's wheels; see scripts/fetch-cupti.sh).
"$(dirname "${BASH_SOURCE[0]}")/fetch-cupti.sh"
