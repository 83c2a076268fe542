// The journals (memoryJournal, the durable fileJournal: fsync, checksums, torn-tail
// recovery, corruption refusal), journalEntryOutcome, httpAuthority's result mapping,
// and the keyed MutationTx over the native room.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import {
  WasmRoom,
  fatalAuthorityError,
  fileJournal,
  httpAuthority,
  journalEntryOutcome,
  memoryJournal,
} from "@rindle/room-native";

const require = createRequire(import.meta.url);
const { mutationTx, shapesOf, assertSyncMutatorReturn } = require("../../shell/mutation-tx.js");
const { normalizedFp } = await import("./support/fakes.mjs");

const entry = (mid, extra = {}) => ({ clientID: "c1", mid, name: "addNote", args: { id: mid }, sub: "u1", ...extra });

function tmpFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-journal-"));
  return { dir, file: path.join(dir, "journal") };
}

async function exercise(journal) {
  await journal.append([entry(1, { outcome: "applied" }), entry(2, { outcome: "deopt", rejected: true })]);
  await journal.appendFlush({ seq: 1, epoch: 3, body: '{"a":1}' });
  await journal.appendFlush({ seq: 2, epoch: 3, body: '{"a":2}' });
  await journal.confirmFlush(1);
  await journal.append([entry(3, { args: undefined })]);
}

test("memoryJournal keeps entries in order and the unconfirmed flushes", async () => {
  const j = memoryJournal();
  assert.deepEqual(await j.replayFlushes(), { records: [], maxSeq: 0 });
  await exercise(j);
  const all = await j.replay();
  assert.deepEqual(all.map((e) => e.mid), [1, 2, 3]);
  assert.deepEqual(all.map(journalEntryOutcome), ["applied", "deopt", "applied"]);
  assert.deepEqual(await j.replayFlushes(), { records: [{ seq: 2, epoch: 3, body: '{"a":2}' }], maxSeq: 2 });
  // Replay hands out copies: the caller cannot rewrite history.
  all[0].mid = 99;
  assert.equal((await j.replay())[0].mid, 1);
});

test("journalEntryOutcome reads outcome, then the legacy flag, else applied", () => {
  assert.equal(journalEntryOutcome(entry(1)), "applied");
  assert.equal(journalEntryOutcome(entry(1, { rejected: true })), "rejected");
  assert.equal(journalEntryOutcome(entry(1, { outcome: "deopt", rejected: true })), "deopt");
  assert.equal(journalEntryOutcome(entry(1, { outcome: "applied" })), "applied");
});

test("fileJournal survives a reopen with the same entries and flushes", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await exercise(j);
  await j.close();
  const again = fileJournal(file);
  const all = await again.replay();
  assert.deepEqual(all.map((e) => [e.mid, journalEntryOutcome(e)]), [[1, "applied"], [2, "deopt"], [3, "applied"]]);
  assert.deepEqual(all[0], { clientID: "c1", mid: 1, name: "addNote", args: { id: 1 }, sub: "u1", outcome: "applied" });
  assert.equal("args" in all[2] ? all[2].args : undefined, undefined);
  assert.deepEqual(await again.replayFlushes(), { records: [{ seq: 2, epoch: 3, body: '{"a":2}' }], maxSeq: 2 });
  // Every line is `<crc32> <json>`.
  const lines = fs.readFileSync(file, "utf8").trimEnd().split("\n");
  assert.equal(lines.length, 1 + 2 + 2 + 1 + 1);
  for (const l of lines) assert.match(l, /^[0-9a-f]{8} \{/);
  assert.equal(again.size(), fs.statSync(file).size);
  await again.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("fileJournal truncates a torn tail and keeps appending after it", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await exercise(j);
  await j.close();
  const good = fs.statSync(file).size;
  for (const tail of [
    '0badc0de {"k":"m","e":{"clientID":"c1","mi', // cut mid-record, no newline
    '12345678 {"k":"m","e":{}}\n', // a whole line whose checksum is wrong
    "\0\0\0\0\0\0\0\0\0\0\0\0\n\0\0\0\0", // a zero-filled hole (a lost page)
  ]) {
    fs.appendFileSync(file, tail);
    const r = fileJournal(file);
    assert.equal(fs.statSync(file).size, good, `truncated after ${JSON.stringify(tail)}`);
    assert.deepEqual((await r.replay()).map((e) => e.mid), [1, 2, 3]);
    await r.close();
  }
  const r = fileJournal(file);
  await r.append([entry(4)]);
  await r.close();
  assert.deepEqual((await fileJournal(file).replay()).map((e) => e.mid), [1, 2, 3, 4]);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("fileJournal refuses damage followed by valid records, and foreign files", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await exercise(j);
  await j.close();
  const text = fs.readFileSync(file, "utf8").split("\n");
  // Flip one character inside the second record: valid records follow it.
  text[1] = text[1].replace('"c1"', '"c9"');
  fs.writeFileSync(file, text.join("\n"));
  assert.throws(() => fileJournal(file), /is corrupt: the record at byte \d+ is damaged but valid records follow it/);
  const foreign = path.join(dir, "foreign");
  fs.writeFileSync(foreign, "hello\nworld\n");
  assert.throws(() => fileJournal(foreign), /is not a rindle-room-node-journal file/);
  assert.equal(fs.readFileSync(foreign, "utf8"), "hello\nworld\n", "someone else's file is left alone");
  // A header cut short by a crash (no newline yet) is a torn tail: the journal restarts.
  const torn = path.join(dir, "torn");
  fs.writeFileSync(torn, '1234abcd {"k":"h","form');
  const fresh = fileJournal(torn);
  assert.deepEqual(await fresh.replay(), []);
  await fresh.append([entry(1)]);
  await fresh.close();
  assert.deepEqual((await fileJournal(torn).replay()).map((e) => e.mid), [1]);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("fileJournal serializes concurrent appends in call order", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await Promise.all(Array.from({ length: 50 }, (_, i) => j.append([entry(i + 1)])));
  assert.deepEqual((await j.replay()).map((e) => e.mid), Array.from({ length: 50 }, (_, i) => i + 1));
  await j.close();
  await assert.rejects(j.append([entry(51)]), /is closed/);
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A fetch double answering `status` with `body`, recording the calls. */
function fakeFetch(status, body, calls = []) {
  const f = async (url, init) => {
    calls.push({ url, init });
    return { ok: status >= 200 && status < 300, status, text: async () => body };
  };
  f.calls = calls;
  return f;
}

test("httpAuthority maps the authority's answers to results, retries and fatal errors", async () => {
  const urls = { applyUrl: "http://a/apply", claimUrl: "http://a/claim", lmidsUrl: "http://a/lmids" };
  const auth = (status, body) => httpAuthority({ ...urls, headers: { "x-cred": "c" }, fetch: fakeFetch(status, body) });
  assert.deepEqual(await auth(200, '{"applied":true,"cv":7}').applyRowChangeTxn("{}"), { kind: "ok", applied: true, cv: 7 });
  assert.deepEqual(await auth(200, '{"applied":false}').applyRowChangeTxn("{}"), { kind: "ok", applied: false });
  assert.deepEqual(await auth(409, '{"error":"fenced","currentEpoch":4}').applyRowChangeTxn("{}"), {
    kind: "fenced",
    currentEpoch: 4,
  });
  const conflicts = [{ table: "note", pk: [1], current: null }];
  assert.deepEqual(await auth(409, JSON.stringify({ error: "conflict", conflicts })).applyRowChangeTxn("{}"), {
    kind: "conflict",
    conflicts,
  });
  await assert.rejects(auth(409, '{"error":"huh"}').applyRowChangeTxn("{}"), (e) => e.fatal === true);
  await assert.rejects(
    auth(500, '{"error":"batch identity mismatch: same flush id, different body"}').applyRowChangeTxn("{}"),
    (e) => e.fatal === true,
  );
  await assert.rejects(auth(503, "down").applyRowChangeTxn("{}"), (e) => e.fatal !== true && /503/.test(e.message));
  const calls = [];
  const a = httpAuthority({ ...urls, headers: { "x-cred": "c" }, fetch: fakeFetch(200, '{"epoch":3,"lmids":{"c1":2,"c2":0}}', calls) });
  assert.equal(await a.claimEpoch("doc/1"), 3);
  assert.deepEqual(await a.lmids("doc/1", ["c1", "c2"]), { c1: 2, c2: 0 });
  await a.applyRowChangeTxn('{"exact":"body"}');
  assert.deepEqual(calls.map((c) => [c.url, c.init.body]), [
    ["http://a/claim", '{"doc":"doc/1"}'],
    ["http://a/lmids", '{"doc":"doc/1","clients":["c1","c2"]}'],
    ["http://a/apply", '{"exact":"body"}'],
  ]);
  assert.equal(calls[0].init.headers["x-cred"], "c");
  assert.equal(calls[0].init.method, "POST");
  const fatal = fatalAuthorityError("boom");
  assert.ok(fatal instanceof Error);
  assert.equal(fatal.fatal, true);
  assert.throws(() => httpAuthority({ applyUrl: "x" }), TypeError);
});

const HELLO = {
  epoch: 1,
  comparatorVersion: 2,
  tables: [
    { name: "note", columns: ["id", "body", "owner"], primaryKey: [0] },
    { name: "pair", columns: ["a", "b", "v"], primaryKey: [1, 0] },
  ],
};
HELLO.normalizedFp = normalizedFp(HELLO.tables);

function writableRoom() {
  const room = WasmRoom.open(JSON.stringify(HELLO), 30_000);
  room.apply(
    JSON.stringify({
      epoch: 1,
      seq: 0,
      normalizedFp: HELLO.normalizedFp,
      cv: 1,
      ops: [
        { table: "note", op: "add", row: [1, "one", "u1"] },
        { table: "pair", op: "add", row: ["x", 2, 0] },
      ],
    }),
  );
  room.enableWrites(JSON.stringify(["note", "pair"]));
  return room;
}

/** Runs `fn(tx)` in a transaction for mid `mid`; returns the committed rows of note. */
function inTx(room, mid, fn) {
  room.beginMutation("c1", mid, "t", "{}");
  let open = true;
  try {
    fn(mutationTx(room, shapesOf(HELLO), () => open));
  } catch (e) {
    open = false;
    room.rejectMutation("rejected", String(e.message));
    throw e;
  }
  open = false;
  return JSON.parse(room.commitMutation());
}

test("the keyed MutationTx: reads, full-row writes, partial updates, no-op misses", () => {
  const room = writableRoom();
  inTx(room, 1, (tx) => {
    assert.deepEqual(tx.row("note", { id: 1 }), { id: 1, body: "one", owner: "u1" });
    assert.equal(tx.row("note", { id: 9 }), undefined);
    tx.insert("note", { id: 2, body: { rich: true }, owner: null });
    assert.deepEqual(tx.get("note", [2]), [2, '{"rich":true}', null]); // objects → JSON text
    tx.update("note", { id: 1, body: "uno" });
    tx.update("note", { id: 9, body: "nobody" }); // a missing row: no-op
    tx.delete("note", { id: 8 }); // a missing row: no-op
    tx.upsert("note", { id: 3, body: "three", owner: "u3" });
    tx.upsert("note", { id: 3, body: "tres", owner: "u3" });
    tx.edit("note", [3, "tres", "u3"], [undefined, undefined, "u4"]);
    // Composite primary key in primaryKey order (b, a).
    assert.deepEqual(tx.row("pair", { a: "x", b: 2 }), { a: "x", b: 2, v: 0 });
    tx.update("pair", { a: "x", b: 2, v: 5 });
    assert.deepEqual(tx.get("pair", [2, "x"]), ["x", 2, 5]);
    tx.add("pair", ["y", 3, 1]);
    tx.remove("pair", ["y", 3, 1]); // a full row: its pk is taken
    tx.delete("note", { id: 2 });
  });
  inTx(room, 2, (tx) => {
    assert.deepEqual(tx.get("note", [1]), [1, "uno", "u1"]);
    assert.deepEqual(tx.get("note", [3]), [3, "tres", "u4"]);
    assert.equal(tx.get("note", [2]), undefined);
    assert.equal(tx.get("pair", [3, "y"]), undefined);
  });
  room.free();
});

test("the keyed MutationTx refuses with the Rust keyed layer's messages", () => {
  const room = writableRoom();
  let mid = 0;
  const refuses = (fn, message) => assert.throws(() => inTx(room, ++mid, fn), { message });
  refuses((tx) => tx.insert("note", { id: 5, body: "b" }), 'insert: a full "note" row must name column "owner"');
  refuses((tx) => tx.insert("note", { id: 5, body: "b", owner: "o", color: 1 }), 'insert: "note" has no column "color"');
  refuses((tx) => tx.update("note", { body: "b" }), 'update: "note" needs primary-key column "id"');
  refuses((tx) => tx.delete("note", { nope: 1 }), 'delete: "note" has no column "nope"');
  refuses((tx) => tx.row("ghost", { id: 1 }), 'row: table "ghost" is not readable by mutators');
  refuses((tx) => tx.edit("note", [1, "a"], [1, "b"]), 'edit: "note" rows have 3 columns');
  refuses((tx) => tx.edit("note", [9, "a", "b"], [9, "b", "c"]), 'edit: no "note" row with that primary key');
  refuses((tx) => tx.edit("note", [1, "one", "u1"], [2, "one", "u1"]), 'edit: the primary key of a "note" row cannot change');
  assert.throws(() => inTx(room, ++mid, (tx) => tx.query({ ast: () => ({}) })), { code: "ENVIRONMENT" });
  // A handle used after its mutator returned is dead.
  let leaked;
  inTx(room, ++mid, (tx) => {
    leaked = tx;
  });
  assert.throws(() => leaked.get("note", [1]), /this transaction is over/);
  room.free();
});

test("assertSyncMutatorReturn refuses promises and generators, accepts plain values", () => {
  assert.doesNotThrow(() => assertSyncMutatorReturn(undefined, "m"));
  assert.doesNotThrow(() => assertSyncMutatorReturn(5, "m"));
  assert.doesNotThrow(() => assertSyncMutatorReturn({ then: 1 }, "m"));
  assert.throws(() => assertSyncMutatorReturn(Promise.reject(new Error("x")), "m"), /returned a promise/);
  assert.throws(() => assertSyncMutatorReturn((function* () {})(), "m"), /returned a generator/);
});
