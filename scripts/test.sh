#!/usr/bin/env bash
# Sets up, builds and runs every test. The README's test command; CI runs it too.
#   scripts/test.sh             optimised build in build/
#   scripts/test.sh --sanitize  ASan+UBSan build in build-sanitize/
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-sanitize
  flags=(-DCMAKE_BUILD_TYPE=Debug -DSTEERD_SANITIZE=ON)
fi

./scripts/setup.sh
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
