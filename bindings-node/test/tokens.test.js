"use strict";
// Lease tokens across implementations: a small WebCrypto minter/verifier written here
// from the token format of docs/protocol.md (the way @rindle/room's token.ts signs, crypto.subtle only) and the
// native helpers must accept each other's tokens, and mint the same bytes.
//
// The token bytes (docs/design/decisions.md, "Tokens and canonical JSON"):
// `rt1.` + b64url(UTF-8 JSON payload) + `.` + b64url(HMAC-SHA256(UTF-8 secret,
// ASCII "rt1.<payload segment>")), base64url unpadded; payload
// {v:1, doc, ast, sub, iat, exp, kid, scopesHash?}. Verify: shape → payload → kid known
// → signature (constant time) → v = 1 → doc → exp > now.
const test = require("node:test");
const assert = require("node:assert/strict");
const { webcrypto } = require("node:crypto");

const { mintRoomToken, verifyRoomToken, scopeSpecsHash, RoomTokenError } =
  require("../index.js");

const subtle = (globalThis.crypto ?? webcrypto).subtle;
const utf8 = new TextEncoder();

function b64url(bytes) {
  return Buffer.from(bytes).toString("base64url");
}

function fromB64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  return new Uint8Array(Buffer.from(text, "base64url"));
}

function hmacKey(secret, usage) {
  return subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    usage,
  ]);
}

class Refused extends Error {
  constructor(reason) {
    super(`lease token refused: ${reason}`);
    this.reason = reason;
  }
}

async function webMint({ doc, ast, sub, kid, key, ttlMs, now, scopesHash }) {
  const payload = { v: 1, doc, ast, sub, iat: now, exp: now + ttlMs, kid };
  if (scopesHash !== undefined) payload.scopesHash = scopesHash;
  const signed = `rt1.${b64url(utf8.encode(JSON.stringify(payload)))}`;
  const mac = await subtle.sign("HMAC", await hmacKey(key, "sign"), utf8.encode(signed));
  return `${signed}.${b64url(new Uint8Array(mac))}`;
}

async function webVerify(token, { doc, keys, now }) {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== "rt1") throw new Refused("malformed");
  const body = fromB64url(parts[1]);
  const sig = fromB64url(parts[2]);
  if (!body || !sig) throw new Refused("malformed");
  let payload;
  try {
    payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw new Refused("malformed");
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new Refused("malformed");
  }
  const secret = Object.hasOwn(keys, payload.kid) ? keys[payload.kid] : undefined;
  if (typeof secret !== "string") throw new Refused("unknown key");
  const ok = await subtle.verify(
    "HMAC",
    await hmacKey(secret, "verify"),
    sig,
    utf8.encode(`rt1.${parts[1]}`),
  );
  if (!ok) throw new Refused("bad signature");
  if (payload.v !== 1) throw new Refused("unsupported version");
  if (payload.doc !== doc) throw new Refused("wrong document");
  if (!(payload.exp > now)) throw new Refused("expired");
  return payload;
}

const NOW = 1_767_225_600_000;
const KEYS = { k1: "secret-one", k2: "zwei ☃" };
const AST = {
  table: "slide",
  where: {
    type: "simple",
    op: "=",
    left: { type: "column", name: "deckId" },
    right: { type: "literal", value: "d1" },
  },
  orderBy: [["pos", "asc"]],
};
const SPECS = [{ table: "slide", writable: { kind: "predicate", joinKeyCols: ["deckId"] } }];

const MINTS = [
  { doc: "document/doc:d1", ast: AST, sub: "user:u1", kid: "k1", key: KEYS.k1, ttlMs: 300_000 },
  {
    doc: "dök ☃",
    ast: { table: "tag", limit: 3 },
    sub: "ü",
    kid: "k2",
    key: KEYS.k2,
    ttlMs: 1,
    scopesHash: scopeSpecsHash(SPECS),
  },
  { doc: "d", ast: null, sub: "", kid: "k1", key: KEYS.k1, ttlMs: 60_000.5 },
];

test("the native minter and the WebCrypto minter produce the same token", async () => {
  for (const opts of MINTS) {
    const native = await mintRoomToken({ ...opts, now: NOW });
    const web = await webMint({ ...opts, now: NOW });
    assert.equal(native, web, opts.doc);
  }
});

test("WebCrypto tokens verify natively, with the same payload", async () => {
  for (const opts of MINTS) {
    const token = await webMint({ ...opts, now: NOW });
    const payload = await verifyRoomToken(token, { doc: opts.doc, keys: KEYS, now: NOW });
    assert.deepEqual(payload, await webVerify(token, { doc: opts.doc, keys: KEYS, now: NOW }));
    assert.equal(payload.sub, opts.sub);
    assert.equal(payload.exp, NOW + opts.ttlMs);
    assert.equal(payload.scopesHash, opts.scopesHash);
  }
});

test("native tokens verify with WebCrypto", async () => {
  for (const opts of MINTS) {
    const token = await mintRoomToken({ ...opts, now: NOW });
    const payload = await webVerify(token, { doc: opts.doc, keys: KEYS, now: NOW });
    assert.deepEqual(payload.ast, opts.ast);
    assert.equal(payload.kid, opts.kid);
  }
});

test("mintRoomToken defaults now to Date.now()", async () => {
  const before = Date.now();
  const token = await mintRoomToken({ ...MINTS[0] });
  const after = Date.now();
  const payload = await webVerify(token, { doc: MINTS[0].doc, keys: KEYS, now: before });
  assert.ok(payload.iat >= before && payload.iat <= after);
  assert.ok(await verifyRoomToken(token, { doc: MINTS[0].doc, keys: KEYS }));
});

test("both sides refuse the same tampered tokens for the same reason", async () => {
  const good = await webMint({ ...MINTS[0], now: NOW });
  const [, body, sig] = good.split(".");
  const flip = (s) => (s[0] === "A" ? "B" : "A") + s.slice(1);
  const other = b64url(utf8.encode(JSON.stringify({ v: 2, doc: "x", kid: "k1" })));
  const cases = [
    ["rt2." + body + "." + sig, "malformed"],
    [`rt1.${body}`, "malformed"],
    [`rt1.${body}.${sig}.x`, "malformed"],
    [`rt1.${body}.${flip(sig)}`, "bad signature"],
    [`rt1.${other}.${sig}`, "bad signature"],
    [good, "wrong document", { doc: "elsewhere" }],
    [good, "expired", { now: NOW + 300_000 }],
    [good, "unknown key", { keys: { k2: KEYS.k2 } }],
  ];
  for (const [token, reason, over] of cases) {
    const opts = { doc: MINTS[0].doc, keys: KEYS, now: NOW, ...over };
    await assert.rejects(webVerify(token, opts), { reason }, `web: ${reason}`);
    await assert.rejects(
      verifyRoomToken(token, opts),
      (e) => e instanceof RoomTokenError && e.reason === reason,
      `native: ${reason}`,
    );
  }
  // exp - 1 still verifies on both sides (exp > now).
  const last = { doc: MINTS[0].doc, keys: KEYS, now: NOW + 299_999 };
  assert.ok(await webVerify(good, last));
  assert.ok(await verifyRoomToken(good, last));
});
