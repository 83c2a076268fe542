#!/usr/bin/env bash
# The C and C++ face (bindings-c). Builds librindle_room (debug), checks that the committed
# header is exactly what the pinned cbindgen generates, compiles the programs of
# tests/c as C11 and C++17 with -Wall -Wextra -Werror -Wpedantic against only
# include/rindle_room.h and librindle_room.a, runs them, runs them again under valgrind
# (no errors, no leaks), and links the embedding example through pkg-config, shared and
# static. scripts/test-all.sh calls it; it also runs on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)
target="${CARGO_TARGET_DIR:-$PWD/target}"
lib="$target/debug/librindle_room.a"
out="$target/c-tests"
rm -rf "$out"
mkdir -p "$out"

step "C: build librindle_room (debug) and the scenario flattener"
cargo build --locked -p rindle-room-c --lib --example flatten_conformance

step "C: include/rindle_room.h is what the pinned cbindgen generates"
scripts/gen-header.sh
if git ls-files --error-unmatch include/rindle_room.h >/dev/null 2>&1; then
  if ! git diff --exit-code -- include/; then
    echo "include/rindle_room.h is stale: run scripts/gen-header.sh and commit it" >&2
    exit 1
  fi
elif [ "${CI:-}" = "true" ]; then
  echo "include/rindle_room.h is not committed" >&2
  exit 1
else
  echo "(the header is not committed yet: the diff check runs once it is)"
fi

step "C: compile as C11 and C++17 (-Wall -Wextra -Werror -Wpedantic)"
inc=(-Iinclude)
warn=(-Wall -Wextra -Werror -Wpedantic)
# The system libraries a static link of librindle_room.a needs (README, rindle_room.pc).
syslibs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
# The header on its own, with stricter warnings still.
for std in c11 c17; do
  echo '#include "rindle_room.h"' |
    cc -x c -std=$std "${warn[@]}" -Wundef -Wstrict-prototypes -Wconversion "${inc[@]}" \
      -fsyntax-only -
done
echo '#include "rindle_room.h"' |
  c++ -x c++ -std=c++17 "${warn[@]}" -Wundef -Wold-style-cast "${inc[@]}" -fsyntax-only -
for prog in conformance errors embed host; do
  cc -std=c11 "${warn[@]}" -g "${inc[@]}" "tests/c/$prog.c" "$lib" "${syslibs[@]}" \
    -o "$out/$prog"
done
c++ -std=c++17 "${warn[@]}" -g "${inc[@]}" tests/c/cpp_smoke.cpp "$lib" \
  "${syslibs[@]}" -o "$out/cpp_smoke"

step "C: flatten the conformance scenarios (tests/conformance)"
"$target/debug/examples/flatten_conformance" tests/conformance "$out/conformance.flat"

programs=(
  "$out/conformance $out/conformance.flat"
  "$out/errors"
  "$out/embed"
  "$out/host"
  "$out/cpp_smoke"
)

step "C: run"
for p in "${programs[@]}"; do
  # shellcheck disable=SC2086 # a program and its arguments
  $p >"$out/run.log" || { cat "$out/run.log"; echo "FAILED: $p" >&2; exit 1; }
  tail -n 1 "$out/run.log"
done

step "C: run under valgrind (--leak-check=full, any error fails)"
if ! command -v valgrind >/dev/null; then
  echo "installing valgrind"
  apt-get update -qq && apt-get install -y -qq valgrind >/dev/null
fi
for p in "${programs[@]}"; do
  # shellcheck disable=SC2086
  valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible $p >"$out/run.log" ||
    { cat "$out/run.log"; echo "FAILED under valgrind: $p" >&2; exit 1; }
  echo "valgrind clean: $(tail -n 1 "$out/run.log")"
done

step "C: link through pkg-config (scripts/install-c.sh), shared and static"
if ! command -v pkg-config >/dev/null; then
  apt-get update -qq && apt-get install -y -qq pkg-config >/dev/null
fi
scripts/install-c.sh "$out/prefix" debug >/dev/null
export PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
# The installed shared library is versioned: librindle_room.so -> .so.<ABI> (its SONAME,
# 0.<minor> before 1.0) -> .so.<version>.
major="${version%%.*}"
minor="${version#*.}"
if [ "$major" = 0 ]; then abi="0.${minor%%.*}"; else abi="$major"; fi
soname="$(readelf -d "$out/prefix/lib/librindle_room.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
if [ "$soname" != "librindle_room.so.$abi" ]; then
  echo "installed librindle_room.so has the SONAME '$soname', not librindle_room.so.$abi" >&2
  exit 1
fi
[ "$(readlink "$out/prefix/lib/$soname")" = "librindle_room.so.$version" ] ||
  { echo "lib/$soname does not link to librindle_room.so.$version" >&2; exit 1; }
echo "SONAME $soname -> librindle_room.so.$version"
if [ "$(pkg-config --modversion rindle_room)" != "$version" ]; then
  echo "rindle_room.pc says $(pkg-config --modversion rindle_room), Cargo.toml $version" >&2
  exit 1
fi
# shellcheck disable=SC2046 # pkg-config prints several flags
cc -std=c11 "${warn[@]}" tests/c/embed.c $(pkg-config --cflags --libs rindle_room) \
  -Wl,-rpath,"$out/prefix/lib" -o "$out/embed-shared"
# shellcheck disable=SC2046
cc -std=c11 "${warn[@]}" tests/c/embed.c $(pkg-config --cflags rindle_room) \
  $(pkg-config --variable=static_libs rindle_room) -o "$out/embed-static"
case "$(ldd "$out/embed-shared")" in *librindle_room.so*) ;; *) echo "not shared" >&2; exit 1 ;; esac
case "$(ldd "$out/embed-static")" in *librindle_room*) echo "not static" >&2; exit 1 ;; esac
"$out/embed-shared" | tail -n 1
"$out/embed-static" | tail -n 1

step "C: all passed in $(( $(date +%s) - started ))s"
