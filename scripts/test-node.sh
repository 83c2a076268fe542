#!/usr/bin/env bash
# The Node face (bindings-node, npm package @rindle/room-native). Installs the npm dev
# dependencies from the committed package-lock.json if needed (TypeScript only: the Zero
# benchmark has its own package in bindings-node/bench and does not run here), builds the
# debug addon (cargo, no download), runs `npm test` (node:test: conformance replay,
# surface, errors, WebCrypto tokens, the drop-in shell) against it and type-checks
# index.d.ts with `tsc --noEmit`. scripts/test-all.sh calls it; it also runs on its own.
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
if [ ! -x node_modules/.bin/tsc ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  echo "node_modules is up to date with package-lock.json"
fi

step "Node: build the debug addon (npm run build:debug)"
npm run --silent build:debug

step "Node: npm test (RINDLE_ROOM_NATIVE_BUILD=debug)"
RINDLE_ROOM_NATIVE_BUILD=debug npm test

step "Node: index.d.ts type check (tsc --noEmit)"
npm run --silent typecheck
echo "index.d.ts: ok"
