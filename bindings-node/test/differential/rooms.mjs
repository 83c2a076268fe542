// The two rooms under test and how one recorded call is made on either.
//
// A call is `{m, a}`: the method name and its arguments. Arguments the room takes as
// JSON text are recorded as values and serialised here, so a repro file reads as JSON;
// `{"$text": "…"}` in such a position passes that exact text (garbage input). `open` is
// the static `WasmRoom.open` and replaces the side's current room when it succeeds.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** Per method, the argument positions that travel as JSON text. */
export const JSON_ARGS = {
  open: [0],
  apply: [0],
  subscribe: [2],
  enableWrites: [0],
  enableWritesV2: [0],
  txGet: [1],
  txAdd: [1],
  txEdit: [1],
  txRemove: [1],
  ack: [0],
  seedDurable: [0],
  flushConflict: [0],
};

/** Methods whose (string) result is JSON text. */
export const JSON_RESULTS = new Set([
  "ack",
  "apply",
  "beginFlush",
  "beginMutation",
  "commitAll",
  "commitMutation",
  "flushConflict",
  "flushOk",
  "lmidSubscribe",
  "seedDurable",
  "subscribe",
  "txGet",
]);

/** The read-only getters; `CLIENT_GETTERS` take a client id. */
export const GETTERS = [
  "headCv",
  "cv",
  "epoch",
  "isLive",
  "isPoisoned",
  "dirtyLen",
  "pendingLen",
  "materializationCount",
  "subscriberCount",
  "flushInFlight",
];
export const CLIENT_GETTERS = ["ackedLmid", "appliedMid", "durableLmid"];

export function serialiseArgs(m, args) {
  const json = JSON_ARGS[m] ?? [];
  return args.map((v, i) => {
    if (!json.includes(i)) return v;
    if (v !== null && typeof v === "object" && !Array.isArray(v) && typeof v.$text === "string") {
      return v.$text;
    }
    return JSON.stringify(v);
  });
}

let wasmInstances = 0;
let wasmModule = null;

/**
 * A fresh instance of the published wasm module (its own memory and glue): a panic
 * inside one (a wasm trap) cannot leak into the next sequence.
 */
export async function freshWasmClass() {
  const url = new URL(import.meta.resolve("@rindle/room/pkg/rindle_room.js"));
  wasmModule ??= new WebAssembly.Module(readFileSync(new URL("rindle_room_bg.wasm", url)));
  url.search = `?instance=${++wasmInstances}`;
  const mod = await import(url.href);
  mod.initSync({ module: wasmModule });
  return mod.WasmRoom;
}

/** The native class (the addon `RINDLE_ROOM_NATIVE_BUILD` selects). */
export function nativeClass() {
  return require("@rindle/room-native").WasmRoom;
}

function describeError(e) {
  const msg = e && typeof e.message === "string" ? e.message : String(e);
  const out = { ok: false, msg };
  if (e && e.code !== undefined) out.code = e.code;
  if (e && e.name && e.name !== "Error") out.name = e.name;
  // A wasm trap (a Rust panic in the published room) is a RuntimeError.
  if (e instanceof WebAssembly.RuntimeError) out.trap = true;
  return out;
}

/** One room implementation and its current room object. */
export class Side {
  constructor(name, RoomClass) {
    this.name = name;
    this.Room = RoomClass;
    this.room = null;
    this.trapped = false;
  }

  /** Runs `call` and returns `{ok: true, v}` (JSON results parsed) or `{ok: false, msg, …}`. */
  exec(call) {
    // The wasm glue prints a Rust panic's message with console.error before it traps:
    // keep it with the outcome instead of on the terminal.
    const printed = [];
    const error = console.error;
    console.error = (...a) => printed.push(a.map(String).join(" "));
    try {
      const out = this.run(call);
      if (out.trap) {
        const text = printed.join("\n");
        const m = /panicked at [^\n]*\n([^\n]*)/.exec(text);
        out.panic = m ? m[1] : text.split("\n")[0];
      }
      return out;
    } finally {
      console.error = error;
    }
  }

  run(call) {
    const args = serialiseArgs(call.m, call.a ?? []);
    try {
      if (call.m === "open") {
        const room = this.Room.open(...args);
        this.drop();
        this.room = room;
        return { ok: true, v: undefined };
      }
      if (!this.room) return { ok: false, msg: "no room is open", harness: true };
      const fn = this.room[call.m];
      if (typeof fn !== "function") return { ok: false, msg: `no method ${call.m}`, harness: true };
      const raw = fn.apply(this.room, args);
      return { ok: true, v: parseResult(call.m, raw) };
    } catch (e) {
      const out = describeError(e);
      if (out.trap) this.trapped = true;
      return out;
    }
  }

  /** Frees the current room (errors ignored: a trapped wasm room may not free). */
  drop() {
    if (!this.room) return;
    try {
      this.room.free();
    } catch {
      // nothing to do: the room is gone either way
    }
    this.room = null;
  }
}

export function parseResult(m, raw) {
  if (typeof raw !== "string" || !JSON_RESULTS.has(m)) return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return { $unparsable: raw };
  }
}
