"use strict";
// A small document shared by the surface, error and drop-in tests: the deck / slide /
// member / tag schema of the write-plane conformance scenarios (its normalizedFp is
// the one those scenarios use) and a seq-0 snapshot.
const HELLO = {
  epoch: 1,
  comparatorVersion: 2,
  tables: [
    { name: "deck", columns: ["id", "title"], primaryKey: [0] },
    { name: "slide", columns: ["id", "deckId", "pos"], primaryKey: [0] },
    { name: "member", columns: ["id", "name"], primaryKey: [0] },
    { name: "tag", columns: ["id", "label"], primaryKey: [0] },
  ],
  normalizedFp: "4768a0d374dda62a",
};

function batch(seq, ops, cv) {
  return { epoch: HELLO.epoch, seq, normalizedFp: HELLO.normalizedFp, ops, cv };
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
