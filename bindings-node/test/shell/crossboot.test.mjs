// One journal for both faces: the smol server and this shell read and write the same
// file format through the same implementation (rindle-room-journal). A journal written
// by the server boots the shell — every acknowledged mutation replayed exactly once, the
// clientID bindings kept — and a journal written by the shell boots the server.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRoomShell, fileJournal } from "@rindle/room-native";
import { FakeRindled, track } from "./support/fakes.mjs";
import { CONTROL, Client, DOC, KEY, KID, NOTES, Logs, lmidOf, token } from "./support/harness.mjs";
import { smolBinary, smolConfig, startSmol } from "./support/smol.mjs";

const bin = smolBinary("debug");
const skip = bin === undefined && "no rindle-room binary (cargo build -p rindle-room-smol --bin rindle-room)";

/** The JS twin of the server's generated `note.insert`. */
const mutators = { "note.insert": (tx, args) => tx.insert("note", args) };

const insert = (client, mid, id) => ({
  t: "pushMutation",
  envelope: { clientID: client, mid, name: "note.insert", args: { id, body: `n${id}`, owner: "u1" } },
});

/** A client of `port` as clientID `client` (subject `sub`): its notes snapshot and lmid. */
async function connect(port, client, sub) {
  const c = await Client.connect(port);
  c.send({ t: "init", clientID: client });
  c.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
  const lmid = await c.subscribed();
  c.send({ t: "subscribe", queryId: 1, leaseToken: await token(NOTES, sub, 600_000) });
  const notes = await c.subscribed();
  return { c, lmid, notes };
}

const ids = (snap) => snap.batch.ops.map((op) => op.row[0]);

async function pushAll(c, client, mids) {
  for (const mid of mids) c.send(insert(client, mid, 100 + mid));
  await c.until(`the ack of mid ${mids.at(-1)}`, (v) => lmidOf(v) === mids.at(-1));
}

function shellOn(rindled, journal) {
  return createRoomShell({
    upstream: { wsUrl: rindled.wsUrl, controlUrl: rindled.controlUrl, authToken: "up-token", footprintAst: NOTES },
    downstream: {
      docId: DOC,
      tokenKeys: { [KID]: KEY },
      sweepIntervalMs: 50,
      control: { authToken: CONTROL },
      writes: { ownedTables: ["note"], mutators, journal, groupCommitMs: 2 },
    },
    log: new Logs().sink,
  }).then(track);
}

test("a journal written by the smol server boots the JS shell, and back", { skip }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-crossboot-"));
  const file = path.join(dir, "room.journal");
  const rindled = await FakeRindled.notes();
  const config = smolConfig({
    rindled,
    docId: DOC,
    kid: KID,
    key: KEY,
    control: CONTROL,
    footprint: NOTES,
    writes: { ownedTables: ["note"], groupCommitMs: 2 },
    journalPath: file,
  });

  // 1. The server journals three mutations of c1 (subject u1).
  let smol = await startSmol(bin, config);
  let a = await connect(smol.port, "c1", "u1");
  await pushAll(a.c, "c1", [1, 2, 3]);
  a.c.close();
  await smol.stop();

  // 2. The shell boots from the server's file: the three replayed once; c1 still u1's.
  let journal = fileJournal(file);
  let shell = await shellOn(rindled, journal);
  await shell.awaitLive();
  let b = await connect(shell.port, "c1", "u1");
  assert.deepEqual(ids(b.notes), [1, 2, 3, 101, 102, 103]);
  assert.deepEqual(b.lmid.batch.ops[0].row, ["c1", 3]);
  const intruder = await Client.connect(shell.port);
  intruder.send({ t: "init", clientID: "c1" });
  intruder.send({ t: "subscribe", queryId: 1, leaseToken: await token(NOTES, "u2", 600_000) });
  await intruder.subscribed();
  intruder.send(insert("c1", 4, 666));
  const refused = await intruder.until("the refusal", (v) => v.t === "error");
  assert.match(refused.message, /clientID `c1` is bound to another subject/);
  intruder.close();
  // The shell journals two more.
  await pushAll(b.c, "c1", [4, 5]);
  b.c.close();
  await shell.close();
  await journal.close();

  // 3. The server boots from the shell's file: all five, once each.
  smol = await startSmol(bin, config);
  a = await connect(smol.port, "c1", "u1");
  assert.deepEqual(ids(a.notes), [1, 2, 3, 101, 102, 103, 104, 105]);
  assert.deepEqual(a.lmid.batch.ops[0].row, ["c1", 5]);
  a.c.close();
  await smol.stop();
  await rindled.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
