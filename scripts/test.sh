#!/usr/bin/env bash
# Command 2 of the README: build and run every test — the core suite in a Release build and
# under AddressSanitizer + UBSan (leaks too), then each component suite in scripts/test.d/
# (run in name order; each builds what it needs). Installs dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in default asan; do
  echo "== core ($preset): configure, build, test"
  cmake --preset "$preset" > /dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
for suite in scripts/test.d/*.sh; do
  [ -e "$suite" ] || continue
  echo "== $(basename "$suite" .sh)"
  bash "$suite"
done
