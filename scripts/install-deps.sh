#!/usr/bin/env bash
# Installs what memest needs to build and test, from Debian's packages. Idempotent: does
# nothing when every package is already installed. Runs apt-get as root (sudo if needed).
set -euo pipefail
packages=(build-essential cmake pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev doctest-dev)
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
