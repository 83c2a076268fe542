// The document the differential test plays with: four tables (sorted by name, as the
// upstream sends them; `tag` has a composite primary key), the value pools cells are
// drawn from, the relationships queries follow, and the `normalizedFp` of a table list.

/** Column kinds steer the value generator; the room itself has no column types. */
export const TABLES = [
  {
    name: "item",
    columns: ["id", "listId", "title", "done", "score"],
    kinds: ["int", "listId", "text", "bool", "num"],
    primaryKey: [0],
  },
  {
    name: "list",
    columns: ["id", "name", "owner"],
    kinds: ["listId", "text", "userId"],
    primaryKey: [0],
  },
  {
    name: "tag",
    columns: ["itemId", "label", "weight"],
    kinds: ["int", "label", "num"],
    primaryKey: [0, 1],
  },
  {
    name: "user",
    columns: ["id", "name"],
    kinds: ["userId", "text"],
    primaryKey: [0],
  },
];

export const TABLE = Object.fromEntries(TABLES.map((t) => [t.name, t]));

/** The hello's `tables` entry of a table (no generator-only fields). */
export function wireTable(t) {
  return { name: t.name, columns: t.columns.slice(), primaryKey: t.primaryKey.slice() };
}

/**
 * `normalizedFp`: FNV-1a 64 over a u32 (little-endian) table count, then per table the
 * name, a u32 column count, each column name, a u32 primary-key length and each primary
 * key column **by name** (texts are a u32 UTF-8 byte length and the bytes). The native
 * and the wasm room both accept exactly this encoding (the key by index is refused).
 */
export function normalizedFp(tables) {
  const MASK = (1n << 64n) - 1n;
  const PRIME = 0x100000001b3n;
  let h = 0xcbf29ce484222325n;
  const byte = (b) => {
    h = ((h ^ BigInt(b)) * PRIME) & MASK;
  };
  const u32 = (v) => {
    for (let i = 0; i < 4; i++) byte((v >>> (8 * i)) & 0xff);
  };
  const text = (s) => {
    const bytes = Buffer.from(String(s), "utf8");
    u32(bytes.length);
    for (const b of bytes) byte(b);
  };
  u32(tables.length);
  for (const t of tables) {
    text(t.name);
    u32(t.columns.length);
    for (const c of t.columns) text(c);
    u32(t.primaryKey.length);
    for (const i of t.primaryKey) text(t.columns[i]);
  }
  return h.toString(16).padStart(16, "0");
}

/** A hello over `tables` (defaults: the whole schema, valid fingerprint). */
export function hello(epoch, tables = TABLES) {
  const wire = tables.map(wireTable);
  return { epoch, comparatorVersion: 2, tables: wire, normalizedFp: normalizedFp(wire) };
}

export const FP = normalizedFp(TABLES.map(wireTable));

// Value pools. Small ranges make keys collide and predicates match.
export const TEXTS = ["", "a", "milk", "Milk", "b%c", "x_y", "é", "Zoë", "日本", "😀 ok", "naïve", "A"];
export const LABELS = ["a", "b", "urgent", "ß", "日"];
export const LIST_IDS = ["l1", "l2", "l3", "l4", "lé"];
export const USER_IDS = ["u1", "u2", "u3", "ü"];
export const NUMS = [0, 1, 2, 3, 1.5, -0.25, 2.5, 10, -3, 1e-7, 99.75, 1e21];
export const LIKE_PATTERNS = ["%", "m%", "%k", "_ilk", "%ï%", "b\\%c", "x_y", "日%", "", "%a%"];

/**
 * A cell of kind `kind`; with probability `wild` a cell of any kind (mixed types).
 * Primary-key cells (`key`) are NULL only rarely.
 */
export function cell(rng, kind, wild = 0.015, key = false) {
  if (rng.chance(wild)) kind = rng.pick(["int", "num", "text", "bool", "null"]);
  switch (kind) {
    case "int":
      return rng.chance(0.9) ? rng.int(1, 12) : rng.pick([0, -1, 2 ** 31, 9007199254740991]);
    case "num":
      return rng.chance(0.15) ? null : rng.pick(NUMS);
    case "text":
      return rng.chance(0.1) ? null : rng.pick(TEXTS);
    case "bool":
      return rng.chance(0.1) ? null : rng.chance(0.5);
    case "label":
      return rng.pick(LABELS);
    case "listId":
      return rng.chance(key ? 0.01 : 0.05) ? null : rng.pick(LIST_IDS);
    case "userId":
      return rng.chance(key ? 0.01 : 0.05) ? null : rng.pick(USER_IDS);
    case "null":
      return null;
    default:
      throw new Error(`unknown column kind ${kind}`);
  }
}

/** A full row of table `t`. Primary-key cells are never wild (keys stay in range). */
export function row(rng, t, wild = 0.015) {
  return t.columns.map((_, i) => {
    const key = t.primaryKey.includes(i);
    return cell(rng, t.kinds[i], key ? 0 : wild, key);
  });
}

/** The primary-key cells of `r` in `t`. */
export function pkOf(t, r) {
  return t.primaryKey.map((i) => r[i]);
}

/** A stable text key for (table, pk cells). */
export function keyOf(tableName, pk) {
  return `${tableName}\u0000${JSON.stringify(pk)}`;
}

/**
 * The correlations queries may follow: `parentField` of `from` equals `childField` of
 * `to`.
 */
export const LINKS = [
  { from: "list", to: "item", parentField: ["id"], childField: ["listId"] },
  { from: "item", to: "list", parentField: ["listId"], childField: ["id"] },
  { from: "item", to: "tag", parentField: ["id"], childField: ["itemId"] },
  { from: "tag", to: "item", parentField: ["itemId"], childField: ["id"] },
  { from: "list", to: "user", parentField: ["owner"], childField: ["id"] },
  { from: "user", to: "list", parentField: ["id"], childField: ["owner"] },
  { from: "tag", to: "tag", parentField: ["itemId"], childField: ["itemId"] },
];
