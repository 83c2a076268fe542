#!/usr/bin/env bash
# The server binary runs on a glibc-2.17-era userland: builds `rindle-room` the way
# scripts/dist.sh ships it (cargo zigbuild against glibc 2.17; here the release profile,
# stripped, sharing scripts/npm-pack.sh's target directory and its dependencies), checks
# that no glibc symbol it needs is newer than 2.17 (scripts/lib/zig.sh), and that it
# starts (`--help`, `token --help`). The npm addon gets the same check in
# scripts/test-npm-pack.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh

target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi

zig_tools
started=$(date +%s)
echo "> cargo zigbuild --release -p rindle-room-smol --bin rindle-room --target $ZIG_TARGET"
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols CARGO_TARGET_DIR="$target/zig" \
  cargo zigbuild "${locked[@]}" --release -p rindle-room-smol --bin rindle-room \
  --target "$ZIG_TARGET"
bin="$target/zig/x86_64-unknown-linux-gnu/release/rindle-room"
echo "built $bin ($(stat -c %s "$bin") bytes) in $(($(date +%s) - started)) s"
check_glibc "$bin"
"$bin" --help | grep -q -- "--config" || { echo "$bin --help does not list --config" >&2; exit 1; }
"$bin" token --help >/dev/null
echo "the glibc-2.17 server binary starts"
