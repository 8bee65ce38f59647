#!/usr/bin/env bash
# Builds memest (Release) and prints the benchmark figures: single-estimate latency and the
# full layout search for Llama-3.1-405B on 16,384 H100-80GB GPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default > /dev/null
cmake --build --preset default --target memest_bench
./build/tests/memest_bench "$@"
