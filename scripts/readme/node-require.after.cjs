
// ---- appended by scripts/test-readme.sh: what the require must have given
for (const [name, value] of Object.entries({ initRoomWasm, WasmRoom, verifyRoomToken })) {
  if (typeof value !== "function") throw new Error(`require("@rindle/room-native").${name} is ${typeof value}`);
}
console.log("ran: require gives initRoomWasm, WasmRoom, verifyRoomToken");
