"use strict";
// Where the addon comes from (loader.js): the prebuilt platform package first, then an
// addon built from source, else an error that names the platform and what to install.
// The package directories here are fakes in a temporary directory; `.node` files are
// "loaded" by a require stand-in, so no addon is opened. scripts/test-npm-pack.sh checks
// the same on the real tarballs.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { detectLibc, loadAddon, platformKey, PLATFORM_PACKAGES } = require("../loader.js");

const PREBUILT = "@rindle/room-native-linux-x64-gnu";
const roots = [];
test.after(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

/** An installed @rindle/room-native (and maybe its platform package) in a scratch dir. */
function installed({ prebuilt, prebuiltVersion = "1.2.3", local = false, checkout = false }) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-loader-"));
  roots.push(root);
  const dir = path.join(root, "node_modules", "@rindle", "room-native");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ version: "1.2.3" }));
  if (local) fs.writeFileSync(path.join(dir, "rindle_room.node"), "x");
  if (checkout) {
    fs.mkdirSync(path.join(dir, "scripts"));
    fs.writeFileSync(path.join(dir, "scripts", "build.js"), "");
  }
  if (prebuilt) {
    const p = path.join(root, "node_modules", "@rindle", "room-native-linux-x64-gnu");
    fs.mkdirSync(p, { recursive: true });
    const main = "rindle_room.linux-x64-gnu.node";
    fs.writeFileSync(
      path.join(p, "package.json"),
      JSON.stringify({ name: PREBUILT, version: prebuiltVersion, main }),
    );
    fs.writeFileSync(path.join(p, main), "x");
  }
  return dir;
}

/** require, except that a `.node` file gives `{ addon: file }` (or throws `broken`). */
function fakeRequire(broken) {
  const r = (id) => {
    if (!id.endsWith(".node")) return require(id);
    if (broken && id.includes(broken)) throw new Error(`${id}: GLIBC_2.99 not found\nmore`);
    return { addon: id };
  };
  r.resolve = require.resolve;
  return r;
}

function load(dir, key = "linux-x64-gnu", env = {}, broken) {
  return loadAddon({ dir, env, key, requireFn: fakeRequire(broken) });
}

test("the platform key names OS, CPU and, on Linux, the C library", () => {
  assert.equal(platformKey("linux", "x64", "gnu"), "linux-x64-gnu");
  assert.equal(platformKey("linux", "arm64", "musl"), "linux-arm64-musl");
  assert.equal(platformKey("darwin", "arm64", null), "darwin-arm64");
  assert.equal(PLATFORM_PACKAGES["linux-x64-gnu"], PREBUILT);
  if (process.platform === "linux" && process.arch === "x64") {
    assert.match(platformKey(), /^linux-x64-(gnu|musl)$/);
  }
});

test("the prebuilt platform package wins over an addon built from source", () => {
  const dir = installed({ prebuilt: true, local: true });
  const got = load(dir);
  assert.equal(got.from, "prebuilt");
  assert.match(got.file, /room-native-linux-x64-gnu[/\\]rindle_room\.linux-x64-gnu\.node$/);
});

test("without the platform package, the addon built from source loads", () => {
  const got = load(installed({ prebuilt: false, local: true }));
  assert.equal(got.from, "local");
  assert.match(got.file, /room-native[/\\]rindle_room\.node$/);
});

test("a platform package of another version or that fails to load is passed over", () => {
  const stale = load(installed({ prebuilt: true, prebuiltVersion: "1.0.0", local: true }));
  assert.equal(stale.from, "local");
  const broken = load(installed({ prebuilt: true, local: true }), undefined, {}, "x64-gnu");
  assert.equal(broken.from, "local");
  // With nothing to fall back to, the error says what went wrong with each.
  assert.throws(
    () => load(installed({ prebuilt: true }), undefined, {}, "x64-gnu"),
    (err) => {
      assert.equal(err.code, "ERR_RINDLE_ROOM_NATIVE_MISSING");
      assert.match(err.message, /linux-x64-gnu failed to load: .*GLIBC_2\.99 not found;/);
      return true;
    },
  );
});

test("on a platform with no prebuilt package and no build, the error names it and Rust", () => {
  assert.throws(
    () => load(installed({}), "darwin-arm64"),
    (err) => {
      assert.equal(err.code, "ERR_RINDLE_ROOM_NATIVE_MISSING");
      assert.match(err.message, /no native addon for darwin-arm64/);
      assert.match(
        err.message,
        /no prebuilt package for darwin-arm64 \(prebuilt: linux-x64-gnu, linux-arm64-gnu\)/,
      );
      assert.match(err.message, /rustup\.rs/);
      assert.match(err.message, /npm rebuild @rindle\/room-native/);
      return true;
    },
  );
});

test("on linux-x64-gnu without the optional package, the error names it", () => {
  assert.throws(
    () => load(installed({})),
    /room-native-linux-x64-gnu is not installed.*`npm install @rindle\/room-native-linux-x64-gnu`/,
  );
});

test("on linux-arm64-gnu without the optional package, the error names the arm64 one", () => {
  assert.equal(PLATFORM_PACKAGES["linux-arm64-gnu"], "@rindle/room-native-linux-arm64-gnu");
  assert.throws(
    () => load(installed({ prebuilt: true }), "linux-arm64-gnu"),
    /room-native-linux-arm64-gnu is not installed.*`npm install @rindle\/room-native-linux-arm64-gnu`/,
  );
});

test("on musl, the error says the prebuilt addons need glibc and how to build", () => {
  for (const key of ["linux-x64-musl", "linux-arm64-musl"]) {
    assert.throws(
      () => load(installed({ prebuilt: true }), key),
      (err) => {
        assert.equal(err.code, "ERR_RINDLE_ROOM_NATIVE_MISSING");
        assert.match(err.message, new RegExp(`no prebuilt package for ${key} .*need glibc`));
        assert.match(err.message, /this Linux has musl/);
        assert.match(err.message, /rustup\.rs/);
        assert.match(err.message, /npm rebuild @rindle\/room-native/);
        return true;
      },
    );
  }
});

test("musl is told from glibc as napi-rs loaders do: ldd first, then Node's report", () => {
  const ldd = (text) => () => text;
  const noLdd = () => {
    throw new Error("ENOENT");
  };
  const alpine = "#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1 --list \"$@\"\n";
  assert.equal(detectLibc({ platform: "linux", readFile: ldd(alpine), report: null }), "musl");
  const debian = "# This file is part of the GNU C Library.\n";
  assert.equal(detectLibc({ platform: "linux", readFile: ldd(debian), report: null }), "gnu");
  const glibcReport = { header: { glibcVersionRuntime: "2.36" }, sharedObjects: [] };
  assert.equal(detectLibc({ platform: "linux", readFile: noLdd, report: glibcReport }), "gnu");
  const muslReport = { header: {}, sharedObjects: ["/lib/ld-musl-aarch64.so.1"] };
  assert.equal(detectLibc({ platform: "linux", readFile: noLdd, report: muslReport }), "musl");
  assert.equal(detectLibc({ platform: "darwin" }), null);
  assert.match(platformKey("linux", process.arch), /^linux-(x64|arm64)-(gnu|musl)$/);
});

test("in a checkout, the error says npm run build", () => {
  assert.throws(() => load(installed({ checkout: true })), /run `npm run build` in /);
});

test("RINDLE_ROOM_NATIVE_PATH and RINDLE_ROOM_NATIVE_BUILD=debug bypass the search", () => {
  const dir = installed({ prebuilt: true, local: true });
  fs.writeFileSync(path.join(dir, "rindle_room.debug.node"), "x");
  assert.equal(load(dir, undefined, { RINDLE_ROOM_NATIVE_BUILD: "debug" }).from, "debug");
  const file = path.join(dir, "rindle_room.node");
  const got = load(dir, undefined, { RINDLE_ROOM_NATIVE_PATH: file });
  assert.deepEqual([got.from, got.file], ["path", file]);
  assert.throws(
    () => load(dir, undefined, { RINDLE_ROOM_NATIVE_PATH: path.join(dir, "nope.node") }),
    /native addon .*nope\.node is missing/,
  );
});
