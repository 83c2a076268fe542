// A client's view of one subscription: the rows it holds, keyed by table and primary
// key, built from the snapshot and every later batch exactly as a client applies them.
// Anomalies (an add over a held key, a remove or edit of a key it does not hold, an
// edit whose `old` is not what it holds) are counted: a stream that needs them is wrong
// even if the rows end right.
import { deepEqual, sortKeys } from "./compare.mjs";

export class View {
  /** `hello`: the subscription's `nhello` (its tables give the primary keys). */
  constructor(hello, spec) {
    this.spec = spec; // {kind: "ast", epoch, ast} | {kind: "lmid", epoch, client}
    this.pks = new Map();
    this.tables = new Map();
    for (const t of hello?.tables ?? []) {
      this.pks.set(t.name, t.primaryKey ?? [0]);
      this.tables.set(t.name, t);
    }
    this.rows = new Map();
    this.anomalies = [];
    this.seq = null;
  }

  key(table, row) {
    const pk = this.pks.get(table);
    if (!pk || !Array.isArray(row)) return `${table}\u0000?${JSON.stringify(row)}`;
    return `${table}\u0000${JSON.stringify(pk.map((i) => row[i]))}`;
  }

  /** Applies one `nbatch.batch` (snapshot or delta). */
  applyBatch(batch) {
    if (!batch || !Array.isArray(batch.ops)) {
      this.anomalies.push("batch without ops");
      return;
    }
    if (typeof batch.seq === "number") {
      if (batch.seq === 0) this.rows.clear();
      else if (this.seq !== null && batch.seq !== this.seq + 1) {
        this.anomalies.push(`seq ${batch.seq} after ${this.seq}`);
      }
      this.seq = batch.seq;
    }
    for (const op of batch.ops) this.applyOp(op);
  }

  applyOp(op) {
    const { table } = op;
    if (op.op === "add") {
      const k = this.key(table, op.row);
      if (this.rows.has(k)) this.anomalies.push(`add over held ${k}`);
      this.rows.set(k, { table, row: op.row });
    } else if (op.op === "remove") {
      const k = this.key(table, op.row);
      if (!this.rows.has(k)) this.anomalies.push(`remove of absent ${k}`);
      this.rows.delete(k);
    } else if (op.op === "edit") {
      const ko = this.key(table, op.old);
      const held = this.rows.get(ko);
      if (!held) this.anomalies.push(`edit of absent ${ko}`);
      else if (!deepEqual(held.row, op.old)) this.anomalies.push(`edit old mismatch ${ko}`);
      this.rows.delete(ko);
      const kn = this.key(table, op.new);
      if (this.rows.has(kn)) this.anomalies.push(`edit onto held ${kn}`);
      this.rows.set(kn, { table, row: op.new });
    } else {
      this.anomalies.push(`unknown op ${JSON.stringify(op.op)}`);
    }
  }

  /** The rows as a sorted list of `[table, row]` (comparable across views). */
  contents() {
    return [...this.rows.values()]
      .map((r) => JSON.stringify(sortKeys([r.table, r.row])))
      .sort();
  }

  /** Whether this view holds the same rows as `other` and saw no anomaly. */
  matches(other) {
    const a = this.contents();
    const b = other.contents();
    return this.anomalies.length === 0 && a.length === b.length && a.every((x, i) => x === b[i]);
  }
}

/** A short description of how two views differ (for reports). */
export function viewDelta(held, fresh) {
  const a = new Set(held.contents());
  const b = new Set(fresh.contents());
  const extra = [...a].filter((x) => !b.has(x));
  const missing = [...b].filter((x) => !a.has(x));
  const parts = [];
  if (extra.length) parts.push(`holds ${extra.length} row(s) a fresh snapshot lacks: ${extra.slice(0, 3).join(" ")}`);
  if (missing.length) parts.push(`lacks ${missing.length} row(s) of a fresh snapshot: ${missing.slice(0, 3).join(" ")}`);
  if (held.anomalies.length) parts.push(`stream anomalies: ${held.anomalies.slice(0, 3).join("; ")}`);
  return parts.join("; ") || "same rows";
}
