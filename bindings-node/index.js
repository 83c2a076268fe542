"use strict";
// @rindle/room-native: the Rindle room at native speed, a drop-in for the wasm
// `WasmRoom` of @rindle/room. `WasmRoom` is the addon's class itself (every method,
// `[Symbol.dispose]` included, is native); this file only adds what a JS module must
// own: the Promise-returning token helpers with their option objects (serialized with
// JSON.stringify, `now` defaulting to Date.now()), the `RoomTokenError` class, and
// `initRoomWasm` as a no-op. Every rule lives in the Rust core.
//
// Beside the engine, the room shell with the published room's `createRoomShell` API:
// shell/shell.js (loaded on first use: it needs the `ws` package) is a JavaScript driver
// of the core's room host (the addon's `RoomHost`, the state machine the smol server
// drives too) — sockets, the journal, the authority's HTTP calls, mutators and one
// timer; every room rule is the host's. Also the journals (`memoryJournal`, the durable
// `fileJournal`), the HTTP authority, `journalEntryOutcome` / `compactJournalRecords` and
// `fatalAuthorityError`.
const native = require("./binding.js");
const { compactJournalRecords, journalEntryOutcome, memoryJournal } = require("./shell/journal.js");
const { fileJournal } = require("./shell/file-journal.js");
const { httpAuthority, fatalAuthorityError } = require("./shell/authority.js");

const { WasmRoom } = native;

/** Why a token was refused: `reason` is the terse word(s) after `lease token refused: `. */
class RoomTokenError extends Error {
  constructor(reason) {
    super(`lease token refused: ${reason}`);
    this.name = "RoomTokenError";
    this.reason = reason;
    this.code = "TOKEN_REFUSED";
  }
}

/** The addon's refusal (code TOKEN_REFUSED, reason) as a RoomTokenError; else as is. */
function asTokenError(err) {
  if (err && err.code === "TOKEN_REFUSED" && typeof err.reason === "string") {
    const e = new RoomTokenError(err.reason);
    e.message = err.message; // the core's text, verbatim
    return e;
  }
  return err;
}

function optionsObject(fn, opts) {
  if (typeof opts !== "object" || opts === null || Array.isArray(opts)) {
    const err = new TypeError(`${fn}: \`opts\` must be an object, got ${describe(opts)}`);
    err.code = "ERR_INVALID_ARG_TYPE";
    throw err;
  }
  return opts;
}

function describe(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

/** No-op: the native room needs no initialization (kept so wasm shells run unchanged). */
async function initRoomWasm(_moduleOrPath) {}

/** Signs a room lease token (the API server's side). Resolves to the `rt1.…` text. */
async function mintRoomToken(opts) {
  optionsObject("mintRoomToken", opts);
  const now = opts.now === undefined ? Date.now() : opts.now;
  return native.mintRoomTokenJson(JSON.stringify({ ...opts, now }));
}

/** Verifies a token; resolves to its payload, rejects with RoomTokenError on refusal. */
async function verifyRoomToken(token, opts) {
  optionsObject("verifyRoomToken", opts);
  const now = opts.now === undefined ? Date.now() : opts.now;
  let payload;
  try {
    payload = native.verifyRoomTokenJson(token, JSON.stringify({ ...opts, now }));
  } catch (err) {
    throw asTokenError(err);
  }
  return JSON.parse(payload);
}

/** The scope-skew fingerprint of compiled scope specs: 8 lowercase hex characters. */
function scopeSpecsHash(specs) {
  const text = JSON.stringify(specs);
  if (typeof text !== "string") {
    const err = new TypeError(
      `scopeSpecsHash: \`specs\` must be JSON-serializable, got ${describe(specs)}`,
    );
    err.code = "ERR_INVALID_ARG_TYPE";
    throw err;
  }
  return native.scopeSpecsHashJson(text);
}

/** Boots a room shell over the native room host (the published room's `createRoomShell`). */
async function createRoomShell(opts) {
  return require("./shell/shell.js").createRoomShell(opts);
}

const { locateRoom, rendezvousScore, roomPath } = require("./shell/locate.js");

module.exports = {
  locateRoom,
  rendezvousScore,
  roomPath,
  WasmRoom,
  NativeRoom: WasmRoom,
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
};
