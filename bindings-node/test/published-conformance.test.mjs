// Every tests/conformance scenario, replayed on the published wasm room of
// @rindle/room@0.9.0: each step must return what the scenario expects of the native room
// (JSON compared after JSON.parse; the opaque `queryKey` aside), or fail where the native
// room fails — except the steps listed in published/known-differences.json, each with
// its class (`intended`: a difference kept on purpose, see docs/compat.md; `pending`: to
// be matched). A listed step that agrees again fails the test too, so the list stays
// exact. `node test/published/bless.mjs` prints every step where the two rooms differ.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { publishedRoom, replayOn } from "./published/replay.mjs";

const require = createRequire(import.meta.url);
const { listScenarios } = require("./support/replay.js");

const known = JSON.parse(fs.readFileSync(new URL("./published/known-differences.json", import.meta.url), "utf8"));
const listed = new Map(known.map((d) => [`${d.scenario}#${d.step}`, d]));

function dropQueryKey(v) {
  if (Array.isArray(v)) return v.map(dropQueryKey);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).filter(([k]) => k !== "queryKey").map(([k, x]) => [k, dropQueryKey(x)]));
  }
  return v;
}

test("every known difference has a class", () => {
  for (const d of known) assert.match(d.class, /^(intended|pending): \S/, JSON.stringify(d));
});

const Room = await publishedRoom();
for (const file of listScenarios()) {
  const name = path.basename(file, ".json");
  test(`published room: ${name}`, () => {
    const { steps } = replayOn(Room, file);
    const wrong = [];
    for (const s of steps) {
      const agrees =
        s.agrees || (!s.threw && "expected" in s && !s.expected?.error && sameSansKey(s.got, s.expected));
      const entry = listed.get(`${name}#${s.i}`);
      if (!agrees && !entry) {
        wrong.push(`step ${s.i} (${s.call}) differs: expected ${JSON.stringify(s.expected)}, published ${s.threw ? "threw" : "returned"} ${JSON.stringify(s.got)}`);
      } else if (agrees && entry) {
        wrong.push(`step ${s.i} (${s.call}) is listed as a known difference (${entry.class}) but agrees now: drop it from the list`);
      }
    }
    assert.deepEqual(wrong, []);
  });
}

function sameSansKey(a, b) {
  return JSON.stringify(canon(dropQueryKey(a))) === JSON.stringify(canon(dropQueryKey(b)));
}
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}
