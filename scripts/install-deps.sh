#!/usr/bin/env bash
# Installs what memest needs to build and test, from Debian's packages: every package named in
# scripts/deps/*.txt (one per line, # comments), or only the components named as arguments
# (`install-deps.sh core`). Idempotent: does nothing when all are installed. Runs apt-get as
# root (sudo if needed). With the web component it also unpacks Debian's source package of
# yaml-cpp for the WebAssembly build (deps/yaml-cpp-src.sh: adds a deb-src entry if none, then
# `apt-get source`; nothing to do when already there).
set -euo pipefail
cd "$(dirname "$0")"
files=(deps/*.txt)
[ $# -gt 0 ] && files=("${@/#/deps/}") && files=("${files[@]/%/.txt}")
mapfile -t packages < <(cat "${files[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# sources the WebAssembly build compiles itself (wasm/build.sh runs this too)
for f in "${files[@]}"; do
  [ "$f" = deps/web.txt ] && bash deps/yaml-cpp-src.sh
done
exit 0
