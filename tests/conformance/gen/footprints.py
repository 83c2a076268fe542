"""Scenarios: what a subscription's footprint holds (docs/design/decisions.md: Footprints;
docs/design/wire.md: The query AST, Footprint semantics) and how its changes come out as
ops (docs/design/decisions.md: Downstream hello and op netting).

Each derivation is written next to its step: the completed sort, the window or witness
set before and after the change, and the resulting net ops in (table, pk) order.
"""

from lib import Scenario, T, add, by_name, cmp, edit, exists, hello, live_result, rem, related, snap_result
from upstream import ub

ISSUE3 = T("issue", ["id", "title", "priority"])
ISSUE = T("issue", ["id", "title"])
LABEL = T("label", ["id", "issueID", "name"])
I = ["issue"]


def _open(s, tables, rows):
    h = hello(tables)
    s.ok("open", h, 30000, expect="null")
    s.ok("apply", ub(0, rows, cv=1, fp=h["normalizedFp"]), expect=snap_result(len(rows)))
    return h["normalizedFp"]


def window_limit():
    s = Scenario(
        "window_limit",
        "Root limit over the PK-completed sort (the limit applies after the filter): "
        "orderBy priority "
        "desc, then id asc, limit 2. A row entering the window displaces the last one as "
        "remove + add, ops still in pk order (so an add can precede a remove); "
        "an in-window change that keeps the row in is an edit; a change outside the "
        "window emits nothing; a tie on priority is broken by id.",
        [ISSUE3],
    )
    fp = _open(s, [ISSUE3], [add("issue", [1, "a", 5]), add("issue", [2, "b", 3]),
                             add("issue", [3, "c", 1])])
    w = {"table": "issue", "orderBy": [["priority", "desc"]], "limit": 2}
    s.sub("s1", 1, w, 0, False, I, [add("issue", [1, "a", 5]), add("issue", [2, "b", 3])], 1)
    # 1(5) 4(4) | 2(3) 3(1): 2 leaves, 4 enters.
    s.ok("apply", ub(1, [add("issue", [4, "d", 4])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 1, I, [rem("issue", [2, "b", 3]), add("issue", [4, "d", 4])], 2))
    # 0(9) 1(5) | 4(4) ...: 0 enters, 4 leaves; pk order puts the add first.
    s.ok("apply", ub(2, [add("issue", [0, "z", 9])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 2, I, [add("issue", [0, "z", 9]), rem("issue", [4, "d", 4])], 3))
    # 1(10) 0(9): both stay; 1 changed in place.
    s.ok("apply", ub(3, [edit("issue", [1, "a", 5], [1, "a", 10])], cv=4, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 3, I, [edit("issue", [1, "a", 5], [1, "a", 10])], 4))
    # Row 3 is outside the window.
    s.ok("apply", ub(4, [edit("issue", [3, "c", 1], [3, "C", 1])], cv=5, fp=fp),
         expect=live_result(1))
    s.ok("commitAll", expect="[]")
    # 1(10) 4(4) | 2(3) 3(1) 0(0): 0 leaves (old image), 4 enters.
    s.ok("apply", ub(5, [edit("issue", [0, "z", 9], [0, "z", 0])], cv=6, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 4, I, [rem("issue", [0, "z", 9]), add("issue", [4, "d", 4])], 6))
    # 1(10) 4(4) | 5(4) 2(3) ...: 5 ties with 4 and loses on id.
    s.ok("apply", ub(6, [add("issue", [5, "e", 4])], cv=7, fp=fp), expect=live_result(1))
    s.ok("commitAll", expect="[]")
    # 4(4) 5(4) | 2(3) ...: 1 leaves, 5 enters.
    s.ok("apply", ub(7, [rem("issue", [1, "a", 10])], cv=8, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 5, I, [rem("issue", [1, "a", 10]), add("issue", [5, "e", 4])], 8))
    return s


def window_start():
    s = Scenario(
        "window_start",
        "start bounds before limit: sort (priority asc, id asc), "
        "bound {priority 3, id 2}; exclusive starts after the bound row, inclusive at it. "
        "Rows moving across the bound or the limit come out as adds/removes per "
        "subscriber; a subscriber whose window did not change gets no entry.",
        [ISSUE3],
    )
    fp = _open(s, [ISSUE3], [add("issue", [1, "a", 1]), add("issue", [2, "b", 3]),
                             add("issue", [3, "c", 3]), add("issue", [4, "d", 5]),
                             add("issue", [5, "e", 7])])

    def win(exclusive):
        return {"table": "issue", "orderBy": [["priority", "asc"]],
                "start": {"row": {"priority": 3, "id": 2}, "exclusive": exclusive}, "limit": 2}

    # Sorted: (1,1) (3,2) (3,3) (5,4) (7,5) as (priority, id).
    # a: after (3,2) -> 3, 4.  b: at/after (3,2) -> 2, 3.
    s.sub("a", 1, win(True), 0, False, I, [add("issue", [3, "c", 3]), add("issue", [4, "d", 5])], 1)
    s.sub("b", 1, win(False), 0, False, I,
          [add("issue", [2, "b", 3]), add("issue", [3, "c", 3])], 1)
    # Row 1 -> (4,1): a sees (3,3) (4,1) | (5,4): 1 in, 4 out. b: (3,2) (3,3) unchanged.
    s.ok("apply", ub(1, [edit("issue", [1, "a", 1], [1, "a", 4])], cv=2, fp=fp),
         expect=live_result(1))
    s.drain(("a", 1, 1, I, [add("issue", [1, "a", 4]), rem("issue", [4, "d", 5])], 2))
    # Row 3 -> (2,3), before the bound. a: (4,1) (5,4): 3 out, 4 in.
    # b: (3,2) (4,1): 3 out, 1 in.
    s.ok("apply", ub(2, [edit("issue", [3, "c", 3], [3, "c", 2])], cv=3, fp=fp),
         expect=live_result(1))
    s.drain(("a", 1, 2, I, [rem("issue", [3, "c", 3]), add("issue", [4, "d", 5])], 3),
            ("b", 1, 1, I, [add("issue", [1, "a", 4]), rem("issue", [3, "c", 3])], 3))
    # Row 2 -> (2,2), before the bound. a: unchanged (4,1) (5,4). b: (4,1) (5,4): 2 out, 4 in.
    s.ok("apply", ub(3, [edit("issue", [2, "b", 3], [2, "b", 2])], cv=4, fp=fp),
         expect=live_result(1))
    s.drain(("b", 1, 2, I, [rem("issue", [2, "b", 3]), add("issue", [4, "d", 5])], 4))
    return s


def related_nested():
    user = T("user", ["id", "name"])
    comment = T("comment", ["id", "issueID", "body", "authorID"])
    tables = by_name([user, ISSUE, comment])
    s = Scenario(
        "related_nested",
        "Related nested two deep (per-parent limits, shared rows counted once): issue -> comments "
        "(id desc, limit 2 per issue) -> author. The footprint is the distinct (table, pk) "
        "set: a user reached through two comments is one member and leaves only when no "
        "path holds it; a displaced comment takes its author along; removing a parent "
        "removes its subtree. Hello lists comment, issue, user.",
        tables,
    )
    fp = _open(s, tables, [
        add("user", ["u1", "Ann"]), add("user", ["u2", "Bob"]), add("user", ["u3", "Cy"]),
        add("user", ["u4", "Dee"]),
        add("issue", [1, "one"]), add("issue", [2, "two"]), add("issue", [3, "three"]),
        add("comment", [10, 1, "x", "u1"]), add("comment", [11, 1, "y", "u2"]),
        add("comment", [12, 1, "z", "u1"]), add("comment", [20, 2, "w", "u3"]),
    ])
    author = {"table": "user", "alias": "author"}
    comments = {"table": "comment", "alias": "comments", "orderBy": [["id", "desc"]], "limit": 2,
                "related": [related(["authorID"], ["id"], author)]}
    ast = {"table": "issue", "orderBy": [["id", "asc"]],
           "related": [related(["id"], ["issueID"], comments)]}
    names = ["comment", "issue", "user"]
    # issue 1: comments 12, 11 (authors u1, u2); issue 2: 20 (u3); issue 3: none.
    s.sub("s1", 1, ast, 0, False, names, [
        add("comment", [11, 1, "y", "u2"]), add("comment", [12, 1, "z", "u1"]),
        add("comment", [20, 2, "w", "u3"]),
        add("issue", [1, "one"]), add("issue", [2, "two"]), add("issue", [3, "three"]),
        add("user", ["u1", "Ann"]), add("user", ["u2", "Bob"]), add("user", ["u3", "Cy"]),
    ], 1)
    # Comment 13 tops issue 1: 13, 12 | 11. 11 leaves with u2; 13 enters with u4.
    s.ok("apply", ub(1, [add("comment", [13, 1, "n", "u4"])], cv=2, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 1, names, [
        rem("comment", [11, 1, "y", "u2"]), add("comment", [13, 1, "n", "u4"]),
        rem("user", ["u2", "Bob"]), add("user", ["u4", "Dee"]),
    ], 2))
    # Issue 2 goes: its comment 20 and author u3 go with it.
    s.ok("apply", ub(2, [rem("issue", [2, "two"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 2, names, [
        rem("comment", [20, 2, "w", "u3"]), rem("issue", [2, "two"]), rem("user", ["u3", "Cy"]),
    ], 3))
    s.ok("apply", ub(3, [edit("user", ["u1", "Ann"], ["u1", "Anne"])], cv=4, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 3, names, [edit("user", ["u1", "Ann"], ["u1", "Anne"])], 4))
    # Comment 12 changes author u1 -> u3: an edit of 12, u1 out (latest image), u3 in.
    s.ok("apply", ub(4, [edit("comment", [12, 1, "z", "u1"], [12, 1, "z", "u3"])], cv=5, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 4, names, [
        edit("comment", [12, 1, "z", "u1"], [12, 1, "z", "u3"]),
        rem("user", ["u1", "Anne"]), add("user", ["u3", "Cy"]),
    ], 5))
    # Issue 3 gets comment 30 by u3, who is already present via comment 12.
    s.ok("apply", ub(5, [add("comment", [30, 3, "q", "u3"])], cv=6, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 5, names, [add("comment", [30, 3, "q", "u3"])], 6))
    # Comment 12 goes: issue 1 is 13, 11 | 10; u3 stays via 30; u2 returns with 11.
    s.ok("apply", ub(6, [rem("comment", [12, 1, "z", "u3"])], cv=7, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 6, names, [
        add("comment", [11, 1, "y", "u2"]), rem("comment", [12, 1, "z", "u3"]),
        add("user", ["u2", "Bob"]),
    ], 7))
    return s


LABELS = [
    add("issue", [1, "one"]), add("issue", [2, "two"]), add("issue", [3, "three"]),
    add("label", [10, 1, "e"]), add("label", [11, 1, "d"]), add("label", [12, 1, "c"]),
    add("label", [13, 1, "b"]), add("label", [14, 1, "a"]), add("label", [20, 2, "x"]),
]
IL = ["issue", "label"]


def _label_sub(**extra):
    sub = {"table": "label", "alias": "label", "orderBy": [["name", "asc"]]}
    sub.update(extra)
    return sub


def exists_witnesses_first_three():
    s = Scenario(
        "exists_witnesses_first_three",
        "Witnesses of a non-flipped EXISTS: the first min(3, n) matching children in the "
        "child's completed sort order (name asc, id asc), maintained exactly: a witness "
        "leaving backfills the next child, a child sorting earlier displaces the third, a "
        "parent gaining its first child enters with it, losing its last leaves with it; a "
        "non-witness child change emits nothing. The hello lists issue and label.",
        [ISSUE, LABEL],
    )
    fp = _open(s, [ISSUE, LABEL], LABELS)
    ast = {"table": "issue", "where": exists(["id"], ["issueID"], _label_sub())}
    # Issue 1 labels by name: 14(a) 13(b) 12(c) | 11(d) 10(e). Issue 2: 20. Issue 3: none.
    s.sub("s1", 1, ast, 0, False, IL, [
        add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("label", [12, 1, "c"]), add("label", [13, 1, "b"]), add("label", [14, 1, "a"]),
        add("label", [20, 2, "x"]),
    ], 1)
    # 14(a) 12(c) 11(d): 13 out, 11 in.
    s.ok("apply", ub(1, [rem("label", [13, 1, "b"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 1, IL, [add("label", [11, 1, "d"]), rem("label", [13, 1, "b"])], 2))
    # 15("0") 14(a) 12(c) | 11(d): 11 out, 15 in.
    s.ok("apply", ub(2, [add("label", [15, 1, "0"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 2, IL, [rem("label", [11, 1, "d"]), add("label", [15, 1, "0"])], 3))
    s.ok("apply", ub(3, [add("label", [30, 3, "q"])], cv=4, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 3, IL, [add("issue", [3, "three"]), add("label", [30, 3, "q"])], 4))
    s.ok("apply", ub(4, [rem("label", [20, 2, "x"])], cv=5, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 4, IL, [rem("issue", [2, "two"]), rem("label", [20, 2, "x"])], 5))
    # 12 renamed "zz": 15("0") 14(a) 11(d) | 10(e) 12(zz): 12 out (old image), 11 in.
    s.ok("apply", ub(5, [edit("label", [12, 1, "c"], [12, 1, "zz"])], cv=6, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 5, IL, [add("label", [11, 1, "d"]), rem("label", [12, 1, "c"])], 6))
    # 14 renamed "aa": still second. An edit.
    s.ok("apply", ub(6, [edit("label", [14, 1, "a"], [14, 1, "aa"])], cv=7, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 6, IL, [edit("label", [14, 1, "a"], [14, 1, "aa"])], 7))
    # 10 is not a witness.
    s.ok("apply", ub(7, [edit("label", [10, 1, "e"], [10, 1, "f"])], cv=8, fp=fp),
         expect=live_result(1))
    s.ok("commitAll", expect="[]")
    return s


def exists_flip_all_witnesses():
    s = Scenario(
        "exists_flip_all_witnesses",
        "A flipped EXISTS (flip: true, accepted and result-identical) ships ALL "
        "matching children as witnesses, not the first 3; root rows are the same as "
        "without flip.",
        [ISSUE, LABEL],
    )
    fp = _open(s, [ISSUE, LABEL], LABELS)
    ast = {"table": "issue", "where": exists(["id"], ["issueID"], _label_sub(), flip=True)}
    s.sub("s1", 1, ast, 0, False, IL, [
        add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("label", [10, 1, "e"]), add("label", [11, 1, "d"]), add("label", [12, 1, "c"]),
        add("label", [13, 1, "b"]), add("label", [14, 1, "a"]), add("label", [20, 2, "x"]),
    ], 1)
    s.ok("apply", ub(1, [add("label", [16, 1, "m"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 1, IL, [add("label", [16, 1, "m"])], 2))
    s.ok("apply", ub(2, [rem("label", [10, 1, "e"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 2, IL, [rem("label", [10, 1, "e"])], 3))
    s.ok("apply", ub(3, [add("label", [30, 3, "q"])], cv=4, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 3, IL, [add("issue", [3, "three"]), add("label", [30, 3, "q"])], 4))
    return s


def exists_child_where_and_limit():
    s = Scenario(
        "exists_child_where_and_limit",
        "An EXISTS child's limit is ignored (the witness cap of 3 replaces it), and "
        "\"matching children\" are those passing the child's own where: with "
        "name != 'a' the witnesses of issue 1 are 13(b) 12(c) 11(d). Limit 0 is the "
        "exception: a child limited to no rows matches nothing, so the EXISTS never holds "
        "and the child table is not in the hello. A change to a child "
        "that does not match leaves that subscriber without an entry.",
        [ISSUE, LABEL],
    )
    fp = _open(s, [ISSUE, LABEL], LABELS)
    limited = {"table": "issue", "where": exists(["id"], ["issueID"], _label_sub(limit=1))}
    # limit 0 is the exception: a subquery limited to no rows joins nothing, so the
    # EXISTS never holds (no issue passes) and label is no part of the footprint.
    zero = {"table": "issue", "where": exists(
        ["id"], ["issueID"], _label_sub(limit=0, orderBy=[["name", "desc"]]))}
    filtered = {"table": "issue",
                "where": exists(["id"], ["issueID"], _label_sub(where=cmp("name", "!=", "a")))}
    s.sub("x1", 1, limited, 0, False, IL, [
        add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("label", [12, 1, "c"]), add("label", [13, 1, "b"]), add("label", [14, 1, "a"]),
        add("label", [20, 2, "x"]),
    ], 1)
    s.sub("x0", 1, zero, 0, False, ["issue"], [], s.head)
    s.sub("x2", 1, filtered, 0, False, IL, [
        add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("label", [11, 1, "d"]), add("label", [12, 1, "c"]), add("label", [13, 1, "b"]),
        add("label", [20, 2, "x"]),
    ], 1)
    # x1: 13(b) 12(c) 11(d): 14 out, 11 in. x2: 14 never matched.
    s.ok("apply", ub(1, [rem("label", [14, 1, "a"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("x1", 1, 1, IL, [add("label", [11, 1, "d"]), rem("label", [14, 1, "a"])], 2))
    return s


def exists_permissions_and_not_exists():
    perm = T("perm", ["id", "issueID", "principal"])
    tables = by_name([ISSUE, LABEL, perm])
    s = Scenario(
        "exists_permissions_and_not_exists",
        "An EXISTS with system 'permissions' gates the parent but ships no "
        "witnesses, and its table is not in the hello. NOT EXISTS ships the first "
        "children that make it false (when the parent is kept another way) and its table "
        "is in the hello, as in the published room. Gate changes add/remove the parent.",
        tables,
    )
    fp = _open(s, tables, [
        add("issue", [1, "one"]), add("issue", [2, "two"]), add("issue", [3, "three"]),
        add("label", [10, 1, "bug"]),
        add("perm", [100, 1, "u1"]), add("perm", [101, 3, "u2"]),
    ])
    gate = {"table": "perm", "alias": "perm", "where": cmp("principal", "=", "u1")}
    p = {"table": "issue", "where": exists(["id"], ["issueID"], gate, system="permissions")}
    n = {"table": "issue",
         "where": exists(["id"], ["issueID"], {"table": "label", "alias": "label"},
                         op="NOT EXISTS")}
    s.sub("p1", 1, p, 0, False, I, [add("issue", [1, "one"])], 1)
    # NOT EXISTS: label is in the hello; a parent it keeps has no label to ship.
    IL = ["issue", "label"]
    s.sub("n1", 1, n, 0, False, IL, [add("issue", [2, "two"]), add("issue", [3, "three"])],
          s.head)
    s.ok("apply", ub(1, [add("perm", [102, 2, "u1"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("p1", 1, 1, I, [add("issue", [2, "two"])], 2))
    s.ok("apply", ub(2, [add("label", [11, 3, "ui"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("n1", 1, 1, IL, [rem("issue", [3, "three"])], 3))
    s.ok("apply", ub(3, [rem("label", [10, 1, "bug"])], cv=4, fp=fp), expect=live_result(1))
    s.drain(("n1", 1, 2, IL, [add("issue", [1, "one"])], 4))
    s.ok("apply", ub(4, [edit("perm", [100, 1, "u1"], [100, 1, "u9"])], cv=5, fp=fp),
         expect=live_result(1))
    s.drain(("p1", 1, 2, I, [rem("issue", [1, "one"])], 5))
    return s


def exists_in_or_branch():
    s = Scenario(
        "exists_in_or_branch",
        "Every EXISTS in a row's where that holds contributes its witnesses whatever "
        "the AND/OR around it — issue 1 passes on title = 'x' and still ships its label — "
        "and an EXISTS that does not hold contributes nothing (issue 3).",
        [ISSUE, LABEL],
    )
    fp = _open(s, [ISSUE, LABEL], [
        add("issue", [1, "x"]), add("issue", [2, "y"]), add("issue", [3, "x"]),
        add("issue", [4, "y"]), add("label", [10, 1, "l"]), add("label", [20, 2, "m"]),
    ])
    ast = {"table": "issue", "where": {"type": "or", "conditions": [
        cmp("title", "=", "x"),
        exists(["id"], ["issueID"], {"table": "label", "alias": "label"}),
    ]}}
    s.sub("s1", 1, ast, 0, False, IL, [
        add("issue", [1, "x"]), add("issue", [2, "y"]), add("issue", [3, "x"]),
        add("label", [10, 1, "l"]), add("label", [20, 2, "m"]),
    ], 1)
    # Issue 1 keeps passing on its title; only the witness goes.
    s.ok("apply", ub(1, [rem("label", [10, 1, "l"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 1, IL, [rem("label", [10, 1, "l"])], 2))
    s.ok("apply", ub(2, [add("label", [40, 4, "n"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 2, IL, [add("issue", [4, "y"]), add("label", [40, 4, "n"])], 3))
    s.ok("apply", ub(3, [edit("issue", [3, "x"], [3, "y"])], cv=4, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 3, IL, [rem("issue", [3, "x"])], 4))
    return s


def exists_nested_witnesses():
    comment = T("comment", ["id", "issueID", "body"])
    reaction = T("reaction", ["id", "commentID", "emoji"])
    tables = by_name([ISSUE, comment, reaction])
    s = Scenario(
        "exists_nested_witnesses",
        "Nested EXISTS inside a witness subtree apply recursively. issue WHERE EXISTS "
        "(comment WHERE EXISTS reaction): a parent's witnesses are its first 3 comments "
        "that themselves have a reaction, and each witness comment ships its own first 3 "
        "reactions; a matching comment displaced from the first 3 takes its reactions "
        "along.",
        tables,
    )
    fp = _open(s, tables, [
        add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("comment", [10, 1, "a"]), add("comment", [11, 1, "b"]), add("comment", [12, 1, "c"]),
        add("comment", [13, 1, "d"]), add("comment", [20, 2, "e"]),
        add("reaction", [100, 10, "+"]), add("reaction", [101, 10, "-"]),
        add("reaction", [102, 10, "!"]), add("reaction", [103, 10, "?"]),
        add("reaction", [104, 12, "+"]), add("reaction", [105, 13, "+"]),
    ])
    inner = exists(["id"], ["commentID"], {"table": "reaction", "alias": "reaction"})
    ast = {"table": "issue", "where": exists(
        ["id"], ["issueID"], {"table": "comment", "alias": "comment", "where": inner})}
    names = ["comment", "issue", "reaction"]
    # Issue 1: matching comments 10, 12, 13 (11 has no reaction); 10 ships 100 101 102.
    # Issue 2: comment 20 has no reaction, so issue 2 fails.
    s.sub("s1", 1, ast, 0, False, names, [
        add("comment", [10, 1, "a"]), add("comment", [12, 1, "c"]), add("comment", [13, 1, "d"]),
        add("issue", [1, "one"]),
        add("reaction", [100, 10, "+"]), add("reaction", [101, 10, "-"]),
        add("reaction", [102, 10, "!"]), add("reaction", [104, 12, "+"]),
        add("reaction", [105, 13, "+"]),
    ], 1)
    # 11 now matches: 10 11 12 | 13. 13 leaves with 105; 11 enters with 106.
    s.ok("apply", ub(1, [add("reaction", [106, 11, "+"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 1, names, [
        add("comment", [11, 1, "b"]), rem("comment", [13, 1, "d"]),
        rem("reaction", [105, 13, "+"]), add("reaction", [106, 11, "+"]),
    ], 2))
    # Comment 10's reactions: 101 102 103 now.
    s.ok("apply", ub(2, [rem("reaction", [100, 10, "+"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 2, names, [rem("reaction", [100, 10, "+"]),
                                 add("reaction", [103, 10, "?"])], 3))
    s.ok("apply", ub(3, [add("reaction", [200, 20, "+"])], cv=4, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 3, names, [
        add("comment", [20, 2, "e"]), add("issue", [2, "two"]), add("reaction", [200, 20, "+"]),
    ], 4))
    return s


def orderby_nulls_and_pk_direction():
    s = Scenario(
        "orderby_nulls_and_pk_direction",
        "Sort order: NULL sorts first under asc and last under desc; the primary "
        "key completes the sort ascending, but a PK column named in orderBy keeps its "
        "position and direction (id desc). Windows (limit 2) follow these orders through "
        "edits into and out of NULL.",
        [ISSUE3],
    )
    fp = _open(s, [ISSUE3], [add("issue", [1, "a", None]), add("issue", [2, "b", 3]),
                             add("issue", [3, "c", None]), add("issue", [4, "d", 1])])
    asc = {"table": "issue", "orderBy": [["priority", "asc"]], "limit": 2}
    desc = {"table": "issue", "orderBy": [["priority", "desc"]], "limit": 2}
    id_desc = {"table": "issue", "orderBy": [["id", "desc"]], "limit": 2}
    # asc: null(1) null(3) | 1(4) 3(2).  desc: 3(2) 1(4) | null(1) null(3).  id desc: 4 3 | 2 1.
    s.sub("asc1", 1, asc, 0, False, I,
          [add("issue", [1, "a", None]), add("issue", [3, "c", None])], 1)
    s.sub("desc1", 1, desc, 0, False, I, [add("issue", [2, "b", 3]), add("issue", [4, "d", 1])], 1)
    s.sub("iddesc", 1, id_desc, 0, False, I,
          [add("issue", [3, "c", None]), add("issue", [4, "d", 1])], 1)
    # Row 3: NULL -> 2.  asc: null(1) 1(4) | 2(3) 3(2): 3 out, 4 in.
    # desc: 3(2) 2(3) | 1(4) null(1): 3 in, 4 out.  id desc: 4 3, 3 edited.
    s.ok("apply", ub(1, [edit("issue", [3, "c", None], [3, "c", 2])], cv=2, fp=fp),
         expect=live_result(1))
    s.drain(("asc1", 1, 1, I, [rem("issue", [3, "c", None]), add("issue", [4, "d", 1])], 2),
            ("desc1", 1, 1, I, [add("issue", [3, "c", 2]), rem("issue", [4, "d", 1])], 2),
            ("iddesc", 1, 1, I, [edit("issue", [3, "c", None], [3, "c", 2])], 2))
    # Row 5 with NULL.  asc: null(1) null(5) | 1(4): 4 out, 5 in.  desc: unchanged.
    # id desc: 5 4 | 3: 3 out, 5 in.
    s.ok("apply", ub(2, [add("issue", [5, "e", None])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("asc1", 1, 2, I, [rem("issue", [4, "d", 1]), add("issue", [5, "e", None])], 3),
            ("iddesc", 1, 2, I, [rem("issue", [3, "c", 2]), add("issue", [5, "e", None])], 3))
    return s


def correlation_null_never_matches():
    issue = T("issue", ["id", "assignee"])
    user = T("user", ["id", "handle"])
    tables = by_name([issue, user])
    s = Scenario(
        "correlation_null_never_matches",
        "Correlations: a correlation never matches a NULL parent or child cell (join "
        "equality: NULL equals nothing, not even NULL) — for related children, EXISTS "
        "gates (and their witnesses) and NOT EXISTS alike — and edits into and out of "
        "NULL join and unjoin rows.",
        tables,
    )
    fp = _open(s, tables, [
        add("issue", [1, "ann"]), add("issue", [2, None]), add("issue", [3, "bob"]),
        add("user", [10, "ann"]), add("user", [11, None]), add("user", [12, "cy"]),
    ])
    link = (["assignee"], ["handle"])
    users = {"table": "user", "alias": "user"}
    r = {"table": "issue", "related": [related(*link, users)]}
    e = {"table": "issue", "where": exists(*link, users)}
    n = {"table": "issue", "where": exists(*link, users, op="NOT EXISTS")}
    IU = ["issue", "user"]
    s.sub("r1", 1, r, 0, False, IU, [
        add("issue", [1, "ann"]), add("issue", [2, None]), add("issue", [3, "bob"]),
        add("user", [10, "ann"]),
    ], 1)
    s.sub("e1", 1, e, 0, False, IU, [add("issue", [1, "ann"]), add("user", [10, "ann"])], 1)
    # NOT EXISTS has user in its hello (no witness here: a kept parent has no match).
    s.sub("n1", 1, n, 0, False, IU, [add("issue", [2, None]), add("issue", [3, "bob"])], 1)
    # User 11: NULL -> "bob" joins issue 3.
    s.ok("apply", ub(1, [edit("user", [11, None], [11, "bob"])], cv=2, fp=fp),
         expect=live_result(1))
    s.drain(("e1", 1, 1, IU, [add("issue", [3, "bob"]), add("user", [11, "bob"])], 2),
            ("n1", 1, 1, IU, [rem("issue", [3, "bob"])], 2),
            ("r1", 1, 1, IU, [add("user", [11, "bob"])], 2))
    # Issue 2: NULL -> "cy" joins user 12.
    s.ok("apply", ub(2, [edit("issue", [2, None], [2, "cy"])], cv=3, fp=fp),
         expect=live_result(1))
    s.drain(("e1", 1, 2, IU, [add("issue", [2, "cy"]), add("user", [12, "cy"])], 3),
            ("n1", 1, 2, IU, [rem("issue", [2, None])], 3),
            ("r1", 1, 2, IU, [edit("issue", [2, None], [2, "cy"]), add("user", [12, "cy"])], 3))
    # User 10: "ann" -> NULL unjoins issue 1.
    s.ok("apply", ub(3, [edit("user", [10, "ann"], [10, None])], cv=4, fp=fp),
         expect=live_result(1))
    s.drain(("e1", 1, 3, IU, [rem("issue", [1, "ann"]), rem("user", [10, "ann"])], 4),
            ("n1", 1, 3, IU, [add("issue", [1, "ann"])], 4),
            ("r1", 1, 3, IU, [rem("user", [10, "ann"])], 4))
    return s


def related_child_filters():
    comment = T("comment", ["id", "issueID", "body"])
    reaction = T("reaction", ["id", "commentID", "emoji"])
    tables = by_name([ISSUE, comment, reaction])
    s = Scenario(
        "related_child_filters",
        "A related child has its own where (here an EXISTS, whose witnesses ship "
        "for the child rows in the window), orderBy, start and per-parent limit "
        "(the limit applies after the where). Two relationships over one table share "
        "footprint members: a comment leaving one window stays while the other holds it, "
        "and a reaction ships only as a witness of a comment in the EXISTS path.",
        tables,
    )
    fp = _open(s, tables, [
        add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("comment", [10, 1, "a"]), add("comment", [11, 1, "b"]), add("comment", [12, 1, "c"]),
        add("comment", [20, 2, "d"]), add("comment", [21, 2, "e"]),
        add("reaction", [100, 11, "+"]), add("reaction", [101, 12, "+"]),
        add("reaction", [102, 21, "x"]),
    ])
    reacted = {"table": "comment", "alias": "reacted", "orderBy": [["id", "asc"]], "limit": 1,
               "where": exists(["id"], ["commentID"], {"table": "reaction", "alias": "reaction"})}
    later = {"table": "comment", "alias": "later", "orderBy": [["id", "asc"]],
             "start": {"row": {"id": 11}, "exclusive": True}}
    ast = {"table": "issue", "related": [related(["id"], ["issueID"], reacted),
                                         related(["id"], ["issueID"], later)]}
    names = ["comment", "issue", "reaction"]
    # Issue 1: reacted 11 (+100); later 12.  Issue 2: reacted 21 (+102); later 20 21.
    s.sub("s1", 1, ast, 0, False, names, [
        add("comment", [11, 1, "b"]), add("comment", [12, 1, "c"]), add("comment", [20, 2, "d"]),
        add("comment", [21, 2, "e"]), add("issue", [1, "one"]), add("issue", [2, "two"]),
        add("reaction", [100, 11, "+"]), add("reaction", [102, 21, "x"]),
    ], 1)
    # Comment 10 gets a reaction and tops issue 1's reacted window; 11 (not in later) goes
    # with its witness 100.
    s.ok("apply", ub(1, [add("reaction", [103, 10, "!"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 1, names, [
        add("comment", [10, 1, "a"]), rem("comment", [11, 1, "b"]),
        rem("reaction", [100, 11, "+"]), add("reaction", [103, 10, "!"]),
    ], 2))
    s.ok("apply", ub(2, [edit("comment", [12, 1, "c"], [12, 1, "C"])], cv=3, fp=fp),
         expect=live_result(1))
    s.drain(("s1", 1, 2, names, [edit("comment", [12, 1, "c"], [12, 1, "C"])], 3))
    # Issue 2 loses its only reaction: 21 leaves reacted but stays in later.
    s.ok("apply", ub(3, [rem("reaction", [102, 21, "x"])], cv=4, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 3, names, [rem("reaction", [102, 21, "x"])], 4))
    # Comment 20 (already present via later) enters reacted: only its witness is new.
    s.ok("apply", ub(4, [add("reaction", [104, 20, "y"])], cv=5, fp=fp), expect=live_result(1))
    s.drain(("s1", 1, 4, names, [add("reaction", [104, 20, "y"])], 5))
    return s


def exists_window_and_conjunction():
    perm = T("perm", ["id", "issueID", "roleID"])
    role = T("role", ["id", "name"])
    tables = by_name([ISSUE, perm, role, LABEL])
    s = Scenario(
        "exists_window_and_conjunction",
        "Witnesses belong only to rows in the result window (an EXISTS gate with a "
        "root limit 1 ships the witnesses of the one in-window issue, and the window "
        "moves with them); two EXISTS under AND both ship their witnesses; a "
        "permissions EXISTS prunes its whole witness subtree, nested EXISTS included, "
        "and none of its tables is in the hello.",
        tables,
    )
    fp = _open(s, tables, [
        add("issue", [1, "a"]), add("issue", [2, "b"]), add("issue", [3, "c"]),
        add("perm", [10, 1, 100]), add("perm", [11, 2, 100]), add("role", [100, "admin"]),
        add("label", [20, 1, "x"]), add("label", [21, 2, "y"]), add("label", [22, 3, "z"]),
    ])
    labels = {"table": "label", "alias": "label"}
    perms = {"table": "perm", "alias": "perm"}
    gated = dict(perms, where=exists(["roleID"], ["id"], {"table": "role", "alias": "role"}))
    and2 = {"table": "issue", "where": {"type": "and", "conditions": [
        exists(["id"], ["issueID"], labels), exists(["id"], ["issueID"], perms)]}}
    lim = {"table": "issue", "where": exists(["id"], ["issueID"], labels), "limit": 1}
    pn = {"table": "issue", "where": exists(["id"], ["issueID"], gated, system="permissions")}
    # and2: issues 1, 2 (3 has no perm) with labels 20, 21 and perms 10, 11.
    s.sub("and2", 1, and2, 0, False, ["issue", "label", "perm"], [
        add("issue", [1, "a"]), add("issue", [2, "b"]), add("label", [20, 1, "x"]),
        add("label", [21, 2, "y"]), add("perm", [10, 1, 100]), add("perm", [11, 2, 100]),
    ], 1)
    # lim: issues 1, 2, 3 pass; the window is issue 1, shipping label 20 only.
    s.sub("lim", 1, lim, 0, False, ["issue", "label"],
          [add("issue", [1, "a"]), add("label", [20, 1, "x"])], 1)
    # pn: issues whose perm has a role: 1, 2. No perm or role rows.
    s.sub("pn", 1, pn, 0, False, I, [add("issue", [1, "a"]), add("issue", [2, "b"])], 1)
    s.ok("apply", ub(1, [rem("label", [20, 1, "x"])], cv=2, fp=fp), expect=live_result(1))
    s.drain(("and2", 1, 1, ["issue", "label", "perm"], [
                rem("issue", [1, "a"]), rem("label", [20, 1, "x"]), rem("perm", [10, 1, 100])], 2),
            ("lim", 1, 1, ["issue", "label"], [
                rem("issue", [1, "a"]), add("issue", [2, "b"]),
                rem("label", [20, 1, "x"]), add("label", [21, 2, "y"])], 2))
    s.ok("apply", ub(2, [rem("role", [100, "admin"])], cv=3, fp=fp), expect=live_result(1))
    s.drain(("pn", 1, 1, I, [rem("issue", [1, "a"]), rem("issue", [2, "b"])], 3))
    return s


def related_deep_nesting():
    s = Scenario(
        "related_deep_nesting",
        "Related subqueries nest to any depth. A chain of 30 self-relationships "
        "(issue -> issue on id, 31 levels) is served; its footprint is the issues "
        "themselves (one member per (table, pk)) and the hello lists "
        "issue once.",
        [ISSUE],
    )
    _open(s, [ISSUE], [add("issue", [1, "a"]), add("issue", [2, "b"])])
    deep = {"table": "issue"}
    for i in range(30):
        deep = {"table": "issue",
                "related": [related(["id"], ["id"], dict(deep, alias="r%d" % i))]}
    s.sub("s1", 1, deep, 0, False, I, [add("issue", [1, "a"]), add("issue", [2, "b"])], 1)
    return s


def scenarios():
    return [
        window_limit(),
        window_start(),
        related_nested(),
        exists_witnesses_first_three(),
        exists_flip_all_witnesses(),
        exists_child_where_and_limit(),
        exists_permissions_and_not_exists(),
        exists_in_or_branch(),
        exists_nested_witnesses(),
        orderby_nulls_and_pk_direction(),
        correlation_null_never_matches(),
        related_child_filters(),
        exists_window_and_conjunction(),
        related_deep_nesting(),
    ]
