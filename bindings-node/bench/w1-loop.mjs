// W1 through the native class only, in a plain loop: a target for `perf record`.
//
//   cd bindings-node && npm run build
//   perf record -F 2000 --call-graph dwarf,16384 node --perf-basic-prof bench/w1-loop.mjs
//
// Same data, query and 4-step cycle as zero-vs-native.mjs (docs/BENCHMARKS.md, W1);
// prints the minimum and median ns per change over the repetitions. Environment:
// BENCH_REPS (30), BENCH_W1_UNITS (20000), BENCH_N (10000).
import { createRequire } from "node:module";
import process from "node:process";

const require = createRequire(import.meta.url);
if (!process.env.RINDLE_ROOM_NATIVE_BUILD && !process.env.RINDLE_ROOM_NATIVE_PATH) {
  process.env.RINDLE_ROOM_NATIVE_BUILD = "release";
}
const native = require("../index.js");

const REPS = Number(process.env.BENCH_REPS || 30);
const UNITS = Number(process.env.BENCH_W1_UNITS || 20_000);
const N = Number(process.env.BENCH_N || 10_000);
const USERS = 100;
const TABLES = [
  { name: "user", columns: ["id", "name"], primaryKey: [0] },
  {
    name: "issue",
    columns: ["id", "title", "open", "created", "creatorID", "modified", "description"],
    primaryKey: [0],
  },
];
// normalizedFp of TABLES (protocol.md §3.4), as in zero-vs-native.mjs.
const FP = "c8bd6a76198f3f90";
const W1_AST = {
  table: "issue",
  where: { type: "simple", op: "=", left: { type: "column", name: "open" }, right: { type: "literal", value: true } },
  orderBy: [["created", "desc"]],
  limit: 50,
  related: [{ correlation: { parentField: ["creatorID"], childField: ["id"] }, subquery: { table: "user", alias: "creator" } }],
};

const issueRow = (id, title, open, created, creator) => [id, title, open, created, creator, created, `Description of issue ${id}.`];
const baseIssue = (id) => issueRow(id, `Issue ${id}`, id % 3 !== 0, id, id % USERS);

const room = native.WasmRoom.open(JSON.stringify({ epoch: 1, comparatorVersion: 2, tables: TABLES, normalizedFp: FP }), 0);
const ops = [];
for (let id = 0; id < USERS; id++) ops.push({ table: "user", op: "add", row: [id, `user ${id}`] });
for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id) });
room.apply(JSON.stringify({ epoch: 1, seq: 0, normalizedFp: FP, ops }));
room.subscribe("w1", 1, JSON.stringify(W1_AST), 0);

// The cycle: add a newest issue, edit its title, edit a deep row, remove the new issue.
const id = N + 1;
let deep = Math.floor(N / 2);
while (deep % 3 === 0) deep++;
const added = issueRow(id, `Issue ${id}`, true, id, id % USERS);
const edited = issueRow(id, `Issue ${id} (edited)`, true, id, id % USERS);
const deepRows = [baseIssue(deep), issueRow(deep, `Issue ${deep} (edited)`, true, deep, deep % USERS)];
function op(u) {
  const cycle = Math.floor(u / 4);
  switch (u % 4) {
    case 0:
      return { table: "issue", op: "add", row: added };
    case 1:
      return { table: "issue", op: "edit", old: added, new: edited };
    case 2:
      return { table: "issue", op: "edit", old: deepRows[cycle % 2], new: deepRows[(cycle + 1) % 2] };
    default:
      return { table: "issue", op: "remove", row: edited };
  }
}

let seq = 1;
let u = 0;
let bytes = 0;
const perChange = [];
for (let r = 0; r < REPS; r++) {
  // Texts as the shell makes them (JSON.stringify), outside the timing.
  const texts = [];
  for (let i = 0; i < UNITS; i++) texts.push(JSON.stringify({ epoch: 1, seq: seq++, normalizedFp: FP, ops: [op(u++)] }));
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
