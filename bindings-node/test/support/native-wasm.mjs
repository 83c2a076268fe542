// What @rindle/room's shell imports as `./wasm.js` when published-shell-hook.mjs
// redirects it: the same two names, from the native module.
export { initRoomWasm, WasmRoom } from "@rindle/room-native";
