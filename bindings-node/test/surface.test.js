"use strict";
// The exported surface is @rindle/room 0.9's: the WasmRoom class with every method (same
// names, static `open`, `free`, `[Symbol.dispose]`), `initRoomWasm`, the token helpers,
// `RoomTokenError`, and `NativeRoom` as an alias; in CommonJS and ESM alike, with the
// committed index.d.ts declaring the same names.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const mod = require("../index.js");
const { HELLO, SNAPSHOT } = require("./support/fixtures.js");

const { WasmRoom } = mod;

/** Every instance method of the published `WasmRoom` (plus `free` and the dispose hook). */
const SEED_METHODS = [
  "free",
  "ack",
  "ackedLmid",
  "appliedMid",
  "apply",
  "beginFlush",
  "beginMutation",
  "commitAll",
  "commitMutation",
  "cv",
  "dirtyLen",
  "durableLmid",
  "enableWrites",
  "enableWritesV2",
  "epoch",
  "flushConflict",
  "flushInFlight",
  "flushOk",
  "headCv",
  "isLive",
  "isPoisoned",
  "lmidSubscribe",
  "materializationCount",
  "pendingLen",
  "rejectMutation",
  "seedDurable",
  "subscribe",
  "subscriberCount",
  "sweep",
  "txAdd",
  "txEdit",
  "txGet",
  "txRemove",
  "unsubscribe",
];

const SEED_EXPORTS = [
  "WasmRoom",
  "NativeRoom",
  "initRoomWasm",
  "mintRoomToken",
  "verifyRoomToken",
  "scopeSpecsHash",
  "RoomTokenError",
  // The shell: the published room's createRoomShell, memoryJournal, httpAuthority,
  // fatalAuthorityError, journalEntryOutcome, and this package's durable fileJournal.
  "createRoomShell",
  "memoryJournal",
  "fileJournal",
  "httpAuthority",
  "fatalAuthorityError",
  "journalEntryOutcome",
  // This package's compaction of a host application's journal records.
  "compactJournalRecords",
  // Fleet placement: the reference locateRoom for an API server.
  "locateRoom",
  "rendezvousScore",
  "roomPath",
];

test("WasmRoom has every method the published room lists, and the static open", () => {
  assert.equal(WasmRoom.name, "WasmRoom");
  assert.equal(typeof WasmRoom.open, "function");
  for (const m of SEED_METHODS) {
    assert.equal(typeof WasmRoom.prototype[m], "function", `WasmRoom.prototype.${m}`);
  }
  assert.equal(typeof WasmRoom.prototype[Symbol.dispose], "function");
});

test("WasmRoom has no public method beyond the published ones", () => {
  const extra = Object.getOwnPropertyNames(WasmRoom.prototype).filter(
    (m) => m !== "constructor" && !m.startsWith("__") && !SEED_METHODS.includes(m),
  );
  assert.deepEqual(extra, []);
});

test("the module exports the published names; NativeRoom is WasmRoom", () => {
  assert.deepEqual(Object.keys(mod).sort(), [...SEED_EXPORTS].sort());
  assert.equal(mod.NativeRoom, WasmRoom);
  assert.ok(new mod.RoomTokenError("expired") instanceof Error);
});

test("the constructor is private, as in the wasm class", () => {
  assert.throws(() => new WasmRoom());
});

test("initRoomWasm is an async no-op that accepts the wasm arguments", async () => {
  const p = mod.initRoomWasm();
  assert.ok(p instanceof Promise);
  assert.equal(await p, undefined);
  assert.equal(await mod.initRoomWasm("/some/path/rindle_room_bg.wasm"), undefined);
  assert.equal(await mod.initRoomWasm(new Uint8Array(8)), undefined);
});

test("optional arguments may be omitted, as the published callers do", () => {
  const room = WasmRoom.open(JSON.stringify(HELLO), 30_000);
  assert.equal(room.cv(), undefined);
  room.apply(JSON.stringify(SNAPSHOT));
  assert.equal(room.cv(), 100);
  room.enableWrites(JSON.stringify(["slide"]));
  assert.equal(room.beginMutation("c1", 1), '{"begin":"tx"}');
  assert.equal(room.txGet("slide", '["nope"]'), undefined);
  assert.equal(room.rejectMutation(), undefined);
  assert.equal(room.beginMutation("c1", 2, undefined, undefined), '{"begin":"tx"}');
  room.txEdit("slide", '["s1","d1",7]');
  assert.equal(room.commitMutation(), '{"headCv":101}');
  const flush = room.beginFlush();
  assert.equal(typeof flush, "string");
  assert.equal(room.flushOk(), '{"retired":2,"dirty":0}');
  assert.equal(room.beginFlush(), undefined);
  room.free();
});

test("enableWritesV2 takes the owned set as an optional second argument", () => {
  const specs = [{ table: "slide", writable: { kind: "predicate", joinKeyCols: [] } }];
  for (const owned of [undefined, null, '["slide"]']) {
    const room = WasmRoom.open(JSON.stringify(HELLO), 30_000);
    room.apply(JSON.stringify(SNAPSHOT));
    assert.equal(room.enableWritesV2(JSON.stringify(specs), owned), undefined);
    room.free();
  }
});

test("ESM import gives the same objects as require", async () => {
  const esm = await import("../index.mjs");
  for (const name of SEED_EXPORTS) assert.equal(esm[name], mod[name], name);
  assert.equal(esm.default, mod);
});

test("the package resolves by its own name in both module systems", async () => {
  assert.equal(require("@rindle/room-native"), mod);
  const esm = await import("@rindle/room-native");
  assert.equal(esm.WasmRoom, WasmRoom);
});

test("index.d.ts declares every method and export", () => {
  const dts = fs.readFileSync(path.join(__dirname, "..", "index.d.ts"), "utf8");
  const cls = dts.slice(dts.indexOf("export declare class WasmRoom"));
  const body = cls.slice(0, cls.indexOf("\n}\n"));
  for (const m of SEED_METHODS) {
    assert.match(body, new RegExp(`\\n  ${m}\\(`), `index.d.ts lacks WasmRoom.${m}`);
  }
  assert.match(body, /\n {2}static open\(hello_json: string, idle_ttl_ms: number\): WasmRoom;/);
  assert.match(body, /\n {2}\[Symbol\.dispose\]\(\): void;/);
  for (const name of SEED_EXPORTS) {
    assert.match(dts, new RegExp(`export declare (class|function|const) ${name}\\b`), name);
  }
});

function loadIn(env) {
  return spawnSync(process.execPath, ["-e", 'require("./index.js")'], {
    cwd: path.join(__dirname, ".."),
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
}

test("a missing native file fails with a clear error naming npm run build", () => {
  const r = loadIn({ RINDLE_ROOM_NATIVE_PATH: path.join(__dirname, "no-such-addon.node") });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /native addon .*no-such-addon\.node is missing/);
  assert.match(r.stderr, /npm run build/);
  const bad = loadIn({ RINDLE_ROOM_NATIVE_PATH: "", RINDLE_ROOM_NATIVE_BUILD: "fast" });
  assert.match(bad.stderr, /RINDLE_ROOM_NATIVE_BUILD must be "release" or "debug"/);
});
