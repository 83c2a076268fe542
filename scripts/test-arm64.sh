#!/usr/bin/env bash
# The aarch64 artifacts run: the release check for arm64, under qemu-user on this x86_64
# machine (minutes; too slow for every CI run, so scripts/test-all.sh runs it only with
# RINDLE_TEST_ARM64=1). Takes the aarch64 artifacts of dist/ as shipped
# (`scripts/dist.sh --target aarch64-unknown-linux-gnu` first when dist/ has none of this
# version, or with --build), then, each aarch64 program under qemu-aarch64-static:
#
#   1. server: `rindle-room demo` serves the demo — the client lines it prints are played
#      over a websocket (scripts/readme/demo-client.mjs: snapshots, a mutation applied and
#      fanned out), `GET /healthz` on its control port answers 200, and Ctrl-C stops it
#      with exit 0;
#   2. fleet: `rindle-room demo --fleet` boots the two rooms it prints on their first
#      connections, each played the same way, and answers /healthz;
#   3. C: tests/c/conformance.c, errors.c, embed.c and host.c, compiled with Debian's
#      aarch64-linux-gnu-gcc against only include/rindle_room.h and the shipped static
#      librindle_room.a, replay the conformance scenarios (tests/conformance, flattened by
#      the host's flatten_conformance) and pass;
#   4. Node: Debian's nodejs:arm64 (18.x; unpacked under the target directory, since it
#      cannot be installed beside the machine's amd64 node) loads the shipped addon and
#      replays every conformance scenario (bindings-node/test/conformance.test.js); npm,
#      told the machine is linux/arm64/glibc (--cpu=arm64 …), installs the main package's
#      arm64 optional dependency (from its tarball, through `overrides`) and leaves the
#      x64 one out, and the arm64 node loads the module from that install through the
#      prebuilt arm64 package; plain npm on this x86_64 machine leaves the arm64 package
#      out, and refuses it by name (EBADPLATFORM).
#
# What it installs with apt-get (it says so): the aarch64 toolchain of
# scripts/lib/targets.sh, qemu-user-static, libc6:arm64 and nodejs:arm64's libraries;
# nodejs:arm64 itself is downloaded with `apt-get download` and unpacked.
# RINDLE_TEST_ARM64=skip (or a machine without apt-get) skips it with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh
# shellcheck source=lib/targets.sh
. scripts/lib/targets.sh

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)
t=aarch64-unknown-linux-gnu
if [ "${RINDLE_TEST_ARM64:-}" = skip ]; then
  echo "skipped: RINDLE_TEST_ARM64=skip (run scripts/test-arm64.sh before every release)"
  exit 0
fi
if ! aarch64_buildable; then
  echo "skipped: the aarch64 toolchain is not installed and apt-get cannot install it here" \
    "(needs root or sudo on Debian); run scripts/test-arm64.sh on such a machine before a release"
  exit 0
fi
build=0
[ "${1:-}" = --build ] && build=1

target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
target_vars "$t" "$target"
out="$target/arm64-tests"
rm -rf "$out"
mkdir -p "$out"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
dist="$repo/dist"
server="$dist/rindle-room-$version-$T_TRIPLE/bin/rindle-room"
clib="$dist/librindle_room-$version-$T_TRIPLE"
main_tgz="$dist/rindle-room-native-$version.tgz"
arm_tgz="$dist/rindle-room-native-$T_NPM-$version.tgz"

step "tools (apt-get: what is missing)"
aarch64_tools run
qemu-aarch64-static --version | head -n 1

step "artifacts: dist/ for $t"
# dist.sh writes SHA256SUMS last: without it (an earlier build stopped half-way) the
# artifacts there are not a finished build, so they are built again.
if [ "$build" = 1 ] || [ ! -x "$server" ] || [ ! -s "$clib/lib/librindle_room.a" ] ||
  [ ! -s "$arm_tgz" ] || [ ! -s "$main_tgz" ] || [ ! -s "$dist/SHA256SUMS" ]; then
  echo "building them: scripts/dist.sh --target $t"
  scripts/dist.sh --target "$t"
fi
if ! (cd "$dist" && grep -E "($T_TRIPLE|$T_NPM|native-$version\.tgz)" SHA256SUMS | sha256sum -c -); then
  echo "dist/ does not match its SHA256SUMS (artifacts from another build, or changed" \
    "since): rebuild them with scripts/test-arm64.sh --build" >&2
  exit 1
fi
for f in "$server" "$clib/lib/librindle_room.so.$version"; do check_glibc "$f"; done

# --- 1 and 2: the server under qemu -------------------------------------------------
demo_pid=""
stop_demo() { if [ -n "$demo_pid" ]; then kill -KILL "$demo_pid" 2>/dev/null || true; fi; }
trap stop_demo EXIT
# Starts the aarch64 server with ARGS, waits for READY, plays its client lines, asks
# /healthz on the control port it printed, then Ctrl-C and a clean exit.
serve() {
  local dir="$1" ready="$2" waited=0 rc=0 cport health
  shift 2
  mkdir -p "$dir/tmp"
  echo "  \$ qemu-aarch64-static rindle-room $*"
  (export TMPDIR="$dir/tmp" && exec qemu-aarch64-static "$server" "$@") >"$dir/out.txt" 2>&1 &
  demo_pid=$!
  until grep -q "$ready" "$dir/out.txt"; do
    if ! kill -0 "$demo_pid" 2>/dev/null; then
      cat "$dir/out.txt" >&2
      echo "the server exited before printing \"$ready\"" >&2
      return 1
    fi
    [ "$waited" -lt 1200 ] || { cat "$dir/out.txt" >&2; echo "no \"$ready\" in 4 min" >&2; return 1; }
    sleep 0.2
    waited=$((waited + 1))
  done
  echo "  ready after $((waited / 5)) s: $ready"
  node scripts/readme/demo-client.mjs "$dir/out.txt" | sed 's/^/  client: /'
  cport="$(sed -n 's|^ *control *http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$dir/out.txt" | head -n 1)"
  [ -n "$cport" ] || { cat "$dir/out.txt" >&2; echo "no control URL printed" >&2; return 1; }
  health="$(node -e '
    fetch(`http://127.0.0.1:${process.argv[1]}/healthz`)
      .then(async (r) => console.log(r.status, (await r.text()).trim().slice(0, 80)))
      .catch((e) => { console.log("error", e.message); });
  ' "$cport")"
  [ "${health%% *}" = 200 ] || { echo "GET /healthz: $health" >&2; return 1; }
  echo "  GET http://127.0.0.1:$cport/healthz: $health"
  kill -INT "$demo_pid"
  for _ in $(seq 300); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$demo_pid" 2>/dev/null; then
    echo "the server did not stop within 30 s of SIGINT" >&2
    return 1
  fi
  wait "$demo_pid" || rc=$?
  demo_pid=""
  [ "$rc" -eq 0 ] || { tail -n 20 "$dir/out.txt" >&2; echo "exit $rc after SIGINT" >&2; return 1; }
  echo "  Ctrl-C: exit 0"
}
[ -d bindings-node/node_modules/ws ] || (cd bindings-node && npm ci --no-audit --no-fund)

step "server (aarch64, qemu): rindle-room demo serves the demo"
serve "$out/demo" "Ctrl-C stops the room" demo

step "fleet (aarch64, qemu): rindle-room demo --fleet boots two rooms"
serve "$out/fleet" "Ctrl-C stops every room" demo --fleet
rooms="$(grep -c '^ *websocat ws://.*/rooms/' "$out/fleet/out.txt" || true)"
[ "$rooms" -ge 2 ] || { echo "the fleet printed $rooms rooms, not 2" >&2; exit 1; }
echo "  $rooms rooms booted and played"

# --- 3: the C library ---------------------------------------------------------------
step "C (aarch64, qemu): tests/c against the shipped librindle_room.a"
cargo build --locked -q -p rindle-room-c --example flatten_conformance
host_target="${CARGO_TARGET_DIR:-$repo/target}"
"$host_target/debug/examples/flatten_conformance" tests/conformance "$out/conformance.flat"
libs_private="$(sed -n 's/^Libs.private: *//p' "$clib/lib/pkgconfig/rindle_room.pc")"
for prog in conformance errors embed host; do
  # shellcheck disable=SC2086 # Libs.private is several flags
  "$T_CC" -std=c11 -Wall -Wextra -Werror -Wpedantic -I"$clib/include" "tests/c/$prog.c" \
    "$clib/lib/librindle_room.a" $libs_private -o "$out/$prog"
  readelf -h "$out/$prog" | grep -q "Machine: *AArch64"
done
for p in "conformance $out/conformance.flat" errors embed host; do
  # shellcheck disable=SC2086 # a program and its arguments
  set -- $p
  qemu-aarch64-static "$out/$1" "${@:2}" >"$out/run.log" 2>&1 ||
    { cat "$out/run.log" >&2; echo "FAILED under qemu: $p" >&2; exit 1; }
  echo "  $1: $(tail -n 1 "$out/run.log")"
done

# --- 4: Node ------------------------------------------------------------------------
step "Node (aarch64, qemu): Debian's nodejs:arm64"
node_root="$target/arm64-node"
if [ ! -x "$node_root/usr/bin/node" ]; then
  # nodejs:arm64 conflicts with the machine's amd64 nodejs, so it is unpacked, not
  # installed; its shared libraries are Multi-Arch and install beside the amd64 ones.
  pkgs=(nodejs:arm64 libnode108:arm64)
  libs=()
  js=()
  queue=("${pkgs[@]}")
  while [ "${#queue[@]}" -gt 0 ]; do
    p="${queue[0]}"
    queue=("${queue[@]:1}")
    while read -r dep; do
      # A JavaScript package that libnode names for arm64 is architecture-independent:
      # `<node-acorn:arm64>`, a virtual name, is node-acorn.
      case "$dep" in "<node-"*) dep="${dep#<}" && dep="${dep%>}" && dep="${dep%:arm64}" ;; esac
      case "$dep" in
        nodejs* | libnode* | "<"*) ;;
        node-*) [[ " ${js[*]} " == *" $dep "* ]] || { js+=("$dep"); queue+=("$dep"); } ;;
        *:arm64) [[ " ${libs[*]} " == *" $dep "* ]] || libs+=("$dep") ;;
      esac
    done < <(apt-cache depends "$p" | sed -n 's/^ *Depends: //p')
  done
  missing=()
  for l in "${libs[@]}"; do dpkg -s "$l" >/dev/null 2>&1 || missing+=("$l"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing with apt-get (nodejs:arm64's libraries): ${missing[*]}"
    sudo=()
    if [ "$(id -u)" != 0 ]; then sudo=(sudo); fi
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  fi
  echo "downloading with apt-get download and unpacking into $node_root: ${pkgs[*]} ${js[*]}"
  rm -rf "$node_root" "$out/debs"
  mkdir -p "$out/debs"
  (cd "$out/debs" && apt-get download "${pkgs[@]}" "${js[@]}") 2>&1 |
    { grep -v '^W: Download is performed unsandboxed' || true; }
  for deb in "$out/debs"/*.deb; do dpkg -x "$deb" "$node_root"; done
fi
# -L: qemu looks up absolute paths (node's /usr/share/nodejs builtins) under the unpacked
# root first.
node_arm64() {
  qemu-aarch64-static -L "$node_root" \
    -E LD_LIBRARY_PATH="$node_root/usr/lib/aarch64-linux-gnu" "$node_root/usr/bin/node" "$@"
}
node_arm64 -e 'console.log(`node ${process.version} ${process.arch}, glibc ` +
  process.report.getReport().header.glibcVersionRuntime)' | sed 's/^/  /'

step "Node (aarch64, qemu): the shipped addon replays the conformance scenarios"
mkdir -p "$out/npm-unpacked"
tar -xzf "$arm_tgz" -C "$out/npm-unpacked"
addon="$out/npm-unpacked/package/rindle_room.$T_NPM.node"
check_glibc "$addon"
# The test file run directly: node:test then runs it in this process (`node --test`
# would spawn node by its path, which this x86_64 kernel cannot execute).
(cd bindings-node && RINDLE_ROOM_NATIVE_PATH="$addon" node_arm64 test/conformance.test.js) \
  >"$out/conformance-node.log" 2>&1 || { cat "$out/conformance-node.log" >&2; exit 1; }
grep -E '^# (tests|pass|fail)' "$out/conformance-node.log" | sed 's/^/  /'
grep -q '^# fail 0$' "$out/conformance-node.log"

step "npm: the arm64 package installs where os/cpu/libc match, and loads"
# A project depending on the main package, with the arm64 package (an optional
# dependency) taken from its tarball instead of the registry. npm, told it runs on
# linux/arm64/glibc, must install it; on this machine (x64) it must leave it out. The
# install script is not run: it would run on the host's x64 node.
npm_project() {
  mkdir -p "$1"
  cat >"$1/package.json" <<EOF
{
  "name": "scratch", "version": "1.0.0", "private": true,
  "dependencies": { "@rindle/room-native": "file:$main_tgz" },
  "overrides": { "@rindle/room-native-$T_NPM": "file:$arm_tgz" }
}
EOF
}
proj="$out/npm-project"
npm_project "$proj"
(cd "$proj" && npm install --prefer-offline --no-audit --no-fund --ignore-scripts --os=linux \
  --cpu=arm64 --libc=glibc) 2>&1 | sed 's/^/  /'
[ -s "$proj/node_modules/@rindle/room-native-$T_NPM/rindle_room.$T_NPM.node" ] ||
  { echo "npm --cpu=arm64 did not install @rindle/room-native-$T_NPM" >&2; exit 1; }
[ ! -e "$proj/node_modules/@rindle/room-native-linux-x64-gnu" ] ||
  { echo "npm --cpu=arm64 installed the x64 package" >&2; exit 1; }
echo "  npm --os=linux --cpu=arm64 --libc=glibc: installed @rindle/room-native-$T_NPM, not the x64 one"
npm_project "$out/npm-project-x64"
(cd "$out/npm-project-x64" && npm install --prefer-offline --no-audit --no-fund \
  --ignore-scripts) >/dev/null 2>&1
if [ ! -d "$out/npm-project-x64/node_modules/@rindle/room-native" ] ||
  [ -e "$out/npm-project-x64/node_modules/@rindle/room-native-$T_NPM" ]; then
  echo "npm on this x64 machine did not install the main package without the arm64 one" >&2
  exit 1
fi
echo "  npm on this x64 machine: left @rindle/room-native-$T_NPM out"
cat >"$proj/load.cjs" <<'EOF'
const room = require("@rindle/room-native");
if (typeof room.WasmRoom !== "function") throw new Error("no WasmRoom");
const maps = require("node:fs").readFileSync("/proc/self/maps", "utf8");
const want = "/node_modules/@rindle/room-native-linux-arm64-gnu/rindle_room.linux-arm64-gnu.node";
if (!maps.includes(want)) throw new Error(`the arm64 package's addon is not mapped`);
console.log(`${process.arch} node ${process.version}: require("@rindle/room-native") loaded ${want.slice(1)}`);
EOF
(cd "$proj" && node_arm64 load.cjs) | sed 's/^/  /'
echo '{ "name": "scratch", "version": "1.0.0", "private": true }' >"$out/package.json"
if (cd "$out" && npm install --prefer-offline --no-audit --no-fund --dry-run "$arm_tgz") \
  >"$out/ebadplatform.log" 2>&1; then
  echo "npm on this x86_64 machine accepted the arm64 package" >&2
  exit 1
fi
grep -q EBADPLATFORM "$out/ebadplatform.log" || { cat "$out/ebadplatform.log" >&2; exit 1; }
echo "  npm on this x86_64 machine, asked for the arm64 package by name: EBADPLATFORM"

step "arm64: all passed in $(($(date +%s) - started)) s"
