// The write path over real sockets: the mutation round trip with its lmid ack and the
// author holdback, non-applied outcomes before the covering lmid, the push
// preconditions, the v2 gate and scope skew, a failing journal, a restart that replays
// a file journal (runtime-smol's server_write.rs), a clientID's binding kept across a
// restart on every kind of journal, and the JS-only refusal of async and generator
// mutators.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileJournal, memoryJournal } from "@rindle/room-native";
import { FakeRindled } from "./support/fakes.mjs";
import {
  Client, Logs, NOTES, eventually, isLmid, lmidOf, push, startLive, subscribeFrame, subscriber,
  token, withTimeout,
} from "./support/harness.mjs";

test("a mutation round trip acks through the lmid and holds the author back", async () => {
  const rindled = await FakeRindled.notes();
  const journal = memoryJournal();
  const shell = await startLive(rindled, { journal });
  const author = await subscriber(shell, "c1", "u1", true);
  const observer = await subscriber(shell, "c2", "u2", false);

  author.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  const data = await author.expectT("nbatch");
  assert.equal(data.queryId, 1);
  assert.deepEqual(data.batch.ops, [{ table: "note", op: "add", row: [10, "ten", "u1"] }]);
  const x = data.batch.cv;
  // Held below the un-acked mutation's apply cv; everyone else releases at the head.
  assert.equal((await author.expectT("progress")).frame.cvMin, x - 1);
  assert.equal((await observer.expectT("nbatch")).batch.cv, x);
  assert.equal((await observer.expectT("progress")).frame.cvMin, x);
  // The ack: the lmid row advances in a later commit, then the release.
  const lmid = await author.expectT("nbatch");
  assert.ok(isLmid(lmid), JSON.stringify(lmid));
  assert.deepEqual(lmid.batch.ops, [{ table: "_rindle_client_mutations", op: "add", row: ["c1", 1] }]);
  assert.equal(lmid.batch.cv, x + 1);
  // One progress per drain: the lmid frame's carries the author's release point.
  assert.equal((await author.expectT("progress")).frame.cvMin, x + 1);
  await author.quiet(300);
  const entries = await journal.replay();
  assert.equal(entries.length, 1);
  assert.equal(typeof entries[0], "string", "the journal stores an opaque record");
  assert.deepEqual(JSON.parse(entries[0]), {
    clientID: "c1",
    mid: 1,
    name: "addNote",
    args: { id: 10, body: "ten" },
    sub: "u1",
    outcome: "applied",
  });

  // A re-sent applied mid is absorbed silently.
  author.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  await author.quiet(300);
  assert.equal((await journal.replay()).length, 1);
  author.close();
  observer.close();
  await shell.close();
  await rindled.close();
});

test("non-applied outcomes arrive before the lmid that covers them", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled);
  const c = await subscriber(shell, "c1", "u1", true);
  c.send(push("c1", 1, "nope", {}));
  c.send(push("c1", 2, "refuse", {}));
  c.send(push("c1", 3, "needsQuery", { b: 1.5, a: [1, 2] }));
  c.send(push("c1", 4, "asyncNote", { id: 40 }));
  c.send(push("c1", 5, "generatorNote", { id: 50 }));
  const expected = [
    { t: "mutationOutcome", mid: 1, kind: "rejected", reason: "unknown mutator `nope`" },
    { t: "mutationOutcome", mid: 2, kind: "rejected", reason: "not allowed" },
    {
      t: "mutationOutcome",
      mid: 3,
      kind: "deopt",
      reason: "environment",
      name: "needsQuery",
      args: { b: 1.5, a: [1, 2] },
    },
    {
      t: "mutationOutcome",
      mid: 4,
      kind: "rejected",
      reason: "mutator `asyncNote` returned a promise: room mutators must be plain synchronous functions",
    },
  ];
  const outcomes = [];
  for (;;) {
    const v = await c.next();
    if (lmidOf(v) === 5) break;
    if (v.t === "mutationOutcome") outcomes.push(v);
    assert.notEqual(v.queryId, 1, `no data frame: ${JSON.stringify(v)}`);
  }
  assert.deepEqual(outcomes.slice(0, 4), expected, "every outcome precedes the lmid that covers it");
  assert.equal(outcomes[4].kind, "rejected");
  assert.match(outcomes[4].reason, /^mutator `generatorNote` returned a generator/);

  // A re-sent non-applied mid is answered with its recorded outcome.
  c.send(push("c1", 3, "needsQuery", {}));
  assert.deepEqual(await c.until("the re-answer", (v) => v.t === "mutationOutcome"), expected[2]);
  // A gap is an error on the connection, with the core's exact text.
  c.send(push("c1", 9, "addNote", {}));
  assert.deepEqual(await c.until("the gap", (v) => v.t === "error"), {
    t: "error",
    message: "mutation gap for c1: expected mid 6, got 9",
  });
  c.close();
  await shell.close();
  await rindled.close();
});

test("pushes need init, a matching client and a subject", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled);
  const c = await Client.connect(shell.port);
  c.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
  assert.equal((await c.expectT("queryError")).message, "subscribe lmid query before init");
  c.send(push("c1", 1, "addNote", {}));
  assert.equal((await c.expectT("error")).message, "init with a clientID before pushMutation");
  c.send({ t: "init", clientID: "c1" });
  c.send(push("c2", 1, "addNote", {}));
  assert.equal(
    (await c.expectT("error")).message,
    "envelope clientID does not match the connection identity",
  );
  c.send(push("c1", 1, "addNote", {}));
  assert.equal(
    (await c.expectT("error")).message,
    "pushMutation requires an authenticated subject — subscribe with a lease token first",
  );
  c.close();
  await shell.close();
  await rindled.close();
});

const SCOPES = [
  {
    table: "note",
    writable: {
      kind: "predicate",
      where: { type: "simple", op: "=", left: { type: "column", name: "owner" }, right: { type: "literal", value: "u1" } },
      joinKeyCols: [],
    },
  },
];

test("the v2 gate deopts out-of-scope writes and scope skew is logged once", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const shell = await startLive(rindled, { scopes: SCOPES }, logs);
  const c = await subscriber(shell, "c2", "u2", true);
  c.send(push("c2", 1, "addNote", { id: 20, body: "x" }));
  assert.deepEqual(await c.until("the deopt", (v) => v.t === "mutationOutcome"), {
    t: "mutationOutcome",
    mid: 1,
    kind: "deopt",
    reason: "writeOutOfScope",
    name: "addNote",
    args: { id: 20, body: "x" },
  });
  const ok = await subscriber(shell, "c1", "u1", false);
  ok.send(push("c1", 1, "addNote", { id: 21, body: "y" }));
  assert.deepEqual((await ok.expectT("nbatch")).batch.ops[0].row, [21, "y", "u1"]);

  // Leases stamped with other scopes: logged once per distinct pair.
  for (let i = 0; i < 2; i++) {
    ok.send(subscribeFrame(5, await token(NOTES, "u1", 60_000, Date.now(), { scopesHash: "deadbeef" })));
    await ok.until("the hello", (v) => v.t === "nhello");
  }
  assert.equal(logs.count("scope skew:"), 1, logs.dump());
  c.close();
  ok.close();
  await shell.close();
  await rindled.close();
});

test("scopes wider than the owned tables are refused at construction", async () => {
  const rindled = await FakeRindled.notes();
  const wide = [{ table: "tally", writable: { kind: "predicate", joinKeyCols: [] } }];
  await assert.rejects(
    startLive(rindled, { scopes: wide }),
    /writes\.scopes marks `tally` writable, but the host's writes\.ownedTables does not include it/,
  );
  await rindled.close();
});

test("a failing journal kills the incarnation and nothing is acked", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const inner = memoryJournal();
  let failing = false;
  const journal = {
    ...inner,
    append(entries) {
      return failing ? Promise.reject(new Error("disk full")) : inner.append(entries);
    },
  };
  const shell = await startLive(rindled, { journal }, logs);
  const c = await subscriber(shell, "c1", "u1", true);
  failing = true;
  c.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  // Fan-out is not gated on durability…
  assert.equal((await c.expectT("nbatch")).queryId, 1);
  // …but an ack that might not survive is never sent: the incarnation dies.
  assert.deepEqual(await c.closed(), { code: 1012, reason: "room re-subscribing" });
  assert.ok(c.log.every((v) => !isLmid(v) || v.batch.seq === 0), "no lmid advance");
  failing = false;
  await eventually("the re-subscribe", () => rindled.subscribes === 2);
  await withTimeout(shell.awaitLive(), "live again");
  // The client re-sends its un-acked mid: applied against the fresh base, acked.
  const d = await subscriber(shell, "c1", "u1", true);
  d.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  assert.deepEqual((await d.until("the ack", isLmid)).batch.ops[0].row, ["c1", 1]);
  assert.ok(logs.count("journal append failed") >= 1);
  d.close();
  await shell.close();
  await rindled.close();
});

test("a restart replays the file journal exactly once", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-shell-"));
  const file = path.join(dir, "journal");
  const rindled = await FakeRindled.notes();
  let journal = fileJournal(file);
  const shell = await startLive(rindled, { journal });
  const c = await subscriber(shell, "c1", "u1", true);
  c.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  c.send(push("c1", 2, "setBody", { id: 1, body: "uno" }));
  c.send(push("c1", 3, "refuse", {}));
  c.send(push("c1", 4, "addNote", { id: 11, body: "eleven" }));
  await c.until("the ack of mid 4", (v) => lmidOf(v) === 4);
  c.close();
  await shell.close();
  await journal.close();

  // A new process (same journal file): the replay re-invokes the mutators on the base.
  journal = fileJournal(file);
  const logs2 = new Logs();
  const shell2 = await startLive(rindled, { journal }, logs2);
  const d = await subscriber(shell2, "c1", "u1", true);
  assert.deepEqual(
    d.notesSnapshot.batch.ops.map((op) => op.row),
    [
      [1, "uno", "u1"],
      [2, "two", "u1"],
      [3, "three", "u2"],
      [10, "ten", "u1"],
      [11, "eleven", "u1"],
    ],
  );
  assert.deepEqual(d.lmidSnapshot.batch.ops, [
    { table: "_rindle_client_mutations", op: "add", row: ["c1", 4] },
  ]);
  assert.equal(logs2.count("journal replay: 4 mutation(s) re-invoked and acked"), 1, logs2.dump());
  // Re-sent mids dedup (the rejected one is answered from the replay's record).
  d.send(push("c1", 4, "addNote", { id: 11, body: "eleven" }));
  d.send(push("c1", 3, "refuse", {}));
  assert.deepEqual(await d.until("the re-answer", (v) => v.t === "mutationOutcome"), {
    t: "mutationOutcome",
    mid: 3,
    kind: "rejected",
  });
  await d.quiet(200);
  d.close();
  await shell2.close();
  await journal.close();
  await rindled.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A host application's own journal: the five `RoomJournal` methods over plain arrays,
 *  records stored as they come — no compaction, no bindings of its own. */
function customJournal() {
  const records = [];
  const flushes = new Map();
  let maxSeq = 0;
  return {
    async append(rs) {
      records.push(...rs);
    },
    async replay() {
      return [...records];
    },
    async appendFlush(r) {
      flushes.set(r.seq, r);
      maxSeq = Math.max(maxSeq, r.seq);
    },
    async confirmFlush(seq) {
      flushes.delete(seq);
    },
    async replayFlushes() {
      return { records: [...flushes.values()].sort((a, b) => a.seq - b.seq), maxSeq };
    },
  };
}

/** Another subject pushing under clientID `c1` is refused. */
async function intruderRefused(shell, mid) {
  const bob = await subscriber(shell, "c1", "u2", false);
  bob.send(push("c1", mid, "addNote", { id: 66, body: "b" }));
  const refused = await bob.until("the refusal", (v) => v.t === "error");
  assert.match(refused.message, /clientID `c1` is bound to another subject/);
  bob.close();
}

for (const [kind, make, compactFirst] of [
  ["memoryJournal", memoryJournal, false],
  ["a custom journal", customJournal, false],
  ["memoryJournal compacted before the restart", memoryJournal, true],
]) {
  test(`a clientID stays bound to its subject across a restart on ${kind}`, async () => {
    const rindled = await FakeRindled.notes();
    const journal = make();
    const shell = await startLive(rindled, { journal });
    const alice = await subscriber(shell, "c1", "u1", true);
    alice.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
    await alice.until("the ack of mid 1", (v) => lmidOf(v) === 1);
    alice.close();
    await shell.close();
    // Compaction dropped alice's entry: only her binding record is left.
    if (compactFirst) await journal.compact({ c1: 1 });

    // A new process on the same journal: the room derives the binding from its records.
    const logs2 = new Logs();
    const shell2 = await startLive(rindled, { journal }, logs2);
    if (!compactFirst) {
      assert.equal(logs2.count("journal replay: 1 mutation(s) re-invoked and acked"), 1, logs2.dump());
    }
    await intruderRefused(shell2, 2);
    // Alice still writes under her clientID; the binding outlives her connection.
    const again = await subscriber(shell2, "c1", "u1", true);
    if (!compactFirst) {
      again.send(push("c1", 2, "addNote", { id: 20, body: "twenty" }));
      await again.until("the ack of mid 2", (v) => lmidOf(v) === 2);
    }
    again.close();
    await intruderRefused(shell2, 3);
    await shell2.close();
    await rindled.close();
  });
}
