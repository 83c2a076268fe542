#!/usr/bin/env bash
# Regenerates include/rindle_room.h from bindings-c/src with a pinned cbindgen.
# The header is committed; CI runs this script and fails on any difference
# (`git diff --exit-code include/`).
#
# cbindgen is installed once, with `cargo install --locked`, into $RINDLE_TOOLS_DIR
# (default ~/.cache/rindle-room/tools) if that directory does not hold the pinned version.
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.4
tools="${RINDLE_TOOLS_DIR:-$HOME/.cache/rindle-room/tools}"
cbindgen="$tools/bin/cbindgen"

if [ "$("$cbindgen" --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
  echo "installing cbindgen $CBINDGEN_VERSION into $tools (once)" >&2
  cargo install cbindgen --version "=$CBINDGEN_VERSION" --locked --root "$tools" --quiet
fi

"$cbindgen" --quiet \
  --config bindings-c/cbindgen.toml \
  --crate rindle-room-c \
  --output include/rindle_room.h \
  bindings-c
echo "wrote include/rindle_room.h (cbindgen $CBINDGEN_VERSION)"
