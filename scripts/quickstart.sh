#!/usr/bin/env bash
# Command 1 of the README: install dependencies, build the library and the CLI (not the tests:
# scripts/test.sh builds those in the same build/), and run the built-in default example
# (Llama-3.1-8B on 8 x A100 40GB, TP 4 / PP 2, sequence 8192: a 4D paper layout).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh core
cmake --preset default > /dev/null
cmake --build --preset default --target memest_cli   # libmemest (objects, libmemest.a) and the memest command
echo
./build/bindings/cli/memest pretrain
