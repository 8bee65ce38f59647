#!/bin/sh
# Fails when a doctest binary holds a test case whose name has a semicolon: CMake reads it as
# a list separator, so doctest_discover_tests registers a truncated name that matches no test
# case, and ctest reports the never-run test as passed.
#   tests/check_test_names.sh BINARY
names=$("$1" --list-test-cases --no-version) || exit 1
bad=$(printf '%s\n' "$names" | grep -F "$(printf '\073')")
if [ -n "$bad" ]; then
  printf '%s: test case names with a semicolon (ctest would never run them):\n%s\n' "$1" "$bad" >&2
  exit 1
fi
