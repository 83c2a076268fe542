"use strict";
// A small document shared by the surface, error and drop-in tests: the deck / member /
// slide / tag schema of the write-plane conformance scenarios (sorted by name, as a
// hello must be; its normalizedFp is the one those scenarios use) and a seq-0 snapshot.
const HELLO = {
  epoch: 1,
  comparatorVersion: 2,
  tables: [
    { name: "deck", columns: ["id", "title"], primaryKey: [0] },
    { name: "member", columns: ["id", "name"], primaryKey: [0] },
    { name: "slide", columns: ["id", "deckId", "pos"], primaryKey: [0] },
    { name: "tag", columns: ["id", "label"], primaryKey: [0] },
  ],
  normalizedFp: "6b02aa3e7a7b2a3e",
};

function batch(seq, ops, cv) {
  return { epoch: HELLO.epoch, seq, normalizedFp: HELLO.normalizedFp, ops, cv: cv ?? 100 + seq };
}

const SNAPSHOT = batch(
  0,
  [
    { table: "deck", op: "add", row: ["d1", "Deck one"] },
    { table: "slide", op: "add", row: ["s1", "d1", 1] },
    { table: "slide", op: "add", row: ["s2", "d1", 2] },
    { table: "member", op: "add", row: ["m1", "ann"] },
  ],
  100,
);

const SLIDES_OF_D1 = {
  table: "slide",
  where: {
    type: "simple",
    op: "=",
    left: { type: "column", name: "deckId" },
    right: { type: "literal", value: "d1" },
  },
  orderBy: [["pos", "asc"]],
};

module.exports = { HELLO, SNAPSHOT, SLIDES_OF_D1, batch };
