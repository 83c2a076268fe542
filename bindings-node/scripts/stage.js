#!/usr/bin/env node
"use strict";
// Stages the npm packages for `npm pack` (scripts/npm-pack.sh runs it):
//
//   node bindings-node/scripts/stage.js OUT_DIR PLATFORM=ADDON...
//
// PLATFORM is a directory under npm/ (linux-x64-gnu, linux-arm64-gnu) and ADDON the
// stripped addon built for it against glibc 2.17. Writes
//   OUT_DIR/room-native-PLATFORM/       @rindle/room-native-PLATFORM, for each PLATFORM
//                                       given: npm/PLATFORM's package.json and README.md,
//                                       the repository's LICENSE, and ADDON as
//                                       rindle_room.PLATFORM.node;
//   OUT_DIR/room-native/                @rindle/room-native: the files of package.json's
//                                       `files`, README.md, LICENSE, and
//                                       - package.json with optionalDependencies on every
//                                         platform package under npm/ (same version),
//                                         staged here or not (they are released
//                                         together), the scripts a
//                                         user's npm runs (install, prepack), no
//                                         devDependencies;
//                                       - native/: the Rust sources the install script
//                                         builds from on a platform with no prebuilt
//                                         package (the addon's crates, their Cargo.toml
//                                         without benches and dev-dependencies, a
//                                         workspace Cargo.toml and the Cargo.lock pruned
//                                         to what they use).
// The committed package.json has no optionalDependencies on purpose: the platform
// packages are not on the registry until released, and `npm ci` in the checkout would
// refuse a lockfile without them.
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const [outArg, ...given] = process.argv.slice(2);
if (!outArg || given.length === 0 || !given.every((g) => /^[a-z0-9-]+=./.test(g))) {
  console.error("usage: node stage.js OUT_DIR PLATFORM=ADDON...");
  process.exit(2);
}
const pkgDir = path.resolve(__dirname, "..");
const repo = path.resolve(pkgDir, "..");
const out = path.resolve(outArg);
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));

/** The platform packages this repository has: every directory under npm/. */
const PLATFORMS = fs
  .readdirSync(path.join(pkgDir, "npm"), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
/** The addons to stage: platform -> file. */
const ADDONS = Object.fromEntries(
  given.map((g) => [g.slice(0, g.indexOf("=")), g.slice(g.indexOf("=") + 1)]),
);
for (const platform of Object.keys(ADDONS)) {
  if (!PLATFORMS.includes(platform)) {
    throw new Error(`no npm/${platform}: the platforms are ${PLATFORMS.join(", ")}`);
  }
}
/** The crates of the addon (rindle-room-node and its path dependencies), by directory. */
const CRATES = ["room-core", "journal", "downstream", "bindings-node"];

function copy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.cpSync(from, to, { recursive: true });
}

function fresh(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

// --- the platform packages ---------------------------------------------------------
const optionalDependencies = {};
for (const platform of PLATFORMS) {
  const src = path.join(pkgDir, "npm", platform);
  const manifest = JSON.parse(fs.readFileSync(path.join(src, "package.json"), "utf8"));
  if (manifest.version !== pkg.version) {
    throw new Error(`npm/${platform}/package.json is ${manifest.version}, not ${pkg.version}`);
  }
  optionalDependencies[manifest.name] = manifest.version;
  const file = ADDONS[platform];
  if (!file) continue;
  const dir = fresh(path.join(out, manifest.name.replace(/^@[^/]+\//, "")));
  copy(path.join(src, "package.json"), path.join(dir, "package.json"));
  copy(path.join(src, "README.md"), path.join(dir, "README.md"));
  copy(path.join(repo, "LICENSE"), path.join(dir, "LICENSE"));
  copy(path.resolve(file), path.join(dir, manifest.main));
  console.log(`staged ${manifest.name}@${manifest.version} in ${dir}`);
}

// --- the main package --------------------------------------------------------------
const main = fresh(path.join(out, pkg.name.replace(/^@[^/]+\//, "")));
for (const entry of pkg.files) {
  if (entry === "native/") continue;
  copy(path.join(pkgDir, entry), path.join(main, entry));
}
copy(path.join(pkgDir, "README.md"), path.join(main, "README.md"));
copy(path.join(repo, "LICENSE"), path.join(main, "LICENSE"));
const staged = { ...pkg, optionalDependencies };
staged.scripts = { install: pkg.scripts.install, prepack: pkg.scripts.prepack };
delete staged.devDependencies;
fs.writeFileSync(path.join(main, "package.json"), `${JSON.stringify(staged, null, 2)}\n`);

// native/: a workspace of the addon's crates.
const native = path.join(main, "native");
const members = CRATES.map((c) => JSON.stringify(c)).join(", ");
let root = fs.readFileSync(path.join(repo, "Cargo.toml"), "utf8");
root = dropSections(root, (h) => h.startsWith("[profile."));
root = root
  .replace(/^members = \[.*\]$/m, `members = [${members}]`)
  .replace(/^exclude = \[.*\]\n/m, "");
root =
  "# The Rust sources of @rindle/room-native's addon: scripts/install.js builds them when\n" +
  "# no prebuilt platform package loads. Generated by scripts/stage.js from the repository.\n" +
  `${root.trimEnd()}\n\n[profile.release]\nstrip = true\n`;
fs.mkdirSync(native, { recursive: true });
fs.writeFileSync(path.join(native, "Cargo.toml"), root);
for (const crate of CRATES) {
  const from = path.join(repo, crate);
  const to = path.join(native, crate);
  copy(path.join(from, "src"), path.join(to, "src"));
  if (fs.existsSync(path.join(from, "build.rs"))) {
    copy(path.join(from, "build.rs"), path.join(to, "build.rs"));
  }
  const manifest = fs.readFileSync(path.join(from, "Cargo.toml"), "utf8");
  const trimmed = dropSections(manifest, (h) =>
    ["[dev-dependencies]", "[[bench]]", "[[example]]", "[[test]]"].includes(h),
  );
  fs.writeFileSync(path.join(to, "Cargo.toml"), trimmed);
}
// The repository's lock, pruned by cargo (offline) to the packages these crates use.
fs.copyFileSync(path.join(repo, "Cargo.lock"), path.join(native, "Cargo.lock"));
const cargo = process.env.CARGO || "cargo";
const manifestPath = path.join(native, "Cargo.toml");
for (const args of [
  ["metadata", "--offline", "--format-version", "1", "--manifest-path", manifestPath],
  ["metadata", "--offline", "--locked", "--format-version", "1", "--manifest-path", manifestPath],
]) {
  const run = spawnSync(cargo, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (run.status !== 0) {
    console.error(run.stderr);
    throw new Error(`${cargo} ${args.join(" ")} failed`);
  }
}
fs.rmSync(path.join(native, "target"), { recursive: true, force: true });
console.log(`staged ${pkg.name}@${pkg.version} in ${main}`);

/** The TOML text without the sections whose header line satisfies `drop`. */
function dropSections(text, drop) {
  const kept = [];
  let dropping = false;
  for (const line of text.split("\n")) {
    const header = /^\[\[?[^\]]+\]\]?\s*$/.exec(line.trim());
    if (header) dropping = drop(line.trim());
    // A comment block right above a dropped section belongs to it.
    if (header && dropping) {
      while (kept.length && kept[kept.length - 1].startsWith("#")) kept.pop();
    }
    if (!dropping) kept.push(line);
  }
  return kept.join("\n").replace(/\n{3,}/g, "\n\n");
}
