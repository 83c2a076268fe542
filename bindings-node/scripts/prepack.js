#!/usr/bin/env node
"use strict";
// The `prepack` script of @rindle/room-native: refuses to pack a package that could not
// load an addon once installed.
//
// The packages are made by scripts/npm-pack.sh (or scripts/dist.sh) at the repository's
// root: it builds the stripped addon against glibc 2.17, stages this package (with its
// optionalDependencies on the platform packages and the Rust sources in native/) beside
// each platform package (with its addon), and runs `npm pack` in each. Here that means:
//   - in bindings-node itself (a checkout), refuse: `npm pack` there would ship no addon
//     and no way to build one;
//   - in the staged package, refuse unless native/ holds the sources the install script
//     builds from, at least one platform package of optionalDependencies was staged
//     beside it, and each staged one holds its addon. optionalDependencies name every
//     platform package (they are released together); one a run did not build (say
//     `scripts/npm-pack.sh OUT release` builds x86_64 only) is named in a warning: npm
//     skips an optional package it cannot find, and that platform builds from source.
const fs = require("node:fs");
const path = require("node:path");

const pkgDir = path.resolve(__dirname, "..");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const problems = [];

if (fs.existsSync(path.join(pkgDir, "scripts", "build.js"))) {
  problems.push("this is the checkout's bindings-node, which holds no packable addon");
} else {
  if (!fs.existsSync(path.join(pkgDir, "native", "Cargo.lock"))) {
    problems.push("native/ (the Rust sources the install script builds from) is missing");
  }
  const platforms = Object.keys(pkg.optionalDependencies ?? {});
  if (platforms.length === 0) problems.push("package.json names no platform package");
  const absent = [];
  for (const name of platforms) {
    const dir = path.join(pkgDir, "..", name.replace(/^@[^/]+\//, ""));
    let main;
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      if (manifest.name !== name) throw new Error(`${dir} holds ${manifest.name}`);
      main = path.join(dir, manifest.main);
    } catch (err) {
      absent.push(`${name} (${err.message})`);
      continue;
    }
    if (!fs.existsSync(main) || fs.statSync(main).size === 0) {
      problems.push(`the platform package ${name} has no addon (${main})`);
    }
  }
  if (platforms.length > 0 && absent.length === platforms.length) {
    problems.push(`no platform package is staged beside this one: ${absent.join("; ")}`);
  } else if (absent.length) {
    console.warn(
      `@rindle/room-native: packing without ${absent.length} platform package(s) this run ` +
        `did not build: ${absent.join("; ")}. Release them together (scripts/dist.sh).`,
    );
  }
}

if (problems.length) {
  console.error(
    `@rindle/room-native: refusing to pack: ${problems.join("; ")}.\n` +
      "Pack with scripts/npm-pack.sh OUT_DIR (or scripts/dist.sh) at the repository's root: " +
      "it builds the addon and packs @rindle/room-native with its platform packages.",
  );
  process.exit(1);
}
