#!/usr/bin/env bash
# Installs the built project into a scratch prefix, then builds and runs a consumer with
# find_package(memest) (shared and static) and with pkg-config. Usage: run.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work="$build/consumer-test"
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
expected="27.20 GiB fits"

cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/cmake" > "$work/build.log"
got=$(LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake/consumer_shared")
[ "$got" = "$expected" ] || { echo "find_package shared: got '$got'"; exit 1; }
got=$("$work/cmake/consumer_static")
[ "$got" = "$expected" ] || { echo "find_package static: got '$got'"; exit 1; }

libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n 1)
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs memest)
cc -std=c99 -Wall -Werror "$here/consumer.c" $flags -o "$work/consumer_pkgconfig"
got=$(LD_LIBRARY_PATH="$(dirname "$libdir")" "$work/consumer_pkgconfig")
[ "$got" = "$expected" ] || { echo "pkg-config: got '$got'"; exit 1; }
# pkg-config reports the version of the installed header
version=$(sed -n 's/^#define MEMEST_VERSION_STRING "\(.*\)"$/\1/p' "$work/prefix/include/memest/memest.h")
[ -n "$version" ] && [ "$(PKG_CONFIG_PATH="$libdir" pkg-config --modversion memest)" = "$version" ]
echo "consumers built with find_package (shared, static) and pkg-config: $got"
