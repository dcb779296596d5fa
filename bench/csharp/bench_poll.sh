#!/usr/bin/env bash
# The polling API through the C# binding on Mono (BENCHMARKS.md "Engine clients").
#   bench/csharp/bench_poll.sh [BUILD_DIR (build)] [AGENTS (1000)] [FRAMES (3000)]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build} agents=${2:-1000} frames=${3:-3000}
tmp=$(mktemp -d /tmp/steerdc-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mcs -nologo -warnaserror -optimize+ -out:"$tmp/BenchPoll.exe" bindings/csharp/SteerdClient.cs bench/csharp/BenchPoll.cs
LD_LIBRARY_PATH=$build/client-sample mono --optimize=all "$tmp/BenchPoll.exe" "$build/server/steerd" "$agents" "$frames"
