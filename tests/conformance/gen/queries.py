"""Scenarios: the query surface (docs/design/decisions.md: Query surface; docs/design/wire.md:
The query AST)."""

from lib import (Scenario, T, add, cmp, col, cut, edit, exists, level_columns, lit, live_result,
                 project, query_key, related, rem)
from footprints import ISSUE, LABEL, _open
from upstream import ub

I = ["issue"]
# A refusal's prefix, in the published room's words: a malformed AST, or a query that
# cannot be built.
AST_SHAPE = "ast: not a wire Ast:"
UQ = "subscribe: Query("


def unsupported_queries():
    s = Scenario(
        "unsupported_queries",
        "Every refused query errors at subscribe, in the published room's words "
        "('subscribe: Query(…)'; a static operand is a malformed AST) — aggregate (root, related, sum form), groupBy, having, "
        "aggregatePrecomputed, scalar: true, a static operand, a column on the right-hand "
        "side, an EXISTS child with start or related, flip: true on NOT EXISTS — and an "
        "unknown table or column is named in the message (where, orderBy, correlation, "
        "start, EXISTS child). Nothing is materialized or attached by a refusal; a "
        "valid subscribe works afterwards, and a refused re-subscribe leaves the sub's "
        "existing subscription attached and served.",
        [ISSUE, LABEL],
    )
    fp = _open(s, [ISSUE, LABEL], [add("issue", [1, "one"]), add("label", [10, 1, "bug"])])
    labels = {"table": "label", "alias": "labels"}
    on_label = (["id"], ["issueID"])

    def refuse(ast, what):
        s.err("subscribe", "q1", 1, ast, 0, error=[AST_SHAPE if what == "static" else UQ, what])

    refuse({"table": "issue", "aggregate": "count"}, "aggregate")
    refuse({"table": "issue", "aggregate": {"sum": "id"}}, "aggregate")
    refuse({"table": "issue", "related": [related(*on_label, dict(labels, aggregate="count"))]},
           "aggregate")
    refuse({"table": "issue", "groupBy": ["title"]}, "groupBy")
    refuse({"table": "issue", "having": cmp("title", "=", "x")}, "having")
    refuse({"table": "issue", "aggregatePrecomputed": True}, "aggregatePrecomputed")
    refuse({"table": "issue", "where": exists(*on_label, labels, scalar=True)}, "scalar")
    static = {"type": "simple", "op": "=", "left": col("title"),
              "right": {"type": "static", "anchor": "authData", "field": "sub"}}
    refuse({"table": "issue", "where": static}, "static")
    rhs_col = {"type": "simple", "op": "=", "left": col("title"), "right": col("title")}
    refuse({"table": "issue", "where": rhs_col}, "right-hand side")
    refuse({"table": "ghost_table"}, "ghost_table")
    refuse({"table": "issue", "where": cmp("ghost_col", "=", 1)}, "ghost_col")
    refuse({"table": "issue", "orderBy": [["ghost_sort", "asc"]]}, "ghost_sort")
    refuse({"table": "issue", "related": [related(["id"], ["ghost_link"], labels)]}, "ghost_link")
    refuse({"table": "issue", "start": {"row": {"ghost_start": 1}, "exclusive": False}},
           "ghost_start")
    refuse({"table": "issue", "where": exists(*on_label, {"table": "ghost_child", "alias": "g"})},
           "ghost_child")
    deep = {"table": "label", "alias": "l", "where": cmp("ghost_deep", "=", 1)}
    refuse({"table": "issue", "related": [related(*on_label, deep)]}, "ghost_deep")
    start = dict(labels, start={"row": {"id": 1}, "exclusive": False})
    refuse({"table": "issue", "where": exists(*on_label, start)}, "start")
    nested = dict(labels, related=[related(["id"], ["id"], {"table": "issue", "alias": "i"})])
    refuse({"table": "issue", "where": exists(*on_label, nested)}, "related")
    refuse({"table": "issue", "where": exists(*on_label, labels, op="NOT EXISTS", flip=True)},
           "flip")
    s.ok("materializationCount", expect="0")
    s.ok("subscriberCount", expect="0")
    s.ok("commitAll", expect="[]")
    s.sub("q1", 1, {"table": "issue"}, 0, False, I, [add("issue", [1, "one"])], 1)
    # A refused re-subscribe of an attached sub changes nothing: q1 keeps its envelope.
    s.err("subscribe", "q1", 2, {"table": "issue", "aggregate": "count"}, 0,
          error=[UQ, "aggregate"])
    s.ok("subscriberCount", expect="1")
    s.ok("materializationCount", expect="1")
    s.ok("apply", ub(1, [add("issue", [2, "two"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("q1", 1, 1, I, [add("issue", [2, "two"])], 2))
    return s


def ast_presentation_keys():
    s = Scenario(
        "ast_presentation_keys",
        "`select` projects a level's rows: the hello lists, and the rows carry, the "
        "primary key, the selected columns and the columns the query reads there (a "
        "level without `select` is full width); `one: true` is presentation only — only an explicit limit caps, at the "
        "root or on a related child; unknown keys and a root alias / schema are ignored; of "
        "two related entries with one alias the last wins.",
        [ISSUE, LABEL],
    )
    _open(s, [ISSUE, LABEL], [
        add("issue", [1, "one"]), add("issue", [2, "two"]), add("issue", [3, "three"]),
        add("label", [10, 1, "bug"]), add("label", [11, 1, "ui"]), add("label", [20, 2, "x"]),
    ])
    a = {"table": "issue", "select": ["id"], "one": True, "alias": "i", "schema": "public",
         "extra": {"deep": [1, 2]}, "hidden": True}
    keep = level_columns(ISSUE, a)  # [id]: the key, nothing else read
    s.sub("s1", 1, a, 0, False, [project(ISSUE, keep)],
          [add("issue", cut(r, keep)) for r in ([1, "one"], [2, "two"], [3, "three"])],
          s.head)
    child = {"table": "label", "alias": "labels", "one": True, "select": ["name"], "whatever": 1}
    b = {"table": "issue", "limit": 1, "related": [related(["id"], ["issueID"], child)]}
    # The child keeps its key, `name` and the correlation's child side: all of label.
    assert level_columns(LABEL, child, ["issueID"]) == [0, 1, 2]
    s.sub("s2", 1, b, 0, False, ["issue", "label"], [
        add("issue", [1, "one"]), add("label", [10, 1, "bug"]), add("label", [11, 1, "ui"]),
    ], 1)
    # Duplicate related aliases: the last one wins, so label is not
    # read at all and is not in the hello.
    c = {"table": "issue", "where": cmp("id", "=", 1), "related": [
        related(["id"], ["issueID"], {"table": "label", "alias": "x"}),
        related(["id"], ["id"],
                {"table": "issue", "alias": "x", "where": cmp("title", "=", "one")}),
    ]}
    s.sub("s3", 1, c, 0, False, I, [add("issue", [1, "one"])], 1)
    return s


def select_projection():
    issue = T("issue", ["a", "id", "title", "n", "m"], pk=[1])
    label = T("label", ["id", "issueN", "name", "z"])
    s = Scenario(
        "select_projection",
        "`select` cuts a level's rows down to the primary key, the selected columns (in "
        "table order, repeats ignored) and the columns the level reads: its filter, both "
        "sides of its correlations, its sort. The hello lists the cut tables, with the "
        "fingerprint over them; a query differs from the same query with another "
        "`select` (its own pipeline). An edit of columns a subscriber does not get still "
        "arrives, with equal images, as the published room sends it; an EXISTS child that "
        "stops matching takes its parent away. A `select` naming an unknown column, or "
        "not an array of names, is refused.",
        [issue, label],
    )
    x, y = ["x", 1, "one", 5, 7], ["y", 2, "two", 6, 8]
    bug, ui = [10, 5, "bug", 0], [11, 6, "ui", 1]
    fp = _open(s, [issue, label], [add("issue", x), add("issue", y), add("label", bug),
                                   add("label", ui)])
    link = (["n"], ["issueN"])
    subs = {
        "key-only": {"table": "issue", "select": []},
        "title": {"table": "issue", "select": ["title", "title"]},
        "reads": {"table": "issue", "select": ["a"], "where": cmp("m", ">", 6),
                  "orderBy": [["n", "desc"]]},
        "child": {"table": "issue", "select": ["title"], "related": [
            related(*link, {"table": "label", "alias": "labels", "select": ["name"]})]},
        "exists": {"table": "issue", "select": ["title"], "where": {
            "type": "correlatedSubquery", "op": "EXISTS",
            "related": related(*link, {"table": "label", "alias": "l", "select": [],
                                       "where": cmp("z", "=", 0)})}},
        "full": {"table": "issue"},
    }
    # Each level's kept columns (level_columns), its hello table and its cut rows.
    keep_label = {
        "child": level_columns(label, subs["child"]["related"][0]["subquery"], ["issueN"]),
        "exists": level_columns(label, subs["exists"]["where"]["related"]["subquery"],
                                ["issueN"]),
    }
    keep = {k: level_columns(issue, q) if "select" in q else list(range(5))
            for k, q in subs.items()}
    hello_of = {k: [project(issue, keep[k])] + ([project(label, keep_label[k])]
                                                if k in keep_label else [])
                for k in subs}
    snapshot = {
        "key-only": [x, y], "title": [x, y], "reads": [x, y], "full": [x, y],
        "child": [x, y, bug, ui],  # every issue, every label correlated on n
        "exists": [x, bug],  # issue 1 with its witness (z = 0); issue 2's label has z = 1
    }

    def cut_op(k, op):
        table = op["table"]
        cols = keep[k] if table == "issue" else keep_label[k]
        if op["op"] == "edit":
            return edit(table, cut(op["old"], cols), cut(op["new"], cols))
        return {"table": table, "op": op["op"], "row": cut(op["row"], cols)}

    for k, q in subs.items():
        rows = [add("issue" if r in (x, y) else "label", r) for r in snapshot[k]]
        s.sub(k, 1, q, 0, False, hello_of[k], [cut_op(k, o) for o in rows], s.head)
    s.err("subscribe", "bad-column", 1, {"table": "issue", "select": ["nope"]}, 0,
          error=["nope"])
    s.err("subscribe", "bad-shape", 1, {"table": "issue", "select": "title"}, 0,
          error=["select"])
    # Issue 1's title changes: every subscriber holding issue 1 gets the edit, cut to its
    # columns (equal images where title is not kept).
    x2 = ["x", 1, "uno", 5, 7]
    s.ok("apply", ub(1, [edit("issue", x, x2)], cv=2, fp=fp), expect=live_result(1))
    s.drain(*[(k, 1, 1, hello_of[k], [cut_op(k, edit("issue", x, x2))], s.head)
              for k in sorted(subs, key=lambda k: k.encode("utf-8"))])
    # Label 10's z leaves 0: `child` gets an edit of columns it does not keep; `exists`
    # loses its witness and with it issue 1.
    bug2 = [10, 5, "bug", 2]
    s.ok("apply", ub(2, [edit("label", bug, bug2)], cv=3, fp=fp), expect=live_result(1))
    s.drain(("child", 1, 2, hello_of["child"], [cut_op("child", edit("label", bug, bug2))],
             s.head),
            ("exists", 1, 2, hello_of["exists"],
             [cut_op("exists", rem("issue", x2)), cut_op("exists", rem("label", bug))],
             s.head))
    s.ok("materializationCount", expect=str(len(subs)))
    return s


def where_null_semantics():
    t = T("t", ["id", "x"])
    s = Scenario(
        "where_null_semantics",
        "NULL rules: x NOT IN [1, null] — the null "
        "element never matches, so 2 and 's' pass and a NULL cell does not (the NOT IN null rule); "
        "!= is false on NULL and true across types; IS NOT 1 is true on NULL; IS null; "
        "= null is always false (empty snapshot still sent); IN [] is false; NOT IN [] "
        "true for non-null cells only; < against a string cell is false (type rank); "
        "IN with a null element; an empty and, like an empty or, is no condition at all "
        "(the published room drops an empty group); a literal on the left is "
        "constant-folded. Live edits into and out of NULL move rows "
        "in and out.",
        [t],
    )
    fp = _open(s, [t], [add("t", [1, 1]), add("t", [2, 2]), add("t", [3, None]),
                        add("t", [4, "s"])])
    q = {
        "a": cmp("x", "NOT IN", [1, None]),
        "b": cmp("x", "!=", 1),
        "c": cmp("x", "IS NOT", 1),
        "d": cmp("x", "IS", None),
        "e": cmp("x", "=", None),
        "f": cmp("x", "IN", []),
        "g": cmp("x", "NOT IN", []),
        "h": cmp("x", "<", 2),
        "i": cmp("x", "IN", [2, "s", None]),
        "j": {"type": "and", "conditions": []},
        "k": {"type": "or", "conditions": []},
        "l": {"type": "simple", "op": "=", "left": lit(1), "right": lit(1)},
    }
    r1, r2, r3, r4 = [1, 1], [2, 2], [3, None], [4, "s"]
    want = {"a": [r2, r4], "b": [r2, r4], "c": [r2, r3, r4], "d": [r3], "e": [], "f": [],
            "g": [r1, r2, r4], "h": [r1], "i": [r2, r4], "j": [r1, r2, r3, r4],
            "k": [r1, r2, r3, r4],
            "l": [r1, r2, r3, r4]}
    T1 = ["t"]
    built = set()  # j and k are one query (no condition): k reuses j's pipeline
    for name in sorted(q):
        ast = {"table": "t", "where": q[name]}
        key = query_key(ast, s.cat)
        s.sub(name, 1, ast, 0, key in built, T1, [add("t", r) for r in want[name]], s.head)
        built.add(key)
    # x: NULL -> 1 on row 3.
    s.ok("apply", ub(1, [edit("t", [3, None], [3, 1])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("c", 1, 1, T1, [rem("t", [3, None])], 2),
            ("d", 1, 1, T1, [rem("t", [3, None])], 2),
            ("g", 1, 1, T1, [add("t", [3, 1])], 2),
            ("h", 1, 1, T1, [add("t", [3, 1])], 2),
            ("j", 1, 1, T1, [edit("t", [3, None], [3, 1])], 2),
            ("k", 1, 1, T1, [edit("t", [3, None], [3, 1])], 2),
            ("l", 1, 1, T1, [edit("t", [3, None], [3, 1])], 2))
    # x: 's' -> NULL on row 4.
    s.ok("apply", ub(2, [edit("t", [4, "s"], [4, None])], cv=3, fp=fp), expect=live_result(1))
    gone = [rem("t", [4, "s"])]
    s.drain(("a", 1, 1, T1, gone, 3), ("b", 1, 1, T1, gone, 3),
            ("c", 1, 2, T1, [edit("t", [4, "s"], [4, None])], 3),
            ("d", 1, 2, T1, [add("t", [4, None])], 3),
            ("g", 1, 2, T1, gone, 3), ("i", 1, 1, T1, gone, 3),
            ("j", 1, 2, T1, [edit("t", [4, "s"], [4, None])], 3),
            ("k", 1, 2, T1, [edit("t", [4, "s"], [4, None])], 3),
            ("l", 1, 2, T1, [edit("t", [4, "s"], [4, None])], 3))
    return s


def where_like():
    t = T("t", ["id", "s"])
    s = Scenario(
        "where_like",
        "LIKE/ILIKE: % any run, _ exactly one BYTE (so 'é' matches '__'), "
        "backslash escapes \\% \\_ \\\\, LIKE case-sensitive, ILIKE folds ASCII only; a "
        "non-text cell never matches (NOT LIKE gives true for it), NULL never passes.",
        [t],
    )
    fp = _open(s, [t], [
        add("t", [1, "100%"]), add("t", [2, "100x"]), add("t", [3, "a_b"]), add("t", [4, "axb"]),
        add("t", [5, "ABC"]), add("t", [6, "abc"]), add("t", [7, 5]), add("t", [8, None]),
        add("t", [9, "é"]), add("t", [10, "É"]), add("t", [11, "x"]), add("t", [12, "a\\b"]),
    ])
    rows = {1: "100%", 2: "100x", 3: "a_b", 4: "axb", 5: "ABC", 6: "abc", 7: 5, 9: "é",
            10: "É", 11: "x", 12: "a\\b"}
    q = {
        "l1": (cmp("s", "LIKE", "100\\%"), [1]),
        "l2": (cmp("s", "LIKE", "a\\_b"), [3]),
        "l3": (cmp("s", "LIKE", "a_b"), [3, 4, 12]),
        "l4": (cmp("s", "ILIKE", "abc"), [5, 6]),
        "l5": (cmp("s", "ILIKE", "é"), [9]),
        "l6": (cmp("s", "NOT LIKE", "a%"), [1, 2, 5, 7, 9, 10, 11]),
        "l7": (cmp("s", "LIKE", "__"), [9, 10]),
        "l8": (cmp("s", "LIKE", "a\\\\b"), [12]),
        "l9": (cmp("s", "LIKE", "%"), [1, 2, 3, 4, 5, 6, 9, 10, 11, 12]),
    }
    T1 = ["t"]
    for name in sorted(q):
        cond, ids = q[name]
        s.sub(name, 1, {"table": "t", "where": cond}, 0, False, T1,
              [add("t", [i, rows[i]]) for i in ids], 1)
    # Row 7: 5 -> "abc".
    s.ok("apply", ub(1, [edit("t", [7, 5], [7, "abc"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("l4", 1, 1, T1, [add("t", [7, "abc"])], 2),
            ("l6", 1, 1, T1, [rem("t", [7, 5])], 2),
            ("l9", 1, 1, T1, [add("t", [7, "abc"])], 2))
    return s


def scenarios():
    return [
        unsupported_queries(),
        ast_presentation_keys(),
        select_projection(),
        where_null_semantics(),
        where_like(),
    ]

