#!/usr/bin/env bash
# Command 2 of the README: build and run every test — the Release build, then the same
# suite under AddressSanitizer + UBSan with leak checking. Installs dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in default asan; do
  echo "== $preset: configure, build, test"
  cmake --preset "$preset" > /dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
