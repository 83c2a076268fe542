// The write-behind flush against a fake authority over HTTP (`httpAuthority`): the
// body, drain, an outage with no loss, a CAS conflict, fencing (4009), and boot
// settlement of an unconfirmed flush with the durable-lmid probe
// (runtime-smol's server_authority.rs).
import test from "node:test";
import assert from "node:assert/strict";
import { httpAuthority, memoryJournal } from "@rindle/room-native";
import { FakeAuthority, FakeRindled } from "./support/fakes.mjs";
import {
  Logs, control, eventually, lmidOf, push, sleep, startLive, stats, subscriber,
} from "./support/harness.mjs";

/** An authority holding the daemon's rows (as the real one would). */
async function fakeAuthority() {
  const auth = await FakeAuthority.start();
  auth.put("note", [1, "one", "u1"]);
  auth.put("note", [2, "two", "u1"]);
  auth.put("note", [3, "three", "u2"]);
  return auth;
}

const acked = (c, mid) => c.until(`the ack of ${mid}`, (v) => (lmidOf(v) ?? 0) >= mid);

test("writes flush to the authority and drain reports the last seq", async () => {
  const rindled = await FakeRindled.notes();
  const auth = await fakeAuthority();
  auth.echoTo(rindled); // as rindled does: each flush record is confirmed at its echo
  const shell = await startLive(rindled, { authority: httpAuthority(auth.urls()) });
  const c = await subscriber(shell, "c1", "u1", true);
  c.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  c.send(push("c1", 2, "setBody", { id: 1, body: "uno" }));
  c.send(push("c1", 3, "refuse", {}));
  await acked(c, 3);
  const drained = await control(shell, "POST", "/drain", "");
  assert.equal(drained.status, 200);
  const body = JSON.parse(drained.body);
  assert.equal(body.drained, true);
  assert.ok(body.finalFlushSeq >= 1, drained.body);
  assert.deepEqual(auth.row("note", [10]), [10, "ten", "u1"]);
  assert.deepEqual(auth.row("note", [1]), [1, "uno", "u1"]);
  assert.deepEqual(auth.row("_rindle_client_mutations", ["c1"]), ["c1", 3]);
  assert.deepEqual(auth.row("_rindle_room_mutation_outcomes", ["c1", 3]), [
    "c1", 3, "rejected", "not allowed", null, null,
  ]);
  const first = auth.bodies[0];
  assert.ok(
    first.startsWith(
      '{"source":"room:doc/1:1","offset":"00000000000000000001","doc":"doc/1","epoch":1,"batchHash":"',
    ),
    first,
  );
  assert.ok(first.includes(',"cas":true,"changes":[{"table":"note","op":'), first);
  const s = await stats(shell);
  assert.equal(s.pendingMutations, 0);
  assert.equal(s.dirtyKeys, 0);
  assert.equal(s.placementEpoch, 1);
  assert.equal(s.flushesConfirmed, body.finalFlushSeq);
  // Draining a quiet room reports the same seq without flushing.
  assert.deepEqual(await control(shell, "POST", "/drain", ""), drained);
  c.close();
  await shell.close();
  await auth.close();
  await rindled.close();
});

test("an authority outage loses nothing", async () => {
  const rindled = await FakeRindled.notes();
  const auth = await fakeAuthority();
  auth.echoTo(rindled); // as rindled does: each flush record is confirmed at its echo
  const logs = new Logs();
  const shell = await startLive(rindled, { authority: httpAuthority(auth.urls()) }, logs);
  const c = await subscriber(shell, "c1", "u1", true);
  auth.setDown(true);
  for (let mid = 1; mid <= 5; mid++) c.send(push("c1", mid, "addNote", { id: 10 + mid, body: `n${mid}` }));
  // Acks do not wait for the authority: the journal is the ack gate.
  await acked(c, 5);
  await sleep(400);
  // c1 is new to the room, and the authority could not confirm it: its writes run and
  // are acknowledged, but no flush goes out before the authority answers (one of them
  // could be a mid it already committed; docs/fleet.md).
  const held = await stats(shell);
  assert.equal(held.flushInFlight, false);
  assert.equal(held.dirtyKeys, 5);
  assert.deepEqual(auth.rows("_rindle_client_mutations"), []);
  auth.setDown(false);
  assert.equal((await control(shell, "POST", "/drain", "")).status, 200);
  for (let mid = 1; mid <= 5; mid++) {
    assert.deepEqual(auth.row("note", [10 + mid]), [10 + mid, `n${mid}`, "u1"]);
  }
  assert.equal(auth.rows("note").length, 3 + 5);
  assert.deepEqual(auth.row("_rindle_client_mutations", ["c1"]), ["c1", 5]);
  assert.ok(logs.count("authority call failed (retrying in") >= 1, logs.dump());
  c.close();
  await shell.close();
  await auth.close();
  await rindled.close();
});

test("a CAS conflict converges to the authority's image", async () => {
  const rindled = await FakeRindled.notes();
  const auth = await fakeAuthority();
  const logs = new Logs();
  const shell = await startLive(rindled, { authority: httpAuthority(auth.urls()) }, logs);
  const c = await subscriber(shell, "c1", "u1", true);
  // Another writer changed note 1 at the authority; the room has not heard yet.
  auth.put("note", [1, "elsewhere", "u9"]);
  c.send(push("c1", 1, "setBody", { id: 1, body: "mine" }));
  const notes = (v) => v.t === "nbatch" && v.queryId === 1;
  assert.deepEqual((await c.until("my edit", notes)).batch.ops[0].new, [1, "mine", "u1"]);
  // The flush conflicts; the room converges to the authority's row.
  assert.deepEqual((await c.until("the corrective edit", notes)).batch.ops, [
    { table: "note", op: "edit", old: [1, "mine", "u1"], new: [1, "elsewhere", "u9"] },
  ]);
  assert.equal((await control(shell, "POST", "/drain", "")).status, 200);
  assert.deepEqual(auth.row("note", [1]), [1, "elsewhere", "u9"]);
  assert.deepEqual(auth.row("_rindle_client_mutations", ["c1"]), ["c1", 1]);
  assert.ok(logs.count("CAS-conflicted") >= 1);
  c.close();
  await shell.close();
  await auth.close();
  await rindled.close();
});

test("a flush fenced under our epoch closes with 4009 and stops the room", async () => {
  const rindled = await FakeRindled.notes();
  const auth = await fakeAuthority();
  const logs = new Logs();
  const shell = await startLive(rindled, { authority: httpAuthority(auth.urls()) }, logs);
  const c = await subscriber(shell, "c1", "u1", true);
  auth.fence(); // another placement claimed the document
  c.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  assert.deepEqual(await c.closed(), { code: 4009, reason: "room_moved" });
  assert.equal(logs.count("room moved: flush 1 fenced (authority epoch 2)"), 1, logs.dump());
  assert.equal(auth.row("note", [10]), undefined);
  // The shell stopped: its port refuses connections.
  await eventually("the listener closed", async () => {
    try {
      const r = await fetch(`http://127.0.0.1:${shell.port}/`);
      await r.text();
      return false;
    } catch {
      return true;
    }
  });
  await shell.close();
  await auth.close();
  await rindled.close();
});

test("a restart settles the unconfirmed flush, probes lmids and replays", async () => {
  const rindled = await FakeRindled.notes();
  const auth = await fakeAuthority();
  const journal = memoryJournal();
  const opts = { authority: httpAuthority(auth.urls()), journal };
  const shell = await startLive(rindled, opts);
  const c = await subscriber(shell, "c1", "u1", true);
  c.send(push("c1", 1, "addNote", { id: 10, body: "ten" }));
  await acked(c, 1);
  await control(shell, "POST", "/drain", "");
  // (Mid 1's flush committed, and its record waits for an echo this daemon never sends:
  // it stays unconfirmed.) The authority goes away; mid 2 is journaled and acked, its
  // flush journaled and never answered; then the process stops.
  auth.setDown(true);
  c.send(push("c1", 2, "addNote", { id: 11, body: "eleven" }));
  await acked(c, 2);
  await eventually("both unconfirmed flushes", async () => (await journal.replayFlushes()).records.length === 2);
  await shell.close();
  c.close();
  const stuck = (await journal.replayFlushes()).records.at(-1).body;

  // The next process: claims epoch 2, re-sends the records verbatim (fenced: an old
  // epoch), probes the durable lmids (c1 → 1): mid 1's flush had been committed (taken
  // in), mid 2's not (dropped); replays mid 2 and flushes it.
  auth.setDown(false);
  const logs2 = new Logs();
  const shell2 = await startLive(rindled, opts, logs2);
  assert.equal(logs2.count("flush 2 (old epoch 1) fenced: dropped"), 1, logs2.dump());
  assert.equal(logs2.count("flush 1 (old epoch 1) fenced, but it had been committed"), 1, logs2.dump());
  assert.equal(logs2.count("durable seed: c1→1"), 1, logs2.dump());
  assert.ok(auth.bodies.filter((b) => b === stuck).length >= 2, "resent verbatim");
  assert.equal((await control(shell2, "POST", "/drain", "")).status, 200);
  assert.deepEqual(auth.row("note", [11]), [11, "eleven", "u1"]);
  assert.deepEqual(auth.row("_rindle_client_mutations", ["c1"]), ["c1", 2]);
  const d = await subscriber(shell2, "c1", "u1", true);
  d.send(push("c1", 2, "addNote", { id: 11, body: "eleven" }));
  await d.quiet(200);
  d.close();
  await shell2.close();
  await auth.close();
  await rindled.close();
});
