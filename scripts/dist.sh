#!/usr/bin/env bash
# Builds every shipped artifact into dist/ (gitignored):
#
#   scripts/dist.sh [--target T]...
#
# T is x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu (repeatable). Without
# --target: every target this machine can build — x86_64 always, aarch64 when Debian's
# Rust toolchain with its aarch64 standard library is installed or apt-get can install it
# (scripts/lib/targets.sh; the script says what it installs). Each target links through
# cargo zigbuild against glibc 2.17 (zig and cargo-zigbuild pinned in scripts/lib/zig.sh
# and installed once into ~/.cache/rindle-room/tools), in a target directory of its own,
# with the `dist` profile of Cargo.toml (fat LTO, one codegen unit, stripped,
# panic = "unwind"); the x86_64 npm addon is also profile-guided (scripts/npm-pack.sh,
# scripts/pgo-profile.sh; RINDLE_ROOM_PGO=0 leaves that out). For each target
# (<triple> = x86_64-linux-gnu, aarch64-linux-gnu):
#
#   dist/rindle-room-<v>-<triple>.tar.gz      the server: bin/rindle-room, README.md,
#                                             LICENSE, docs/deploy.md
#   dist/librindle_room-<v>-<triple>.tar.gz   the C library: lib/librindle_room.a,
#       lib/librindle_room.so.<v> (SONAME librindle_room.so.<ABI>) and its links,
#       include/rindle_room.h, lib/pkgconfig/rindle_room.pc (relocatable: prefix is
#       where the .pc file lies; Libs.private from rustc --print native-static-libs)
#   dist/rindle-room-native-<platform>-<v>.tgz  the npm platform package (linux-x64-gnu,
#                                               linux-arm64-gnu; scripts/npm-pack.sh)
#
# and once: dist/rindle-room-native-<v>.tgz (the main npm package) and dist/SHA256SUMS,
# each archive unpacked beside it (dist/rindle-room-<v>-<triple>/, …). It then links
# tests/c/embed.c against each C library (static, and shared through pkg-config) with
# the target's C compiler, runs it and `rindle-room --help` (an aarch64 program under
# qemu-aarch64-static when it is installed), loads the x86_64 addon in node, and prints
# each artifact's size and the newest glibc symbol version it needs (at most 2.17).
# About 4 minutes per target on 2 cores from a clean target directory (three fat-LTO
# builds; x86_64 two more for the profile, about 6 minutes); aarch64 builds with Debian's rustc, so its dependencies are built once more.
# CI runs scripts/test-npm-pack.sh instead; scripts/test-arm64.sh runs the aarch64
# artifacts under qemu.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh
# shellcheck source=lib/targets.sh
. scripts/lib/targets.sh

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)

targets=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --target) targets+=("${2:?--target needs a value}"); shift 2 ;;
    --target=*) targets+=("${1#--target=}"); shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument '$1' (usage: scripts/dist.sh [--target T]...)" >&2; exit 2 ;;
  esac
done
if [ "${#targets[@]}" -eq 0 ]; then
  for t in "${SHIPPED_TARGETS[@]}"; do
    case "$t" in
      aarch64-*)
        if aarch64_buildable; then targets+=("$t"); else
          echo "not building $t: Debian's rustc-web with libstd-rust-web-dev:arm64 is not" \
            "installed and apt-get cannot install it here (needs root or sudo on Debian)" >&2
        fi ;;
      *) targets+=("$t") ;;
    esac
  done
fi
for t in "${targets[@]}"; do target_vars "$t" /dev/null || exit 2; done
echo "targets: ${targets[*]}"

target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
major="${version%%.*}"
minor="${version#*.}"
minor="${minor%%.*}"
if [ "$major" = 0 ]; then abi="0.$minor"; else abi="$major"; fi
dist="$repo/dist"
rm -rf "$dist"
mkdir -p "$dist"

zig_tools
for t in "${targets[@]}"; do
  case "$t" in aarch64-*) aarch64_tools run ;; esac
done
timed() {
  local t0 rc=0
  t0=$(date +%s)
  "$@" || rc=$?
  echo "($(($(date +%s) - t0)) s)"
  return "$rc"
}
# Runs a program of target T here: natively, or under qemu-user when it is installed.
run_on() {
  local t="$1"
  shift
  target_vars "$t" "$target"
  if [ -z "$T_RUN" ]; then "$@"; elif command -v "$T_RUN" >/dev/null; then "$T_RUN" "$@"; else
    echo "(not run: $T_RUN is not installed)"
  fi
}

# --- the server and the C library, per target ---------------------------------------
build_target() {
  local t="$1" built server clib log libs_private soname_found
  target_vars "$t" "$target"
  built="$T_DIR/$t/dist"

  step "$t: server: cargo zigbuild --profile dist -p rindle-room-smol --bin rindle-room --target $(zig_target "$t")"
  timed target_env "$t" "$T_DIR" cargo zigbuild "${locked[@]}" --profile dist \
    -p rindle-room-smol --bin rindle-room --target "$(zig_target "$t")"
  server="$dist/rindle-room-$version-$T_TRIPLE"
  install -d "$server/bin" "$server/docs"
  install -m 755 "$built/rindle-room" "$server/bin/"
  install -m 644 README.md LICENSE "$server/"
  install -m 644 docs/deploy.md "$server/docs/"

  step "$t: C library: cargo-zigbuild rustc --profile dist -p rindle-room-c (staticlib, cdylib with SONAME librindle_room.so.$abi)"
  log="$target/dist-c-$T_TRIPLE.log"
  # cargo-zigbuild's own `rustc` subcommand (`cargo zigbuild` is its build); the
  # link argument and --print reach rindle-room-c alone.
  if ! timed target_env "$t" "$T_DIR" cargo-zigbuild rustc "${locked[@]}" --profile dist \
    -p rindle-room-c --lib --crate-type staticlib,cdylib --target "$(zig_target "$t")" \
    -- --print native-static-libs -C "link-arg=-Wl,-soname,librindle_room.so.$abi" 2>"$log"; then
    cat "$log" >&2
    exit 1
  fi
  libs_private="$(sed -n 's/^note: native-static-libs: //p' "$log" | tail -n 1)"
  [ -n "$libs_private" ] || { cat "$log" >&2; echo "rustc printed no native-static-libs" >&2; exit 1; }
  clib="$dist/librindle_room-$version-$T_TRIPLE"
  install -d "$clib/lib/pkgconfig" "$clib/include"
  install -m 644 "$built/librindle_room.a" "$clib/lib/"
  # The archive carries the debug info of Rust's std; the linker needs none of it.
  "$T_STRIP" --strip-debug "$clib/lib/librindle_room.a"
  install -m 755 "$built/librindle_room.so" "$clib/lib/librindle_room.so.$version"
  ln -sfn "librindle_room.so.$version" "$clib/lib/librindle_room.so.$abi"
  ln -sfn "librindle_room.so.$abi" "$clib/lib/librindle_room.so"
  install -m 644 include/rindle_room.h "$clib/include/"
  install -m 644 LICENSE "$clib/"
  # shellcheck disable=SC2016 # ${pcfiledir} is pkg-config's, not the shell's
  sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e "s|@VERSION@|$version|" \
    -e "s|@LIBS_PRIVATE@|$libs_private|" bindings-c/rindle_room.pc.in \
    >"$clib/lib/pkgconfig/rindle_room.pc"
  soname_found="$(readelf -d "$clib/lib/librindle_room.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [ "$soname_found" = "librindle_room.so.$abi" ] ||
    { echo "the shared library's SONAME is '$soname_found'" >&2; exit 1; }
  echo "SONAME $soname_found; Libs.private: $libs_private"
  echo "$libs_private" >"$target/dist-libs-private-$T_TRIPLE"
}
for t in "${targets[@]}"; do build_target "$t"; done

step "npm packages (scripts/npm-pack.sh dist ${targets[*]})"
t0=$(date +%s)
scripts/npm-pack.sh "$dist" dist "${targets[@]}"
echo "($(($(date +%s) - t0)) s)"
for t in "${targets[@]}"; do
  target_vars "$t" "$target"
  mkdir -p "$dist/npm-unpacked/$T_NPM"
  tar -xzf "$dist/rindle-room-native-$T_NPM-$version.tgz" -C "$dist/npm-unpacked/$T_NPM"
done

# --- smoke: the artifacts run -------------------------------------------------------
smoke_target() {
  local t="$1" server clib smoke libs_private machine
  target_vars "$t" "$target"
  server="$dist/rindle-room-$version-$T_TRIPLE"
  clib="$dist/librindle_room-$version-$T_TRIPLE"
  smoke="$target/dist-smoke/$T_TRIPLE"
  libs_private="$(cat "$target/dist-libs-private-$T_TRIPLE")"
  step "$t: smoke: the artifacts run${T_RUN:+ (under $T_RUN)}"
  case "$t" in x86_64-*) machine="X86-64" ;; aarch64-*) machine="AArch64" ;; esac
  for f in "$server/bin/rindle-room" "$clib/lib/librindle_room.so.$version" \
    "$dist/npm-unpacked/$T_NPM/package/rindle_room.$T_NPM.node"; do
    readelf -h "$f" | grep -q "Machine:.*$machine" ||
      { echo "$f is not built for $machine" >&2; exit 1; }
  done
  echo "ELF machine of the server, the shared library and the addon: $machine"
  rm -rf "$smoke"
  mkdir -p "$smoke"
  # shellcheck disable=SC2086 # several flags
  "$T_CC" -std=c11 -Wall -Wextra -Werror -I"$clib/include" tests/c/embed.c \
    "$clib/lib/librindle_room.a" $libs_private -o "$smoke/embed-static"
  # shellcheck disable=SC2046 # pkg-config prints several flags
  "$T_CC" -std=c11 -Wall -Wextra -Werror tests/c/embed.c \
    $(PKG_CONFIG_PATH="$clib/lib/pkgconfig" pkg-config --cflags --libs rindle_room) \
    -Wl,-rpath,"$clib/lib" -o "$smoke/embed-shared"
  readelf -d "$smoke/embed-shared" | grep -q "NEEDED.*\[librindle_room.so.$abi\]" ||
    { echo "embed-shared does not need librindle_room.so.$abi" >&2; exit 1; }
  if readelf -d "$smoke/embed-static" | grep -q "NEEDED.*librindle_room"; then
    echo "embed-static needs the shared library" >&2
    exit 1
  fi
  run_on "$t" "$server/bin/rindle-room" --help >"$smoke/help.txt"
  echo "rindle-room --help: $(head -n 1 "$smoke/help.txt")"
  echo "embed (static): $(run_on "$t" "$smoke/embed-static" | tail -n 1)"
  echo "embed (shared, pkg-config): $(run_on "$t" "$smoke/embed-shared" | tail -n 1)"
  if [ -z "$T_RUN" ]; then
    node -e 'const m = require(process.argv[1]); if (typeof m.WasmRoom !== "function") process.exit(1)' \
      "$dist/npm-unpacked/$T_NPM/package/rindle_room.$T_NPM.node"
    echo "the npm addon loads in node $(node --version)"
  else
    echo "the npm addon: scripts/test-arm64.sh loads it in Debian's nodejs:arm64 under qemu"
  fi
}
command -v pkg-config >/dev/null ||
  { echo "installing pkg-config with apt-get" >&2; apt-get install -y -qq pkg-config >&2; }
for t in "${targets[@]}"; do smoke_target "$t"; done

step "archives"
(
  cd "$dist"
  for t in "${targets[@]}"; do
    target_vars "$t" "$target"
    tar -czf "rindle-room-$version-$T_TRIPLE.tar.gz" "rindle-room-$version-$T_TRIPLE"
    tar -czf "librindle_room-$version-$T_TRIPLE.tar.gz" "librindle_room-$version-$T_TRIPLE"
  done
  sha256sum ./*.tar.gz ./*.tgz | sed 's| \./| |' >SHA256SUMS
)
cat "$dist/SHA256SUMS"

step "dist/: size and newest glibc symbol version of each artifact"
row() {
  local glibc="-"
  case "$2" in
    *.a | *.gz | *.tgz) ;;
    *) glibc="GLIBC_$(max_glibc "$2")"; check_glibc "$2" >/dev/null ;;
  esac
  printf '  %-58s %12s bytes  %6s KiB  %s\n' "$1" "$(stat -L -c %s "$2")" \
    "$(( ($(stat -L -c %s "$2") + 1023) / 1024 ))" "$glibc"
}
for t in "${targets[@]}"; do
  target_vars "$t" "$target"
  echo "$t:"
  row "rindle-room (server binary)" "$dist/rindle-room-$version-$T_TRIPLE/bin/rindle-room"
  row "librindle_room.so.$version" "$dist/librindle_room-$version-$T_TRIPLE/lib/librindle_room.so.$version"
  row "librindle_room.a" "$dist/librindle_room-$version-$T_TRIPLE/lib/librindle_room.a"
  row "rindle_room.$T_NPM.node (npm addon)" \
    "$dist/npm-unpacked/$T_NPM/package/rindle_room.$T_NPM.node"
done
echo "archives:"
for f in "$dist"/*.tar.gz "$dist"/*.tgz; do row "$(basename "$f")" "$f"; done
step "dist/ built in $(($(date +%s) - started)) s"
