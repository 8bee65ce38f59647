#!/usr/bin/env bash
# Builds the WebAssembly module and the browser calculator, then serves it on
# http://127.0.0.1:${PORT:-8080}/ (static files from web/dist; Ctrl-C stops). Needs the packages
# of scripts/deps/web.txt (scripts/install-deps.sh) and the npm registry for the first npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
bash wasm/build.sh
(cd web && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npx --no-install vite build --logLevel warn)
exec node web/test/server.mjs "${PORT:-8080}"
