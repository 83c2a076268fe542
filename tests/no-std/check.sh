#!/bin/sh
# Proves rindle-room-core builds without std: builds the `#![no_std]` staticlib in this
# directory, which fails with "duplicate lang item `panic_impl`" if any dependency links std.
# Run from anywhere; exits non-zero when the build fails. Extra arguments go to cargo
# (e.g. `--release`).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cargo build --manifest-path "$here/Cargo.toml" "$@"
echo "no-std check: rindle-room-core links without std"
