// Peers that vanish without a FIN or RST, over real sockets (runtime-smol's
// server_liveness.rs): a daemon behind a partition (a relay that black-holes the link)
// and a client that stops answering pings.
import test from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { WebSocket } from "ws";
import { createRoomShell } from "@rindle/room-native";
import { FakeRindled } from "./support/fakes.mjs";
import { Client } from "./support/client.mjs";
import {
  Logs, NOTES, control, eventually, shellOptions, subscribeFrame, token, withTimeout,
} from "./support/harness.mjs";

/** A TCP relay to `port` whose open connections can go dark: sockets stay open, nothing
 *  more crosses. Connections made after `goDark()` work. */
async function blackhole(port) {
  let accepted = 0;
  let darkUpto = 0;
  const sockets = new Set();
  const server = net.createServer((inbound) => {
    const n = ++accepted;
    const outbound = net.connect(port, "127.0.0.1");
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        sockets.delete(s);
        if (darkUpto < n) {
          inbound.destroy();
          outbound.destroy();
        }
      });
    }
    inbound.on("data", (d) => darkUpto < n && outbound.write(d));
    outbound.on("data", (d) => darkUpto < n && inbound.write(d));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `ws://127.0.0.1:${server.address().port}`,
    accepted: () => accepted,
    goDark: () => {
      darkUpto = accepted;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test("a partitioned upstream is dropped after the silence timeout and the room catches up", async () => {
  const rindled = await FakeRindled.notes();
  const relay = await blackhole(Number(new URL(rindled.wsUrl).port));
  const logs = new Logs();
  const opts = shellOptions({ wsUrl: relay.url, controlUrl: rindled.controlUrl }, { writes: false }, logs);
  opts.upstream.silenceTimeoutMs = 900;
  const shell = await createRoomShell(opts);
  await withTimeout(shell.awaitLive(), "live");
  const c = await Client.connect(shell.port);
  c.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  await c.subscribed();
  // Quiet but healthy: the pings are answered, the link stays.
  await c.quiet(2_000);
  assert.equal(relay.accepted(), 1);
  relay.goDark();
  rindled.live([{ table: "note", op: "add", row: [9, "nine", "u1"] }]);
  const started = Date.now();
  assert.deepEqual(await c.closed(), { code: 1012, reason: "room re-subscribing" });
  const waited = Date.now() - started;
  assert.ok(waited >= 500 && waited < 5_000, `dropped after ${waited} ms`);
  assert.equal(logs.count("upstream silent for"), 1, logs.dump());
  await withTimeout(shell.awaitLive(), "live again");
  assert.equal(relay.accepted(), 2);
  const d = await Client.connect(shell.port);
  d.send(subscribeFrame(1, await token(NOTES, "u1", 60_000)));
  const snap = await d.subscribed();
  assert.ok(JSON.stringify(snap).includes("nine"), JSON.stringify(snap));
  const metrics = await control(shell, "GET", "/metrics");
  assert.match(metrics.body, /\nrindle_room_upstream_silences_total 1\n/);
  d.close();
  await shell.close();
  relay.close();
  await rindled.close();
});

test("a client that stops answering pings is closed with 1011; one that answers stays", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const opts = shellOptions(rindled, { writes: false, downstream: { silenceTimeoutMs: 900 } }, logs);
  const shell = await createRoomShell(opts);
  await withTimeout(shell.awaitLive(), "live");
  const alive = await Client.connect(shell.port);
  alive.send({ t: "init", clientID: "c1" });
  const ws = new WebSocket(`ws://127.0.0.1:${shell.port}/`, { autoPong: false });
  await new Promise((r) => ws.once("open", r));
  const dark = new Client(ws);
  let pings = 0;
  ws.on("ping", () => pings++);
  dark.send({ t: "init", clientID: "c2" });
  const started = Date.now();
  const [closed] = await Promise.all([dark.closed(), alive.quiet(3_000)]);
  const waited = Date.now() - started;
  assert.equal(closed.code, 1011);
  assert.match(closed.reason, /downstream\.silence_timeout_ms/);
  assert.equal(pings, 1);
  assert.ok(waited >= 800 && waited < 5_000, `closed after ${waited} ms`);
  const metrics = await control(shell, "GET", "/metrics");
  assert.match(metrics.body, /\nrindle_room_refused_total\{reason="silent"\} 1\n/);
  alive.close();
  await shell.close();
  await rindled.close();
});

test("an upstream message past upstream.maxFrameBytes fails the link with a reason", async () => {
  const rindled = await FakeRindled.notes();
  const logs = new Logs();
  const opts = shellOptions(rindled, { writes: false }, logs);
  opts.upstream.maxFrameBytes = 100; // the hello alone is larger
  const shell = await createRoomShell(opts);
  await eventually("the refusal in the log", () => logs.count("passes upstream.maxFrameBytes") > 0);
  assert.match(logs.dump(), /the limit is 100;/);
  await shell.close();
  await rindled.close();
});
