// Comparing what the two rooms returned: deep equality of parsed JSON (key order and
// `2.0` vs `2` do not matter), and the short "shape" of a disagreement that names its
// difference class.

/** Which methods' error messages a client reads (forwarded verbatim): compared. */
export const MESSAGE_METHODS = new Set([
  "beginMutation",
  "subscribe",
  "lmidSubscribe",
  "commitMutation",
]);

export function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b) return false;
  if (typeof a === "number") return Number.isNaN(a) && Number.isNaN(b);
  if (a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a).filter((k) => a[k] !== undefined);
  const kb = Object.keys(b).filter((k) => b[k] !== undefined);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k) || !deepEqual(a[k], b[k])) return false;
  }
  return true;
}

/** Whether two call outcomes agree (messages only where `MESSAGE_METHODS` says so). */
export function sameOutcome(method, w, n) {
  if (w.ok !== n.ok) return false;
  if (w.ok) return deepEqual(w.v, n.v);
  if (MESSAGE_METHODS.has(method)) return w.msg === n.msg;
  return true;
}

function kindOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

/**
 * The paths where `a` and `b` differ, array indices written `[]` (so the same
 * disagreement at another position has the same shape). Capped at `max` paths.
 */
export function diffPaths(a, b, path = "$", out = new Set(), max = 6) {
  if (out.size >= max || deepEqual(a, b)) return out;
  const ka = kindOf(a);
  const kb = kindOf(b);
  if (ka !== kb) {
    out.add(`${path}:${ka}/${kb}`);
    return out;
  }
  if (ka === "array") {
    if (a.length !== b.length) {
      // Same elements in another order, or different counts.
      const sa = a.map((x) => JSON.stringify(sortKeys(x))).sort();
      const sb = b.map((x) => JSON.stringify(sortKeys(x))).sort();
      out.add(`${path}#len`);
      if (sa.length === sb.length && sa.every((x, i) => x === sb[i])) out.add(`${path}#order`);
      return out;
    }
    const sa = a.map((x) => JSON.stringify(sortKeys(x))).sort();
    const sb = b.map((x) => JSON.stringify(sortKeys(x))).sort();
    if (sa.every((x, i) => x === sb[i])) {
      out.add(`${path}#order`);
      return out;
    }
    for (let i = 0; i < a.length; i++) diffPaths(a[i], b[i], `${path}[]`, out, max);
    return out;
  }
  if (ka === "object") {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of [...keys].sort()) {
      if (!(k in a) || a[k] === undefined) out.add(`${path}.${k}:missing-in-wasm`);
      else if (!(k in b) || b[k] === undefined) out.add(`${path}.${k}:missing-in-native`);
      else diffPaths(a[k], b[k], `${path}.${k}`, out, max);
      if (out.size >= max) break;
    }
    return out;
  }
  out.add(path);
  return out;
}

/** A copy with object keys sorted (stable text for sets of objects). */
export function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
    return out;
  }
  return v;
}

/** A message with its particulars (quoted names, numbers) elided, for a class name. */
export function messageTemplate(msg, max = 60) {
  const t = String(msg)
    .replace(/"[^"]*"|`[^`]*`|'[^']*'/g, "…")
    .replace(/-?\d+(\.\d+)?(e[+-]?\d+)?/gi, "#")
    .split("\n")[0];
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

/** The shape of a disagreement between two outcomes, for a class name. */
export function outcomeShape(method, w, n) {
  if (w.trap) return `wasm panicked (${messageTemplate(w.panic ?? w.msg)})`;
  if (n.trap) return `native trapped (${messageTemplate(n.msg)})`;
  if (w.ok && !n.ok) return `only native threw (${messageTemplate(n.msg)})`;
  if (!w.ok && n.ok) return `only wasm threw (${messageTemplate(w.msg)})`;
  if (!w.ok && !n.ok) return `error text (wasm: ${messageTemplate(w.msg)})`;
  return [...diffPaths(w.v, n.v)].join(" ") || "value";
}

/** A one-line rendering of an outcome for reports. */
export function render(o, max = 600) {
  let s;
  if (!o) s = "—";
  else if (o.ok) s = o.v === undefined ? "undefined" : JSON.stringify(o.v);
  else s = `THROW ${o.name ? o.name + ": " : ""}${o.msg}${o.code ? ` [${o.code}]` : ""}${o.panic ? ` (panic: ${o.panic})` : ""}`;
  return s.length > max ? `${s.slice(0, max)}… (${s.length} chars)` : s;
}
