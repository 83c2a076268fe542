// ESM entry of @rindle/room-native: the same objects as the CommonJS index.js.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const room = require("./index.js");

export const {
  locateRoom,
  rendezvousScore,
  roomPath,
  WasmRoom,
  NativeRoom,
  initRoomWasm,
  mintRoomToken,
  verifyRoomToken,
  scopeSpecsHash,
  RoomTokenError,
  createRoomShell,
  memoryJournal,
  fileJournal,
  httpAuthority,
  fatalAuthorityError,
  journalEntryOutcome,
  compactJournalRecords,
} = room;
export default room;
