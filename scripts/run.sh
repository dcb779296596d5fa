#!/usr/bin/env bash
# Sets up, builds and runs the steerd server with its demo world on 127.0.0.1:7777.
# Arguments go to the server (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/server/steerd "$@"
