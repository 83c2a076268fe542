#!/usr/bin/env bash
# Builds and packs the npm packages of the Node face:
#
#   scripts/npm-pack.sh OUT_DIR [dist|release]        (default: dist)
#
# 1. builds the addon (crate rindle-room-node) with `cargo zigbuild` for
#    x86_64-unknown-linux-gnu against glibc 2.17 (zig and cargo-zigbuild are pinned in
#    scripts/lib/zig.sh and installed once into ~/.cache/rindle-room/tools), in
#    <target>/zig, with the `dist` profile (fat LTO, one codegen unit, stripped: what is
#    released) or `release` plus stripping and no debug info (what CI packs: minutes
#    faster, a little larger);
# 2. checks that it is stripped and needs no glibc symbol newer than 2.17;
# 3. stages @rindle/room-native and @rindle/room-native-linux-x64-gnu
#    (bindings-node/scripts/stage.js) and runs `npm pack` in each (their prepack scripts
#    refuse a package without its addon), writing
#      OUT_DIR/rindle-room-native-<version>.tgz
#      OUT_DIR/rindle-room-native-linux-x64-gnu-<version>.tgz
#
# scripts/dist.sh and scripts/test-npm-pack.sh call it; it also runs on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh

out="${1:?usage: scripts/npm-pack.sh OUT_DIR [dist|release]}"
profile="${2:-dist}"
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi

build_env=()
case "$profile" in
  dist) ;;
  release) build_env=(CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols) ;;
  *) echo "profile must be dist or release, not $profile" >&2; exit 2 ;;
esac

zig_tools
echo "> cargo zigbuild --profile $profile -p rindle-room-node --target $ZIG_TARGET" \
  "(CARGO_TARGET_DIR=$target/zig${build_env[*]:+ ${build_env[*]}})"
started=$(date +%s)
env "${build_env[@]}" CARGO_TARGET_DIR="$target/zig" cargo zigbuild "${locked[@]}" \
  --profile "$profile" -p rindle-room-node --target "$ZIG_TARGET"
addon="$target/zig/x86_64-unknown-linux-gnu/$profile/librindle_room_node.so"
echo "built $addon in $(($(date +%s) - started)) s"

if readelf --wide --sections "$addon" | grep -Eq '\.(symtab|debug_[a-z]+) '; then
  echo "$addon is not stripped (it has a symbol table or debug info)" >&2
  exit 1
fi
check_glibc "$addon"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$target/npm-stage"
node bindings-node/scripts/stage.js "$addon" "$stage"
for dir in room-native-linux-x64-gnu room-native; do
  (cd "$stage/$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
done
version="$(node -p 'require("./bindings-node/package.json").version')"
for tgz in "rindle-room-native-$version.tgz" "rindle-room-native-linux-x64-gnu-$version.tgz"; do
  [ -s "$out/$tgz" ] || { echo "npm pack wrote no $out/$tgz" >&2; exit 1; }
  echo "packed $out/$tgz ($(du -k "$out/$tgz" | cut -f 1) KiB)"
done
