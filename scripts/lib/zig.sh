# Sourced by scripts/npm-pack.sh, scripts/dist.sh and scripts/test-npm-pack.sh: the
# pinned zig and cargo-zigbuild that build the shipped artifacts against glibc 2.17, and
# the check of the glibc an ELF file needs.
#
#   zig_tools                 installs both once (zig from PyPI's `ziglang` wheel with
#                             pip, cargo-zigbuild with `cargo install --locked`) into
#                             $RINDLE_TOOLS_DIR (default ~/.cache/rindle-room/tools) and
#                             puts them on PATH
#   max_glibc FILE            the highest GLIBC_x.y symbol version FILE requires ("none"
#                             when it needs no versioned glibc symbol)
#   check_glibc FILE [MAX]    fails unless max_glibc FILE <= MAX (default 2.17)
#
# The glibc floor of every shipped Linux artifact is $GLIBC_FLOOR: CentOS 7, Debian 8,
# Ubuntu 14.04, Amazon Linux 2 and RHEL 7 and newer; Rust's std needs no newer one. It is
# also the first glibc with aarch64 support, so the floor is the same on both targets
# (scripts/lib/targets.sh).

ZIG_VERSION=0.15.2
CARGO_ZIGBUILD_VERSION=0.24.1
GLIBC_FLOOR=2.17
# cargo-zigbuild's spelling of "this Rust target against glibc $GLIBC_FLOOR".
ZIG_TARGET="x86_64-unknown-linux-gnu.$GLIBC_FLOOR"
zig_target() { echo "$1.$GLIBC_FLOOR"; }

zig_tools() {
  local tools="${RINDLE_TOOLS_DIR:-$HOME/.cache/rindle-room/tools}"
  local zig_dir="$tools/ziglang-$ZIG_VERSION"
  mkdir -p "$tools"
  if [ "$("$zig_dir/ziglang/zig" version 2>/dev/null)" != "$ZIG_VERSION" ]; then
    echo "installing zig $ZIG_VERSION (PyPI: ziglang) into $zig_dir (once)" >&2
    local py
    py="$(command -v python3 || command -v python || true)"
    if [ -z "$py" ] || ! "$py" -m pip --version >/dev/null 2>&1; then
      echo "zig comes from PyPI (the ziglang wheel): install python3 and pip" \
        "(Debian: apt-get install python3-pip)" >&2
      return 1
    fi
    rm -rf "$zig_dir.tmp"
    PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check \
      --no-warn-script-location --target "$zig_dir.tmp" "ziglang==$ZIG_VERSION" >&2
    rm -rf "$zig_dir"
    mv "$zig_dir.tmp" "$zig_dir"
  fi
  if [ "$("$tools/bin/cargo-zigbuild" --version 2>/dev/null)" != "cargo-zigbuild $CARGO_ZIGBUILD_VERSION" ]; then
    echo "installing cargo-zigbuild $CARGO_ZIGBUILD_VERSION into $tools (once)" >&2
    cargo install cargo-zigbuild --version "=$CARGO_ZIGBUILD_VERSION" --locked \
      --root "$tools" --quiet
  fi
  export PATH="$tools/bin:$zig_dir/ziglang:$PATH"
}

max_glibc() {
  local versions
  # objdump (binutils) where it is and knows the file's machine (Debian's does not know
  # aarch64), else readelf (binutils too; it reads every ELF machine).
  if ! command -v objdump >/dev/null || ! versions="$(objdump -T "$1" 2>/dev/null)"; then
    versions="$(readelf --wide --dyn-syms "$1")"
  fi
  versions="$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$versions" | sed 's/^GLIBC_//' | sort -uV)"
  if [ -z "$versions" ]; then echo none; else tail -n 1 <<<"$versions"; fi
}

check_glibc() {
  local file="$1" max="${2:-$GLIBC_FLOOR}" found
  found="$(max_glibc "$file")"
  if [ "$found" != none ] &&
    [ "$(printf '%s\n%s\n' "$found" "$max" | sort -V | tail -n 1)" != "$max" ]; then
    echo "$file needs GLIBC_$found, newer than the floor GLIBC_$max" >&2
    return 1
  fi
  echo "$(basename "$file"): highest glibc symbol version GLIBC_$found (floor $max)"
}
