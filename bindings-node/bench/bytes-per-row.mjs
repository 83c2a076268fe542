// Retained bytes per base row, the published wasm room against the native one: a child
// process per side opens ROOMS rooms one after the other, each loaded with the same
// snapshot of N issues (and 100 users), and reads its RSS after each (after a GC).
// The figure is the median RSS a room adds over rooms 2..ROOMS, divided by N: the
// first room pays for code and one-time structures, the others only for their rows.
//
//   cd bindings-node && npm run build && (cd bench && npm ci) && node bench/bytes-per-row.mjs
//
// Environment: BENCH_N (default 100000), BENCH_ROOMS (6).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";

import { baseIssue, HELLO, USERS, userRow } from "./workload.mjs";

const N = Number(process.env.BENCH_N || 100_000);
const ROOMS = Number(process.env.BENCH_ROOMS || 6);
const side = process.argv[2];

if (!side) {
  const out = {};
  for (const s of ["wasm", "native"]) {
    const text = execFileSync(process.execPath, ["--expose-gc", new URL(import.meta.url).pathname, s], {
      env: process.env,
      encoding: "utf8",
    });
    out[s] = JSON.parse(text.trim().split("\n").pop());
  }
  console.log(`# bytes per base row, N = ${N}, rooms 2..${ROOMS} (median growth per room / N)`);
  console.log("| side | bytes per row | RSS per room, MiB |");
  console.log("|---|---:|---:|");
  for (const s of ["wasm", "native"]) {
    console.log(`| ${s} | ${out[s].perRow.toFixed(1)} | ${(out[s].perRoom / 1048576).toFixed(1)} |`);
  }
  console.log(`ratio wasm / native: ${(out.wasm.perRow / out.native.perRow).toFixed(2)}×`);
  process.exit(0);
}

const require = createRequire(import.meta.url);
let Room;
if (side === "wasm") {
  const url = new URL(import.meta.resolve("@rindle/room/pkg/rindle_room.js"));
  const mod = await import(url.href);
  mod.initSync({ module: new WebAssembly.Module(readFileSync(new URL("rindle_room_bg.wasm", url))) });
  Room = mod.WasmRoom;
} else {
  process.env.RINDLE_ROOM_NATIVE_BUILD ??= "release";
  Room = require("../index.js").WasmRoom;
}
const ops = [];
for (let id = 0; id < USERS; id++) ops.push({ table: "user", op: "add", row: userRow(id) });
for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id, USERS) });
const snapshot = JSON.stringify({ epoch: 1, seq: 0, normalizedFp: HELLO.normalizedFp, ops, cv: 0 });
ops.length = 0;
const rss = () => {
  globalThis.gc?.();
  return process.memoryUsage().rss;
};
const rooms = [];
const seen = [rss()];
for (let i = 0; i < ROOMS; i++) {
  const room = Room.open(JSON.stringify(HELLO), 0);
  room.apply(snapshot);
  rooms.push(room);
  seen.push(rss());
}
const growth = [];
for (let i = 2; i < seen.length; i++) growth.push(seen[i] - seen[i - 1]);
growth.sort((a, b) => a - b);
const perRoom = growth[Math.floor(growth.length / 2)];
console.log(JSON.stringify({ perRoom, perRow: perRoom / N, seen }));
