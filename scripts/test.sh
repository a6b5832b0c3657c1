#!/usr/bin/env bash
# The whole test suite: unit tests (also under AddressSanitizer + UBSan), end-to-end tests that
# record real .NET programs and compare with their own ground truth.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

# The browser test of `heaplens report` renders the page in headless Chromium.
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  echo "setup: installing chromium (browser test of heaplens report)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

echo "== unit and end-to-end tests (build/)"
ctest --test-dir build --output-on-failure -j2

echo "== unit tests under AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEAPLENS_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)" 2>&1 | grep -Ev '^\[ *[0-9]+%\]|^-- ' || true
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j2 -LE 'e2e|browser'
