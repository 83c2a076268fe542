// Replays a tests/conformance scenario on the published wasm room of @rindle/room@0.9.0
// and compares what it returns with the scenario's expectations: JSON results after
// JSON.parse (the wasm room prints `2.0` where JavaScript prints `2`, and orders keys its
// own way), errors by whether the call failed. Token helpers (`mintRoomToken`,
// `verifyRoomToken`, `scopeSpecsHash`) are not room methods and are skipped here.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { PARAMS } = require("../support/replay.js");

const TOKEN_CALLS = new Set(["mintRoomToken", "verifyRoomToken", "scopeSpecsHash"]);

let wasm;
/** The published wasm room's class, initialized once. */
export async function publishedRoom() {
  if (!wasm) {
    const mod = await import("@rindle/room/wasm");
    await mod.initRoomWasm();
    wasm = mod.WasmRoom;
  }
  return wasm;
}

function isRawText(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 1 && typeof v.$text === "string";
}

function buildArgs(call, args) {
  const kinds = PARAMS[call];
  return args.map((a, i) => {
    const kind = kinds[i];
    if (kind === "json" || (kind === "optjson" && a !== undefined)) {
      return isRawText(a) ? a.$text : JSON.stringify(a);
    }
    return a;
  });
}

/** A result as a comparable value: JSON text parsed, `undefined` as null. */
function value(out) {
  if (out === undefined) return null;
  if (typeof out === "string") {
    try {
      return JSON.parse(out);
    } catch {
      return out;
    }
  }
  return out;
}

/**
 * `commitAll`'s frames in subscriber-key order: the published room lists them in
 * another order (each subscriber's own batch is the same; frames to different sockets
 * have no order between them), so the comparison ignores it.
 */
export function bySubscriber(call, v) {
  if (call !== "commitAll" || !Array.isArray(v)) return v;
  return [...v].sort((a, b) => (a?.sub < b?.sub ? -1 : a?.sub > b?.sub ? 1 : 0));
}

/** Deep equality of parsed JSON values (object key order ignored). */
export function same(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null) return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (typeof a !== "object") return false;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return same(ka, kb) && ka.every((k) => same(a[k], b[k]));
}

/**
 * Runs `file` on `Room` (a WasmRoom class). Returns one entry per step:
 * `{i, call, skipped?, expected, got, threw, agrees}` where `expected` is the parsed
 * `expect` (or `{error}`), `got` the parsed result or the error message.
 */
export function replayOn(Room, file) {
  const scenario = JSON.parse(fs.readFileSync(file, "utf8"));
  let room = null;
  const steps = [];
  try {
    for (const [i, step] of scenario.steps.entries()) {
      const entry = { i, call: step.call };
      steps.push(entry);
      if (TOKEN_CALLS.has(step.call)) {
        entry.skipped = true;
        entry.agrees = true;
        continue;
      }
      let out;
      try {
        const args = buildArgs(step.call, step.args ?? []);
        if (step.call === "open") {
          const opened = Room.open(...args);
          room?.free();
          room = opened;
          out = undefined;
        } else {
          if (!room) throw new Error(`${step.call}: no room is open`);
          out = room[step.call](...args);
        }
        entry.got = bySubscriber(step.call, value(out));
        entry.threw = false;
      } catch (e) {
        entry.got = String(e?.message ?? e);
        entry.threw = true;
      }
      if ("expect" in step) {
        entry.expected = bySubscriber(step.call, value(step.expect));
        entry.agrees = !entry.threw && same(entry.got, entry.expected);
      } else {
        entry.expected = { error: step.error };
        entry.agrees = entry.threw;
      }
    }
  } finally {
    room?.free();
  }
  return { name: scenario.name, steps };
}
