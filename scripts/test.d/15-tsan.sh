#!/usr/bin/env bash
# ThreadSanitizer suite: builds the static library with -fsanitize=thread (its own build
# directory, library only) and tests/tsan/tsan_threads.cpp against it, then runs it: 8 threads
# making the library's first calls together (the lazily parsed presets), then every entry point
# (typed and JSON, valid and invalid) many times, each answer compared with the single-threaded
# one, and the thread-local last error checked. Any TSan report fails the suite.
# Self-contained: run from the repository root as `bash scripts/test.d/15-tsan.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-tsan
CXX=${CXX:-g++}
FLAGS="-fsanitize=thread -fno-omit-frame-pointer"

echo "-- libmemest_static with ThreadSanitizer ($B)"
CXX=$CXX cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMEST_BUILD_TESTS=OFF \
  -DMEMEST_BUILD_CLI=OFF -DCMAKE_CXX_FLAGS="$FLAGS" > /dev/null
cmake --build "$B" --target memest_static -j 2 > /dev/null

echo "-- tests/tsan/tsan_threads.cpp"
"$CXX" -std=c++17 -O1 -g $FLAGS -DMEMEST_STATIC -I libmemest/include tests/tsan/tsan_threads.cpp \
  "$B/libmemest/libmemest.a" -lyaml-cpp -pthread -o "$B/tsan_threads"  # libmemest.a needs yaml-cpp

echo "-- run (8 threads)"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" "$B/tsan_threads"
echo "15-tsan: ok"
