// The read-path workloads of docs/BENCHMARKS.md as wire data, shared by the Node bench
// scripts: the tables, the rows, the queries, and the op of each unit of W1 and W3.

/** Users in the data set (issue `id` belongs to creator `id % creators`). */
export const USERS = 100;

export const ISSUE_COLUMNS = ["id", "title", "open", "created", "creatorID", "modified", "description"];
// Sorted by name, as a hello must list them.
export const TABLES = [
  { name: "issue", columns: ISSUE_COLUMNS, primaryKey: [0] },
  { name: "user", columns: ["id", "name"], primaryKey: [0] },
];

/**
 * The hello's `normalizedFp` of `tables`: FNV-1a 64 over the table count, then per
 * table its name, its column count and names, its key-column count and names (each
 * count a little-endian u32, each text its UTF-8 length as one, then its bytes), as
 * 16 lowercase hex digits (docs/protocol.md, the hello).
 */
export function normalizedFp(tables) {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  const byte = (b) => {
    h ^= BigInt(b & 255);
    h = (h * prime) & mask;
  };
  const u32 = (v) => {
    for (let s = 0; s < 32; s += 8) byte((v >>> s) & 255);
  };
  const text = (t) => {
    const b = Buffer.from(t, "utf8");
    u32(b.length);
    for (const x of b) byte(x);
  };
  u32(tables.length);
  for (const t of tables) {
    text(t.name);
    u32(t.columns.length);
    t.columns.forEach(text);
    u32(t.primaryKey.length);
    t.primaryKey.forEach((i) => text(t.columns[i]));
  }
  return h.toString(16).padStart(16, "0");
}

export const FP = normalizedFp(TABLES);
export const HELLO = { epoch: 1, comparatorVersion: 2, tables: TABLES, normalizedFp: FP };

// Rows, positional (the wire).
export function userRow(id) {
  return [id, `user ${id}`];
}
export function issueRow(id, title, open, created, creator) {
  return [id, title, open, created, creator, created, `Description of issue ${id}.`];
}
export function baseIssue(id, creators) {
  return issueRow(id, `Issue ${id}`, id % 3 !== 0, id, id % creators);
}

// The queries as wire ASTs.
export const W1_AST = {
  table: "issue",
  where: {
    type: "simple",
    op: "=",
    left: { type: "column", name: "open" },
    right: { type: "literal", value: true },
  },
  orderBy: [["created", "desc"]],
  limit: 50,
  related: [
    {
      correlation: { parentField: ["creatorID"], childField: ["id"] },
      subquery: { table: "user", alias: "creator" },
    },
  ],
};
export function w3Ast(creator) {
  return {
    table: "issue",
    where: {
      type: "simple",
      op: "=",
      left: { type: "column", name: "creatorID" },
      right: { type: "literal", value: creator },
    },
    orderBy: [["created", "desc"]],
    limit: 20,
  };
}

/**
 * W1 over `n` issues: the 4-step cycle add a newest issue, edit its title, edit a deep
 * row, remove the new issue. `op(u)` is unit u's wire op; `frames(u)` how many frames it
 * emits to the one W1 subscriber.
 */
export function w1Script(n) {
  const id = n + 1;
  let deep = Math.floor(n / 2);
  while (deep % 3 === 0) deep++;
  const creator = id % USERS;
  const added = issueRow(id, `Issue ${id}`, true, id, creator);
  const edited = issueRow(id, `Issue ${id} (edited)`, true, id, creator);
  const deepRows = [
    baseIssue(deep, USERS),
    issueRow(deep, `Issue ${deep} (edited)`, true, deep, deep % USERS),
  ];
  return {
    period: 4,
    frames: (u) => (u % 4 === 2 ? 0 : 1),
    op(u) {
      const cycle = Math.floor(u / 4);
      switch (u % 4) {
        case 0:
          return { table: "issue", op: "add", row: added };
        case 1:
          return { table: "issue", op: "edit", old: added, new: edited };
        case 2:
          return { table: "issue", op: "edit", old: deepRows[cycle % 2], new: deepRows[(cycle + 1) % 2] };
        default:
          return { table: "issue", op: "remove", row: edited };
      }
    },
  };
}

/** W3 over `n` issues and `q` views: unit pairs add then remove a newest issue of creator `k % q`. */
export function w3Script(n, q) {
  const id = n + 1;
  const rows = new Map();
  const rowOf = (creator) => {
    let r = rows.get(creator);
    if (!r) rows.set(creator, (r = issueRow(id, `Issue ${id}`, true, id, creator)));
    return r;
  };
  return {
    period: 2,
    frames: () => 1,
    creator: (u) => Math.floor(u / 2) % q,
    op(u) {
      const row = rowOf(Math.floor(u / 2) % q);
      return u % 2 === 0 ? { table: "issue", op: "add", row } : { table: "issue", op: "remove", row };
    },
  };
}
