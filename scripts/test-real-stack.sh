#!/usr/bin/env bash
# The room against the real Rindle stack (tests/e2e-real): the published Rindle 0.9.0
# packages (the prebuilt `rindle`, `rindled`, `rindle-replicator` and `rindle-dev-edge`,
# @rindle/api-server, two @rindle/optimistic clients) with each of our three rooms in turn:
# the fleet (`rindle-room` with [fleet], booted through the real /room-boot), the single-room
# server (`rindle-room --config room.toml`) and the Node shell (`createRoomShell` of
# bindings-node). The scenario and its steps: tests/e2e-real/README.md.
#
# Installs what it needs: the npm packages of tests/e2e-real from its committed
# package-lock.json (`npm ci`, every Rindle package at exactly 0.9.0), the debug
# `rindle-room` binary (cargo) and the debug Node addon (bindings-node, npm run build:debug).
# When the npm packages are not installed yet and the npm registry cannot be reached, it
# prints SKIP and exits 0; any other problem fails. Linux x86_64 only (the Rindle binaries
# are published for linux-x64-gnu).
#
#   scripts/test-real-stack.sh                    # all three rooms
#   scripts/test-real-stack.sh --server single    # one (or a comma-separated list)
#   scripts/test-real-stack.sh --keep             # keep the work directory and logs
#
# Arguments are passed to tests/e2e-real/run.mjs. RINDLE_ROOM_BIN names another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

step() { printf '\n==> %s\n' "$*"; }

for tool in node npm cargo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test-real-stack: $tool is not installed" >&2
    exit 1
  fi
done
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "test-real-stack: the Rindle 0.9.0 binaries exist for Linux x86_64 only (this is $(uname -s) $(uname -m))" >&2
  exit 1
fi

# npm ci when there is no install yet or the committed lock is newer than npm's record of
# the last install (node_modules/.package-lock.json).
needs_ci() {
  [ ! -d "$1/node_modules" ] || [ ! -f "$1/node_modules/.package-lock.json" ] ||
    [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]
}

step "real stack: npm packages of tests/e2e-real ($(node --version), npm $(npm --version))"
if needs_ci tests/e2e-real || { [ ! -d bindings-node/node_modules/ws ] && needs_ci bindings-node; }; then
  if ! timeout 30 npm ping >/dev/null 2>&1; then
    echo "SKIP: the npm registry ($(npm config get registry)) cannot be reached, so the Rindle 0.9.0"
    echo "SKIP: packages cannot be installed; the real-stack test did not run."
    exit 0
  fi
fi
if needs_ci tests/e2e-real; then
  (cd tests/e2e-real && npm ci --no-audit --no-fund)
else
  echo "tests/e2e-real/node_modules is up to date with package-lock.json"
fi
if [ ! -d bindings-node/node_modules/ws ]; then
  (cd bindings-node && npm ci --no-audit --no-fund)
fi

step "real stack: the debug rindle-room binary and the debug Node addon"
cargo_args=(build -p rindle-room-smol --bin rindle-room)
if [ "${CI:-}" = "true" ]; then cargo_args+=(--locked); fi
cargo "${cargo_args[@]}"
(cd bindings-node && npm run --silent build:debug)
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
export RINDLE_ROOM_BIN="${RINDLE_ROOM_BIN:-$target_dir/debug/rindle-room}"
export RINDLE_ROOM_NATIVE_BUILD=debug

step "real stack: the scenario (tests/e2e-real/run.mjs $*)"
cd tests/e2e-real
node run.mjs "$@"
