"""Helpers for writing conformance scenarios (see ../README.md).

Nothing here runs the room. Expected outputs are composed from the spec by hand; these
helpers only spell JSON the way JavaScript's JSON.stringify does (docs/protocol.md, "Numbers"), compute
fingerprints, and check that hand-written op lists are in op order.
"""

import json
import os

# --------------------------------------------------------------------------------------
# FNV-1a 64 and normalizedFp 

MASK = (1 << 64) - 1
OFFSET = 0xCBF29CE484222325
PRIME = 0x00000100000001B3


class Fnv64:
    def __init__(self):
        self.h = OFFSET

    def bytes(self, data):
        for b in data:
            self.h = ((self.h ^ b) * PRIME) & MASK

    def u32(self, v):
        self.bytes(v.to_bytes(4, "little"))

    def text(self, s):
        raw = s.encode("utf-8")
        self.u32(len(raw))
        self.bytes(raw)

    def hex(self):
        return format(self.h, "016x")


def normalized_fp(tables):
    """normalizedFp over `tables` in the order given; PK hashed by column name."""
    f = Fnv64()
    f.u32(len(tables))
    for t in tables:
        f.text(t["name"])
        f.u32(len(t["columns"]))
        for c in t["columns"]:
            f.text(c)
        f.u32(len(t["primaryKey"]))
        for i in t["primaryKey"]:
            f.text(t["columns"][i])
    return f.hex()


def _cross_check_fp():
    """The hello fingerprint's worked values (docs/protocol.md) must come out of ours."""
    note = {"name": "note", "columns": ["id", "body"], "primaryKey": [0]}
    acl = {"name": "acl", "columns": ["id", "principal"], "primaryKey": [0]}
    table = [
        ([], "4d25767f9dce13f5"),
        ([note], "d0ffe1b66912a02b"),
        ([note, acl], "9b2818472a17be7f"),
        ([acl, note], "7e03c732f8965727"),
        ([{"name": "t", "columns": ["a", "b", "c"], "primaryKey": [0, 1]}], "c9e1cd747b2c220e"),
        ([{"name": "t", "columns": ["a", "b", "c"], "primaryKey": [1, 0]}], "4d7c6430abf59f10"),
    ]
    for tables, want in table:
        assert normalized_fp(tables) == want, (tables, want)


_cross_check_fp()

# --------------------------------------------------------------------------------------
# JSON.stringify (docs/design/decisions.md: Values and JSON numbers)


class Raw(str):
    """Text spliced into the output verbatim (hand-written number spellings)."""


def js_str(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif o < 0x20:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def js_num(x):
    """ECMAScript Number::toString for a double (shortest round-trip digits)."""
    if isinstance(x, int):
        x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))
    mant, _, exp = r.partition("e")
    exp = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    # value = 0.<digits> x 10^n
    if ip.strip("0"):
        n = len(ip.lstrip("0")) + exp
    else:
        n = exp - (len(fp) - len(fp.lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("-" if e < 0 else "+")
        body += str(abs(e))
    return sign + body


def js(v):
    """JSON.stringify(v) for None/bool/int/float/str/list/dict (insertion order)/Raw."""
    if isinstance(v, Raw):
        return str(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        assert abs(v) <= 2**53 - 1, "integers beyond 2^53 are not exact in JS; use Raw"
        return str(v)
    if isinstance(v, float):
        return js_num(v)
    if isinstance(v, str):
        return js_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(js(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(js_str(k) + ":" + js(x) for k, x in v.items()) + "}"
    raise TypeError(type(v))


for _x, _want in [
    (5.0, "5"), (-0.0, "0"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (0.1, "0.1"),
    (1e-7, "1e-7"), (0.000001, "0.000001"), (1e20, "100000000000000000000"),
    (123456789012345680000.0, "123456789012345680000"), (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (-1.25, "-1.25"), (2.5e25, "2.5e+25"),
    (123.456, "123.456"), (0.001, "0.001"), (100.0, "100"),
]:
    assert js_num(_x) == _want, (_x, js_num(_x), _want)

# --------------------------------------------------------------------------------------
# The comparator (docs/design/wire.md: The value comparator) — only to check
# hand-ordered op lists


def _rank(v):
    if isinstance(v, Raw):
        return (3, float(v))
    if v is None:
        return (1,)
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, (int, float)):
        return (3, float(v))
    if isinstance(v, str):
        return (4, v.encode("utf-8"))
    raise TypeError(v)


def op_key(op, catalog):
    t = catalog[op["table"]]
    row = op.get("row") or op.get("new")
    return (op["table"].encode("utf-8"), tuple(_rank(row[i]) for i in t["primaryKey"]))


def check_d5(ops, catalog):
    keys = [op_key(o, catalog) for o in ops]
    assert keys == sorted(keys), "ops not in op order: %r" % (ops,)
    assert len(set(keys)) == len(keys), "two ops on one key: %r" % (ops,)


# --------------------------------------------------------------------------------------
# Schemas, upstream frames, expected outputs


def T(name, columns, pk=(0,)):
    return {"name": name, "columns": list(columns), "primaryKey": list(pk)}


def by_name(tables):
    """Tables sorted by name in byte order, the order a hello lists them in
    (docs/protocol.md: `hello.tables`; docs/compat.md: Hello)."""
    return sorted(tables, key=lambda t: t["name"].encode("utf-8"))


def project(table, keep):
    """`table` cut to the column indices `keep`, in table order (docs/compat.md:
    select): what a level with a `select` lists in the hello. Its primary key indices
    follow the columns that moved."""
    keep = sorted(set(keep))
    return T(table["name"], [table["columns"][i] for i in keep],
             [keep.index(i) for i in table["primaryKey"]])


def level_columns(table, level, child_side=()):
    """The columns a level with a `select` keeps: the primary key, the selected
    columns, and every column the level reads — its filter (a subquery's parent side
    too), its sort, its `start`, the parent side of its related children, and
    `child_side`, the child side of the correlation that reached it."""
    names = list(level.get("select") or []) + list(child_side)

    def reads(w):
        if w is None:
            return
        if w["type"] == "simple":
            for side in (w["left"], w["right"]):
                if side["type"] == "column":
                    names.append(side["name"])
        elif w["type"] in ("and", "or"):
            for c in w["conditions"]:
                reads(c)
        elif w["type"] == "correlatedSubquery":
            names.extend(w["related"]["correlation"]["parentField"])

    reads(level.get("where"))
    names += [f for f, _ in level.get("orderBy") or []]
    names += list((level.get("start") or {}).get("row", {}))
    for r in level.get("related") or []:
        names += r["correlation"]["parentField"]
    cols = table["columns"]
    return sorted(set(table["primaryKey"]) | {cols.index(n) for n in names})


def cut(row, keep):
    """A row cut to the column indices `keep` (ascending)."""
    return [row[i] for i in sorted(set(keep))]


def hello(tables, epoch=1):
    """The upstream hello over `tables`, which must already be in hello order (by name);
    a hello in another order is spelled by hand where a scenario needs one."""
    assert list(tables) == by_name(tables), [t["name"] for t in tables]
    return {
        "epoch": epoch,
        "comparatorVersion": 2,
        "tables": tables,
        "normalizedFp": normalized_fp(tables),
    }


def add(table, row):
    return {"table": table, "op": "add", "row": row}


def rem(table, row):
    return {"table": table, "op": "remove", "row": row}


def edit(table, old, new):
    return {"table": table, "op": "edit", "old": old, "new": new}


def snap_result(rows):
    return '{"applied":"snapshot","rows":%d}' % rows


def live_result(ops):
    return '{"applied":"live","ops":%d}' % ops


DUPLICATE = '{"applied":"duplicate"}'


def stale_result(expected, got):
    return '{"applied":"staleEpoch","expected":%d,"got":%d}' % (expected, got)


# --------------------------------------------------------------------------------------
# The queryKey. Its format is NOT fixed by the spec (the published API only says identical queries
# share a `QueryKey`); the room defines it as the FNV-1a 64 hex of the query's canonical
# text (room-core/src/canonical.rs). This is an independent re-derivation of that
# documented form for the AST subset the scenarios use.


def _canon_lit(v):
    if isinstance(v, Raw):
        return _canon_lit(float(v))
    if v is None or isinstance(v, bool):
        return js(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == int(v) and -(2**63) <= v < 2**63:
            return str(int(v))
        return js_num(v)
    if isinstance(v, str):
        return js_str(v)
    if isinstance(v, list):
        return "[" + ",".join(_canon_lit(x) for x in v) + "]"
    raise TypeError(v)


def _names(cols, table):
    return "[" + ",".join(js_str(table["columns"][c]) for c in cols) + "]"


def _link(corr, parent, child):
    p = [parent["columns"].index(c) for c in corr["parentField"]]
    c = [child["columns"].index(x) for x in corr["childField"]]
    return '"parentField":' + _names(p, parent) + ',"childField":' + _names(c, child)


EMPTY_GROUP = '{"and":[]}'


def _canon_cond(w, table, cat):
    kind = w["type"]
    if kind == "simple":
        if w["left"]["type"] == "literal":
            # A literal on the left folds to a constant; the
            # scenarios only fold `=` between two numbers.
            assert w["op"] == "=" and w["right"]["type"] == "literal"
            same = w["left"]["value"] == w["right"]["value"]
            return '{"const":%s}' % ("true" if same else "false")
        col = table["columns"].index(w["left"]["name"])
        return (
            '{"col":' + _names([col], table) + ',"op":' + js_str(w["op"]) + ',"lit":'
            + _canon_lit(w["right"].get("value")) + "}"
        )
    if kind in ("and", "or"):
        # Same-op nesting splices; an empty group is no condition at all and an
        # enclosing group drops it (`or(x, and[])` is `x`), as the published room reads
        # it; a group left empty is itself that empty group.
        items = []
        for c in w["conditions"]:
            text = _canon_cond(c, table, cat)
            prefix = '{"%s":[' % kind
            if text == EMPTY_GROUP:
                continue
            if text.startswith(prefix):
                items.extend(_split_top(text[len(prefix):-2]))
            else:
                items.append(text)
        if not items:
            return EMPTY_GROUP
        if len(items) == 1:
            return items[0]
        return '{"%s":[' % kind + ",".join(items) + "]}"
    if kind == "correlatedSubquery":
        rel = w["related"]
        if rel["subquery"].get("limit") == 0:
            # A subquery limited to no rows joins nothing: EXISTS never holds, NOT
            # EXISTS always does.
            return '{"const":%s}' % ("true" if w["op"] == "NOT EXISTS" else "false")
        child = cat[rel["subquery"]["table"]]
        tag = "notExists" if w["op"] == "NOT EXISTS" else "exists"
        flip = "true" if w.get("flip") else "false"
        perm = "true" if rel.get("system") == "permissions" else "false"
        return (
            '{"%s":{' % tag + _link(rel["correlation"], table, child)
            + ',"flip":' + flip + ',"permissions":' + perm + ","
            + '"query":' + canon_query(rel["subquery"], cat, exists=True) + "}}"
        )
    raise ValueError(kind)


def _split_top(s):
    """Splits a comma-separated list of JSON objects at depth 0."""
    out, depth, start, in_str, esc = [], 0, 0, False, False
    for i, ch in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(s[start:i])
            start = i + 1
    if s:
        out.append(s[start:])
    return out


def canon_query(ast, cat, exists=False):
    t = cat[ast["table"]]
    cols = t["columns"]
    out = '{"table":' + js_str(t["name"])
    if ast.get("where") is not None:
        out += ',"where":' + _canon_cond(ast["where"], t, cat)
    order = []
    for field, d in ast.get("orderBy") or []:
        c = cols.index(field)
        if c not in [x for x, _ in order]:
            order.append((c, d == "desc"))
    for pk in t["primaryKey"]:
        if pk not in [x for x, _ in order]:
            order.append((pk, False))
    out += ',"orderBy":[' + ",".join(
        "[" + js_str(cols[c]) + (',"desc"]' if desc else ',"asc"]') for c, desc in order
    ) + "]"
    start = ast.get("start")
    if start is not None:
        named = sorted((cols.index(k), v) for k, v in start["row"].items())
        out += ',"start":{"row":{' + ",".join(
            js_str(cols[c]) + ":" + js(v) for c, v in named
        ) + '},"exclusive":' + ("true" if start["exclusive"] else "false") + "}"
    if ast.get("limit") is not None and not exists:
        out += ',"limit":%d' % ast["limit"]
    if ast.get("select") is not None:
        # The named columns, in table order, each once.
        picked = sorted({cols.index(c) for c in ast["select"]})
        out += ',"select":' + _names(picked, t)
    related = []
    for r in ast.get("related") or []:
        related = [x for x in related if x["subquery"]["alias"] != r["subquery"]["alias"]]
        related.append(r)
    if related:
        parts = []
        for r in related:
            child = cat[r["subquery"]["table"]]
            parts.append(
                "{" + _link(r["correlation"], t, child) + ',"query":'
                + canon_query(r["subquery"], cat) + "}"
            )
        out += ',"related":[' + ",".join(parts) + "]"
    return out + "}"


def query_key(ast, cat):
    f = Fnv64()
    f.bytes(canon_query(ast, cat).encode("utf-8"))
    return f.hex()


# --------------------------------------------------------------------------------------
# AST builders (docs/design/wire.md: The query AST)


def col(name):
    return {"type": "column", "name": name}


def lit(value):
    return {"type": "literal", "value": value}


def cmp(column, op, value):
    return {"type": "simple", "op": op, "left": col(column), "right": lit(value)}


def corr(parent, child):
    return {"parentField": list(parent), "childField": list(child)}


def exists(parent, child, subquery, op="EXISTS", **extra):
    related = {"correlation": corr(parent, child), "subquery": subquery}
    system = extra.pop("system", None)
    if system is not None:
        related["system"] = system
    cond = {"type": "correlatedSubquery", "related": related, "op": op}
    cond.update(extra)
    return cond


def related(parent, child, subquery):
    return {"correlation": corr(parent, child), "subquery": subquery}


# --------------------------------------------------------------------------------------
# Scenarios


class Scenario:
    """A scenario's steps. It also follows `headCv` as the applies it records move it
    (docs/compat.md: headCv): an accepted snapshot sets it to the snapshot's `cv`, every
    accepted live batch to the greater of headCv + 1 and the batch's `cv`; a local commit
    adds one (`local()`). `self.head` is the value the next step would read."""

    def __init__(self, name, description, tables):
        self.name = name
        self.description = description
        self.cat = {t["name"]: t for t in tables}
        self.steps = []
        self.head = None

    def local(self):
        """One local commit (a mutation, an ack or seed writing ledger rows, a conflict
        changing the head): headCv + 1, returned."""
        self.head += 1
        return self.head

    def _follow_head(self, call, args, expect):
        if call == "open" and expect == "null":
            self.head = None
        if call != "apply" or expect is None:
            return
        cv = args[0]["cv"]
        assert isinstance(cv, int), "an upstream cv is a whole number"
        if expect.startswith('{"applied":"snapshot"'):
            self.head = cv
        elif expect.startswith('{"applied":"live"'):
            self.head = max(self.head + 1, cv)

    def step(self, call, args, expect=None, error=None):
        assert (expect is None) != (error is None), "exactly one of expect / error"
        self._follow_head(call, args, expect)
        s = {"call": call, "args": args}
        if expect is not None:
            assert isinstance(expect, str)
            s["expect"] = expect
        else:
            s["error"] = error
        self.steps.append(s)

    def ok(self, call, *args, expect):
        self.step(call, list(args), expect=expect)

    def err(self, call, *args, error):
        self.step(call, list(args), error=error)

    # Expected-output builders -----------------------------------------------------

    def tables_of(self, names):
        """The hello tables: a name stands for its catalog table at full width, a table
        (from `project`) for itself."""
        return [self.cat[n] if isinstance(n, str) else n for n in names]

    def fp_of(self, names):
        return normalized_fp(self.tables_of(names))

    def batch(self, epoch, seq, names, ops, cv):
        """A downstream batch {epoch, seq, normalizedFp, ops, cv} (member order as in
        docs/protocol.md)."""
        tables = self.tables_of(names)
        check_d5(ops, dict(self.cat, **{t["name"]: t for t in tables}))
        return {
            "epoch": epoch,
            "seq": seq,
            "normalizedFp": normalized_fp(tables),
            "ops": ops,
            "cv": cv,
        }

    def subscribed(self, ast, reused, epoch, names, ops, cv):
        """`subscribe`'s {queryKey, reused, hello, snapshot}."""
        tables = self.tables_of(names)
        assert tables == by_name(tables), names
        return js({
            "queryKey": query_key(ast, self.cat),
            "reused": reused,
            "hello": {
                "epoch": epoch,
                "comparatorVersion": 2,
                "tables": tables,
                "normalizedFp": normalized_fp(tables),
            },
            "snapshot": self.batch(epoch, 0, names, ops, cv),
        })

    def sub(self, sub, epoch, ast, now, reused, names, ops, cv):
        self.ok("subscribe", sub, epoch, ast, now,
                expect=self.subscribed(ast, reused, epoch, names, ops, cv))

    def frames(self, *frames):
        """`commitAll`'s [{sub, batch}] — `frames` are (sub, epoch, seq, names, ops, cv)."""
        subs = [f[0] for f in frames]
        assert subs == sorted(subs, key=lambda s: s.encode("utf-8")), subs
        return js([
            {"sub": s, "batch": self.batch(e, q, n, o, c)} for s, e, q, n, o, c in frames
        ])

    def drain(self, *frames):
        self.ok("commitAll", expect=self.frames(*frames))

    @staticmethod
    def _dump(v):
        """json.dumps(v, ensure_ascii=False), except that a Raw number is written as
        spelled (the JavaScript spelling a harness would read)."""
        if isinstance(v, Raw):
            return str(v)
        if isinstance(v, dict):
            return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + Scenario._dump(x)
                                   for k, x in v.items()) + "}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(Scenario._dump(x) for x in v) + "]"
        return json.dumps(v, ensure_ascii=False)

    def write(self, out_dir):
        assert len(self.steps) > 0
        lines = ["{", "  %s: %s," % (json.dumps("name"), json.dumps(self.name)),
                 "  %s: %s," % (json.dumps("description"),
                                json.dumps(self.description, ensure_ascii=False)),
                 '  "steps": [']
        for i, s in enumerate(self.steps):
            sep = "," if i + 1 < len(self.steps) else ""
            lines.append("    " + self._dump(s) + sep)
        lines += ["  ]", "}", ""]
        path = os.path.join(out_dir, self.name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return path
