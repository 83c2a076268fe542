#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, the API docs (no rustdoc warning),
# the Rust workspace (unit tests, conformance scenarios, IVM fixtures, the differential
# oracle, the fuzz smoke test), the core's and the C library's benches once each (they check
# their workloads' shape), the C and C++ face (scripts/test-c.sh), the Node face
# (scripts/test-node.sh), the README's code blocks (scripts/test-readme.sh), the room
# against the published Rindle 0.9.0 stack (scripts/test-real-stack.sh), the npm
# packages as a user installs them (scripts/test-npm-pack.sh), the aarch64 artifacts
# under qemu (scripts/test-arm64.sh, only with RINDLE_TEST_ARM64=1), and the no_std proof. CI
# (.ci/run) calls exactly this script on a clean clone.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)

step "toolchain"
cargo --version
for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "installing the $comp component"
    rustup component add "$comp"
  fi
done

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (workspace, all targets, -D warnings)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo doc (workspace, -D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

step "cargo test (workspace)"
cargo test --workspace --locked

step "the core's and the C library's benches, once each at their smallest settings (debug: their own checks, not timings)"
READ_PATH_REPS=1 READ_PATH_REP_MS=1 cargo test --locked -q -p rindle-room-core --bench read_path >/dev/null
WRITE_PATH_REPS=1 WRITE_PATH_REP_MS=1 WRITE_PATH_FLUSH_ROUNDS=1 \
  cargo test --locked -q -p rindle-room-core --bench write_path >/dev/null
COLD_PATH_N=3000 COLD_PATH_REPS=1 cargo test --locked -q -p rindle-room-core --bench cold_path >/dev/null
C_ABI_REPS=1 C_ABI_UNITS=100 C_ABI_N=1000 cargo test --locked -q -p rindle-room-c --bench c_abi >/dev/null
echo "read_path, write_path, cold_path, c_abi: ran"

step "C and C++ (bindings-c: header check, C11/C++17 programs, valgrind, pkg-config)"
scripts/test-c.sh

step "Node (bindings-node: npm ci, debug addon, node --test, tsc --noEmit on index.d.ts)"
scripts/test-node.sh

step "README (every code block of README.md compiled or run: scripts/test-readme.sh)"
scripts/test-readme.sh

step "the real Rindle 0.9.0 stack: rindle up, the API server, two @rindle/optimistic clients against the fleet, the single room and createRoomShell (scripts/test-real-stack.sh)"
scripts/test-real-stack.sh

step "npm packages (packed for glibc 2.17, installed from the tarballs: scripts/test-npm-pack.sh)"
scripts/test-npm-pack.sh

step "server binary for glibc 2.17 (cargo zigbuild; scripts/test-glibc-floor.sh)"
scripts/test-glibc-floor.sh

step "arm64 under qemu (scripts/test-arm64.sh; only with RINDLE_TEST_ARM64=1)"
if [ "${RINDLE_TEST_ARM64:-}" = 1 ]; then
  scripts/test-arm64.sh
else
  echo "skipped: the aarch64 build and its qemu runs take longer than CI's budget; set" \
    "RINDLE_TEST_ARM64=1, or run scripts/test-arm64.sh before every release"
fi

if [ -x tests/no-std/check.sh ]; then
  step "no_std proof (tests/no-std)"
  tests/no-std/check.sh
fi

step "all tests passed in $(( $(date +%s) - started ))s"
