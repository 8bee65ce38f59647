// Launch-file import and emit (libmemest/src/launch/): each reader and mapper on hand-derived
// values. The collected real files and their hand-written requests are checked end to end by
// the "launch: collected runs" test (scripts/launch/check_import.py).
#include <doctest/doctest.h>
