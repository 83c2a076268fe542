// Native WasmRoom (@rindle/room-native, release build) vs Zero 1.9.0's in-memory JS IVM,
// on the read-path workloads W1 and W3 of docs/BENCHMARKS.md, in one process, one after
// the other, with the same data, queries and writes, and a cross-check of the results.
//
//   cd bindings-node && npm run build && (cd bench && npm ci) && node bench/zero-vs-native.mjs
//
// What one unit costs, three ways:
// - native, JSON text in/out: room.apply(batch text) + room.commitAll() → frames text.
//   The room's JSON boundary (parsing the batch, rendering the frames, moving both
//   across Node-API as JS strings) is inside the timing; the batch texts are rendered
//   before it, as in the Rust JSON figures of docs/BENCHMARKS.md.
// - native, shell pattern: what the published room's Node shell does per upstream
//   frame, starting from and ending with JS objects: JSON.stringify(batch) →
//   room.apply → JSON.parse(status) → room.commitAll() → JSON.parse(frames) → route
//   each {sub, batch}.
// - Zero: source.push(change) drained, then the delegate's commit (every view flushes
//   and calls its listener), driven as docs/BENCHMARKS.md describes (the section
//   naming this script).
//
// Environment: BENCH_REPS (default 7), BENCH_W1_UNITS (20000), BENCH_W3_UNITS (2000),
// BENCH_W3_Q (comma list, default "1000"), BENCH_N (10000).
import { createRequire } from "node:module";
import process from "node:process";

import {
  baseIssue,
  FP,
  HELLO,
  ISSUE_COLUMNS,
  TABLES,
  USERS,
  userRow,
  W1_AST,
  w1Script,
  w3Ast,
  w3Script,
} from "./workload.mjs";

const require = createRequire(import.meta.url);
const ZERO_OUT = new URL("./node_modules/@rocicorp/zero/out/", import.meta.url);

// --------------------------------------------------------------------------------------
// Setup
// --------------------------------------------------------------------------------------

function env(name, dflt) {
  const v = process.env[name];
  return v === undefined || v === "" ? dflt : v;
}

const REPS = Number(env("BENCH_REPS", 7));
const W1_UNITS = Number(env("BENCH_W1_UNITS", 20_000));
const W3_UNITS = Number(env("BENCH_W3_UNITS", 2_000));
const W3_QS = env("BENCH_W3_Q", "1000").split(",").map(Number);
const N = Number(env("BENCH_N", 10_000));

if (!process.env.RINDLE_ROOM_NATIVE_BUILD && !process.env.RINDLE_ROOM_NATIVE_PATH) {
  process.env.RINDLE_ROOM_NATIVE_BUILD = "release";
}
const native = require("../index.js");

let zero;
try {
  zero = {
    ...(await import("@rocicorp/zero")),
    ...(await import(new URL("zql/src/ivm/memory-source.js", ZERO_OUT))),
    ...(await import(new URL("zql/src/ivm/source.js", ZERO_OUT))),
    ...(await import(new URL("zql/src/query/query-delegate-base.js", ZERO_OUT))),
  };
} catch (e) {
  console.error(`cannot load @rocicorp/zero (run \`npm ci\` in bindings-node/bench): ${e.message}`);
  process.exit(1);
}
const zeroVersion = require("./node_modules/@rocicorp/zero/package.json").version;

// Rows keyed by column (Zero): the same values as the wire rows.
const keyed = (table, row) => Object.fromEntries(table.columns.map((c, i) => [c, row[i]]));
const keyedIssue = (row) => keyed(TABLES[0], row);
const keyedUser = (row) => keyed(TABLES[1], row);

// The queries as Zero builder calls: the same queries as the wire ASTs.
const user = zero.table("user").columns({ id: zero.number(), name: zero.string() }).primaryKey("id");
const issue = zero
  .table("issue")
  .columns({
    id: zero.number(),
    title: zero.string(),
    open: zero.boolean(),
    created: zero.number(),
    creatorID: zero.number(),
    modified: zero.number(),
    description: zero.string(),
  })
  .primaryKey("id");
const issueRels = zero.relationships(issue, ({ one }) => ({
  creator: one({ sourceField: ["creatorID"], destField: ["id"], destSchema: user }),
}));
const schema = zero.createSchema({
  tables: [user, issue],
  relationships: [issueRels],
  enableLegacyQueries: true,
});
const zql = zero.createBuilder(schema);
const w1Query = () =>
  zql.issue.where("open", "=", true).orderBy("created", "desc").limit(50).related("creator");
const w3Query = (creator) =>
  zql.issue.where("creatorID", "=", creator).orderBy("created", "desc").limit(20);

class Delegate extends zero.QueryDelegateBase {
  defaultQueryComplete = true;
  #commitCallbacks = new Set();
  constructor(sources) {
    super();
    this.sources = sources;
  }
  getSource(name) {
    return this.sources.get(name);
  }
  onTransactionCommit(cb) {
    this.#commitCallbacks.add(cb);
    return () => this.#commitCallbacks.delete(cb);
  }
  commit() {
    for (const cb of this.#commitCallbacks) cb();
  }
}

// --------------------------------------------------------------------------------------
// The two sides
// --------------------------------------------------------------------------------------

/** The native room behind the shell's calling pattern; `sent` counts routed frames. */
class NativeSide {
  constructor(creators) {
    this.room = native.WasmRoom.open(JSON.stringify(HELLO), 0);
    this.seq = 1;
    this.subs = new Map();
    this.sent = 0;
    const ops = [];
    for (let id = 0; id < USERS; id++) ops.push({ table: "user", op: "add", row: userRow(id) });
    for (let id = 0; id < N; id++) ops.push({ table: "issue", op: "add", row: baseIssue(id, creators) });
    const status = JSON.parse(this.room.apply(JSON.stringify(this.batch(0, ops))));
    if (status.applied !== "snapshot") throw new Error(`snapshot: ${JSON.stringify(status)}`);
  }
  batch(seq, ops) {
    return { epoch: 1, seq, normalizedFp: FP, ops, cv: seq };
  }
  subscribe(key, ast) {
    this.subs.set(key, { queryId: this.subs.size + 1 });
    this.room.subscribe(key, 1, JSON.stringify(ast), 0);
  }
  /** Upstream batch objects for `ops` (one op per batch), numbered from the next seq. */
  prepare(opsList) {
    return opsList.map((op) => this.batch(this.seq++, [op]));
  }
  /** One unit from JSON text to JSON text (nothing parsed in JS). */
  stepText(text) {
    this.room.apply(text);
    return this.room.commitAll();
  }
  /** One unit: the shell's apply → drain → route. Returns the frames sent. */
  step(batch) {
    const status = JSON.parse(this.room.apply(JSON.stringify(batch)));
    if (status.applied !== "live") throw new Error(`apply: ${JSON.stringify(status)}`);
    const frames = JSON.parse(this.room.commitAll());
    let sent = 0;
    for (const { sub } of frames) {
      if (this.subs.has(sub)) sent++;
    }
    this.sent += sent;
    return sent;
  }
  /** The current result of `ast`, from a fresh subscriber's snapshot (rows per table). */
  result(ast) {
    const key = `check:${this.seq}:${Math.random()}`;
    const res = JSON.parse(this.room.subscribe(key, 1, JSON.stringify(ast), 0));
    this.room.unsubscribe(key, 0);
    const byTable = { issue: [], user: [] };
    for (const op of res.snapshot.ops) byTable[op.table].push(op.row);
    return byTable;
  }
  close() {
    this.room.free();
  }
}

/** Zero's MemorySources and views; `fired` counts listener calls after commits. */
class ZeroSide {
  constructor(creators) {
    this.sources = new Map();
    for (const t of Object.values(schema.tables)) {
      this.sources.set(t.name, new zero.MemorySource(t.name, t.columns, t.primaryKey));
    }
    this.delegate = new Delegate(this.sources);
    for (let id = 0; id < USERS; id++) this.push("user", zero.makeSourceChangeAdd(keyedUser(userRow(id))));
    for (let id = 0; id < N; id++) {
      this.push("issue", zero.makeSourceChangeAdd(keyedIssue(baseIssue(id, creators))));
    }
    this.views = new Map();
    this.fired = 0;
  }
  push(table, change) {
    for (const _ of this.sources.get(table).push(change)) {
      // drain: nothing happens unless the generator runs
    }
  }
  materialize(key, query) {
    const view = this.delegate.materialize(query);
    let first = true;
    view.addListener(() => {
      if (first) first = false; // addListener calls back once with the current data
      else this.fired++;
    });
    this.views.set(key, view);
  }
  /** Zero changes for the same ops (rows as keyed objects, built before timing). */
  prepare(opsList) {
    const cache = new Map();
    const obj = (row) => {
      let o = cache.get(row);
      if (!o) cache.set(row, (o = keyedIssue(row)));
      return o;
    };
    return opsList.map((op) => {
      switch (op.op) {
        case "add":
          return zero.makeSourceChangeAdd(obj(op.row));
        case "remove":
          return zero.makeSourceChangeRemove(obj(op.row));
        default:
          return zero.makeSourceChangeEdit(obj(op.new), obj(op.old));
      }
    });
  }
  step(change) {
    const before = this.fired;
    this.push("issue", change);
    this.delegate.commit();
    return this.fired - before;
  }
  /** A view's current data as positional rows: issues, and their distinct creators. */
  result(key) {
    const issues = [];
    const users = new Map();
    for (const row of this.views.get(key).data) {
      issues.push(ISSUE_COLUMNS.map((c) => row[c]));
      if (row.creator) users.set(row.creator.id, [row.creator.id, row.creator.name]);
    }
    return { issue: issues, user: [...users.values()] };
  }
  close() {
    for (const v of this.views.values()) v.destroy();
  }
}

// --------------------------------------------------------------------------------------
// Cross-checks
// --------------------------------------------------------------------------------------

const byId = (a, b) => a[0] - b[0];
function sameRows(what, nativeRows, zeroRows) {
  const a = JSON.stringify([...nativeRows].sort(byId));
  const b = JSON.stringify([...zeroRows].sort(byId));
  if (a !== b) {
    throw new Error(`cross-check failed: ${what}\n  native ${a.slice(0, 400)}\n  zero   ${b.slice(0, 400)}`);
  }
  return nativeRows.length;
}

const checks = [];
function check(what, nativeSide, zeroSide, ast, viewKey) {
  const n = nativeSide.result(ast);
  const z = zeroSide.result(viewKey);
  const issues = sameRows(`${what}: issues`, n.issue, z.issue);
  const users = sameRows(`${what}: creators`, n.user, z.user);
  checks.push(`${what}: ${issues} issues, ${users} creators equal`);
}

/** Runs `units` units on both sides, unit by unit, checking the frame shape. */
function verifyShape(label, script, nat, zer, start, units) {
  const ops = Array.from({ length: units }, (_, i) => script.op(start + i));
  const nb = nat.prepare(ops);
  const zc = zer.prepare(ops);
  for (let i = 0; i < units; i++) {
    const want = script.frames(start + i);
    const sent = nat.step(nb[i]);
    const fired = zer.step(zc[i]);
    if (sent !== want || fired !== want) {
      throw new Error(`${label} unit ${start + i}: frames native ${sent}, zero ${fired}, want ${want}`);
    }
  }
  checks.push(`${label}: ${units} units emit the same frames on both sides`);
}

// --------------------------------------------------------------------------------------
// Timing
// --------------------------------------------------------------------------------------

/** ns per unit of `step` over `prepared` (a full GC first, when exposed). */
function timeLoop(prepared, step) {
  globalThis.gc?.();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < prepared.length; i++) step(prepared[i]);
  return Number(process.hrtime.bigint() - t0) / prepared.length;
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * REPS repetitions (after one warm-up round); each times the three ways over the same
 * units of the script, in a rotating order, so that noise hits them alike.
 */
function race(label, script, nat, zer, unitsPerRep, startUnit) {
  let unit = startUnit;
  const ways = {
    text: {
      prepare: (ops) => nat.prepare(ops).map((b) => JSON.stringify(b)),
      run: (texts) => timeLoop(texts, (t) => nat.stepText(t)),
    },
    shell: { prepare: (ops) => nat.prepare(ops), run: (b) => timeLoop(b, (x) => nat.step(x)) },
    zero: { prepare: (ops) => zer.prepare(ops), run: (c) => timeLoop(c, (x) => zer.step(x)) },
  };
  const names = Object.keys(ways);
  const samples = { text: [], shell: [], zero: [] };
  const first = {};
  for (let rep = 0; rep <= REPS; rep++) {
    const ops = Array.from({ length: unitsPerRep }, (_, i) => script.op(unit + i));
    unit += unitsPerRep;
    for (let k = 0; k < names.length; k++) {
      const name = names[(rep + k) % names.length];
      const ns = ways[name].run(ways[name].prepare(ops));
      if (rep === 0) first[name] = ns; // the warm-up round: JIT, caches
      else samples[name].push(ns);
    }
  }
  const stat = (v) => ({ median: median(v), min: Math.min(...v) });
  const ratio = (a) => median(samples.zero.map((z, i) => z / samples[a][i]));
  return {
    label,
    text: stat(samples.text),
    shell: stat(samples.shell),
    zero: stat(samples.zero),
    ratioText: ratio("text"),
    ratioShell: ratio("shell"),
    first,
    nextUnit: unit,
  };
}

/**
 * The JS-side JSON of the shell pattern alone (no room): JSON.stringify of each batch
 * and JSON.parse of the status and frame texts the room returned for it. Returns the
 * median ns per unit over REPS rounds, and the next unit.
 */
function jsJsonAlone(script, nat, unitsPerRep, startUnit) {
  let unit = startUnit;
  const samples = [];
  for (let rep = 0; rep <= REPS; rep++) {
    const ops = Array.from({ length: unitsPerRep }, (_, i) => script.op(unit + i));
    unit += unitsPerRep;
    const batches = nat.prepare(ops);
    const status = [];
    const frames = [];
    for (const b of batches) {
      status.push(nat.room.apply(JSON.stringify(b)));
      frames.push(nat.room.commitAll());
    }
    const ns = timeLoop(
      batches.map((b, i) => [b, status[i], frames[i]]),
      ([b, st, fr]) => {
        JSON.stringify(b);
        JSON.parse(st);
        JSON.parse(fr);
      },
    );
    if (rep > 0) samples.push(ns);
  }
  return { ns: median(samples), nextUnit: unit };
}

// --------------------------------------------------------------------------------------
// Main
// --------------------------------------------------------------------------------------

const fmt = (ns) => (ns >= 10_000 ? `${(ns / 1000).toFixed(1)} µs` : `${Math.round(ns).toLocaleString("en-US")} ns`);
const results = [];

{
  // W1
  const nat = new NativeSide(USERS);
  const zer = new ZeroSide(USERS);
  nat.subscribe("w1", W1_AST);
  zer.materialize("w1", w1Query());
  const script = w1Script(N);
  check("W1 initial window", nat, zer, W1_AST, "w1");
  verifyShape("W1 first 2 cycles", script, nat, zer, 0, 8);
  // Mid-cycle: after an add the new issue is in the window and the 50th is out.
  verifyShape("W1 step 1", script, nat, zer, 8, 1);
  check("W1 after an add", nat, zer, W1_AST, "w1");
  verifyShape("W1 rest of cycle", script, nat, zer, 9, 3);
  const r = race("W1 N = 10k, per change", script, nat, zer, W1_UNITS, 12);
  check("W1 after the timed runs", nat, zer, W1_AST, "w1");
  if (nat.sent !== zer.fired) throw new Error(`W1 frames: native ${nat.sent}, zero ${zer.fired}`);
  checks.push(`W1: the shell pattern routed ${nat.sent} frames, Zero's listeners fired ${zer.fired} times`);
  r.jsJson = jsJsonAlone(script, nat, W1_UNITS, r.nextUnit).ns; // native only: last
  results.push({ ...r, target: 3 });
  nat.close();
  zer.close();
}

for (const q of W3_QS) {
  const nat = new NativeSide(q);
  const zer = new ZeroSide(q);
  for (let c = 0; c < q; c++) {
    nat.subscribe(`v${c}`, w3Ast(c));
    zer.materialize(`v${c}`, w3Query(c));
  }
  const script = w3Script(N, q);
  verifyShape(`W3 Q = ${q} first writes`, script, nat, zer, 0, 6);
  verifyShape(`W3 Q = ${q} an add`, script, nat, zer, 6, 1);
  check(`W3 Q = ${q} view ${script.creator(6)} after an add`, nat, zer, w3Ast(script.creator(6)), `v${script.creator(6)}`);
  verifyShape(`W3 Q = ${q} its remove`, script, nat, zer, 7, 1);
  const r = race(`W3 Q = ${q}, per write (hit)`, script, nat, zer, W3_UNITS, 8);
  for (const c of [0, Math.floor(q / 2), q - 1]) {
    check(`W3 Q = ${q} view ${c} after the timed runs`, nat, zer, w3Ast(c), `v${c}`);
  }
  if (nat.sent !== zer.fired) throw new Error(`W3 frames: native ${nat.sent}, zero ${zer.fired}`);
  checks.push(`W3 Q = ${q}: the shell pattern routed ${nat.sent} frames, Zero's listeners fired ${zer.fired} times`);
  r.jsJson = jsJsonAlone(script, nat, W3_UNITS, r.nextUnit).ns; // native only: last
  results.push({ ...r, target: q === 1000 ? 10 : undefined });
  nat.close();
  zer.close();
}

console.log(`# Native WasmRoom vs Zero ${zeroVersion} (Node ${process.version}, ${REPS} reps)\n`);
console.log(
  "| workload | native, JSON text in/out | native, shell pattern | Zero | " +
    "Zero / native text | Zero / native shell | target |",
);
console.log("|---|---:|---:|---:|---:|---:|---|");
const cell = (s) => `${fmt(s.median)} (min ${fmt(s.min)})`;
for (const r of results) {
  const verdict = (x) => (r.target === undefined ? "" : x >= r.target ? " **met**" : " **missed**");
  console.log(
    `| ${r.label} | ${cell(r.text)} | ${cell(r.shell)} | ${cell(r.zero)} | ` +
      `${r.ratioText.toFixed(1)}×${verdict(r.ratioText)} | ${r.ratioShell.toFixed(1)}×${verdict(r.ratioShell)} | ` +
      `${r.target ? `≥ ${r.target}×` : "–"} |`,
  );
}
console.log("\nThe shell pattern's JSON work in JS alone (JSON.stringify of the batch, JSON.parse of");
console.log("the status and the frames; no room). Zero / this is the most the shell-pattern ratio");
console.log("could reach with a room that took no time at all:\n");
for (const r of results) {
  console.log(`- ${r.label}: ${fmt(r.jsJson)} (bound: ${(r.zero.median / r.jsJson).toFixed(1)}×)`);
}
console.log("\nFirst (warm-up) round, not in the medians:\n");
for (const r of results) {
  console.log(
    `- ${r.label}: native text ${fmt(r.first.text)}, native shell ${fmt(r.first.shell)}, Zero ${fmt(r.first.zero)}`,
  );
}
console.log("\nCross-checks (all passed):\n");
for (const c of checks) console.log(`- ${c}`);
