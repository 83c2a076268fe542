#!/usr/bin/env bash
# Gathers the profile that a profile-guided build of the Node addon is optimized with:
#
#   scripts/pgo-profile.sh [--zig] OUT.profdata
#
# 1. builds the addon (crate rindle-room-node, this machine's x86_64 toolchain, the
#    `dist` profile) instrumented with -Cprofile-generate, in <target>/pgo-gen. With
#    --zig, for the addon scripts/npm-pack.sh builds with `cargo zigbuild --target
#    x86_64-unknown-linux-gnu.<glibc floor>`: built with an explicit --target, in
#    <target>/pgo-gen-target (a profile is matched by symbol, and an explicit target
#    changes the symbols' hashes);
# 2. runs bindings-node/scripts/pgo-train.mjs against it (its own schema, data and
#    queries, not the benchmarks' workload; about a second, then the profile is written);
# 3. merges the raw profiles with the llvm-profdata of rustup's llvm-tools component
#    (added with `rustup component add llvm-tools` when missing, saying so; it matches
#    rustc's LLVM) into OUT.profdata.
#
# Build with it: RUSTFLAGS="-Cprofile-use=OUT.profdata" and the same cargo command
# without the instrumentation (`npm run build:pgo` in bindings-node, scripts/npm-pack.sh
# for the shipped x86_64 addon). docs/BENCHMARKS.md, "Profile-guided builds".
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

zig=0
if [ "${1:-}" = "--zig" ]; then zig=1; shift; fi
out="${1:?usage: scripts/pgo-profile.sh [--zig] OUT.profdata}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi

host="$(rustc -vV | sed -n 's/^host: //p')"
[ "$host" = x86_64-unknown-linux-gnu ] ||
  { echo "profile-guided builds are made on x86_64 Linux (this is $host)" >&2; exit 2; }
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "llvm-profdata is missing: running rustup component add llvm-tools"
  rustup component add llvm-tools
fi
[ -x "$profdata" ] || { echo "no llvm-profdata at $profdata after adding llvm-tools" >&2; exit 1; }

raw="$target/pgo-raw"
rm -rf "$raw"
mkdir -p "$raw" "$(dirname "$out")"
flags="-Cprofile-generate=$raw"
started=$(date +%s)
if [ "$zig" = 1 ]; then
  # The crates as `cargo zigbuild --target x86_64-unknown-linux-gnu.<floor>` compiles
  # them: an explicit target, and the three cargo settings cargo-zigbuild sets (they
  # enter every crate's -C metadata, so the symbols' hashes, and a profile is matched by
  # symbol; npm-pack.sh checks the match). Linked by this machine's cc: zig's linker
  # does not take the profiler runtime's arguments, and the instrumented addon only
  # runs here.
  dir="$target/pgo-gen-target"
  echo "> cargo build --profile dist -p rindle-room-node --target $host (instrumented, CARGO_TARGET_DIR=$dir)"
  env CARGO_TARGET_DIR="$dir" RUSTFLAGS="$flags" __CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS=nightly \
    CARGO_UNSTABLE_TARGET_APPLIES_TO_HOST=true CARGO_TARGET_APPLIES_TO_HOST=false \
    cargo build "${locked[@]}" --profile dist \
    -p rindle-room-node --target "$host"
  lib="$dir/$host/dist/librindle_room_node.so"
else
  dir="$target/pgo-gen"
  echo "> cargo build --profile dist -p rindle-room-node (instrumented, CARGO_TARGET_DIR=$dir)"
  env CARGO_TARGET_DIR="$dir" RUSTFLAGS="$flags" cargo build "${locked[@]}" --profile dist \
    -p rindle-room-node
  lib="$dir/dist/librindle_room_node.so"
fi
echo "built the instrumented addon in $(($(date +%s) - started)) s"
# Build scripts compiled with the flags ran during the build; only the training counts.
rm -rf "$raw"
mkdir -p "$raw"

# Node loads an addon by its extension.
cp "$lib" "$dir/pgo-train.node"
RINDLE_ROOM_NATIVE_PATH="$dir/pgo-train.node" node bindings-node/scripts/pgo-train.mjs
"$profdata" merge -o "$out" "$raw"
echo "wrote $out ($(du -k "$out" | cut -f1) KiB, from $(find "$raw" -name '*.profraw' | wc -l) raw profile(s))"
