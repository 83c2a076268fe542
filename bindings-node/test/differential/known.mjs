// Known, explained differences between the published wasm room and the native one.
//
// Each entry has a `name` (its difference class), a one-line `reason`, and a `status`:
//   "intended": a difference kept on purpose (listed in docs/compat.md);
//   "pending":  a difference the Rust core is to remove; delete the entry when the fix
//               lands (RINDLE_DIFF_STRICT=1 reports every pending hit as a difference).
// An entry explains differences in one of two ways:
//   normalise(ev, state, runner) -> {w, n, hit} | undefined
//       rewrites both outcomes of a call or getter read before they are compared
//       (`ev`: {index, method, args, phase: "call" | "probe", getter, w, n}; outcomes are
//       {ok: true, v} or {ok: false, msg, code}); `hit` when it removed a disagreement.
//       `state` is the entry's own scratch object for one sequence.
//   claims(diff, detail, runner) -> boolean
//       takes a difference no normaliser explained (`diff.class` is
//       "<method>: <shape> [<tie-breaker verdict>]"); the sequence then stops unless
//       the entry says `continues: true`.
import { MESSAGE_METHODS, deepEqual, sortKeys } from "./compare.mjs";
import { replayModel } from "./gen.mjs";
import { TABLE, keyOf, pkOf } from "./schema.mjs";

const ok = (o) => o && o.ok;
const isNum = (x) => typeof x === "number";

/** Deep copy of a JSON value. */
const copy = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/** Rewrites native outcome values at `paths(value)` (getter/setter pairs). */
function rewrite(o, fn) {
  if (!ok(o)) return o;
  const v = copy(o.v);
  const out = fn(v);
  return { ...o, v: out === undefined ? v : out };
}

// ---- the head cv: numbered differently, advanced at the same events ----

/** Where a call's outcome carries a head cv: a list of [get, set] over the value. */
function cvSlots(method, v) {
  const slots = [];
  if (v === null || v === undefined) return slots;
  if (method === "headCv" && isNum(v)) slots.push([() => v, null]);
  if (["commitMutation", "ack", "seedDurable", "flushConflict"].includes(method) && typeof v === "object" && isNum(v.headCv)) {
    slots.push([() => v.headCv, (x) => (v.headCv = x)]);
  }
  if ((method === "subscribe" || method === "lmidSubscribe") && isNum(v?.snapshot?.cv)) {
    slots.push([() => v.snapshot.cv, (x) => (v.snapshot.cv = x)]);
  }
  if (method === "commitAll" && Array.isArray(v)) {
    // In subscriber order, so the two rooms' lists pair up whatever order they came in.
    const entries = v.filter((e) => isNum(e?.batch?.cv)).sort((a, b) => String(a.sub).localeCompare(String(b.sub)));
    for (const e of entries) slots.push([() => e.batch.cv, (x) => (e.batch.cv = x), e.sub]);
  }
  return slots;
}

function headCvNumbering(ev, st) {
  if (!ok(ev.w) || !ok(ev.n)) return undefined;
  // Only once the rooms' own headCv() has disagreed: the numbering itself differs. (A
  // reused query's older snapshot cv is another class.)
  if (ev.method === "headCv" && ev.w.v !== ev.n.v) st.numbered = true;
  if (!st.numbered) return undefined;
  const w = copy(ev.w.v);
  const n = copy(ev.n.v);
  const ws = cvSlots(ev.method, w);
  const ns = cvSlots(ev.method, n);
  if (ws.length === 0) return undefined;
  let hit = false;
  let value = n;
  for (let i = 0; i < ns.length; i++) {
    // Paired by subscriber for commitAll (an entry may be in one list only).
    const twin = ns[i][2] === undefined ? ws[i] : ws.find((x) => x[2] === ns[i][2]) ?? ws[0];
    if (!twin) continue;
    const wv = twin[0]();
    if (ns[i][0]() === wv) continue;
    hit = true;
    if (ns[i][1]) ns[i][1](wv);
    else value = wv;
  }
  return hit ? { n: { ...ev.n, v: value }, hit } : undefined;
}

// ---- the query key: another canonical text, the same dedup ----

function queryKeyText(ev, st) {
  if (ev.method === "open" && ev.w.ok && ev.n.ok) {
    st.n2w = new Map();
    st.w2n = new Map();
    return undefined;
  }
  if (ev.method !== "subscribe" && ev.method !== "lmidSubscribe") return undefined;
  if (!ok(ev.w) || !ok(ev.n)) return undefined;
  const wk = ev.w.v?.queryKey;
  const nk = ev.n.v?.queryKey;
  if (typeof wk !== "string" || typeof nk !== "string" || wk === nk) return undefined;
  st.n2w ??= new Map();
  st.w2n ??= new Map();
  const known = st.n2w.get(nk);
  const back = st.w2n.get(wk);
  if ((known !== undefined && known !== wk) || (back !== undefined && back !== nk)) return undefined;
  st.n2w.set(nk, wk);
  st.w2n.set(wk, nk);
  return { n: rewrite(ev.n, (v) => void (v.queryKey = wk)), hit: true };
}

// ---- the flush body ----

const WASM_OUTCOMES = "_rindle_room_mutation_outcomes";
const NATIVE_OUTCOMES = "_rindle_mutation_outcomes";

function outcomesTable(ev) {
  if (ev.method !== "beginFlush" || !ok(ev.n) || !Array.isArray(ev.n.v?.changes)) return undefined;
  if (!ev.n.v.changes.some((c) => c?.table === NATIVE_OUTCOMES)) return undefined;
  const n = rewrite(ev.n, (v) => {
    for (const c of v.changes) if (c?.table === NATIVE_OUTCOMES) c.table = WASM_OUTCOMES;
  });
  return { n, hit: true };
}

function changesOrder(ev) {
  if (ev.method !== "beginFlush" || !ok(ev.w) || !ok(ev.n)) return undefined;
  const a = ev.w.v?.changes;
  const b = ev.n.v?.changes;
  if (!Array.isArray(a) || !Array.isArray(b) || deepEqual(a, b)) return undefined;
  const key = (c) => JSON.stringify(sortKeys(c));
  const sa = a.map(key).sort();
  const sb = b.map(key).sort();
  if (sa.length !== sb.length || sa.some((x, i) => x !== sb[i])) return undefined;
  // Same changes, another order: present native's in wasm's order.
  return { n: rewrite(ev.n, (v) => void (v.changes = copy(a))), hit: true };
}

// batchHash: a hash of the body. When the bodies differ, the hashes differ with them: they
// are equalised quietly (the body's difference is what gets reported); a hit is two equal
// bodies with two hashes.
function batchHash(ev) {
  if (ev.method !== "beginFlush" || !ok(ev.w) || !ok(ev.n)) return undefined;
  const a = ev.w.v?.batchHash;
  const b = ev.n.v?.batchHash;
  const hex = /^[0-9a-f]{16}$/;
  if (typeof a !== "string" || typeof b !== "string" || a === b || !hex.test(a) || !hex.test(b)) return undefined;
  const body = (v) => ({ changes: v?.changes, lmids: v?.lmids });
  const sameRaw = deepEqual(body(ev.orig.w.v), body(ev.orig.n.v));
  return { n: rewrite(ev.n, (v) => void (v.batchHash = a)), hit: sameRaw };
}

function flushOkCounts(ev) {
  if (ev.method !== "flushOk" || !ok(ev.w) || !ok(ev.n)) return undefined;
  const a = ev.w.v;
  const b = ev.n.v;
  if (!a || !b || !isNum(a.retired) || !isNum(b.retired) || a.retired === b.retired) return undefined;
  return { n: rewrite(ev.n, (v) => void (v.retired = a.retired)), hit: true };
}


// ---- query shapes ----

/** Visits every query level and condition of a wire AST. */
function walk(ast, onLevel, onCond, underNot = false) {
  if (!ast || typeof ast !== "object") return;
  onLevel?.(ast, underNot);
  const cond = (c, neg) => {
    if (!c || typeof c !== "object") return;
    onCond?.(c, neg);
    if (Array.isArray(c.conditions)) for (const x of c.conditions) cond(x, neg);
    if (c.type === "correlatedSubquery") walk(c.related?.subquery, onLevel, onCond, neg || c.op === "NOT EXISTS");
  };
  cond(ast.where, underNot);
  for (const r of liveRelated(ast)) walk(r?.subquery, onLevel, onCond, underNot);
}

/** A level's `related` entries, duplicates by alias resolved (the last one wins). */
function liveRelated(level) {
  const out = new Map();
  for (const r of Array.isArray(level?.related) ? level.related : []) out.set(r?.subquery?.alias, r);
  return [...out.values()];
}

/** Whether a condition somewhere is an `and` / `or` with no conditions. */
function hasEmptyAndOr(ast) {
  let found = false;
  walk(ast, null, (c) => {
    if ((c.type === "or" || c.type === "and") && Array.isArray(c.conditions) && c.conditions.length === 0) found = true;
  });
  return found;
}

/** Tables read only under a NOT EXISTS or a permissions EXISTS (they never ship rows). */
function notExistsOnly(ast) {
  const neg = new Set();
  const pos = new Set();
  const visit = (level, hidden, negated) => {
    if (!level || typeof level !== "object") return;
    if (!hidden) pos.add(level.table);
    else if (negated) neg.add(level.table);
    const cond = (c) => {
      if (!c || typeof c !== "object") return;
      if (Array.isArray(c.conditions)) c.conditions.forEach(cond);
      if (c.type !== "correlatedSubquery") return;
      const not = c.op === "NOT EXISTS";
      visit(c.related?.subquery, hidden || not || c.related?.system === "permissions", negated || not);
    };
    cond(level.where);
    for (const r of liveRelated(level)) visit(r?.subquery, hidden, negated);
  };
  visit(ast, false, false);
  return new Set([...neg].filter((t) => !pos.has(t)));
}

/** The AST of the subscriber a difference is about (subscribe call or its view). */
function astOf(d) {
  if (d.spec?.kind === "ast") return d.spec.ast;
  if (d.call?.m === "subscribe") return d.call.a?.[2];
  return undefined;
}

/** Tables read only inside an EXISTS / NOT EXISTS subquery with `limit: 0`. */
function limitZeroOnly(ast) {
  const inside = new Set();
  const outside = new Set();
  const visit = (level, zero) => {
    if (!level || typeof level !== "object") return;
    (zero ? inside : outside).add(level.table);
    const cond = (c) => {
      if (!c || typeof c !== "object") return;
      if (Array.isArray(c.conditions)) c.conditions.forEach(cond);
      if (c.type === "correlatedSubquery") visit(c.related?.subquery, zero || c.related?.subquery?.limit === 0);
    };
    cond(level.where);
    for (const r of liveRelated(level)) visit(r?.subquery, zero);
  };
  visit(ast, false);
  return new Set([...inside].filter((t) => !outside.has(t)));
}

/**
 * A subscriber's hello lists other tables in the two rooms (so its normalizedFp differs
 * on every frame). `extra(ast)` gives the tables each side may list beyond the other:
 * {w: Set, n: Set}. Rewrites native's hello, and that subscriber's later frames' fp.
 */
function helloTables(extra) {
  return (ev, st) => {
    st.subs ??= new Map();
    if (ev.method === "open" && ev.w.ok && ev.n.ok) {
      st.subs.clear();
      return undefined;
    }
    if (!ok(ev.w) || !ok(ev.n)) return undefined;
    if (ev.method === "subscribe") {
      const sub = ev.args[0];
      const wh = ev.w.v?.hello;
      const nh = ev.n.v?.hello;
      st.subs.delete(sub);
      if (!wh || !nh || deepEqual(wh, nh) || !Array.isArray(wh.tables) || !Array.isArray(nh.tables)) return undefined;
      const allowed = extra(ev.args[2]);
      const byName = (ts) => new Map(ts.map((t) => [t?.name, t]));
      const wt = byName(wh.tables);
      const nt = byName(nh.tables);
      for (const [name, t] of nt) if (wt.has(name) && !deepEqual(t, wt.get(name))) return undefined;
      for (const name of wt.keys()) if (!nt.has(name) && !allowed.w.has(name)) return undefined;
      for (const name of nt.keys()) if (!wt.has(name) && !allowed.n.has(name)) return undefined;
      st.subs.set(sub, { from: nh.normalizedFp, to: wh.normalizedFp });
      const n = rewrite(ev.n, (v) => {
        v.hello = copy(wh);
        if (v.snapshot?.normalizedFp === nh.normalizedFp) v.snapshot.normalizedFp = wh.normalizedFp;
      });
      return { n, hit: true };
    }
    if (ev.method === "commitAll" && Array.isArray(ev.n.v)) {
      let hit = false;
      const n = rewrite(ev.n, (v) => {
        for (const e of v) {
          const m = st.subs.get(e?.sub);
          if (m && e.batch?.normalizedFp === m.from) {
            e.batch.normalizedFp = m.to;
            hit = true;
          }
        }
      });
      return hit ? { n, hit } : undefined;
    }
    return undefined;
  };
}

const notExistsHello = helloTables((ast) => ({ w: notExistsOnly(ast), n: new Set() }));
const limitZeroHello = helloTables((ast) => ({ w: new Set(), n: limitZeroOnly(ast) }));

// commitAll: the same entries, listed in another subscriber order.
function entryOrder(ev) {
  if (ev.method !== "commitAll" || !ok(ev.w) || !ok(ev.n)) return undefined;
  const a = ev.w.v;
  const b = ev.n.v;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length || deepEqual(a, b)) return undefined;
  const subs = a.map((e) => e?.sub);
  if (new Set(subs).size !== subs.length) return undefined;
  const bySub = new Map(b.map((e) => [e?.sub, e]));
  if (bySub.size !== b.length || !subs.every((s) => bySub.has(s))) return undefined;
  const reordered = subs.map((s) => bySub.get(s));
  if (deepEqual(reordered, b)) return undefined;
  return { n: { ...ev.n, v: copy(reordered) }, hit: true };
}


// ---- error texts a client reads (beginMutation, subscribe, lmidSubscribe, commitMutation) ----

/** Both rooms refused a call whose text is compared, with different texts. */
const refusedApart = (ev) =>
  ev.phase === "call" && MESSAGE_METHODS.has(ev.method) && !ev.w.ok && !ev.n.ok && ev.w.msg !== ev.n.msg;

const ERROR_TEXTS = [
  {
    name: "error-text:first-unknown-table",
    status: "intended",
    reason:
      "a query naming several unknown tables: the wasm room names another one first than the native room does (each names an unknown table, in the same form)",
    normalise(ev) {
      if (!refusedApart(ev) || ev.method !== "subscribe") return undefined;
      const unknown = /^subscribe: Query\(UnknownTable \{/;
      if (!unknown.test(ev.w.msg) || !unknown.test(ev.n.msg)) return undefined;
      return { n: { ...ev.n, msg: ev.w.msg }, hit: true };
    },
  },
  {
    name: "error-text:fault-order",
    status: "intended",
    reason:
      "an AST with a fault of its shape and one of its meaning (an unknown table or column, a bad literal) — or one of meaning on a store that is not live: the wasm room decodes the whole AST before anything else and reports the shape fault (`ast: not a wire Ast: …`); the native one reports the first fault it meets (each is a refusal in the published words)",
    normalise(ev) {
      if (!refusedApart(ev) || ev.method !== "subscribe") return undefined;
      const shape = /^ast: not a wire Ast: /;
      const meaning = /^subscribe: Query\(/;
      const apart = (shape.test(ev.w.msg) && meaning.test(ev.n.msg)) || (meaning.test(ev.w.msg) && shape.test(ev.n.msg));
      if (!apart) return undefined;
      return { n: { ...ev.n, msg: ev.w.msg }, hit: true };
    },
  },
  {
    name: "error-text:ast-parse",
    status: "intended",
    reason:
      "a malformed AST: both rooms say `ast: not a wire Ast: …`; after the prefix the wasm room prints its JSON decoder's wording (`missing field `correlation` at line 1 column 68`), the native one names the field and what it needs (`a subquery needs a `correlation``)",
    normalise(ev) {
      if (!refusedApart(ev)) return undefined;
      const prefix = "ast: not a wire Ast: ";
      if (!ev.w.msg.startsWith(prefix) || !ev.n.msg.startsWith(prefix)) return undefined;
      return { n: { ...ev.n, msg: ev.w.msg }, hit: true };
    },
  },
];

// ---- helpers for claims ----

/** Rows of each fresh snapshot the other lacks: {onlyW, onlyN} as [table, row] pairs. */
function freshDelta(d) {
  if (!d.fresh) return null;
  const a = new Set(d.fresh.w.contents());
  const b = new Set(d.fresh.n.contents());
  const parse = (x) => JSON.parse(x);
  return {
    onlyW: [...a].filter((x) => !b.has(x)).map(parse),
    onlyN: [...b].filter((x) => !a.has(x)).map(parse),
  };
}

/** The [table, row] pairs one view holds and the other does not, both ways. */
function symmetric(a, b) {
  const x = new Set(a.contents());
  const y = new Set(b.contents());
  return [...[...x].filter((r) => !y.has(r)), ...[...y].filter((r) => !x.has(r))].map((r) => JSON.parse(r));
}

/** Whether a row of `table` has a NULL primary-key cell (per the subscriber's hello). */
function nullKey(view, table, row) {
  const pk = view.pks.get(table) ?? [0];
  return pk.some((i) => row[i] === null);
}

/** Tables read under a NOT EXISTS anywhere in the AST. */
function notExistsTables(ast) {
  const out = new Set();
  walk(ast, (level, underNot) => underNot && out.add(level.table));
  return out;
}

/**
 * Tables whose rows a NOT EXISTS can rule out: each level with a NOT EXISTS in its own
 * condition, every level related under it, and the witnesses their EXISTS conditions
 * ship (a parent ruled out takes its related rows and their witnesses with it).
 */
function notExistsParents(ast) {
  const out = new Set();
  const hasNotExists = (c) =>
    Boolean(c && typeof c === "object") &&
    ((c.type === "correlatedSubquery" && c.op === "NOT EXISTS") ||
      (Array.isArray(c.conditions) && c.conditions.some(hasNotExists)));
  const witnesses = (c) => {
    if (!c || typeof c !== "object") return;
    if (Array.isArray(c.conditions)) c.conditions.forEach(witnesses);
    if (c.type === "correlatedSubquery" && c.op === "EXISTS") subtree(c.related?.subquery);
  };
  const subtree = (level) => {
    if (!level || typeof level !== "object") return;
    out.add(level.table);
    witnesses(level.where);
    for (const r of liveRelated(level)) subtree(r?.subquery);
  };
  walk(ast, (level) => {
    if (hasNotExists(level.where)) subtree(level);
  });
  return out;
}

/** Whether some EXISTS / NOT EXISTS subquery has `limit: 0` (and flip if asked). */
function existsLimitZero(ast, flipped = null) {
  let found = false;
  walk(ast, null, (c) => {
    if (c.type === "correlatedSubquery" && c.related?.subquery?.limit === 0 && (flipped === null || Boolean(c.flip) === flipped)) found = true;
  });
  return found;
}

/** Whether a level orders by the same column twice. */
function duplicateOrderBy(ast) {
  let found = false;
  walk(ast, (level) => {
    const cols = (Array.isArray(level.orderBy) ? level.orderBy : []).map((o) => o?.[0]);
    if (new Set(cols).size !== cols.length) found = true;
  });
  return found;
}

/** Whether a JSON number is written as a float (`1.5`, `1e+21`). */
const floaty = (x) => /[.eE]/.test(JSON.stringify(x));

/** A literal-only comparison of an integer with a float literal, in a condition tree. */
function intFloatInCond(c) {
  let found = false;
  const visit = (x) => {
    if (!x || typeof x !== "object") return;
    if (Array.isArray(x.conditions)) x.conditions.forEach(visit);
    if (x.type === "correlatedSubquery") walk(x.related?.subquery, null, visit);
    if (x.type !== "simple" || x.left?.type !== "literal" || x.right?.type !== "literal") return;
    const a = x.left.value;
    const b = x.right.value;
    if (typeof a === "number" && typeof b === "number" && floaty(a) !== floaty(b)) found = true;
  };
  visit(c);
  return found;
}

/** The same, anywhere in an AST. */
function intFloatLiteralCompare(ast) {
  let found = false;
  walk(ast, (level) => {
    if (intFloatInCond(level.where)) found = true;
  });
  return found;
}

/** The same, in a scope spec list's predicates. */
function intFloatInSpecs(specs) {
  return Array.isArray(specs) && specs.some((s) => intFloatInCond(s?.footprintWhere) || intFloatInCond(s?.writable?.where));
}

/**
 * An AST with each level's sort completed by the key, repeats dropped and relationship
 * names left out (duplicates by name resolved first).
 */
function canonicalOrder(ast) {
  if (!ast || typeof ast !== "object" || !TABLE[ast.table]) return ast;
  const t = TABLE[ast.table];
  const seen = new Set();
  const orderBy = [];
  for (const o of Array.isArray(ast.orderBy) ? ast.orderBy : []) {
    if (!seen.has(o?.[0])) orderBy.push(o);
    seen.add(o?.[0]);
  }
  for (const i of t.primaryKey) if (!seen.has(t.columns[i])) orderBy.push([t.columns[i], "asc"]);
  const out = { ...ast, orderBy };
  // Both rooms key a projection by its columns, not their order; the native room
  // also drops a column named twice.
  if (Array.isArray(ast.select)) out.select = [...new Set(ast.select)].sort();
  if (ast.where !== undefined) {
    // Both rooms drop an `and` / `or` with no conditions (a root one leaves no filter).
    const where = dropEmptyJunctions(canonicalSubqueries(foldLiterals(ast.where)));
    if (where === undefined) delete out.where;
    else out.where = where;
  }
  delete out.alias;
  if (Array.isArray(ast.related) && ast.related.length) out.related = liveRelated(ast).map((r) => ({ ...r, subquery: canonicalOrder(r.subquery) }));
  else delete out.related;
  return sortKeys(out);
}

/** The index of the call that opened the current room (0 if none did). */
function incarnationStart(runner) {
  for (let i = runner.calls.length - 1; i >= 0; i--) {
    if (runner.calls[i].m === "open" && runner.outcomes[i]?.w?.ok) return i;
  }
  return 0;
}

/** `c` without its `and` / `or` nodes that have no conditions left (`undefined`: none),
 * and with those left one condition replaced by it. */
function dropEmptyJunctions(c) {
  if (!c || typeof c !== "object" || !Array.isArray(c.conditions)) return c;
  const conditions = c.conditions.map(dropEmptyJunctions).filter((x) => x !== undefined);
  if (conditions.length === 1) return conditions[0]; // the native text unwraps it too
  return conditions.length ? { ...c, conditions } : undefined;
}

/** A condition whose (NOT) EXISTS subqueries are canonical too (their aliases left out). */
function canonicalSubqueries(c) {
  if (!c || typeof c !== "object") return c;
  if (Array.isArray(c.conditions)) return { ...c, conditions: c.conditions.map(canonicalSubqueries) };
  if (c.type !== "correlatedSubquery" || !c.related?.subquery) return c;
  // A subquery limited to no rows joins nothing: the native room folds it to a constant.
  if (c.related.subquery.limit === 0) return { const: c.op === "NOT EXISTS" };
  const subquery = canonicalOrder(c.related.subquery);
  // A positive limit does not change an EXISTS (both rooms ignore it; `limit: 0` does).
  if (typeof subquery.limit === "number" && subquery.limit > 0) delete subquery.limit;
  const related = { ...c.related, subquery };
  // Only `system: "permissions"` means something to the native room.
  if (related.system !== "permissions") delete related.system;
  return { ...c, related };
}

/** A condition with literal-only comparisons of one JSON type folded to `{const}`. */
function foldLiterals(c) {
  if (!c || typeof c !== "object") return c;
  if (Array.isArray(c.conditions)) return { ...c, conditions: c.conditions.map(foldLiterals) };
  if (c.type !== "simple" || c.left?.type !== "literal" || c.right?.type !== "literal") return c;
  const a = c.left.value;
  const b = c.right.value;
  if (a === null || b === null) {
    // A comparison with NULL is false; IS / IS NOT compare identity.
    const fold = { IS: a === b, "IS NOT": a !== b }[c.op] ?? (["=", "!=", "<", "<=", ">", ">="].includes(c.op) ? false : undefined);
    return fold === undefined ? c : { const: fold };
  }
  if (typeof a !== typeof b || (typeof a !== "string" && typeof a !== "number")) return c;
  const fold = { "=": a === b, "!=": a !== b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b }[c.op];
  return fold === undefined ? c : { const: fold };
}

/** Whether `ast` equals, up to sort completion, another AST subscribed in this incarnation. */
function sortTwin(ast, runner) {
  const mine = JSON.stringify(canonicalOrder(ast));
  const raw = JSON.stringify(sortKeys(ast));
  for (let i = runner.calls.length - 2; i >= incarnationStart(runner); i--) {
    const c = runner.calls[i];
    if (c.m !== "subscribe") continue;
    const other = c.a?.[2];
    if (JSON.stringify(sortKeys(other)) !== raw && JSON.stringify(canonicalOrder(other)) === mine) return true;
  }
  return false;
}

/**
 * Keys (table + key cells) an upstream edit or remove of this incarnation named with an
 * image that was not the stored row (invalid upstream input).
 */
function staleUpstreamKeys(runner) {
  const start = incarnationStart(runner);
  const keys = new Set();
  replayModel(runner.calls.slice(start), runner.outcomes.slice(start), (call, before) => {
    const rows = new Map(before);
    for (const op of Array.isArray(call.a[0]?.ops) ? call.a[0].ops : []) {
      const t = TABLE[op?.table];
      const image = op?.op === "edit" ? op.old : op?.op === "remove" ? op.row : null;
      if (!t) continue;
      const fits = (r) => Array.isArray(r) && r.length === t.columns.length;
      if (fits(image)) {
        const k = keyOf(t.name, pkOf(t, image));
        if (!deepEqual(rows.get(k)?.row, image)) {
          keys.add(k);
          if (op.op === "edit" && fits(op.new)) keys.add(keyOf(t.name, pkOf(t, op.new)));
        }
      }
      if (op.op === "add" && fits(op.row)) rows.set(keyOf(t.name, pkOf(t, op.row)), { table: t.name, row: op.row });
      else if (op.op === "remove" && fits(op.row)) rows.delete(keyOf(t.name, pkOf(t, op.row)));
      else if (op.op === "edit" && fits(op.old) && fits(op.new)) {
        rows.delete(keyOf(t.name, pkOf(t, op.old)));
        rows.set(keyOf(t.name, pkOf(t, op.new)), { table: t.name, row: op.new });
      }
    }
  });
  return keys;
}

/** Tables read by a (non-negated) EXISTS subquery; `inOr`: only those under an `or`. */
function existsChildTables(ast, inOr = false) {
  const out = new Set();
  const visitCond = (c, underOr) => {
    if (!c || typeof c !== "object") return;
    if (Array.isArray(c.conditions)) c.conditions.forEach((x) => visitCond(x, underOr || c.type === "or"));
    if (c.type === "correlatedSubquery" && c.op === "EXISTS") {
      if (!inOr || underOr) out.add(c.related?.subquery?.table);
      visitLevel(c.related?.subquery);
    }
  };
  const visitLevel = (level) => {
    if (!level || typeof level !== "object") return;
    visitCond(level.where, false);
    for (const r of liveRelated(level)) visitLevel(r?.subquery);
  };
  visitLevel(ast);
  return out;
}

/** Whether an upstream batch of this incarnation touched a key a local commit wrote. */
/** The key (table + key cells) a txAdd / txEdit / txRemove call writes, if it is one. */
function stagedKey(c) {
  const t = TABLE[c.a?.[0]];
  if (!t || !Array.isArray(c.a?.[1]) || !/^tx(Add|Edit|Remove)$/.test(c.m)) return null;
  return keyOf(t.name, c.m === "txRemove" ? c.a[1] : pkOf(t, c.a[1]));
}

/** The keys the ops of an `apply` call change (none for any other call). */
function upstreamKeys(c) {
  if (c.m !== "apply" || !Array.isArray(c.a?.[0]?.ops)) return [];
  const keys = [];
  for (const op of c.a[0].ops) {
    const u = TABLE[op?.table];
    const img = op?.row ?? op?.old;
    if (u && Array.isArray(img) && img.length === u.columns.length) keys.push(keyOf(u.name, pkOf(u, img)));
  }
  return keys;
}

function upstreamTouchedWritten(runner) {
  const written = new Set();
  let touched = false;
  for (let i = 0; i < runner.calls.length; i++) {
    const c = runner.calls[i];
    if (c.m === "open" && runner.outcomes[i]?.w?.ok) {
      written.clear();
      touched = false;
    }
    const key = stagedKey(c);
    if (key) written.add(key);
    if (upstreamKeys(c).some((k) => written.has(k))) touched = true;
  }
  return touched;
}

/**
 * Whether an upstream op since the open transaction began touched a key it staged (an
 * add, edit or remove of that key), before or after the staging.
 */
function upstreamRacedOpenTx(runner) {
  let begin = -1;
  for (let i = runner.calls.length - 1; i >= incarnationStart(runner); i--) {
    if (runner.calls[i].m === "beginMutation" && runner.outcomes[i]?.n?.ok) {
      begin = i;
      break;
    }
  }
  if (begin < 0) return false;
  const staged = new Set();
  const upstream = new Set();
  for (const c of runner.calls.slice(begin + 1)) {
    const key = stagedKey(c);
    if (key) staged.add(key);
    for (const k of upstreamKeys(c)) upstream.add(k);
  }
  return [...staged].some((k) => upstream.has(k));
}

/** Whether some level lists two `related` entries under one alias. */
function duplicateAlias(ast) {
  let found = false;
  const visit = (level) => {
    if (!level || typeof level !== "object") return;
    const names = (Array.isArray(level.related) ? level.related : []).map((r) => r?.subquery?.alias);
    if (new Set(names).size !== names.length) found = true;
    for (const r of Array.isArray(level.related) ? level.related : []) visit(r?.subquery);
  };
  visit(ast);
  return found;
}

/** Both rooms answered a commitMutation, and at least one with a gate verdict. */
const gateVerdicts = (d) =>
  d.call.m === "commitMutation" && d.phase === "call" && d.w?.ok && d.n?.ok && (d.w.v?.deopt !== undefined || d.n.v?.deopt !== undefined);

/**
 * The open transaction's writes before call `index`: `netDiffers` when a key is written
 * twice or an edit writes a row's own image (where per-write and net judging part).
 */
function txShape(runner, index) {
  const start = incarnationStart(runner);
  let writes = [];
  let netDiffers = false;
  replayModel(runner.calls.slice(start, index), runner.outcomes.slice(start, index), null, (call, w, gen) => {
    if (call.m === "beginMutation" && w.ok && w.v?.begin === "tx") {
      writes = [];
      netDiffers = false;
    }
    const t = TABLE[call.a?.[0]];
    if (!w.ok || !t || !Array.isArray(call.a?.[1]) || !/^tx(Add|Edit|Remove)$/.test(call.m)) return;
    const key = keyOf(t.name, call.m === "txRemove" ? call.a[1] : pkOf(t, call.a[1]));
    if (writes.includes(key)) netDiffers = true;
    if (call.m === "txEdit" && deepEqual(gen.effective(key)?.row, call.a[1])) netDiffers = true;
    writes.push(key);
  });
  return { netDiffers };
}

/** Keys (table + key cells) of rows an earlier beginFlush of this incarnation wrote. */
/** The keys of the changes one flush batch carries and the other does not (by content). */
function differingChangeKeys(a, b) {
  const texts = (body) => new Set((Array.isArray(body?.changes) ? body.changes : []).map((ch) => JSON.stringify([ch?.table, ch?.op, ch?.old, ch?.row])));
  const x = texts(a);
  const y = texts(b);
  const keys = [];
  for (const t of [...[...x].filter((c) => !y.has(c)), ...[...y].filter((c) => !x.has(c))]) {
    const [table, , old, row] = JSON.parse(t);
    const img = row ?? old;
    if (TABLE[table] && Array.isArray(img)) keys.push(keyOf(table, pkOf(TABLE[table], img)));
  }
  return keys;
}

function flushedKeys(runner) {
  const keys = new Set();
  let flushedAfter = false;
  for (let i = runner.calls.length - 1; i >= incarnationStart(runner); i--) {
    const c = runner.calls[i];
    // A key a mutation wrote before a flush rides it even when its net change is
    // nothing (an add then a remove), so it is in no body.
    const t = TABLE[c.a?.[0]];
    if (flushedAfter && t && Array.isArray(c.a?.[1]) && /^tx(Add|Edit|Remove)$/.test(c.m) && runner.outcomes[i]?.w?.ok) {
      keys.add(keyOf(t.name, c.m === "txRemove" ? c.a[1] : pkOf(t, c.a[1])));
    }
    const body = c.m === "beginFlush" ? runner.outcomes[i]?.w : null;
    if (!body?.ok || !Array.isArray(body.v?.changes)) continue;
    flushedAfter = true;
    for (const ch of body.v.changes) {
      const tt = TABLE[ch?.table];
      const img = ch?.row ?? ch?.old;
      if (tt && Array.isArray(img)) keys.add(keyOf(tt.name, pkOf(tt, img)));
    }
  }
  return keys;
}

// The deopt outcome row of a mutation begun without a name: the wasm row drops the args
// too (NULL, NULL); the native one keeps the args text.
function deoptArgsWithoutName(ev) {
  if (ev.method !== "beginFlush" || !ok(ev.w) || !ok(ev.n)) return undefined;
  const a = ev.w.v?.changes;
  const b = ev.n.v?.changes;
  if (!Array.isArray(a) || !Array.isArray(b)) return undefined;
  const outcome = (c) => typeof c?.table === "string" && c.table.endsWith("mutation_outcomes") && Array.isArray(c.row);
  let hit = false;
  const n = rewrite(ev.n, (v) => {
    for (const c of v.changes) {
      if (!outcome(c) || c.row[4] !== null || c.row[5] === null) continue;
      const twin = a.find((x) => outcome(x) && x.row[0] === c.row[0] && x.row[1] === c.row[1]);
      if (twin && twin.row[4] === null && twin.row[5] === null) {
        c.row[5] = null;
        hit = true;
      }
    }
  });
  return hit ? { n, hit } : undefined;
}

export const KNOWN = [
  ...ERROR_TEXTS,
  {
    name: "querykey-text",
    status: "intended",
    reason: "queryKey is a hash of another canonical text (the same queries share a key in both rooms: checked one-to-one)",
    normalise: queryKeyText,
  },
  {
    name: "commitall-subscriber-order",
    status: "intended",
    reason:
      "commitAll lists the subscribers in another order; each subscriber's own batch is the same (frames to different sockets have no order)",
    normalise: entryOrder,
  },
  {
    name: "wasm-panics-on-mixed-types",
    status: "intended",
    reason:
      "cells of different types in one column (say a bool among strings) make the published wasm panic (compare_values: type mismatch, RuntimeError: unreachable); the native room orders them",
    claims: (diff, d) =>
      (Boolean(d.w?.trap) && /type mismatch/.test(d.w.panic ?? "") && d.verdict !== "native view wrong too") ||
      // The wasm tie-breaker's fresh subscription panicked on such cells (its maintained
      // view, fed by the same comparisons, is not to be trusted), and the native view
      // matches a fresh native evaluation.
      (d.verdict === "fresh subscribe failed" &&
        d.freshFailure?.side === "w" &&
        Boolean(d.freshFailure.out?.trap) &&
        /type mismatch/.test(d.freshFailure.out.panic ?? "") &&
        d.nativeMatches === true),
  },
  {
    name: "null-key-witness",
    status: "intended",
    reason:
      "an EXISTS witness whose primary key has a NULL cell (or, nested, the witness such a row needs): the native room ships it, the wasm room passes the parent but ships no such witness (a client re-evaluating the EXISTS then drops the parent); under the NOT EXISTS of a related level the same row rules its parent out, and the wasm room does not see it there (it does at the root) and passes the parent",
    claims(diff, d, runner) {
      const delta = freshDelta(d);
      if (!delta) return false;
      if (delta.onlyW.length && !delta.onlyN.length) {
        // NOT EXISTS: the wasm room passes rows that a NULL-keyed row of a table read
        // under the NOT EXISTS rules out (the native room and a plain reading agree).
        const ast = astOf(d);
        const ruledOut = notExistsParents(ast);
        if (!delta.onlyW.every(([table]) => ruledOut.has(table))) return false;
        const tables = notExistsTables(ast);
        const head = replayModel(runner.calls, runner.outcomes).rows;
        return [...head.values()].some(({ table, row }) => tables.has(table) && nullKey(d.fresh.n, table, row));
      }
      if (delta.onlyW.length || !delta.onlyN.length) return false;
      // The witness itself has a NULL key, or (nested EXISTS) it is the witness of one.
      const nullKeyed = [...d.fresh.n.rows.values()].some((r) => nullKey(d.fresh.n, r.table, r.row));
      const tables = existsChildTables(astOf(d));
      return delta.onlyN.every(([table, row]) => nullKey(d.fresh.n, table, row) || (nullKeyed && tables.has(table)));
    },
    continues: true,
  },
  {
    name: "flipped-exists-limit-zero",
    status: "intended",
    reason:
      "a flipped EXISTS with `limit: 0`: the wasm room refuses the query with an internal `UnknownRelationship` error; the native one serves it",
    claims: (diff, d) => d.call.m === "subscribe" && /UnknownRelationship/.test(d.w?.msg ?? "") && d.n?.ok && existsLimitZero(astOf(d), true),
  },
  {
    name: "querykey-canonical",
    status: "intended",
    reason:
      "two ASTs that differ only in sort spelling (the key columns written out, a column repeated), in a column named twice in `select`, in a relationship's name, in an EXISTS subquery's positive limit or its `system` other than `permissions`, in a literal-only condition or an EXISTS subquery limited to no rows with the same value or in an `and` / `or` with no conditions (which both rooms drop) or with one: the native canonical text completes the sort, leaves names and an EXISTS subquery's positive limit out, folds constants, drops empty junctions and unwraps one-condition ones, so they share one query key (reused, one materialization); the wasm room keys them apart",
    claims: (diff, d, runner) =>
      d.call.m === "subscribe" &&
      (/\$\.(reused|queryKey)/.test(diff.shape ?? "") || diff.getter === "materializationCount") &&
      sortTwin(d.call.a?.[2], runner),
  },
  {
    name: "int-float-literal-fold",
    status: "intended",
    reason:
      "a literal-only ordering comparison of an integer with a fraction (`-3 <= 1e-7`): the wasm room refuses it as mismatched types; JSON has one number type and the native room folds it",
    claims: (diff, d) =>
      !d.w?.ok &&
      d.n?.ok &&
      /mismatched literal types/.test(d.w.msg) &&
      ((d.call.m === "subscribe" && intFloatLiteralCompare(d.call.a?.[2])) || (d.call.m === "enableWritesV2" && intFloatInSpecs(d.call.a?.[0]))),
  },
  {
    name: "aggregate-refused",
    status: "intended",
    reason:
      "an AST with `aggregate`, `groupBy`, `having` or `aggregatePrecomputed`: the native room refuses it (`subscribe: Query(Build(Unsupported(\"`aggregate` is not served by rooms\")))`); the wasm room serves rows of the wrong width (a one-cell count row in a wider table), or refuses it with its own reason",
    claims: (diff, d) =>
      d.call.m === "subscribe" &&
      !d.n?.ok &&
      /`(aggregate|groupBy|having|aggregatePrecomputed)` is not served/.test(d.n.msg) &&
      (d.w?.ok || d.w?.trap || (d.w && !d.w.ok)),
  },
  {
    name: "non-scalar-cells",
    status: "intended",
    reason:
      "an upstream row with an array or object cell: the native room refuses the batch (malformed, poisoned); the wasm room stores it",
    claims: (diff, d, runner) => d.call.m === "apply" && /a cell must be null, boolean, number or string/.test(runner.lastN?.msg ?? ""),
  },
  {
    name: "txget-unowned-table",
    status: "intended",
    reason: "txGet on a table the room does not own: the wasm room throws (`not owned by this room`), the native one reads the row",
    claims: (diff, d) => d.call.m === "txGet" && !d.w?.ok && d.n?.ok && /is not owned by this room/.test(d.w.msg),
    continues: true,
  },
  {
    name: "seed-durable-retires-pending",
    status: "intended",
    reason: "seedDurable over already-applied mids: the native room retires those pending mutations, the wasm one keeps them pending",
    claims: (diff, d, runner) =>
      diff.getter === "pendingLen" &&
      (d.call.m === "seedDurable" ||
        (/^(commit|reject)Mutation$/.test(d.call.m) && runner.calls.slice(incarnationStart(runner)).some((c) => c.m === "seedDurable"))),
  },
  {
    name: "flushconflict-refusal",
    status: "intended",
    reason:
      "a flushConflict both rooms refuse (malformed conflicts): the wasm room has already ended the flight (and dropped its dirty keys), the native one leaves everything as it was",
    claims: (diff, d, runner) => d.phase === "probe" && d.call.m === "flushConflict" && !runner.lastW?.ok && !runner.lastN?.ok,
  },
  {
    name: "upstream-on-dirty-key",
    status: "intended",
    reason:
      "an upstream change to a key with a local write whose image equals the key's CAS base: the wasm room ignores it (a write that returns a row to its old value is lost to the room), the native one lets it win unless it is the echo of the room's own flush, and a conflict (409) takes over every carried key upstream reported during the flight, so the native head and `headCv` move where the wasm ones do not (docs/compat.md)",
    claims: (diff, d, runner) =>
      (diff.getter === "dirtyLen" && d.call.m === "apply") ||
      (diff.getter === "dirtyLen" && d.call.m === "flushConflict" && runner.lastW?.ok && runner.lastN?.ok && upstreamTouchedWritten(runner)) ||
      // The native conflict takes over every carried key upstream reported during the
      // flight (docs/compat.md): its head changes where the wasm head does not.
      (d.call.m === "flushConflict" &&
        d.phase === "call" &&
        d.w?.ok &&
        d.n?.ok &&
        /^\$\.headCv/.test(diff.shape ?? "") &&
        upstreamTouchedWritten(runner)) ||
      (d.call.m === "beginFlush" &&
        d.phase === "call" &&
        // The batch hash differs with the changes it covers: the shape may start with it.
        /^(\$\.batchHash )?\$\.changes(\[\]\.(old|op)|#len)/.test(diff.shape ?? "") &&
        (upstreamTouchedWritten(runner) || /^(\$\.batchHash )?\$\.changes\[\]\.old\[\]/.test(diff.shape ?? ""))),
  },
  {
    name: "tx-raced-by-upstream",
    status: "intended",
    reason:
      "an open transaction staged a write of a key that upstream changed before the commit (an add of a key upstream then added): the wasm room's commit fails its consistency check and poisons the store for every subscriber; the native one commits by key and leaves the race to the flush's CAS (docs/compat.md)",
    claims: (diff, d, runner) =>
      d.call.m === "commitMutation" &&
      d.phase === "call" &&
      !d.w?.ok &&
      d.n?.ok &&
      /ConsistencyViolation/.test(d.w.msg) &&
      upstreamRacedOpenTx(runner),
  },
  {
    name: "wasm-stale-view",
    status: "intended",
    reason:
      "tie-breaker: the wasm subscriber's maintained view differs from a fresh evaluation of its query in the wasm room, the native one matches its own (native right)",
    claims: (diff) => diff.verdict === "wasm stale view",
    continues: true,
  },
  {
    name: "argument-types",
    status: "intended",
    reason: "an argument of the wrong JavaScript type (null for a number): the native room throws a TypeError (ERR_INVALID_ARG_TYPE), the wasm glue coerces it",
    claims: (diff, d) => d.w?.ok && !d.n?.ok && d.n.code === "ERR_INVALID_ARG_TYPE",
  },
  {
    name: "poisoned-store-calls",
    status: "intended",
    reason: "a call on a poisoned store that the wasm room still answers (ack with nothing to do: `{headCv: null}`, a subscribe to a query already materialized) is refused by the native one (`store is not live`, `subscribe: Query(StoreNotLive)`)",
    claims: (diff, d, runner) =>
      d.phase === "call" && d.w?.ok && !d.n?.ok && /store is not live|Query\(StoreNotLive\)/.test(d.n.msg) && runner.w.exec({ m: "isPoisoned", a: [] }).v === true,
  },
  {
    name: "flipped-exists-child-limit",
    status: "intended",
    reason:
      "a flipped EXISTS whose subquery has a `limit`: the wasm room passes no parent at all (and refuses `limit: 0` as an unknown relationship), though `flip` is a planner hint and the same query without it passes parents there; the native one ignores the limit like any EXISTS limit, flipped or not (wasm demonstrably wrong: flipping changes its result)",
    claims(diff, d) {
      if (!/\[rooms disagree on the rows\]$/.test(diff.class)) return false;
      let found = false;
      walk(astOf(d), null, (c) => {
        if (c.type === "correlatedSubquery" && c.flip && typeof c.related?.subquery?.limit === "number") found = true;
      });
      return found;
    },
    continues: true,
  },
  {
    name: "upstream-ops-on-flushed-key",
    status: "intended",
    reason:
      "a key whose flushed write is still unechoed, then upstream ops on it that are not the echo (a re-add and a remove, an edit): the wasm room takes an upstream op that looks like its own write as the echo even after upstream changed the row in between, and keeps a row the database no longer holds (a later txAdd of that key is refused as an existing key); the native room follows the upstream ops (write_model checks room and database converge); where the query does not select the column that changed, the native room sends the edit its head took as a projected no-op and the wasm one nothing; an upstream remove naming the room's own unflushed image of a key whose flushed remove is unechoed is that remove's echo to the native room (the authority never held the image) and someone else's write to the wasm room, so their next flush batches differ",
    claims(diff, d, runner) {
      const flushed = flushedKeys(runner);
      if (flushed.size === 0) return false;
      const keys = [];
      const delta = freshDelta(d);
      if (delta && /\[rooms disagree on the rows\]$/.test(diff.class)) {
        for (const [table, row] of [...delta.onlyW, ...delta.onlyN]) if (TABLE[table]) keys.push(keyOf(table, pkOf(TABLE[table], row)));
      }
      const t = TABLE[d.call.a?.[0]];
      if (d.phase === "call" && t && Array.isArray(d.call.a?.[1]) && /^tx(Add|Edit|Remove|Get)$/.test(d.call.m)) {
        keys.push(keyOf(t.name, /^tx(Remove|Get)$/.test(d.call.m) ? d.call.a[1] : pkOf(t, d.call.a[1])));
      }
      if (d.call.m === "flushConflict" && Array.isArray(d.call.a?.[0]) && upstreamTouchedWritten(runner)) {
        for (const c of d.call.a[0]) if (TABLE[c?.table] && Array.isArray(c.pk)) keys.push(keyOf(c.table, c.pk));
      }
      if (keys.some((k) => flushed.has(k))) return true;
      // A flush batch that differs in a key an earlier flush carried, still unechoed, after
      // upstream touched written keys: the rooms took different upstream ops for that
      // flush's echo, so their heads, and the changes they carry, differ.
      if (d.call.m === "beginFlush" && d.phase === "call" && d.w?.ok && d.n?.ok && upstreamTouchedWritten(runner)) {
        const earlier = flushedKeys({ calls: runner.calls.slice(0, d.index), outcomes: runner.outcomes.slice(0, d.index) });
        if (differingChangeKeys(d.w.v, d.n.v).some((k) => earlier.has(k))) return true;
      }
      // The heads differ in a column the query does not select: the same rows, but the
      // native room sends the edit its head took (a projected no-op) and the wasm one
      // none.
      const frames = d.call.m === "commitAll" && /\[same rows, different frames\]$/.test(diff.class);
      // The query reads such a key only through a condition (a NOT EXISTS child).
      if (!frames && (!delta || !/\[rooms disagree on the rows\]$/.test(diff.class))) return false;
      if (!upstreamTouchedWritten(runner)) return false;
      const read = new Set();
      walk(astOf(d), (level) => read.add(level.table));
      return [...flushed].some((k) => read.has(k.split("\u0000")[0]));
    },
  },
  {
    name: "stale-upstream-image",
    status: "intended",
    reason:
      "invalid upstream input: an edit (or remove) whose old image is not the stored row; the native room applies it by key everywhere, the wasm room's store and pipelines disagree about it",
    claims(diff, d, runner) {
      if (!d.fresh || !d.views || !/\[(rooms disagree on the rows|wasm stale view|native wrong|both views wrong)\]$/.test(diff.class)) return false;
      const stale = staleUpstreamKeys(runner);
      const differing = [...symmetric(d.fresh.w, d.fresh.n), ...symmetric(d.views.w, d.fresh.w), ...symmetric(d.views.n, d.fresh.n)];
      if (differing.some(([table, row]) => TABLE[table] && stale.has(keyOf(table, pkOf(TABLE[table], row))))) return true;
      // A stale row the query only reads through a condition (an EXISTS child).
      const read = new Set();
      walk(astOf(d), (level) => read.add(level.table));
      return [...stale].some((k) => read.has(k.split("\u0000")[0]));
    },
    continues: true,
  },
  {
    name: "exists-witnesses-in-or",
    status: "intended",
    reason:
      "an EXISTS that holds under an `or` whose other branch already admits the parent: the native room ships its witnesses (every EXISTS that holds does), the wasm room does not (at least for a flipped EXISTS, or a witness that arrives later)",
    claims(diff, d) {
      const delta = freshDelta(d);
      if (!delta || !/\[rooms disagree on the rows\]$/.test(diff.class) || delta.onlyW.length || !delta.onlyN.length) return false;
      const tables = existsChildTables(astOf(d), true);
      return delta.onlyN.every(([table]) => tables.has(table));
    },
    continues: true,
  },
  {
    name: "exists-witness-choice",
    status: "intended",
    reason:
      "a parent with more than three EXISTS witnesses: the native room ships the first three in the subquery's sort order (and swaps when a smaller one arrives), the wasm room keeps any three",
    claims(diff, d) {
      const delta = freshDelta(d);
      if (!delta || !/\[rooms disagree on the rows\]$/.test(diff.class) || !delta.onlyW.length || !delta.onlyN.length) return false;
      const tables = existsChildTables(astOf(d));
      const root = astOf(d)?.table;
      return [...delta.onlyW, ...delta.onlyN].every(([table]) => tables.has(table) && table !== root);
    },
    continues: true,
  },
  {
    name: "wasm-panics",
    status: "intended",
    reason:
      "the published wasm room panics (RuntimeError: unreachable; e.g. `Take: bound should be set`) where the native one answers, every native subscriber's view then matching a fresh subscription",
    claims: (diff, d) => Boolean(d.w?.trap) && !d.n?.trap && d.verdict === "native views consistent",
  },
  {
    name: "flushconflict-duplicate-key",
    status: "intended",
    reason:
      "a 409 body naming one key twice: the wasm room fails its own local commit (`ConsistencyViolation`), the native one converges the key to the last image given",
    claims(diff, d) {
      if (d.call.m !== "flushConflict" || d.phase !== "call" || d.w?.ok || !d.n?.ok) return false;
      const keys = (Array.isArray(d.call.a?.[0]) ? d.call.a[0] : []).map((c) => JSON.stringify([c?.table, c?.pk]));
      return /ConsistencyViolation/.test(d.w.msg) && new Set(keys).size !== keys.length;
    },
  },
  {
    name: "shadowed-related-validated",
    status: "pending",
    reason:
      "a `related` entry replaced by a later one with the same alias: the native room still validates it (and refuses the query when it is bad), the wasm room ignores it",
    claims: (diff, d) => d.call.m === "subscribe" && d.phase === "call" && d.w?.ok && !d.n?.ok && duplicateAlias(d.call.a?.[2]),
  },
];
