#!/usr/bin/env bash
# Builds every shipped artifact into dist/ (gitignored), for x86_64 Linux against glibc
# 2.17 (cargo zigbuild; zig and cargo-zigbuild pinned in scripts/lib/zig.sh and installed
# once into ~/.cache/rindle-room/tools), with the `dist` profile of Cargo.toml (fat LTO,
# one codegen unit, stripped, panic = "unwind"):
#
#   dist/rindle-room-<v>-x86_64-linux-gnu.tar.gz      the server: bin/rindle-room,
#                                                     README.md, LICENSE, docs/deploy.md
#   dist/librindle_room-<v>-x86_64-linux-gnu.tar.gz   the C library: lib/librindle_room.a,
#       lib/librindle_room.so.<v> (SONAME librindle_room.so.<ABI>) and its links,
#       include/rindle_room.h, lib/pkgconfig/rindle_room.pc (relocatable: prefix is
#       where the .pc file lies; Libs.private from rustc --print native-static-libs)
#   dist/rindle-room-native-<v>.tgz,                  the npm packages (scripts/npm-pack.sh)
#   dist/rindle-room-native-linux-x64-gnu-<v>.tgz
#   dist/SHA256SUMS
#
# with each unpacked beside its archive (dist/rindle-room-<v>-x86_64-linux-gnu/, …). It
# then links tests/c/embed.c against the C library (static, and shared through
# pkg-config), runs it and `rindle-room --help`, and prints each artifact's size and the
# newest glibc symbol version it needs (at most 2.17). About 4 minutes on 2 cores from a
# clean target directory (three fat-LTO builds); CI runs scripts/test-npm-pack.sh instead.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi
zig_target_dir="$target/zig"
built="$zig_target_dir/x86_64-unknown-linux-gnu/dist"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
major="${version%%.*}"
minor="${version#*.}"
minor="${minor%%.*}"
if [ "$major" = 0 ]; then abi="0.$minor"; else abi="$major"; fi
triple=x86_64-linux-gnu
dist="$repo/dist"
rm -rf "$dist"
mkdir -p "$dist"

zig_tools
timed() {
  local t0 rc=0
  t0=$(date +%s)
  "$@" || rc=$?
  echo "($(($(date +%s) - t0)) s)"
  return "$rc"
}

step "server: cargo zigbuild --profile dist -p rindle-room-smol --bin rindle-room --target $ZIG_TARGET"
timed env CARGO_TARGET_DIR="$zig_target_dir" cargo zigbuild "${locked[@]}" --profile dist \
  -p rindle-room-smol --bin rindle-room --target "$ZIG_TARGET"
server="$dist/rindle-room-$version-$triple"
install -d "$server/bin" "$server/docs"
install -m 755 "$built/rindle-room" "$server/bin/"
install -m 644 README.md LICENSE "$server/"
install -m 644 docs/deploy.md "$server/docs/"

step "C library: cargo-zigbuild rustc --profile dist -p rindle-room-c (staticlib, cdylib with SONAME librindle_room.so.$abi)"
log="$target/dist-c.log"
# cargo-zigbuild's own `rustc` subcommand (`cargo zigbuild` is its build); the
# link argument and --print reach rindle-room-c alone.
if ! timed env CARGO_TARGET_DIR="$zig_target_dir" cargo-zigbuild rustc "${locked[@]}" \
  --profile dist -p rindle-room-c --lib --crate-type staticlib,cdylib --target "$ZIG_TARGET" \
  -- --print native-static-libs -C "link-arg=-Wl,-soname,librindle_room.so.$abi" 2>"$log"; then
  cat "$log" >&2
  exit 1
fi
libs_private="$(sed -n 's/^note: native-static-libs: //p' "$log" | tail -n 1)"
[ -n "$libs_private" ] || { cat "$log" >&2; echo "rustc printed no native-static-libs" >&2; exit 1; }
clib="$dist/librindle_room-$version-$triple"
install -d "$clib/lib/pkgconfig" "$clib/include"
install -m 644 "$built/librindle_room.a" "$clib/lib/"
# The archive carries the debug info of Rust's std; the linker needs none of it.
strip --strip-debug "$clib/lib/librindle_room.a"
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

step "npm packages (scripts/npm-pack.sh dist)"
t0=$(date +%s)
scripts/npm-pack.sh "$dist" dist
echo "($(($(date +%s) - t0)) s)"
mkdir -p "$dist/npm-unpacked"
tar -xzf "$dist/rindle-room-native-linux-x64-gnu-$version.tgz" -C "$dist/npm-unpacked"
addon="$dist/npm-unpacked/package/rindle_room.linux-x64-gnu.node"

step "smoke: the artifacts run"
"$server/bin/rindle-room" --help >/dev/null
echo "rindle-room --help: ok"
smoke="$target/dist-smoke"
rm -rf "$smoke"
mkdir -p "$smoke"
cc -std=c11 -Wall -Wextra -Werror -I"$clib/include" tests/c/embed.c "$clib/lib/librindle_room.a" \
  $libs_private -o "$smoke/embed-static"
# shellcheck disable=SC2046 # pkg-config prints several flags
cc -std=c11 -Wall -Wextra -Werror tests/c/embed.c \
  $(PKG_CONFIG_PATH="$clib/lib/pkgconfig" pkg-config --cflags --libs rindle_room) \
  -Wl,-rpath,"$clib/lib" -o "$smoke/embed-shared"
ldd "$smoke/embed-shared" | grep -q "librindle_room.so.$abi => $clib/lib/" ||
  { ldd "$smoke/embed-shared" >&2; echo "embed-shared does not load librindle_room.so.$abi" >&2; exit 1; }
echo "embed (static): $("$smoke/embed-static" | tail -n 1)"
echo "embed (shared, pkg-config): $("$smoke/embed-shared" | tail -n 1)"
node -e 'const m = require(process.argv[1]); if (typeof m.WasmRoom !== "function") process.exit(1)' \
  "$addon"
echo "the npm addon loads in node $(node --version)"

step "archives"
(cd "$dist" &&
  tar -czf "rindle-room-$version-$triple.tar.gz" "rindle-room-$version-$triple" &&
  tar -czf "librindle_room-$version-$triple.tar.gz" "librindle_room-$version-$triple" &&
  sha256sum ./*.tar.gz ./*.tgz | sed 's| \./| |' >SHA256SUMS)
cat "$dist/SHA256SUMS"

step "dist/: size and newest glibc symbol version of each artifact"
row() {
  local glibc="-"
  case "$2" in
    *.a | *.gz | *.tgz) ;;
    *) glibc="GLIBC_$(max_glibc "$2")"; check_glibc "$2" >/dev/null ;;
  esac
  printf '  %-52s %12s bytes  %6s KiB  %s\n' "$1" "$(stat -L -c %s "$2")" \
    "$(( ($(stat -L -c %s "$2") + 1023) / 1024 ))" "$glibc"
}
row "rindle-room (server binary)" "$server/bin/rindle-room"
row "librindle_room.so.$version" "$clib/lib/librindle_room.so.$version"
row "librindle_room.a" "$clib/lib/librindle_room.a"
row "rindle_room.linux-x64-gnu.node (npm addon)" "$addon"
for f in "$dist"/*.tar.gz "$dist"/*.tgz; do row "$(basename "$f")" "$f"; done
step "dist/ built in $(($(date +%s) - started)) s"
