#!/usr/bin/env bash
# Fuzzes the C API with libFuzzer: builds both targets with clang (library included, with
# coverage instrumentation, AddressSanitizer and UBSan, every UB report fatal), then runs each
# for the given time and prints its executions and findings.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     SECONDS per target (default 60);
#                                             TARGET: request (JSON entry point), typed
#                                             (typed structs), launch (the launch-file
#                                             readers of mode "import"); default all three.
#   FUZZ_RUNS=N scripts/fuzz.sh 3600 typed    stop after N executions (or SECONDS, first)
#   FUZZ_JOBS=N                               libFuzzer -jobs/-workers (default 1 process)
#   FUZZ_ASAN=0                               UBSan only, no ASan (build-fuzz-ub/): for long runs
#
# Build directory: build-fuzz/. Working corpora grow in build-fuzz/corpus-TARGET/ (seeded from
# tests/fuzz/corpus*/, never written back); findings (crash-*, leak-*, timeout-*, oom-*) land
# in build-fuzz/findings-TARGET/. A finding fails the script: minimise it
# (build-fuzz/tests/memest_fuzz_TARGET -minimize_crash=1 -runs=100000 FILE), add it to the
# target's seed corpus and fix the library. See CONTRIBUTING.md, "Fuzzing".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(request typed launch)
B=$ROOT/build-fuzz
JOBS=${FUZZ_JOBS:-1}
SANITIZE=ON
FLAGS="-fsanitize=fuzzer-no-link"
TARGET_SANITIZERS="fuzzer,address"
if [ "${FUZZ_ASAN:-1}" = 0 ]; then
  B=$ROOT/build-fuzz-ub
  SANITIZE=OFF
  FLAGS="-fsanitize=fuzzer-no-link,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  TARGET_SANITIZERS="fuzzer,undefined"
fi

command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 1; }

for target in "${TARGETS[@]}"; do
  case "$target" in request | typed | launch) ;; *) echo "fuzz.sh: unknown target $target (request, typed, launch)" >&2; exit 2 ;; esac
done
echo "== fuzz: build (clang, libFuzzer, $([ "$SANITIZE" = ON ] && echo "ASan + UBSan" || echo "UBSan")) in $B"
CC=clang CXX=clang++ cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMEST_FUZZ=ON \
  -DMEMEST_SANITIZE="$SANITIZE" -DMEMEST_FUZZ_SANITIZERS="$TARGET_SANITIZERS" \
  -DMEMEST_BUILD_CLI=OFF -DMEMEST_BUILD_TESTS=ON \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" > /dev/null
cmake --build "$B" -j 2 --target "${TARGETS[@]/#/memest_fuzz_}" > /dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for target in "${TARGETS[@]}"; do
  case "$target" in
    request) seeds=tests/fuzz/corpus; extra=(-dict="$ROOT/tests/fuzz/request.dict" -max_len=4096) ;;
    typed) seeds=tests/fuzz/corpus_typed; extra=(-max_len=512) ;;
    launch) seeds=tests/fuzz/corpus_launch; extra=(-max_len=16384) ;;
    *) echo "fuzz.sh: unknown target $target (request, typed, launch)" >&2; exit 2 ;;
  esac
  corpus=$B/corpus-$target
  findings=$B/findings-$target
  log=$B/fuzz-$target.log
  mkdir -p "$corpus" "$findings"
  runs=()
  [ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")
  par=()
  [ "$JOBS" -gt 1 ] && par=(-jobs="$JOBS" -workers="$JOBS")
  echo "== fuzz: $target for ${SECS}s${FUZZ_RUNS:+ or $FUZZ_RUNS runs} ($(date -u +%Y-%m-%dT%H:%MZ))"
  start=$(date +%s)
  set +e
  rm -f "$B"/fuzz-[0-9]*.log
  (cd "$B" && "$B/tests/memest_fuzz_$target" "$corpus" "$ROOT/$seeds" -max_total_time="$SECS" \
    "${runs[@]}" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" "${par[@]}" "${extra[@]}") > "$log" 2>&1
  rc=$?
  set -e
  elapsed=$(( $(date +%s) - start ))
  # With -jobs the statistics are in the workers' fuzz-N.log files (the main log echoes them:
  # read one or the other, not both).
  stat_logs=("$log")
  [ "$JOBS" -gt 1 ] && stat_logs=("$B"/fuzz-[0-9]*.log)
  execs=$({ cat "${stat_logs[@]}" 2>/dev/null || true; } |
          { grep 'stat::number_of_executed_units' || true; } | awk '{s += $2} END {print s + 0}')
  count=$(find "$findings" -type f | wc -l)
  tail -n 3 "$log" | sed 's/^/   /'
  echo "-- $target: $execs executions in ${elapsed}s, corpus $(find "$corpus" -type f | wc -l) inputs, findings: $count (exit $rc)"
  if [ "$count" -gt 0 ] || [ "$rc" -ne 0 ]; then
    find "$findings" -type f | sed 's/^/   finding: /'
    echo "   log: $log"
    status=1
  fi
done
exit $status
