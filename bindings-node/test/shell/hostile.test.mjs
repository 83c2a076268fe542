// The room shell against hostile clients (docs/security.md; the native socket layer is the smol
// server's): an oversized message closes with 1009 naming the limit, a TCP connection
// that never upgrades is dropped (the handshake timeout), upgrades past maxConnections
// get HTTP 503, a connection has one init identity, and a clientID is bound to the
// subject of the first lease verified with it.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import { FakeRindled } from "./support/fakes.mjs";
import {
  Client,
  NOTES,
  isLmid,
  lmidOf,
  push,
  startLive,
  subscribeFrame,
  subscriber,
  token,
  withTimeout,
} from "./support/harness.mjs";

const BOUND = "clientID `A` is bound to another subject";

test("a message over maxFrameBytes closes the socket with 1009", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { downstream: { maxFrameBytes: 65_536 } });
  const c = await Client.connect(shell.port);
  c.send(JSON.stringify({ t: "init", clientID: "c1", pad: "x".repeat(70_000) }));
  const closed = await c.closed();
  assert.equal(closed.code, 1009);
  assert.match(closed.reason, /70\d{3} bytes, the limit is 65536 \(downstream\.maxFrameBytes\)/);
  const ok = await subscriber(shell, "c2", "u1", false);
  assert.equal(ok.notesSnapshot.batch.seq, 0, "a frame under the limit is served");
});

test("a TCP connection that never upgrades is dropped after the handshake timeout", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { downstream: { handshakeTimeoutMs: 200 } });
  for (const greeting of ["", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"]) {
    const sock = net.connect(shell.port, "127.0.0.1");
    sock.on("error", () => {});
    if (greeting) sock.write(greeting);
    await withTimeout(new Promise((resolve) => sock.on("close", resolve)), "the drop");
  }
});

test("upgrades past maxConnections are answered with HTTP 503", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { downstream: { maxConnections: 2 } });
  const a = await Client.connect(shell.port);
  const b = await Client.connect(shell.port);
  const refused = await withTimeout(
    new Promise((resolve) => {
      const sock = net.connect(shell.port, "127.0.0.1", () => {
        sock.write(
          "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        );
      });
      let answer = "";
      sock.on("data", (d) => {
        answer += String(d);
      });
      sock.on("error", () => {});
      sock.on("close", () => resolve(answer));
    }),
    "the refusal",
  );
  assert.match(refused, /^HTTP\/1\.1 503/);
  assert.match(refused, /connection limit \(2\)/);
  // A place frees up: the next client is served.
  a.close();
  await a.closed();
  await withTimeout(
    (async () => {
      for (;;) {
        try {
          const c = await Client.connect(shell.port);
          c.send({ t: "init", clientID: "later" });
          return c;
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    })(),
    "a place after a close",
  );
  b.close();
  await shell.close();
  await rindled.close();
});

test("a second init identity on a connection is refused with 1008", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled);
  const c = await Client.connect(shell.port);
  c.send({ t: "init", clientID: "c1" });
  c.send({ t: "init", clientID: "c1" });
  c.send({ t: "init", clientID: "c2" });
  const err = await c.expectT("error");
  assert.match(err.message, /one init identity per connection/);
  assert.equal((await c.closed()).code, 1008);
});

test("another subject can neither push under a bound clientID nor read its lmid", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled);
  const alice = await subscriber(shell, "A", "alice", true);
  alice.send(push("A", 1, "addNote", { id: 10, body: "ten" }));
  await alice.until("alice's ack", (v) => lmidOf(v) === 1);

  const bob = await subscriber(shell, "A", "bob", false);
  bob.send(push("A", 2, "addNote", { id: 66, body: "bob" }));
  const err = await bob.until("the refusal", (v) => v.t === "error");
  assert.ok(err.message.startsWith(BOUND), err.message);
  bob.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid" });
  const qe = await bob.until("the lmid refusal", (v) => v.t === "queryError");
  assert.ok(qe.message.startsWith(BOUND), qe.message);

  // The lmid query before the lease: dropped once the connection proves to be bob's.
  const sneaky = await Client.connect(shell.port);
  sneaky.send({ t: "init", clientID: "A" });
  sneaky.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid" });
  await sneaky.subscribed();
  sneaky.send(subscribeFrame(1, await token(NOTES, "bob", 60_000)));
  const dropped = await sneaky.expectT("queryError");
  assert.equal(dropped.queryId, 0);
  await sneaky.subscribed(); // bob's own lease still reads what it grants

  // Alice's real mid 2 applies: not absorbed as bob's duplicate.
  alice.send(push("A", 2, "addNote", { id: 20, body: "twenty" }));
  await alice.until("alice's second ack", (v) => lmidOf(v) === 2);
  const reader = await subscriber(shell, "R", "carol", false);
  const ids = reader.notesSnapshot.batch.ops.map((op) => op.row[0]);
  assert.deepEqual(ids, [1, 2, 3, 10, 20]);
  await sneaky.until("note 20", (v) => v.t === "nbatch" && v.queryId === 1);
  assert.equal(sneaky.log.filter(isLmid).length, 1, "only the lmid snapshot before the drop");
});
