// Runs one call sequence on both rooms side by side and judges every outcome.
//
// After each call: the two outcomes are passed through the known normalisers
// (known.mjs), then compared; then every getter is read on both rooms and compared the
// same way (so a state divergence is pinned to the call that caused it). A read-path
// disagreement (subscribe, lmidSubscribe, a subscriber's commitAll batch) is settled by
// the fresh-subscription tie-breaker: each room's maintained client view is compared
// with a fresh subscription of the same query in that same room. The subscriber is then
// dropped in both rooms and the run continues. Any other unexplained disagreement ends
// the sequence: the two rooms' states can no longer be assumed equal.
import { deepEqual, diffPaths, outcomeShape, render, sameOutcome } from "./compare.mjs";
import { CLIENT_GETTERS, GETTERS, Side } from "./rooms.mjs";
import { View, viewDelta } from "./views.mjs";

export const CLIENTS = ["c1", "c2", "c3"];
const READ_PATH = new Set(["subscribe", "lmidSubscribe", "commitAll"]);
const NOW_ARG = { subscribe: 3, lmidSubscribe: 3, unsubscribe: 1, sweep: 0 };

/**
 * Which known entries are active: `mode` "ci" (all, pending ones absorb their
 * differences), "strict" (pending entries still normalise, so the run goes on, but each
 * hit is reported as a difference of its class), "all" (the same for the intended ones
 * too: a census of every class) or "raw" (pending entries off).
 */
export function strictMode(env = process.env) {
  const v = env.RINDLE_DIFF_STRICT;
  if (v === "raw" || v === "all") return v;
  if (v && v !== "0") return "strict";
  return "ci";
}

/** `ast` with a root condition that holds for every row (see `Runner.freshView`). */
export function independent(ast, view) {
  const t = view.tables.get(ast?.table);
  if (!t || !Array.isArray(t.columns) || !Array.isArray(t.primaryKey)) return ast;
  const col = t.columns[t.primaryKey[0] ?? 0];
  // The same type as the key cells (no cross-type comparison), a value no row has.
  const sample = [...view.rows.values()].find((r) => r.table === ast.table)?.row?.[t.primaryKey[0] ?? 0];
  const value = typeof sample === "number" ? -987654321.5 : "\u0000fresh";
  const always = { type: "simple", op: "IS NOT", left: { type: "column", name: col }, right: { type: "literal", value } };
  return { ...ast, where: ast.where ? { type: "and", conditions: [ast.where, always] } : always };
}

export class Runner {
  /** `opts`: {Wasm, Native, known, mode, trace} (trace: fn(line) or null). */
  constructor(opts) {
    this.w = new Side("wasm", opts.Wasm);
    this.n = new Side("native", opts.Native);
    this.mode = opts.mode ?? "ci";
    this.known = (opts.known ?? []).filter((k) => !(this.mode === "raw" && k.status === "pending"));
    this.trace = opts.trace ?? null;
    this.keepGoing = opts.keepGoing ?? false; // investigation: never stop on a difference
    this.kstate = new Map();
    this.views = { w: new Map(), n: new Map() };
    this.calls = [];
    this.outcomes = []; // per call: {w, n}, for known.mjs's claims
    this.diffs = []; // every recorded difference (known ones included)
    this.knownHits = new Map(); // class -> count, for absorbed differences
    this.stopped = false;
    this.now = 0;
    this.fresh = 0;
    this.probeClients = new Set();
  }

  /** Whether a hit of known entry `k` is reported as a difference in this mode. */
  reports(k) {
    return this.mode === "all" || (this.mode === "strict" && k.status === "pending");
  }

  /** Frees both rooms. */
  close() {
    this.w.drop();
    this.n.drop();
  }

  log(line) {
    if (this.trace) this.trace(line);
  }

  /** Runs one recorded call. Returns false once the sequence has stopped. */
  step(call) {
    if (this.stopped) return false;
    const index = this.calls.length;
    this.calls.push(call);
    const args = call.a ?? [];
    if (NOW_ARG[call.m] !== undefined && typeof args[NOW_ARG[call.m]] === "number") {
      this.now = Math.max(this.now, args[NOW_ARG[call.m]]);
    }
    for (const c of [args[0], args[2]]) {
      if (typeof c === "string" && CLIENTS.includes(c)) this.probeClients.add(c);
    }
    const w = this.w.exec(call);
    const n = this.n.exec(call);
    this.lastW = w;
    this.lastN = n;
    this.outcomes.push({ w, n });
    this.log(`#${index} ${JSON.stringify(call)}\n    wasm:   ${render(w)}\n    native: ${render(n)}`);
    this.track("w", call, w);
    this.track("n", call, n);

    if (w.trap || n.trap) {
      // The wasm instance is unusable now: judge the native room on its own.
      const note = w.trap && !n.trap ? this.auditAlone(index) : [];
      const verdict = note.length === 0 ? undefined : note.some((l) => l.startsWith("native view wrong")) ? "native view wrong too" : "native views consistent";
      this.record({ index, call, phase: "call", w, n, verdict, note }, true);
      this.stopped = true;
      return false;
    }
    const j = this.judge({ index, method: call.m, args, phase: "call", w, n });
    if (!j.same) {
      // Both refused (only the text differs): nothing changed; the probe checks that.
      const refused = !j.w.ok && !j.n.ok;
      if (READ_PATH.has(call.m) && j.w.ok && j.n.ok) this.readPathDisagreement(index, call, j);
      else this.record({ index, call, phase: "call", w: j.w, n: j.n, rawW: w, rawN: n }, !refused);
    }
    if (!this.stopped) this.probe(index, call);
    return !this.stopped;
  }

  halt() {
    if (this.keepGoing && !this.w.trapped) return true;
    this.stopped = true;
    return false;
  }

  /** Passes an event through the known normalisers; reports pending hits in strict mode. */
  judge(ev) {
    let { w, n } = ev;
    const hits = [];
    for (const k of this.known) {
      if (!k.normalise) continue;
      if (!this.kstate.has(k.name)) this.kstate.set(k.name, {});
      let out;
      try {
        out = k.normalise({ ...ev, w, n, orig: { w: ev.w, n: ev.n } }, this.kstate.get(k.name), this);
      } catch (e) {
        throw new Error(`known.mjs entry ${k.name}: normalise threw at call #${ev.index} (${ev.method}): ${e.stack ?? e}`);
      }
      if (!out) continue;
      if (out.hit) hits.push(k);
      if (out.w) w = out.w;
      if (out.n) n = out.n;
    }
    for (const k of hits) this.noteKnown(k, ev);
    return { same: sameOutcome(ev.method, w, n), w, n, hits };
  }

  noteKnown(k, ev) {
    if (this.reports(k)) {
      this.diffs.push({
        class: k.name,
        status: k.status,
        index: ev.index,
        method: ev.method,
        phase: ev.phase,
        getter: ev.getter,
        w: render(ev.w),
        n: render(ev.n),
      });
    } else {
      this.knownHits.set(k.name, (this.knownHits.get(k.name) ?? 0) + 1);
    }
  }

  /**
   * Records a difference that no normaliser explained; a filter entry of known.mjs may
   * still claim it. `stops`: whether the sequence ends here.
   */
  record(d, stops) {
    const method = d.phase === "probe" ? `${d.getter} after ${d.call.m}` : d.call.m;
    const shape = d.shape ?? outcomeShape(d.call.m, d.w, d.n);
    const name = `${method}: ${shape}${d.verdict ? ` [${d.verdict}]` : ""}`;
    const diff = {
      class: name,
      status: "unknown",
      index: d.index,
      method: d.call.m,
      getter: d.getter,
      phase: d.phase,
      shape,
      verdict: d.verdict,
      w: render(d.w),
      n: render(d.n),
      rawW: d.rawW,
      rawN: d.rawN,
      note: d.note,
    };
    let stop = stops;
    for (const k of this.known) {
      let claimed = false;
      try {
        claimed = Boolean(k.claims?.(diff, d, this));
      } catch (e) {
        throw new Error(`known.mjs entry ${k.name}: claims threw at call #${d.index} (${d.call.m}): ${e.stack ?? e}`);
      }
      if (!claimed) continue;
      const reported = this.reports(k);
      if (!reported) this.knownHits.set(k.name, (this.knownHits.get(k.name) ?? 0) + 1);
      diff.class = k.name;
      diff.status = reported ? k.status : "known";
      diff.detail = name;
      if (k.continues) stop = false;
      break;
    }
    this.diffs.push(diff);
    this.log(`    !! ${diff.status === "unknown" ? "DIFFERENCE" : diff.status} ${diff.class}${diff.detail ? ` (${diff.detail})` : ""}`);
    if (stop) this.halt();
    return diff;
  }

  /** Every getter on both rooms, compared. */
  probe(index, call) {
    if (!this.w.room && !this.n.room) return;
    const reads = [...GETTERS.map((g) => ({ m: g, a: [] }))];
    for (const c of this.probeClients) for (const g of CLIENT_GETTERS) reads.push({ m: g, a: [c] });
    for (const r of reads) {
      const w = this.w.exec(r);
      const n = this.n.exec(r);
      const j = this.judge({ index, method: r.m, args: r.a, phase: "probe", getter: r.m, afterCall: call, w, n });
      if (!j.same) {
        const getter = r.a.length ? `${r.m}(${r.a[0]})` : r.m;
        this.log(`    probe ${getter}: wasm ${render(w)} native ${render(n)}`);
        this.record({ index, call, phase: "probe", getter: r.m, w: j.w, n: j.n, rawW: w, rawN: n }, true);
        return;
      }
    }
  }

  /** Keeps each room's client views in step with what that room returned. */
  track(side, call, out) {
    const views = this.views[side];
    if (call.m === "open") {
      if (out.ok) views.clear();
      return;
    }
    if (!out.ok) return;
    const a = call.a ?? [];
    if (call.m === "subscribe" || call.m === "lmidSubscribe") {
      const spec =
        call.m === "subscribe"
          ? { kind: "ast", epoch: a[1], ast: a[2] }
          : { kind: "lmid", epoch: a[1], client: a[2] };
      const v = new View(out.v?.hello, spec);
      v.applyBatch(out.v?.snapshot);
      views.set(a[0], v);
    } else if (call.m === "commitAll" && Array.isArray(out.v)) {
      for (const e of out.v) {
        const v = views.get(e.sub);
        if (v) v.applyBatch(e.batch);
      }
    } else if (call.m === "unsubscribe" && out.v === true) {
      views.delete(a[0]);
    }
  }

  /** A read-path disagreement: find the subscribers concerned and settle each. */
  readPathDisagreement(index, call, j) {
    if (call.m !== "commitAll") {
      const sub = call.a?.[0];
      return this.settle(index, call, sub, j.w, j.n, outcomeShape(call.m, j.w, j.n));
    }
    if (!Array.isArray(j.w.v) || !Array.isArray(j.n.v)) {
      return this.record({ index, call, phase: "call", w: j.w, n: j.n }, true);
    }
    const bySub = (list) => {
      const m = new Map();
      for (const e of list) m.set(e?.sub, e);
      return m;
    };
    const ws = bySub(j.w.v);
    const ns = bySub(j.n.v);
    const subs = new Set([...ws.keys(), ...ns.keys()]);
    let any = false;
    for (const sub of subs) {
      const a = ws.get(sub);
      const b = ns.get(sub);
      if (deepEqual(a, b)) continue;
      any = true;
      const shape = !a ? "entry only in native" : !b ? "entry only in wasm" : [...diffPaths(a.batch, b.batch, "batch")].join(" ");
      this.settle(index, call, sub, { ok: true, v: a }, { ok: true, v: b }, shape);
      if (this.stopped) return;
    }
    if (!any) {
      // Same entries per subscriber, in another order.
      this.record({ index, call, phase: "call", w: j.w, n: j.n, shape: "entry order" }, false);
    }
  }

  /**
   * The fresh-subscription tie-breaker for subscriber `sub`: each room's maintained view
   * against a fresh subscription of the same query in that room. Then `sub` is dropped
   * in both rooms (resynchronised) unless the rooms disagree on the result itself.
   */
  settle(index, call, sub, w, n, shape) {
    const vw = this.views.w.get(sub);
    const vn = this.views.n.get(sub);
    if (!vw || !vn || !deepEqual(vw.spec, vn.spec)) {
      return this.record({ index, call, phase: "call", w, n, shape, verdict: "no view to settle" }, true);
    }
    this.freshFailure = undefined;
    const fw = this.freshView("w", vw.spec, vw);
    const fn = this.freshView("n", vn.spec, vn);
    if (!fw || !fn) {
      // What failed (the last side that did), and whether the native view matches its
      // fresh subscription when that one succeeded: a known class may explain the failure.
      const freshFailure = this.freshFailure;
      const nativeMatches = fn ? vn.matches(fn) : undefined;
      return this.record({ index, call, phase: "call", w, n, shape, verdict: "fresh subscribe failed", freshFailure, nativeMatches }, true);
    }
    const okW = vw.matches(fw);
    const okN = vn.matches(fn);
    let verdict;
    let stops = false;
    if (okN && !okW) verdict = "wasm stale view";
    else if (okW && !okN) verdict = "native wrong";
    else if (!okW && !okN) verdict = "both views wrong";
    else if (fw.matches(fn)) verdict = "same rows, different frames";
    else {
      verdict = "rooms disagree on the rows";
      stops = true;
    }
    const note = [
      `wasm view vs its fresh snapshot: ${viewDelta(vw, fw)}`,
      `native view vs its fresh snapshot: ${viewDelta(vn, fn)}`,
      ...(verdict === "rooms disagree on the rows" ? [`wasm fresh vs native fresh: ${viewDelta(fw, fn)}`] : []),
    ];
    this.log(`    tie-breaker for ${sub}: ${verdict}\n      ${note.join("\n      ")}`);
    const fresh = { w: fw, n: fn };
    const d = this.record({ index, call, phase: "call", w, n, shape, verdict, note, sub, spec: vw.spec, fresh, views: { w: vw, n: vn } }, stops);
    if (!this.stopped) this.resync(sub);
    return d;
  }

  /**
   * Subscribes a throwaway subscriber to the query of `spec` in one room and returns its
   * view. The AST gets a condition true for every row (`<first key column> IS NOT
   * <a value no row has>`), so its query key differs and the room evaluates it from
   * scratch instead of handing out the maintained pipeline the subscriber under test
   * shares. (The lmid query cannot be varied: its fresh snapshot is the shared one.)
   */
  freshView(side, spec, view) {
    const s = side === "w" ? this.w : this.n;
    const sub = `~fresh${++this.fresh}`;
    const call =
      spec.kind === "ast"
        ? { m: "subscribe", a: [sub, spec.epoch, independent(spec.ast, view), Math.ceil(this.now)] }
        : { m: "lmidSubscribe", a: [sub, spec.epoch, spec.client, Math.ceil(this.now)] };
    const out = s.exec(call);
    s.exec({ m: "unsubscribe", a: [sub, Math.ceil(this.now)] });
    this.log(`    (${s.name} tie-breaker) ${JSON.stringify(call)} -> ${render(out, 300)}`);
    if (!out.ok) {
      this.freshFailure = { side, out };
      return null;
    }
    const v = new View(out.v?.hello, spec);
    v.applyBatch(out.v?.snapshot);
    return v;
  }

  /** Drops `sub` in both rooms (after a settled read-path disagreement). */
  resync(sub) {
    for (const side of ["w", "n"]) {
      const s = side === "w" ? this.w : this.n;
      s.exec({ m: "unsubscribe", a: [sub, Math.ceil(this.now)] });
      this.views[side].delete(sub);
    }
    this.log(`    (resync) unsubscribe ${JSON.stringify(sub)} in both rooms`);
  }

  /**
   * The native room alone, after the wasm one trapped: drain it, then compare each of
   * its subscribers' views with an independent fresh subscription. Returns note lines.
   */
  auditAlone(index) {
    const out = this.n.exec({ m: "commitAll", a: [] });
    this.track("n", { m: "commitAll", a: [] }, out);
    const lines = [];
    for (const [sub, v] of this.views.n) {
      if (sub.startsWith("~")) continue;
      const f = this.freshView("n", v.spec, v);
      if (!f) lines.push(`native fresh subscribe failed for ${sub}`);
      else if (!v.matches(f)) lines.push(`native view wrong for ${sub}: ${viewDelta(v, f)}`);
    }
    if (lines.length === 0) lines.push(`native views consistent after the wasm panic (${this.views.n.size} subscriber(s) checked at call #${index})`);
    return lines;
  }

  /**
   * End of a sequence: drain both rooms, then check every subscriber both rooms still
   * hold against an independent fresh subscription in its own room.
   */
  finish() {
    if (this.stopped || !this.w.room || !this.n.room) return;
    const drain = { m: "commitAll", a: [] };
    if (!this.step(drain)) return;
    const index = this.calls.length - 1;
    for (const [sub, vw] of [...this.views.w]) {
      const vn = this.views.n.get(sub);
      if (!vn || sub.startsWith("~") || !deepEqual(vw.spec, vn.spec)) continue;
      const fw = this.freshView("w", vw.spec, vw);
      const fn = this.freshView("n", vn.spec, vn);
      if (!fw || !fn) continue;
      const okW = vw.matches(fw);
      const okN = vn.matches(fn);
      if (okW && okN) continue;
      const verdict = okN ? "wasm stale view" : okW ? "native wrong" : "both views wrong";
      const note = [`wasm view vs its fresh snapshot: ${viewDelta(vw, fw)}`, `native view vs its fresh snapshot: ${viewDelta(vn, fn)}`];
      this.log(`    audit of ${sub}: ${verdict}\n      ${note.join("\n      ")}`);
      const w = { ok: true, v: fw.contents().length };
      const n = { ok: true, v: fn.contents().length };
      this.record({ index, call: drain, phase: "call", w, n, shape: "end-of-run audit", verdict, note, sub, spec: vw.spec, fresh: { w: fw, n: fn }, views: { w: vw, n: vn } }, false);
    }
  }

  /** Differences that fail the run: unknown ones, and pending hits in strict mode. */
  failures() {
    return this.diffs.filter((d) => d.status !== "known");
  }
}
