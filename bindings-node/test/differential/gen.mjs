// The call generator. It runs online: each next call is chosen from a model of the
// room kept from the wasm room's answers (the published behaviour is the reference),
// so sequences stay mostly valid (upstream ops that fit the rows, mids in order, tx ops
// on owned tables) with a tunable share `invalid` of wrong input. The recorded call
// list is all a replay needs; the generator is never consulted again.
import { badAst, randomAst, rowLocalCond } from "./asts.mjs";
import { CLIENTS } from "./engine.mjs";
import { GETTERS, CLIENT_GETTERS } from "./rooms.mjs";
import { Rng } from "./prng.mjs";
import { TABLE, TABLES, hello, keyOf, normalizedFp, pkOf, row, wireTable } from "./schema.mjs";

const SUBS = ["s1", "s2", "s3", "s4", "s5", "s6"];
const JOIN_KEYS = { item: ["listId"], tag: ["itemId"], list: ["owner"], user: [] };

export class Generator {
  /** `rng`: a Rng; `opts.invalid`: share of deliberately wrong calls (default 0.08). */
  constructor(rng, opts = {}) {
    this.rng = rng;
    this.invalid = opts.invalid ?? 0.08;
    this.now = rng.chance(0.5) ? 1_767_225_600_000 : rng.int(0, 5000);
    this.epoch = rng.int(1, 3);
    this.upCv = rng.int(1, 200);
    this.tables = TABLES.map((t) => t.name);
    this.opened = false;
    this.resetIncarnation();
    this.last = null;
  }

  resetIncarnation() {
    this.rows = new Map(); // key -> {table, row}: the head as the generator believes it
    this.seq = 1;
    this.writes = null; // null | "v1" | "v2"
    this.owned = [];
    this.tx = null; // {client, mid, staged: Map key -> {table, row|null}}
    this.flight = null;
    this.lastBatch = null;
    this.subEpoch = new Map();
  }

  // ---- reading the reference room (getters only: no effect on the recording) ----

  peek(runner, m, ...a) {
    const out = runner.w.exec({ m, a });
    return out.ok ? out.v : undefined;
  }

  bad() {
    return this.rng.chance(this.invalid);
  }

  tick() {
    const r = this.rng;
    const x = r.float();
    const dt = x < 0.6 ? r.int(0, 50) : x < 0.9 ? r.int(100, 3000) : r.int(10_000, 70_000);
    this.now += dt;
    if (!r.chance(0.04)) return this.now;
    // Now and then a fractional time; the clock then moves past it (time never goes back).
    const t = this.now + Math.round(r.float() * 999 + 1) / 1000;
    this.now = Math.ceil(t);
    return t;
  }

  // ---- the model ----

  schema(name) {
    return TABLE[name];
  }

  /** The effective row of a key: the head under the open transaction's staged writes. */
  effective(key) {
    if (this.tx && this.tx.staged.has(key)) return this.tx.staged.get(key);
    return this.rows.get(key) ?? null;
  }

  effectiveRows(table) {
    const out = new Map();
    for (const [k, v] of this.rows) if (v.table === table) out.set(k, v);
    if (this.tx) {
      for (const [k, v] of this.tx.staged) {
        if (v.table !== table) continue;
        if (v.row) out.set(k, v);
        else out.delete(k);
      }
    }
    return [...out.values()];
  }

  headRows(table) {
    return [...this.rows.values()].filter((v) => v.table === table);
  }

  freshRow(table, taken) {
    const t = TABLE[table];
    for (let i = 0; i < 12; i++) {
      const r = row(this.rng, t);
      const k = keyOf(table, pkOf(t, r));
      if (!taken(k)) return r;
    }
    return null;
  }

  /** A copy of `r` with some non-key cells redrawn. */
  mutate(table, r) {
    const t = TABLE[table];
    const fresh = row(this.rng, t);
    const out = r.slice();
    let changed = false;
    for (let i = 0; i < out.length; i++) {
      if (t.primaryKey.includes(i)) continue;
      if (this.rng.chance(0.5)) {
        out[i] = fresh[i];
        changed = true;
      }
    }
    if (!changed) {
      const i = t.columns.findIndex((_, j) => !t.primaryKey.includes(j));
      out[i] = fresh[i];
    }
    return out;
  }

  // ---- the next call ----

  /** The next call, given the runner (whose wasm room is the reference). */
  next(runner) {
    const call = this.choose(runner);
    this.last = call;
    return call;
  }

  choose(runner) {
    const r = this.rng;
    if (!this.opened || !runner.w.room) return this.open(r.chance(0.1));
    // A room over no table of the schema (an empty hello) has nothing more to offer.
    if (this.tables.length === 0) return this.open(false);
    const live = this.peek(runner, "isLive");
    const poisoned = this.peek(runner, "isPoisoned");
    if (poisoned && r.chance(0.8)) return this.open(r.chance(0.05));
    if (!live && !poisoned) {
      if (r.chance(0.8)) return this.snapshot(r.chance(this.invalid * 2));
      return this.anything(runner);
    }
    // After a change, usually drain the fan-out.
    if (this.last && DRAINS.has(this.last.m) && r.chance(0.6)) return { m: "commitAll", a: [] };
    if (this.tx) return this.txCall(runner);
    return this.anything(runner);
  }

  anything(runner) {
    const r = this.rng;
    const w = this.writes;
    const inFlight = this.flight !== null;
    const pick = r.weighted({
      apply: 18,
      commitAll: 10,
      subscribe: 10,
      unsubscribe: 3,
      lmidSubscribe: w ? 2 : 0.3,
      sweep: 2,
      enable: w ? 0.2 : 5,
      begin: w ? 14 : 0.5,
      ack: w ? 5 : 0.3,
      seed: w ? 1 : 0.2,
      beginFlush: w ? (inFlight ? 0.4 : 4) : 0.3,
      flushOk: inFlight ? 3 : 0.2,
      flushConflict: inFlight ? 2 : 0.2,
      getter: 3,
      reopen: 0.4,
      strayTx: 0.4,
    });
    switch (pick) {
      case "apply":
        return this.live(runner);
      case "commitAll":
        return { m: "commitAll", a: [] };
      case "subscribe":
        return this.subscribe();
      case "unsubscribe":
        return this.unsubscribe(runner);
      case "lmidSubscribe":
        return this.lmidSubscribe();
      case "sweep":
        return { m: "sweep", a: [this.tick()] };
      case "enable":
        return this.enable();
      case "begin":
        return this.begin(runner);
      case "ack":
        return this.ack(runner);
      case "seed":
        return this.seedDurable();
      case "beginFlush":
        return { m: "beginFlush", a: [] };
      case "flushOk":
        return { m: "flushOk", a: [] };
      case "flushConflict":
        return this.flushConflict();
      case "getter":
        return this.getter();
      case "reopen":
        return this.open(r.chance(0.2));
      default:
        return this.txCall(runner, true);
    }
  }

  // ---- open and upstream ----

  open(invalid) {
    const r = this.rng;
    this.pendingEpoch = r.chance(0.85) ? this.epoch + (this.opened ? 1 : 0) : r.int(1, this.epoch + 2);
    const ttl = r.pick([0, 500, 1000, 5000, 30_000, 1500.5]);
    let names = TABLES.map((t) => t.name);
    if (r.chance(0.12)) names = names.filter(() => r.chance(0.7));
    if (names.length === 0) names = ["item"];
    const h = hello(this.pendingEpoch, names.map((n) => TABLE[n]));
    if (!invalid) return { m: "open", a: [h, ttl] };
    switch (r.int(0, 9)) {
      case 0: {
        // Tables not sorted by name (fingerprint over the order sent).
        const tables = h.tables.slice().reverse();
        if (tables.length < 2) tables.push(wireTable(TABLE.user), wireTable(TABLE.item));
        return { m: "open", a: [{ ...h, tables, normalizedFp: normalizedFp(tables) }, ttl] };
      }
      case 1:
        return { m: "open", a: [{ ...h, normalizedFp: "0123456789abcdef" }, ttl] };
      case 2:
        return { m: "open", a: [{ ...h, comparatorVersion: r.pick([1, 3, undefined]) }, ttl] };
      case 3: {
        const tables = [...h.tables, h.tables[0]];
        return { m: "open", a: [{ ...h, tables, normalizedFp: normalizedFp(tables) }, ttl] };
      }
      case 4: {
        const tables = h.tables.map((t, i) => (i === 0 ? { ...t, primaryKey: [9] } : t));
        return { m: "open", a: [{ ...h, tables }, ttl] };
      }
      case 5: {
        const tables = [];
        return { m: "open", a: [{ ...h, tables, normalizedFp: normalizedFp(tables) }, ttl] };
      }
      case 6:
        return { m: "open", a: [h, r.pick([-1, null, 2 ** 53, 1e300])] };
      case 7: {
        const tables = h.tables.map((t, i) => (i === 0 ? { ...t, primaryKey: [] } : t));
        return { m: "open", a: [{ ...h, tables, normalizedFp: normalizedFp(tables) }, ttl] };
      }
      case 8: {
        // A table named like the room's own ledger.
        const led = { name: "_rindle_client_mutations", columns: ["client_id", "last_mutation_id"], primaryKey: [0] };
        const tables = [led, ...h.tables];
        return { m: "open", a: [{ ...h, tables, normalizedFp: normalizedFp(tables) }, ttl] };
      }
      default:
        return { m: "open", a: [{ $text: r.pick(["", "{", "null", "[]", '{"epoch":1}']) }, ttl] };
    }
  }

  batch(seq, ops, cv) {
    return { epoch: this.epoch, seq, normalizedFp: this.fp, ops, cv };
  }

  snapshot(invalid) {
    const r = this.rng;
    const rows = new Map();
    const n = r.int(0, 14);
    for (let i = 0; i < n; i++) {
      const table = r.pick(this.tables);
      const rw = this.freshRow(table, (k) => rows.has(k));
      if (rw) rows.set(keyOf(table, pkOf(TABLE[table], rw)), { table, row: rw });
    }
    this.upCv += r.int(0, 30);
    const ops = [...rows.values()].map((v) => ({ table: v.table, op: "add", row: v.row }));
    const b = this.batch(0, ops, this.upCv);
    if (!invalid) return { m: "apply", a: [b] };
    switch (r.int(0, 5)) {
      case 0:
        if (ops.length) ops.push(ops[0]);
        return { m: "apply", a: [b] };
      case 1:
        return { m: "apply", a: [{ ...b, epoch: b.epoch + r.pick([-1, 1]) }] };
      case 2: {
        const { cv, ...rest } = b;
        return { m: "apply", a: [rest] };
      }
      case 3:
        return { m: "apply", a: [{ ...b, seq: 1 }] };
      case 4:
        return { m: "apply", a: [{ ...b, ops: [...ops, { table: "item", op: "remove", row: [1, null, null, null, null] }] }] };
      default:
        return { m: "apply", a: [{ ...b, normalizedFp: "ffffffffffffffff" }] };
    }
  }

  /** A live upstream batch (or a duplicate, stale, gapped, garbage one). */
  live(runner) {
    const r = this.rng;
    if (this.bad()) return this.badLive(runner);
    const work = new Map(this.rows);
    const ops = [];
    const n = r.int(1, 4);
    for (let i = 0; i < n; i++) {
      const table = r.pick(this.tables);
      const t = TABLE[table];
      const present = [...work.values()].filter((v) => v.table === table);
      const kind = present.length === 0 ? "add" : r.weighted({ add: 4, edit: 4, remove: 2 });
      if (kind === "add") {
        const rw = this.freshRow(table, (k) => work.has(k));
        if (!rw) continue;
        work.set(keyOf(table, pkOf(t, rw)), { table, row: rw });
        ops.push({ table, op: "add", row: rw });
      } else if (kind === "remove") {
        const v = r.pick(present);
        work.delete(keyOf(table, pkOf(t, v.row)));
        ops.push({ table, op: "remove", row: v.row });
      } else {
        const v = r.pick(present);
        const nu = this.mutate(table, v.row);
        work.set(keyOf(table, pkOf(t, nu)), { table, row: nu });
        ops.push({ table, op: "edit", old: v.row, new: nu });
      }
    }
    this.upCv += r.chance(0.1) ? 0 : r.int(1, 12);
    return { m: "apply", a: [this.batch(this.seq, ops, this.upCv)] };
  }

  badLive(runner) {
    const r = this.rng;
    const seq = this.seq;
    const cv = this.upCv + 1;
    const anyRow = () => {
      const all = [...this.rows.values()];
      return all.length ? r.pick(all) : null;
    };
    switch (r.int(0, 12)) {
      case 0:
        if (this.lastBatch) return { m: "apply", a: [this.lastBatch] };
        return { m: "apply", a: [this.batch(Math.max(0, seq - 1), [], cv)] };
      case 1:
        return { m: "apply", a: [{ ...this.batch(seq, [], cv), epoch: this.epoch - 1 }] };
      case 2:
        return { m: "apply", a: [{ ...this.batch(seq, [], cv), epoch: this.epoch + 1 }] };
      case 3:
        return { m: "apply", a: [this.batch(seq + r.int(1, 3), [], cv)] };
      case 4:
        return { m: "apply", a: [{ ...this.batch(seq, [], cv), normalizedFp: "0000000000000001" }] };
      case 5: {
        const { cv: _cv, ...rest } = this.batch(seq, [], cv);
        return { m: "apply", a: [rest] };
      }
      case 6: {
        const v = anyRow();
        if (!v) return { m: "apply", a: [this.batch(seq, [], cv)] };
        return { m: "apply", a: [this.batch(seq, [{ table: v.table, op: "add", row: v.row }], cv)] };
      }
      case 7: {
        const t = TABLE[r.pick(this.tables)];
        const rw = this.freshRow(t.name, (k) => this.rows.has(k));
        if (!rw) return { m: "apply", a: [this.batch(seq, [], cv)] };
        const op = r.chance(0.5) ? { table: t.name, op: "remove", row: rw } : { table: t.name, op: "edit", old: rw, new: this.mutate(t.name, rw) };
        return { m: "apply", a: [this.batch(seq, [op], cv)] };
      }
      case 8: {
        const v = anyRow();
        if (!v) return { m: "apply", a: [this.batch(seq, [], cv)] };
        // The authority's edit shape (`row`, not `new`): not an nbatch op.
        return { m: "apply", a: [this.batch(seq, [{ table: v.table, op: "edit", old: v.row, row: this.mutate(v.table, v.row) }], cv)] };
      }
      case 9: {
        const v = anyRow();
        if (!v) return { m: "apply", a: [this.batch(seq, [], cv)] };
        // An edit whose old image is not the stored one.
        return { m: "apply", a: [this.batch(seq, [{ table: v.table, op: "edit", old: this.mutate(v.table, v.row), new: this.mutate(v.table, v.row) }], cv)] };
      }
      case 10: {
        const v = anyRow();
        const op = r.pick([
          { table: "nope", op: "add", row: [1] },
          { table: "item", op: "put", row: [1, "l1", "a", true, 1] },
          { table: "item", op: "add", row: [99, "l1"] },
          { table: "item", op: "add", row: [99, "l1", "a", true, 1, 2] },
          { table: "item", op: "add", row: [99, "l1", { a: 1 }, true, 1] },
          v ? { table: v.table, op: "edit", old: v.row, new: [...v.row.slice(0, -1), [1]] } : { table: "tag", op: "add" },
        ]);
        return { m: "apply", a: [this.batch(seq, [op], cv)] };
      }
      case 11:
        return { m: "apply", a: [{ ...this.batch(seq, [], this.upCv - r.int(1, 5)) }] };
      default:
        return { m: "apply", a: [{ $text: r.pick(["", "null", "{", "[]", "{}", '{"epoch":1}', "[1,2", '{"epoch":"1","seq":0,"ops":[]}']) }] };
    }
  }

  // ---- downstream ----

  subscribe() {
    const r = this.rng;
    const sub = r.pick(SUBS);
    const prev = this.subEpoch.get(sub) ?? r.int(1, 3);
    const epoch = r.chance(0.2) ? prev + 1 : prev;
    this.subEpoch.set(sub, epoch);
    const ast = this.bad() ? badAst(r, this.tables) : randomAst(r, this.tables);
    return { m: "subscribe", a: [sub, epoch, ast, this.tick()] };
  }

  lmidSubscribe() {
    const r = this.rng;
    const sub = r.pick(SUBS);
    const epoch = this.subEpoch.get(sub) ?? 1;
    const client = this.bad() ? r.pick(["", "é😀", "c9"]) : r.pick(CLIENTS);
    return { m: "lmidSubscribe", a: [sub, epoch, client, this.tick()] };
  }

  unsubscribe(runner) {
    const r = this.rng;
    const held = [...runner.views.w.keys()].filter((s) => !s.startsWith("~"));
    const sub = held.length && r.chance(0.85) ? r.pick(held) : r.pick(SUBS);
    return { m: "unsubscribe", a: [sub, this.tick()] };
  }

  getter() {
    const r = this.rng;
    if (r.chance(0.3)) return { m: r.pick(CLIENT_GETTERS), a: [r.pick([...CLIENTS, "zz"])] };
    return { m: r.pick(GETTERS), a: [] };
  }

  // ---- the write plane ----

  enable() {
    const r = this.rng;
    if (r.chance(0.45)) {
      let owned = this.tables.filter(() => r.chance(0.6));
      if (owned.length === 0) owned = [r.pick(this.tables)];
      if (this.bad()) owned = r.pick([[...owned, "nope"], [], ["_rindle_client_mutations"], [owned[0], owned[0]]]);
      return { m: "enableWrites", a: [owned] };
    }
    const specs = [];
    for (const name of this.tables) {
      if (!r.chance(0.7)) continue;
      const t = TABLE[name];
      const spec = { table: name };
      if (r.chance(0.35)) spec.footprintWhere = rowLocalCond(r, t);
      if (r.chance(0.25)) spec.writable = { kind: "none" };
      else {
        spec.writable = { kind: "predicate", joinKeyCols: JOIN_KEYS[name].slice() };
        if (r.chance(0.6)) spec.writable.where = rowLocalCond(r, t);
      }
      specs.push(spec);
    }
    if (specs.length === 0) specs.push({ table: this.tables[0], writable: { kind: "predicate", joinKeyCols: [] } });
    if (this.bad()) {
      const s = specs[0];
      switch (r.int(0, 4)) {
        case 0:
          s.table = "nope";
          break;
        case 1:
          s.writable = { kind: "predicate", joinKeyCols: ["nope"] };
          break;
        case 2:
          s.writable = {
            kind: "predicate",
            joinKeyCols: [],
            where: { type: "correlatedSubquery", op: "EXISTS", related: { correlation: { parentField: ["id"], childField: ["id"] }, subquery: { table: s.table, alias: "x" } } },
          };
          break;
        case 3:
          s.writable = { kind: "sometimes" };
          break;
        default:
          specs.push({ ...s });
      }
    }
    return { m: "enableWritesV2", a: [specs] };
  }

  client() {
    return this.rng.weighted({ c1: 5, c2: 2, c3: 1 });
  }

  begin(runner) {
    const r = this.rng;
    const client = this.client();
    const applied = this.peek(runner, "appliedMid", client) ?? 0;
    let mid = applied + 1;
    const x = r.float();
    if (x < this.invalid) mid = r.pick([applied + 2, applied + 3, 0, -1, 1.5, applied]);
    else if (x < this.invalid + 0.04 && applied > 0) mid = r.int(1, applied);
    const name = r.pick([undefined, null, "addItem", "édit", "m"]);
    const args = name === undefined ? undefined : r.pick([null, "{}", '{"id":3}', '{"s":"日本"}', "[1,2]", this.bad() ? "{" : "{}"]);
    const a = [client, mid];
    if (name !== undefined) a.push(name);
    if (args !== undefined) a.push(args);
    return { m: "beginMutation", a };
  }

  /** A call inside the open transaction (or, `stray`, a tx call with none open). */
  txCall(runner, stray = false) {
    const r = this.rng;
    const tx = this.tx;
    const ownedish = () => {
      const own = this.owned.filter((t) => this.tables.includes(t));
      return own.length && !this.bad() ? r.pick(own) : r.pick(this.tables);
    };
    const pick = r.weighted({ get: 3, add: 4, edit: 4, remove: 2, commit: stray ? 0.5 : 3, reject: stray ? 0.5 : 1.2, begin: 0.2 });
    const table = ownedish();
    const t = TABLE[table];
    const present = this.effectiveRows(table);
    switch (pick) {
      case "get": {
        const pk = present.length && r.chance(0.75) ? pkOf(t, r.pick(present).row) : pkOf(t, row(r, t));
        return { m: "txGet", a: [table, this.bad() ? [...pk, 1] : pk] };
      }
      case "add": {
        let rw = this.freshRow(table, (k) => this.effective(k) !== null);
        if (!rw || this.bad()) rw = present.length && r.chance(0.5) ? r.pick(present).row : [...row(r, t), "extra"];
        return { m: "txAdd", a: [table, rw] };
      }
      case "edit": {
        let rw;
        if (present.length && !this.bad()) rw = this.mutate(table, r.pick(present).row);
        else rw = r.chance(0.5) ? row(r, t) : row(r, t).slice(1);
        return { m: "txEdit", a: [table, rw] };
      }
      case "remove": {
        const pk = present.length && !this.bad() ? pkOf(t, r.pick(present).row) : pkOf(t, row(r, t));
        return { m: "txRemove", a: [table, pk] };
      }
      case "commit":
        return { m: "commitMutation", a: [] };
      case "reject": {
        const kind = r.pick([undefined, null, "rejected", "deopt", "deopt", this.bad() ? "weird" : "rejected"]);
        const reason = r.pick([undefined, null, "mutator threw", "environment", "ünïcode"]);
        const a = [];
        if (kind !== undefined || reason !== undefined) a.push(kind ?? null);
        if (reason !== undefined) a.push(reason);
        return { m: "rejectMutation", a };
      }
      default:
        return this.begin(runner);
    }
  }

  ack(runner) {
    const r = this.rng;
    const entries = [];
    for (const c of CLIENTS) {
      const applied = this.peek(runner, "appliedMid", c) ?? 0;
      const acked = this.peek(runner, "ackedLmid", c) ?? 0;
      if (applied > acked && r.chance(0.8)) entries.push({ clientID: c, mid: r.chance(0.7) ? applied : r.int(acked + 1, applied) });
    }
    if (this.bad()) {
      const c = this.client();
      entries.push(r.pick([{ clientID: "zz", mid: 1 }, { clientID: c, mid: 1e6 }, { clientID: c, mid: 0 }, { clientID: c }, { mid: 1 }]));
    }
    if (this.bad()) return { m: "ack", a: [{ $text: r.pick(["", "{", "{}", "[1]"]) }] };
    return { m: "ack", a: [entries] };
  }

  seedDurable() {
    const r = this.rng;
    const seeds = [];
    for (const c of CLIENTS) if (r.chance(0.5)) seeds.push({ clientID: c, lmid: r.int(0, 4) });
    if (this.bad()) seeds.push(r.pick([{ clientID: "c1", lmid: -1 }, { clientID: "c1" }, { lmid: 2 }, { clientID: "c2", lmid: 1.5 }]));
    return { m: "seedDurable", a: [seeds] };
  }

  flushConflict() {
    const r = this.rng;
    const changes = (this.flight?.changes ?? []).filter((c) => TABLE[c.table]);
    const conflicts = [];
    for (const c of changes) {
      if (!r.chance(0.5)) continue;
      const t = TABLE[c.table];
      const img = c.row ?? c.old;
      if (!Array.isArray(img)) continue;
      const pk = pkOf(t, img);
      const current = r.weighted({ absent: 2, other: 3, same: 1 });
      const cur = current === "absent" ? null : current === "same" ? img : this.mutate(c.table, img);
      conflicts.push({ table: c.table, pk, current: cur });
    }
    if (conflicts.length === 0 || this.bad()) {
      const t = TABLE[r.pick(this.tables)];
      const rw = row(r, t);
      conflicts.push(r.pick([
        { table: t.name, pk: pkOf(t, rw), current: rw },
        { table: t.name, pk: pkOf(t, rw), current: null },
        { table: "nope", pk: [1], current: null },
        { table: t.name, pk: pkOf(t, rw), current: rw.slice(1) },
      ]));
    }
    return { m: "flushConflict", a: [conflicts] };
  }

  /** Applies upstream ops to the model by key (add / remove / edit old -> new). */
  applyOps(ops) {
    for (const op of Array.isArray(ops) ? ops : []) {
      const t = TABLE[op?.table];
      if (!t) continue;
      const key = (r) => (Array.isArray(r) && r.length === t.columns.length ? keyOf(t.name, pkOf(t, r)) : null);
      if (op.op === "add" && key(op.row)) this.rows.set(key(op.row), { table: t.name, row: op.row });
      else if (op.op === "remove" && key(op.row)) this.rows.delete(key(op.row));
      else if (op.op === "edit" && key(op.old) && key(op.new)) {
        this.rows.delete(key(op.old));
        this.rows.set(key(op.new), { table: t.name, row: op.new });
      }
    }
  }

  // ---- learning from the reference room's answer ----

  /**
   * Updates the model from the wasm room's outcome `w` of `call`. Everything comes from
   * the call and its outcome, so `replayModel` can rebuild the model from a recording.
   */
  observe(call, w) {
    const m = call.m;
    const a = call.a ?? [];
    if (m === "open") {
      if (!w.ok) return;
      const h = a[0];
      this.opened = true;
      this.epoch = h?.epoch;
      this.tables = (h?.tables ?? []).map((t) => t?.name).filter((n) => TABLE[n]);
      this.fp = h?.normalizedFp;
      this.resetIncarnation();
      return;
    }
    if (!w.ok) {
      if (m === "commitMutation" || m === "rejectMutation") this.tx = null;
      return;
    }
    switch (m) {
      case "apply": {
        const applied = w.v?.applied;
        if (applied === "snapshot") {
          this.rows = new Map();
          this.applyOps(a[0]?.ops);
          this.seq = 1;
          this.lastBatch = a[0];
        } else if (applied === "live") {
          // Whatever the batch held (a deliberately odd one too), as the rooms apply it:
          // by key.
          this.applyOps(a[0]?.ops);
          this.seq = (a[0]?.seq ?? this.seq) + 1;
          this.lastBatch = a[0];
        }
        return;
      }
      case "enableWrites":
        this.writes = "v1";
        this.owned = Array.isArray(a[0]) ? a[0].slice() : [];
        return;
      case "enableWritesV2":
        this.writes = "v2";
        this.owned = (Array.isArray(a[0]) ? a[0] : []).filter((x) => x?.writable?.kind === "predicate").map((x) => x.table);
        return;
      case "beginMutation":
        if (w.v?.begin === "tx") this.tx = { client: a[0], mid: a[1], staged: new Map() };
        return;
      case "txAdd":
      case "txEdit":
      case "txRemove": {
        const t = TABLE[a[0]];
        if (!this.tx || !t || !Array.isArray(a[1])) return;
        if (m === "txRemove") this.tx.staged.set(keyOf(t.name, a[1]), { table: t.name, row: null });
        else this.tx.staged.set(keyOf(t.name, pkOf(t, a[1])), { table: t.name, row: a[1] });
        return;
      }
      case "commitMutation":
        if (this.tx && w.v && w.v.headCv !== undefined) {
          for (const [k, v] of this.tx.staged) {
            if (v.row) this.rows.set(k, v);
            else this.rows.delete(k);
          }
        }
        this.tx = null;
        return;
      case "rejectMutation":
        this.tx = null;
        return;
      case "beginFlush":
        this.flight = w.v ?? null;
        return;
      case "flushOk":
        this.flight = null;
        return;
      case "flushConflict":
        this.flight = null;
        for (const c of Array.isArray(a[0]) ? a[0] : []) {
          if (!TABLE[c?.table] || !Array.isArray(c.pk)) continue;
          const k = keyOf(c.table, c.pk);
          if (Array.isArray(c.current)) this.rows.set(k, { table: c.table, row: c.current });
          else this.rows.delete(k);
        }
        return;
      default:
        return;
    }
  }
}

/**
 * Replays a recording's calls and wasm outcomes into a generator model; `onApply(call,
 * rows)` sees each accepted upstream batch with the rows as they were before it.
 */
export function replayModel(calls, outcomes, onApply, onCall) {
  const gen = new Generator(new Rng(0));
  calls.forEach((call, i) => {
    const w = outcomes[i]?.w ?? { ok: false };
    if (onApply && call.m === "apply" && w.ok && w.v?.applied === "live") onApply(call, gen.rows);
    if (onCall) onCall(call, w, gen);
    gen.observe(call, w);
  });
  return gen;
}

/** Calls after which the generator usually drains the fan-out next. */
const DRAINS = new Set(["apply", "commitMutation", "ack", "seedDurable", "flushConflict", "flushOk", "rejectMutation"]);

/**
 * Generates and runs one sequence of `length` calls on `runner` from `rng`. Returns the
 * runner (its `calls` are the recording).
 */
export function generateInto(runner, rng, length, opts = {}) {
  const gen = new Generator(rng, opts);
  for (let i = 0; i < length; i++) {
    const call = gen.next(runner);
    const go = runner.step(call);
    gen.observe(call, runner.lastW ?? { ok: false });
    if (!go) break;
  }
  runner.finish();
  return runner;
}
