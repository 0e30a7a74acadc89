#!/usr/bin/env bash
# Installs what building and testing spindle needs, from Debian 12 packages.
# Skips packages already installed; uses sudo when not run as root.
set -euo pipefail

# The build's tools and libraries, then the programs the tests drive (gdb,
# curl, wrk, redis-cli and redis-benchmark, and openssl, which also makes the
# TLS tests' certificates): without them those tests skip.
packages=(
  g++ cmake ninja-build pkg-config
  liburing-dev libboost-context-dev libboost-fiber-dev libboost-dev
  libfmt-dev libcli11-dev catch2 prometheus-cpp-dev libboost-stacktrace-dev nlohmann-json3-dev
  libssl-dev
  gdb curl wrk redis-tools openssl
)
if [[ "${SPINDLE_BOOTSTRAP_EXTRA:-}" != "" ]]; then
  read -r -a extra <<<"$SPINDLE_BOOTSTRAP_EXTRA"
  packages+=("${extra[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "bootstrap: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
