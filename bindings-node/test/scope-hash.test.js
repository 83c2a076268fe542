"use strict";
// scopeSpecsHash equals the published @rindle/room's on every input: the vectors in
// tests/vectors/scope-specs-hash.json (written from that package by
// test/support/scope-hash-vectors.mjs), and, when the package is installed (a
// devDependency), the live package itself on the same vectors and on seeded random spec
// sets full of non-ASCII text and awkward numbers.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { scopeSpecsHash } = require("../index.js");

const VECTORS_FILE = path.join(__dirname, "..", "..", "tests", "vectors", "scope-specs-hash.json");
const { vectors } = JSON.parse(fs.readFileSync(VECTORS_FILE, "utf8"));

/** The published package's `scopeSpecsHash`, or null when it is not installed. */
async function published() {
  try {
    return (await import("@rindle/room/token")).scopeSpecsHash;
  } catch {
    return null;
  }
}

test("the native scopeSpecsHash matches every committed vector", () => {
  assert.ok(vectors.length >= 30, `only ${vectors.length} vectors in ${VECTORS_FILE}`);
  for (const { name, specs, hash } of vectors) {
    assert.equal(scopeSpecsHash(JSON.parse(specs)), hash, `${name}: ${specs}`);
  }
});

test("the committed vectors are what the installed @rindle/room computes", async (t) => {
  const hash = await published();
  if (!hash) return t.skip("@rindle/room is not installed (npm ci installs it)");
  for (const { name, specs, hash: want } of vectors) {
    assert.equal(
      hash(JSON.parse(specs)),
      want,
      `${name}: the package disagrees with ${VECTORS_FILE}; regenerate it with ` +
        "node test/support/scope-hash-vectors.mjs",
    );
  }
});

/** A small deterministic PRNG (mulberry32), so a failure names a reproducible seed. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Characters from every width: ASCII, Latin-1, BMP CJK, private use, the BMP's top, astral
// (surrogate pairs), the characters JSON.stringify escapes, and lone surrogate halves
// (paired or not, depending on their neighbours).
const ALPHABET = [
  "a", "B", "_", "1", " ", "é", "ö", "ß", "€", "中", "文", "\uE000", "\uFB00", "\uFF61",
  "\uFFFF", "😀", "𝄞", "\u{10000}", "\u0000", "\u001f", "\n", '"', "\\", "\u2028",
  "\ud83d", "\ude00", "\udbff",
];
const NUMBERS = [
  0, -0, 1, -1, 1.5, 1e21, 1e-7, 1e-6, 0.1, 5e-324, 2 ** 53 + 2, -1.25e-7, 1e300, Infinity, NaN,
];

function randomSpecs(rand) {
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const text = () => Array.from({ length: Math.floor(rand() * 5) }, () => pick(ALPHABET)).join("");
  const value = (depth) => {
    const r = rand();
    if (depth > 2 || r < 0.35) return text();
    if (r < 0.55) return pick(NUMBERS);
    if (r < 0.6) return pick([true, false, null]);
    if (r < 0.75) return Array.from({ length: Math.floor(rand() * 3) }, () => value(depth + 1));
    const o = {};
    for (let i = Math.floor(rand() * 4); i > 0; i--) o[text()] = value(depth + 1);
    return o;
  };
  return Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
    table: text(),
    writable: { kind: "predicate", joinKeyCols: [text()] },
    footprintWhere: value(0),
  }));
}

test("the native scopeSpecsHash equals the live @rindle/room on random spec sets", async (t) => {
  const hash = await published();
  if (!hash) return t.skip("@rindle/room is not installed (npm ci installs it)");
  for (let seed = 1; seed <= 500; seed++) {
    const specs = randomSpecs(prng(seed));
    assert.equal(scopeSpecsHash(specs), hash(specs), `seed ${seed}: ${JSON.stringify(specs)}`);
  }
});
