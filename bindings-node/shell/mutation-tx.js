"use strict";
// The §4.2 write handle a room mutator runs against (seed 000 `MutationTx`), built over
// the native room's open transaction: `txGet` / `txAdd` / `txEdit` / `txRemove`, JSON
// text both ways. Keyed methods (`row`, `insert`, `update`, `upsert`, `delete`) name
// columns and are checked against the table's shape from the upstream hello; positional
// methods (`get`, `add`, `remove`, `edit`) take cells in column order (pk cells in
// primary-key order). `query` is an environment shortfall (→ a deopt `environment`).
//
// The messages of the keyed checks are the Rust keyed layer's (room-core
// `write/keyed.rs`), so a JS mutator and a Rust one reject with the same reason.

/** Thrown by `tx.query`: the room lacks the capability, the shell deopts `environment`. */
class EnvironmentShortfall extends Error {
  constructor(message) {
    super(message);
    this.name = "EnvironmentShortfall";
    this.code = "ENVIRONMENT";
  }
}

/** Whether `e` is an environment shortfall (ours, or a core error with that code). */
function isEnvironmentShortfall(e) {
  return e !== null && typeof e === "object" && e.code === "ENVIRONMENT";
}

function refused(message) {
  const err = new Error(message);
  err.code = "WRITE_REFUSED";
  return err;
}

const q = (s) => JSON.stringify(String(s));

/** A keyed value as a wire cell: objects and arrays travel as their JSON text. */
function toCell(v) {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw refused(`a cell must be a finite number, got ${v}`);
    return v;
  }
  if (typeof v === "object") return JSON.stringify(v);
  throw refused(`a cell must be null, a boolean, a number or a string, got ${typeof v}`);
}

/** The named (own, defined) entries of a keyed row. */
function entriesOf(keyed, what, table) {
  if (keyed === null || typeof keyed !== "object" || Array.isArray(keyed)) {
    throw refused(`${what}: the ${q(table)} row must be an object of column values`);
  }
  return Object.entries(keyed).filter(([, v]) => v !== undefined);
}

/**
 * The MutationTx over `room`'s open transaction. `shapes` maps a table name to its
 * `{columns, primaryKey}` (the upstream hello). The handle works only while `isOpen()`
 * holds: the shell closes it when the mutator returns, so a late call (after an
 * `await` in a wrongly async mutator) can never touch another mutation.
 */
function mutationTx(room, shapes, isOpen = () => true) {
  const live = () => {
    if (!isOpen()) {
      throw refused("this transaction is over: room mutators must be synchronous");
    }
  };
  const shape = (table, what) => {
    const s = typeof table === "string" ? shapes.get(table) : undefined;
    if (s === undefined) {
      throw refused(`${what}: table ${q(table)} is not readable by mutators`);
    }
    return s;
  };
  const checkKnown = (s, entries, what, table) => {
    for (const [k] of entries) {
      if (!s.columns.includes(k)) throw refused(`${what}: ${q(table)} has no column ${q(k)}`);
    }
  };
  const pkCells = (s, entries, what, table) =>
    s.primaryKey.map((i) => {
      const name = s.columns[i];
      const hit = entries.find(([k]) => k === name);
      if (hit === undefined) {
        throw refused(`${what}: ${q(table)} needs primary-key column ${q(name)}`);
      }
      return toCell(hit[1]);
    });
  const fullRow = (s, entries, what, table) => {
    checkKnown(s, entries, what, table);
    return s.columns.map((c) => {
      const hit = entries.find(([k]) => k === c);
      if (hit === undefined) {
        throw refused(`${what}: a full ${q(table)} row must name column ${q(c)}`);
      }
      return toCell(hit[1]);
    });
  };
  const get = (table, pk) => {
    const text = room.txGet(table, JSON.stringify(pk));
    return text === undefined ? undefined : JSON.parse(text);
  };
  const keyedOf = (s, cells) => {
    const out = {};
    s.columns.forEach((c, i) => {
      out[c] = cells[i];
    });
    return out;
  };

  return {
    row(table, pk) {
      live();
      const s = shape(table, "row");
      const entries = entriesOf(pk, "row", table);
      checkKnown(s, entries, "row", table);
      const cells = get(table, pkCells(s, entries, "row", table));
      return cells === undefined ? undefined : keyedOf(s, cells);
    },
    insert(table, row) {
      live();
      const s = shape(table, "insert");
      room.txAdd(table, JSON.stringify(fullRow(s, entriesOf(row, "insert", table), "insert", table)));
    },
    update(table, row) {
      live();
      const s = shape(table, "update");
      const entries = entriesOf(row, "update", table);
      checkKnown(s, entries, "update", table);
      const current = get(table, pkCells(s, entries, "update", table));
      if (current === undefined) return; // a missing row is a no-op (rebase-friendly)
      const cells = current.slice();
      for (const [k, v] of entries) cells[s.columns.indexOf(k)] = toCell(v);
      room.txEdit(table, JSON.stringify(cells));
    },
    upsert(table, row) {
      live();
      const s = shape(table, "upsert");
      const full = fullRow(s, entriesOf(row, "upsert", table), "upsert", table);
      const pk = s.primaryKey.map((i) => full[i]);
      if (get(table, pk) !== undefined) room.txEdit(table, JSON.stringify(full));
      else room.txAdd(table, JSON.stringify(full));
    },
    delete(table, pk) {
      live();
      const s = shape(table, "delete");
      const entries = entriesOf(pk, "delete", table);
      checkKnown(s, entries, "delete", table);
      const cells = pkCells(s, entries, "delete", table);
      if (get(table, cells) !== undefined) room.txRemove(table, JSON.stringify(cells));
    },
    query(_query) {
      live();
      throw new EnvironmentShortfall(
        "tx.query is not available in room mutators (environment shortfall)",
      );
    },
    get(table, pk) {
      live();
      return get(table, pk);
    },
    add(table, row) {
      live();
      room.txAdd(table, JSON.stringify(row));
    },
    remove(table, row) {
      live();
      const s = shape(table, "remove");
      const pk = Array.isArray(row) && row.length === s.columns.length
        ? s.primaryKey.map((i) => row[i])
        : row;
      room.txRemove(table, JSON.stringify(pk));
    },
    edit(table, oldRow, newRow) {
      live();
      const s = shape(table, "edit");
      const width = s.columns.length;
      if (!Array.isArray(oldRow) || !Array.isArray(newRow) ||
          oldRow.length !== width || newRow.length !== width) {
        throw refused(`edit: ${q(table)} rows have ${width} columns`);
      }
      const current = get(table, s.primaryKey.map((i) => oldRow[i]));
      if (current === undefined) {
        throw refused(`edit: no ${q(table)} row with that primary key`);
      }
      const cells = current.slice();
      for (let i = 0; i < width; i++) {
        const v = newRow[i];
        if (v === undefined) continue; // keep the current value
        if (s.primaryKey.includes(i) && v !== current[i]) {
          throw refused(`edit: the primary key of a ${q(table)} row cannot change`);
        }
        cells[i] = v;
      }
      room.txEdit(table, JSON.stringify(cells));
    },
  };
}

/**
 * Room mutators are plain synchronous functions. A mutator that returned a promise (an
 * `async` function) or a generator (a `shared(...)` registry body) did not run as a room
 * mutator: refuse it, so its staged writes are discarded with the transaction.
 */
function assertSyncMutatorReturn(returned, name) {
  if (returned === null || (typeof returned !== "object" && typeof returned !== "function")) {
    return;
  }
  if (typeof returned.then === "function") {
    // Keep a rejected promise from surfacing as an unhandled rejection.
    Promise.resolve(returned).catch(() => {});
    throw new Error(
      `mutator \`${name}\` returned a promise: room mutators must be plain synchronous functions`,
    );
  }
  if (typeof returned.next === "function" && typeof returned[Symbol.iterator] === "function") {
    throw new Error(
      `mutator \`${name}\` returned a generator: generator (shared) registries do not run in the room — ` +
        "register plain synchronous (tx, args, ctx) functions",
    );
  }
}

/** Positional table shapes from an upstream hello: name → {columns, primaryKey}. */
function shapesOf(hello) {
  const shapes = new Map();
  const tables = hello && Array.isArray(hello.tables) ? hello.tables : [];
  for (const t of tables) {
    if (t && typeof t.name === "string" && Array.isArray(t.columns) && Array.isArray(t.primaryKey)) {
      shapes.set(t.name, { columns: t.columns, primaryKey: t.primaryKey });
    }
  }
  return shapes;
}

module.exports = {
  mutationTx,
  assertSyncMutatorReturn,
  isEnvironmentShortfall,
  EnvironmentShortfall,
  shapesOf,
  toCell,
};
