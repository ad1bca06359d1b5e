#!/usr/bin/env bash
# docs/detectors.md has a section for every finding kind `stepwatch detectors` lists (and lists
# no kind the CLI does not know): the user's reference cannot drift from the code.
set -uo pipefail
cli=$1
docs="$(cd "$(dirname "$0")/../.." && pwd)/docs/detectors.md"
[ -f "$docs" ] || { echo "FAIL: $docs missing"; exit 1; }
ids=$("$cli" detectors | awk '{print $1}' | grep -E '^[a-z0-9_]+$' | sort -u)
[ -n "$ids" ] || { echo "FAIL: stepwatch detectors listed nothing"; exit 1; }
documented=$(grep -oE '^## `[a-z0-9_]+`' "$docs" | sed 's/^## `//; s/`$//' | sort -u)
missing=$(comm -23 <(echo "$ids") <(echo "$documented"))
extra=$(comm -13 <(echo "$ids") <(echo "$documented"))
[ -z "$missing" ] || { echo "FAIL: detectors without a section in docs/detectors.md: $missing"; exit 1; }
[ -z "$extra" ] || { echo "FAIL: sections in docs/detectors.md for unknown detectors: $extra"; exit 1; }
echo "ok: docs/detectors.md documents all $(echo "$ids" | wc -l) finding kinds"
