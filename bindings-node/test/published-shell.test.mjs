// The published shell on the native room: @rindle/room@0.9.0's own `dist/shell.js`,
// unmodified, loaded a second time with only its `./wasm.js` import pointed at
// @rindle/room-native (the resolve hook in support/published-shell-hook.mjs), runs the
// scenarios below against the fake rindled and the fake authority of test/shell/support.
// Then the same scenarios run on the package as published (its own wasm room), and
// the two runs must show clients the same frames, put the same bodies to the authority
// and journal the same entries.
//
// Every client step ends with a settle round trip (a subscribe by an unknown name,
// answered with a queryError after everything the room sent before it), so a step's
// frames are complete and their count is compared too, without waiting for silence.
// PUBLISHED_SHELL_DUMP=<file> writes what both runs recorded to <file> (JSON).
import test, { after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";

import * as native from "@rindle/room-native";
import * as published from "@rindle/room";
import { FakeAuthority, FakeRindled, track } from "./shell/support/fakes.mjs";
import {
  Client, DOC, KEY, KID, Logs, NOTES, lmidOf, mutators, push, withTimeout,
} from "./shell/support/harness.mjs";

// ---------------------------------------------------------------- the two shells

const NATIVE_QUERY = "?room=native";
const require = createRequire(import.meta.url);
const packageIndex = pathToFileURL(require.resolve("@rindle/room"));
register(new URL("./support/published-shell-hook.mjs", import.meta.url), {
  data: {
    adapterUrl: new URL("./support/native-wasm.mjs", import.meta.url).href,
    shellSuffix: `/dist/shell.js${NATIVE_QUERY}`,
  },
});
const nativeShell = await import(new URL(`./shell.js${NATIVE_QUERY}`, packageIndex).href);

const ROOMS = {
  native: { label: "native room", createRoomShell: nativeShell.createRoomShell, WasmRoom: native.WasmRoom },
  wasm: { label: "wasm room", createRoomShell: published.createRoomShell, WasmRoom: published.WasmRoom },
};

/** What each run recorded, by flavour and scenario. */
const runs = { native: {}, wasm: {} };

// ---------------------------------------------------------------- recording clients

/** The queryId of the settle round trip; the tests never subscribe it otherwise. */
const SETTLE_QID = 99;

/** One scenario's record: every client step's frames, the authority's bodies, the
 *  journal's entries. */
class Transcript {
  constructor() {
    this.steps = [];
    this.bodies = [];
    this.journal = [];
  }

  async connect(name, port) {
    const c = await Client.connect(port);
    c.name = name;
    c.pending = [];
    return c;
  }

  /** Reads `c`'s frames (kept for the step) until one satisfies `pred`; returns it. */
  async waitFor(c, what, pred) {
    for (;;) {
      const f = await c.next().catch((e) => {
        throw new Error(`${c.name} waiting for ${what}: ${e.message}`);
      });
      c.pending.push(f);
      if (pred(f)) return f;
    }
  }

  /** Ends a step of `c`: everything the room sent it so far, recorded and returned. */
  async settle(c, step) {
    c.send({ t: "subscribe", queryId: SETTLE_QID, name: "settle" });
    await this.waitFor(c, "the settle answer", (f) => f.t === "queryError" && f.queryId === SETTLE_QID);
    const frames = c.pending.splice(0);
    frames.pop();
    this.steps.push({ client: c.name, step, frames });
    return frames;
  }

  /** Ends `c` with the room closing it: its last frames and the close, recorded. */
  async closed(c, step) {
    for (;;) {
      const ev = await c.nextEvent();
      if (ev.timeout) throw new Error(`${c.name}: the room never closed the socket`);
      if (ev.frame) c.pending.push(ev.frame);
      if (ev.close) {
        const frames = c.pending.splice(0);
        this.steps.push({ client: c.name, step, frames, close: ev.close });
        return ev.close;
      }
    }
  }
}

// ---------------------------------------------------------------- shells and tokens

/** A lease for `sub` on `ast`, signed with the shell's key (our mint; the lease test
 *  checks that the package's mint gives the same text). */
const lease = (sub, ast = NOTES, o = {}) =>
  native.mintRoomToken({ doc: DOC, ast, sub, kid: KID, key: KEY, ttlMs: 600_000, ...o });

const OWNED_BY_U1 = {
  table: "note",
  where: {
    type: "simple",
    op: "=",
    left: { type: "column", name: "owner" },
    right: { type: "literal", value: "u1" },
  },
};

/** Three of the shell tests' mutators: an insert, an update and one that throws. */
const MUTATORS = { addNote: mutators.addNote, setBody: mutators.setBody, refuse: mutators.refuse };

/** Starts the published shell of `flavour` and waits until it is live. The flush
 *  debounce is an hour, so flushes happen exactly where a scenario calls `flushNow`. */
async function startShell(flavour, rindled, { journal, authority, logs = new Logs() } = {}) {
  const shell = track(
    await ROOMS[flavour].createRoomShell({
      upstream: {
        wsUrl: rindled.wsUrl,
        controlUrl: rindled.controlUrl,
        authToken: "up-token",
        footprintAst: NOTES,
      },
      downstream: {
        docId: DOC,
        tokenKeys: { [KID]: KEY },
        sweepIntervalMs: 50,
        writes: {
          mutators: MUTATORS,
          ownedTables: ["note"],
          groupCommitMs: 5,
          flushDebounceMs: 3_600_000,
          journal: journal ?? published.memoryJournal(),
          ...(authority ? { authority } : {}),
        },
      },
      log: logs.sink,
    }),
  );
  await withTimeout(shell.awaitLive(), "the published shell going live");
  // The hook worked (or, unhooked, did nothing): the shell's room is this flavour's.
  assert.ok(shell.room instanceof ROOMS[flavour].WasmRoom, `the shell runs on the ${ROOMS[flavour].label}`);
  return shell;
}

/** An authority holding the daemon's three notes, as the real one would. */
async function fakeAuthority() {
  const auth = await FakeAuthority.start();
  auth.put("note", [1, "one", "u1"]);
  auth.put("note", [2, "two", "u1"]);
  auth.put("note", [3, "three", "u2"]);
  return auth;
}

/** A client that sent `init` (when `clientID`), subscribed the lmid query (when `lmid`)
 *  and `ast` with a lease for `sub`; its first step recorded. */
async function subscriber(rec, shell, name, { clientID, sub, lmid = false, ast = NOTES }) {
  const c = await rec.connect(name, shell.port);
  if (clientID) c.send({ t: "init", clientID });
  if (lmid) c.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
  c.send({ t: "subscribe", queryId: 1, leaseToken: await lease(sub, ast) });
  const frames = await rec.settle(c, "subscribe");
  assert.deepEqual(
    frames.map((f) => `${f.t}${f.queryId ?? ""}`),
    [...(lmid ? ["nhello0", "nbatch0", "progress"] : []), "nhello1", "nbatch1", "progress"],
    `${name}'s subscribe`,
  );
  return c;
}

/** Pushes `(clientID, mid, name, args)` on `c` and waits for the lmid ack of `mid`. */
async function pushAcked(rec, c, clientID, mid, name, args) {
  c.send(push(clientID, mid, name, args));
  await rec.waitFor(c, `the ack of mid ${mid}`, (f) => (lmidOf(f) ?? 0) >= mid);
}

const ops = (frames, queryId) =>
  frames.filter((f) => f.t === "nbatch" && f.queryId === queryId).flatMap((f) => f.batch.ops);
const only = (frames, t) => frames.filter((f) => f.t === t);

/** The rows of a subscription after folding its batches (a snapshot restarts it). */
function view(steps, client, queryId) {
  const rows = new Map();
  for (const s of steps.filter((x) => x.client === client)) {
    for (const f of s.frames) {
      if (f.t !== "nbatch" || f.queryId !== queryId) continue;
      if (f.batch.seq === 0) rows.clear();
      for (const op of f.batch.ops) {
        const image = op.op === "edit" ? op.new : op.row;
        const key = `${op.table}\0${JSON.stringify(image[0])}`;
        if (op.op === "remove") rows.delete(key);
        else rows.set(key, [op.table, image]);
      }
    }
  }
  const order = ([ta, a], [tb, b]) => (ta < tb ? -1 : ta > tb ? 1 : a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  return [...rows.values()].sort(order);
}

// ---------------------------------------------------------------- the scenarios

const SCENARIOS = {
  lease: {
    title: "a lease token minted with the shell's key is served and a bad one refused",
    async run(flavour, rec, check) {
      const rindled = await FakeRindled.notes();
      const shell = await startShell(flavour, rindled);
      // Our mint and the package's agree to the byte.
      const now = Date.now();
      const mint = { doc: DOC, ast: NOTES, sub: "u1", kid: KID, key: KEY, ttlMs: 600_000, now };
      assert.equal(await native.mintRoomToken(mint), await published.mintRoomToken(mint));

      const a = await rec.connect("a", shell.port);
      a.send({ t: "subscribe", queryId: 1, leaseToken: await published.mintRoomToken(mint) });
      const served = await rec.settle(a, "a good lease");
      assert.deepEqual(served.map((f) => f.t), ["nhello", "nbatch", "progress"]);
      assert.deepEqual(ops(served, 1), [
        { table: "note", op: "add", row: [1, "one", "u1"] },
        { table: "note", op: "add", row: [2, "two", "u1"] },
        { table: "note", op: "add", row: [3, "three", "u2"] },
      ]);

      const b = await rec.connect("b", shell.port);
      b.send({ t: "subscribe", queryId: 2, leaseToken: await lease("u1", NOTES, { key: "not-the-key" }) });
      b.send({ t: "subscribe", queryId: 3, leaseToken: await lease("u1", NOTES, { doc: "doc/2" }) });
      const expired = await lease("u1", NOTES, { now: now - 120_000, ttlMs: 60_000 });
      b.send({ t: "subscribe", queryId: 4, leaseToken: expired });
      b.send({ t: "subscribe", queryId: 5, leaseToken: "rt1.not.signed" });
      b.send({ t: "subscribe", queryId: 6 });
      assert.deepEqual(await rec.settle(b, "bad leases"), [
        { t: "queryError", queryId: 2, message: "lease token refused: bad signature" },
        { t: "queryError", queryId: 3, message: "lease token refused: token is for another doc" },
        { t: "queryError", queryId: 4, message: "lease token refused: expired lease" },
        { t: "queryError", queryId: 5, message: "lease token refused: malformed payload" },
        { t: "queryError", queryId: 6, message: "subscribe requires a lease token" },
      ]);
      // The refusals bound nothing: a good lease on the same socket is served.
      b.send({ t: "subscribe", queryId: 7, leaseToken: await lease("u2") });
      assert.deepEqual((await rec.settle(b, "a good lease after bad ones")).map((f) => f.t), [
        "nhello",
        "nbatch",
        "progress",
      ]);
      a.close();
      b.close();
      await shell.close();
      await rindled.close();
    },
  },

  subscribe: {
    title: "a subscriber gets nhello and the snapshot, then live changes from an upstream batch",
    async run(flavour, rec, check) {
      const rindled = await FakeRindled.notes();
      const shell = await startShell(flavour, rindled);
      const all = await subscriber(rec, shell, "all", { sub: "u1" });
      const mine = await subscriber(rec, shell, "mine", { sub: "u1", ast: OWNED_BY_U1 });
      const [hello] = rec.steps.find((s) => s.client === "mine").frames;
      assert.deepEqual(hello.hello.tables, [
        { name: "note", columns: ["id", "body", "owner"], primaryKey: [0] },
      ]);
      assert.equal(hello.hello.epoch, 1);
      assert.deepEqual(view(rec.steps, "mine", 1), [
        ["note", [1, "one", "u1"]],
        ["note", [2, "two", "u1"]],
      ]);

      rindled.live([
        { table: "note", op: "add", row: [4, "four", "u1"] },
        { table: "note", op: "edit", old: [2, "two", "u1"], new: [2, "two!", "u1"] },
        { table: "note", op: "remove", row: [3, "three", "u2"] },
      ]);
      const liveBatch = (f) => f.t === "nbatch" && f.batch.seq === 1;
      await rec.waitFor(all, "the live batch", liveBatch);
      await rec.waitFor(mine, "the live batch", liveBatch);
      const allLive = await rec.settle(all, "an upstream batch");
      const mineLive = await rec.settle(mine, "an upstream batch");
      assert.deepEqual(ops(allLive, 1), [
        { table: "note", op: "edit", old: [2, "two", "u1"], new: [2, "two!", "u1"] },
        { table: "note", op: "remove", row: [3, "three", "u2"] },
        { table: "note", op: "add", row: [4, "four", "u1"] },
      ]);
      assert.deepEqual(ops(mineLive, 1), [
        { table: "note", op: "edit", old: [2, "two", "u1"], new: [2, "two!", "u1"] },
        { table: "note", op: "add", row: [4, "four", "u1"] },
      ]);
      for (const frames of [allLive, mineLive]) {
        assert.deepEqual(frames.map((f) => f.t), ["nbatch", "progress"]);
        assert.ok(frames[1].frame.cvMin >= frames[0].batch.cv, "the progress releases the batch");
      }
      all.close();
      mine.close();
      await shell.close();
      await rindled.close();
    },
  },

  mutate: {
    title: "a pushed mutation is applied, fanned out to a second client, journaled and acknowledged",
    async run(flavour, rec, check) {
      const rindled = await FakeRindled.notes();
      const journal = published.memoryJournal();
      const shell = await startShell(flavour, rindled, { journal });
      const author = await subscriber(rec, shell, "author", { clientID: "c1", sub: "u1", lmid: true });
      const reader = await subscriber(rec, shell, "reader", { clientID: "c2", sub: "u2" });

      const steps = [
        [1, "addNote", { id: 10, body: "ten" }, { table: "note", op: "add", row: [10, "ten", "u1"] }],
        [2, "setBody", { id: 1, body: "uno" }, {
          table: "note", op: "edit", old: [1, "one", "u1"], new: [1, "uno", "u1"],
        }],
      ];
      for (const [mid, name, args, op] of steps) {
        await pushAcked(rec, author, "c1", mid, name, args);
        await rec.waitFor(reader, `mid ${mid}'s change`, (f) => f.t === "nbatch");
        const mine = await rec.settle(author, `mid ${mid}`);
        const theirs = await rec.settle(reader, `mid ${mid}`);
        assert.deepEqual(ops(mine, 1), [op]);
        assert.deepEqual(ops(theirs, 1), [op]);
        assert.deepEqual(ops(mine, 0), [
          mid === 1
            ? { table: "_rindle_client_mutations", op: "add", row: ["c1", 1] }
            : { table: "_rindle_client_mutations", op: "edit", old: ["c1", mid - 1], new: ["c1", mid] },
        ]);
        // The author is held below its change until the ack, then released past it.
        const data = mine.find((f) => f.t === "nbatch" && f.queryId === 1);
        const ack = mine.find((f) => f.t === "nbatch" && f.queryId === 0);
        const progress = only(mine, "progress");
        assert.ok(mine.indexOf(data) < mine.indexOf(ack), "the data before its lmid");
        assert.ok(progress[0].frame.cvMin < data.batch.cv, "held below the un-acked change");
        assert.ok(progress.at(-1).frame.cvMin >= ack.batch.cv, "released past the ack");
        assert.deepEqual(only(mine, "mutationOutcome"), []);
      }
      rec.journal = await journal.replay();
      assert.deepEqual(rec.journal, [
        { clientID: "c1", mid: 1, name: "addNote", args: { id: 10, body: "ten" }, sub: "u1",
          outcome: "applied" },
        { clientID: "c1", mid: 2, name: "setBody", args: { id: 1, body: "uno" }, sub: "u1",
          outcome: "applied" },
      ]);
      author.close();
      reader.close();
      await shell.close();
      await rindled.close();
    },
  },

  reject: {
    title: "a mutator that throws answers with a rejection outcome and later mutations still apply",
    async run(flavour, rec, check) {
      const rindled = await FakeRindled.notes();
      const journal = published.memoryJournal();
      const shell = await startShell(flavour, rindled, { journal });
      const author = await subscriber(rec, shell, "author", { clientID: "c1", sub: "u1", lmid: true });
      const reader = await subscriber(rec, shell, "reader", { clientID: "c2", sub: "u2" });

      for (const [mid, name, reason] of [
        [1, "refuse", "not allowed"],
        [2, "nope", "unknown mutator `nope`"],
      ]) {
        await pushAcked(rec, author, "c1", mid, name, {});
        const frames = await rec.settle(author, `mid ${mid} refused`);
        const outcome = { t: "mutationOutcome", mid, kind: "rejected", reason };
        assert.deepEqual(only(frames, "mutationOutcome"), [outcome]);
        const at = (pred) => frames.findIndex(pred);
        assert.ok(at((f) => f.t === "mutationOutcome") < at((f) => lmidOf(f) === mid), "the outcome first");
        assert.deepEqual(ops(frames, 1), []);
      }
      assert.deepEqual(await rec.settle(reader, "two refusals"), []);

      await pushAcked(rec, author, "c1", 3, "addNote", { id: 11, body: "eleven" });
      await rec.waitFor(reader, "mid 3's change", (f) => f.t === "nbatch");
      const added = { table: "note", op: "add", row: [11, "eleven", "u1"] };
      assert.deepEqual(ops(await rec.settle(author, "mid 3 applied"), 1), [added]);
      assert.deepEqual(ops(await rec.settle(reader, "mid 3 applied"), 1), [added]);

      // The room refuses an insert over an existing row: the mutator throws the room's
      // message, which reaches the client as the rejection's reason.
      await pushAcked(rec, author, "c1", 4, "addNote", { id: 1, body: "again" });
      const [dup] = only(await rec.settle(author, "mid 4 refused by the room"), "mutationOutcome");
      assert.equal(dup.kind, "rejected");
      assert.equal(typeof dup.reason, "string");
      // A mid past the next one is a gap, answered with the room's error text.
      author.send(push("c1", 9, "addNote", { id: 19, body: "nineteen" }));
      const gap = await rec.waitFor(author, "the gap error", (f) => f.t === "error");
      assert.match(gap.message, /^mutation gap for c1/);
      assert.deepEqual(await rec.settle(author, "mid 9 is a gap"), [gap]);
      assert.deepEqual(await rec.settle(reader, "refusals by the room"), []);

      // A re-sent applied mid is absorbed without an answer; a re-sent refused mid is
      // answered with its recorded outcome. Neither runs again.
      author.send(push("c1", 3, "addNote", { id: 11, body: "eleven" }));
      assert.deepEqual(await rec.settle(author, "mid 3 re-sent"), []);
      author.send(push("c1", 1, "refuse", {}));
      await rec.waitFor(author, "the recorded outcome", (f) => f.t === "mutationOutcome");
      assert.deepEqual(await rec.settle(author, "mid 1 re-sent"), [
        { t: "mutationOutcome", mid: 1, kind: "rejected", reason: "not allowed" },
      ]);
      rec.journal = await journal.replay();
      assert.deepEqual(
        rec.journal.map((e) => [e.mid, e.outcome, e.rejected]),
        [[1, "rejected", true], [2, "rejected", true], [3, "applied", undefined], [4, "rejected", true]],
      );
      author.close();
      reader.close();
      await shell.close();
      await rindled.close();
    },
  },

  flush: {
    title:
      "the write-behind flush carries the data rows, the ledger and the outcome row, and a CAS conflict converges",
    async run(flavour, rec, check) {
      const rindled = await FakeRindled.notes();
      const auth = await fakeAuthority();
      const authority = published.httpAuthority(auth.urls());
      const logs = new Logs();
      const shell = await startShell(flavour, rindled, { authority, logs });
      const author = await subscriber(rec, shell, "author", { clientID: "c1", sub: "u1", lmid: true });
      const reader = await subscriber(rec, shell, "reader", { clientID: "c2", sub: "u2" });

      await pushAcked(rec, author, "c1", 1, "addNote", { id: 10, body: "ten" });
      await pushAcked(rec, author, "c1", 2, "setBody", { id: 1, body: "uno" });
      await pushAcked(rec, author, "c1", 3, "refuse", {});
      await rec.waitFor(reader, "mid 2's change", (f) => f.t === "nbatch" && f.batch.seq === 2);
      await rec.settle(author, "mids 1-3");
      await rec.settle(reader, "mids 1-3");
      await withTimeout(shell.flushNow(), "the first flush");
      assert.equal(auth.bodies.length, 1);
      const first = JSON.parse(auth.bodies[0]);
      assert.deepEqual(Object.keys(first), ["source", "offset", "doc", "epoch", "batchHash", "cas", "changes"]);
      assert.equal(first.source, `room:${DOC}:1`);
      assert.equal(first.offset, "00000000000000000001");
      assert.equal(typeof first.batchHash, "string");
      const byTable = (t) => first.changes.filter((c) => c.table === t);
      assert.deepEqual(byTable("note"), [
        { table: "note", op: "edit", old: [1, "one", "u1"], row: [1, "uno", "u1"] },
        { table: "note", op: "add", row: [10, "ten", "u1"] },
      ]);
      assert.deepEqual(byTable("_rindle_client_mutations"), [
        { table: "_rindle_client_mutations", op: "add", row: ["c1", 3] },
      ]);
      await check("the flush carries the rejected mid's row of _rindle_room_mutation_outcomes", () =>
        assert.deepEqual(byTable("_rindle_room_mutation_outcomes").map((c) => [c.op, c.row?.slice(0, 4)]), [
          ["add", ["c1", 3, "rejected", "not allowed"]],
        ]));
      assert.deepEqual(auth.row("note", [10]), [10, "ten", "u1"]);
      assert.deepEqual(auth.row("note", [1]), [1, "uno", "u1"]);
      assert.deepEqual(auth.row("_rindle_client_mutations", ["c1"]), ["c1", 3]);
      await check("the authority holds the rejected mid's outcome row", () =>
        assert.deepEqual(auth.row("_rindle_room_mutation_outcomes", ["c1", 3])?.slice(0, 4), [
          "c1", 3, "rejected", "not allowed",
        ]));
      assert.deepEqual(await rec.settle(author, "the first flush"), []);
      assert.deepEqual(await rec.settle(reader, "the first flush"), []);

      // Another writer changed note 2 at the authority; the room has not heard yet.
      auth.put("note", [2, "elsewhere", "u9"]);
      await pushAcked(rec, author, "c1", 4, "setBody", { id: 2, body: "mine" });
      await rec.waitFor(reader, "mid 4's change", (f) => f.t === "nbatch" && f.batch.seq === 3);
      await rec.settle(author, "mid 4");
      await rec.settle(reader, "mid 4");
      await withTimeout(shell.flushNow(), "the conflicting flush");
      assert.equal(JSON.parse(auth.bodies[1]).offset, "00000000000000000002");
      assert.equal(logs.count("flush 2 CAS-conflicted: converged to the authority"), 1, logs.dump());
      const corrective = { table: "note", op: "edit", old: [2, "mine", "u1"], new: [2, "elsewhere", "u9"] };
      for (const c of [author, reader]) {
        await rec.waitFor(c, "the corrective edit", (f) => f.t === "nbatch" && f.queryId === 1);
        assert.deepEqual(ops(await rec.settle(c, "the conflict"), 1), [corrective]);
      }
      // The rest (the ledger's advance) goes in the next flush.
      await withTimeout(shell.flushNow(), "the flush after the conflict");
      assert.equal(auth.bodies.length, 3);
      assert.deepEqual(auth.row("note", [2]), [2, "elsewhere", "u9"]);
      assert.deepEqual(auth.row("_rindle_client_mutations", ["c1"]), ["c1", 4]);
      assert.equal(shell.room.dirtyLen(), 0);
      assert.deepEqual(await rec.settle(author, "the flush after the conflict"), []);
      assert.deepEqual(await rec.settle(reader, "the flush after the conflict"), []);
      rec.bodies = auth.bodies.map((b) => JSON.parse(b));
      author.close();
      reader.close();
      await shell.close();
      await auth.close();
      await rindled.close();
    },
  },

  restart: {
    title: "a restart over the same journal replays it and reconnecting clients see the same view",
    async run(flavour, rec, check) {
      const rindled = await FakeRindled.notes();
      const journal = published.memoryJournal();
      const first = await startShell(flavour, rindled, { journal });
      const author = await subscriber(rec, first, "author", { clientID: "c1", sub: "u1", lmid: true });
      const reader = await subscriber(rec, first, "reader", { clientID: "c2", sub: "u2" });
      await pushAcked(rec, author, "c1", 1, "addNote", { id: 10, body: "ten" });
      await pushAcked(rec, author, "c1", 2, "setBody", { id: 1, body: "uno" });
      await pushAcked(rec, author, "c1", 3, "refuse", {});
      await rec.waitFor(reader, "mid 2's change", (f) => f.t === "nbatch" && f.batch.seq === 2);
      await rec.settle(author, "mids 1-3");
      await rec.settle(reader, "mids 1-3");
      const viewBefore = view(rec.steps, "reader", 1);
      assert.deepEqual(viewBefore, [
        ["note", [1, "uno", "u1"]],
        ["note", [2, "two", "u1"]],
        ["note", [3, "three", "u2"]],
        ["note", [10, "ten", "u1"]],
      ]);

      const lmidBefore = view(rec.steps, "author", 0);
      assert.deepEqual(lmidBefore, [["_rindle_client_mutations", ["c1", 3]]]);

      await first.close();
      await rec.closed(author, "the shell stops");
      await rec.closed(reader, "the shell stops");

      const second = await startShell(flavour, rindled, { journal });
      assert.notEqual(second.bootId(), first.bootId());
      const author2 = await subscriber(rec, second, "author again", { clientID: "c1", sub: "u1", lmid: true });
      const reader2 = await subscriber(rec, second, "reader again", { clientID: "c2", sub: "u2" });
      assert.deepEqual(view(rec.steps, "reader again", 1), viewBefore);
      assert.deepEqual(view(rec.steps, "author again", 1), viewBefore);
      assert.deepEqual(view(rec.steps, "author again", 0), lmidBefore);

      // Replayed mids are spent: mid 3 is answered from the replay, mid 4 applies.
      author2.send(push("c1", 3, "refuse", {}));
      await rec.waitFor(author2, "the replayed outcome", (f) => f.t === "mutationOutcome");
      assert.deepEqual(await rec.settle(author2, "mid 3 re-sent"), [
        { t: "mutationOutcome", mid: 3, kind: "rejected" },
      ]);
      await pushAcked(rec, author2, "c1", 4, "addNote", { id: 12, body: "twelve" });
      await rec.waitFor(reader2, "mid 4's change", (f) => f.t === "nbatch");
      const added = { table: "note", op: "add", row: [12, "twelve", "u1"] };
      assert.deepEqual(ops(await rec.settle(author2, "mid 4"), 1), [added]);
      assert.deepEqual(ops(await rec.settle(reader2, "mid 4"), 1), [added]);
      rec.journal = await journal.replay();
      assert.deepEqual(rec.journal.map((e) => e.mid), [1, 2, 3, 4]);
      author2.close();
      reader2.close();
      await second.close();
      await rindled.close();
    },
  },
};

/** Published-shell behaviour the native room does not give it yet, by the title of the
 *  `check` that asserts it (run as a todo there). None today. */
const NATIVE_TODO = {};

for (const flavour of ["native", "wasm"]) {
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    test(`published shell on the ${ROOMS[flavour].label}: ${scenario.title}`, async (t) => {
      const rec = new Transcript();
      // An assertion the native room is known to fail runs as a todo subtest there.
      const check = (what, fn) =>
        t.test(what, { todo: flavour === "native" ? NATIVE_TODO[what] : undefined }, fn);
      await scenario.run(flavour, rec, check);
      runs[flavour][name] = rec;
    });
  }
}

// ---------------------------------------------------------------- the comparison

/**
 * What is compared, made comparable: each client step under `<client>: <step>`, the
 * authority's bodies (parsed) and the journal's entries. The one normalisation:
 * - `bootId` of `nhello` frames: a random UUID per incarnation (`randomUUID()` in the
 *   shell), so each is replaced by `boot#<n>`, numbered by first appearance in the
 *   scenario. Whether two frames carry the same bootId or a new one is still compared.
 * Nothing else is rewritten: cv stamps, seqs, epochs, progress frames, outcome texts,
 * authority bodies (batchHash, change order) and journal entries must be identical.
 */
function comparable(rec) {
  const boots = new Map();
  const steps = {};
  for (const s of rec.steps) {
    steps[`${s.client}: ${s.step}`] = {
      frames: s.frames.map((f) => {
        if (f.t !== "nhello" || typeof f.bootId !== "string") return f;
        if (!boots.has(f.bootId)) boots.set(f.bootId, `boot#${boots.size + 1}`);
        return { ...f, bootId: boots.get(f.bootId) };
      }),
      ...(s.close ? { close: s.close } : {}),
    };
  }
  return { steps, bodies: rec.bodies, journal: rec.journal };
}

/** `steps` with every cv stamp (`batch.cv`, `frame.cvMin`) replaced by its rank among
 *  the distinct stamps of the scenario: what is left of the stamps is their order and
 *  equalities, which a client relies on, not their numbering. */
function cvRanks(steps) {
  const stamps = new Set();
  const each = (f, fn) => {
    if (f.t === "nbatch") fn(f.batch, "cv");
    if (f.t === "progress") fn(f.frame, "cvMin");
  };
  for (const s of Object.values(steps)) for (const f of s.frames) each(f, (o, k) => stamps.add(o[k]));
  const rank = new Map([...stamps].sort((a, b) => a - b).map((v, i) => [v, `cv#${i}`]));
  const out = {};
  for (const [key, s] of Object.entries(steps)) {
    out[key] = {
      ...s,
      frames: s.frames.map((f) => {
        const copy = structuredClone(f);
        each(copy, (o, k) => (o[k] = rank.get(o[k])));
        return copy;
      }),
    };
  }
  return out;
}

/** Every leaf where `native` and `wasm` differ, as `path: native …, wasm …`. */
function differences(native, wasm, path = "", out = []) {
  if (Object.is(native, wasm)) return out;
  const object = (v) => typeof v === "object" && v !== null;
  if (!object(native) || !object(wasm) || Array.isArray(native) !== Array.isArray(wasm)) {
    out.push(`${path}: native ${JSON.stringify(native)}, wasm ${JSON.stringify(wasm)}`);
    return out;
  }
  for (const k of new Set([...Object.keys(native), ...Object.keys(wasm)])) {
    const at = Array.isArray(native) ? `${path}[${k}]` : `${path}${path ? "." : ""}${k}`;
    differences(native[k], wasm[k], at, out);
  }
  return out;
}

/** Fails with the differences listed when the native run's `what` is not the wasm run's
 *  (after `view`, when given). */
function assertSame(name, what, view = (v) => v) {
  const n = runs.native[name];
  const w = runs.wasm[name];
  assert.ok(n, `the native run of "${name}" did not finish`);
  assert.ok(w, `the wasm run of "${name}" did not finish`);
  const diffs = differences(view(comparable(n)[what]), view(comparable(w)[what]));
  if (diffs.length > 0) {
    const shown = diffs.slice(0, 60).join("\n  ");
    assert.fail(`${diffs.length} difference(s) in ${what}:\n  ${shown}${diffs.length > 60 ? "\n  …" : ""}`);
  }
}

/** Assertions the native room is known to fail, by scenario (`steps`, `rankedSteps`,
 *  `journal`, `bodies`): each runs as a todo until it agrees. None today. */
const TODO = {};

for (const name of Object.keys(SCENARIOS)) {
  test(`${name}: clients see the same frames from the native room as from the wasm room`, {
    todo: TODO[name]?.steps,
  }, () => assertSame(name, "steps"));
  // Everything but the numbering of the cv stamps, while that numbering differs (it is
  // compared in full just above).
  test(`${name}: clients see the same frames from the native room as from the wasm room, cv stamps by rank`, {
    todo: TODO[name]?.rankedSteps,
  }, () => assertSame(name, "steps", cvRanks));
  test(`${name}: the native room's shell journals the same entries as the wasm room's`, {
    todo: TODO[name]?.journal,
  }, () => assertSame(name, "journal"));
}

test("flush: the authority gets the same bodies from the native room as from the wasm room", {
  todo: TODO.flush?.bodies,
}, () => {
  assert.ok(runs.wasm.flush?.bodies.length >= 3, "the wasm run flushed three times");
  assertSame("flush", "bodies");
});

// PUBLISHED_SHELL_DUMP=<file> writes both runs, as compared, to <file> (JSON).
if (process.env.PUBLISHED_SHELL_DUMP) {
  after(() => {
    const dump = {};
    for (const flavour of ["native", "wasm"]) {
      dump[flavour] = Object.fromEntries(Object.entries(runs[flavour]).map(([k, rec]) => [k, comparable(rec)]));
    }
    writeFileSync(process.env.PUBLISHED_SHELL_DUMP, `${JSON.stringify(dump, null, 1)}\n`);
  });
}
