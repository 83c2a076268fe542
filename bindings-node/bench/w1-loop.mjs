// W1 through the native class only, in a plain loop: a target for `perf record`.
//
//   cd bindings-node && npm run build
//   perf record -F 2000 --call-graph dwarf,16384 node --perf-basic-prof bench/w1-loop.mjs
//
// The same W1 as zero-vs-native.mjs (both take it from workload.mjs; docs/BENCHMARKS.md);
// prints the minimum and median ns per change over the repetitions. Environment:
// BENCH_REPS (30), BENCH_W1_UNITS (20000), BENCH_N (10000).
import { createRequire } from "node:module";
import process from "node:process";

import { baseIssue, HELLO, FP, USERS, userRow, W1_AST, w1Script } from "./workload.mjs";

const require = createRequire(import.meta.url);
if (!process.env.RINDLE_ROOM_NATIVE_BUILD && !process.env.RINDLE_ROOM_NATIVE_PATH) {
  process.env.RINDLE_ROOM_NATIVE_BUILD = "release";
}
const native = require("../index.js");

const REPS = Number(process.env.BENCH_REPS || 30);
const UNITS = Number(process.env.BENCH_W1_UNITS || 20_000);
const N = Number(process.env.BENCH_N || 10_000);

const room = native.WasmRoom.open(JSON.stringify(HELLO), 0);
const ops = [];
for (let id = 0; id < USERS; id++) ops.push({ table: "user", op: "add", row: userRow(id) });
for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id, USERS) });
room.apply(JSON.stringify({ epoch: 1, seq: 0, normalizedFp: FP, ops, cv: 0 }));
room.subscribe("w1", 1, JSON.stringify(W1_AST), 0);
const script = w1Script(N);

let seq = 1;
let u = 0;
let bytes = 0;
const perChange = [];
for (let r = 0; r < REPS; r++) {
  // Texts as the shell makes them (JSON.stringify), outside the timing.
  const texts = [];
  for (let i = 0; i < UNITS; i++) texts.push(JSON.stringify({ epoch: 1, seq: seq++, normalizedFp: FP, ops: [script.op(u++)], cv: seq }));
  const t0 = process.hrtime.bigint();
  for (const t of texts) {
    room.apply(t);
    bytes += room.commitAll().length;
  }
  perChange.push(Number(process.hrtime.bigint() - t0) / UNITS);
}
perChange.sort((a, b) => a - b);
const median = perChange[perChange.length >> 1];
console.log(
  `W1 N = ${N}, native text in/out: min ${perChange[0].toFixed(0)} ns, median ${median.toFixed(0)} ns per change ` +
    `(${REPS} × ${UNITS} changes, ${bytes} bytes of frames)`,
);
room.free();
