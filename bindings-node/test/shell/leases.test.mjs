// Leases after subscribe (expiry, revocation) and the control plane
// (runtime-smol's server_leases.rs, against the JS shell; expiry runs on real time with
// short leases instead of a fake clock).
import test from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { FakeRindled } from "./support/fakes.mjs";
import {
  Client, NOTES, control, eventually, sleep, startLive, stats, subscribeFrame, subscriber, token,
} from "./support/harness.mjs";

test("leases expire: the expired subscription is dropped, the others keep receiving", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 400)));
  await c.subscribed();
  c.send(subscribeFrame(2, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  assert.deepEqual(await c.expectT("queryError"), {
    t: "queryError",
    queryId: 1,
    message: "expired lease — renew through the API server",
  });
  rindled.live([{ table: "note", op: "add", row: [9, "nine", "u1"] }]);
  assert.equal((await c.expectT("nbatch")).queryId, 2);
  c.close();
  await shell.close();
  await rindled.close();
});

test("revocation closes the user's sockets and refuses older tokens", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const old = await token(NOTES, "u1", 600_000);
  const a = await Client.connect(shell.port);
  a.send(subscribeFrame(1, old));
  await a.subscribed();
  a.send(subscribeFrame(2, old));
  await a.subscribed();
  // Bound to u1 with no live subscription: still revoked.
  const bound = await Client.connect(shell.port);
  bound.send(subscribeFrame(1, old));
  await bound.subscribed();
  bound.send({ t: "unsubscribe", queryId: 1 });
  const other = await Client.connect(shell.port);
  other.send(subscribeFrame(1, await token(NOTES, "u2", 600_000)));
  await other.subscribed();
  await sleep(20);

  for (const [body, status, reply] of [
    ["", 400, '{"error":"invalid JSON"}'],
    ["null", 400, '{"error":"invalid JSON"}'],
    ["{}", 400, '{"error":"userId required"}'],
    ['{"userId":""}', 400, '{"error":"userId required"}'],
  ]) {
    assert.deepEqual(await control(shell, "POST", "/revoke", body), { status, body: reply });
  }
  assert.deepEqual(await control(shell, "POST", "/revoke", '{"userId":"u1"}'), {
    status: 200,
    body: '{"revoked":2}',
  });
  const errors = [];
  for (let i = 0; i < 2; i++) {
    const e = await a.expectT("queryError");
    assert.equal(e.message, "lease revoked");
    errors.push(e.queryId);
  }
  assert.deepEqual(errors.sort(), [1, 2]);
  assert.deepEqual(await a.closed(), { code: 1008, reason: "revoked" });
  assert.deepEqual(await bound.closed(), { code: 1008, reason: "revoked" });
  rindled.live([{ table: "note", op: "add", row: [9, "nine", "u1"] }]);
  await other.expectT("nbatch");

  const again = await Client.connect(shell.port);
  again.send(subscribeFrame(1, old));
  assert.equal((await again.expectT("queryError")).message, "lease token refused: revoked");
  const fresh = await token(NOTES, "u1", 600_000, Date.now() + 50);
  again.send(subscribeFrame(1, fresh));
  await again.expectT("nhello");
  other.close();
  again.close();
  await shell.close();
  await rindled.close();
});

test("the control plane refuses a body past the core's limit and keeps serving", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const native = createRequire(import.meta.url)("../../binding.js");
  const limits = JSON.parse(native.controlLimits());
  assert.equal(limits.maxBodyBytes, 1 << 20);
  const big = JSON.stringify({ userId: "u".repeat(limits.maxBodyBytes) });
  assert.deepEqual(await control(shell, "POST", "/revoke", big), {
    status: 400,
    body: `{"error":"bad request: body exceeds ${limits.maxBodyBytes} bytes"}`,
  });
  assert.equal((await control(shell, "GET", "/stats")).status, 200);
  await shell.close();
  await rindled.close();
});

test("the control plane authenticates, routes and reports", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const unauthorized = { status: 401, body: '{"error":"unauthorized"}' };
  assert.deepEqual(await control(shell, "GET", "/stats", undefined, null), unauthorized);
  assert.deepEqual(await control(shell, "GET", "/stats", undefined, "nope"), unauthorized);
  const unknown = { status: 404, body: '{"error":"unknown endpoint"}' };
  assert.deepEqual(await control(shell, "GET", "/nothing"), unknown);
  assert.deepEqual(await control(shell, "POST", "/stats", ""), unknown);
  assert.deepEqual(await control(shell, "GET", "/stats?x=1"), unknown);
  const c = await subscriber(shell, "c1", "u1", false);
  assert.deepEqual(await control(shell, "GET", "/stats"), {
    status: 200,
    body:
      '{"live":true,"connections":1,"subscriptions":1,"materializations":1,"pendingMutations":0,' +
      '"dirtyKeys":0,"placementEpoch":0,"flushesConfirmed":0,"flushInFlight":false}',
  });
  assert.deepEqual(await control(shell, "POST", "/drain", ""), {
    status: 200,
    body: '{"finalFlushSeq":0,"drained":true}',
  });
  c.close();
  // Not live while the upstream is away.
  rindled.hold();
  rindled.dropConn();
  await eventually("the incarnation death", () => rindled.subscribes >= 2);
  assert.equal((await stats(shell)).live, false);
  await shell.close();
  await rindled.close();
});
