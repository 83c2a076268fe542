"""Scenarios: output bytes (number and string formatting, docs/protocol.md) and bad input (docs/security.md).

The expected texts here are written out literally (Raw) and cross-checked against the
helper serializer, so a mistake in either shows up when the generator runs.
"""

from lib import (Raw, Scenario, T, add, by_name, cmp, edit, hello, js, live_result, normalized_fp,
                 rem, snap_result)
from upstream import ALL, FP_NOTE, NOTE, eb, ub

NUM = T("num", ["id", "v"])


def js_number_formatting():
    s = Scenario(
        "js_number_formatting",
        "Every JSON the room emits prints numbers as JavaScript JSON.stringify does — "
        "integral values without a fraction (5.0 -> 5, 100.0 -> 100), -0 -> 0, shortest "
        "round-trip digits (0.1, 0.30000000000000004), exponent form from 1e21 up and "
        "below 1e-6 (1e+21, 2.5e+25, 1.5e-7, 1.23e-18), plain digits up to 1e21 "
        "(100000000000000000000); an integer token beyond 2^53 arrives as the nearest "
        "double. Applies to rows, cv(), epoch(), and float primary keys (1 < 1.5 < 2). A "
        "float literal beyond i64 in a filter (v > 1e20) compares exactly.",
        [NUM],
    )
    # (id, value as sent, value as JSON.stringify prints it)
    cells = [
        (1, 5.0, "5"), (1.5, 7, "7"), (2, -0.0, "0"), (3, 1e21, "1e+21"), (4, 1.5e-7, "1.5e-7"),
        (5, 0.1, "0.1"), (6, 1e-7, "1e-7"), (7, 0.000001, "0.000001"),
        (8, 1e20, "100000000000000000000"), (9, 1.2345678901234568e20, "123456789012345680000"),
        (10, 1.7976931348623157e308, "1.7976931348623157e+308"), (11, 5e-324, "5e-324"),
        (12, -1.25, "-1.25"), (13, 2.5e25, "2.5e+25"), (14, 100.0, "100"),
        (15, 9007199254740993, "9007199254740992"),
        (16, 0.30000000000000004, "0.30000000000000004"),
        (17, -1e-7, "-1e-7"), (18, 1.23e-18, "1.23e-18"), (19, 4.35, "4.35"),
        (20, -9007199254740991, "-9007199254740991"),
        (21, 9.999999999999999e20, "999999999999999900000"),
    ]
    ids = {1.5: "1.5"}
    for i, v, text in cells:
        if isinstance(v, float):
            assert js(v) == text, (v, js(v), text)
    # What a JavaScript harness sends is the double it parsed, which JSON.stringify
    # prints as `text`; the scenario carries that spelling (5.0 as 5, -0 as 0, 2^53 + 1
    # as 2^53), so every face replays the same numbers.
    sent = [(i, Raw(text)) for i, _, text in cells]
    h = hello([NUM], epoch=2)
    fp = h["normalizedFp"]
    s.ok("open", h, 30000, expect="null")
    s.ok("epoch", expect="2")
    s.ok("apply", ub(0, [add("num", [i, v]) for i, v in sent], epoch=2, cv=7, fp=fp),
         expect=snap_result(len(cells)))
    s.ok("cv", expect="7")

    def row(i, text):
        return [Raw(ids.get(i, str(i))), Raw(text)]

    s.sub("s1", 1, {"table": "num"}, 0, False, ["num"],
          [add("num", row(i, text)) for i, _, text in cells], s.head)
    big = {"table": "num", "where": cmp("v", ">", Raw(js(1e20)))}
    s.sub("s2", 1, big, 0, False, ["num"],
          [add("num", row(i, text)) for i, v, text in cells if v > 1e20], s.head)
    s.ok("apply", ub(1, [edit("num", [12, -1.25], [12, 0])], epoch=2, cv=8, fp=fp),
         expect=live_result(1))
    s.ok("cv", expect="8")
    s.drain(("s1", 1, 1, ["num"], [edit("num", row(12, "-1.25"), row(12, "0"))], s.head))
    s.ok("apply", ub(2, [rem("num", [12, 0])], epoch=2, cv=9, fp=fp), expect=live_result(1))
    s.ok("cv", expect="9")
    s.drain(("s1", 1, 2, ["num"], [rem("num", row(12, "0"))], s.head))
    return s


def json_string_escaping():
    st = T("str", ["id", "s"])
    odd = T('odd"name', ["k\\ey", "ñ"])
    tables = by_name([st, odd])
    s = Scenario(
        "json_string_escaping",
        "Byte-identical output: strings are escaped exactly as JSON.stringify does — "
        "\\\" \\\\ \\n \\r \\t \\b \\f and \\u00XX (lowercase hex) for other control "
        "characters; DEL, '/', non-ASCII, U+2028/U+2029 and astral characters pass "
        "through raw — in rows, table and column names of the hello, and the sub key of "
        "commitAll. String primary keys order by UTF-8 bytes ('' < 'Z' < "
        "'a' < 'cafe' < 'café' < 'ﬀ' < '😀').",
        tables,
    )
    fp = normalized_fp(tables)
    s.ok("open", hello(tables), 30000, expect="null")
    data = [
        # (row as sent, row as JSON.stringify prints it — written by hand)
        (["Z", 'q"uote'], r'["Z","q\"uote"]'),
        (["a", "back\\slash"], r'["a","back\\slash"]'),
        (["", "empty"], r'["","empty"]'),
        (["cafe", "line\nbreak\ttab\rcr"], r'["cafe","line\nbreak\ttab\rcr"]'),
        (["café", "\u0001\u001f\b\f"], r'["café","\u0001\u001f\b\f"]'),
        (["😀", "emoji 😀"], '["😀","emoji 😀"]'),
        (["ﬀ", "del\u007f é/ \u2028\u2029"], '["ﬀ","del\u007f é/ \u2028\u2029"]'),
    ]
    for sent, printed in data:
        assert js(sent) == printed, (js(sent), printed)
    s.ok("apply", ub(0, [add("str", r) for r, _ in data] + [add('odd"name', [1, "v"])],
                     cv=1, fp=fp), expect=snap_result(8))
    by_key = {r[0]: p for r, p in data}
    order = ["", "Z", "a", "cafe", "café", "ﬀ", "😀"]
    sub = 'c"1\\x'
    # The snapshot rows are the hand-written texts above, in UTF-8 byte order of the key.
    text = s.subscribed({"table": "str"}, False, 1, ["str"], [
        {"table": "str", "op": "add", "row": _RawRow(by_key[k], k)} for k in order
    ], 1)
    s.ok("subscribe", sub, 1, {"table": "str"}, 0, expect=text)
    assert r'"tables":[{"name":"str","columns":["id","s"],"primaryKey":[0]}]' in text
    odd_text = s.subscribed({"table": 'odd"name'}, False, 1, ['odd"name'],
                            [add('odd"name', [1, "v"])], 1)
    assert r'{"name":"odd\"name","columns":["k\\ey","ñ"],"primaryKey":[0]}' in odd_text
    s.ok("subscribe", "o1", 1, {"table": 'odd"name'}, 0, expect=odd_text)
    s.ok("apply", ub(1, [edit("str", ["a", "back\\slash"], ["a", "tab\there"])], cv=2, fp=fp),
         expect=live_result(1))
    frames = (r'[{"sub":"c\"1\\x","batch":{"epoch":1,"seq":1,"normalizedFp":"%s","ops":'
              r'[{"table":"str","op":"edit","old":["a","back\\slash"],"new":["a","tab\there"]}],'
              r'"cv":2}}]') % normalized_fp([st])
    assert frames == s.frames((sub, 1, 1, ["str"], [
        edit("str", ["a", "back\\slash"], ["a", "tab\there"])], 2))
    s.ok("commitAll", expect=frames)
    return s


class _RawRow(Raw):
    """A row spliced verbatim; `key` keeps the op order check working."""

    def __new__(cls, text, key):
        obj = Raw.__new__(cls, text)
        obj.key = key
        return obj

    def __getitem__(self, i):
        assert i == 0
        return self.key


def malformed_json_each_method():
    s = Scenario(
        "malformed_json_each_method",
        "Unparseable or wrongly shaped JSON text in every JSON-text argument (the "
        "hello of open, the batch of apply, the AST of subscribe) is a clear error naming "
        "what was wrong — an object or array cell is malformed, a missing or "
        "non-integer epoch/seq/limit, an unknown op kind or condition type, a start "
        "without `exclusive` — and changes nothing: the store is "
        "not poisoned, seq is not consumed, nothing is materialized, and the same room "
        "keeps working. {\"$text\": …} arguments pass raw text.",
        [NOTE],
    )
    good = hello([NOTE])
    s.err("open", {"$text": "{"}, 30000, error="hello")
    s.err("open", {"$text": '{"epoch":1,"comparatorVersion":2,'}, 30000, error="hello")
    s.err("open", {"$text": ""}, 30000, error="hello")
    s.err("open", [1, 2], 30000, error="hello")
    s.err("open", "just a string", 30000, error="hello")
    s.err("isLive", error="no room")
    s.ok("open", good, 30000, expect="null")

    def bad_batch(text_or_value, what):
        s.err("apply", text_or_value, error=what)

    bad_batch({"$text": "{"}, "batch")
    bad_batch({"$text": "not json"}, "batch")
    bad_batch({"$text": "[" * 5000}, "batch")
    bad_batch({"$text": '{"epoch":1,"seq":0,"normalizedFp":"%s","ops":[]} trailing' % FP_NOTE},
              "batch")
    bad_batch("a string", "batch")
    bad_batch({"epoch": 1, "seq": 0, "normalizedFp": FP_NOTE}, "ops")
    # Each batch below carries a valid cv, so the named field is its only defect.
    bad_batch(eb(0, [add("note", [1, {"x": 1}])], 100), "cell")
    bad_batch(eb(0, [add("note", [1, [2]])], 100), "cell")
    bad_batch(eb(0, [{"table": "note", "op": "upsert", "row": [1, "a"]}], 100), "upsert")
    bad_batch(eb(0, [{"table": "note", "op": "add"}], 100), "row")
    bad_batch(eb(0, [{"table": "note", "op": "edit", "old": [1, "a"]}], 100), "new")
    bad_batch(dict(eb(0, [], 100), epoch=-1), "epoch")
    bad_batch(dict(eb(0, [], 100), epoch=1.5), "epoch")
    bad_batch(dict(eb(0, [], 100), epoch="1"), "epoch")
    bad_batch(dict(eb(0, [], 100), seq=-1), "seq")
    bad_batch(dict(eb(0, [], 100), seq=0.5), "seq")
    s.ok("isPoisoned", expect="false")
    s.ok("isLive", expect="false")
    s.ok("apply", ub(0, [add("note", [1, "a"])], cv=1), expect=snap_result(1))
    bad_batch(ub(1, [add("note", [2, {"x": 1}])], cv=2), "cell")
    s.ok("isPoisoned", expect="false")
    s.ok("isLive", expect="true")
    s.ok("headCv", expect="1")
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=2), expect=live_result(1))

    def bad_ast(text_or_value, what):
        s.err("subscribe", "c1", 1, text_or_value, 0, error=what)

    # Text that is not JSON fails before its shape is looked at.
    not_json = "ast: not a wire Ast:"
    bad_ast({"$text": '{"table":'}, not_json)
    bad_ast({"$text": ""}, not_json)
    bad_ast([], "AST")
    bad_ast("note", "AST")
    bad_ast({}, "table")
    bad_ast({"table": 5}, "table")
    bad_ast({"table": "note", "where": {"type": "not", "condition": cmp("id", "=", 1)}}, '"not"')
    bad_ast({"table": "note", "where": cmp("id", "==", 1)}, '"=="')
    bad_ast({"table": "note", "where": cmp("id", "IN", 5)}, "IN")
    bad_ast({"table": "note", "where": cmp("body", "LIKE", 5)}, "LIKE")
    bad_ast({"table": "note", "limit": -1}, "limit")
    bad_ast({"table": "note", "limit": 1.5}, "limit")
    bad_ast({"table": "note", "limit": "2"}, "limit")
    bad_ast({"table": "note", "limit": 4294967296}, "limit")
    bad_ast({"$text": "[" * 5000}, not_json)
    bad_ast({"table": "note", "start": {"row": {"id": 1}}}, "exclusive")
    bad_ast({"table": "note", "orderBy": [["id", "up"]]}, '"up"')
    bad_ast({"table": "note", "orderBy": "id"}, "orderBy")
    s.ok("subscriberCount", expect="0")
    s.ok("materializationCount", expect="0")
    s.ok("commitAll", expect="[]")
    s.sub("c1", 1, ALL, 0, False, ["note"], [add("note", [1, "a"]), add("note", [2, "b"])], 2)
    s.ok("commitAll", expect="[]")
    return s


def argument_ranges():
    s = Scenario(
        "argument_ranges",
        "Number arguments (bad input): JavaScript passes epochs and times as numbers, so "
        "a negative or fractional epoch, a negative now_ms or idle_ttl_ms is refused "
        "with an error naming the argument (NaN has no JSON spelling, so -1 and 1.5 stand "
        "in) and changes nothing; the largest safe integer epoch round-trips exactly.",
        [NOTE],
    )
    s.err("open", hello([NOTE]), -1, error="idleTtlMs")
    s.err("isLive", error="no room")
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"])], cv=1), expect=snap_result(1))
    s.err("subscribe", "s", -1, ALL, 0, error="epoch")
    s.err("subscribe", "s", 1.5, ALL, 0, error="epoch")
    s.err("subscribe", "s", 1, ALL, -1, error="nowMs")
    s.ok("subscriberCount", expect="0")
    s.ok("materializationCount", expect="0")
    s.err("unsubscribe", "s", -1, error="nowMs")
    s.err("sweep", -1, error="nowMs")
    s.sub("s", 9007199254740991, ALL, 0, False, ["note"], [add("note", [1, "a"])], 1)
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=2), expect=live_result(1))
    s.drain(("s", 9007199254740991, 1, ["note"], [add("note", [2, "b"])], 2))
    s.ok("subscriberCount", expect="1")
    return s


def scenarios():
    return [
        js_number_formatting(),
        json_string_escaping(),
        malformed_json_each_method(),
        argument_ranges(),
    ]
