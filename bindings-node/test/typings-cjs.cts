// The CommonJS view of the same typings (`require`), type-checked by `npm run typecheck`.
import room = require("@rindle/room-native");

export function viaRequire(): Promise<void> {
  const r: room.WasmRoom = room.WasmRoom.open("{}", 0);
  const alias: typeof room.WasmRoom = room.NativeRoom;
  void alias;
  r.free();
  return room.initRoomWasm();
}
