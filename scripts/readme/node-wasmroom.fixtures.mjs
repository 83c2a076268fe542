// Inputs of the README's node-wasmroom snippet (scripts/test-readme.sh): the upstream
// frames and the query of the README's replay example. Plain JavaScript that is also
// TypeScript: the harness imports it as fixtures.mjs (node) and fixtures.mts (tsc).
const table = { name: "note", columns: ["id", "body"], primaryKey: [0] };
const normalizedFp = "d0ffe1b66912a02b";

export const helloFrame = {
  t: "nhello",
  queryId: 1,
  hello: { epoch: 1, comparatorVersion: 2, tables: [table], normalizedFp },
};
export const snapshotFrame = {
  t: "nbatch",
  queryId: 1,
  batch: { epoch: 1, seq: 0, normalizedFp, ops: [{ table: "note", op: "add", row: [1, "a"] }], cv: 17 },
};
export const liveFrame = {
  t: "nbatch",
  queryId: 1,
  batch: { epoch: 1, seq: 1, normalizedFp, ops: [{ table: "note", op: "add", row: [2, "b"] }], cv: 18 },
};
export const ast = { table: "note" };
