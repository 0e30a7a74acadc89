#!/usr/bin/env bash
# Usage: tests/consumer/run.sh BUILD_DIR
# Installs BUILD_DIR into a temporary prefix, builds echo_server.cpp against
# it twice — with find_package(spindle) (this folder's CMakeLists.txt) and
# with pkg-config — and checks one echo round trip over loopback with each
# binary. Every step is bounded in time; the first failure stops the script.
set -euo pipefail

die() { echo "consumer: FAILED: $*" >&2; exit 1; }
step() { echo "consumer: $*"; }

[[ $# -eq 1 ]] || die "usage: $0 BUILD_DIR"
[[ -f "$1/CMakeCache.txt" ]] || die "$1 is not a configured CMake build directory"
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")

work=$(mktemp -d)
prefix=$work/prefix
server=  # pid of a running echo_server
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# run SECONDS COMMAND...: runs COMMAND with a time limit; its output is shown
# only if it fails.
run() {
  local limit=$1 log=$work/step.log
  shift
  timeout "$limit" "$@" >"$log" 2>&1 || {
    local rc=$?
    cat "$log" >&2
    if ((rc == 124)); then die "over ${limit} s: $*"; fi
    die "exit $rc: $*"
  }
}

# echo_once BINARY: runs BINARY for one connection on a free loopback port,
# sends it a line, and checks that the same line comes back and that the
# server then exits 0.
echo_once() {
  local bin=$1 out=$work/server.out addr='' reply status=0
  timeout 30 "$bin" 127.0.0.1:0 1 >"$out" 2>&1 &
  server=$!
  for _ in $(seq 100); do
    addr=$(sed -n 's/^listening on //p' "$out")
    [[ -n "$addr" ]] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n "$addr" ]] || { cat "$out" >&2; die "$bin did not print 'listening on ADDRESS'"; }
  local msg="hello from run.sh $$ $RANDOM"
  # shellcheck disable=SC2016  # the inner bash expands $1..$3
  reply=$(timeout 10 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf "%s\n" "$3" >&3 &&
                             IFS= read -r line <&3 && printf "%s" "$line"' \
            _ "${addr%:*}" "${addr##*:}" "$msg") || die "no echo from $bin at $addr"
  [[ "$reply" == "$msg" ]] || die "$bin at $addr echoed '$reply', not '$msg'"
  wait "$server" || status=$?
  server=
  ((status == 0)) || { cat "$out" >&2; die "$bin exited $status after its connection"; }
  step "$(basename "$bin") at $addr echoed '$reply'"
}

step "installing $build into a temporary prefix"
run 120 cmake --install "$build" --prefix "$prefix"

step "building echo_server with find_package(spindle)"
run 120 cmake -S "$src" -B "$work/cmake-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx"
run 300 cmake --build "$work/cmake-build"

pc=$(find "$prefix" -name spindle.pc -print -quit)
[[ -n "$pc" ]] || die "no spindle.pc under the install prefix"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs --static spindle) ||
  die "pkg-config --cflags --libs --static spindle"
step "building echo_server with pkg-config: $flags"
# shellcheck disable=SC2086  # $flags is a list of arguments
run 300 "$cxx" -O2 "$src/echo_server.cpp" -o "$work/echo_server-pkg-config" $flags

echo_once "$work/cmake-build/echo_server"
echo_once "$work/echo_server-pkg-config"
step "passed"
