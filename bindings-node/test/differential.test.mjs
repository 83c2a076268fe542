// The differential test: the native WasmRoom against the published wasm one of
// @rindle/room 0.9.0, driven with the same random call sequences (fixed seeds), every
// result compared. A difference fails unless test/differential/known.mjs explains it;
// the failure names its class and prints a shrunk, runnable repro (replay it with
// `node test/differential/run.mjs --repro <file>`). RINDLE_DIFF_STRICT=1 also fails on
// the differences known.mjs marks pending. The soak and the repro tool are described in
// test/differential/README.md.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";

import { strictMode } from "./differential/engine.mjs";
import { Rooms, describeClass, explore, failing, replay, shrinkAll } from "./differential/harness.mjs";
import { KNOWN } from "./differential/known.mjs";

// Sequences of up to 300 calls from a fixed master seed until 5000 calls have run (a
// sequence ends early at a difference that leaves the two rooms' states apart): a few
// seconds on the debug addon.
const MASTER_SEED = 20261203;
const CALLS = 5000;

test("known.mjs: every entry has a class, a reason, a status and a way to explain", () => {
  const names = new Set();
  for (const k of KNOWN) {
    assert.match(k.name, /^[a-z0-9:-]+$/, `bad class name ${JSON.stringify(k.name)}`);
    assert.ok(!names.has(k.name), `duplicate class ${k.name}`);
    names.add(k.name);
    assert.ok(k.status === "intended" || k.status === "pending", `${k.name}: status must be intended or pending`);
    assert.ok(typeof k.reason === "string" && k.reason.length > 10, `${k.name}: a one-line reason`);
    assert.ok(typeof k.normalise === "function" || typeof k.claims === "function", `${k.name}: normalise or claims`);
  }
});

test("the native room answers the generated call sequences as the published wasm room does", async () => {
  const mode = strictMode();
  const rooms = await Rooms.create();
  const result = await explore(rooms, { seed: MASTER_SEED, calls: CALLS, length: 300, mode });
  assert.ok(result.sequences < CALLS / 10, `${result.sequences} sequences for ${result.calls} calls: they end too early`);
  if (result.classes.size === 0) return;
  await shrinkAll(rooms, result.classes, { mode, budget: 300 });
  const report = [...result.classes].map(([name, c]) => describeClass(name, c, c.shrunk)).join("\n\n");
  assert.fail(
    `${result.classes.size} difference class(es) not explained by test/differential/known.mjs ` +
      `(mode ${mode}; ${result.calls} calls in ${result.sequences} sequences):\n\n${report}`,
  );
});

// The shrunk repro of every class the census found (test/differential/repros): each must
// replay without a difference the mode fails on. A pending class whose fix has landed
// replays clean; under RINDLE_DIFF_STRICT=1 the ones still pending fail, by name.
const REPROS = new URL("./differential/repros/", import.meta.url);
const reproFiles = readdirSync(REPROS).filter((f) => f.endsWith(".json")).sort();

test("the repros directory holds the census's classes", () => {
  assert.ok(reproFiles.length >= 10, `only ${reproFiles.length} repro files`);
});

for (const file of reproFiles) {
  test(`repro ${file}`, async () => {
    const mode = strictMode();
    const { calls } = JSON.parse(readFileSync(new URL(file, REPROS), "utf8"));
    const rooms = await Rooms.create();
    const r = await replay(rooms, calls, { mode, audit: true });
    const fails = r.diffs.filter(failing);
    assert.deepEqual(
      fails.map((d) => `#${d.index} ${d.status} ${d.class}${d.detail ? ` (${d.detail})` : ""}: wasm ${d.w} / native ${d.n}`),
      [],
    );
  });
}
