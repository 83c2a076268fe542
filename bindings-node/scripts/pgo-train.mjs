#!/usr/bin/env node
// The training run of a profile-guided build (scripts/pgo-profile.sh): drives a room
// through what a room server asks of it, so that the compiler learns which branches and
// calls are hot. It is deliberately NOT the benchmarks' workload: its own schema (a task
// tracker), its own data and queries, several sizes, and the write plane as well, so
// that the side-by-side bench (bench/wasm-vs-native.mjs) measures a build trained on
// something else.
//
//   node scripts/pgo-train.mjs            # the room named by RINDLE_ROOM_NATIVE_PATH
//                                         # or RINDLE_ROOM_NATIVE_BUILD, as index.js loads
//
// Environment: PGO_TRAIN_SCALE (default 1; the test suite runs it at a tiny scale to
// keep the script honest). Every call's answer is checked, so a training run that stops
// exercising the room fails instead of training the compiler on errors.
import { createRequire } from "node:module";
import process from "node:process";

import { normalizedFp } from "../bench/workload.mjs";

const TABLES = [
  { name: "member", columns: ["id", "name", "team", "active"], primaryKey: [0] },
  { name: "note", columns: ["id", "taskID", "at", "body"], primaryKey: [0] },
  { name: "project", columns: ["id", "name", "archived", "lead"], primaryKey: [0] },
  {
    name: "task",
    columns: ["id", "projectID", "title", "status", "priority", "due", "assignee", "estimate", "labels"],
    primaryKey: [0],
  },
];
const HELLO = { epoch: 1, comparatorVersion: 2, tables: TABLES, normalizedFp: normalizedFp(TABLES) };
const STATUS = ["open", "doing", "blocked", "done"];
const WORDS = ["fix", "add", "crash", "slow", "docs", "login", "export", "cache", "retry", "UI"];

/** A small deterministic generator (mulberry32): the same run every time. */
function rng(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

const col = (name) => ({ type: "column", name });
const lit = (value) => ({ type: "literal", value });
const cmp = (name, op, value) => ({ type: "simple", op, left: col(name), right: lit(value) });
const and = (...conditions) => ({ type: "and", conditions });
const or = (...conditions) => ({ type: "or", conditions });
const rel = (parentField, childField, subquery) => ({ correlation: { parentField: [parentField], childField: [childField] }, subquery });
const exists = (parentField, childField, subquery, op = "EXISTS") => ({ type: "correlatedSubquery", op, related: rel(parentField, childField, subquery) });

/** The queries a tracker's screens would subscribe: windows, filters, joins, gates. */
function queries(r, sizes) {
  const { members, projects } = sizes;
  const m = () => r.int(0, members - 1);
  const p = () => r.int(0, projects - 1);
  return [
    { table: "task", where: cmp("status", "=", r.pick(STATUS)), orderBy: [["due", "asc"], ["id", "asc"]], limit: 25, related: [rel("assignee", "id", { table: "member", alias: "owner" }), rel("projectID", "id", { table: "project", alias: "project" })] },
    { table: "task", where: and(cmp("priority", ">=", 3), cmp("status", "!=", "done")), orderBy: [["priority", "desc"], ["due", "asc"], ["id", "asc"]], limit: 100 },
    { table: "task", where: cmp("title", "LIKE", `%${r.pick(WORDS)}%`), orderBy: [["id", "desc"]], limit: 20 },
    { table: "task", where: cmp("title", "ILIKE", `${r.pick(WORDS)}%`), limit: 10 },
    { table: "project", where: cmp("id", "=", p()), related: [rel("id", "projectID", { table: "task", alias: "tasks", orderBy: [["due", "asc"], ["id", "asc"]], limit: 20, related: [rel("id", "taskID", { table: "note", alias: "notes", orderBy: [["at", "desc"], ["id", "asc"]], limit: 5 })] })] },
    { table: "member", where: exists("id", "assignee", { table: "task", alias: "blocked", where: cmp("status", "=", "blocked") }), orderBy: [["name", "asc"], ["id", "asc"]] },
    { table: "member", where: and(cmp("active", "=", true), exists("id", "lead", { table: "project", alias: "leads" }, "NOT EXISTS")), limit: 50 },
    { table: "task", where: { type: "simple", op: "IN", left: col("assignee"), right: lit([m(), m(), m(), m()]) }, orderBy: [["estimate", "desc"], ["id", "asc"]], limit: 30 },
    { table: "task", where: or(cmp("projectID", "=", p()), cmp("projectID", "=", p()), cmp("due", "<", r.int(0, 500))), orderBy: [["due", "desc"], ["id", "asc"]], limit: 40 },
    { table: "task", where: and(cmp("labels", "IS NOT", null), cmp("estimate", ">", 2.5)), orderBy: [["estimate", "asc"], ["id", "asc"]], limit: 15 },
    { table: "note", where: cmp("taskID", "=", r.int(0, sizes.tasks - 1)), orderBy: [["at", "asc"], ["id", "asc"]] },
    { table: "project", where: cmp("archived", "=", false), orderBy: [["name", "asc"], ["id", "asc"]], limit: 10, related: [rel("lead", "id", { table: "member", alias: "lead" })] },
  ];
}

function taskRow(r, id, sizes) {
  const words = `${r.pick(WORDS)} ${r.pick(WORDS)} ${id}`;
  const labels = r.next() < 0.3 ? null : r.pick(["bug", "feature", "chore", "bug,urgent"]);
  return [id, r.int(0, sizes.projects - 1), words, r.pick(STATUS), r.int(0, 4), r.int(0, 1000), r.int(0, sizes.members - 1), Math.round(r.next() * 80) / 8, labels];
}

/** The seq-0 batch, and the tasks it holds by id (the upstream side's copy). */
function snapshot(r, sizes) {
  const ops = [];
  const tasks = new Map();
  for (let id = 0; id < sizes.members; id++) ops.push({ table: "member", op: "add", row: [id, `member ${id}`, `team ${id % 7}`, id % 5 !== 0] });
  for (let id = 0; id < sizes.projects; id++) ops.push({ table: "project", op: "add", row: [id, `project ${id}`, id % 4 === 0, r.int(0, sizes.members - 1)] });
  // Tasks arrive in a scattered key order half the time, as a replica's snapshot may.
  const stride = sizes.tasks % 7 === 0 ? 1 : 7;
  for (let i = 0; i < sizes.tasks; i++) {
    const id = sizes.scattered ? (i * stride) % sizes.tasks : i;
    const row = taskRow(r, id, sizes);
    tasks.set(id, row);
    ops.push({ table: "task", op: "add", row });
  }
  for (let id = 0; id < sizes.notes; id++) ops.push({ table: "note", op: "add", row: [id, r.int(0, sizes.tasks - 1), r.int(0, 1e6), `note ${id}: ${r.pick(WORDS)}`] });
  return { batch: { epoch: 1, seq: 0, normalizedFp: HELLO.normalizedFp, ops, cv: 0 }, tasks };
}

function check(cond, what) {
  if (!cond) throw new Error(`pgo-train: ${what}`);
}

/** One room's life at one size: load, subscribe, stream upstream changes, take writes, flush. */
function session(Room, seed, sizes, rounds) {
  const r = rng(seed);
  const room = Room.open(JSON.stringify(HELLO), 0);
  const { batch, tasks: rows } = snapshot(r, sizes);
  const ids = [...rows.keys()];
  const applied = JSON.parse(room.apply(JSON.stringify(batch)));
  check(applied.applied === "snapshot", `snapshot not applied: ${JSON.stringify(applied)}`);
  const qs = queries(r, sizes);
  qs.forEach((q, i) => room.subscribe(`s${i}`, 1, JSON.stringify(q), 0));
  check(room.subscriberCount() === qs.length, "not every query subscribed");
  room.commitAll();
  room.enableWrites(JSON.stringify(["note", "task"]));
  let seq = 1;
  let nextTask = sizes.tasks;
  let mid = 0;
  let drainsWithFrames = 0;
  for (let round = 0; round < rounds; round++) {
    // Upstream: a batch of adds, edits and removes, then one drain.
    const ops = [];
    for (let k = 0; k < 20; k++) {
      const x = r.next();
      const id = r.pick(ids);
      const old = rows.get(id);
      if (x < 0.3) {
        const row = taskRow(r, nextTask++, sizes);
        rows.set(row[0], row);
        ids.push(row[0]);
        ops.push({ table: "task", op: "add", row });
      } else if (old !== undefined && x < 0.85) {
        const row = taskRow(r, id, sizes);
        rows.set(id, row);
        ops.push({ table: "task", op: "edit", old, new: row });
      } else if (old !== undefined) {
        ops.push({ table: "task", op: "remove", row: old });
        rows.delete(id);
      }
    }
    const live = JSON.parse(room.apply(JSON.stringify({ epoch: 1, seq: seq++, normalizedFp: HELLO.normalizedFp, ops, cv: seq })));
    check(live.applied === "live", `batch not applied: ${JSON.stringify(live)}`);
    if (room.commitAll().length > 2) drainsWithFrames++;
    // A client's mutations against the head, then a flush of their net effect.
    for (let k = 0; k < 8; k++) {
      check(room.beginMutation("c1", ++mid, "saveTask", '{"id":1}') === '{"begin":"tx"}', "mutation not opened");
      const id = r.int(0, sizes.tasks - 1);
      const had = room.txGet("task", JSON.stringify([id]));
      if (had !== undefined && r.next() < 0.2) room.txRemove("task", JSON.stringify([id]));
      else room[had === undefined ? "txAdd" : "txEdit"]("task", JSON.stringify(taskRow(r, id, sizes)));
      room.txAdd("note", JSON.stringify([1e7 + mid, id, mid, `edit ${mid}`]));
      check("headCv" in JSON.parse(room.commitMutation()), "mutation not committed");
      room.commitAll();
    }
    const flush = room.beginFlush();
    if (flush !== undefined) {
      room.flushOk();
      room.ack(JSON.stringify([{ clientID: "c1", mid }]));
    }
    // Screens come and go.
    if (round % 5 === 4) {
      const i = r.int(0, qs.length - 1);
      room.unsubscribe(`s${i}`, round);
      room.subscribe(`s${i}`, 1, JSON.stringify(queries(r, sizes)[i]), round);
      room.commitAll();
      room.sweep(round + 60_000);
    }
  }
  check(drainsWithFrames > rounds / 2, `${drainsWithFrames} of ${rounds} upstream batches reached a query`);
  room.free();
}

/** The whole training run; `scale` multiplies sizes and rounds (0.01 in the test suite). */
export function train(Room, scale = 1) {
  const size = (n) => Math.max(20, Math.round(n * scale));
  const plan = [
    { tasks: 2_000, notes: 2_000, members: 50, projects: 20, scattered: false, rooms: 12, rounds: 40 },
    { tasks: 20_000, notes: 10_000, members: 300, projects: 120, scattered: true, rooms: 4, rounds: 30 },
    { tasks: 60_000, notes: 30_000, members: 1_000, projects: 400, scattered: false, rooms: 2, rounds: 20 },
  ];
  let seed = 1;
  for (const p of plan) {
    const sizes = { ...p, tasks: size(p.tasks), notes: size(p.notes), members: size(p.members), projects: size(p.projects) };
    for (let i = 0; i < Math.max(1, Math.round(p.rooms * Math.min(1, scale * 10))); i++) {
      session(Room, seed++, sizes, Math.max(3, Math.round(p.rounds * Math.min(1, scale * 10))));
    }
  }
  return seed - 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const require = createRequire(import.meta.url);
  const { WasmRoom } = require("../index.js");
  const scale = Number(process.env.PGO_TRAIN_SCALE || 1);
  const t = process.hrtime.bigint();
  const rooms = train(WasmRoom, scale);
  console.log(`pgo-train: ${rooms} rooms trained in ${Number(process.hrtime.bigint() - t) / 1e6} ms`);
}
