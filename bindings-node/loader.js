"use strict";
// Where the native addon of @rindle/room-native comes from. binding.js loads it with
// `loadAddon()`; scripts/install.js asks `tryLoad()` whether a build from source is needed.
//
// In order:
//   1. RINDLE_ROOM_NATIVE_PATH=/abs/file.node: that exact file, nothing else;
//   2. RINDLE_ROOM_NATIVE_BUILD=debug: rindle_room.debug.node beside this file (a checkout,
//      `npm run build:debug`);
//   3. the prebuilt package of this platform, when there is one and npm installed it (an
//      optionalDependency of the published package, skipped by npm on other platforms):
//      @rindle/room-native-linux-x64-gnu (x86_64 Linux, glibc >= 2.17) or
//      @rindle/room-native-linux-arm64-gnu (aarch64 Linux, glibc >= 2.17); none for musl
//      (Alpine), whose libc the loader tells apart the way napi-rs loaders do;
//   4. rindle_room.node beside this file: the addon scripts/install.js built from the
//      package's Rust sources (native/) at `npm install`, or `npm run build` in a checkout;
//   otherwise an Error (code ERR_RINDLE_ROOM_NATIVE_MISSING) that names the platform, why
//   each candidate failed, and what to install.
const fs = require("node:fs");
const path = require("node:path");

/** The prebuilt platform packages, by platform key (`${platform}-${arch}[-${libc}]`). */
const PLATFORM_PACKAGES = {
  "linux-x64-gnu": "@rindle/room-native-linux-x64-gnu",
  "linux-arm64-gnu": "@rindle/room-native-linux-arm64-gnu",
};

/**
 * The C library of this Linux: "gnu" (glibc) or "musl"; null on other systems. As
 * napi-rs loaders do: `/usr/bin/ldd` names musl on musl systems (Alpine's is a musl
 * script); else Node's report says which glibc it runs on (a musl build has no such
 * field) or lists musl's loader among its shared objects.
 */
function detectLibc({ platform = process.platform, readFile = fs.readFileSync, report } = {}) {
  if (platform !== "linux") return null;
  try {
    const ldd = readFile("/usr/bin/ldd", "utf8");
    if (ldd.includes("musl")) return "musl";
    if (ldd.includes("GNU C Library") || ldd.includes("glibc")) return "gnu";
  } catch {
    // No ldd (a distroless image): ask Node.
  }
  const header = report === undefined ? process.report?.getReport?.() : report;
  if (header?.header?.glibcVersionRuntime) return "gnu";
  const objects = Array.isArray(header?.sharedObjects) ? header.sharedObjects : [];
  if (objects.some((f) => f.includes("libc.musl-") || f.includes("ld-musl-"))) return "musl";
  return header ? "musl" : "gnu";
}

/** `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64`, … */
function platformKey(platform = process.platform, arch = process.arch, libc = detectLibc()) {
  return libc ? `${platform}-${arch}-${libc}` : `${platform}-${arch}`;
}

function missing(message) {
  const err = new Error(message);
  err.code = "ERR_RINDLE_ROOM_NATIVE_MISSING";
  return err;
}

function describe(err) {
  return String(err && err.message ? err.message : err).split("\n")[0];
}

/**
 * Finds and loads the addon. `opts` (for tests and the install script): `dir` (the
 * package directory), `env`, `key` (the platform key), `requireFn`. Returns
 * `{ addon, file, from }`, `from` being "path", "debug", "prebuilt" or "local".
 */
function loadAddon(opts = {}) {
  const dir = opts.dir ?? __dirname;
  const env = opts.env ?? process.env;
  const key = opts.key ?? platformKey();
  const req = opts.requireFn ?? require;
  const checkout = fs.existsSync(path.join(dir, "scripts", "build.js"));

  const explicit = env.RINDLE_ROOM_NATIVE_PATH;
  if (explicit) {
    const file = path.resolve(explicit);
    if (!fs.existsSync(file)) {
      const fix = checkout
        ? `Build it with \`npm run build\` in ${dir}, or unset the variable.`
        : "Unset the variable to load the installed addon.";
      throw missing(
        `@rindle/room-native: the native addon ${file} is missing (RINDLE_ROOM_NATIVE_PATH ` +
          `names it). ${fix}`,
      );
    }
    return { addon: req(file), file, from: "path" };
  }
  const build = env.RINDLE_ROOM_NATIVE_BUILD || "release";
  if (build !== "release" && build !== "debug") {
    throw new Error(
      `RINDLE_ROOM_NATIVE_BUILD must be "release" or "debug", got ${JSON.stringify(build)}`,
    );
  }
  if (build === "debug") {
    const file = path.join(dir, "rindle_room.debug.node");
    if (!fs.existsSync(file)) {
      throw missing(
        `@rindle/room-native: the native addon ${file} is missing. ` +
          `Build it first: run \`npm run build:debug\` in ${dir} (it runs cargo and needs ` +
          "no download).",
      );
    }
    return { addon: req(file), file, from: "debug" };
  }

  const tried = [];
  const pkg = PLATFORM_PACKAGES[key];
  if (pkg) {
    let file;
    try {
      file = req.resolve(pkg, { paths: [dir] });
    } catch {
      tried.push(`the prebuilt package ${pkg} is not installed`);
    }
    if (file) {
      try {
        const version = req(req.resolve(`${pkg}/package.json`, { paths: [dir] })).version;
        const ours = req(path.join(dir, "package.json")).version;
        if (version !== ours) {
          tried.push(`the prebuilt package ${pkg} is version ${version}, not ${ours}`);
        } else {
          return { addon: req(file), file, from: "prebuilt" };
        }
      } catch (err) {
        tried.push(`the prebuilt package ${pkg} failed to load: ${describe(err)}`);
      }
    }
  } else {
    const keys = Object.keys(PLATFORM_PACKAGES).join(", ");
    const why = key.endsWith("-musl")
      ? ": the prebuilt addons need glibc, and this Linux has musl (Alpine?)"
      : "";
    tried.push(`there is no prebuilt package for ${key} (prebuilt: ${keys})${why}`);
  }

  const local = path.join(dir, "rindle_room.node");
  if (fs.existsSync(local)) {
    try {
      return { addon: req(local), file: local, from: "local" };
    } catch (err) {
      tried.push(`${local} failed to load: ${describe(err)}`);
    }
  } else {
    tried.push(`no addon was built from source (${local} is missing)`);
  }

  const how = checkout
    ? `In this checkout, build it: run \`npm run build\` in ${dir} (it runs cargo and ` +
      "needs no download)."
    : (pkg
        ? `Install the prebuilt package (\`npm install ${pkg}\`; npm leaves it out under ` +
          "--omit=optional or with a lockfile made without it), or build from source: "
        : "Build it from source: ") +
      "install a Rust toolchain (Rust >= 1.88, https://rustup.rs) and a C linker (cc), " +
      "then run `npm rebuild @rindle/room-native`; its install script runs cargo on the " +
      "package's Rust sources and writes rindle_room.node.";
  throw missing(
    `@rindle/room-native: no native addon for ${key}: ${tried.join("; ")}. ${how}`,
  );
}

/** Like loadAddon, but returns the error instead of throwing it. */
function tryLoad(opts) {
  try {
    return loadAddon(opts);
  } catch (error) {
    return { error };
  }
}

module.exports = { PLATFORM_PACKAGES, detectLibc, platformKey, loadAddon, tryLoad };
