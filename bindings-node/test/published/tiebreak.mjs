// The fresh-subscription tie-breaker for read-path differences with the published room.
//
// A subscriber's view is what its snapshot and the batches after it add up to. Where the
// native and the published room disagree on a batch, the one to trust is the room whose
// view equals a fresh evaluation of the same query over the same head. The fresh
// evaluation is taken on the published room itself: the scenario is replayed up to the
// step without any subscription (so nothing is reused), then the query is subscribed.
import fs from "node:fs";
import { createRequire } from "node:module";
import { bySubscriber } from "./replay.mjs";

const require = createRequire(import.meta.url);
const { PARAMS } = require("../support/replay.js");

const SKIPPED = new Set(["mintRoomToken", "verifyRoomToken", "scopeSpecsHash"]);
const SUBSCRIBING = new Set(["subscribe", "unsubscribe", "lmidSubscribe"]);

function args(call, list) {
  return list.map((a, i) => {
    const kind = PARAMS[call][i];
    if (kind === "json" || (kind === "optjson" && a !== undefined)) return a?.$text ?? JSON.stringify(a);
    return a;
  });
}

/** Replays steps `0..=upto` on `Room`; `fresh` leaves every subscription out. */
function replay(Room, steps, upto, fresh) {
  let room = null;
  const out = [];
  for (const [i, s] of steps.entries()) {
    if (i > upto) break;
    if (SKIPPED.has(s.call) || (fresh && SUBSCRIBING.has(s.call))) {
      out.push(undefined);
      continue;
    }
    try {
      if (s.call === "open") {
        room?.free();
        room = Room.open(...args("open", s.args));
        out.push(undefined);
      } else {
        const r = room[s.call](...args(s.call, s.args ?? []));
        out.push(typeof r === "string" ? JSON.parse(r) : r);
      }
    } catch (e) {
      out.push({ threw: String(e?.message ?? e) });
    }
  }
  return { room, out };
}

const rowKey = (table, row) => `${table}:${JSON.stringify(row)}`;

/** Folds a batch's ops into a view (a set of `table:row` keys). */
function fold(view, ops) {
  for (const op of ops) {
    if (op.op === "add") view.add(rowKey(op.table, op.row));
    else if (op.op === "remove") view.delete(rowKey(op.table, op.row));
    else {
      view.delete(rowKey(op.table, op.old));
      view.add(rowKey(op.table, op.new));
    }
  }
}

/** Every subscriber's view after each step, from one list of step results. */
function views(steps, results) {
  const live = new Map();
  const asts = new Map();
  const after = [];
  for (const [i, s] of steps.entries()) {
    const r = results[i];
    if (s.call === "subscribe" && r?.snapshot) {
      const v = new Set();
      fold(v, r.snapshot.ops);
      live.set(s.args[0], v);
      asts.set(s.args[0], s.args[2]);
    } else if (s.call === "unsubscribe") {
      live.delete(s.args[0]);
    } else if (s.call === "commitAll" && Array.isArray(r)) {
      for (const e of r) if (live.has(e.sub)) fold(live.get(e.sub), e.batch.ops);
    }
    after.push(new Map([...live].map(([k, v]) => [k, new Set(v)])));
  }
  return { after, asts };
}

function sameSet(a, b) {
  return a.size === b.size && [...a].every((x) => b.has(x));
}

/**
 * Judges the scenario in `file` at step `step` (a `commitAll`): returns
 * `{publishedStale, nativeFresh, detail}` — whether some published subscriber's view
 * differs from a fresh published evaluation, and whether every view the scenario
 * expects of the native room equals it.
 */
export function judge(Room, file, step) {
  const scenario = JSON.parse(fs.readFileSync(file, "utf8"));
  const steps = scenario.steps;
  const published = replay(Room, steps, steps.length - 1, false);
  published.room?.free();
  const expected = steps.map((s, i) =>
    "expect" in s ? bySubscriber(s.call, JSON.parse(s.expect)) : published.out[i],
  );
  const w = views(steps, published.out);
  const n = views(steps, expected);
  const { room } = replay(Room, steps, step, true);
  let publishedStale = false;
  let nativeFresh = true;
  const detail = [];
  try {
    for (const [sub, view] of n.after[step]) {
      const ast = n.asts.get(sub);
      const got = JSON.parse(room.subscribe(`fresh:${sub}`, 1, JSON.stringify(ast), 0));
      const fresh = new Set();
      fold(fresh, got.snapshot.ops);
      const wView = w.after[step].get(sub);
      if (wView && !sameSet(wView, fresh)) {
        publishedStale = true;
        detail.push(`${sub}: published view ${[...wView].join(" ")} vs fresh ${[...fresh].join(" ")}`);
      }
      if (!sameSet(view, fresh)) {
        nativeFresh = false;
        detail.push(`${sub}: native view ${[...view].join(" ")} vs fresh ${[...fresh].join(" ")}`);
      }
    }
  } finally {
    room?.free();
  }
  return { publishedStale, nativeFresh, detail };
}
