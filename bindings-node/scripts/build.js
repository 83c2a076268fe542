#!/usr/bin/env node
"use strict";
// `npm run build` (release) / `npm run build:dist` / `npm run build:debug`: cargo-builds
// the rindle-room-node crate and copies the library next to index.js as rindle_room.node
// (release, or dist: the profile the published prebuilt addons are built with, fat LTO and
// one codegen unit, slower to build) or rindle_room.debug.node (debug), the two files
// binding.js loads. Respects CARGO_TARGET_DIR. Nothing is downloaded beyond what cargo
// fetches for the crates.
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const pkgDir = path.resolve(__dirname, "..");
const repo = path.resolve(pkgDir, "..");
const arg = process.argv[2] || process.env.RINDLE_ROOM_NATIVE_BUILD || "release";
const profiles = { release: ["--release"], dist: ["--profile", "dist"], debug: [] };
if (!Object.hasOwn(profiles, arg)) {
  console.error(`usage: build.js [release|dist|debug] (got ${JSON.stringify(arg)})`);
  process.exit(2);
}
const release = arg !== "debug";

const cargo = process.env.CARGO || "cargo";
const args = ["build", "-p", "rindle-room-node", ...profiles[arg]];
// CI builds exactly the committed Cargo.lock.
if (process.env.CI === "true") args.push("--locked");
console.log(`> ${cargo} ${args.join(" ")}`);
const run = spawnSync(cargo, args, { cwd: repo, stdio: "inherit" });
if (run.error) {
  console.error(`could not run ${cargo}: ${run.error.message}`);
  process.exit(1);
}
if (run.status !== 0) process.exit(run.status ?? 1);

const targetDir = path.resolve(repo, process.env.CARGO_TARGET_DIR || "target");
const libName = {
  darwin: "librindle_room_node.dylib",
  win32: "rindle_room_node.dll",
}[process.platform] ?? "librindle_room_node.so";
const from = path.join(targetDir, arg, libName);
const to = path.join(pkgDir, release ? "rindle_room.node" : "rindle_room.debug.node");
// Copy through a temporary file and rename, so a running process that has the old
// addon loaded keeps a valid mapping.
const tmp = `${to}.tmp-${process.pid}`;
fs.copyFileSync(from, tmp);
fs.renameSync(tmp, to);
console.log(`copied ${from}\n    -> ${to}`);
