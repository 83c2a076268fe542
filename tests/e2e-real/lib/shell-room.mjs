// The Node room shell (`createRoomShell` of @rindle/room-native, from bindings-node) as its own
// process, configured like the single-room server: it follows rindled, verifies the API server's
// room tokens, runs JavaScript mutators (the same rules as the declarative ones in rooms.mjs) and
// flushes to the API server's authority routes.
//
//   node lib/shell-room.mjs <config.json>        (written by rooms.mjs)
//
// The module is bindings-node's own (RINDLE_ROOM_NATIVE_PATH or _BUILD pick the addon), or
// $RINDLE_ROOM_NATIVE_MODULE. Log lines go to stderr; "shell-room: live" once it serves.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modulePath =
  process.env.RINDLE_ROOM_NATIVE_MODULE ?? join(here, "..", "..", "..", "bindings-node", "index.mjs");
const { createRoomShell, fileJournal, httpAuthority } = await import(pathToFileURL(modulePath).href);

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const log = (line) => process.stderr.write(`${new Date().toISOString()} shell-room: ${line}\n`);

function strArgs(args, ...fields) {
  for (const f of fields) {
    if (typeof args?.[f] !== "string") throw new Error(`args.${f} must be a string`);
  }
}

const mutators = {
  createIssue(tx, args) {
    strArgs(args, "id", "title");
    if (args.title === "spam") throw new Error("spam is not allowed");
    tx.insert("issue", { id: args.id, title: args.title, status: "open" });
  },
  setTitle(tx, args) {
    strArgs(args, "id", "title");
    if (args.title === "spam") throw new Error("spam is not allowed");
    tx.update("issue", { id: args.id, title: args.title });
  },
};

const shell = await createRoomShell({
  upstream: {
    wsUrl: cfg.rindledWs,
    controlUrl: cfg.rindledHttp,
    footprintAst: { table: "issue" },
    silenceTimeoutMs: cfg.silenceTimeoutMs,
  },
  downstream: {
    docId: cfg.doc,
    silenceTimeoutMs: cfg.silenceTimeoutMs,
    tokenKeys: cfg.tokenKeys,
    control: { authToken: cfg.controlToken, port: cfg.controlPort },
    writes: {
      ownedTables: ["issue"],
      scopes: cfg.scopes,
      journal: fileJournal(cfg.journal),
      authority: httpAuthority(cfg.authority),
      flushDebounceMs: 50,
      mutators,
    },
  },
  port: cfg.port,
  log,
});
await shell.awaitLive();
log(`live on port ${shell.port}, control ${shell.controlPort}`);

for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    shell.close().then(() => process.exit(0));
  });
}
