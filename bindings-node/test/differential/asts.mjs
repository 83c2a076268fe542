// Random wire ASTs over the schema of schema.mjs: simple conditions with every operator
// (NULL literals, IS / IS NOT, IN / NOT IN, the LIKE family), and / or, EXISTS and NOT
// EXISTS correlated subqueries, orderBy, start bounds, limits and nested `related` with
// per-parent limits; plus malformed ones on request.
import { LIKE_PATTERNS, LINKS, TABLE, cell } from "./schema.mjs";

const COMPARE = ["=", "!=", "<", "<=", ">", ">="];
const LIKES = ["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"];
export const OPERATORS = [...COMPARE, "IS", "IS NOT", "IN", "NOT IN", ...LIKES];

const col = (name) => ({ type: "column", name });
const lit = (value) => ({ type: "literal", value });

/** A literal fitting `op` for column kind `kind`. */
function literalFor(rng, op, kind) {
  if (op === "IS" || op === "IS NOT") return rng.chance(0.6) ? null : cell(rng, kind, 0.1);
  if (op === "IN" || op === "NOT IN") {
    const n = rng.int(0, 3);
    return Array.from({ length: n }, () => (rng.chance(0.1) ? null : cell(rng, kind, 0.1)));
  }
  if (LIKES.includes(op)) return rng.pick(LIKE_PATTERNS);
  return rng.chance(0.1) ? null : cell(rng, kind, 0.1);
}

/** A `simple` condition on table `t` (row-local). */
export function simpleCond(rng, t) {
  const i = rng.int(0, t.columns.length - 1);
  const op = rng.pick(OPERATORS);
  const value = literalFor(rng, op, t.kinds[i]);
  if (rng.chance(0.03)) {
    // Literal-only: folded to a constant (ordering across types is refused).
    return { type: "simple", op: rng.pick(COMPARE), left: lit(cell(rng, t.kinds[i])), right: lit(cell(rng, t.kinds[i])) };
  }
  return { type: "simple", op, left: col(t.columns[i]), right: lit(value) };
}

/** A row-local condition (simple / and / or), as scope specs take. */
export function rowLocalCond(rng, t, depth = 0) {
  if (depth >= 2 || rng.chance(0.6)) return simpleCond(rng, t);
  const type = rng.chance(0.5) ? "and" : "or";
  const n = rng.int(0, 3);
  return { type, conditions: Array.from({ length: n }, () => rowLocalCond(rng, t, depth + 1)) };
}

/** A condition on table `t`, EXISTS / NOT EXISTS included while `budget` lasts. */
export function cond(rng, t, depth = 0, budget = { exists: 2 }) {
  const r = rng.float();
  if (depth < 2 && budget.exists > 0 && r < 0.2) {
    const links = LINKS.filter((l) => l.from === t.name);
    const link = rng.pick(links);
    budget.exists--;
    const child = TABLE[link.to];
    const negated = rng.chance(0.45);
    const sub = { table: child.name, alias: `zsubq_${link.to}_${rng.int(0, 6)}` };
    if (rng.chance(0.6)) sub.where = cond(rng, child, depth + 1, budget);
    if (rng.chance(0.2)) sub.orderBy = orderBy(rng, child);
    if (rng.chance(0.15)) sub.limit = rng.int(0, 3); // ignored by EXISTS
    if (rng.chance(0.15)) sub.select = select(rng, child);
    const c = {
      type: "correlatedSubquery",
      op: negated ? "NOT EXISTS" : "EXISTS",
      related: {
        correlation: { parentField: link.parentField.slice(), childField: link.childField.slice() },
        subquery: sub,
      },
    };
    if (!negated && rng.chance(0.15)) c.flip = true;
    if (rng.chance(0.1)) c.related.system = rng.pick(["permissions", "client"]);
    return c;
  }
  if (depth < 3 && r < 0.45) {
    const type = rng.chance(0.5) ? "and" : "or";
    const n = rng.int(0, 3);
    return { type, conditions: Array.from({ length: n }, () => cond(rng, t, depth + 1, budget)) };
  }
  return simpleCond(rng, t);
}

/** Some of `t`'s columns (possibly none, possibly repeated): a `select`. */
function select(rng, t) {
  return Array.from({ length: rng.int(0, 3) }, () => rng.pick(t.columns));
}

export function orderBy(rng, t) {
  const n = rng.int(1, 3);
  return Array.from({ length: n }, () => [rng.pick(t.columns), rng.chance(0.5) ? "asc" : "desc"]);
}

function start(rng, t, order) {
  const row = {};
  const cols = order ? order.map((o) => o[0]) : t.primaryKey.map((i) => t.columns[i]);
  for (const c of cols) if (rng.chance(0.8)) row[c] = cell(rng, t.kinds[t.columns.indexOf(c)], 0.05);
  return { row, exclusive: rng.chance(0.5) };
}

/** A query level on table `t` (root or related). */
export function level(rng, t, depth = 0) {
  const q = { table: t.name };
  if (rng.chance(0.65)) q.where = cond(rng, t, 0, { exists: depth === 0 ? 2 : 1 });
  if (rng.chance(0.5)) q.orderBy = orderBy(rng, t);
  if (rng.chance(0.12)) q.start = start(rng, t, q.orderBy);
  if (rng.chance(0.35)) q.limit = rng.int(0, 5);
  if (rng.chance(0.15)) q.select = select(rng, t);
  if (depth < 2 && rng.chance(depth === 0 ? 0.35 : 0.15)) {
    const links = LINKS.filter((l) => l.from === t.name);
    const n = rng.int(1, 2);
    q.related = Array.from({ length: n }, () => {
      const link = rng.pick(links);
      const sub = level(rng, TABLE[link.to], depth + 1);
      sub.alias = rng.pick(["a", "b", link.to]);
      return {
        correlation: { parentField: link.parentField.slice(), childField: link.childField.slice() },
        subquery: sub,
      };
    });
  }
  return q;
}

/** A valid random AST over one of `tables` (names). */
export function randomAst(rng, tables) {
  return level(rng, TABLE[rng.pick(tables)]);
}

/** A malformed or unsupported AST (the room must refuse it, both the same way). */
export function badAst(rng, tables) {
  const t = TABLE[rng.pick(tables)];
  const base = level(rng, t);
  switch (rng.int(0, 15)) {
    case 0:
      return { table: "nope" };
    case 1:
      return { ...base, where: { type: "simple", op: "=", left: col("nope"), right: lit(1) } };
    case 2:
      return { ...base, where: { type: "simple", op: "~~", left: col(t.columns[0]), right: lit(1) } };
    case 3:
      return { ...base, where: { type: "simple", op: "=", left: lit(1), right: col(t.columns[0]) } };
    case 4:
      return { ...base, where: { type: "simple", op: "IN", left: col(t.columns[0]), right: lit(3) } };
    case 5:
      return { ...base, where: { type: "simple", op: "LIKE", left: col(t.columns[0]), right: lit(3) } };
    case 6:
      return { ...base, limit: rng.pick([-1, 1.5, "3", 2 ** 33]) };
    case 7:
      return { ...base, orderBy: [[t.columns[0], "up"]] };
    case 8:
      return { ...base, start: { row: { [t.columns[0]]: 1 } } };
    case 9:
      return { ...base, aggregate: rng.pick(["count", true]) };
    case 10:
      return {
        ...base,
        where: {
          type: "correlatedSubquery",
          op: "NOT EXISTS",
          flip: true,
          related: { correlation: { parentField: [t.columns[0]], childField: [t.columns[0]] }, subquery: { table: t.name, alias: "x" } },
        },
      };
    case 11:
      return { ...base, where: { type: "simple", op: "=", left: col(t.columns[0]), right: lit({ a: 1 }) } };
    case 12:
      return { ...base, where: { type: "simple", op: "<", left: lit(1), right: lit("a") } };
    case 13:
      return { ...base, related: [{ subquery: { table: t.name, alias: "x" } }] };
    case 14:
      return { ...base, where: { type: "simple", op: "=", left: col(t.columns[0]), right: { type: "static", anchor: "authData", field: "sub" } } };
    default:
      return { $text: rng.pick(["", "null", "{", "[]", "{\"table\":1}", "{\"table\":\"item\",\"where\":[]}"]) };
  }
}
