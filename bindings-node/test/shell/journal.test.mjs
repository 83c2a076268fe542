// The journals (memoryJournal, the durable fileJournal — the server's own format and
// implementation: fsync, checksums, torn-tail recovery, corruption and foreign-file
// refusal) over opaque records, journalEntryOutcome and compactJournalRecords,
// httpAuthority's result mapping, and the keyed
// MutationTx (the core's keyed layer) as a JS mutator sees it.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import {
  compactJournalRecords,
  createRoomShell,
  fatalAuthorityError,
  fileJournal,
  httpAuthority,
  journalEntryOutcome,
  memoryJournal,
} from "@rindle/room-native";

const require = createRequire(import.meta.url);
const { assertSyncMutatorReturn } = require("../../shell/shell.js");
const { FakeRindled } = await import("./support/fakes.mjs");
const { startLive, subscriber, push, lmidOf, shellOptions } = await import("./support/harness.mjs");

const entry = (mid, extra = {}) => ({ clientID: "c1", mid, name: "addNote", args: { id: mid }, sub: "u1", ...extra });
/** An opaque record as the room would produce it (an entry's JSON text is one). */
const rec = (mid, extra = {}) => JSON.stringify(entry(mid, extra));
/** The mid inside a record (the tests may look: records are JSON text). */
const midOf = (r) => JSON.parse(r).mid;

function tmpFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-journal-"));
  return { dir, file: path.join(dir, "journal") };
}

async function exercise(journal) {
  await journal.append([rec(1, { outcome: "applied" }), rec(2, { outcome: "deopt", rejected: true })]);
  await journal.appendFlush({ seq: 1, epoch: 3, body: '{"a":1}' });
  await journal.appendFlush({ seq: 2, epoch: 3, body: '{"a":2}' });
  await journal.confirmFlush(1);
  await journal.append([rec(3, { args: undefined })]);
}

test("memoryJournal keeps its records in order, as they are, and the unconfirmed flushes", async () => {
  const j = memoryJournal();
  assert.deepEqual(await j.replayFlushes(), { records: [], maxSeq: 0 });
  await exercise(j);
  const all = await j.replay();
  assert.deepEqual(all, [rec(1, { outcome: "applied" }), rec(2, { outcome: "deopt", rejected: true }), rec(3, { args: undefined })]);
  assert.deepEqual(all.map(journalEntryOutcome), ["applied", "deopt", "applied"]);
  assert.deepEqual(await j.replayFlushes(), { records: [{ seq: 2, epoch: 3, body: '{"a":2}' }], maxSeq: 2 });
  // Replay hands out a fresh list: the caller cannot rewrite history.
  all.length = 0;
  assert.equal((await j.replay()).length, 3);
});

test("journalEntryOutcome reads outcome, then the legacy flag, else applied; an unknown outcome throws", () => {
  for (const read of [entry, rec]) {
    assert.equal(journalEntryOutcome(read(1)), "applied");
    assert.equal(journalEntryOutcome(read(1, { rejected: true })), "rejected");
    assert.equal(journalEntryOutcome(read(1, { outcome: "deopt", rejected: true })), "deopt");
    assert.equal(journalEntryOutcome(read(1, { outcome: "applied" })), "applied");
    assert.throws(() => journalEntryOutcome(read(1, { outcome: "maybe", rejected: true })), /unknown outcome "maybe"/);
  }
});

test("fileJournal survives a reopen with the same entries and flushes", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await exercise(j);
  await j.close();
  const again = fileJournal(file);
  const all = await again.replay();
  assert.ok(all.every((r) => typeof r === "string"), "opaque records");
  assert.deepEqual(all.map((r) => [midOf(r), journalEntryOutcome(r)]), [[1, "applied"], [2, "deopt"], [3, "applied"]]);
  assert.deepEqual(JSON.parse(all[0]), { clientID: "c1", mid: 1, name: "addNote", args: { id: 1 }, sub: "u1", outcome: "applied" });
  assert.equal(JSON.parse(all[2]).args, null, "absent args are journaled as null");
  assert.deepEqual(await again.replayFlushes(), { records: [{ seq: 2, epoch: 3, body: '{"a":2}' }], maxSeq: 2 });
  // The server's format: the 16-byte file header, then records (magic 0xB7, version 1,
  // then kind and length).
  const bytes = fs.readFileSync(file);
  assert.deepEqual(bytes.subarray(0, 16), Buffer.from("\x89RINDLE-JOURNAL\x01", "latin1"));
  assert.equal(bytes[16], 0xb7);
  assert.equal(bytes[17], 1);
  assert.deepEqual(again.recovered(), { records: 6, truncatedBytes: 0 });
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
    Buffer.from([0xb7, 1, 1, 0, 40, 0, 0, 0, 1, 2]), // a record cut short
    Buffer.from([0xb7, 1, 1]), // a record header cut short
    Buffer.alloc(4096), // a zero-filled hole (a lost page)
  ]) {
    fs.appendFileSync(file, tail);
    const r = fileJournal(file);
    assert.equal(fs.statSync(file).size, good, `truncated after ${tail.length} bytes`);
    assert.equal(r.recovered().truncatedBytes, tail.length);
    assert.deepEqual((await r.replay()).map(midOf), [1, 2, 3]);
    await r.close();
  }
  // Bytes no crash leaves are damage: refused, the file left as it is.
  fs.appendFileSync(file, Buffer.from("garbage after a crash"));
  assert.throws(() => fileJournal(file), /fails its checksum|is corrupt/);
  fs.truncateSync(file, good);
  const r = fileJournal(file);
  await r.append([rec(4)]);
  await r.close();
  assert.deepEqual((await fileJournal(file).replay()).map(midOf), [1, 2, 3, 4]);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("fileJournal refuses damage followed by valid records, and foreign files, untouched", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await exercise(j);
  await j.close();
  const bytes = fs.readFileSync(file);
  bytes[46] ^= 0x04; // inside the first record: valid records follow it
  fs.writeFileSync(file, bytes);
  assert.throws(() => fileJournal(file), /is corrupt: damaged record at byte 16 .* followed by 5 intact record\(s\)/);
  assert.deepEqual(fs.readFileSync(file), bytes, "the damaged journal is left as it is");
  const foreign = path.join(dir, "foreign");
  fs.writeFileSync(foreign, "hello\nworld\n");
  assert.throws(() => fileJournal(foreign), /not a rindle-room journal/);
  assert.equal(fs.readFileSync(foreign, "utf8"), "hello\nworld\n", "someone else's file is left alone");
  fs.rmSync(dir, { recursive: true, force: true });
});

test("fileJournal serializes concurrent appends in call order", async () => {
  const { dir, file } = tmpFile();
  const j = fileJournal(file);
  await Promise.all(Array.from({ length: 50 }, (_, i) => j.append([rec(i + 1)])));
  assert.deepEqual((await j.replay()).map(midOf), Array.from({ length: 50 }, (_, i) => i + 1));
  await j.close();
  await assert.rejects(j.append([rec(51)]), /is closed/);
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

const TX_TABLES = [
  { name: "note", columns: ["id", "body", "owner"], primaryKey: [0] },
  { name: "pair", columns: ["a", "b", "v"], primaryKey: [1, 0] },
];

/** A live shell whose mutators are `mutators`, over `note` and `pair` (composite pk in
 *  primaryKey order b, a), with client c1 (subject u1) subscribed; `run(name)` pushes
 *  the next mid of `name` and resolves its ack or its outcome. */
async function txShell(mutators) {
  const rindled = await FakeRindled.start(TX_TABLES, [
    ["note", [1, "one", "u1"]],
    ["pair", ["x", 2, 0]],
  ]);
  const shell = await startLive(rindled, { mutators, ownedTables: ["note", "pair"] });
  const c = await subscriber(shell, "c1", "u1", true);
  let mid = 0;
  const run = (name) => {
    const m = ++mid;
    c.send(push("c1", m, name, {}));
    return c.until(`mid ${m}`, (v) => lmidOf(v) === m || (v.t === "mutationOutcome" && v.mid === m));
  };
  const done = async () => {
    c.close();
    await shell.close();
    await rindled.close();
  };
  return { run, done };
}

test("the lease mint's body and reply are the core's; bad upstream options fail at creation", async () => {
  const native = require("../../binding.js");
  assert.equal(native.materializeBody('{"table":"note"}', 60000), '{"ast":{"table":"note"},"leaseTtlMs":60000}');
  assert.equal(native.materializeBody('{"table":"note"}', null), '{"ast":{"table":"note"}}');
  assert.deepEqual(native.leaseReply(200, '{"leaseToken":"t1"}'), ["t1", null]);
  assert.deepEqual(native.leaseReply(500, "boom"), [null, "upstream /materialize failed: 500 boom"]);
  assert.deepEqual(native.leaseReply(200, "{}"), [null, "upstream /materialize returned no leaseToken"]);
  const rindled = await FakeRindled.notes();
  const base = shellOptions(rindled);
  const bad = async (up) => createRoomShell({ ...base, upstream: { ...base.upstream, ...up } });
  await assert.rejects(bad({ leaseTtlMs: -5 }), (e) => e instanceof TypeError && /leaseTtlMs/.test(e.message));
  await assert.rejects(bad({ footprintAst: undefined }), (e) => e instanceof TypeError && /footprintAst/.test(e.message));
  await rindled.close();
});

test("the keyed MutationTx: reads, full-row writes, partial updates, no-op misses", async () => {
  const seen = [];
  const { run, done } = await txShell({
    write(tx) {
      seen.push(tx.row("note", { id: 1 }), tx.row("note", { id: 9 }));
      tx.insert("note", { id: 2, body: { rich: true }, owner: null });
      seen.push(tx.get("note", [2])); // objects → JSON text
      tx.update("note", { id: 1, body: "uno" });
      tx.update("note", { id: 9, body: "nobody" }); // a missing row: no-op
      tx.delete("note", { id: 8 }); // a missing row: no-op
      tx.upsert("note", { id: 3, body: "three", owner: "u3" });
      tx.upsert("note", { id: 3, body: "tres", owner: "u3" });
      tx.edit("note", [3, "tres", "u3"], [undefined, undefined, "u4"]);
      seen.push(tx.row("pair", { a: "x", b: 2 }));
      tx.update("pair", { a: "x", b: 2, v: 5 });
      seen.push(tx.get("pair", [2, "x"]));
      tx.add("pair", ["y", 3, 1]);
      tx.remove("pair", ["y", 3, 1]); // a full row: its pk is taken
      tx.delete("note", { id: 2 });
    },
    read(tx) {
      seen.push(tx.get("note", [1]), tx.get("note", [3]), tx.get("note", [2]), tx.get("pair", [3, "y"]));
    },
  });
  assert.equal(lmidOf(await run("write")), 1, "write applied");
  assert.equal(lmidOf(await run("read")), 2, "read applied");
  assert.deepEqual(seen, [
    { id: 1, body: "one", owner: "u1" },
    undefined,
    [2, '{"rich":true}', null],
    { a: "x", b: 2, v: 0 },
    ["x", 2, 5],
    [1, "uno", "u1"],
    [3, "tres", "u4"],
    undefined,
    undefined,
  ]);
  await done();
});

test("the keyed MutationTx refuses with the Rust keyed layer's messages", async () => {
  const refusals = [];
  const attempt = (fn) => (tx) => {
    try {
      fn(tx);
    } catch (e) {
      refusals.push([e.code, e.message]);
      throw e;
    }
  };
  let leaked;
  const { run, done } = await txShell({
    a: attempt((tx) => tx.insert("note", { id: 5, body: "b" })),
    b: attempt((tx) => tx.insert("note", { id: 5, body: "b", owner: "o", color: 1 })),
    c: attempt((tx) => tx.update("note", { body: "b" })),
    d: attempt((tx) => tx.delete("note", { nope: 1 })),
    e: attempt((tx) => tx.row("ghost", { id: 1 })),
    f: attempt((tx) => tx.edit("note", [1, "a"], [1, "b"])),
    g: attempt((tx) => tx.edit("note", [9, "a", "b"], [9, "b", "c"])),
    h: attempt((tx) => tx.edit("note", [1, "one", "u1"], [2, "one", "u1"])),
    q: (tx) => tx.query({ ast: () => ({}) }),
    leak: (tx) => {
      leaked = tx;
    },
  });
  for (const name of ["a", "b", "c", "d", "e", "f", "g", "h"]) {
    const outcome = await run(name);
    assert.equal(outcome.kind, "rejected", name);
  }
  assert.deepEqual(refusals, [
    ["WRITE_REFUSED", 'insert: a full "note" row must name column "owner"'],
    ["WRITE_REFUSED", 'insert: "note" has no column "color"'],
    ["WRITE_REFUSED", 'update: "note" needs primary-key column "id"'],
    ["WRITE_REFUSED", 'delete: "note" has no column "nope"'],
    ["WRITE_REFUSED", "unknown table `ghost`"],
    ["WRITE_REFUSED", 'edit: "note" rows have 3 columns'],
    ["WRITE_REFUSED", 'edit: no "note" row with that primary key'],
    ["WRITE_REFUSED", 'edit: the primary key of a "note" row cannot change'],
  ]);
  const q = await run("q");
  assert.deepEqual([q.kind, q.reason], ["deopt", "environment"]);
  // A handle used after its mutator returned is dead.
  await run("leak");
  assert.throws(() => leaked.get("note", [1]), /this transaction is over/);
  await done();
});

test("assertSyncMutatorReturn refuses promises and generators, accepts plain values", () => {
  assert.doesNotThrow(() => assertSyncMutatorReturn(undefined, "m"));
  assert.doesNotThrow(() => assertSyncMutatorReturn(5, "m"));
  assert.doesNotThrow(() => assertSyncMutatorReturn({ then: 1 }, "m"));
  assert.throws(() => assertSyncMutatorReturn(Promise.reject(new Error("x")), "m"), /returned a promise/);
  assert.throws(() => assertSyncMutatorReturn((function* () {})(), "m"), /returned a generator/);
});

test("memoryJournal compacts away what a durable lmid covers and keeps the subject bindings", async () => {
  const j = memoryJournal();
  const e = (clientID, mid, sub) => JSON.stringify({ clientID, mid, name: "m", args: null, sub, outcome: "applied" });
  await j.append([e("c1", 1, "u1"), e("c1", 2, "u1"), e("c2", 1, "u2"), e("c1", 3, "u1")]);
  await j.compact({ c1: 2 });
  const bound = [{ clientID: "c1", sub: "u1" }, { clientID: "c2", sub: "u2" }];
  const kept = (await j.replay()).map((r) => JSON.parse(r));
  assert.deepEqual(kept.slice(0, 2), bound, "one binding record per client, in front");
  assert.deepEqual(kept.slice(2).map((x) => [x.clientID, x.mid]), [["c2", 1], ["c1", 3]]);
  await j.compact({ c1: 3, c2: 1 });
  assert.deepEqual((await j.replay()).map((r) => JSON.parse(r)), bound, "a clientID stays bound to its subject");
  assert.equal(j.bindings, undefined, "the room derives the bindings from the records");
});

test("compactJournalRecords reads legacy entry objects and returns opaque records", () => {
  const kept = compactJournalRecords([entry(1), entry(2, { sub: "other" }), rec(3)], { c1: 2 });
  assert.ok(kept.every((r) => typeof r === "string"));
  assert.deepEqual(kept.map((r) => JSON.parse(r)), [
    { clientID: "c1", sub: "u1" },
    { clientID: "c1", mid: 3, name: "addNote", args: { id: 3 }, sub: "u1", outcome: "applied" },
  ]);
  assert.throws(() => compactJournalRecords([rec(1, { outcome: "maybe" })], {}), /unknown outcome "maybe"/);
});
