#!/usr/bin/env bash
# Builds the container image with buildah and checks it: under 100 MB, and the
# server starts in it as its non-root user. Not part of scripts/test.sh (it
# needs a Debian base and minutes); run it after touching the Dockerfile.
#   scripts/check_image.sh [BASE]   BASE: a local image of Debian 12; without
#                                   one, debootstrap makes bookworm-local first
set -euo pipefail
cd "$(dirname "$0")/.."
limit_mb=100
base="${1:-}"
if [ -z "$base" ]; then
  base=bookworm-local
  if ! podman image exists "$base"; then
    dir="$(mktemp -d)"
    debootstrap --variant=minbase bookworm "$dir" >/dev/null
    tar -C "$dir" -c . | podman import - "$base" >/dev/null
    rm -rf "$dir"
  fi
fi
tag=steerd-image-check
buildah bud --isolation=chroot --format docker --build-arg BASE="$base" --build-arg RUNTIME_BASE="$base" \
  -t "$tag" . >/dev/null
bytes="$(podman image inspect "$tag" --format '{{.Size}}')"
mb=$((bytes / 1000000))
echo "image $tag: $mb MB (limit $limit_mb MB)"
ctr="$(buildah from "$tag")"
trap 'buildah rm "$ctr" >/dev/null' EXIT
out="$(buildah run --isolation=chroot --user steerd "$ctr" -- sh -c \
  'STEERD_HTTP_PORT=0 timeout -s INT 1 /usr/local/bin/steerd --port 0 --bind 127.0.0.1 2>&1; id -u')"
echo "$out" | grep -q "listening on 127.0.0.1:" || { echo "the server did not start in the image:"; echo "$out"; exit 1; }
echo "$out" | tail -1 | grep -qx 10001 || { echo "not the steerd user"; exit 1; }
[ "$mb" -lt "$limit_mb" ] || { echo "the image is $mb MB, not under $limit_mb MB"; exit 1; }
echo "ok"
