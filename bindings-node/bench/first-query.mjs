// The first W1 subscribe on a freshly loaded room, in a process that does nothing else:
// ROOMS rooms are opened, loaded with 100 users and N issues and subscribed one after
// the other (every other one freed, so the heap is not a fresh one), and the median
// first-subscribe time is printed. The side-by-side bench measures the same call right
// after a round of the other room, with its caches swept; this one shows the call with
// the caches as a busy room server would have them (docs/BENCHMARKS.md, "What the first
// W1 subscribe waits on").
//
//   cd bindings-node && npm run build && (cd bench && npm ci) && node bench/first-query.mjs [wasm]
//
// Environment: BENCH_N (default 10000), BENCH_ROOMS (30), BENCH_CHURN (1: before each
// room, another is loaded and freed, so that the measured room's rows land in its holes).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";

import { baseIssue, USERS, userRow, W1_AST, HELLO } from "./workload.mjs";

const require = createRequire(import.meta.url);
const N = Number(process.env.BENCH_N || 10_000);
const ROOMS = Number(process.env.BENCH_ROOMS || 30);
const CHURN = process.env.BENCH_CHURN === "1";
const side = process.argv[2] === "wasm" ? "wasm" : "native";

async function roomClass() {
  if (side === "native") {
    if (!process.env.RINDLE_ROOM_NATIVE_BUILD && !process.env.RINDLE_ROOM_NATIVE_PATH) {
      process.env.RINDLE_ROOM_NATIVE_BUILD = "release";
    }
    return require("../index.js").WasmRoom;
  }
  const url = new URL(import.meta.resolve("@rindle/room/pkg/rindle_room.js"));
  const mod = await import(url.href);
  mod.initSync({ module: new WebAssembly.Module(readFileSync(new URL("rindle_room_bg.wasm", url))) });
  return mod.WasmRoom;
}
const Room = await roomClass();

const ops = [];
for (let id = 0; id < USERS; id++) ops.push({ table: "user", op: "add", row: userRow(id) });
for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id, USERS) });
const snapshot = JSON.stringify({ epoch: 1, seq: 0, normalizedFp: HELLO.normalizedFp, ops, cv: 0 });
const hello = JSON.stringify(HELLO);
const query = JSON.stringify(W1_AST);

const times = [];
const kept = [];
for (let r = 0; r < ROOMS; r++) {
  if (CHURN) {
    const other = Room.open(hello, 0);
    other.apply(snapshot);
    other.free?.();
  }
  const room = Room.open(hello, 0);
  room.apply(snapshot);
  const t = process.hrtime.bigint();
  room.subscribe("w1", 1, query, 0);
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
  room.commitAll();
  if (r % 2) kept.push(room);
  else room.free?.();
}
times.sort((a, b) => a - b);
const median = times[times.length >> 1];
console.log(`${side}: first W1 subscribe, N = ${N}, ${ROOMS} rooms${CHURN ? ", churned" : ""}: median ${median.toFixed(3)} ms, min ${times[0].toFixed(3)} ms`);
