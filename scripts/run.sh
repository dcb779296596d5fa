#!/usr/bin/env bash
# Sets up, builds and runs the steerd server with its demo world on 127.0.0.1:7777.
# Arguments go to the server (try --help); relative paths in them are taken from the directory
# run.sh is started in. Builds only what it runs (the server, the client CLI and the headless
# demo) in build/ (STEERD_BUILD_DIR picks another), configured RelWithDebInfo the first time
# (reconfigure it yourself for another build type), and shows every step as it goes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${STEERD_BUILD_DIR:-$root/build}
targets=(steerd steerd-client steerd-demo)

# Asking for the options or the version needs the server, not a fresh build of it.
for arg in "$@"; do
  case $arg in
  -h | --help | --version)
    if [ -x "$build/server/steerd" ]; then exec "$build/server/steerd" "$@"; fi
    if [ "$arg" = --version ]; then
      sed -n 's/^project(steerd VERSION \([0-9.]*\).*/steerd \1 (not built yet)/p' "$root/CMakeLists.txt"
      exit 0
    fi
    echo "run.sh [SERVER OPTIONS]: sets up, builds and starts the steerd server (build/server/steerd)."
    echo "The server is not built yet, so its option list is not at hand: run ./scripts/run.sh once,"
    echo "then ./scripts/run.sh --help lists every option and its environment variable."
    exit 0
    ;;
  esac
done

step() { echo "run.sh: [$1/3] $2"; }
step 1 "packages (scripts/setup.sh --build-only)"
"$root/scripts/setup.sh" --build-only
if [ ! -f "$build/CMakeCache.txt" ]; then
  step 2 "configure $build (cmake, RelWithDebInfo)"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
else
  step 2 "configure: $build is configured already"
fi
step 3 "build ${targets[*]} (cmake --build, $(nproc) jobs)"
start=$(date +%s)
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)"
echo "run.sh: built in $(($(date +%s) - start)) s; starting $build/server/steerd $*"
exec "$build/server/steerd" "$@"
