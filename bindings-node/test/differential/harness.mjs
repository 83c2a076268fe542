// The driver shared by the CI test and the soak: generate and run sequences, group
// their differences by class, shrink a repro per class, replay a recorded sequence.
import { Runner } from "./engine.mjs";
import { generateInto } from "./gen.mjs";
import { KNOWN } from "./known.mjs";
import { Rng } from "./prng.mjs";
import { freshWasmClass, nativeClass } from "./rooms.mjs";

/** Holds the two room classes; swaps in a fresh wasm instance after a trap. */
export class Rooms {
  static async create() {
    const r = new Rooms();
    r.Wasm = await freshWasmClass();
    r.Native = nativeClass();
    return r;
  }

  async runner(opts) {
    return new Runner({ Wasm: this.Wasm, Native: this.Native, known: KNOWN, ...opts });
  }

  /** After a run: a trapped wasm instance is replaced before the next one. */
  async after(runner) {
    runner.close();
    if (runner.w.trapped) this.Wasm = await freshWasmClass();
  }
}

/** Whether a difference fails the run. */
export const failing = (d) => d.status !== "known";

/** Replays `calls`; returns the finished runner. */
export async function replay(rooms, calls, opts = {}) {
  const runner = await rooms.runner(opts);
  for (const call of calls) if (!runner.step(call)) break;
  if (opts.audit) runner.finish();
  await rooms.after(runner);
  return runner;
}

/**
 * Shrinks `calls` while replaying them still shows a failing difference of class `cls`
 * (delta debugging: drop chunks, halving their size, then single calls to a fixpoint).
 * `budget`: the most replays to spend.
 */
export async function shrink(rooms, calls, cls, { mode, budget = 1500 } = {}) {
  let replays = 0;
  const steps = numbering(calls);
  const hit = async (cand) => {
    replays++;
    const r = await replay(rooms, renumber(cand, steps), { mode });
    const d = r.diffs.find((x) => x.class === cls && failing(x));
    return d ? d.index : -1;
  };
  let best = calls.slice();
  const first = await hit(best);
  if (first < 0) return { calls: best, replays, reproduced: false };
  best = best.slice(0, first + 1);
  let chunks = 2;
  while (best.length >= 2 && replays < budget) {
    const size = Math.ceil(best.length / chunks);
    let removed = false;
    for (let start = 0; start < best.length && replays < budget; start += size) {
      const cand = [...best.slice(0, start), ...best.slice(start + size)];
      if (cand.length === 0) continue;
      const at = await hit(cand);
      if (at >= 0) {
        best = cand.slice(0, at + 1);
        removed = true;
        break;
      }
    }
    if (removed) chunks = Math.max(chunks - 1, 2);
    else if (size === 1) break;
    else chunks = Math.min(chunks * 2, best.length);
  }
  // Single calls, until nothing more can go.
  let progress = true;
  while (progress && replays < budget) {
    progress = false;
    for (let i = best.length - 2; i >= 0 && replays < budget; i--) {
      const cand = [...best.slice(0, i), ...best.slice(i + 1)];
      const at = await hit(cand);
      if (at >= 0) {
        best = cand.slice(0, at + 1);
        progress = true;
      }
    }
  }
  // Then the arguments: drop upstream ops, query clauses, conditions, list entries.
  best = renumber(best, steps);
  const argHit = async (cand) => {
    replays++;
    const r = await replay(rooms, cand, { mode });
    return r.diffs.some((x) => x.class === cls && failing(x) && x.index === cand.length - 1);
  };
  progress = true;
  while (progress && replays < budget) {
    progress = false;
    for (let i = 0; i < best.length && replays < budget; i++) {
      for (const simpler of simplerCalls(best[i])) {
        if (replays >= budget) break;
        const cand = [...best.slice(0, i), simpler, ...best.slice(i + 1)];
        if (await argHit(cand)) {
          best = cand;
          progress = true;
          break;
        }
      }
    }
  }
  return { calls: best, replays, reproduced: true };
}

/** Clauses a query level, scope spec or condition can lose and stay well formed. */
const OPTIONAL = ["where", "orderBy", "start", "limit", "related", "flip", "system", "footprintWhere"];

/** Smaller versions of one JSON value (one edit each), for shrinking arguments. */
function* simpler(v) {
  if (Array.isArray(v)) {
    // Lists of objects or lists (ops, conditions, related, orderBy, specs, entries), not
    // rows or keys.
    if (v.length > 0 && v.every((x) => x !== null && typeof x === "object")) {
      for (let i = 0; i < v.length; i++) yield [...v.slice(0, i), ...v.slice(i + 1)];
    }
    for (let i = 0; i < v.length; i++) for (const x of simpler(v[i])) yield [...v.slice(0, i), x, ...v.slice(i + 1)];
    return;
  }
  if (v === null || typeof v !== "object") return;
  if ((v.type === "and" || v.type === "or") && Array.isArray(v.conditions)) yield* v.conditions;
  for (const k of OPTIONAL) {
    if (!(k in v)) continue;
    const out = { ...v };
    delete out[k];
    yield out;
  }
  for (const k of Object.keys(v)) for (const x of simpler(v[k])) yield { ...v, [k]: x };
}

/** Arguments worth shrinking, by method (hellos are left whole: their fp covers them). */
const SHRINKABLE = { apply: 0, subscribe: 2, enableWritesV2: 0, flushConflict: 0, ack: 0, seedDurable: 0, enableWrites: 0 };

function* simplerCalls(call) {
  const i = SHRINKABLE[call.m];
  if (i === undefined || call.a?.[i] === undefined) return;
  const arg = call.a[i];
  if (arg !== null && typeof arg === "object" && typeof arg.$text === "string") return;
  for (const x of simpler(arg)) {
    const a = call.a.slice();
    a[i] = x;
    yield { ...call, a };
  }
}

const isBatch = (c) => c.m === "apply" && c.a?.[0] && typeof c.a[0] === "object" && typeof c.a[0].seq === "number";

/**
 * How each upstream batch's seq and each mutation's mid step from the previous one in
 * the original sequence, so a shrunk sequence can keep the same steps (dropping a batch
 * must not turn the next one into a seq gap, nor a dropped mutation the next into a mid
 * gap, unless the gap was there to begin with).
 */
function numbering(calls) {
  const steps = new Map();
  let seq = null;
  const mids = new Map();
  for (const c of calls) {
    if (c.m === "open") {
      seq = null;
      mids.clear();
    } else if (isBatch(c)) {
      const s = c.a[0].seq;
      if (s !== 0 && seq !== null) steps.set(c, s - seq);
      seq = s;
    } else if (c.m === "beginMutation" && typeof c.a?.[1] === "number") {
      const prev = mids.get(c.a[0]);
      if (prev !== undefined) steps.set(c, c.a[1] - prev);
      mids.set(c.a[0], c.a[1]);
    }
  }
  return steps;
}

/** `calls` with seqs and mids re-stepped as in the original (see `numbering`). */
function renumber(calls, steps) {
  let seq = null;
  const mids = new Map(); // client -> current mid
  const remap = new Map(); // client -> Map(original mid -> mid)
  return calls.map((c) => {
    if (c.m === "open") {
      seq = null;
      mids.clear();
      remap.clear();
      return c;
    }
    if (isBatch(c)) {
      const step = steps.get(c);
      const s = c.a[0].seq === 0 || step === undefined || seq === null ? c.a[0].seq : seq + step;
      seq = s;
      return s === c.a[0].seq ? c : { ...c, a: [{ ...c.a[0], seq: s }, ...c.a.slice(1)] };
    }
    if (c.m === "beginMutation" && typeof c.a?.[1] === "number") {
      const client = c.a[0];
      const step = steps.get(c);
      const prev = mids.get(client);
      const mid = step === undefined || prev === undefined ? c.a[1] : prev + step;
      mids.set(client, mid);
      if (!remap.has(client)) remap.set(client, new Map());
      remap.get(client).set(c.a[1], mid);
      return mid === c.a[1] ? c : { ...c, a: [client, mid, ...c.a.slice(2)] };
    }
    if (c.m === "ack" && Array.isArray(c.a?.[0])) {
      const entries = c.a[0].map((e) => {
        const m = remap.get(e?.clientID)?.get(e?.mid);
        return m === undefined ? e : { ...e, mid: m };
      });
      return { ...c, a: [entries, ...c.a.slice(1)] };
    }
    return c;
  });
}

/**
 * Runs generated sequences. `opts`: {seeds: number[] (one sequence each) | seed + calls
 * (a master seed and a total call budget), length, invalid, mode, onProgress(stats),
 * progressEvery}. Returns {classes: Map class -> {count, status, first: {seed, calls,
 * diff}}, known: Map class -> count, calls, sequences}.
 */
export async function explore(rooms, opts) {
  const classes = new Map();
  const known = new Map();
  const length = opts.length ?? 300;
  let calls = 0;
  let sequences = 0;
  let nextProgress = opts.progressEvery ?? Infinity;
  const master = new Rng(opts.seed ?? 1);
  const seeds = opts.seeds ?? null;
  const started = Date.now();
  for (let k = 0; ; k++) {
    let seed;
    if (seeds) {
      if (k >= seeds.length) break;
      seed = seeds[k];
    } else {
      if (calls >= opts.calls) break;
      seed = master.u32();
    }
    const runner = await rooms.runner({ mode: opts.mode });
    generateInto(runner, new Rng(seed), Math.min(length, seeds ? length : opts.calls - calls), { invalid: opts.invalid });
    await rooms.after(runner);
    sequences++;
    calls += runner.calls.length;
    for (const [name, count] of runner.knownHits) known.set(name, (known.get(name) ?? 0) + count);
    for (const d of runner.diffs) {
      if (!failing(d)) continue;
      let c = classes.get(d.class);
      if (!c) {
        c = { count: 0, status: d.status, first: null };
        classes.set(d.class, c);
      }
      c.count++;
      const cut = runner.calls.slice(0, d.index + 1);
      if (!c.first || cut.length < c.first.calls.length) c.first = { seed, calls: cut, diff: d };
    }
    if (calls >= nextProgress && opts.onProgress) {
      opts.onProgress({ calls, sequences, classes, known, elapsed: (Date.now() - started) / 1000 });
      nextProgress = calls + opts.progressEvery;
    }
  }
  return { classes, known, calls, sequences };
}

/** Formats one class's report: counts, repro, both sides at the difference. */
export function describeClass(name, c, shrunk) {
  const d = shrunk?.diff ?? c.first.diff;
  const calls = shrunk?.calls ?? c.first.calls;
  const lines = [
    `== ${name}  (${c.status}, ${c.count} occurrence${c.count === 1 ? "" : "s"}; seed ${c.first.seed}, ${calls.length} call${calls.length === 1 ? "" : "s"})`,
  ];
  if (d.detail) lines.push(`   as: ${d.detail}`);
  lines.push(`   at call #${d.index} (${d.phase === "probe" ? `getter ${d.getter} after ${d.method}` : d.method})`);
  lines.push(`   wasm:   ${d.w}`);
  lines.push(`   native: ${d.n}`);
  for (const n of d.note ?? []) lines.push(`   ${n}`);
  lines.push(`   repro: ${JSON.stringify(calls)}`);
  return lines.join("\n");
}

/** Shrinks the repro of every class in `classes` (in place: `c.shrunk`). */
export async function shrinkAll(rooms, classes, { mode, budget, log } = {}) {
  for (const [name, c] of classes) {
    const s = await shrink(rooms, c.first.calls, name, { mode, budget });
    if (s.reproduced) {
      const r = await replay(rooms, s.calls, { mode });
      const diff = r.diffs.find((x) => x.class === name && failing(x));
      c.shrunk = { calls: s.calls, diff: diff ?? c.first.diff };
    }
    if (log) log(`shrunk ${name}: ${c.first.calls.length} -> ${(c.shrunk?.calls ?? c.first.calls).length} calls (${s.replays} replays)`);
  }
}
