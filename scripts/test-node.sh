#!/usr/bin/env bash
# The Node face (bindings-node, npm package @rindle/room-native). Installs the npm
# dependencies from the committed package-lock.json if needed (`ws` for the room shell,
# TypeScript for the type check, @types/node for scripts/test-readme.sh's check of the
# README's snippets: the Zero benchmark has its own package in
# bindings-node/bench and does not run here), builds the debug addon and the smol server
# binary the shell's parity test runs against (cargo, no download, CARGO_TARGET_DIR
# respected), runs `npm test` (node:test: conformance replay, surface, errors, WebCrypto
# tokens, the drop-in shell, the room shell over loopback sockets, the parity test)
# against them and type-checks index.d.ts with `tsc --noEmit`. scripts/test-all.sh calls
# it; it also runs on its own.
set -euo pipefail
cd "$(dirname "$0")/../bindings-node"

step() { printf '\n==> %s\n' "$*"; }

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "$tool is not installed: the Node binding's tests need Node.js >= 18 and npm" >&2
    exit 1
  fi
done

step "Node: npm dependencies ($(node --version), npm $(npm --version))"
# npm ci when there is no install yet or the committed lock is newer than npm's record
# of the last install (node_modules/.package-lock.json).
if [ ! -x node_modules/.bin/tsc ] || [ ! -d node_modules/ws ] || [ ! -d node_modules/@types/node ] ||
  [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  echo "node_modules is up to date with package-lock.json"
fi

step "Node: build the debug addon (npm run build:debug)"
npm run --silent build:debug

step "Node: build the smol server binary for the parity test (cargo build -p rindle-room-smol --bin rindle-room)"
cargo_args=(build -p rindle-room-smol --bin rindle-room)
if [ "${CI:-}" = "true" ]; then cargo_args+=(--locked); fi
(cd .. && cargo "${cargo_args[@]}")
target_dir="${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}"
case "$target_dir" in /*) ;; *) target_dir="$(cd .. && pwd)/$target_dir" ;; esac
export RINDLE_ROOM_SMOL_BIN="$target_dir/debug/rindle-room"

step "Node: npm test (RINDLE_ROOM_NATIVE_BUILD=debug, RINDLE_ROOM_SMOL_BIN=$RINDLE_ROOM_SMOL_BIN)"
RINDLE_ROOM_NATIVE_BUILD=debug npm test

step "Node: index.d.ts type check (tsc --noEmit)"
npm run --silent typecheck
echo "index.d.ts: ok"
