// The read path over real loopback sockets: subscribe and live updates, queued
// subscribes, forged and malformed input, subject binding (runtime-smol's
// server_read.rs scenarios, against the JS shell).
import test from "node:test";
import assert from "node:assert/strict";
import { mintRoomToken } from "@rindle/room-native";
import { FakeRindled } from "./support/fakes.mjs";
import {
  Client, DOC, KEY, KID, Logs, NOTES, createShell, sleep, startLive, stats, subscribeFrame, token,
} from "./support/harness.mjs";

test("subscribe then live updates", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  const hello = await c.expectT("nhello");
  assert.equal(hello.queryId, 1);
  assert.equal(hello.bootId, shell.bootId());
  assert.equal(hello.hello.epoch, 1);
  assert.equal(hello.hello.comparatorVersion, 2);
  assert.deepEqual(hello.hello.tables, [
    { name: "note", columns: ["id", "body", "owner"], primaryKey: [0] },
  ]);
  const snap = await c.expectT("nbatch");
  assert.equal(snap.batch.seq, 0);
  assert.equal(snap.batch.cv, 100); // the upstream snapshot's cv
  assert.equal(snap.batch.normalizedFp, hello.hello.normalizedFp);
  assert.deepEqual(snap.batch.ops, [
    { table: "note", op: "add", row: [1, "one", "u1"] },
    { table: "note", op: "add", row: [2, "two", "u1"] },
    { table: "note", op: "add", row: [3, "three", "u2"] },
  ]);
  const p = await c.expectT("progress");
  assert.deepEqual(p.frame, { cvMin: 100, upstreamCv: 100, upstreamBoot: "daemon-boot-1" });

  // A live upstream batch: one net frame (ops in pk order), then progress.
  rindled.live([
    { table: "note", op: "add", row: [4, "four", "u2"] },
    { table: "note", op: "edit", old: [1, "one", "u1"], new: [1, "uno", "u1"] },
  ]);
  const b = await c.expectT("nbatch");
  assert.equal(b.batch.seq, 1);
  assert.equal(b.batch.cv, 101);
  assert.deepEqual(b.batch.ops, [
    { table: "note", op: "edit", old: [1, "one", "u1"], new: [1, "uno", "u1"] },
    { table: "note", op: "add", row: [4, "four", "u2"] },
  ]);
  assert.equal((await c.expectT("progress")).frame.cvMin, 101);
  // The daemon's progress is re-advertised (the absorption advert).
  assert.deepEqual((await c.expectT("progress")).frame, {
    cvMin: 101,
    upstreamCv: 101,
    upstreamBoot: "daemon-boot-1",
  });

  // Re-subscribing the same queryId bumps the epoch and re-snapshots.
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  assert.equal((await c.expectT("nhello")).hello.epoch, 2);
  assert.equal((await c.expectT("nbatch")).batch.ops.length, 4);
  await c.expectT("progress");

  // A second connection shares the pipeline; an unsubscribed one hears nothing.
  const d = await Client.connect(shell.port);
  d.send(subscribeFrame(7, await token(NOTES, "u2", 60_000)));
  await d.subscribed();
  c.send({ t: "unsubscribe", queryId: 1 });
  await sleep(50);
  rindled.live([{ table: "note", op: "remove", row: [2, "two", "u1"] }]);
  const r = await d.expectT("nbatch");
  assert.equal(r.queryId, 7);
  assert.deepEqual(r.batch.ops, [{ table: "note", op: "remove", row: [2, "two", "u1"] }]);
  await c.quiet(200);
  const s = await stats(shell);
  assert.equal(s.subscriptions, 1);
  assert.equal(s.materializations, 1);
  c.close();
  d.close();
  await shell.close();
  await rindled.close();
});

test("subscribes before live are served once the snapshot lands", async () => {
  const rindled = await FakeRindled.notes();
  rindled.hold();
  const shell = await createShell(rindled, { writes: false });
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.quiet(200);
  rindled.release();
  await c.expectT("nhello");
  assert.equal((await c.expectT("nbatch")).batch.seq, 0);
  await c.expectT("progress");
  c.close();
  await shell.close();
  await rindled.close();
});

test("forged and malformed input gets error frames and nothing crashes", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const c = await Client.connect(shell.port);
  c.send({ t: "init", clientID: "c1" });
  const now = Date.now();
  const forged = (key, kid, doc, iat, ttl) =>
    mintRoomToken({ doc, ast: NOTES, sub: "u1", kid, key, ttlMs: ttl, now: iat });
  const cases = [
    [subscribeFrame(1, "garbage"), "lease token refused: malformed"],
    [subscribeFrame(1, await forged("wrong", KID, DOC, now, 60_000)), "lease token refused: bad signature"],
    [subscribeFrame(1, await forged(KEY, "k9", DOC, now, 60_000)), "lease token refused: unknown key"],
    [subscribeFrame(1, await forged(KEY, KID, "doc/2", now, 60_000)), "lease token refused: wrong document"],
    [subscribeFrame(1, await forged(KEY, KID, DOC, now - 10_000, 1_000)), "lease token refused: expired"],
    [{ t: "subscribe", queryId: 1 }, "subscribe requires a lease token"],
    [{ t: "subscribe", queryId: 1, name: "myQuery", args: {} }, "subscribe requires a lease token"],
    [
      { t: "subscribe", queryId: 1, name: "_rindle/clientLmid" },
      "this room is read-only (no write plane configured)",
    ],
  ];
  for (const [frame, message] of cases) {
    c.send(frame);
    const e = await c.expectT("queryError");
    assert.equal(e.queryId, 1);
    assert.equal(e.message, message, JSON.stringify(frame));
  }
  c.send(subscribeFrame(1, await token({ table: "nope" }, "u1", 60_000)));
  const e = await c.expectT("queryError");
  assert.match(e.message, /^materialize failed: subscribe: Query\(UnknownTable/);

  c.send({ t: "mutate", queryId: 5, mutation: {} });
  assert.deepEqual(await c.expectT("error"), {
    t: "error",
    queryId: 5,
    message: "this room accepts named mutators only (pushMutation)",
  });
  c.send({ t: "pushMutation", envelope: { clientID: "c1", mid: 1, name: "x" } });
  assert.equal((await c.expectT("error")).message, "this room is read-only (no write plane configured)");
  c.send({ t: "pushMutation", envelope: { clientID: "c1", mid: "1", name: "x" } });
  assert.equal((await c.expectT("error")).message, "malformed pushMutation envelope");

  // Ignored without a reply: not JSON, not an object, unknown t, a bad queryId, hostile
  // nesting.
  for (const junk of [
    "not json",
    "[1,2,3]",
    "null",
    '{"t":5}',
    '{"t":"subscribe","queryId":"1","leaseToken":"x"}',
    '{"t":"unsubscribe"}',
    "[".repeat(100_000),
  ]) {
    c.send(junk);
  }
  await c.quiet(200);
  // The connection still works.
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.expectT("nhello");
  await c.expectT("nbatch");
  c.close();
  await shell.close();
  await rindled.close();
});

test("a second subject on a bound connection is refused", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  c.send(subscribeFrame(2, await token(NOTES, "u2", 60_000)));
  const e = await c.expectT("queryError");
  assert.equal(e.queryId, 2);
  assert.equal(e.message, "lease token refused: connection is bound to another subject");
  c.close();
  await shell.close();
  await rindled.close();
});

test("a shell whose upstream cannot mint a lease fails to start and frees its ports", async () => {
  const rindled = await FakeRindled.notes();
  rindled.failMint = true;
  const logs = new Logs();
  const o = { writes: false, downstream: { startupTimeoutMs: 0 } };
  await assert.rejects(createShell(rindled, o, logs), /^Error: upstream \/materialize failed: 500 [^(]*$/);
  await rindled.close();
});

test("start-up tries a failing lease mint again until it succeeds", async () => {
  const rindled = await FakeRindled.notes();
  rindled.failMint = true;
  const logs = new Logs();
  setTimeout(() => (rindled.failMint = false), 250);
  const shell = await createShell(rindled, { writes: false }, logs);
  await shell.ready;
  assert.ok(logs.count("start-up: the upstream lease (rindled) failed: upstream /materialize failed: 500") >= 2);
  assert.equal(logs.count("start-up: the upstream lease (rindled) succeeded after"), 1);
  await shell.close();
  await rindled.close();
});

test("start-up gives up past startupTimeoutMs and says how to wait longer", async () => {
  const rindled = await FakeRindled.notes();
  rindled.failMint = true;
  const o = { writes: false, downstream: { startupTimeoutMs: 250 } };
  await assert.rejects(
    createShell(rindled, o, new Logs()),
    /upstream \/materialize failed: 500 .*\(gave up after 2 tries in \d+ ms; the start-up timeout is 250 ms: .*startupTimeoutMs/,
  );
  await rindled.close();
});

test("downstream.maxQueryBytes reaches the room: a query past it is refused, the socket stays", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false, downstream: { maxQueryBytes: 4096 } });
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  const owners = Array.from({ length: 500 }, (_, i) => `owner-${i}`);
  const big = {
    table: "note",
    where: { type: "simple", op: "IN", left: { type: "column", name: "owner" }, right: { type: "literal", value: owners } },
  };
  c.send(subscribeFrame(2, await token(big, "u1", 60_000)));
  const e = await c.expectT("queryError");
  assert.equal(e.queryId, 2);
  assert.match(e.message, /^materialize refused: this query holds \d+ bytes .* the limit is 4096 \(downstream\.max_query_bytes\)/);
  c.send(subscribeFrame(3, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  c.close();
  await shell.close();
  await rindled.close();
});

test("downstream.maxHeldRows reaches the room: a query that would hold too many rows is taken back", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false, downstream: { maxHeldRows: 4 } });
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  const other = { table: "note", where: { type: "simple", op: "!=", left: { type: "column", name: "id" }, right: { type: "literal", value: -1 } } };
  c.send(subscribeFrame(2, await token(other, "u1", 60_000)));
  const e = await c.expectT("queryError");
  assert.equal(e.queryId, 2);
  assert.match(e.message, /^materialize refused: the room's queries would hold \d+ rows, the limit is 4 \(downstream\.max_held_rows\)/);
  c.close();
  await shell.close();
  await rindled.close();
});
