#!/usr/bin/env bash
# Builds and installs the C library of the room:
#
#   scripts/install-c.sh <prefix> [release|debug]     (default: release)
#
# puts into <prefix>/lib the static library librindle_room.a and the shared library with
# a versioned name (ABI = the major version, or 0.<minor> before 1.0, since a 0.x minor
# release may break the C API: CHANGELOG.md):
#
#   Linux  librindle_room.so.<version>, SONAME librindle_room.so.<ABI>, and the links
#          librindle_room.so.<ABI> (what programs load) and librindle_room.so (what -l finds)
#   macOS  librindle_room.<ABI>.dylib, install name <prefix>/lib/librindle_room.<ABI>.dylib,
#          and the link librindle_room.dylib
#
# rindle_room.h into <prefix>/include, and rindle_room.pc into <prefix>/lib/pkgconfig,
# whose Libs.private (and static_libs variable) are the system libraries the static
# library needs, as rustc prints them (--print native-static-libs). A release install is
# stripped (no debug info in the .a, no local symbols in the shared library); a debug
# install keeps both, for debuggers and valgrind. Then:
#
#   export PKG_CONFIG_PATH=<prefix>/lib/pkgconfig
#   cc app.c $(pkg-config --cflags --libs rindle_room)                      # shared
#   cc app.c $(pkg-config --cflags rindle_room) \
#            $(pkg-config --variable=static_libs rindle_room)               # static
#
# It builds in <target>/c-install: the SONAME is a link argument of this build only, so
# the tree's own target/<profile>/librindle_room.so stays unversioned for programs
# linked and run in place (README, "C and C++").
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="${1:?usage: scripts/install-c.sh <prefix> [release|debug]}"
profile="${2:-release}"
case "$profile" in
  release) build=(--release) ;;
  debug) build=() ;;
  *) echo "profile must be release or debug, not $profile" >&2; exit 2 ;;
esac

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
major="${version%%.*}"
minor="${version#*.}"
minor="${minor%%.*}"
if [ "$major" = 0 ]; then abi="0.$minor"; else abi="$major"; fi

case "$(uname -s)" in
  Linux)
    shared="librindle_room.so"
    real="librindle_room.so.$version"
    soname="librindle_room.so.$abi"
    link_arg="-Wl,-soname,$soname"
    ;;
  Darwin)
    shared="librindle_room.dylib"
    real="librindle_room.$abi.dylib"
    soname="$real"
    link_arg="-Wl,-install_name,$prefix/lib/$real"
    ;;
  *) echo "scripts/install-c.sh knows Linux (.so) and macOS (.dylib), not $(uname -s)" >&2; exit 2 ;;
esac

target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
built="$target/c-install/$profile"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# No debug info in a release build that is stripped anyway.
if ! CARGO_TARGET_DIR="$target/c-install" CARGO_PROFILE_RELEASE_DEBUG=0 \
  cargo rustc --locked "${build[@]}" -p rindle-room-c --lib --crate-type staticlib,cdylib \
  -- --print native-static-libs -C "link-arg=$link_arg" 2>"$log"; then
  cat "$log" >&2
  exit 1
fi
grep -v 'native-static-libs\|link against the following native artifacts\|^$' "$log" >&2 || true
libs_private="$(sed -n 's/^note: native-static-libs: //p' "$log" | tail -n 1)"
[ -n "$libs_private" ] || { echo "rustc printed no native-static-libs" >&2; exit 1; }

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 "$built/librindle_room.a" "$prefix/lib/"
install -m 755 "$built/$shared" "$prefix/lib/$real"
if [ "$soname" != "$real" ]; then ln -sfn "$real" "$prefix/lib/$soname"; fi
ln -sfn "$soname" "$prefix/lib/$shared"
if [ "$profile" = release ]; then
  case "$(uname -s)" in
    Linux) strip --strip-debug "$prefix/lib/librindle_room.a"
      strip --strip-unneeded "$prefix/lib/$real" ;;
    Darwin) strip -S "$prefix/lib/librindle_room.a"
      strip -x "$prefix/lib/$real" ;;
  esac
fi
install -m 644 include/rindle_room.h "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
  bindings-c/rindle_room.pc.in >"$prefix/lib/pkgconfig/rindle_room.pc"
echo "installed rindle_room $version ($profile) into $prefix: lib/$real ($soname)," \
  "lib/librindle_room.a, include/rindle_room.h, lib/pkgconfig/rindle_room.pc"
