// The CommonJS view of the same typings (`require`), type-checked by `npm run typecheck`.
import room = require("@rindle/room-native");

export function viaRequire(): Promise<void> {
  const r: room.WasmRoom = room.WasmRoom.open("{}", 0);
  const alias: typeof room.WasmRoom = room.NativeRoom;
  void alias;
  r.free();
  return room.initRoomWasm();
}

export async function shellViaRequire(opts: room.RoomShellOptions): Promise<void> {
  const shell: room.RoomShell = await room.createRoomShell(opts);
  const journal: room.RoomJournal = room.memoryJournal();
  const file: room.FileRoomJournal = room.fileJournal("/tmp/j");
  const authority: room.RoomAuthority = room.httpAuthority({ applyUrl: "a", claimUrl: "c", lmidsUrl: "l" });
  const verdict = room.journalEntryOutcome({ clientID: "c", mid: 1, name: "n", args: null, sub: "" });
  const fatal: room.FatalAuthorityError = room.fatalAuthorityError("x");
  void [journal, file, authority, verdict, fatal];
  await shell.close();
}
