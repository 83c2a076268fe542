// What a hostile query costs the native room: one subscribe of each shape a client can
// send in a lease token (at most 1 MiB, so ~750 KB of AST), on a room loaded with 100
// users and N issues, with the time it took and the resident memory it left behind
// (docs/security.md lists the limits behind each row; docs/BENCHMARKS.md, "Hostile
// queries", the figures).
//
//   cd bindings-node && npm run build && node --expose-gc bench/hostile-queries.mjs
//
// Environment: BENCH_N (default 10000).
import { createRequire } from "node:module";
import process from "node:process";

import { baseIssue, HELLO, USERS, userRow } from "./workload.mjs";

const require = createRequire(import.meta.url);
if (!process.env.RINDLE_ROOM_NATIVE_BUILD && !process.env.RINDLE_ROOM_NATIVE_PATH) {
  process.env.RINDLE_ROOM_NATIVE_BUILD = "release";
}
const { WasmRoom } = require("../index.js");
const N = Number(process.env.BENCH_N || 10_000);

function loaded() {
  const room = WasmRoom.open(JSON.stringify(HELLO), 0);
  const ops = [];
  for (let id = 0; id < USERS; id++) ops.push({ table: "user", op: "add", row: userRow(id) });
  for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id, USERS) });
  room.apply(JSON.stringify({ epoch: 1, seq: 0, normalizedFp: HELLO.normalizedFp, ops, cv: 0 }));
  return room;
}

const col = (name) => ({ type: "column", name });
const lit = (value) => ({ type: "literal", value });
const simple = (name, op, value) => ({ type: "simple", op, left: col(name), right: lit(value) });
const exists = (i) => ({
  type: "correlatedSubquery",
  op: "EXISTS",
  related: {
    correlation: { parentField: ["creatorID"], childField: ["id"] },
    subquery: { table: "user", alias: `e${i}`, where: simple("id", "=", i) },
  },
});
const related = (i) => ({
  correlation: { parentField: ["creatorID"], childField: ["id"] },
  subquery: { table: "user", alias: `u${i}` },
});

const shapes = [
  ["LIKE '%a%a…%a%' (180,000 segments)", { table: "issue", where: simple("title", "LIKE", `${"%a".repeat(180_000)}%`) }],
  ["id IN (90,000 ids)", { table: "issue", where: simple("id", "IN", Array.from({ length: 90_000 }, (_, i) => 1e6 + i)) }],
  [
    "id = v OR … (8,000 equalities)",
    { table: "issue", where: { type: "or", conditions: Array.from({ length: 8_000 }, (_, i) => simple("id", "=", 1e6 + i)) } },
  ],
  ["an OR of 128 EXISTS (the cap)", { table: "issue", where: { type: "or", conditions: Array.from({ length: 128 }, (_, i) => exists(i)) } }],
  ["an OR of 129 EXISTS", { table: "issue", where: { type: "or", conditions: Array.from({ length: 129 }, (_, i) => exists(i)) } }],
  ["128 related children (the cap)", { table: "issue", orderBy: [["created", "desc"]], limit: 50, related: Array.from({ length: 128 }, (_, i) => related(i)) }],
];

const rss = () => process.memoryUsage().rss / 1048576;
console.log(`# hostile queries, one subscribe each on 100 users + ${N} issues (Node ${process.version})`);
console.log("| query | AST bytes | subscribe, ms | RSS after, MiB | answer |");
console.log("|---|---:|---:|---:|---|");
for (const [label, ast] of shapes) {
  const room = loaded();
  const text = JSON.stringify(ast);
  global.gc?.();
  const before = rss();
  const t = performance.now();
  let answer;
  try {
    room.subscribe("q", 1, text, 0);
    room.commitAll();
    answer = "served";
  } catch (e) {
    answer = `refused: ${e.message.slice(0, 60)}…`;
  }
  const ms = performance.now() - t;
  global.gc?.();
  console.log(`| ${label} | ${text.length} | ${ms.toFixed(1)} | +${(rss() - before).toFixed(0)} | ${answer} |`);
  room.free();
}
