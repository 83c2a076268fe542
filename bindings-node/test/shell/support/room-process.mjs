// A JS room shell in its own process, for the crash test and the benchmark: `node
// room-process.mjs '<json>'` with {wsUrl, controlUrl, journal?}. A durable file journal
// at `journal` (else in memory), the CRUD-style `note.insert` mutator; prints
// `READY <port>` once live; SIGTERM closes cleanly.
import { createRoomShell, fileJournal, memoryJournal } from "@rindle/room-native";

const cfg = JSON.parse(process.argv[2]);
const journal = cfg.journal ? fileJournal(cfg.journal) : memoryJournal();
const shell = await createRoomShell({
  upstream: { wsUrl: cfg.wsUrl, controlUrl: cfg.controlUrl, footprintAst: { table: "note" } },
  downstream: {
    docId: "doc/1",
    tokenKeys: { k1: "secret" },
    writes: {
      ownedTables: ["note"],
      journal,
      mutators: { "note.insert": (tx, args) => tx.insert("note", args) },
    },
  },
  log: (line) => process.stderr.write(`${line}\n`),
});
await shell.awaitLive();
process.stdout.write(`READY ${shell.port}\n`);
process.on("SIGTERM", async () => {
  await shell.close();
  await journal.close?.();
  process.exit(0);
});
