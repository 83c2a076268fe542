"use strict";
// Replays one tests/conformance scenario through the public module, the way the Rust
// runner does through `rindle_room_core::calls` (tests/conformance/README.md):
// string and number arguments as they are, JSON-text arguments as JSON.stringify of
// the parsed value (key order kept) or the raw `{"$text": …}` string, missing trailing
// arguments undefined; the result rendered like `Output::to_json_text` and compared
// byte for byte; an expected error matched by substring on `err.message`.
const fs = require("node:fs");
const path = require("node:path");

const room = require("../../index.js");
const native = require("../../binding.js");

const SCENARIOS = path.resolve(__dirname, "../../../tests/conformance");

/** The parameter kinds of each method, in order: text, number, json, optional json. */
const PARAMS = {
  open: ["json", "number"],
  apply: ["json"],
  subscribe: ["text", "number", "json", "number"],
  unsubscribe: ["text", "number"],
  sweep: ["number"],
  commitAll: [],
  cv: [],
  headCv: [],
  epoch: [],
  isLive: [],
  isPoisoned: [],
  materializationCount: [],
  subscriberCount: [],
  enableWrites: ["json"],
  enableWritesV2: ["json", "optjson"],
  beginMutation: ["text", "number", "text", "optjson"],
  txGet: ["text", "json"],
  txAdd: ["text", "json"],
  txEdit: ["text", "json"],
  txRemove: ["text", "json"],
  commitMutation: [],
  rejectMutation: ["text", "text"],
  ack: ["json"],
  ackedLmid: ["text"],
  appliedMid: ["text"],
  durableLmid: ["text"],
  lmidSubscribe: ["text", "number", "text", "number"],
  seedDurable: ["json"],
  pendingLen: [],
  dirtyLen: [],
  beginFlush: [],
  flushOk: [],
  flushConflict: ["json"],
  flushInFlight: [],
  mintRoomToken: ["json"],
  verifyRoomToken: ["text", "json"],
  scopeSpecsHash: ["json"],
};

/** Methods whose string result is plain text (a token, a hash), printed quoted. */
const TEXT_RESULTS = new Set(["mintRoomToken", "scopeSpecsHash"]);

function isRawText(v) {
  return (
    typeof v === "object" &&
    v !== null &&
    !Array.isArray(v) &&
    Object.keys(v).length === 1 &&
    typeof v.$text === "string"
  );
}

/** A JSON-text argument: the raw `$text`, or the value as JSON.stringify prints it. */
function asText(v) {
  return isRawText(v) ? v.$text : JSON.stringify(v);
}

function buildArgs(call, args) {
  const kinds = PARAMS[call];
  if (!kinds) throw new Error(`unknown method ${JSON.stringify(call)}`);
  return args.map((a, i) => {
    const kind = kinds[i];
    if (kind === "json") return asText(a);
    if (kind === "optjson") return a === undefined ? undefined : asText(a);
    return a;
  });
}

/** `Output::to_json_text`: JSON text verbatim, plain strings quoted, undefined → null. */
function render(call, out) {
  if (out === undefined) return "null";
  if (typeof out === "string") return TEXT_RESULTS.has(call) ? JSON.stringify(out) : out;
  if (typeof out === "number" || typeof out === "boolean") return JSON.stringify(out);
  return JSON.stringify(out); // verifyRoomToken's payload object
}

/** Runs one call; `state.room` is the room `open` created. */
async function invoke(state, call, rawArgs) {
  const args = buildArgs(call, rawArgs);
  switch (call) {
    case "open":
      state.room = room.WasmRoom.open(...args); // a refused open keeps the old room
      return undefined;
    case "mintRoomToken":
      // The public helper takes the options object; raw text goes to the addon.
      return isRawText(rawArgs[0])
        ? native.mintRoomTokenJson(args[0])
        : room.mintRoomToken(rawArgs[0]);
    case "verifyRoomToken":
      return isRawText(rawArgs[1])
        ? JSON.parse(native.verifyRoomTokenJson(args[0], args[1]))
        : room.verifyRoomToken(rawArgs[0], rawArgs[1]);
    case "scopeSpecsHash":
      return isRawText(rawArgs[0])
        ? native.scopeSpecsHashJson(args[0])
        : room.scopeSpecsHash(rawArgs[0]);
    default:
      if (!state.room) throw new Error(`${call}: no room is open (call open first)`);
      return state.room[call](...args);
  }
}

function listScenarios() {
  return fs
    .readdirSync(SCENARIOS)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => path.join(SCENARIOS, f));
}

/** Replays one scenario file; returns the list of mismatches (empty = conforms). */
async function replay(file) {
  const scenario = JSON.parse(fs.readFileSync(file, "utf8"));
  const state = { room: null };
  const mismatches = [];
  try {
    for (const [i, step] of scenario.steps.entries()) {
      const where = `${scenario.name} step ${i} (${step.call})`;
      let out;
      let err;
      try {
        out = await invoke(state, step.call, step.args ?? []);
      } catch (e) {
        err = e;
      }
      if ("expect" in step) {
        if (err) {
          mismatches.push(`${where}: expected ${step.expect}, threw ${err.message}`);
          continue;
        }
        const got = render(step.call, out);
        if (got !== step.expect) {
          mismatches.push(`${where}:\n  expected ${step.expect}\n  got      ${got}`);
        }
      } else {
        const wants = Array.isArray(step.error) ? step.error : [step.error];
        if (!err) {
          mismatches.push(`${where}: expected an error, got ${render(step.call, out)}`);
          continue;
        }
        if (!(err instanceof Error) || typeof err.message !== "string") {
          mismatches.push(`${where}: threw a non-Error ${String(err)}`);
          continue;
        }
        for (const w of wants) {
          if (!err.message.includes(w)) {
            mismatches.push(`${where}: error ${JSON.stringify(err.message)} lacks ${JSON.stringify(w)}`);
          }
        }
      }
    }
  } finally {
    state.room?.free();
  }
  return mismatches;
}

module.exports = { listScenarios, replay, PARAMS };
