#!/usr/bin/env bash
# README.md's own shell commands, run verbatim: every line of every ```sh block of the README is
# read from the file (nothing here copies one), in order, and run unless a rule below says why it
# cannot run here. What a newcomer's machine has, the test provides around the commands:
#   - a working directory laid out as the repository (scripts/, client-sample/ and build/ linked to
#     the source and to this build), HOME inside it, stdin from /dev/null;
#   - STEERD_PORT and STEERD_HTTP_PORT set to free ports, so tests in parallel never share 7777;
#     the server, steerd-client and hello_steerd all read them;
#   - each block in a shell of its own (a fresh terminal); a block that starts no server gets the
#     README's first one (./scripts/run.sh) started before its lines, as "in another terminal";
#   - a server a line starts runs in the background (a line that ends with & already does), and
#     the next line waits until its /readyz answers 200; before a block starts another server its
#     earlier ones must have exited (the README stopped them); at the end of a block its servers
#     are stopped with SIGTERM;
#   - every block bounded in time; any command's failure fails the test with the README's line.
#   readme_commands.sh SOURCE_DIR BUILD_DIR [EXTRA_CFLAGS]
# EXTRA_CFLAGS: the sanitizer flags when the build has them (programs the README compiles against
# its library are then built with them too, through a cc first in PATH).
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) xflags=${3:-}
readme=$src/README.md
block_timeout=300

work=$(mktemp -d /tmp/steerd-readme-XXXXXX)
cleanup() {
  if [ -f "$work/pids" ]; then
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
ln -s "$src/scripts" "$work/scripts"
ln -s "$src/client-sample" "$work/client-sample"
ln -s "$build" "$work/build"
mkdir "$work/home" "$work/bin"
if [ -n "$xflags" ]; then
  printf '#!/bin/sh\nexec /usr/bin/cc %s "$@"\n' "$xflags" >"$work/bin/cc"
  chmod +x "$work/bin/cc"
fi

free_port() { # a free port of the given type (tcp or udp) on 127.0.0.1
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}
udp_port=$(free_port udp)
http_port=$(free_port tcp)

# Why a line cannot run here, or nothing: it runs.
skip_reason() {
  case $1 in
  ./scripts/test.sh*) echo "the whole suite, which runs this test" ;;
  "cmake -S . -B build"*) echo "configures and builds everything: the build this test runs in" ;;
  "cmake --install build --prefix /usr/local"*) echo "installs into the system's prefix" ;;
  docker\ * | debootstrap\ * | buildah\ * | podman\ *) echo "needs a container engine and images" ;;
  sysctl\ *) echo "changes the host's kernel settings" ;;
  *) ;;
  esac
}
is_server() {
  case $1 in
  ./scripts/run.sh* | build/server/steerd | "build/server/steerd "*"&") return 0 ;;
  *) return 1 ;;
  esac
}

# The blocks: "N<TAB>text" lines, a "-" line after each block. Comment-only lines are left out;
# a line ending in a backslash goes on in the next.
awk '
  /^```sh[[:space:]]*$/ { inblock = 1; next }
  inblock && /^```/ { if (cont != "") print start "\t" cont; cont = ""; print "-"; inblock = 0; next }
  inblock {
    line = $0
    if (cont == "") { start = NR; if (line ~ /^[[:space:]]*#/ || line ~ /^[[:space:]]*$/) next }
    if (line ~ /\\$/) { cont = cont substr(line, 1, length(line) - 1); next }
    print start "\t" cont line; cont = ""
  }' "$readme" >"$work/blocks"
[ -s "$work/blocks" ] || { echo "FAIL: no \`\`\`sh block in $readme"; exit 1; }

# What every block's shell has before its lines.
cat >"$work/lib.sh" <<EOF
set -euo pipefail
cd "$work"
export HOME="$work/home" STEERD_PORT=$udp_port STEERD_HTTP_PORT=$http_port PATH="$work/bin:\$PATH"
for v in \$(compgen -e | grep '^STEERD_' | grep -v -e '^STEERD_PORT\$' -e '^STEERD_HTTP_PORT\$'); do unset "\$v"; done
unset AGONES_SDK_HTTP_PORT
readme_servers=()
# A server started by the line before: waits for its /readyz (it may build first).
readme_ready() {
  local pid=\$1 deadline=\$((SECONDS + 240))
  echo "\$pid" >>"$work/pids"
  readme_servers+=("\$pid")
  until build/server/steerd healthcheck --ready >/dev/null 2>&1; do
    if ! kill -0 "\$pid" 2>/dev/null; then echo "FAIL: the server (pid \$pid) exited before it was ready"; exit 1; fi
    if [ \$SECONDS -ge \$deadline ]; then echo "FAIL: the server (pid \$pid) not ready after 240 s"; exit 1; fi
    sleep 0.2
  done
  echo "readme: server \$pid ready"
}
# Before another server: the earlier ones were told to stop and must be gone.
readme_gone() {
  local pid deadline=\$((SECONDS + 30))
  for pid in \${readme_servers[@]+"\${readme_servers[@]}"}; do
    while kill -0 "\$pid" 2>/dev/null; do
      if [ \$SECONDS -ge \$deadline ]; then echo "FAIL: server \$pid still runs where the README starts another"; exit 1; fi
      sleep 0.1
    done
  done
}
# A command's output: all of a short one, the start and end of a long one.
readme_show() {
  local n
  n=\$(wc -l <"\$1")
  if [ "\$n" -le 12 ]; then cut -c1-160 "\$1"; else head -n 5 "\$1" | cut -c1-160; echo "    ... (\$((n - 10)) more lines)"; tail -n 5 "\$1" | cut -c1-160; fi
}
readme_stop() {
  local pid status
  for pid in \${readme_servers[@]+"\${readme_servers[@]}"}; do
    kill -TERM "\$pid" 2>/dev/null || true
    status=0
    wait "\$pid" 2>/dev/null || status=\$?
    echo "readme: server \$pid stopped (status \$status)"
  done
}
EOF

block=0 lines=() starts=()
run_block() {
  block=$((block + 1))
  local script=$work/block$block.sh has_server=0 runnable=0 i cmd why
  for i in "${!lines[@]}"; do
    cmd=$(sed -E 's/[[:space:]]+#[[:space:]].*$//; s/[[:space:]]+$//' <<<"${lines[$i]}")
    why=$(skip_reason "$cmd")
    if [ -z "$why" ]; then runnable=1; fi
    if [ -z "$why" ] && is_server "$cmd"; then has_server=1; fi
  done
  [ "$runnable" = 1 ] || {
    for i in "${!lines[@]}"; do echo "README.md:${starts[$i]}: skipped ($(skip_reason "${lines[$i]}")): ${lines[$i]}"; done
    return 0
  }
  {
    echo "source \"$work/lib.sh\""
    if [ "$has_server" = 0 ]; then
      echo "echo 'readme: the README'\\''s first server for this block: ./scripts/run.sh'"
      echo "./scripts/run.sh >\"$work/server$block.log\" 2>&1 &"
      echo "readme_ready \$!"
    fi
    for i in "${!lines[@]}"; do
      cmd=$(sed -E 's/[[:space:]]+#[[:space:]].*$//; s/[[:space:]]+$//' <<<"${lines[$i]}")
      why=$(skip_reason "$cmd")
      if [ -n "$why" ]; then
        printf 'echo %q\n' "README.md:${starts[$i]}: skipped ($why): ${lines[$i]}"
        continue
      fi
      printf 'echo %q\n' "README.md:${starts[$i]}: \$ ${lines[$i]}"
      if is_server "$cmd"; then
        echo "readme_gone"
        case $cmd in
        *"&") echo "${cmd%&} >>\"$work/server$block.log\" 2>&1 &" ;;
        *) echo "$cmd >>\"$work/server$block.log\" 2>&1 &" ;;
        esac
        echo "readme_ready \$!"
      else
        # The group keeps the line's own redirections and assignments; its output is shortened.
        echo "{ $cmd; } >\"$work/out\" 2>&1 || { s=\$?; cat \"$work/out\"; echo \"FAIL: README.md:${starts[$i]} exited with \$s\"; exit 1; }"
        echo "readme_show \"$work/out\""
      fi
    done
    echo "readme_stop"
  } >"$script"
  echo "--- README block $block (line ${starts[0]})"
  local status=0
  timeout -k 10 "$block_timeout" bash "$script" </dev/null || status=$?
  if [ "$status" != 0 ]; then
    [ "$status" != 124 ] || echo "FAIL: README block at line ${starts[0]} still ran after $block_timeout s"
    echo "--- its servers' log:"
    cat "$work/server$block.log" 2>/dev/null || true
    exit 1
  fi
}

while IFS= read -r entry; do
  if [ "$entry" = "-" ]; then
    [ ${#lines[@]} -eq 0 ] || run_block
    lines=() starts=()
    continue
  fi
  starts+=("${entry%%$'\t'*}")
  lines+=("${entry#*$'\t'}")
done <"$work/blocks"
echo "PASS: every README command that can run here ran ($block blocks)"
