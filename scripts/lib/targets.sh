# shellcheck shell=bash disable=SC2034 # the T_* variables are the sourcing script's
# Sourced by scripts/dist.sh, scripts/npm-pack.sh and scripts/test-arm64.sh (after
# scripts/lib/zig.sh): the Linux targets the shipped artifacts are built for, and the
# Debian packages the aarch64 one needs.
#
#   SHIPPED_TARGETS              every target, in build order
#   target_vars T                sets, for the Rust target T:
#                                  T_TRIPLE  the archive suffix (x86_64-linux-gnu, …)
#                                  T_NPM     the npm platform (linux-x64-gnu, …)
#                                  T_DIR     its own CARGO_TARGET_DIR, under $1's
#                                            target directory (x86_64: <target>/zig, as
#                                            before; aarch64: <target>/aarch64)
#                                  T_CC      the C compiler that links tests against it
#                                  T_STRIP   the strip that knows its ELF machine
#                                  T_RUN     the prefix that runs its programs here
#                                            (empty natively, qemu-aarch64-static)
#   target_env T DIR CMD ARGS…   runs CMD (cargo, cargo-zigbuild) with CARGO_TARGET_DIR=DIR
#                                and T's toolchain: rustup's cargo and rustc for x86_64;
#                                Debian's (/usr/bin) for aarch64, since rustup cannot fetch
#                                another target's standard library here
#   aarch64_buildable            whether the aarch64 toolchain is installed or apt-get can
#                                install it (root, or sudo, on Debian)
#   aarch64_tools [run]          installs with apt-get, saying so, what building for
#                                aarch64 needs: Debian's Rust toolchain (rustc-web,
#                                cargo-web, 1.96 in bookworm-security) with its aarch64
#                                standard library (libstd-rust-web-dev:arm64, after
#                                `dpkg --add-architecture arm64`) and the cross gcc and
#                                binutils (gcc-aarch64-linux-gnu); with `run`, also
#                                qemu-user-static and libc6:arm64 to run the results
#
# Both targets link through cargo-zigbuild against glibc $GLIBC_FLOOR (scripts/lib/zig.sh):
# zig's glibc stubs decide the symbol versions, not the build machine's glibc.

SHIPPED_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

target_vars() {
  local base="$2"
  case "$1" in
    x86_64-unknown-linux-gnu)
      T_TRIPLE=x86_64-linux-gnu T_NPM=linux-x64-gnu T_DIR="$base/zig"
      T_CC=cc T_STRIP=strip T_RUN="" ;;
    aarch64-unknown-linux-gnu)
      T_TRIPLE=aarch64-linux-gnu T_NPM=linux-arm64-gnu T_DIR="$base/aarch64"
      T_CC=aarch64-linux-gnu-gcc T_STRIP=aarch64-linux-gnu-strip T_RUN=qemu-aarch64-static ;;
    *)
      echo "unknown target '$1': the shipped targets are ${SHIPPED_TARGETS[*]}" >&2
      return 2 ;;
  esac
}

target_env() {
  local t="$1" dir="$2"
  shift 2
  case "$t" in
    aarch64-*) env PATH="/usr/bin:$PATH" CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc \
      RUSTDOC=/usr/bin/rustdoc CARGO_TARGET_DIR="$dir" "$@" ;;
    *) env CARGO_TARGET_DIR="$dir" "$@" ;;
  esac
}

# Debian's aarch64 standard library for Debian's rustc, present?
aarch64_std_present() {
  [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] &&
    compgen -G "/usr/lib/rustlib/aarch64-unknown-linux-gnu/lib/libstd-*.rlib" >/dev/null
}

aarch64_buildable() {
  if aarch64_std_present && command -v aarch64-linux-gnu-gcc >/dev/null; then return 0; fi
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || return 1
  [ "$(id -u)" = 0 ] || command -v sudo >/dev/null
}

aarch64_tools() {
  local need=() sudo=()
  aarch64_std_present || need+=(rustc-web cargo-web libstd-rust-web-dev:arm64)
  command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
  # The cross compiler only recommends its C library headers (and recommends are not
  # installed below): without them it falls back on the host's and fails.
  [ -e /usr/aarch64-linux-gnu/include/stdio.h ] || need+=(libc6-dev-arm64-cross)
  if [ "${1:-}" = run ]; then
    command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
    [ -e /lib/ld-linux-aarch64.so.1 ] || need+=(libc6:arm64)
  fi
  [ "${#need[@]}" -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then sudo=(sudo); fi
  echo "installing with apt-get (Debian's packages): ${need[*]}" >&2
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "  dpkg --add-architecture arm64 (for the :arm64 packages)" >&2
    "${sudo[@]}" dpkg --add-architecture arm64
  fi
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >&2
  aarch64_std_present || {
    echo "Debian's rustc and its aarch64 standard library did not install" >&2
    return 1
  }
}
