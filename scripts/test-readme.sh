#!/usr/bin/env bash
# Every code block of README.md, compiled or run, so that none of them rots.
#
# scripts/readme/extract.mjs pulls the fenced blocks out of README.md. Each one names
# itself in its info string (```sh readme=demo ```) and this script has a function
# snippet_<name> that compiles or runs it; a block may instead say why it is not run
# (```sh readme-skip="why" ```). An untagged block, a name without a function here or a
# function whose block is gone fails the run, so a new snippet cannot slip past.
#
#   JavaScript (the Node snippets): type-checked as TypeScript with `tsc --strict
#     --noEmit` against the package's index.d.ts and @types/node, in a scratch project
#     that has @rindle/room-native in its node_modules, and run with node on the debug
#     addon where they need nothing but the module.
#   C (the C snippet): made a program (its #includes, then inputs, then the snippet as
#     the body of main; compiler messages point at README.md lines), compiled as C11 and
#     as C++17 with -Wall -Wextra -Werror -Wpedantic, linked static and shared, run (and
#     under valgrind when it is installed); then the README's own build commands are run
#     word for word on it, with target/release standing for the debug build
#     scripts/test-c.sh made and /usr/local for a scratch prefix.
#   Shell: every sh block must parse (bash -n); the commands are run (the demos until
#     their client lines have been played against them and Ctrl-C has stopped them, the
#     replay tool on the README's example input), or, where running them here would be
#     redundant or long, the scripts and flags they name are checked to exist.
#
# It builds only what scripts/test-c.sh and scripts/test-node.sh build (debug, in
# CARGO_TARGET_DIR or target/), which are no-ops after them, plus the room-core examples
# the README runs. Scratch files go to <target>/readme-tests. scripts/test-all.sh calls
# it after the Node step; it also runs on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
out="$target/readme-tests"
blocks="$out/blocks"
rm -rf "$out"
mkdir -p "$out"
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi
bn="$repo/bindings-node"
syslibs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
warn=(-Wall -Wextra -Werror -Wpedantic)

# --- helpers -----------------------------------------------------------------------

# The commands of a shell block, one per line: continuation lines joined, comment-only
# and blank lines dropped.
commands_of() {
  awk '
    /^[[:space:]]*(#|$)/ && cmd == "" { next }
    { line = $0; sub(/^[[:space:]]+/, "", line) }
    /\\$/ { sub(/\\$/, "", line); cmd = cmd line; next }
    { print cmd line; cmd = "" }
  ' "$blocks/$1"
}

# The README line of a block's first line (extract.mjs's manifest).
start_of() { awk -F '\t' -v n="$1" '$1 == n { print $3 }' "$out/manifest"; }

# Runs a command line taken from the README, echoing it first.
run() {
  printf '  $ %s\n' "$*"
  eval "$@"
}

# npm commands of a README block are checked to name what bindings-node has: `cd DIR`,
# `npm ci` (a package-lock.json), `npm test` and `npm run NAME` (a script of
# package.json), with `VAR=value` prefixes and `&&` chains.
check_npm_commands() {
  local cmd part word
  local -a words
  while IFS= read -r cmd; do
    cmd="${cmd%%#*}"
    while IFS= read -r part; do
      read -r -a words <<<"$part"
      while [ "${#words[@]}" -gt 0 ] && [[ "${words[0]}" == [A-Z_]*=* ]]; do
        words=("${words[@]:1}")
      done
      [ "${#words[@]}" -gt 0 ] || continue
      case "${words[0]} ${words[1]:-}" in
        "cd "*) [ -d "$repo/${words[1]}" ] || { echo "no directory ${words[1]}" >&2; return 1; } ;;
        "npm ci") [ -f "$bn/package-lock.json" ] || { echo "no package-lock.json" >&2; return 1; } ;;
        "npm test" | "npm run")
          word="${words[2]:-test}"
          node -e 'process.exit(require(process.argv[1]).scripts?.[process.argv[2]] ? 0 : 1)' \
            "$bn/package.json" "$word" ||
            { echo "bindings-node/package.json has no script \"$word\"" >&2; return 1; }
          ;;
        *) echo "unknown command in an npm block: $part" >&2; return 1 ;;
      esac
      echo "  ok: $part"
    done < <(sed 's/ && /\n/g' <<<"$cmd")
  done < <(commands_of "$1")
}

# The scratch Node project the JavaScript snippets are checked in: @rindle/room-native
# (this checkout's bindings-node) and @types/node in its node_modules, as after an
# `npm install` of the package.
node_project() {
  local dir="$out/node"
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir/node_modules/@rindle" "$dir/node_modules/@types"
    ln -s "$bn" "$dir/node_modules/@rindle/room-native"
    ln -s "$bn/node_modules/@types/node" "$dir/node_modules/@types/node"
  fi
  echo "$dir"
}

# tsc --strict --noEmit over one snippet file; messages about the snippet's own lines
# are given as README.md lines.
tsc_strict() {
  local name="$1" file="$2" first lines
  first="$(start_of "$name")"
  lines="$(wc -l <"$blocks/$name")"
  printf '  $ tsc --strict --noEmit --target es2022 --module nodenext --types node %s\n' \
    "$(basename "$file")"
  if ! (cd "$(dirname "$file")" && "$bn/node_modules/.bin/tsc" --strict --noEmit --pretty false \
    --target es2022 --module nodenext --moduleResolution nodenext \
    --lib es2022,esnext.disposable --types node "$(basename "$file")") >"$out/tsc.log" 2>&1; then
    awk -v f="$(basename "$file")" -v first="$first" -v n="$lines" -v name="$name" '
      index($0, f "(") == 1 {
        split(substr($0, length(f) + 2), p, /[,)]/)
        if (p[1] + 0 <= n + 0) {
          rest = substr($0, index($0, "):") + 3)
          print "README.md:" (first + p[1] - 1) ":" p[2] " (snippet " name "): " rest
          next
        }
      }
      { print }
    ' "$out/tsc.log" >&2
    return 1
  fi
  echo "  tsc --strict: ok"
}

# The C snippet as a program in DIR (app.c and app.cpp): its #include lines, the inputs
# (scripts/readme/c-snippet.before.c), then the snippet as the body of main, with #line
# so that compiler messages name README.md lines.
c_program() {
  local dir="$1" snippet="$blocks/c-snippet"
  mkdir -p "$dir"
  {
    grep -E '^[[:space:]]*#[[:space:]]*include' "$snippet"
    cat scripts/readme/c-snippet.before.c
    echo 'int main(void) {'
    printf '#line %s "README.md"\n' "$(start_of c-snippet)"
    sed -E 's/^[[:space:]]*#[[:space:]]*include.*//' "$snippet"
    echo '  return 0;'
    echo '}'
  } >"$dir/app.c"
  cp "$dir/app.c" "$dir/app.cpp"
}

# Runs a linked program and checks how it found the library.
run_linked() {
  local prog="$1" linkage="$2" deps
  deps="$(ldd "$prog")"
  case "$linkage" in
    shared)
      grep -Eq 'librindle_room\.so[.0-9]* => /' <<<"$deps" ||
        { echo "$prog: librindle_room.so not linked or not found: $deps" >&2; return 1; } ;;
    static)
      if grep -q librindle_room <<<"$deps"; then
        echo "$prog: linked to the shared library, not the archive" >&2
        return 1
      fi ;;
  esac
  "$prog" || { echo "$prog exited with $?" >&2; return 1; }
  echo "  ran: $(basename "$prog") ($linkage)"
}

# Starts a README demo command, waits for its last ready line, plays the client lines it
# printed (scripts/readme/demo-client.mjs), then stops it with SIGINT (Ctrl-C) and
# requires a clean exit.
demo_pid=""
stop_demo() { if [ -n "$demo_pid" ]; then kill -KILL "$demo_pid" 2>/dev/null || true; fi; }
run_demo() {
  local cmd="$1" ready="$2" dir="$3" waited=0 rc=0
  mkdir -p "$dir/tmp"
  trap stop_demo EXIT
  printf '  $ %s    (TMPDIR=%s)\n' "$cmd" "$dir/tmp"
  # cargo run execs the binary, so $! is the server itself. TMPDIR keeps its files here.
  (cd "$repo" && export TMPDIR="$dir/tmp" && eval "exec $cmd") >"$dir/out.txt" 2>&1 &
  demo_pid=$!
  # Generous: cargo may have to build the server first.
  until grep -q "$ready" "$dir/out.txt"; do
    if ! kill -0 "$demo_pid" 2>/dev/null; then
      cat "$dir/out.txt" >&2
      echo "the demo exited before printing \"$ready\"" >&2
      return 1
    fi
    if [ "$waited" -gt 6000 ]; then
      cat "$dir/out.txt" >&2
      echo "no \"$ready\" from the demo within 20 min" >&2
      return 1
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
  echo "  ready: $ready"
  node scripts/readme/demo-client.mjs "$dir/out.txt" | sed 's/^/  client: /'
  echo "  Ctrl-C (SIGINT)"
  kill -INT "$demo_pid"
  for _ in $(seq 100); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$demo_pid" 2>/dev/null; then
    echo "the demo did not stop within 10 s of SIGINT" >&2
    return 1
  fi
  wait "$demo_pid" || rc=$?
  demo_pid=""
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$dir/out.txt" >&2
    echo "the demo exited with $rc after SIGINT" >&2
    return 1
  fi
  echo "  stopped: exit 0 ($(tail -n 1 "$dir/out.txt" | sed 's/^[^ ]* [A-Z]* *//'))"
}

# --- one function per README block -------------------------------------------------

snippet_demo() {
  local dir="$out/demo" journal
  run_demo "$(commands_of demo)" "Ctrl-C stops the room" "$dir"
  # The prose after it: `rindle-room journal check PATH` / `journal salvage PATH OUT`,
  # on the journal the played mutation went to.
  journal="$(sed -n 's/^ *journal  *\(\/[^ ]*\) .*/\1/p' "$dir/out.txt" | head -n 1)"
  [ -s "$journal" ] || { echo "the demo printed no journal with records: '$journal'" >&2; return 1; }
  run '"$target/debug/rindle-room" journal check "$journal" | sed "s/^/    /"'
  run '"$target/debug/rindle-room" journal salvage "$journal" "$dir/salvaged" | sed "s/^/    /"'
  [ -s "$dir/salvaged" ] || { echo "journal salvage wrote nothing" >&2; return 1; }
}

snippet_demo_fleet() {
  run_demo "$(commands_of demo-fleet)" "Ctrl-C stops every room" "$out/demo-fleet"
}

snippet_test_all() {
  # Not run: it is the script that runs this one.
  [ "$(commands_of test-all)" = "./scripts/test-all.sh" ] || { echo "unexpected command" >&2; return 1; }
  [ -x scripts/test-all.sh ] || { echo "scripts/test-all.sh is not executable" >&2; return 1; }
  grep -q '^scripts/test-readme.sh$' scripts/test-all.sh ||
    { echo "scripts/test-all.sh does not run scripts/test-readme.sh" >&2; return 1; }
  echo "  not run (it runs this script): executable, parses, runs scripts/test-readme.sh"
}

snippet_replay() {
  local dir="$out/replay" cmd
  mkdir -p "$dir"
  cmd="$(commands_of replay)"
  case "$cmd" in *" < calls.jsonl") ;; *) echo "expected \"… < calls.jsonl\": $cmd" >&2; return 1 ;; esac
  # calls.jsonl is the README's example input (the replay-calls block).
  cp "$blocks/replay-calls" "$dir/calls.jsonl"
  run "cd \"\$repo\" && ${cmd% < calls.jsonl} < \"\$dir/calls.jsonl\" > \"\$dir/replies.jsonl\""
  sed 's/^/    /' "$dir/replies.jsonl"
  if [ "$(wc -l <"$dir/replies.jsonl")" -ne "$(wc -l <"$dir/calls.jsonl")" ] ||
    grep -qv '^{"ok":' "$dir/replies.jsonl"; then
    echo "the replay tool did not answer every call with {\"ok\": …}" >&2
    return 1
  fi
}

snippet_replay_calls() {
  # Run as calls.jsonl by snippet_replay; here: one {"call", "args"} object a line.
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
    for (const l of lines) {
      const c = JSON.parse(l);
      if (typeof c.call !== "string" || !Array.isArray(c.args)) throw new Error(`not a call: ${l}`);
    }
    console.log(`  ${lines.length} calls, each {"call", "args"}; replayed by the replay block`);
  ' "$blocks/replay-calls"
}

snippet_c_snippet() {
  local dir="$out/c-snippet" lib="$target/debug"
  c_program "$dir"
  cd "$dir"
  for lang in c11 c++17; do
    local compiler=cc src=app.c
    if [ "$lang" = c++17 ]; then compiler=c++; src=app.cpp; fi
    run "$compiler -std=$lang ${warn[*]} -I\"\$repo/include\" $src \"\$lib/librindle_room.a\"" \
      "${syslibs[*]} -o app-$lang-static"
    run_linked "./app-$lang-static" static
    run "$compiler -std=$lang ${warn[*]} -I\"\$repo/include\" $src -L\"\$lib\" -lrindle_room" \
      "-Wl,-rpath,\"\$lib\" -o app-$lang-shared"
    run_linked "./app-$lang-shared" shared
  done
  if command -v valgrind >/dev/null; then
    run valgrind -q --error-exitcode=99 --leak-check=full \
      --errors-for-leak-kinds=definite,indirect,possible ./app-c11-static
    echo "  valgrind: clean"
  fi
}

snippet_c_build() {
  # The README's build commands, word for word, on the C snippet's program, in a
  # directory laid out like the checkout: include/ is the header, target/release is the
  # debug build scripts/test-c.sh made, and /usr/local stands for a scratch prefix.
  local dir="$out/c-build" cmd n=0
  c_program "$dir"
  ln -s "$repo/include" "$dir/include"
  mkdir -p "$dir/target"
  ln -s "$target/debug" "$dir/target/release"
  cd "$dir"
  while IFS= read -r cmd; do
    case "$cmd" in
      "cargo build --release -p rindle-room-c"*)
        echo "  (instead of \`$cmd\`: the debug library scripts/test-c.sh builds)"
        run '(cd "$repo" && cargo build -q "${locked[@]}" -p rindle-room-c)'
        ;;
      "scripts/install-c.sh /usr/local")
        echo "  (instead of \`$cmd\`: a scratch prefix, the debug library)"
        run '"$repo/scripts/install-c.sh" "$dir/prefix" debug'
        export PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig"
        ;;
      "cc "* | "c++ "*)
        rm -f app a.out
        run "$cmd"
        n=$((n + 1))
        local prog=./a.out linkage=shared
        case "$cmd" in *"-o app"*) prog=./app ;; esac
        case "$cmd" in *librindle_room.a* | *static_libs*) linkage=static ;; esac
        run_linked "$prog" "$linkage"
        ;;
      *) echo "no rule in scripts/test-readme.sh for the command: $cmd" >&2; return 1 ;;
    esac
  done < <(commands_of c-build)
  [ "$n" -ge 4 ] || { echo "expected 4 compile commands, ran $n" >&2; return 1; }
}

snippet_node_build() {
  check_npm_commands node-build
  echo "  (npm run build, the release addon, is not run: minutes of release build; its" \
    "script is the same scripts/build.js)"
  run '(cd "$bn" && npm run --silent build:debug)'
}

snippet_node_require() {
  local dir
  dir="$(node_project)"
  cat "$blocks/node-require" scripts/readme/node-require.after.cjs >"$dir/node-require.cts"
  tsc_strict node-require "$dir/node-require.cts"
  cp "$dir/node-require.cts" "$dir/node-require.cjs"
  run '(cd "$dir" && RINDLE_ROOM_NATIVE_BUILD=debug node node-require.cjs)'
}

snippet_node_wasmroom() {
  local dir
  dir="$(node_project)"
  cp scripts/readme/node-wasmroom.fixtures.mjs "$dir/fixtures.mts"
  cp scripts/readme/node-wasmroom.fixtures.mjs "$dir/fixtures.mjs"
  cat "$blocks/node-wasmroom" scripts/readme/node-wasmroom.after.mjs >"$dir/node-wasmroom.mts"
  tsc_strict node-wasmroom "$dir/node-wasmroom.mts"
  cp "$dir/node-wasmroom.mts" "$dir/node-wasmroom.mjs"
  run '(cd "$dir" && RINDLE_ROOM_NATIVE_BUILD=debug node node-wasmroom.mjs)'
}

snippet_node_shell() {
  local dir
  dir="$(node_project)"
  cp "$blocks/node-shell" "$dir/node-shell.mts"
  tsc_strict node-shell "$dir/node-shell.mts"
  echo "  not run: it connects to a rindled and an authority (the shell's own tests run" \
    "it against fakes: bindings-node/test/shell)"
}

snippet_node_test() {
  check_npm_commands node-test
  echo "  (npm ci and npm test run in scripts/test-node.sh, the step before this one)"
  run '(cd "$bn" && npm run --silent typecheck)'
}

# --- the run -----------------------------------------------------------------------

step "README: extract the code blocks (scripts/readme/extract.mjs)"
node scripts/readme/extract.mjs README.md "$blocks" >"$out/manifest"
names=()
while IFS=$'\t' read -r name lang line skip; do
  names+=("$name")
  printf '  %-15s %-5s README.md:%-4s %s\n' "$name" "$lang" "$line" "${skip:+skipped: $skip}"
done <"$out/manifest"
bad=0
while IFS=$'\t' read -r name lang line skip; do
  if [ -z "$skip" ] && ! declare -F "snippet_${name//-/_}" >/dev/null; then
    echo "README.md:$line: readme=$name has no snippet_${name//-/_} in scripts/test-readme.sh" >&2
    bad=1
  fi
done <"$out/manifest"
for fn in $(declare -F | awk '$3 ~ /^snippet_/ { print $3 }'); do
  name="${fn#snippet_}"
  name="${name//_/-}"
  if ! cut -f 1 "$out/manifest" | grep -qx -- "$name"; then
    echo "scripts/test-readme.sh: $fn, but README.md has no block readme=$name" >&2
    bad=1
  fi
done
[ "$bad" -eq 0 ]

step "README: what the blocks need (no-ops after scripts/test-c.sh and scripts/test-node.sh)"
(cd "$bn" &&
  if [ ! -x node_modules/.bin/tsc ] || [ ! -d node_modules/@types/node ] ||
    [ ! -d node_modules/ws ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  fi)
cargo build -q "${locked[@]}" -p rindle-room-c --lib
(cd "$bn" && npm run --silent build:debug)
if ! command -v pkg-config >/dev/null; then
  apt-get update -qq && apt-get install -y -qq pkg-config >/dev/null
fi

passed=0
failed=()
while IFS=$'\t' read -r name lang line skip; do
  if [ -n "$skip" ]; then
    step "README.md:$line ($lang): not run: $skip"
    continue
  fi
  step "README.md:$line: $lang block readme=$name"
  rc=0
  block_started=$(date +%s)
  if [ "$lang" = sh ]; then
    bash -n "$blocks/$name" || rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    set +e
    (set -e; "snippet_${name//-/_}")
    rc=$?
    set -e
  fi
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "  passed ($(($(date +%s) - block_started))s)"
  else
    echo "FAILED: README snippet readme=$name (README.md:$line)" >&2
    failed+=("$name (README.md:$line)")
  fi
done <"$out/manifest"

step "README: inline commands the prose names"
"$target/debug/rindle-room" --help >"$out/help.txt"
for flag in "--config" "demo --fleet" "journal check" "journal salvage"; do
  grep -q -- "rindle-room $flag" "$out/help.txt" ||
    { echo "rindle-room --help does not show \`rindle-room $flag\`" >&2; failed+=("rindle-room $flag"); }
done
echo "  rindle-room --help shows --config, demo --fleet, journal check, journal salvage"
printf '  $ %s\n' "cargo run -q -p rindle-room-core --example serve_file"
if cargo run -q "${locked[@]}" -p rindle-room-core --example serve_file >"$out/serve_file.txt" &&
  grep -q '"t":"nbatch"' "$out/serve_file.txt"; then
  echo "  serve_file: $(grep -c '^{' "$out/serve_file.txt") frames"
else
  echo "FAILED: cargo run -p rindle-room-core --example serve_file" >&2
  failed+=("serve_file")
fi

step "README: ${passed} passed, ${#failed[@]} failed in $(($(date +%s) - started))s"
if [ "${#failed[@]}" -gt 0 ]; then
  printf '  failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
