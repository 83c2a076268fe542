#!/usr/bin/env node
"use strict";
// `npm run build` (release) / `npm run build:dist` / `npm run build:pgo` / `npm run
// build:debug`: cargo-builds the rindle-room-node crate and copies the library next to
// index.js as rindle_room.node (release; dist: fat LTO and one codegen unit, slower to
// build; pgo: dist optimized with the profile of a training run, as the published x86_64
// addon is, scripts/pgo-profile.sh) or rindle_room.debug.node (debug), the two files
// binding.js loads. Respects CARGO_TARGET_DIR. Nothing is downloaded beyond what cargo
// fetches for the crates.
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const pkgDir = path.resolve(__dirname, "..");
const repo = path.resolve(pkgDir, "..");
const arg = process.argv[2] || process.env.RINDLE_ROOM_NATIVE_BUILD || "release";
// `pgo` is the `dist` profile optimized with a training run's profile
// (scripts/pgo-profile.sh), built in a target directory of its own.
const profiles = { release: ["--release"], dist: ["--profile", "dist"], pgo: ["--profile", "dist"], debug: [] };
if (!Object.hasOwn(profiles, arg)) {
  console.error(`usage: build.js [release|dist|pgo|debug] (got ${JSON.stringify(arg)})`);
  process.exit(2);
}
const release = arg !== "debug";
const targetDir = path.resolve(repo, process.env.CARGO_TARGET_DIR || "target");

/** Runs a command in the repository; exits as it failed. */
function step(cmd, args, env = process.env) {
  console.log(`> ${cmd} ${args.join(" ")}`);
  const run = spawnSync(cmd, args, { cwd: repo, stdio: "inherit", env });
  if (run.error) {
    console.error(`could not run ${cmd}: ${run.error.message}`);
    process.exit(1);
  }
  if (run.status !== 0) process.exit(run.status ?? 1);
}

const cargo = process.env.CARGO || "cargo";
const args = ["build", "-p", "rindle-room-node", ...profiles[arg]];
// CI builds exactly the committed Cargo.lock.
if (process.env.CI === "true") args.push("--locked");
let builtDir = targetDir;
let env = process.env;
if (arg === "pgo") {
  const profdata = path.join(targetDir, "pgo", "addon.profdata");
  step("bash", [path.join(repo, "scripts", "pgo-profile.sh"), profdata]);
  builtDir = path.join(targetDir, "pgo-use");
  // A warning per function the profile has no record of: every function of the room's
  // core must be found (a profile of crates built otherwise matches nothing, silently).
  env = {
    ...process.env,
    CARGO_TARGET_DIR: builtDir,
    RUSTFLAGS: `-Cprofile-use=${profdata} -Cllvm-args=-pgo-warn-missing-function`,
  };
  console.log(`> ${cargo} ${args.join(" ")} (CARGO_TARGET_DIR=${builtDir} RUSTFLAGS=${env.RUSTFLAGS})`);
  const run = spawnSync(cargo, args, { cwd: repo, stdio: ["inherit", "inherit", "pipe"], env, maxBuffer: 1 << 30 });
  const lines = String(run.stderr ?? "").split("\n");
  const missing = lines.filter((l) => /no profile data available for function .*16rindle_room_core/.test(l));
  process.stderr.write(lines.filter((l) => !l.includes("no profile data available for function")).join("\n"));
  if (run.error || run.status !== 0) process.exit(run.status || 1);
  if (missing.length > 0) {
    console.error(`the training profile has no record of ${missing.length} functions of rindle-room-core`);
    process.exit(1);
  }
  console.log(`profile-guided: every function of rindle-room-core found in ${profdata}`);
} else {
  step(cargo, args, env);
}

const libName = {
  darwin: "librindle_room_node.dylib",
  win32: "rindle_room_node.dll",
}[process.platform] ?? "librindle_room_node.so";
const from = path.join(builtDir, arg === "pgo" ? "dist" : arg, libName);
const to = path.join(pkgDir, release ? "rindle_room.node" : "rindle_room.debug.node");
// Copy through a temporary file and rename, so a running process that has the old
// addon loaded keeps a valid mapping.
const tmp = `${to}.tmp-${process.pid}`;
fs.copyFileSync(from, tmp);
fs.renameSync(tmp, to);
console.log(`copied ${from}\n    -> ${to}`);
