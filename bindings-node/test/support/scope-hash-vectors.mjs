// Writes tests/vectors/scope-specs-hash.json: `scopeSpecsHash` values computed by the
// published `@rindle/room` package (a devDependency), for spec sets chosen where a
// re-implementation can go wrong: non-ASCII literals (one UTF-16 unit or two), object
// keys whose UTF-16 order differs from their code point and UTF-8 byte order, numbers
// JSON.stringify spells its own way, escapes, nesting, and raw JSON texts (whitespace,
// repeated keys, escaped characters). The Rust core and the Node addon check every
// vector (room-core/src/token/tests.rs, test/scope-hash.test.js).
//
// Regenerate after upgrading @rindle/room, from bindings-node/:
//   node test/support/scope-hash-vectors.mjs
// It refuses to write when the package is missing, and `--check` compares instead of
// writing (exit 1 on any difference).
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const OUT = join(here, "..", "..", "..", "tests", "vectors", "scope-specs-hash.json");

let published;
try {
  published = await import("@rindle/room/token");
} catch (err) {
  console.error(
    `@rindle/room is not installed (${err.message}): run \`npm ci\` in bindings-node/ first`,
  );
  process.exit(1);
}
const require = createRequire(import.meta.url);
const version = require("@rindle/room/package.json").version;

const literal = (column, value) => ({
  type: "simple",
  op: "=",
  left: { type: "column", name: column },
  right: { type: "literal", value },
});
const spec = (table, value) => ({
  table,
  writable: { kind: "predicate", where: literal("title", value), joinKeyCols: ["deckId"] },
  footprintWhere: { type: "or", conditions: [literal("owner", value), literal("id", 1)] },
});

/** Spec sets as JavaScript values: the vector's text is their JSON.stringify. */
const VALUES = [
  ["empty", []],
  ["ascii", [{ table: "issue", writable: { kind: "predicate", joinKeyCols: [] } }]],
  ["latin-1 literal", [spec("issue", "café")]],
  ["cjk literal", [spec("issue", "中文")]],
  ["astral literal (a surrogate pair)", [spec("issue", "😀")]],
  ["mixed literal", [spec("issue", "naïve 中文 😀 𝄞 ok")]],
  ["non-ASCII table and column names", [spec("é", "x"), spec("中文", "y")]],
  ["private use vs astral key", [{ "\uE000": 1, "\u{1F600}": 2 }]],
  ["astral vs private use key", [{ "\u{1F600}": 2, "\uE000": 1 }]],
  ["U+FB00 vs astral key", [{ "\uFB00": 1, "😀": 2 }]],
  ["U+FF61 vs U+10000 key", [{ "\uFF61": 1, "\u{10000}": 2 }]],
  ["keys across scripts", [{ a: 1, B: 2, _: 3, é: 4, ö: 5, "€": 6, 中: 7, "😀": 8, "": 9 }]],
  ["integer-like keys", [{ 10: "a", 2: "b", 1: "c", "-1": "d", "01": "e" }]],
  ["prefix keys", [{ ab: 1, a: 2, aa: 3, "a\u0000": 4 }]],
  ["numbers", [{ n: [1.5, 1e21, -0, 0, 1e-7, 1e-6, 100, 0.1, -1.25e-7, 4.35, 1e20] }]],
  [
    "number extremes",
    [{ n: [5e-324, 1.7976931348623157e308, 2 ** 53, 2 ** 53 + 2, 0.1 + 0.2, 123e-20, -1e308] }],
  ],
  ["control and escaped characters", [{ s: "\u0000\u0001\u001f\b\f\n\r\t\"\\/" }]],
  ["characters JSON.stringify leaves alone", [{ s: "\u007f\u0080\u2028\u2029\uFEFF\uFFFF" }]],
  ["non-ASCII keys in nested objects", [{ t: { "ü": { "😀": [{ z: 1, "é": 2 }] }, a: null } }]],
  ["booleans, null, nested arrays", [{ x: [true, false, null, [[], [{}]], { "": [] }] }]],
  [
    "a deck profile",
    [
      spec("deck", "d1"),
      { table: "member", writable: { kind: "none" }, footprintWhere: literal("name", "Zoë") },
      { table: "tag", writable: { kind: "predicate", joinKeyCols: [] } },
    ],
  ],
  ["unpaired surrogates", [{ s: ["\ud800", "\udc00", "a\ud83d", "\ude00b", "\ud83d\ud83d\ude00"] }]],
  ["unpaired surrogate keys", [{ "\ud800": 1, "\uE000": 2, "😀": 3, "\udfff": 4, "\ud7ff": 5 }]],
  ["a surrogate pair split by another unit", [{ s: "\ud83dx\ude00" }]],
  ["Infinity and NaN (JSON.stringify writes null)", [{ n: [Infinity, -Infinity, NaN] }]],
  ["a top-level object", { table: "issue", "ß": "straße" }],
  ["a top-level string", "中文😀"],
  ["a top-level number", 1e21],
  ["a top-level null", null],
];

/** Raw JSON texts: the published hash is taken of JSON.parse(text). */
const TEXTS = [
  ["whitespace", ' [ { "b" : 1 ,\n\t"a" : [ 2 , 3 ] } ] '],
  ["a repeated key keeps its last value", '[{"a":1,"b":2,"a":3}]'],
  ["__proto__ as an own key", '[{"__proto__":{"x":1},"a":"é"}]'],
  ["escaped non-ASCII equals raw", '["\\u00e9\\u4e2d\\ud83d\\ude00"]'],
  ["escaped key", '[{"\\ud83d\\ude00":1,"\\ue000":2}]'],
  ["number spellings", "[1E21, -0, -0.0, 1.50, 0.1e1, 1e-7, 100e-2, 5E-324]"],
  ["escaped solidus and controls", '["\\/\\u0000\\u001F\\b"]'],
  ["unpaired surrogate escapes", '[{"\\uD800":"\\udc00","k":"x\\ud83d"}]'],
  ["numbers past the double range", "[1e400, -1e400, 1e-400]"],
  ["nested 200 levels", "[".repeat(200) + '"é"' + "]".repeat(200)],
];

const vectors = [];
for (const [name, value] of VALUES) {
  const text = JSON.stringify(value);
  const hash = published.scopeSpecsHash(value);
  const again = published.scopeSpecsHash(JSON.parse(text));
  if (hash !== again) {
    throw new Error(`${name}: the value and its JSON text hash differently (${hash}, ${again})`);
  }
  vectors.push({ name, specs: text, hash });
}
for (const [name, text] of TEXTS) {
  vectors.push({ name, specs: text, hash: published.scopeSpecsHash(JSON.parse(text)) });
}

const body = {
  about:
    "scopeSpecsHash(JSON.parse(specs)) as the published @rindle/room computes it; " +
    "written by bindings-node/test/support/scope-hash-vectors.mjs",
  package: `@rindle/room@${version}`,
  vectors,
};
const text = JSON.stringify(body, null, 2) + "\n";
if (process.argv.includes("--check")) {
  const committed = readFileSync(OUT, "utf8");
  if (committed !== text) {
    console.error(`${OUT} differs from what @rindle/room@${version} computes: regenerate it`);
    process.exit(1);
  }
  console.log(`${OUT}: ${vectors.length} vectors, up to date`);
} else {
  writeFileSync(OUT, text);
  console.log(`wrote ${vectors.length} vectors to ${OUT}`);
}
