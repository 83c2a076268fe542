// The probes of the JS shell's control plane: GET /healthz and GET /readyz answer
// without the token (the core's routing rule, as in runtime-smol's control_probes.rs).
import test from "node:test";
import assert from "node:assert/strict";
import { FakeRindled } from "./support/fakes.mjs";
import { control, eventually, startLive } from "./support/harness.mjs";

test("the probes answer without a token and follow readiness", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const live = { status: 200, body: '{"live":true}' };
  const ready = { status: 200, body: '{"ready":true}' };
  assert.deepEqual(await control(shell, "GET", "/healthz", undefined, null), live);
  assert.deepEqual(await control(shell, "GET", "/readyz", undefined, null), ready);
  assert.deepEqual(await control(shell, "GET", "/readyz", undefined, "wrong"), ready);
  const unauthorized = { status: 401, body: '{"error":"unauthorized"}' };
  assert.deepEqual(await control(shell, "GET", "/metrics", undefined, null), unauthorized);
  assert.deepEqual(await control(shell, "POST", "/healthz", "", null), unauthorized);
  // The upstream goes away and holds the next snapshot: alive, not ready.
  rindled.hold();
  rindled.dropConn();
  await eventually("the re-subscribe", () => rindled.subscribes >= 2);
  assert.deepEqual(await control(shell, "GET", "/readyz", undefined, null), {
    status: 503,
    body: '{"ready":false}',
  });
  assert.deepEqual(await control(shell, "GET", "/healthz", undefined, null), live);
  rindled.release();
  await shell.awaitLive();
  assert.deepEqual(await control(shell, "GET", "/readyz", undefined, null), ready);
  await shell.close();
  await rindled.close();
});

test("/metrics serves the core's Prometheus text behind the token", async () => {
  const rindled = await FakeRindled.notes();
  const shell = await startLive(rindled, { writes: false });
  const res = await control(shell, "GET", "/metrics");
  assert.equal(res.status, 200);
  assert.match(res.body, /^# HELP rindle_room_live /);
  assert.match(res.body, /\nrindle_room_live 1\n/);
  assert.match(res.body, /\nrindle_room_incarnations_total 1\n/);
  assert.match(res.body, /\nrindle_room_refused_total\{reason="max_connections"\} 0\n/);
  await shell.close();
  await rindled.close();
});
