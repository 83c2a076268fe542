// Incarnation deaths over real sockets: an upstream drop, an upstream `queryError`,
// upstream violations — each closes the subscribed sockets with 1012, rotates the
// bootId and re-subscribes upstream (runtime-smol's server_incarnations.rs).
import test from "node:test";
import assert from "node:assert/strict";
import { FakeRindled } from "./support/fakes.mjs";
import {
  Client, Logs, NOTES, eventually, sleep, startLive, subscribeFrame, token, withTimeout,
} from "./support/harness.mjs";

test("an upstream drop closes with 1012 and the next incarnation serves the same rows", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const shell = await startLive(rindled, { writes: false }, logs);
  const boot1 = shell.bootId();
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.expectT("nhello");
  const snap1 = await c.expectT("nbatch");
  // A connection with no subscription stays open through the death.
  const idle = await Client.connect(shell.port);
  idle.send({ t: "init", clientID: "idle" });

  rindled.dropConn();
  assert.deepEqual(await c.closed(), { code: 1012, reason: "room re-subscribing" });
  await eventually("a reconnect", () => rindled.subscribes === 2 && rindled.conns === 2);
  await withTimeout(shell.awaitLive(), "live again");
  assert.equal(rindled.mints, 1);
  const boot2 = shell.bootId();
  assert.notEqual(boot1, boot2);

  const d = await Client.connect(shell.port);
  d.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  assert.equal((await d.expectT("nhello")).bootId, boot2);
  assert.deepEqual((await d.expectT("nbatch")).batch.ops, snap1.batch.ops);
  await idle.quiet(100);
  assert.ok(logs.count("incarnation dead: upstream socket closed") >= 1, logs.dump());
  d.close();
  idle.close();
  await shell.close();
  await rindled.close();
});

test("an upstream queryError re-mints the lease and re-subscribes on the same socket", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const shell = await startLive(rindled, { writes: false }, logs);
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  rindled.sendRaw('{"t":"queryError","queryId":1,"message":"lease expired"}');
  assert.deepEqual(await c.closed(), { code: 1012, reason: "room re-subscribing" });
  await eventually("a re-subscribe", () => rindled.subscribes === 2);
  await withTimeout(shell.awaitLive(), "live again");
  assert.equal(rindled.mints, 2);
  assert.equal(rindled.conns, 1, "the same socket is reused");
  assert.deepEqual(rindled.leases, ["lease-1", "lease-2"]);
  assert.equal(rindled.authHeaders[0], "Bearer up-token");
  assert.equal(rindled.materializeBodies[0], '{"ast":{"table":"note"}}');
  assert.equal(logs.count("incarnation dead: upstream queryError: lease expired"), 1);
  await shell.close();
  await rindled.close();
});

test("upstream violations kill the incarnation and re-subscribe on the same socket", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const shell = await startLive(rindled, { writes: false }, logs);
  const garbage = [
    "this is not JSON",
    '{"t":"nbatch","queryId":1,"batch":{"epoch":1,"seq":9,"normalizedFp":"x","ops":[]}}',
    "[1]",
  ];
  for (const [n, frame] of garbage.entries()) {
    const c = await Client.connect(shell.port);
    c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
    await c.subscribed();
    rindled.sendRaw(frame);
    assert.deepEqual(await c.closed(), { code: 1012, reason: "room re-subscribing" });
    await eventually("a re-subscribe", () => rindled.subscribes === n + 2);
    await withTimeout(shell.awaitLive(), "live again");
  }
  assert.equal(rindled.conns, 1);
  assert.equal(logs.count("incarnation dead: upstream frame is not JSON"), 1);
  assert.equal(logs.count("incarnation dead: upstream apply failed"), 1);
  assert.equal(logs.count("incarnation dead: upstream frame is not a JSON object"), 1);
  // Frames for another upstream queryId are ignored.
  rindled.sendRaw('{"t":"queryError","queryId":2,"message":"not ours"}');
  await sleep(100);
  assert.equal(rindled.subscribes, 4);
  await shell.close();
  await rindled.close();
});
