#!/usr/bin/env bash
# Component suite: the WebAssembly build and the browser calculator.
#  1. The CLI, for the cross-checks (MEMEST_CLI: what `memest request` answers).
#  2. wasm/: build the module with Debian's emscripten (yaml-cpp compiled from Debian's source
#     package, scripts/deps/yaml-cpp-src.sh), check wasm/exports.txt against memest.h, run the
#     wrapper's unit tests in Node (node:test), the OOM request against the CLI's, launch import.
#  3. web/: npm ci (committed lockfile), vite build, then the E2E tests in Debian's headless
#     Chromium (playwright-core) against the page on 127.0.0.1, cross-checked with the CLI (the
#     Import tab: import.test.mjs; a model by Hugging Face id, the Hub intercepted:
#     hf-config.test.mjs; the fine-tuning user's rough edges and the axe-core
#     accessibility check: finetune-user.test.mjs).
#  4. The size/timing benchmark (figures only, not a pass/fail gate): first result, keystroke to
#     answer, the layouts table, the fine-tuning and search tabs.
# Screenshots: web/test-results/*.png (CI artifacts). Run from anywhere:
#   bash scripts/test.d/30-web.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"  # acorn for Debian's emscripten

for tool in emcc node npm /usr/bin/chromium dpkg-source; do
  command -v "$tool" > /dev/null || { echo "30-web: $tool not found (scripts/install-deps.sh installs scripts/deps/web.txt)" >&2; exit 1; }
done

echo "-- memest CLI for the cross-checks (wasm and web against memest request)"
cmake -S . -B build-web-cli -DMEMEST_BUILD_TESTS=OFF > /dev/null
cmake --build build-web-cli -j2 --target memest_cli > /dev/null
export MEMEST_CLI="$PWD/build-web-cli/bindings/cli/memest"

echo "-- wasm: build"
bash wasm/build.sh
echo "-- wasm: exports.txt against memest.h"
node wasm/check-exports.mjs
echo "-- wasm: wrapper unit tests (node:test)"
node --test --test-reporter=spec wasm/test/

echo "-- web: npm ci, vite build"
(cd web && npm ci --no-audit --no-fund --loglevel=error && npx --no-install vite build --logLevel warn)

echo "-- web: end-to-end tests in headless Chromium"
(cd web && node --test --test-reporter=spec test/e2e.test.mjs test/stack.test.mjs test/fields19.test.mjs test/liger.test.mjs test/recompute-modules.test.mjs test/buckets.test.mjs test/lora.test.mjs test/megatron-lora.test.mjs test/recipes.test.mjs test/throughput.test.mjs test/import.test.mjs test/hf-config.test.mjs \
  test/finetune-user.test.mjs)

echo "-- web: benchmark (figures, not assertions)"
(cd web && node test/bench.mjs) || echo "30-web: benchmark failed to run (not a test failure)"
echo "30-web: ok (screenshots in web/test-results/)"
