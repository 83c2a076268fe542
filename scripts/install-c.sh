#!/usr/bin/env bash
# Builds and installs the C library of the room:
#
#   scripts/install-c.sh <prefix> [release|debug]     (default: release)
#
# puts librindle_room.a and librindle_room.so in <prefix>/lib, rindle_room.h in
# <prefix>/include and rindle_room.pc in <prefix>/lib/pkgconfig. Then:
#
#   export PKG_CONFIG_PATH=<prefix>/lib/pkgconfig
#   cc app.c $(pkg-config --cflags --libs rindle_room)                      # shared
#   cc app.c $(pkg-config --cflags rindle_room) \
#            $(pkg-config --variable=static_libs rindle_room)               # static
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="${1:?usage: scripts/install-c.sh <prefix> [release|debug]}"
profile="${2:-release}"
case "$profile" in
  release) cargo build --locked --release -p rindle-room-c ;;
  debug) cargo build --locked -p rindle-room-c ;;
  *) echo "profile must be release or debug, not $profile" >&2; exit 2 ;;
esac

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
built="${CARGO_TARGET_DIR:-target}/$profile"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 "$built/librindle_room.a" "$prefix/lib/"
install -m 755 "$built/librindle_room.so" "$prefix/lib/"
install -m 644 include/rindle_room.h "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" bindings-c/rindle_room.pc.in \
  > "$prefix/lib/pkgconfig/rindle_room.pc"
echo "installed rindle_room $version ($profile) into $prefix"
