"""Canonical JSON, hashes and tokens for the write-plane scenarios (docs/design/decisions.md:
Tokens and canonical JSON).

Independent re-derivations, written from the spec text only (nothing here reads the
core):

- `jcs(v)`: RFC 8785 canonical JSON — object members sorted by their names' UTF-16
  code units (RFC 8785 §3.2.3), no whitespace, numbers and strings as ECMAScript
  `JSON.stringify` prints them (RFC 8785 §3.2.2; `lib.py` already spells those);
- `fnv1a32_hex(data)`: FNV-1a 32 (basis 0x811c9dc5, prime 0x01000193), 8 lowercase hex
  (docs/design/authority.md: Scope specs hash and canonical JSON) —
  `scope_specs_hash(specs)` runs it over the UTF-16 code units
  of JCS, one step per unit, as the JavaScript API server reads the text;
- `batch_hash(changes)`: FNV-1a 64, 16 lowercase hex, over the UTF-8 of `changes`
  written with object keys in byte order and every number as a float (`3.0`, `1e+16`,
  `0.0`), the layout the published room hashes (docs/compat.md: Flush body);
- `mint(...)`: the `rt1` lease token (docs/design/authority.md: Lease tokens) with Python's hmac /
  hashlib / base64.

Each helper is checked against published vectors below, so a slip fails generation.
"""

import base64
import hashlib
import hmac

from lib import js, js_num, js_str

# --------------------------------------------------------------------------------------
# RFC 8785


def _utf16_key(name):
    # Big-endian UTF-16 bytes compare exactly as the sequence of UTF-16 code units.
    return name.encode("utf-16-be")


def jcs(v):
    if isinstance(v, dict):
        names = sorted(v, key=_utf16_key)
        return "{" + ",".join(js_str(k) + ":" + jcs(v[k]) for k in names) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, float):
        return js_num(v)
    return js(v)


# RFC 8785 §3.2.3 sorting example (member names given as escapes there).
_sorted = jcs({"\u20ac": "Euro Sign", "\r": "Carriage Return",
               "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One",
               "\U0001f600": "Emoji: Grinning Face", "\u0080": "Control",
               "\u00f6": "Latin Small Letter O With Diaeresis"})
assert _sorted == (
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O '
    'With Diaeresis","\u20ac":"Euro Sign","\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew '
    'Letter Dalet With Dagesh"}'
), _sorted
# RFC 8785 §3.2.2.3 number examples.
for _x, _want in [(333333333.33333329, "333333333.3333333"), (1e30, "1e+30"), (4.50, "4.5"),
                  (2e-3, "0.002"), (0.000000000000000000000000001, "1e-27")]:
    assert jcs(_x) == _want, (_x, jcs(_x), _want)

# --------------------------------------------------------------------------------------
# FNV-1a 32 and scopeSpecsHash


def fnv1a32_hex(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return format(h, "08x")


# Published FNV-1a 32 test vectors (Fowler/Noll/Vo reference test suite).
assert fnv1a32_hex(b"") == "811c9dc5"
assert fnv1a32_hex(b"a") == "e40c292c"
assert fnv1a32_hex(b"foobar") == "bf9cf968"


def scope_specs_hash(specs):
    # One FNV step per UTF-16 code unit of the text (JavaScript's charCodeAt), not per
    # UTF-8 byte: the two differ on every non-ASCII character.
    units = jcs(specs).encode("utf-16-le")
    return fnv1a32_hex(int.from_bytes(units[i:i + 2], "little") for i in range(0, len(units), 2))


assert scope_specs_hash("\u00e9") == fnv1a32_hex([0x22, 0xE9, 0x22])
assert scope_specs_hash("\U0001f600") == fnv1a32_hex([0x22, 0xD83D, 0xDE00, 0x22])


# --------------------------------------------------------------------------------------
# batchHash


def fnv1a64_hex(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return format(h, "016x")


# Published FNV-1a 64 test vectors (Fowler/Noll/Vo reference test suite).
assert fnv1a64_hex(b"") == "cbf29ce484222325"
assert fnv1a64_hex(b"a") == "af63dc4c8601ec8c"
assert fnv1a64_hex(b"foobar") == "85944171f73967e8"


def float_num(x):
    """A number as a serializer that always marks a float writes it: the shortest
    round-trip digits (as JavaScript's), an integral value with `.0`, plain digits only
    while the decimal point falls within the first 16 digits, else exponent form
    (`1e+16`, `1e-6`); zero is `0.0` (`-0.0` when negative)."""
    x = float(x)
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    text = js_num(x)
    sign = "-" if text.startswith("-") else ""
    text = text.lstrip("-")
    # Back to digits and point position n from the JavaScript spelling.
    mant, _, exp = text.partition("e")
    ip, _, fp = mant.partition(".")
    n = len(ip) + (int(exp) if exp else 0)
    digits = (ip + fp).lstrip("0")
    if not ip.strip("0"):
        n = (int(exp) if exp else 0) - (len(fp) - len(fp.lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 16:
        return sign + digits + "0" * (n - k) + ".0"
    if 0 < n <= 16:
        return sign + digits[:n] + "." + digits[n:]
    if -5 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    return (sign + digits[0] + ("." + digits[1:] if k > 1 else "") + "e"
            + ("-" if e < 0 else "+") + str(abs(e)))


for _x, _want in [(3, "3.0"), (1e16, "1e+16"), (1e15, "1000000000000000.0"), (0.1, "0.1"),
                  (0.0001, "0.0001"), (0.00001, "0.00001"), (1e-6, "1e-6"), (-2.5, "-2.5"),
                  (-0.0, "-0.0"),
                  (0, "0.0"), (123.456, "123.456"), (1e21, "1e+21")]:
    assert float_num(_x) == _want, (_x, float_num(_x), _want)


def hash_layout(v):
    """The batch hash's text: object keys in byte order, numbers by float_num, strings
    and literals as JSON.stringify writes them."""
    if isinstance(v, dict):
        names = sorted(v, key=lambda k: k.encode("utf-8"))
        return "{" + ",".join(js_str(k) + ":" + hash_layout(v[k]) for k in names) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(hash_layout(x) for x in v) + "]"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float_num(v)
    return js(v)


def batch_hash(changes):
    return fnv1a64_hex(hash_layout(changes).encode("utf-8"))


# The layout of one change, written out: keys old < op < row < table.
assert hash_layout([{"table": "t", "op": "edit", "old": [1, "a"], "row": [2, None]}]) == (
    '[{"old":[1.0,"a"],"op":"edit","row":[2.0,null],"table":"t"}]')

# --------------------------------------------------------------------------------------
# rt1 tokens (docs/design/decisions.md: Tokens and canonical JSON)


def b64url(data):
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


assert [b64url(x) for x in (b"", b"f", b"fo", b"foo", b"foob", b"\xfb\xff")] == [
    "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "-_8"]  # RFC 4648 §10, url alphabet


def sign_segment(segment, secret):
    """`rt1.<segment>.<b64url(HMAC-SHA256(secret, "rt1.<segment>"))>`."""
    signed = "rt1." + segment
    mac = hmac.new(secret.encode("utf-8"), signed.encode("ascii"), hashlib.sha256).digest()
    return signed + "." + b64url(mac)


assert hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf8f01cfea")  # FIPS 180-2
# RFC 4231 test case 2.
assert hmac.new(b"Jefe", b"what do ya want for nothing?", hashlib.sha256).hexdigest() == (
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")


def sign_text(payload_text, secret):
    """Signs an arbitrary payload text (its UTF-8 bytes)."""
    return sign_segment(b64url(payload_text.encode("utf-8")), secret)


def payload(doc, ast, sub, kid, ttl, now, scopes_hash=None):
    """`JSON.stringify({v:1, doc, ast, sub, iat: now, exp: now + ttlMs, kid[, scopesHash]})`
    — an absent scopesHash is omitted, as JSON.stringify drops undefined."""
    p = {"v": 1, "doc": doc, "ast": ast, "sub": sub, "iat": now, "exp": now + ttl, "kid": kid}
    if scopes_hash is not None:
        p["scopesHash"] = scopes_hash
    return js(p)


def mint(doc, ast, sub, kid, key, ttl, now, scopes_hash=None):
    return sign_text(payload(doc, ast, sub, kid, ttl, now, scopes_hash), key)
