#!/usr/bin/env bash
# Installs what heaplens needs on a fresh Debian machine and builds it into build/.
# Safe to run again: installs only what is missing, rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libglib2.0-dev libjansson-dev libsqlite3-dev sqlite3 python3 strace)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v dotnet >/dev/null; then
  echo "setup: the .NET SDK (dotnet) is not on PATH; heaplens records .NET programs and needs it" >&2
  exit 1
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" 2>&1 | grep -Ev '^\[ *[0-9]+%\]|^-- ' || true
test -x build/bin/heaplens && test -f build/bin/libheaplens.so
