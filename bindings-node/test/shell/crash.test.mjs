// kill -9 mid-traffic: the JS shell in a child process with a durable file journal,
// SIGKILL while a client pushes; after a restart every acknowledged mutation is present
// exactly once, and the client's re-sends complete the stream. Then SIGTERM exits 0
// (runtime-smol's server_crash.rs, against the JS shell).
import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FakeRindled, track } from "./support/fakes.mjs";
import { Client, NOTES, lmidOf, subscribeFrame, token } from "./support/harness.mjs";

const ROOM = path.join(path.dirname(fileURLToPath(import.meta.url)), "support", "room-process.mjs");
const MIDS = 300;

function startRoom(cfg) {
  const child = spawn(process.execPath, [ROOM, JSON.stringify(cfg)], { stdio: ["ignore", "pipe", "pipe"] });
  const log = [];
  child.stderr.setEncoding("utf8").on("data", (d) => log.push(d));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  track({ close: async () => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL") });
  const port = new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    exited.then((e) => reject(new Error(`the room exited early (${JSON.stringify(e)}):\n${log.join("")}`)));
  });
  return { child, port, exited, log };
}

async function client(port) {
  const c = await Client.connect(port);
  c.send({ t: "init", clientID: "c1" });
  c.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
  const lmid = await c.subscribed();
  c.send(subscribeFrame(1, await token(NOTES, "u1", 600_000)));
  const notes = await c.subscribed();
  return { c, lmid, notes };
}

const insert = (mid) => ({
  t: "pushMutation",
  envelope: { clientID: "c1", mid, name: "note.insert", args: { id: 1000 + mid, body: `m${mid}`, owner: "u1" } },
});
const ids = (snapshot) => snapshot.batch.ops.map((op) => op.row[0]).filter((id) => id > 1000);
const lmidIn = (snapshot) => snapshot.batch.ops[0]?.row[1] ?? 0;

test("kill -9 mid-traffic loses no acknowledged mutation and applies each once", async (t) => {
  const rindled = await FakeRindled.notes();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-crash-"));
  const cfg = { wsUrl: rindled.wsUrl, controlUrl: rindled.controlUrl, journal: path.join(dir, "journal") };

  const first = startRoom(cfg);
  const { c } = await client(await first.port);
  for (let mid = 1; mid <= MIDS; mid++) c.send(insert(mid));
  let acked = 0;
  while (acked < 50) acked = Math.max(acked, lmidOf(await c.next()) ?? 0);
  first.child.kill("SIGKILL");
  assert.equal((await first.exited).signal, "SIGKILL");
  // Everything the client saw acknowledged before the socket died.
  for (;;) {
    const ev = await c.nextEvent(2_000);
    if (!ev.frame) break;
    acked = Math.max(acked, lmidOf(ev.frame) ?? 0);
  }
  c.close();

  const second = startRoom(cfg);
  const again = await client(await second.port);
  const durable = lmidIn(again.lmid);
  t.diagnostic(`acked ${acked} before the kill; ${durable} durable after the restart`);
  assert.ok(durable >= acked, `every acked mid survived (acked ${acked}, durable ${durable})`);
  const expected = Array.from({ length: durable }, (_, i) => 1001 + i);
  assert.deepEqual(ids(again.notes), expected, "each journaled mutation applied exactly once");
  // The client re-sends what was not durable; the stream completes.
  for (let mid = durable + 1; mid <= MIDS; mid++) again.c.send(insert(mid));
  if (durable < MIDS) await again.c.until("the last ack", (v) => lmidOf(v) === MIDS);
  again.c.close();
  second.child.kill("SIGTERM");
  assert.equal((await second.exited).code, 0);

  const third = startRoom(cfg);
  const last = await client(await third.port);
  assert.equal(lmidIn(last.lmid), MIDS);
  assert.deepEqual(ids(last.notes), Array.from({ length: MIDS }, (_, i) => 1001 + i));
  last.c.close();
  third.child.kill("SIGTERM");
  assert.equal((await third.exited).code, 0);
  fs.rmSync(dir, { recursive: true, force: true });
});
