// The shell tests' harness: a websocket test client, lease tokens, the test mutators
// (the same as runtime-smol's tests/common registry, plus the JS-only refusals) and a
// shell started against a FakeRindled with captured logs.
import { after } from "node:test";
import { createRoomShell, memoryJournal, mintRoomToken } from "@rindle/room-native";
import { Client, WAIT_MS, sleep } from "./client.mjs";
import { closeAll, track } from "./fakes.mjs";

export { Client, WAIT_MS, sleep };
// Clients the tests connect are tracked, so `closeAll` ends them even after a failure.
const connect = Client.connect.bind(Client);
Client.connect = async (port) => track(await connect(port));

// Every file that imports the harness closes whatever its tests left open.
after(closeAll);

export const DOC = "doc/1";
export const KID = "k1";
export const KEY = "secret";
export const CONTROL = "ctl-token";
export const NOTES = { table: "note" };

/** A lease token for `ast` and `sub`, issued at `iat` (default now), valid `ttlMs`. */
export function token(ast, sub, ttlMs, iat = Date.now(), extra = {}) {
  return mintRoomToken({ doc: DOC, ast, sub, kid: KID, key: KEY, ttlMs, now: iat, ...extra });
}

export const subscribeFrame = (queryId, leaseToken) => ({ t: "subscribe", queryId, leaseToken });
export const push = (clientID, mid, name, args) => ({
  t: "pushMutation",
  envelope: { clientID, mid, name, ...(args !== undefined ? { args } : {}) },
});
export const isLmid = (v) => v.t === "nbatch" && v.queryId === 0;

/** The lmid an lmid-query frame carries, if it is one. */
export function lmidOf(v) {
  if (!isLmid(v)) return undefined;
  const op = v.batch.ops[0];
  if (!op) return undefined;
  return (op.op === "add" ? op.row : op.new)[1];
}

/** Polls `cond` every 10 ms until it holds. */
export async function eventually(what, cond) {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > WAIT_MS) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The test mutators (runtime-smol's registry, and the JS-only refusals). */
export const mutators = {
  addNote(tx, args, ctx) {
    tx.insert("note", { id: args.id, body: args.body, owner: ctx.user });
  },
  setBody(tx, args) {
    tx.update("note", { id: args.id, body: args.body });
  },
  refuse() {
    throw new Error("not allowed");
  },
  needsQuery(tx) {
    tx.query({ ast: () => NOTES });
  },
  async asyncNote(tx, args, ctx) {
    tx.insert("note", { id: args.id, body: "async", owner: ctx.user });
  },
  *generatorNote(tx, args) {
    yield tx.insert("note", { id: args.id, body: "gen", owner: "x" });
  },
};

/** Captured log lines. */
export class Logs {
  constructor() {
    this.lines = [];
    this.sink = (line) => {
      if (process.env.RINDLE_TEST_LOG) console.error(line);
      this.lines.push(line);
    };
  }

  count(needle) {
    return this.lines.filter((l) => l.includes(needle)).length;
  }

  dump() {
    return this.lines.join("\n");
  }
}

/**
 * Shell options following `rindled`: doc `doc/1`, key ring `k1`, a control plane,
 * sweep every 50 ms, and (unless `writes: false`) the write plane over `note` with
 * the test mutators, a 5 ms group commit and a 20 ms flush debounce.
 */
export function shellOptions(rindled, o = {}, logs = new Logs()) {
  const writes =
    o.writes === false
      ? undefined
      : {
          mutators: o.mutators ?? mutators,
          ownedTables: o.ownedTables ?? ["note"],
          groupCommitMs: 5,
          flushDebounceMs: o.flushDebounceMs ?? 20,
          journal: o.journal ?? memoryJournal(),
          ...(o.scopes ? { scopes: o.scopes } : {}),
          ...(o.authority ? { authority: o.authority } : {}),
        };
  return {
    upstream: {
      wsUrl: rindled.wsUrl,
      controlUrl: rindled.controlUrl,
      authToken: "up-token",
      footprintAst: NOTES,
    },
    downstream: {
      docId: DOC,
      tokenKeys: { [KID]: KEY },
      sweepIntervalMs: 50,
      control: { authToken: CONTROL },
      ...(o.sendBudgetBytes ? { sendBudgetBytes: o.sendBudgetBytes } : {}),
      ...(o.downstream ?? {}),
      ...(writes ? { writes } : {}),
    },
    log: logs.sink,
  };
}

/** Starts a shell and waits until it is live. */
export async function startLive(rindled, o = {}, logs = new Logs()) {
  const shell = track(await createRoomShell(shellOptions(rindled, o, logs)));
  await withTimeout(shell.awaitLive(), "the shell going live");
  return shell;
}

export async function withTimeout(promise, what) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** A control-plane call: `{status, body}` (body as text). */
export async function control(shell, method, path, body, auth = CONTROL) {
  const res = await fetch(`http://127.0.0.1:${shell.controlPort}${path}`, {
    method,
    headers: auth === null ? {} : { authorization: `Bearer ${auth}` },
    ...(body !== undefined && method !== "GET" ? { body } : {}),
  });
  return { status: res.status, body: await res.text() };
}

export async function stats(shell) {
  return JSON.parse((await control(shell, "GET", "/stats")).body);
}

/** A client that sent `init`, subscribed the lmid query (when `lmid`) and the notes
 *  with a lease for `sub`; hello/snapshot/progress consumed. */
export async function subscriber(shell, clientID, sub, lmid) {
  const c = await Client.connect(shell.port);
  c.send({ t: "init", clientID });
  if (lmid) {
    c.send({ t: "subscribe", queryId: 0, name: "_rindle/clientLmid", args: {} });
    c.lmidSnapshot = await c.subscribed();
  }
  c.send(subscribeFrame(1, await token(NOTES, sub, 600_000)));
  c.notesSnapshot = await c.subscribed();
  return c;
}

/** Starts a shell without waiting for it to go live. */
export async function createShell(rindled, o = {}, logs = new Logs()) {
  return track(await createRoomShell(shellOptions(rindled, o, logs)));
}
