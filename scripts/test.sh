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
# Two passes (tests/CMakeLists.txt says which test is in which): the tests that compute, nproc at
# a time; then those labelled "wait", which mostly wait on the network and the clock, five at a
# time. Both passes run; the script fails if either did.
rc=0
ctest --test-dir "$build" --output-on-failure -LE '^wait$' -j"$(nproc)" || rc=1
ctest --test-dir "$build" --output-on-failure -L '^wait$' -j5 || rc=1
exit "$rc"
