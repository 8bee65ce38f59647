#!/usr/bin/env bash
# Builds the WebAssembly module: wasm/build/memest_core.mjs + memest_core.wasm (Debian's
# emscripten; scripts/deps/web.txt), linked with yaml-cpp built from Debian's source package
# (scripts/deps/yaml-cpp-src.sh unpacks it into build/yaml-cpp-src once). Incremental: reruns
# only what changed.
set -euo pipefail
cd "$(dirname "$0")"
# Debian's emscripten finds acorn (package node-acorn) through NODE_PATH.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
bash ../scripts/deps/yaml-cpp-src.sh build/yaml-cpp-src
if [ ! -f build/CMakeCache.txt ]; then
  emcmake cmake -S . -B build -DCMAKE_BUILD_TYPE=MinSizeRel > /dev/null
fi
cmake --build build -j"${MEMEST_JOBS:-2}"
