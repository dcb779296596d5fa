#!/usr/bin/env bash
# Installs the Debian 12 packages steerd needs to build, test and benchmark.
# Idempotent: prints one line and installs nothing when everything is present.
set -euo pipefail

packages=(build-essential cmake pkg-config libuv1-dev libenet-dev libmsgpack-dev check
          python3 python3-enet python3-msgpack clang)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
