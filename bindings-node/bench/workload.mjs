// The read-path workloads of docs/BENCHMARKS.md as wire data, shared by the Node bench
// scripts: the tables, the rows, the queries, and the op of each unit of W1 and W3.

/** Users in the data set (issue `id` belongs to creator `id % creators`). */
export const USERS = 100;

export const ISSUE_COLUMNS = ["id", "title", "open", "created", "creatorID", "modified", "description"];
export const TABLES = [
  { name: "user", columns: ["id", "name"], primaryKey: [0] },
  { name: "issue", columns: ISSUE_COLUMNS, primaryKey: [0] },
];
// normalizedFp of TABLES (protocol.md §3.4), computed with shared/tools/fp_vectors.py.
export const FP = "c8bd6a76198f3f90";
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
