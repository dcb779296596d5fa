#!/usr/bin/env bash
# The C# binding on Mono (Debian's mono-mcs and mono-runtime):
#   1. the Unity sample (bindings/csharp/Unity/SteerdWorldView.cs) compiles against stub
#      UnityEngine types (tests/csharp/UnityEngineStubs.cs): API misuse breaks the build;
#   2. tests/csharp/SteerdClientTest.cs runs against the real server and the impairment
#      proxy on 127.0.0.1, through libsteerd-client.so by P/Invoke.
#   csharp_test.sh SOURCE_DIR LIB_DIR STEERD_BINARY STEERD_IMPAIR_BINARY
set -euo pipefail
src=$1 libdir=$2 steerd=$3 impair=$4
command -v mcs >/dev/null && command -v mono >/dev/null || { echo "FAIL: mcs/mono missing: scripts/setup.sh"; exit 1; }
tmp=$(mktemp -d /tmp/steerdc-csharp-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cs=$src/bindings/csharp
mcs -nologo -warnaserror -target:library -out:"$tmp/UnityEngine.dll" "$src/tests/csharp/UnityEngineStubs.cs"
mcs -nologo -warnaserror -target:library -r:"$tmp/UnityEngine.dll" -out:"$tmp/SteerdUnity.dll" \
  "$cs/SteerdClient.cs" "$cs/Unity/SteerdWorldView.cs"
echo "Unity sample compiled against the UnityEngine stubs"
mcs -nologo -warnaserror -r:System.dll -out:"$tmp/SteerdClientTest.exe" "$cs/SteerdClient.cs" \
  "$src/tests/csharp/SteerdClientTest.cs"
# A sanitizer build's library wants the ASan runtime loaded first (STEERDC_MONO_PRELOAD, set
# by CMake); Mono handles SIGSEGV itself and its own allocations are not ours to leak-check.
if [ -n "${STEERDC_MONO_PRELOAD:-}" ]; then
  export LD_PRELOAD=$STEERDC_MONO_PRELOAD
  export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:verify_asan_link_order=0
fi
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} mono --debug "$tmp/SteerdClientTest.exe" "$steerd" "$impair"
