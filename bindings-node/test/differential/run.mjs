#!/usr/bin/env node
// The differential soak and repro tool (see README.md in this folder).
//
//   node test/differential/run.mjs --calls 200000 --seed 7
//   node test/differential/run.mjs --repro repro.json
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { strictMode } from "./engine.mjs";
import { KNOWN } from "./known.mjs";
import { Rooms, describeClass, explore, failing, replay, shrink, shrinkAll } from "./harness.mjs";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "20000" },
    seed: { type: "string", default: "1" },
    seeds: { type: "string" },
    length: { type: "string", default: "300" },
    invalid: { type: "string", default: "0.08" },
    progress: { type: "string", default: "10000" },
    repro: { type: "string" },
    out: { type: "string" },
    json: { type: "string" },
    "no-shrink": { type: "boolean", default: false },
    "shrink-budget": { type: "string", default: "1500" },
    strict: { type: "boolean", default: false },
    "keep-going": { type: "boolean", default: false },
    shrink: { type: "boolean", default: false },
    raw: { type: "boolean", default: false },
    quiet: { type: "boolean", default: false },
    known: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.known) {
  // The known differences as a Markdown table (the intended ones belong in the docs).
  console.log("| class | status | reason |\n|---|---|---|");
  for (const k of KNOWN) console.log(`| \`${k.name}\` | ${k.status} | ${k.reason.replace(/\|/g, "\\|")} |`);
  process.exit(0);
}

if (values.help) {
  console.log(readFileSync(new URL("./README.md", import.meta.url), "utf8"));
  process.exit(0);
}

const mode = values.raw ? "raw" : values.strict ? "strict" : strictMode();
const rooms = await Rooms.create();
const num = (k) => {
  const x = Number(values[k]);
  if (!Number.isFinite(x)) {
    console.error(`--${k} must be a number, got ${JSON.stringify(values[k])}`);
    process.exit(2);
  }
  return x;
};

if (values.repro) {
  const text = JSON.parse(readFileSync(values.repro, "utf8"));
  const calls = Array.isArray(text) ? text : text.calls;
  if (!Array.isArray(calls)) {
    console.error(`${values.repro}: expected an array of calls or {calls: [...]}`);
    process.exit(2);
  }
  let run = calls;
  if (values.shrink) {
    const diffs = (await replay(rooms, calls, { mode })).diffs.filter(failing);
    const first = diffs.find((d) => d.class === text.class) ?? diffs[0];
    if (!first) {
      console.log("nothing to shrink: no failing difference");
    } else {
      const s = await shrink(rooms, calls, first.class, { mode, budget: num("shrink-budget") });
      console.log(`shrunk ${first.class}: ${calls.length} -> ${s.calls.length} calls (${s.replays} replays)`);
      run = s.calls;
      const file = values.repro.replace(/(\.json)?$/, ".min.json");
      writeFileSync(file, JSON.stringify({ class: first.class, calls: run }, null, 1) + "\n");
      console.log(`written to ${file}`);
    }
  }
  console.log(`replaying ${run.length} call(s) from ${values.repro} (mode ${mode})`);
  const r = await replay(rooms, run, { mode, keepGoing: values["keep-going"], trace: (l) => console.log(l) });
  const fails = r.diffs.filter(failing);
  console.log(`\n${r.calls.length} call(s) run; ${r.diffs.length} difference(s), ${fails.length} failing`);
  for (const d of r.diffs) console.log(`  #${d.index} ${d.status} ${d.class}${d.detail ? ` (${d.detail})` : ""}`);
  for (const [k, n] of r.knownHits) console.log(`  absorbed by known entry ${k}: ${n}`);
  process.exit(fails.length ? 1 : 0);
}

const total = num("calls");
const seeds = values.seeds ? values.seeds.split(",").map(Number) : null;
console.log(
  `differential soak: ${seeds ? `seeds ${seeds.join(",")}` : `${total} calls from master seed ${values.seed}`}, ` +
    `sequences of ${values.length}, invalid share ${values.invalid}, mode ${mode}, ` +
    `native addon ${process.env.RINDLE_ROOM_NATIVE_BUILD || "release"}`,
);
const started = Date.now();
const result = await explore(rooms, {
  seed: num("seed"),
  seeds,
  calls: total,
  length: num("length"),
  invalid: num("invalid"),
  mode,
  progressEvery: num("progress"),
  onProgress: (s) => {
    if (values.quiet) return;
    const cls = [...s.classes].map(([k, c]) => `${c.count}×${k.length > 50 ? k.slice(0, 50) + "…" : k}`);
    const rate = Math.round(s.calls / Math.max(s.elapsed, 0.001));
    console.log(`[${s.elapsed.toFixed(0)}s] ${s.calls} calls, ${s.sequences} sequences, ${rate} calls/s; ${s.classes.size} failing class(es)${cls.length ? ": " + cls.join(", ") : ""}`);
  },
});
const secs = (Date.now() - started) / 1000;
console.log(`\n${result.calls} calls in ${result.sequences} sequences, ${secs.toFixed(1)} s`);
console.log(`known differences absorbed (not failing in this mode):`);
for (const k of KNOWN) {
  const n = result.known.get(k.name) ?? 0;
  console.log(`  ${String(n).padStart(7)}  ${k.name} (${k.status})`);
}
if (!values["no-shrink"] && result.classes.size) {
  console.log(`\nshrinking ${result.classes.size} class(es)…`);
  await shrinkAll(rooms, result.classes, { mode, budget: num("shrink-budget"), log: values.quiet ? null : (l) => console.log(`  ${l}`) });
}
console.log(`\n${result.classes.size} failing difference class(es)${result.classes.size ? ":" : ""}`);
const sorted = [...result.classes].sort((a, b) => (a[1].shrunk?.calls ?? a[1].first.calls).length - (b[1].shrunk?.calls ?? b[1].first.calls).length);
for (const [name, c] of sorted) console.log(`\n${describeClass(name, c, c.shrunk)}`);
if (values.out) {
  mkdirSync(values.out, { recursive: true });
  let i = 0;
  for (const [name, c] of sorted) {
    const file = join(values.out, `repro-${String(++i).padStart(2, "0")}.json`);
    writeFileSync(file, JSON.stringify({ class: name, status: c.status, count: c.count, seed: c.first.seed, calls: c.shrunk?.calls ?? c.first.calls }, null, 1) + "\n");
  }
  console.log(`\nrepro files written to ${values.out}`);
}
if (values.json) {
  const out = {
    calls: result.calls,
    sequences: result.sequences,
    mode,
    known: Object.fromEntries(result.known),
    classes: sorted.map(([name, c]) => ({
      class: name,
      status: c.status,
      count: c.count,
      seed: c.first.seed,
      diff: { ...(c.shrunk?.diff ?? c.first.diff), rawW: undefined, rawN: undefined },
      calls: c.shrunk?.calls ?? c.first.calls,
    })),
  };
  writeFileSync(values.json, JSON.stringify(out, null, 1) + "\n");
}
process.exit(result.classes.size ? 1 : 0);
