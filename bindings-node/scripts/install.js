#!/usr/bin/env node
"use strict";
// The `install` script of @rindle/room-native: builds the addon from source only when no
// prebuilt one loads.
//
// npm runs it after installing the package. When the prebuilt platform package
// (@rindle/room-native-linux-x64-gnu or -linux-arm64-gnu, an optionalDependency) loads,
// or an addon built earlier does, it does nothing. Otherwise (another platform, or npm
// left the optional package out) it runs
//
//   cargo build --release --locked --manifest-path native/Cargo.toml -p rindle-room-node
//
// on the Rust sources the package ships (native/: the crates the addon is made of, with
// their Cargo.lock) and copies the library to rindle_room.node, which loader.js loads.
// That needs a Rust toolchain (Rust >= 1.88, https://rustup.rs; cargo on PATH, in
// ~/.cargo/bin or named by $CARGO), a C compiler and linker (cc: the addon's allocator,
// mimalloc, is C), and network access to crates.io (or a vendored / offline cargo
// setup). Without cargo it fails, naming the platform and what to install. Environment:
//   CARGO_TARGET_DIR                   where cargo builds (default: native/target, removed
//                                      after the build)
//   RINDLE_ROOM_NATIVE_PROFILE=debug   a debug build instead of release (tests)
//   RINDLE_ROOM_NATIVE_SKIP_BUILD=1    never build (the loader then explains what is missing)
//
// In a checkout of the repository (no native/ directory) it does nothing: `npm run build`
// builds the addon there.
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const pkgDir = path.resolve(__dirname, "..");
const native = path.join(pkgDir, "native");
if (!fs.existsSync(path.join(native, "Cargo.toml"))) process.exit(0);

const { platformKey, tryLoad } = require("../loader.js");
const key = platformKey();
const env = { ...process.env };
delete env.RINDLE_ROOM_NATIVE_PATH;
delete env.RINDLE_ROOM_NATIVE_BUILD;
const found = tryLoad({ dir: pkgDir, env });
if (!found.error) {
  console.log(`@rindle/room-native: using ${found.file} (${found.from}); nothing to build`);
  process.exit(0);
}
if (process.env.RINDLE_ROOM_NATIVE_SKIP_BUILD) {
  console.warn("@rindle/room-native: RINDLE_ROOM_NATIVE_SKIP_BUILD is set: not building.");
  process.exit(0);
}

function findCargo() {
  const candidates = [];
  if (process.env.CARGO) candidates.push(process.env.CARGO);
  candidates.push("cargo");
  const cargoHome = process.env.CARGO_HOME || path.join(os.homedir(), ".cargo");
  candidates.push(path.join(cargoHome, "bin", "cargo"));
  for (const c of candidates) {
    const probe = spawnSync(c, ["--version"], { encoding: "utf8" });
    if (probe.status === 0) return { cargo: c, version: probe.stdout.trim() };
  }
  return null;
}

const cargo = findCargo();
if (!cargo) {
  console.error(
    `${found.error.message}\n(install script: no cargo to build with: looked at $CARGO, ` +
      "PATH and ~/.cargo/bin)",
  );
  process.exit(1);
}

const release = process.env.RINDLE_ROOM_NATIVE_PROFILE !== "debug";
const ownTarget = !process.env.CARGO_TARGET_DIR;
const targetDir = process.env.CARGO_TARGET_DIR
  ? path.resolve(process.env.CARGO_TARGET_DIR)
  : path.join(native, "target");
const args = [
  "build",
  "--locked",
  "--manifest-path",
  path.join(native, "Cargo.toml"),
  "-p",
  "rindle-room-node",
  ...(release ? ["--release"] : []),
];
console.log(
  `@rindle/room-native: no prebuilt addon for ${key}: building it from source with ` +
    `${cargo.version}\n> ${cargo.cargo} ${args.join(" ")}`,
);
const started = Date.now();
const run = spawnSync(cargo.cargo, args, {
  cwd: native,
  stdio: "inherit",
  env: { ...process.env, CARGO_TARGET_DIR: targetDir },
});
if (run.error || run.status !== 0) {
  const why = run.error ? run.error.message : `exit ${run.status}`;
  console.error(
    `@rindle/room-native: cargo failed (${why}); the messages above say why. A C ` +
      "compiler and linker (cc) and access to crates.io are needed.",
  );
  process.exit(1);
}

const libName = {
  darwin: "librindle_room_node.dylib",
  win32: "rindle_room_node.dll",
}[process.platform] ?? "librindle_room_node.so";
const from = path.join(targetDir, release ? "release" : "debug", libName);
const to = path.join(pkgDir, "rindle_room.node");
const tmp = `${to}.tmp-${process.pid}`;
fs.copyFileSync(from, tmp);
fs.renameSync(tmp, to);
if (ownTarget) fs.rmSync(targetDir, { recursive: true, force: true });

const built = tryLoad({ dir: pkgDir, env });
if (built.error || built.from !== "local") {
  const why = built.error ? built.error.message : `loaded ${built.file} instead`;
  console.error(`@rindle/room-native: the addon built from source does not load: ${why}`);
  process.exit(1);
}
console.log(
  `@rindle/room-native: built ${to} from source in ${Math.round((Date.now() - started) / 1000)} s`,
);
