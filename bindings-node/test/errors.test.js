"use strict";
// Errors, not crashes: engine errors are JS Errors with a stable `code` and the core's
// message verbatim; wrong argument types are TypeErrors; a freed room throws; a panic
// is caught and retires the room; token refusals are RoomTokenErrors with `reason`.
const test = require("node:test");
const assert = require("node:assert/strict");

const { WasmRoom, mintRoomToken, verifyRoomToken, scopeSpecsHash, RoomTokenError } =
  require("../index.js");
const { PARAMS } = require("./support/replay.js");
const { HELLO, SNAPSHOT, batch } = require("./support/fixtures.js");

function liveRoom() {
  const room = WasmRoom.open(JSON.stringify(HELLO), 30_000);
  room.apply(JSON.stringify(SNAPSHOT));
  return room;
}

function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail("expected a throw");
}

test("an engine error carries the core's code and message", () => {
  const room = liveRoom();
  room.enableWrites('["slide"]');
  const gap = thrown(() => room.beginMutation("c1", 3));
  assert.ok(gap instanceof Error);
  assert.ok(!(gap instanceof TypeError));
  assert.equal(gap.code, "MUTATION_GAP");
  // The exact text the shell forwards on an error frame (and the client keys on).
  assert.match(gap.message, /^mutation gap for c1/);
  assert.equal(String(gap), `Error: ${gap.message}`);

  const malformed = thrown(() => room.apply("{not json"));
  assert.equal(malformed.code, "MALFORMED_INPUT");
  assert.match(malformed.message, /^malformed upstream batch/);

  const unsupported = thrown(() => room.subscribe("s", 1, '{"table":"nope"}', 0));
  assert.equal(unsupported.code, "UNSUPPORTED_QUERY");
  assert.match(unsupported.message, /^subscribe: Query\(UnknownTable \{ table: "nope" \}\)$/);

  const range = thrown(() => room.sweep(-1));
  assert.equal(range.code, "INVALID_ARGUMENT");

  const hello = thrown(() => WasmRoom.open('{"epoch":1}', 0));
  assert.equal(hello.code, "INVALID_HELLO");

  // The room stays usable after refused calls.
  assert.equal(room.isLive(), true);
  assert.equal(room.beginMutation("c1", 1), '{"begin":"tx"}');
  room.free();
});

test("a poisoning apply throws POISONED and the room reports it", () => {
  const room = liveRoom();
  const dup = batch(1, [{ table: "deck", op: "add", row: ["d1", "again"] }], 101);
  const e = thrown(() => room.apply(JSON.stringify(dup)));
  assert.equal(e.code, "POISONED");
  assert.equal(room.isPoisoned(), true);
  assert.equal(room.commitAll(), "[]");
  assert.equal(thrown(() => room.subscribe("s", 1, '{"table":"deck"}', 0)).code, "NOT_LIVE");
  room.free();
});

/** A value of the wrong type for each parameter kind. */
const WRONG = { text: 42, number: "1", json: { table: "deck" }, optjson: 7 };

test("every method throws a TypeError naming the parameter for a wrong type", () => {
  for (const [method, kinds] of Object.entries(PARAMS)) {
    if (["mintRoomToken", "verifyRoomToken", "scopeSpecsHash"].includes(method)) continue;
    kinds.forEach((kind, i) => {
      const room = liveRoom();
      const args = kinds.map((k) => (k === "number" ? 1 : k === "text" ? "x" : "[]"));
      args[i] = WRONG[kind];
      const call = method === "open" ? () => WasmRoom.open(...args) : () => room[method](...args);
      const e = thrown(call);
      assert.ok(e instanceof TypeError, `${method} arg ${i}: ${e}`);
      assert.equal(e.code, "ERR_INVALID_ARG_TYPE");
      assert.match(e.message, new RegExp(`^WasmRoom\\.${method}: \`\\w+\` must be `));
      assert.equal(room.isLive(), true, `${method} left the room usable`);
      room.free();
    });
  }
});

test("missing required arguments are TypeErrors too; optional ones take null", () => {
  const room = liveRoom();
  const e = thrown(() => room.apply());
  assert.ok(e instanceof TypeError);
  assert.equal(e.message, "WasmRoom.apply: `batch_json` must be a string, got undefined");
  assert.ok(thrown(() => room.subscribe("s", 1)) instanceof TypeError);
  assert.ok(thrown(() => room.unsubscribe(null, 0)) instanceof TypeError);
  assert.ok(thrown(() => room.rejectMutation(1)) instanceof TypeError);
  room.enableWrites('["slide"]');
  assert.equal(room.beginMutation("c1", 1, null, null), '{"begin":"tx"}');
  assert.equal(room.rejectMutation(null, null), undefined);
  room.free();
});

test("a freed room throws ROOM_FREED from every method; free is idempotent", () => {
  const room = liveRoom();
  room.free();
  room.free();
  for (const [method, kinds] of Object.entries(PARAMS)) {
    if (["open", "mintRoomToken", "verifyRoomToken", "scopeSpecsHash"].includes(method)) continue;
    const args = kinds.map((k) => (k === "number" ? 1 : k === "text" ? "x" : "[]"));
    const e = thrown(() => room[method](...args));
    assert.equal(e.code, "ROOM_FREED", method);
    assert.match(e.message, new RegExp(`^WasmRoom\\.${method}: the room was freed`));
  }
});

test("methods refuse a `this` that is not a room; the constructor is private", () => {
  const room = liveRoom();
  for (const self of [{}, null, undefined, 42, Object.create(WasmRoom.prototype)]) {
    // V8 refuses a foreign receiver itself ("Illegal invocation"); the room's own type
    // tag check backs it up on runtimes that do not.
    const e = thrown(() => WasmRoom.prototype.headCv.call(self));
    assert.ok(e instanceof TypeError, String(e));
    assert.match(e.message, /Illegal invocation|`this` is not a room/);
  }
  const ctor = thrown(() => new WasmRoom());
  assert.ok(ctor instanceof TypeError);
  assert.equal(ctor.code, "ERR_ILLEGAL_CONSTRUCTOR");
  assert.match(ctor.message, /WasmRoom\.open/);
  class Sub extends WasmRoom {}
  assert.throws(() => new Sub(), TypeError);
  assert.equal(room.headCv(), 100); // the snapshot's cv
  room.free();
});

test("open works detached from the class, as a plain function", () => {
  const open = WasmRoom.open;
  const room = open(JSON.stringify(HELLO), 0);
  assert.ok(room instanceof WasmRoom);
  assert.deepEqual(Object.keys(room), []);
  room.free();
});

test("rooms that are never freed are reclaimed by the garbage collector", () => {
  const script = `
    const { WasmRoom } = require("./index.js");
    const { HELLO, SNAPSHOT } = require("./test/support/fixtures.js");
    for (let i = 0; i < 300; i++) {
      const room = WasmRoom.open(JSON.stringify(HELLO), 0);
      room.apply(JSON.stringify(SNAPSHOT));
    }
    global.gc();
    setImmediate(() => { global.gc(); console.log("ok"); });
  `;
  const r = require("node:child_process").spawnSync(
    process.execPath,
    ["--expose-gc", "-e", script],
    { cwd: require("node:path").join(__dirname, ".."), encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "ok");
});

test("[Symbol.dispose] frees the room", () => {
  const room = liveRoom();
  room[Symbol.dispose]();
  assert.equal(thrown(() => room.headCv()).code, "ROOM_FREED");
});

test("a panic is caught, becomes an Error, and retires the room", (t) => {
  const room = liveRoom();
  if (typeof room.__panicForTests !== "function") {
    room.free();
    t.skip("the panic hook exists in debug builds only");
    return;
  }
  const e = thrown(() => room.__panicForTests());
  assert.ok(e instanceof Error);
  assert.equal(e.code, "PANIC");
  assert.match(e.message, /the room panicked .*deliberate panic/);
  const later = thrown(() => room.headCv());
  assert.equal(later.code, "PANIC");
  assert.match(later.message, /an earlier call on this room panicked/);
  room.free();
  assert.equal(thrown(() => room.headCv()).code, "ROOM_FREED");
  // Other rooms are unaffected.
  const other = liveRoom();
  assert.equal(other.isLive(), true);
  other.free();
});

test("token refusals reject with RoomTokenError and its reason", async () => {
  const keys = { k1: "secret-one" };
  const token = await mintRoomToken({
    doc: "d1",
    ast: { table: "deck" },
    sub: "u1",
    kid: "k1",
    key: "secret-one",
    ttlMs: 1000,
    now: 10_000,
  });
  const cases = [
    ["rt1.x", { doc: "d1", keys, now: 10_000 }, "malformed"],
    [token, { doc: "d1", keys: {}, now: 10_000 }, "unknown key"],
    [token, { doc: "d1", keys: { k1: "other" }, now: 10_000 }, "bad signature"],
    [token, { doc: "d2", keys, now: 10_000 }, "wrong document"],
    [token, { doc: "d1", keys, now: 11_000 }, "expired"],
  ];
  for (const [tok, opts, reason] of cases) {
    await assert.rejects(verifyRoomToken(tok, opts), (e) => {
      assert.ok(e instanceof RoomTokenError, String(e));
      assert.ok(e instanceof Error);
      assert.equal(e.reason, reason);
      assert.equal(e.message, `lease token refused: ${reason}`);
      assert.equal(e.code, "TOKEN_REFUSED");
      return true;
    });
  }
  // `now` defaults to Date.now(): a token minted at 10 s after the epoch is long expired.
  await assert.rejects(verifyRoomToken(token, { doc: "d1", keys }), { reason: "expired" });
});

test("token helpers refuse wrong argument types with TypeErrors", async () => {
  await assert.rejects(mintRoomToken(), TypeError);
  await assert.rejects(mintRoomToken("opts"), TypeError);
  await assert.rejects(verifyRoomToken(42, { doc: "d", keys: {} }), TypeError);
  await assert.rejects(verifyRoomToken("rt1.a.b", null), TypeError);
  assert.throws(() => scopeSpecsHash(undefined), TypeError);
  // A mistyped option is the core's refusal, not a crash.
  await assert.rejects(
    mintRoomToken({ doc: 1, ast: null, sub: "u", kid: "k", key: "s", ttlMs: 1, now: 1 }),
    (e) => e.code === "INVALID_ARGUMENT" && /`doc` must be a string/.test(e.message),
  );
});
