// The three rooms under test, each started as its own process against the same API server:
//   fleet  — `rindle-room --config fleet.toml` with a [fleet] section, booted through the real
//            /room-boot, ack = "flushed";
//   single — `rindle-room --config room.toml`: one room following rindled itself, flushing to
//            the API server's authority routes with a flush credential we mint;
//   shell  — the Node `createRoomShell` of @rindle/room-native (lib/shell-room.mjs), likewise.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { mintRoomFlushCredential } from "@rindle/api-server";
import { ROOM_DOC } from "./app.mjs";
import { Proc, waitFor } from "./procs.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/** The scope spec the API server compiles for the "board" profile's footprint (every issue
 *  row, writable): what a booted fleet room receives, given by hand to the other two. */
export const BOARD_SCOPES = [
  {
    table: "issue",
    footprintWhere: { type: "and", conditions: [] },
    writable: { kind: "predicate", joinKeyCols: [] },
  },
];

/** The room's mutators, as the configuration file declares them: the authoritative twins of
 *  lib/app.mjs's predictions, refusing the title "spam". */
const MUTATORS_TOML = `
[mutators.createIssue]
steps = [
  { require = "args.id", type = "string" },
  { require = "args.title", type = "string" },
  { check = "ne", left = "$args.title", right = "spam", reason = "spam is not allowed" },
  { insert = "issue", row = { id = "$args.id", title = "$args.title", status = "open" } },
]

[mutators.setTitle]
steps = [
  { require = "args.id", type = "string" },
  { require = "args.title", type = "string" },
  { check = "ne", left = "$args.title", right = "spam", reason = "spam is not allowed" },
  { update = "issue", row = { id = "$args.id", title = "$args.title" } },
]
`;

const q = (s) => JSON.stringify(s); // a TOML basic string is a JSON string for our values

/** Silence timeouts short enough that every link is pinged (after a third of it) during
 *  step 4e's quiet spell: real rindled and the real clients must answer the room's pings,
 *  or the room takes their links as dead. Far longer than step 4d stops rindled for. */
export const SILENCE_TIMEOUT_MS = 5_000;

/** Starts the room of `kind`. `ctx`: { dir, logDir, bin, roomPort, controlPort, apiUrl,
 *  shellSecret, tokenKey: {kid, secret}, stack, onProc }; the room's process is handed to
 *  `onProc` as soon as it is spawned. */
export async function startRoom(kind, ctx) {
  const controlToken = "e2e-control-token";
  const common = { kind, controlToken, controlUrl: `http://127.0.0.1:${ctx.controlPort}` };
  const logEnv = { RINDLE_LOG: "info,rindle_room_smol::server::room=debug" };
  if (kind === "fleet") {
    const toml = `[server]
port = ${ctx.roomPort}

[control]
port = ${ctx.controlPort}
auth_token = ${q(controlToken)}

[downstream]
silence_timeout_ms = ${SILENCE_TIMEOUT_MS}

[downstream.token_keys]
${ctx.tokenKey.kid} = ${q(ctx.tokenKey.secret)}

[writes]
owned_tables = ["issue"]
flush_debounce_ms = 50
${MUTATORS_TOML}
[fleet]
upstream_silence_timeout_ms = ${SILENCE_TIMEOUT_MS}
api_url = ${q(ctx.apiUrl)}
shell_secret = ${q(ctx.shellSecret)}
ack = "flushed"
data_dir = ${q(join(ctx.dir, "fleet-data"))}
`;
    const path = join(ctx.dir, "fleet.toml");
    writeFileSync(path, toml);
    const proc = new Proc("room-fleet", ctx.bin, ["--config", path], { cwd: ctx.dir, env: logEnv, logDir: ctx.logDir });
    ctx.onProc(proc);
    await proc.waitOutput(/INFO\s+room \(fleet\): ready/, "the fleet to say ready", 30_000);
    return { ...common, proc, fleet: true, wsEndpoint: `ws://127.0.0.1:${ctx.roomPort}` };
  }

  // single and shell: the flush credential the API server's default gate verifies (any epoch:
  // the gate checks the signature and the doc, the authority fences by the claimed epoch).
  const credential = await mintRoomFlushCredential({ shellSecret: ctx.shellSecret, doc: ROOM_DOC, epoch: 0 });
  const api = `${ctx.apiUrl}/api/rindle`;
  if (kind === "single") {
    const toml = `[server]
port = ${ctx.roomPort}

[upstream]
ws_url = ${q(ctx.stack.rindledWs)}
control_url = ${q(ctx.stack.rindledHttp)}
footprint_ast = '''{"table":"issue"}'''
silence_timeout_ms = ${SILENCE_TIMEOUT_MS}

[downstream]
doc_id = ${q(ROOM_DOC)}
silence_timeout_ms = ${SILENCE_TIMEOUT_MS}

[downstream.token_keys]
${ctx.tokenKey.kid} = ${q(ctx.tokenKey.secret)}

[control]
port = ${ctx.controlPort}
auth_token = ${q(controlToken)}

[writes]
owned_tables = ["issue"]
scopes = '''${JSON.stringify(BOARD_SCOPES)}'''
flush_debounce_ms = 50

[writes.journal]
kind = "file"
path = "single-room.journal"

[authority]
apply_url = ${q(`${api}/apply-row-change-txn`)}
claim_url = ${q(`${api}/claim-room-epoch`)}
lmids_url = ${q(`${api}/room-lmids`)}
headers = { "x-rindle-room-credential" = ${q(credential)} }
${MUTATORS_TOML}`;
    const path = join(ctx.dir, "room.toml");
    writeFileSync(path, toml);
    const proc = new Proc("room-single", ctx.bin, ["--config", path], { cwd: ctx.dir, env: logEnv, logDir: ctx.logDir });
    ctx.onProc(proc);
    await proc.waitOutput(/ live \(bootId/, "the single room to go live", 30_000);
    return { ...common, proc, fleet: false, wsEndpoint: `ws://127.0.0.1:${ctx.roomPort}/` };
  }

  if (kind === "shell") {
    const cfg = {
      port: ctx.roomPort,
      controlPort: ctx.controlPort,
      controlToken,
      doc: ROOM_DOC,
      tokenKeys: { [ctx.tokenKey.kid]: ctx.tokenKey.secret },
      rindledWs: ctx.stack.rindledWs,
      rindledHttp: ctx.stack.rindledHttp,
      scopes: BOARD_SCOPES,
      journal: join(ctx.dir, "shell-room.journal"),
      silenceTimeoutMs: SILENCE_TIMEOUT_MS,
      authority: {
        applyUrl: `${api}/apply-row-change-txn`,
        claimUrl: `${api}/claim-room-epoch`,
        lmidsUrl: `${api}/room-lmids`,
        headers: { "x-rindle-room-credential": credential },
      },
    };
    const path = join(ctx.dir, "shell-room.json");
    writeFileSync(path, JSON.stringify(cfg, null, 2));
    const proc = new Proc("room-shell", process.execPath, [join(here, "shell-room.mjs"), path], {
      cwd: ctx.dir,
      env: { RINDLE_ROOM_NATIVE_BUILD: process.env.RINDLE_ROOM_NATIVE_BUILD ?? "debug" },
      logDir: ctx.logDir,
    });
    ctx.onProc(proc);
    await proc.waitOutput(/shell-room: live/, "the Node shell to go live", 30_000);
    return { ...common, proc, fleet: false, wsEndpoint: `ws://127.0.0.1:${ctx.roomPort}/` };
  }
  throw new Error(`unknown room kind ${kind}`);
}

/** GET a control-plane route with the bearer token; resolves to the parsed JSON. */
export async function control(room, path) {
  const r = await fetch(`${room.controlUrl}${path}`, {
    headers: { authorization: `Bearer ${room.controlToken}` },
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** Waits for the fleet's /readyz (single rooms are live once started). */
export async function roomReady(room) {
  await waitFor(`${room.kind} room /readyz`, async () => {
    const r = await fetch(`${room.controlUrl}/readyz`).catch(() => undefined);
    return r?.status === 200;
  });
}
