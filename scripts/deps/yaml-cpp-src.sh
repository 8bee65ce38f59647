#!/usr/bin/env bash
# yaml-cpp's source, the Debian way, for the WebAssembly build (wasm/CMakeLists.txt compiles it
# with emscripten; the native build links Debian's libyaml-cpp-dev). Unpacks Debian's source
# package (`apt-get source`, Debian's patches applied) of the same version as the installed
# libyaml-cpp-dev into DIR (default wasm/build/yaml-cpp-src, git-ignored), as DIR/yaml-cpp/.
#   bash scripts/deps/yaml-cpp-src.sh [DIR]
# Needs dpkg-dev (scripts/deps/web.txt) and a deb-src entry: when no apt source lists deb-src, it
# writes /etc/apt/sources.list.d/debian-src.sources (a copy of debian.sources with
# Types: deb-src) and runs apt-get update. Idempotent: does nothing when DIR already holds that
# version (DIR/yaml-cpp/.debian-version).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-$root/wasm/build/yaml-cpp-src}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# the source version of the installed library (native and WebAssembly builds use the same one)
version="$(dpkg-query -W -f='${source:Version}' libyaml-cpp-dev 2>/dev/null || true)"
[ -n "$version" ] || { echo "yaml-cpp-src: libyaml-cpp-dev is not installed (scripts/install-deps.sh)" >&2; exit 1; }
stamp="$dir/yaml-cpp/.debian-version"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] && [ -f "$dir/yaml-cpp/CMakeLists.txt" ]; then
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
command -v dpkg-source > /dev/null || {
  echo "yaml-cpp-src: installing dpkg-dev (apt-get source unpacks with dpkg-source)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dpkg-dev
}

# a deb-src entry: only when none of the apt sources has one
has_src() {
  grep -qsE '^[[:space:]]*Types:.*\bdeb-src\b' /etc/apt/sources.list.d/*.sources ||
    grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list
}
if ! has_src; then
  main=/etc/apt/sources.list.d/debian.sources
  [ -f "$main" ] || { echo "yaml-cpp-src: no deb-src entry and no $main to copy it from" >&2; exit 1; }
  echo "yaml-cpp-src: adding /etc/apt/sources.list.d/debian-src.sources (Types: deb-src)"
  sed -E 's/^([[:space:]]*Types:).*/\1 deb-src/' "$main" | $sudo tee /etc/apt/sources.list.d/debian-src.sources > /dev/null
  $sudo apt-get update -qq
fi
# the source index (apt-get update once, when the entry is there but not yet read)
if [ -z "$(apt-cache showsrc "yaml-cpp" 2>/dev/null | grep -F "Version: $version" || true)" ]; then
  $sudo apt-get update -qq
fi

work="$(mktemp -d "$dir/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# apt-get source downloads into the current directory and unpacks with dpkg-source -x (patched)
(cd "$work" && apt-get source -qq "yaml-cpp=$version" > /dev/null 2>"$work/.log") ||
  { cat "$work/.log" >&2; echo "yaml-cpp-src: apt-get source yaml-cpp=$version failed" >&2; exit 1; }
src="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'yaml-cpp-*' | head -n 1)"
[ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] || { echo "yaml-cpp-src: no unpacked yaml-cpp-*/ in $work" >&2; exit 1; }
echo "$version" > "$src/.debian-version"
rm -rf "$dir/yaml-cpp"
mv "$src" "$dir/yaml-cpp"
echo "yaml-cpp-src: yaml-cpp $version in $dir/yaml-cpp"
