#!/usr/bin/env bash
# Installs the Debian 12 packages steerd needs to build, test and benchmark.
# Idempotent: prints one line and installs nothing when everything is present.
#   scripts/setup.sh               everything: build, tests, fuzzing, interop peers
#   scripts/setup.sh --build-only  what building the server and client needs (Dockerfile)
set -euo pipefail

packages=(build-essential cmake pkg-config libuv1-dev libenet-dev libmsgpack-dev libsodium-dev)
# The HTTP port (libwebsockets with its libuv event library) and JSON logs (jansson).
packages+=(libwebsockets-dev libwebsockets-evlib-uv libjansson-dev)
if [ "${1:-}" != "--build-only" ]; then
  # Check for the tests; Debian's python3-enet and python3-msgpack are the independent
  # peers of the interop test; clang for the sanitizer and fuzzer builds.
  packages+=(check python3 python3-enet python3-msgpack clang libclang-rt-14-dev)
  # llvm-14: llvm-ar-14 and llvm-ranlib-14 for clang's LTO archive of the movement core (.ci/run).
  packages+=(llvm-14)
  # clang-format-14: the layout .ci/run checks every source against (.clang-format).
  packages+=(clang-format-14)
  # Recast/Detour for the anchor benchmark bench/anchors/detour_nav.cpp (built only when present).
  packages+=(librecast-dev)
  # Mono for the C# binding's test (tests/engine/csharp_test.sh): the mcs compiler, the runtime
  # and the class libraries the binding and its test use.
  packages+=(mono-mcs mono-runtime libmono-system4.0-cil libmono-system-core4.0-cil)
  # Operations tests: promtool and a real Prometheus server; the live view in headless
  # Chromium driven by playwright-core (npm, tests/browser/) under Node.js.
  packages+=(prometheus chromium nodejs)
  # A Node.js that brings its own npm (e.g. NodeSource's) conflicts with Debian's npm package.
  if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
fi

# The browser test's npm packages, pinned by tests/browser/package-lock.json.
npm_packages() {
  if [ "${1:-}" = "--build-only" ]; then return 0; fi
  local dir=tests/browser
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || ! cmp -s <(sed -n '/"node_modules\//,$p' "$dir/package-lock.json") <(sed -n '/"node_modules\//,$p' "$dir/node_modules/.package-lock.json"); then
    echo "setup: npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

cd "$(dirname "$0")/.."
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  npm_packages "${1:-}"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_packages "${1:-}"
echo "setup: done"
