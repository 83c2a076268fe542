"""Scenarios: room lease tokens and the scope fingerprint (docs/protocol.md, lease tokens;
docs/design/authority.md: Lease tokens, Scope specs hash and canonical JSON; the published
API: mintRoomToken / verifyRoomToken / scopeSpecsHash).

Every token text is minted here with Python's hmac/hashlib/base64 (canon.mint):
`rt1.` + b64url(UTF-8 of JSON.stringify({v:1, doc, ast, sub, iat: now, exp: now + ttlMs,
kid[, scopesHash]})) + `.` + b64url(HMAC-SHA256(UTF-8 secret, "rt1.<payload segment>")),
unpadded. verifyRoomToken returns the payload it verified: JSON.stringify of the parsed
payload, i.e. compact, member order as the token carries it. Refusals are checked in
the verification order — shape, payload decode, kid known, signature, v = 1, doc,
exp > now — each with its exact `lease token refused: <reason>` text. These static calls need no room.
"""

import json

from canon import b64url, jcs, mint, payload, scope_specs_hash, sign_segment, sign_text
from lib import Scenario, cmp, js

DOC = "document/doc:d1"
AST = {"table": "slide", "where": cmp("deckId", "=", "d1"), "orderBy": [["pos", "asc"]]}
NOW = 1767225600000
TTL = 300000
RING = {"k1": "secret-one", "k2": "zwei \u2603"}
REFUSED = "lease token refused: "


def opts(doc=DOC, keys=None, now=NOW):
    return {"doc": doc, "keys": RING if keys is None else keys, "now": now}


def tokens_mint_and_verify():
    s = Scenario(
        "tokens_mint_and_verify",
        "Lease tokens: mintRoomToken is deterministic given its options — the payload "
        "JSON.stringify({v:1, doc, ast, sub, iat: now, exp: now + ttlMs, kid, "
        "scopesHash?}) in that member order whatever the options' order, scopesHash "
        "omitted when not given, non-ASCII kept raw and encoded as UTF-8, the secret used "
        "as UTF-8 bytes, base64url unpadded. verifyRoomToken returns the payload (key ring "
        "lookup by kid) up to exp - 1 and refuses at exp (exp > now). "
        "A token from another minter with whitespace and its own member order verifies: "
        "the MAC covers the transmitted text, never a re-serialization; the "
        "returned payload is its compact JSON.stringify.",
        [],
    )
    ast2 = {"table": "deck", "where": cmp("rank", ">", 2.5), "limit": 10}
    t1 = mint(DOC, AST, "user:u1", "k1", "secret-one", TTL, NOW, "0a1b2c3d")
    p1 = payload(DOC, AST, "user:u1", "k1", TTL, NOW, "0a1b2c3d")
    assert p1.startswith('{"v":1,"doc":"document/doc:d1","ast":{"table":"slide"')
    s.ok("mintRoomToken", {"doc": DOC, "ast": AST, "sub": "user:u1", "kid": "k1",
                           "key": "secret-one", "ttlMs": TTL, "now": NOW,
                           "scopesHash": "0a1b2c3d"}, expect=js(t1))
    s.ok("mintRoomToken", {"scopesHash": "0a1b2c3d", "now": NOW, "ttlMs": TTL,
                           "key": "secret-one", "kid": "k1", "sub": "user:u1", "ast": AST,
                           "doc": DOC}, expect=js(t1))
    s.ok("verifyRoomToken", t1, opts(), expect=p1)
    s.ok("verifyRoomToken", t1, opts(now=NOW + TTL - 1), expect=p1)
    s.err("verifyRoomToken", t1, opts(now=NOW + TTL), error=REFUSED + "expired")
    sub2 = "us\u00e9r \u00f1 \U0001f600"
    doc2 = "document/d\u00f6c"
    t2 = mint(doc2, ast2, sub2, "k2", RING["k2"], 60000, 1700000000000)
    p2 = payload(doc2, ast2, sub2, "k2", 60000, 1700000000000)
    assert "scopesHash" not in p2
    s.ok("mintRoomToken", {"doc": doc2, "ast": ast2, "sub": sub2, "kid": "k2",
                           "key": RING["k2"], "ttlMs": 60000, "now": 1700000000000},
         expect=js(t2))
    s.ok("verifyRoomToken", t2, opts(doc=doc2, now=1700000059999), expect=p2)
    # Another minter's payload text: spaces, its own member order.
    foreign = ('{ "kid": "k1", "exp": 1767225900000, "iat": 1767225600000, "v": 1, '
               '"doc": "document/doc:d1", "sub": "user:u9", "ast": {"table": "deck"} }')
    t3 = sign_text(foreign, "secret-one")
    s.ok("verifyRoomToken", t3, opts(), expect=js(json.loads(foreign)))
    # A repeated member: JSON.parse keeps the first position and the last value, so the
    # kid is k1 and the doc this room's.
    dup = ('{"v":1,"doc":"document/other","doc":"document/doc:d1","ast":null,"sub":"u",'
           '"iat":1767225600000,"exp":1767225900000,"kid":"k9","kid":"k1"}')
    s.ok("verifyRoomToken", sign_text(dup, "secret-one"), opts(),
         expect='{"v":1,"doc":"document/doc:d1","ast":null,"sub":"u","iat":1767225600000,'
                '"exp":1767225900000,"kid":"k1"}')
    # ast null is kept; fractional times are plain JS numbers (iat 1.5, exp 1.75).
    t4 = mint("d", None, "u", "k1", "secret-one", 0.25, 1.5)
    assert payload("d", None, "u", "k1", 0.25, 1.5) == (
        '{"v":1,"doc":"d","ast":null,"sub":"u","iat":1.5,"exp":1.75,"kid":"k1"}')
    s.ok("mintRoomToken", {"doc": "d", "ast": None, "sub": "u", "kid": "k1",
                           "key": "secret-one", "ttlMs": 0.25, "now": 1.5}, expect=js(t4))
    s.ok("verifyRoomToken", t4, opts(doc="d", now=1.7),
         expect=payload("d", None, "u", "k1", 0.25, 1.5))
    s.err("verifyRoomToken", t4, opts(doc="d", now=1.75), error=REFUSED + "expired")
    return s


def tokens_mint_undefined_ast():
    s = Scenario(
        "tokens_mint_undefined_ast",
        "mintRoomToken with no `ast` option: the payload is JSON.stringify({v:1, doc, ast, "
        "sub, iat, exp, kid}) and JSON.stringify drops a member "
        "whose value is undefined, so the payload has no ast member at all (not ast:null). "
        "verifyRoomToken returns that payload as minted.",
        [],
    )
    text = '{"v":1,"doc":"d","sub":"u","iat":1000,"exp":2000,"kid":"k1"}'
    token = sign_text(text, "secret-one")
    s.ok("mintRoomToken", {"doc": "d", "sub": "u", "kid": "k1", "key": "secret-one",
                           "ttlMs": 1000, "now": 1000}, expect=js(token))
    s.ok("verifyRoomToken", token, opts(doc="d", now=1500), expect=text)
    return s


def tokens_refusals():
    s = Scenario(
        "tokens_refusals",
        "Verification refusals, each with its exact text and in the verification order (shape -> "
        "payload decode -> kid known -> signature -> v = 1 -> doc -> exp > now): "
        "malformed (empty, fewer or more than three segments, prefix not rt1, payload not "
        "base64url / not UTF-8 / not JSON / not an object, no string kid, a mistyped doc "
        "(decisions-local)); unknown key (also with a garbage signature: the kid is looked "
        "up first, never 'try every key'); bad signature (wrong secret, tampered payload, "
        "truncated MAC, ring holding another secret, and before v is read); unsupported "
        "version (v 2, v \"1\", no v — decisions-local; before doc is compared); wrong "
        "document (before expiry); expired (exp = now and exp < now).",
        [],
    )
    good = mint(DOC, AST, "user:u1", "k1", "secret-one", TTL, NOW)
    _, seg, sig = good.split(".")

    def claims(**over):
        p = {"v": 1, "doc": DOC, "ast": AST, "sub": "user:u1", "iat": NOW,
             "exp": NOW + TTL, "kid": "k1"}
        for k, v in over.items():
            if v is DROP:
                del p[k]
            else:
                p[k] = v
        return js(p)

    def signed(secret="secret-one", **over):
        return sign_text(claims(**over), secret)

    def refuse(token, reason, **o):
        s.err("verifyRoomToken", token, opts(**o), error=REFUSED + reason)

    s.ok("verifyRoomToken", good, opts(), expect=claims())
    for bad in ["", "rt1", "rt1." + seg, "rt2." + seg + "." + sig, good + ".x",
                "rt1..", "rt1.@@@." + sig,
                sign_segment(b64url(b"\xff\xfe"), "secret-one"),
                sign_text("not json", "secret-one"),
                sign_text("[1,2]", "secret-one"),
                signed(kid=DROP), signed(kid=7), signed(doc=5)]:
        refuse(bad, "malformed")
    refuse(signed(kid="k9"), "unknown key")
    refuse("rt1." + b64url(claims(kid="k9").encode()) + ".AAAA", "unknown key")
    refuse(signed(secret="wrong"), "bad signature")
    tampered = "rt1." + b64url(claims(sub="user:admin").encode()) + "." + sig
    refuse(tampered, "bad signature")
    refuse("rt1." + seg + "." + sig[:-4], "bad signature")
    refuse(good, "bad signature", keys={"k1": "secret-two"})
    refuse(signed(secret="wrong", v=2), "bad signature")
    refuse(signed(v=2), "unsupported version")
    refuse(signed(v="1"), "unsupported version")
    refuse(signed(v=DROP), "unsupported version")
    refuse(signed(v=2, doc="document/other"), "unsupported version")
    refuse(good, "wrong document", doc="document/doc:d2")
    refuse(good, "wrong document", doc="document/doc:d2", now=NOW + TTL + 1)
    refuse(good, "expired", now=NOW + TTL)
    refuse(good, "expired", now=NOW + TTL + 60000)
    s.ok("verifyRoomToken", good, opts(now=NOW + TTL - 1), expect=claims())
    return s


class _Drop:
    pass


DROP = _Drop()


def scope_specs_hash_scenario():
    s = Scenario(
        "scope_specs_hash",
        "scopeSpecsHash(specs) = FNV-1a-32 over the UTF-16 code units of RFC 8785 JCS(specs) "
        "(one step per unit, as JavaScript reads the text: \u00e9 is one step, \U0001f600 two), "
        "8 lowercase hex: insensitive to object member order at every depth ("
        "the full deck specs in compiler order vs reversed) and to whitespace "
        "(raw text), sensitive to array order; JCS sorts member names by UTF-16 code units "
        "(a < \u00e9 < \U0001f600 < \uff61: the astral name's high surrogate sorts before "
        "U+FF61), prints numbers as JSON.stringify (1.0 -> 1, 1e21 -> 1e+21, -0 -> 0) and "
        "strings with JSON.stringify escapes (\\u0001).",
        [],
    )
    a = [{"table": "issue", "writable": {"kind": "predicate", "joinKeyCols": []}}]
    b = [{"writable": {"joinKeyCols": [], "kind": "predicate"}, "table": "issue"}]
    assert jcs(a) == jcs(b) == (
        '[{"table":"issue","writable":{"joinKeyCols":[],"kind":"predicate"}}]')
    h = scope_specs_hash(a)
    s.ok("scopeSpecsHash", a, expect=js(h))
    s.ok("scopeSpecsHash", b, expect=js(h))
    s.ok("scopeSpecsHash", {"$text": json.dumps(b, indent=2)}, expect=js(h))
    from wlib import SPECS

    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    h2 = scope_specs_hash(SPECS)
    s.ok("scopeSpecsHash", SPECS, expect=js(h2))
    s.ok("scopeSpecsHash", reverse(SPECS), expect=js(h2))
    h3 = scope_specs_hash(list(reversed(SPECS)))
    assert h3 != h2
    s.ok("scopeSpecsHash", list(reversed(SPECS)), expect=js(h3))
    s.ok("scopeSpecsHash", [], expect=js(scope_specs_hash([])))
    odd = [{"table": "t",
            "meta": {"\uff61": 1, "\U0001f600": 2, "\u00e9": 3, "a": "\u00f1\u0001"},
            "n": [1.0, 1e21, 0.5, -0.0, -1.25e-7]}]
    text = jcs(odd)
    assert text == ('[{"meta":{"a":"\u00f1\\u0001","\u00e9":3,"\U0001f600":2,"\uff61":1},'
                    '"n":[1,1e+21,0.5,0,-1.25e-7],"table":"t"}]'), text
    s.ok("scopeSpecsHash", odd, expect=js(scope_specs_hash(odd)))
    return s


def scenarios():
    return [
        tokens_mint_and_verify(),
        tokens_mint_undefined_ast(),
        tokens_refusals(),
        scope_specs_hash_scenario(),
    ]
