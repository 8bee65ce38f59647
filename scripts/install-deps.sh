#!/usr/bin/env bash
# Installs what memest needs to build and test, from Debian's packages: every package named in
# scripts/deps/*.txt (one per line, # comments), or only the components named as arguments
# (`install-deps.sh core`). Idempotent: does nothing when all are installed. Runs apt-get as
# root (sudo if needed).
set -euo pipefail
cd "$(dirname "$0")"
files=(deps/*.txt)
[ $# -gt 0 ] && files=("${@/#/deps/}") && files=("${files[@]/%/.txt}")
mapfile -t packages < <(cat "${files[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
