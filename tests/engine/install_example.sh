#!/usr/bin/env bash
# The installed libsteerd-client, used as a newcomer would: `cmake --install` into a
# temporary prefix, build client-sample/examples/hello_steerd.c against it with
# `pkg-config --cflags --libs steerd-client` (shared) and against the static archive,
# then run both against the real server on 127.0.0.1 (ephemeral port).
#   install_example.sh BUILD_DIR SOURCE_DIR STEERD_BINARY [EXTRA_CFLAGS]
# EXTRA_CFLAGS: the sanitizer flags when the library was built with them.
set -euo pipefail
build=$1 src=$2 steerd=$3
read -r -a xflags <<<"${4:-}"
tmp=$(mktemp -d /tmp/steerdc-install-XXXXXX)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
pc=$(find "$tmp/prefix" -name steerd-client.pc)
[ -n "$pc" ] || { echo "FAIL: steerd-client.pc not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir steerd-client)
test -f "$(pkg-config --variable=includedir steerd-client)/steerd/client.h"
ls "$libdir"/libsteerd-client.so.1 "$libdir"/libsteerd-client.a >/dev/null
echo "pkg-config --cflags --libs steerd-client: $(pkg-config --cflags --libs steerd-client)"

# The public header stands alone: no protocol, server or ENet headers needed (and
# a C++ compiler accepts it too when there is one).
cc -std=c11 -Wall -Wextra -Werror -c -x c "$(pkg-config --variable=includedir steerd-client)/steerd/client.h" \
  -o "$tmp/header.o"
if command -v c++ >/dev/null; then
  echo '#include <steerd/client.h>
int main() { return steerdc_version() == 0; }' >"$tmp/cxx.cc"
  c++ -Wall -Werror $(pkg-config --cflags steerd-client) -c "$tmp/cxx.cc" -o "$tmp/cxx.o"
fi

# Only steerdc_* leave either library.
extra=$(nm -D --defined-only "$libdir/libsteerd-client.so.1" | awk '{print $3}' | grep -v '^steerdc_' || true)
[ -z "$extra" ] || { echo "FAIL: the shared library exports internals: $extra"; exit 1; }
extra=$(nm -g --defined-only "$libdir/libsteerd-client.a" | awk 'NF == 3 {print $3}' | grep -v '^steerdc_' || true)
[ -z "$extra" ] || { echo "FAIL: the static library exports internals: $extra"; exit 1; }
soname=$(objdump -p "$libdir/libsteerd-client.so.1" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libsteerd-client.so.1 ] || { echo "FAIL: soname '$soname'"; exit 1; }

cc -std=c11 -Wall -Wextra -Werror ${xflags[@]+"${xflags[@]}"} "$src/client-sample/examples/hello_steerd.c" \
  $(pkg-config --cflags --libs steerd-client) -lm -o "$tmp/hello_shared"
cc -std=c11 -Wall -Wextra -Werror ${xflags[@]+"${xflags[@]}"} "$src/client-sample/examples/hello_steerd.c" \
  $(pkg-config --cflags steerd-client) "$libdir/libsteerd-client.a" \
  $(pkg-config --libs-only-L --libs-only-l libenet) -lm -o "$tmp/hello_static"
if ldd "$tmp/hello_static" | grep -q steerd-client; then echo "FAIL: static build links the .so"; exit 1; fi

"$steerd" --bind 127.0.0.1 --port 0 --http-port 0 --no-demo >"$tmp/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/server.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: server did not start"; cat "$tmp/server.log"; exit 1; }

echo "--- shared (LD_LIBRARY_PATH=$libdir)"
LD_LIBRARY_PATH=$libdir ldd "$tmp/hello_shared" | grep steerd-client
LD_LIBRARY_PATH=$libdir "$tmp/hello_shared" 127.0.0.1 "$port"
echo "--- static"
"$tmp/hello_static" 127.0.0.1 "$port"
echo "PASS"
