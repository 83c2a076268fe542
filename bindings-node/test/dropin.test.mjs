// The drop-in test: test/support/mini-shell.mjs is a minimal room shell written against
// the calling pattern the published room's Node shell uses for the wasm WasmRoom
// (upstream frames in, `commitAll` out, tokens, the write path, the flush). It imports
// "@rindle/room-native" and runs unchanged; this test feeds it upstream frames and
// downstream clients and checks what each client receives.
import test from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

import { mintRoomToken } from "@rindle/room-native";
import { MiniShell } from "./support/mini-shell.mjs";

const require = createRequire(import.meta.url);
const { HELLO, SNAPSHOT, SLIDES_OF_D1, batch } = require("./support/fixtures.js");

const KEYS = { k1: "secret-one" };
const NOW = 1_767_225_600_000;

function lease(ast, sub = "user:ann") {
  return mintRoomToken({ doc: "doc:d1", ast, sub, kid: "k1", key: KEYS.k1, ttlMs: 60_000, now: NOW });
}

/** The frames a client got since the last call, emptied. */
function take(conn) {
  return conn.sent.splice(0);
}

const mutators = {
  addSlide(tx, { id, deckId, pos }) {
    tx.add("slide", [id, deckId, pos]);
  },
  moveSlide(tx, { id, pos }) {
    const row = tx.get("slide", [id]);
    if (!row) throw new Error(`no slide ${id}`);
    tx.edit("slide", row, [row[0], row[1], pos]);
  },
  dropSlide(tx, { id }) {
    tx.remove("slide", [id]);
  },
};

async function bootedShell(authorityLog) {
  const shell = new MiniShell({
    docId: "doc:d1",
    tokenKeys: KEYS,
    writes: { mutators, ownedTables: ["slide"] },
    authority: (body) => {
      authorityLog.push(body);
      return { kind: "ok", applied: true, cv: 200 };
    },
  });
  await shell.start();
  shell.onUpstreamFrame({ t: "nhello", hello: HELLO });
  shell.onUpstreamFrame({ t: "nbatch", batch: SNAPSHOT });
  return shell;
}

test("a shell written like the published one boots, serves, fans out and writes", async () => {
  const authority = [];
  const shell = await bootedShell(authority);
  assert.deepEqual(shell.log, ["upstream hello: epoch 1", "upstream snapshot: 4 rows @ cv 100"]);
  assert.equal(shell.live, true);

  // Two clients: ann follows d1's slides, bob the decks.
  const ann = shell.connect();
  const bob = shell.connect();
  await shell.handleSubscribe(ann, { queryId: 1, leaseToken: await lease(SLIDES_OF_D1), now: NOW });
  await shell.handleSubscribe(bob, {
    queryId: 1,
    leaseToken: await lease({ table: "deck" }, "user:bob"),
    now: NOW,
  });
  const [hello, snap, progress] = take(ann);
  assert.equal(hello.t, "nhello");
  assert.deepEqual(hello.hello.tables, [
    { name: "slide", columns: ["id", "deckId", "pos"], primaryKey: [0] },
  ]);
  assert.deepEqual(snap, {
    t: "nbatch",
    queryId: 1,
    batch: {
      epoch: 1,
      seq: 0,
      normalizedFp: hello.hello.normalizedFp,
      ops: [
        { table: "slide", op: "add", row: ["s1", "d1", 1] },
        { table: "slide", op: "add", row: ["s2", "d1", 2] },
      ],
      cv: 100,
    },
  });
  assert.deepEqual(progress, { t: "progress", frame: { cvMin: 100 } });
  assert.equal(take(bob).length, 3);

  // An upstream live batch reaches only the query it touches.
  shell.onUpstreamFrame({
    t: "nbatch",
    batch: batch(1, [{ table: "slide", op: "edit", old: ["s2", "d1", 2], new: ["s2", "d1", 0] }], 101),
  });
  assert.deepEqual(take(ann), [
    {
      t: "nbatch",
      queryId: 1,
      batch: {
        epoch: 1,
        seq: 1,
        normalizedFp: hello.hello.normalizedFp,
        ops: [{ table: "slide", op: "edit", old: ["s2", "d1", 2], new: ["s2", "d1", 0] }],
        cv: 101,
      },
    },
    { t: "progress", frame: { cvMin: 101 } },
  ]);
  assert.deepEqual(take(bob), []);

  // The write path: ann's lmid stream, a mutation, its data frame, then the ack's.
  ann.clientID = "c1";
  await shell.handleSubscribe(ann, { queryId: 2, name: "_rindle/clientLmid" });
  const lmidSnap = take(ann)[1];
  assert.deepEqual(lmidSnap.batch.ops, []);
  const applied = shell.handlePushMutation(ann, {
    clientID: "c1",
    mid: 1,
    name: "addSlide",
    args: { id: "s3", deckId: "d1", pos: 3 },
  });
  assert.deepEqual(applied, { outcome: "applied", applyCv: 102 });
  const frames = take(ann).filter((f) => f.t === "nbatch");
  assert.deepEqual(
    frames.map((f) => [f.queryId, f.batch.ops]),
    [
      [1, [{ table: "slide", op: "add", row: ["s3", "d1", 3] }]],
      [2, [{ table: "_rindle_client_mutations", op: "add", row: ["c1", 1] }]],
    ],
  );

  // A mid gap is answered with the core's exact text on an error frame.
  shell.handlePushMutation(ann, { clientID: "c1", mid: 3, name: "addSlide", args: {} });
  const [gap] = take(ann);
  assert.equal(gap.t, "error");
  assert.match(gap.message, /^mutation gap for c1/);

  // A throwing mutator is a rejection that still consumes the mid.
  const rejected = shell.handlePushMutation(ann, {
    clientID: "c1",
    mid: 2,
    name: "moveSlide",
    args: { id: "nope", pos: 9 },
  });
  assert.deepEqual(rejected, { outcome: "rejected", reason: "no slide nope" });
  assert.deepEqual(
    take(ann).filter((f) => f.t === "nbatch").map((f) => f.batch.ops),
    [[{ table: "_rindle_client_mutations", op: "edit", old: ["c1", 1], new: ["c1", 2] }]],
  );

  // The write-behind flush: one batch to the authority, then flushOk.
  assert.equal(shell.room.pendingLen(), 2);
  assert.equal(shell.room.dirtyLen(), 1);
  const settled = shell.flushNow();
  assert.deepEqual(settled, { retired: 2, dirty: 0 }); // both pending mutations retired
  assert.equal(shell.room.pendingLen(), 0);
  assert.equal(authority.length, 1);
  assert.deepEqual(authority[0].lmids, [{ clientID: "c1", mid: 2 }]);
  assert.match(authority[0].batchHash, /^[0-9a-f]{16}$/);
  assert.deepEqual(authority[0].changes[0], {
    table: "slide",
    op: "add",
    row: ["s3", "d1", 3],
  });
  assert.equal(shell.flushNow(), null);

  // A redelivered mid is absorbed.
  assert.deepEqual(
    shell.handlePushMutation(ann, { clientID: "c1", mid: 1, name: "addSlide", args: {} }),
    { outcome: "dedup" },
  );
  shell.close();
});

test("a poisoning upstream frame kills the incarnation; a new hello boots the next", async () => {
  const shell = await bootedShell([]);
  const ann = shell.connect();
  await shell.handleSubscribe(ann, { queryId: 1, leaseToken: await lease(SLIDES_OF_D1), now: NOW });
  take(ann);
  const old = shell.room;
  shell.onUpstreamFrame({
    t: "nbatch",
    // A duplicate add on a table the room does not write: the store is poisoned.
    batch: batch(1, [{ table: "deck", op: "add", row: ["d1", "Deck one"] }], 101),
  });
  assert.equal(shell.room, null);
  assert.match(shell.log.at(-1), /^incarnation dead: upstream apply failed: Error: /);
  assert.deepEqual(take(ann), [{ t: "close", code: 1012 }]);
  assert.throws(() => old.headCv(), { code: "ROOM_FREED" });

  shell.onUpstreamFrame({ t: "nhello", hello: { ...HELLO, epoch: 2 } });
  shell.onUpstreamFrame({ t: "nbatch", batch: { ...SNAPSHOT, epoch: 2 } });
  assert.equal(shell.live, true);
  assert.equal(shell.room.epoch(), 2);
  shell.close();
});

test("refused leases are answered with the core's refusal text", async () => {
  const shell = await bootedShell([]);
  const eve = shell.connect();
  const token = await lease(SLIDES_OF_D1);
  await shell.handleSubscribe(eve, { queryId: 1, leaseToken: token, now: NOW + 60_000 });
  const [head, body, sig] = token.split(".");
  const forged = `${head}.${body}.${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`;
  await shell.handleSubscribe(eve, { queryId: 2, leaseToken: forged, now: NOW });
  assert.deepEqual(take(eve), [
    { t: "queryError", queryId: 1, message: "lease token refused: expired" },
    { t: "queryError", queryId: 2, message: "lease token refused: bad signature" },
  ]);
  shell.close();
});
