// The per-socket send budget: a stalled reader is cut (a 1008 close after what is in
// flight, its queue dropped) while the other subscribers keep receiving every frame —
// the same native socket layer and the same outcome as runtime-smol's
// server_backpressure.rs.
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
  // The stalled client finds its buffered frames, then the 1008 close naming the budget —
  // or, when even the close frame found the socket buffers full, a socket dropped after
  // the close grace (1006).
  stalled.ws._socket.resume();
  const ending = await stalled.closed();
  if (ending.code === 1008) {
    assert.match(String(ending.reason), /^send budget exceeded: /);
  } else {
    assert.equal(ending.code, 1006, `a cut socket closes with 1008 or is dropped, not ${ending.code}`);
  }
  const lastSeq = Math.max(0, ...stalled.log.filter((v) => v.t === "nbatch").map((v) => v.batch.seq));
  assert.ok(lastSeq < terminatedAt, `terminated at round ${terminatedAt}, yet it got seq ${lastSeq}`);
  t.diagnostic(`terminated at round ${terminatedAt}; the stalled reader got seq ${lastSeq}`);
  healthy.close();
  await shell.close();
  await rindled.close();
});
