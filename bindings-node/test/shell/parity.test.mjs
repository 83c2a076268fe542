// Parity: one client script, run against the smol server (the `rindle-room` binary of
// runtime-smol) and against this package's JS shell, each following its own fake
// rindled with the same rows and the same live batches and flushing to its own fake
// authority. Every client must receive the same frames (bootIds aside), the control
// plane must answer the same, and the two authorities must end with the same rows.
//
// The binary comes from `$RINDLE_ROOM_SMOL_BIN` or `$CARGO_TARGET_DIR/debug/`
// (scripts/test-node.sh builds it); without one the test is skipped.
import test from "node:test";
import assert from "node:assert/strict";
import { createRoomShell, httpAuthority } from "@rindle/room-native";
import { FakeAuthority, FakeRindled, track } from "./support/fakes.mjs";
import { CONTROL, Client, DOC, KEY, KID, NOTES, Logs, sleep, token } from "./support/harness.mjs";
import { smolBinary, smolConfig, startSmol } from "./support/smol.mjs";

const describe = (v) =>
  v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;

/** The JS twins of the smol server's generated CRUD mutators (`writes.crud = true`). */
function crudMutators(table) {
  const row = (op, args) => {
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      throw new Error(`the args of \`${table}.${op}\` must be an object of column values, got ${describe(args)}`);
    }
    return args;
  };
  return {
    [`${table}.insert`]: (tx, args) => tx.insert(table, row("insert", args)),
    [`${table}.update`]: (tx, args) => tx.update(table, row("update", args)),
    [`${table}.upsert`]: (tx, args) => tx.upsert(table, row("upsert", args)),
    [`${table}.delete`]: (tx, args) => tx.delete(table, row("delete", args)),
  };
}

/** Every event a client got until it has been quiet for `ms`. */
async function drainClient(c, ms = 100) {
  const out = [];
  for (;;) {
    const ev = await c.nextEvent(ms);
    if (ev.timeout) return out;
    out.push(ev.frame ?? { close: ev.close.code, reason: ev.close.reason });
  }
}

/** bootIds differ by construction: replace them (consistently per target). */
function normalize(frames, boots) {
  return JSON.parse(
    JSON.stringify(frames, (key, value) => {
      if (key === "bootId" && typeof value === "string") {
        if (!boots.has(value)) boots.set(value, `<boot ${boots.size + 1}>`);
        return boots.get(value);
      }
      return value;
    }),
  );
}

const push = (mid, name, args) => ({ t: "pushMutation", envelope: { clientID: "c1", mid, name, args } });
const U2_NOTES = {
  table: "note",
  where: { type: "simple", op: "=", left: { type: "column", name: "owner" }, right: { type: "literal", value: "u2" } },
};

/** The client script. `target` = {port, controlPort, rindled}; returns the transcript. */
async function script(target, iat) {
  const transcript = [];
  const boots = new Map();
  const clients = {};
  const ctl = async (method, p, body) => {
    const res = await fetch(`http://127.0.0.1:${target.controlPort}${p}`, {
      method,
      headers: { authorization: `Bearer ${CONTROL}` },
      ...(body !== undefined ? { body } : {}),
    });
    return { status: res.status, body: await res.text() };
  };
  // Quiescent: nothing dirty, nothing pending, no flush in flight — so a step's frames
  // (including a flush's corrective ones) all arrive within that step, whatever the load.
  const settle = async () => {
    for (let i = 0; i < 1000; i++) {
      const s = JSON.parse((await ctl("GET", "/stats")).body);
      if (s.dirtyKeys === 0 && s.pendingMutations === 0 && !s.flushInFlight) return;
      await sleep(10);
    }
    throw new Error("the room never quiesced");
  };
  const step = async (label, action) => {
    const result = await action();
    await sleep(20);
    await settle();
    const frames = {};
    for (const [name, c] of Object.entries(clients)) frames[name] = normalize(await drainClient(c), boots);
    transcript.push({ label, ...(result !== undefined ? { result } : {}), frames });
  };
  const lease = (ast, sub) => token(ast, sub, 600_000, iat);

  await step("A connects: init, lmid query, notes", async () => {
    clients.A = await Client.connect(target.port);
    clients.A.send({ t: "init", clientID: "c1" });
    clients.A.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
    clients.A.send({ t: "subscribe", queryId: 1, leaseToken: await lease(NOTES, "u1") });
  });
  await step("B connects: u2's notes and all notes", async () => {
    clients.B = await Client.connect(target.port);
    clients.B.send({ t: "subscribe", queryId: 7, leaseToken: await lease(U2_NOTES, "u2") });
    clients.B.send({ t: "subscribe", queryId: 8, leaseToken: await lease(NOTES, "u2") });
  });
  await step("upstream live batch", () =>
    target.rindled.live([
      { table: "note", op: "add", row: [4, "four", "u2"] },
      { table: "note", op: "edit", old: [1, "one", "u1"], new: [1, "one!", "u1"] },
    ]),
  );
  const pushes = [
    ["insert", push(1, "note.insert", { id: 10, body: "ten", owner: "u1" })],
    ["update", push(2, "note.update", { id: 1, body: "uno" })],
    ["insert of an existing key (rejected)", push(3, "note.insert", { id: 2, body: "dup", owner: "u1" })],
    ["unknown mutator (rejected)", push(4, "nope", {})],
    ["delete", push(5, "note.delete", { id: 3 })],
    ["upsert", push(6, "note.upsert", { id: 3, body: "back", owner: "u2" })],
    ["args not an object (rejected)", push(7, "note.update", "just a string")],
    ["a re-sent applied mid (silent)", push(6, "note.upsert", { id: 3, body: "back", owner: "u2" })],
    ["a re-sent rejected mid (re-answered)", push(4, "nope", {})],
    ["a mid gap (error)", push(99, "note.insert", {})],
    ["update of a missing row (no-op, acked)", push(8, "note.update", { id: 77, body: "x" })],
  ];
  for (const [label, frame] of pushes) await step(`push: ${label}`, () => clients.A.send(frame));
  await step("A re-subscribes its notes (epoch 2)", async () => {
    clients.A.send({ t: "subscribe", queryId: 1, leaseToken: await lease(NOTES, "u1") });
  });
  await step("B unsubscribes 7; an upstream remove", async () => {
    clients.B.send({ t: "unsubscribe", queryId: 7 });
    await sleep(50);
    target.rindled.live([{ table: "note", op: "remove", row: [2, "two", "u1"] }]);
  });
  await step("bad input on A", async () => {
    clients.A.send({ t: "mutate", queryId: 5, mutation: {} });
    clients.A.send({ t: "subscribe", queryId: 5, leaseToken: "garbage" });
    clients.A.send({ t: "subscribe", queryId: 6, name: "someQuery", args: {} });
    clients.A.send({ t: "subscribe", queryId: 6, leaseToken: await lease({ table: "nope" }, "u1") });
    clients.A.send({ t: "subscribe", queryId: 6, leaseToken: await lease(NOTES, "u2") });
    clients.A.send("not json");
  });
  await step("stats", () => ctl("GET", "/stats"));
  await step("drain", () => ctl("POST", "/drain", ""));
  await step("revoke u2", () => ctl("POST", "/revoke", '{"userId":"u2"}'));
  delete clients.B;
  await step("the upstream drops: incarnation death", () => target.rindled.dropConn());
  // Wait for the next incarnation, then a fresh connection sees the same rows.
  for (let i = 0; ; i++) {
    const s = JSON.parse((await ctl("GET", "/stats")).body);
    if (s.live) break;
    if (i > 500) throw new Error("never live again");
    await sleep(20);
  }
  delete clients.A;
  await step("A reconnects to the next incarnation", async () => {
    clients.A2 = await Client.connect(target.port);
    clients.A2.send({ t: "init", clientID: "c1" });
    clients.A2.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
    clients.A2.send({ t: "subscribe", queryId: 1, leaseToken: await lease(NOTES, "u1") });
  });
  await step("a mutation in the new incarnation", () => clients.A2.send(push(9, "note.insert", { id: 11, body: "eleven", owner: "u1" })));
  await step("drain again", () => ctl("POST", "/drain", ""));
  clients.A2.close();
  return transcript;
}

async function upstreams() {
  const rindled = await FakeRindled.notes();
  const authority = await FakeAuthority.start();
  for (const [, row] of rindled.rows.values()) authority.put("note", row);
  return { rindled, authority };
}

const bin = smolBinary("debug");

test("one client script gets the same frames from the smol server and the JS shell", { skip: bin === undefined && "no rindle-room binary (cargo build -p rindle-room-smol --bin rindle-room)" }, async (t) => {
  const iat = Date.now();
  const writes = { ownedTables: ["note"], groupCommitMs: 5, flushDebounceMs: 20 };

  // The smol server.
  const a = await upstreams();
  const b = await upstreams();
  const smol = await startSmol(
    bin,
    smolConfig({
      rindled: a.rindled,
      authority: a.authority,
      docId: DOC,
      kid: KID,
      key: KEY,
      control: CONTROL,
      footprint: NOTES,
      writes,
    }),
  );
  let smolTranscript;
  try {
    smolTranscript = await script({ port: smol.port, controlPort: smol.controlPort, rindled: a.rindled }, iat);
  } finally {
    await smol.stop();
  }

  // The JS shell.
  const logs = new Logs();
  const shell = track(await createRoomShell({
    upstream: { wsUrl: b.rindled.wsUrl, controlUrl: b.rindled.controlUrl, authToken: "up-token", footprintAst: NOTES },
    downstream: {
      docId: DOC,
      tokenKeys: { [KID]: KEY },
      sweepIntervalMs: 50,
      control: { authToken: CONTROL },
      writes: { ...writes, mutators: crudMutators("note"), authority: httpAuthority(b.authority.urls()) },
    },
    log: logs.sink,
  }));
  let jsTranscript;
  try {
    await shell.awaitLive();
    jsTranscript = await script({ port: shell.port, controlPort: shell.controlPort, rindled: b.rindled }, iat);
  } finally {
    await shell.close();
  }

  if (process.env.RINDLE_PARITY_DUMP) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(process.env.RINDLE_PARITY_DUMP, JSON.stringify({ smol: smolTranscript, js: jsTranscript }, null, 1));
  }
  const frames = smolTranscript.reduce((n, s) => n + Object.values(s.frames).flat().length, 0);
  t.diagnostic(`${smolTranscript.length} steps, ${frames} frames compared`);
  assert.ok(frames > 60, `the script exercised the room (${frames} frames)`);
  for (let i = 0; i < smolTranscript.length; i++) {
    assert.deepEqual(jsTranscript[i], smolTranscript[i], `step ${i}: ${smolTranscript[i].label}`);
  }
  assert.equal(jsTranscript.length, smolTranscript.length);
  // Both authorities end with the same rows (data, ledger, outcome rows).
  const dump = (auth) => [...auth.rowsByKey.values()].map(([table, row]) => JSON.stringify([table, row])).sort();
  assert.deepEqual(dump(b.authority), dump(a.authority));
});
