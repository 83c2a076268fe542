#!/usr/bin/env bash
# Builds and packs the npm packages of the Node face:
#
#   scripts/npm-pack.sh OUT_DIR [dist|release] [TARGET...]
#
# TARGET is x86_64-unknown-linux-gnu (the default) and/or aarch64-unknown-linux-gnu
# (scripts/lib/targets.sh; Debian's Rust toolchain, installed with apt-get when missing).
# 1. builds the addon (crate rindle-room-node) for each TARGET with `cargo zigbuild`
#    against glibc 2.17 (zig and cargo-zigbuild are pinned in scripts/lib/zig.sh and
#    installed once into ~/.cache/rindle-room/tools), in the target's own target
#    directory, with the `dist` profile (fat LTO, one codegen unit, stripped: what is
#    released) or `release` plus stripping and no debug info (what CI packs: minutes
#    faster, a little larger); the x86_64 addon in `dist` is also profile-guided: built
#    with the profile of a training run (scripts/pgo-profile.sh --zig; about two minutes
#    more; RINDLE_ROOM_PGO=0 leaves it out). aarch64 is not: its toolchain is Debian's,
#    whose profiles this machine's training run cannot feed;
# 2. checks that each is stripped and needs no glibc symbol newer than 2.17;
# 3. stages @rindle/room-native (its optionalDependencies list every platform package
#    under bindings-node/npm/) and @rindle/room-native-<platform> for each TARGET
#    (bindings-node/scripts/stage.js) and runs `npm pack` in each (their prepack scripts
#    refuse a package without its addon), writing
#      OUT_DIR/rindle-room-native-<version>.tgz
#      OUT_DIR/rindle-room-native-linux-x64-gnu-<version>.tgz     (x86_64)
#      OUT_DIR/rindle-room-native-linux-arm64-gnu-<version>.tgz   (aarch64)
#
# scripts/dist.sh and scripts/test-npm-pack.sh call it; it also runs on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh
# shellcheck source=lib/targets.sh
. scripts/lib/targets.sh

out="${1:?usage: scripts/npm-pack.sh OUT_DIR [dist|release] [TARGET...]}"
profile="${2:-dist}"
targets=("${@:3}")
[ "${#targets[@]}" -gt 0 ] || targets=(x86_64-unknown-linux-gnu)
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
staged=()
for t in "${targets[@]}"; do
  target_vars "$t" "$target"
  case "$t" in aarch64-*) aarch64_tools ;; esac
  pgo_env=()
  if [ "$profile" = dist ] && [ "$t" = x86_64-unknown-linux-gnu ] && [ "${RINDLE_ROOM_PGO:-1}" != 0 ]; then
    profdata="$target/pgo/addon-zig.profdata"
    CARGO_TARGET_DIR="$target" scripts/pgo-profile.sh --zig "$profdata"
    # With a warning per function the profile has no record of: the room's own
    # functions must all be found (a profile gathered from differently built crates
    # matches nothing, silently).
    pgo_env=(RUSTFLAGS="-Cprofile-use=$profdata -Cllvm-args=-pgo-warn-missing-function")
  fi
  echo "> cargo zigbuild --profile $profile -p rindle-room-node --target $(zig_target "$t")" \
    "(CARGO_TARGET_DIR=$T_DIR${build_env[*]:+ ${build_env[*]}}${pgo_env[*]:+ ${pgo_env[*]}})"
  started=$(date +%s)
  if [ "${#pgo_env[@]}" -eq 0 ]; then
    target_env "$t" "$T_DIR" "${build_env[@]}" cargo zigbuild "${locked[@]}" \
      --profile "$profile" -p rindle-room-node --target "$(zig_target "$t")"
  else
    log="$target/npm-pack-$T_NPM.log"
    if ! target_env "$t" "$T_DIR" "${build_env[@]}" "${pgo_env[@]}" cargo zigbuild "${locked[@]}" \
      --profile "$profile" -p rindle-room-node --target "$(zig_target "$t")" 2>"$log"; then
      cat "$log" >&2
      exit 1
    fi
    grep -v "no profile data available for function" "$log" >&2 || true
    missing="$(grep -c "no profile data available for function .*16rindle_room_core" "$log" || true)"
    if [ "$missing" -gt 0 ]; then
      echo "the training profile has no record of $missing functions of rindle-room-core:" \
        "it was gathered from crates built otherwise (see scripts/pgo-profile.sh --zig)" >&2
      exit 1
    fi
    echo "profile-guided: every function of rindle-room-core found in $profdata"
  fi
  addon="$T_DIR/$t/$profile/librindle_room_node.so"
  echo "built $addon in $(($(date +%s) - started)) s"

  if readelf --wide --sections "$addon" | grep -Eq '\.(symtab|debug_[a-z]+) '; then
    echo "$addon is not stripped (it has a symbol table or debug info)" >&2
    exit 1
  fi
  check_glibc "$addon"
  staged+=("$T_NPM=$addon")
done

mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$target/npm-stage"
rm -rf "$stage"
node bindings-node/scripts/stage.js "$stage" "${staged[@]}"
version="$(node -p 'require("./bindings-node/package.json").version')"
tgzs=("rindle-room-native-$version.tgz")
for dir in "$stage"/*/; do
  (cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
done
for s in "${staged[@]}"; do tgzs+=("rindle-room-native-${s%%=*}-$version.tgz"); done
for tgz in "${tgzs[@]}"; do
  [ -s "$out/$tgz" ] || { echo "npm pack wrote no $out/$tgz" >&2; exit 1; }
  echo "packed $out/$tgz ($(du -k "$out/$tgz" | cut -f 1) KiB)"
done
