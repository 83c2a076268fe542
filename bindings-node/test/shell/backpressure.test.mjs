// The per-socket send budget: a stalled reader is terminated (no close frame) while the
// other subscribers keep receiving every frame (runtime-smol's server_backpressure.rs).
import test from "node:test";
import assert from "node:assert/strict";
import { FakeRindled } from "./support/fakes.mjs";
import { Client, Logs, NOTES, eventually, startLive, stats, subscribeFrame, subscriber, token } from "./support/harness.mjs";

test("a stalled reader is terminated while others keep receiving", async (t) => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const shell = await startLive(rindled, { writes: false, sendBudgetBytes: 256 * 1024 }, logs);
  const healthy = await subscriber(shell, "h", "u1", false);
  const stalled = await Client.connect(shell.port);
  stalled.send(subscribeFrame(1, await token(NOTES, "u2", 600_000)));
  await eventually("both subscriptions", async () => (await stats(shell)).subscriptions === 2);
  // Stall: stop reading the socket (the kernel buffers fill, then the room's queue).
  stalled.ws._socket.pause();

  const body = "x".repeat(4096);
  let id = 1000;
  let terminatedAt;
  for (let round = 1; round <= 600; round++) {
    const ops = [];
    for (let i = 0; i < 16; i++) ops.push({ table: "note", op: "add", row: [++id, body, "u2"] });
    rindled.live(ops);
    // Pace the upstream on the healthy reader: it never lags, and sees every seq.
    const b = await healthy.until("the batch", (v) => v.t === "nbatch");
    assert.equal(b.batch.seq, round);
    if (terminatedAt === undefined && logs.count("send budget exceeded") > 0) terminatedAt = round;
    if (terminatedAt !== undefined && round >= terminatedAt + 5) break;
  }
  assert.ok(terminatedAt !== undefined, "the stalled reader was terminated");
  assert.equal(logs.count("send budget exceeded"), 1, logs.dump());
  await eventually("the stalled connection gone", async () => {
    const s = await stats(shell);
    return s.connections === 1 && s.subscriptions === 1;
  });
  // The stalled client finds its buffered frames, then a dropped socket: no close frame.
  stalled.ws._socket.resume();
  const ending = await stalled.closed();
  assert.equal(ending.code, 1006, "abnormal closure: no close frame");
  const lastSeq = Math.max(0, ...stalled.log.filter((v) => v.t === "nbatch").map((v) => v.batch.seq));
  assert.ok(lastSeq < terminatedAt, `terminated at round ${terminatedAt}, yet it got seq ${lastSeq}`);
  t.diagnostic(`terminated at round ${terminatedAt}; the stalled reader got seq ${lastSeq}`);
  healthy.close();
  await shell.close();
  await rindled.close();
});
