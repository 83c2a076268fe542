#!/usr/bin/env bash
# The npm packages as a user gets them. Packs @rindle/room-native (its
# optionalDependencies name both platform packages, x64 and arm64) and
# @rindle/room-native-linux-x64-gnu with scripts/npm-pack.sh (the `release` profile,
# stripped: the released `dist` build only adds LTO), then:
#   - checks what each tarball holds (README.md, LICENSE, package.json with os / cpu /
#     libc and optionalDependencies, ws as a caret range, the addon in the platform
#     package only) and that the addon is stripped and needs glibc <= 2.17;
#   - checks that `npm pack` refuses without the addon (prepack) in the checkout and in a
#     platform package;
#   - installs both tarballs into a scratch project (`npm install ./a.tgz ./b.tgz`: only
#     `ws` may come from npm's cache or the registry; the arm64 package is an optional
#     dependency of another CPU, which npm leaves out), checks that the loader picked the
#     platform package, and runs a `require`, an `import` and the JavaScript snippets of
#     the package's README (bindings-node/README.md, read from the installed package:
#     type-checked with tsc --strict, and run where they need nothing but the module);
#   - installs the main tarball alone (`--omit=optional`, as on a platform with no
#     prebuilt package): its install script builds the addon from the shipped Rust
#     sources (debug profile and this checkout's target directory, to stay fast) and the
#     module loads it; without cargo the install script and the loader fail with the
#     platform's name and what to install.
# Scratch files go to <target>/npm-pack-tests. scripts/test-all.sh calls it after the
# Node step (it reuses that step's npm cache, @types/node, TypeScript and debug build); it
# also runs on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=lib/zig.sh
. scripts/lib/zig.sh

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
out="$target/npm-pack-tests"
bn="$repo/bindings-node"
rm -rf "$out"
mkdir -p "$out"
version="$(node -p 'require("./bindings-node/package.json").version')"
main_tgz="$out/tarballs/rindle-room-native-$version.tgz"
plat_tgz="$out/tarballs/rindle-room-native-linux-x64-gnu-$version.tgz"
npm_install=(npm install --prefer-offline --no-audit --no-fund --foreground-scripts)

if [ ! -x "$bn/node_modules/.bin/tsc" ] || [ ! -d "$bn/node_modules/@types/node" ]; then
  (cd "$bn" && npm ci --no-audit --no-fund)
fi

step "npm: build and pack (scripts/npm-pack.sh, release profile)"
pack_started=$(date +%s)
scripts/npm-pack.sh "$out/tarballs" release
echo "built and packed in $(($(date +%s) - pack_started)) s"

step "npm: what the tarballs hold"
mkdir -p "$out/unpacked/main" "$out/unpacked/plat"
tar -xzf "$main_tgz" -C "$out/unpacked/main"
tar -xzf "$plat_tgz" -C "$out/unpacked/plat"
node - "$out/unpacked/main/package" "$out/unpacked/plat/package" <<'EOF'
const fs = require("node:fs");
const path = require("node:path");
const [main, plat] = process.argv.slice(2);
const fail = (msg) => { console.error(msg); process.exit(1); };
const has = (dir, f) => fs.existsSync(path.join(dir, f)) || fail(`${dir}: no ${f}`);
for (const dir of [main, plat]) for (const f of ["README.md", "LICENSE", "package.json"]) has(dir, f);
const license = fs.readFileSync("LICENSE", "utf8");
for (const dir of [main, plat]) {
  if (fs.readFileSync(path.join(dir, "LICENSE"), "utf8") !== license) fail(`${dir}/LICENSE differs`);
}
const m = JSON.parse(fs.readFileSync(path.join(main, "package.json"), "utf8"));
const p = JSON.parse(fs.readFileSync(path.join(plat, "package.json"), "utf8"));
if (!/^\^8\.\d+\.\d+$/.test(m.dependencies.ws)) fail(`ws is ${m.dependencies.ws}, not a caret range`);
if (m.optionalDependencies?.[p.name] !== p.version || p.version !== m.version) {
  fail(`optionalDependencies ${JSON.stringify(m.optionalDependencies)} vs ${p.name}@${p.version}`);
}
// Every platform package, built here or not: they are released together.
const platforms = ["linux-arm64-gnu", "linux-x64-gnu"].map((k) => `@rindle/room-native-${k}`);
if (JSON.stringify(Object.keys(m.optionalDependencies).sort()) !== JSON.stringify(platforms)) {
  fail(`optionalDependencies ${JSON.stringify(m.optionalDependencies)}: not ${platforms}`);
}
for (const [k, v] of Object.entries({ os: "linux", cpu: "x64", libc: "glibc" })) {
  if (JSON.stringify(p[k]) !== JSON.stringify([v])) fail(`${p.name}: ${k} is ${JSON.stringify(p[k])}`);
}
if (m.os || m.cpu || m.libc) fail("the main package must install everywhere (no os/cpu/libc)");
if (m.devDependencies) fail("the main package ships devDependencies");
for (const f of ["index.js", "index.mjs", "index.d.ts", "binding.js", "loader.js",
  "scripts/install.js", "native/Cargo.toml", "native/Cargo.lock", "native/bindings-node/build.rs"]) has(main, f);
const nodes = (dir) => fs.readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith(".node"));
if (nodes(main).length) fail(`the main package holds addons: ${nodes(main)}`);
if (JSON.stringify(nodes(plat)) !== JSON.stringify([p.main])) fail(`${p.name} holds ${nodes(plat)}`);
if (fs.existsSync(path.join(main, "scripts/build.js"))) fail("scripts/build.js is shipped");
console.log(`${m.name}@${m.version}: ${fs.readdirSync(main).join(" ")}`);
console.log(`${p.name}@${p.version}: ${fs.readdirSync(plat).join(" ")} (${p.os}/${p.cpu}/${p.libc})`);
console.log(`ws ${m.dependencies.ws}; optionalDependencies ${JSON.stringify(m.optionalDependencies)}`);
EOF
addon="$out/unpacked/plat/package/rindle_room.linux-x64-gnu.node"
if readelf --wide --sections "$addon" | grep -Eq '\.(symtab|debug_[a-z]+) '; then
  echo "the packed addon is not stripped" >&2
  exit 1
fi
echo "rindle_room.linux-x64-gnu.node: stripped, $(du -k "$addon" | cut -f 1) KiB"
check_glibc "$addon"

step "npm: prepack refuses to pack without the addon"
if (cd "$bn" && npm pack --dry-run >"$out/prepack.log" 2>&1); then
  echo "npm pack in bindings-node did not refuse" >&2
  exit 1
fi
grep -q "refusing to pack" "$out/prepack.log" || { cat "$out/prepack.log" >&2; exit 1; }
echo "bindings-node: $(grep -o 'refusing to pack: [^.]*' "$out/prepack.log")"
cp -r "$out/unpacked/plat/package" "$out/plat-no-addon"
rm "$out/plat-no-addon/rindle_room.linux-x64-gnu.node"
if (cd "$out/plat-no-addon" && npm pack --dry-run >"$out/prepack.log" 2>&1); then
  echo "npm pack of the platform package without its addon did not refuse" >&2
  exit 1
fi
grep -q "refusing to pack without its addon" "$out/prepack.log" || { cat "$out/prepack.log" >&2; exit 1; }
echo "platform package: refusing to pack without its addon"

step "npm: install both tarballs into a scratch project"
proj="$out/project"
mkdir -p "$proj"
echo '{ "name": "scratch", "version": "1.0.0", "private": true }' >"$proj/package.json"
(cd "$proj" && "${npm_install[@]}" "$main_tgz" "$plat_tgz")
# For tsc only: the scratch project's code is type-checked against @types/node.
mkdir -p "$proj/node_modules/@types"
ln -sfn "$bn/node_modules/@types/node" "$proj/node_modules/@types/node"
cat >"$proj/which-addon.cjs" <<'EOF'
// Which addon file the process mapped: the loader must have taken the platform package.
const maps = require("node:fs").readFileSync("/proc/self/maps", "utf8");
const files = [...new Set(maps.split("\n").map((l) => l.split(/\s+/)[5]).filter((f) => f?.endsWith(".node")))];
const want = "/node_modules/@rindle/room-native-linux-x64-gnu/rindle_room.linux-x64-gnu.node";
if (files.length !== 1 || !files[0].endsWith(want)) throw new Error(`loaded ${files}`);
console.log(`loaded ${files[0]}`);
EOF
cat >"$proj/require.cjs" <<'EOF'
const room = require("@rindle/room-native");
for (const name of ["WasmRoom", "createRoomShell", "mintRoomToken", "fileJournal"]) {
  if (typeof room[name] !== "function") throw new Error(`require: ${name} is ${typeof room[name]}`);
}
console.log(`require("@rindle/room-native"): ${Object.keys(room).length} exports`);
require("./which-addon.cjs");
EOF
cat >"$proj/import.mjs" <<'EOF'
import room, { WasmRoom, mintRoomToken, verifyRoomToken } from "@rindle/room-native";
const ast = { table: "note" };
const token = await mintRoomToken({ doc: "d", ast, sub: "u", kid: "k1", key: "s", ttlMs: 60000 });
const payload = await verifyRoomToken(token, { doc: "d", keys: { k1: "s" } });
if (payload.sub !== "u" || room.WasmRoom !== WasmRoom) throw new Error(JSON.stringify(payload));
console.log(`import from "@rindle/room-native": a token minted and verified (${token.slice(0, 8)}…)`);
await import("./which-addon.cjs");
EOF
(cd "$proj" && node require.cjs && node import.mjs)

step "npm: the README of the installed package (node_modules/@rindle/room-native/README.md)"
readme="$proj/node_modules/@rindle/room-native/README.md"
blocks="$out/readme-blocks"
node scripts/readme/extract.mjs "$readme" "$blocks" >"$out/readme-manifest"
tsc_strict() {
  (cd "$proj" && "$bn/node_modules/.bin/tsc" --strict --noEmit --pretty false --target es2022 \
    --module nodenext --moduleResolution nodenext --lib es2022,esnext.disposable \
    --types node "$1") || { echo "tsc --strict failed on $1 (from README.md's $2)" >&2; return 1; }
  echo "  tsc --strict: ok"
}
n=0
while IFS=$'\t' read -r name lang line skip; do
  echo "README.md:$line ($lang) readme=$name${skip:+ (skipped: $skip)}"
  [ -z "$skip" ] || continue
  n=$((n + 1))
  case "$name" in
    npm-install)
      # What this script did with the tarballs in place of the registry.
      [ "$(cat "$blocks/$name")" = "npm install @rindle/room-native" ] ||
        { echo "unexpected install command: $(cat "$blocks/$name")" >&2; exit 1; }
      echo "  ran above, from the tarballs" ;;
    node-require)
      cat "$blocks/$name" scripts/readme/node-require.after.cjs >"$proj/readme-require.cts"
      tsc_strict readme-require.cts "$name"
      cp "$proj/readme-require.cts" "$proj/readme-require.cjs"
      (cd "$proj" && node readme-require.cjs) | sed 's/^/  /' ;;
    node-wasmroom)
      cp scripts/readme/node-wasmroom.fixtures.mjs "$proj/fixtures.mts"
      cp scripts/readme/node-wasmroom.fixtures.mjs "$proj/fixtures.mjs"
      cat "$blocks/$name" scripts/readme/node-wasmroom.after.mjs >"$proj/readme-wasmroom.mts"
      tsc_strict readme-wasmroom.mts "$name"
      cp "$proj/readme-wasmroom.mts" "$proj/readme-wasmroom.mjs"
      (cd "$proj" && node readme-wasmroom.mjs) | sed 's/^/  /' ;;
    node-shell)
      cp "$blocks/$name" "$proj/readme-shell.mts"
      tsc_strict readme-shell.mts "$name"
      echo "  not run: it connects to a rindled and an authority (bindings-node/test/shell runs" \
        "the shell against fakes)" ;;
    *) echo "scripts/test-npm-pack.sh has no rule for the README block readme=$name" >&2; exit 1 ;;
  esac
done <"$out/readme-manifest"
[ "$n" -ge 4 ] || { echo "expected 4 README blocks, found $n" >&2; exit 1; }

step "npm: no prebuilt package -> the install script builds the addon from source"
src_proj="$out/from-source"
mkdir -p "$src_proj"
echo '{ "name": "scratch", "version": "1.0.0", "private": true }' >"$src_proj/package.json"
# Debug, in a target directory of its own: cargo names a path crate's artifacts by its
# path inside its workspace, so building the packed copy in this checkout's target
# directory would leave artifacts that later builds of the checkout take as fresh.
(cd "$src_proj" &&
  RINDLE_ROOM_NATIVE_PROFILE=debug CARGO_TARGET_DIR="$out/from-source-target" \
    "${npm_install[@]}" --omit=optional "$main_tgz") | tee "$out/from-source.log"
grep -q "building it from source" "$out/from-source.log" ||
  { echo "the install script did not build from source" >&2; exit 1; }
[ ! -e "$src_proj/node_modules/@rindle/room-native-linux-x64-gnu" ] ||
  { echo "--omit=optional installed the platform package" >&2; exit 1; }
(cd "$src_proj" && node -e '
  const { WasmRoom } = require("@rindle/room-native");
  const maps = require("node:fs").readFileSync("/proc/self/maps", "utf8");
  const want = "/node_modules/@rindle/room-native/rindle_room.node";
  if (typeof WasmRoom !== "function" || !maps.includes(want)) throw new Error("not the local addon");
  console.log("loaded the addon built from source: node_modules/@rindle/room-native/rindle_room.node");
')

step "npm: no prebuilt package and no cargo -> an error naming the platform and what to install"
pkg="$src_proj/node_modules/@rindle/room-native"
rm "$pkg/rindle_room.node"
# PATH holds node alone: the directory node lives in may hold a cargo too (Debian's
# cargo-web, which scripts/dist.sh installs for aarch64, is /usr/bin/cargo).
mkdir -p "$out/no-cargo-bin"
ln -sfn "$(command -v node)" "$out/no-cargo-bin/node"
rc=0
(cd "$pkg" && env -u CARGO PATH="$out/no-cargo-bin" \
  CARGO_HOME=/nonexistent HOME="$out" node scripts/install.js) >"$out/no-cargo.log" 2>&1 || rc=$?
rc2=0
(cd "$src_proj" && node -e '
  try { require("@rindle/room-native"); } catch (e) { console.log(`${e.code}: ${e.message}`); process.exit(3); }
') >"$out/no-addon.log" 2>&1 || rc2=$?
for log in no-cargo no-addon; do
  for want in "linux-x64-gnu" "rustup.rs" "npm rebuild @rindle/room-native"; do
    grep -qF "$want" "$out/$log.log" || { cat "$out/$log.log" >&2; echo "$log: no \"$want\"" >&2; exit 1; }
  done
done
[ "$rc" -eq 1 ] || { echo "install.js without cargo exited $rc, not 1" >&2; exit 1; }
[ "$rc2" -eq 3 ] && grep -q '^ERR_RINDLE_ROOM_NATIVE_MISSING' "$out/no-addon.log" ||
  { cat "$out/no-addon.log" >&2; exit 1; }
echo "install script: exit 1; require: $(cut -c 1-160 "$out/no-addon.log")…"

step "npm: all passed in $(($(date +%s) - started)) s"
