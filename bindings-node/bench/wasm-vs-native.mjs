// The native WasmRoom against the published one (@rindle/room 0.9.0, the wasm engine
// its Node shell runs), side by side in one Node process: the same hello, snapshot,
// queries and batches through the same JSON-text API, rounds alternating between the
// two rooms so that machine noise hits both alike. Prints medians and ratios
// (wasm time / native time: above 1 the native room is faster).
//
//   cd bindings-node && npm run build && (cd bench && npm ci) && node bench/wasm-vs-native.mjs
//
// `npm run build:dist` instead of `npm run build` measures the addon as published (the
// `dist` profile: fat LTO, one codegen unit); `RINDLE_ROOM_NATIVE_PATH` names any other.
//
// Rows (docs/BENCHMARKS.md, "The published room, side by side"):
// - snapshot apply: the seq-0 batch of 100 users and N issues, on a fresh room;
// - W1 hydrate: the first W1 subscribe on a loaded room (its ordering built then);
// - W1 per change: the 4-step W1 cycle, apply + commitAll per unit;
// - W2 hydrate: 300 distinct relational queries (`user where id = u`, related issues by
//   `creatorID` limit 10, under each related comments by `issueID` limit 10), mean
//   per subscribe, on a room that also holds N comments.
//
// Environment: BENCH_ROUNDS (default 5), BENCH_N (10000), BENCH_W1_UNITS (4000).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";

import { baseIssue, normalizedFp, USERS, userRow, W1_AST, w1Script, TABLES, HELLO } from "./workload.mjs";

const require = createRequire(import.meta.url);
const env = (name, dflt) => Number(process.env[name] || dflt);
const ROUNDS = env("BENCH_ROUNDS", 5);
const N = env("BENCH_N", 10_000);
const W1_UNITS = env("BENCH_W1_UNITS", 4_000);
const W2_QUERIES = 300;

if (!process.env.RINDLE_ROOM_NATIVE_BUILD && !process.env.RINDLE_ROOM_NATIVE_PATH) {
  process.env.RINDLE_ROOM_NATIVE_BUILD = "release";
}
const Native = require("../index.js").WasmRoom;

async function publishedClass() {
  let url;
  try {
    url = new URL(import.meta.resolve("@rindle/room/pkg/rindle_room.js"));
  } catch (e) {
    console.error(`cannot find @rindle/room 0.9.0 (run \`npm ci\` in bindings-node/bench): ${e.message}`);
    process.exit(1);
  }
  const mod = await import(url.href);
  mod.initSync({ module: new WebAssembly.Module(readFileSync(new URL("rindle_room_bg.wasm", url))) });
  return mod.WasmRoom;
}
const Wasm = await publishedClass();
const wasmVersion = require("@rindle/room/package.json").version;

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

// The W2 data set: the W1 tables plus comments (sorted by name in the hello).
const COMMENT = { name: "comment", columns: ["id", "issueID", "created", "body"], primaryKey: [0] };
const W2_TABLES = [COMMENT, ...TABLES];
const W2_HELLO = { epoch: 1, comparatorVersion: 2, tables: W2_TABLES, normalizedFp: normalizedFp(W2_TABLES) };
const W2_USERS = 300;

function snapshotText(hello, withComments, users) {
  const ops = [];
  for (let id = 0; id < users; id++) ops.push({ table: "user", op: "add", row: userRow(id) });
  for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id, users) });
  if (withComments) {
    for (let id = 0; id < N; id++) {
      ops.push({ table: "comment", op: "add", row: [id, (id * 7) % N, id, `Comment ${id}`] });
    }
  }
  return JSON.stringify({ epoch: 1, seq: 0, normalizedFp: hello.normalizedFp, ops, cv: 0 });
}

const w2Ast = (u) =>
  JSON.stringify({
    table: "user",
    where: { type: "simple", op: "=", left: { type: "column", name: "id" }, right: { type: "literal", value: u } },
    related: [
      {
        correlation: { parentField: ["id"], childField: ["creatorID"] },
        subquery: {
          table: "issue",
          alias: "issues",
          orderBy: [["created", "desc"], ["id", "asc"]],
          limit: 10,
          related: [
            {
              correlation: { parentField: ["id"], childField: ["issueID"] },
              subquery: { table: "comment", alias: "comments", orderBy: [["created", "asc"], ["id", "asc"]], limit: 10 },
            },
          ],
        },
      },
    ],
  });

const W1_SNAPSHOT = snapshotText(HELLO, false, USERS);
const W2_SNAPSHOT = snapshotText(W2_HELLO, true, W2_USERS);
const W1_TEXT = JSON.stringify(W1_AST);
const W2_ASTS = Array.from({ length: W2_QUERIES }, (_, u) => w2Ast(u));
const script = w1Script(N);
const W1_BATCHES = Array.from({ length: W1_UNITS }, (_, u) =>
  JSON.stringify({ epoch: 1, seq: u + 1, normalizedFp: HELLO.normalizedFp, ops: [script.op(u)], cv: u + 1 }),
);

/** One round on one room class: every row's time, ms (per unit where it says). */
function round(R) {
  const out = {};
  let room = R.open(JSON.stringify(HELLO), 0);
  let t = now();
  room.apply(W1_SNAPSHOT);
  out.apply = now() - t;
  t = now();
  room.subscribe("w1", 1, W1_TEXT, 0);
  out.w1Hydrate = now() - t;
  room.commitAll();
  t = now();
  let frames = 0;
  for (const b of W1_BATCHES) {
    room.apply(b);
    if (room.commitAll().length > 2) frames++;
  }
  out.w1Change = (now() - t) / W1_UNITS;
  if (frames !== W1_UNITS / 4 * 3) throw new Error(`W1: ${frames} drains with frames, expected ${(W1_UNITS / 4) * 3}`);
  room.free?.();
  room = R.open(JSON.stringify(W2_HELLO), 0);
  room.apply(W2_SNAPSHOT);
  t = now();
  W2_ASTS.forEach((a, i) => room.subscribe(`w2-${i}`, 1, a, 0));
  out.w2Hydrate = (now() - t) / W2_QUERIES;
  if (room.materializationCount() !== W2_QUERIES) throw new Error("W2: not every query materialized");
  room.free?.();
  return out;
}

console.log(`# wasm ${wasmVersion} vs native, N = ${N}, ${ROUNDS} alternating rounds (Node ${process.version})`);
const samples = { wasm: [], native: [] };
round(Wasm);
round(Native); // warm both
for (let r = 0; r < ROUNDS; r++) {
  for (const [side, R] of r % 2 ? [["native", Native], ["wasm", Wasm]] : [["wasm", Wasm], ["native", Native]]) {
    samples[side].push(round(R));
  }
}
const rows = [
  ["snapshot apply, ms", "apply"],
  ["W1 hydrate, ms", "w1Hydrate"],
  ["W1 per change, µs", "w1Change", 1000],
  ["W2 hydrate, ms per query", "w2Hydrate"],
];
console.log("| row | wasm | native | wasm / native |");
console.log("|---|---:|---:|---:|");
for (const [label, key, scale = 1] of rows) {
  const w = median(samples.wasm.map((s) => s[key])) * scale;
  const n = median(samples.native.map((s) => s[key])) * scale;
  console.log(`| ${label} | ${w.toFixed(3)} | ${n.toFixed(3)} | ${(w / n).toFixed(2)}× |`);
}
