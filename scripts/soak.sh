#!/usr/bin/env bash
# Soak and abuse benchmark (BENCHMARKS.md): builds bench/soak and runs it against the real
# server on 127.0.0.1 for SECONDS (600) with CLIENTS clients (200: bots, a garbage peer, a
# flooder, an observer) and AGENTS agents (10000). Fails on a server crash, a nonzero server
# exit, or an observer median snapshot rate below 90% of the configured rate.
#   scripts/soak.sh [SECONDS] [CLIENTS] [AGENTS] [-- more bench/soak options, see --help]
# STEERD_BUILD_DIR picks the build directory (build).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-600}"
clients="${2:-200}"
agents="${3:-10000}"
shift $(($# < 3 ? $# : 3))
if [ "${1:-}" = "--" ]; then shift; fi
build="${STEERD_BUILD_DIR:-build}"

./scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target soak steerd -j"$(nproc)"
exec "$build/bench/soak" --seconds "$seconds" --clients "$clients" --agents "$agents" "$@"
