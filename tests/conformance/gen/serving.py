"""Scenarios: subscribe shape, QueryKey dedup, per-subscriber envelopes, re-subscribe,
unsubscribe/sweep, and commitAll op netting (the published WasmRoom API, docs/protocol.md
`nbatch`, docs/design/wire.md: The normalized protocol).

commitAll entries are listed in subscriber-key byte order: the spec leaves the order of
entries open; the room documents this order (Room::commit_all), and one drain never
holds two entries for one subscriber.
"""

from lib import Scenario, T, add, by_name, cmp, edit, hello, live_result, rem, related, snap_result
from upstream import ALL, NOTE, ub

N = ["note"]


def subscribe_hello_and_snapshot():
    issue = T("issue", ["id", "title", "priority"])
    note = T("Note", ["id", "issueID", "body"])
    label = T("label", ["id", "issueID", "name"])
    tables = by_name([issue, note, label])  # the hello lists them by name: Note, issue, label
    s = Scenario(
        "subscribe_hello_and_snapshot",
        "subscribe() returns {queryKey, reused, hello, snapshot}. hello = "
        "{epoch, comparatorVersion 2, tables, normalizedFp}, tables = every table the "
        "footprint can draw from, sorted by name in BYTE order ('Note' < 'issue'), full "
        "width in the upstream column order, normalizedFp over that list; tables the query "
        "does not read are left out. The snapshot is seq 0, epoch = the subscriber's, ops "
        "= the whole footprint as adds ordered by table name then primary key in "
        "comparator order (2 < 9 < 10; 'B' < 'a' < 'b'), cv = headCv. A root orderBy does "
        "not change op order.",
        tables,
    )
    fp = hello(tables)["normalizedFp"]
    s.ok("open", hello(tables), 30000, expect="null")
    rows = [
        add("issue", [10, "ten", 1]), add("issue", [2, "two", 2]), add("issue", [9, "nine", 3]),
        add("Note", ["b", 2, "x"]), add("Note", ["B", 10, "y"]), add("Note", ["a", 9, "z"]),
        add("Note", ["zz", 99, "orphan"]), add("label", [1, 2, "bug"]),
    ]
    s.ok("apply", ub(0, rows, cv=1, fp=fp), expect=snap_result(8))
    s.ok("apply", ub(1, [add("label", [2, 9, "ui"])], cv=2, fp=fp), expect=live_result(1))
    s.ok("headCv", expect="2")
    ast = {"table": "issue",
           "related": [related(["id"], ["issueID"], {"table": "Note", "alias": "notes"})]}
    # Footprint: all three issues, and the notes of issues 10, 2, 9 ("zz" has no parent).
    s.sub("s1", 1, ast, 0, False, ["Note", "issue"], [
        add("Note", ["B", 10, "y"]), add("Note", ["a", 9, "z"]), add("Note", ["b", 2, "x"]),
        add("issue", [2, "two", 2]), add("issue", [9, "nine", 3]), add("issue", [10, "ten", 1]),
    ], 2)
    s.sub("s2", 7, {"table": "label"}, 0, False, ["label"],
          [add("label", [1, 2, "bug"]), add("label", [2, 9, "ui"])], 2)
    by_priority = {"table": "issue", "orderBy": [["priority", "desc"]]}
    s.sub("s3", 1, by_priority, 0, False, ["issue"], [
        add("issue", [2, "two", 2]), add("issue", [9, "nine", 3]), add("issue", [10, "ten", 1]),
    ], 2)
    s.ok("materializationCount", expect="3")
    s.ok("subscriberCount", expect="3")
    return s


def querykey_dedup():
    s = Scenario(
        "querykey_dedup",
        "QueryKey dedup: an identical AST "
        "reuses the materialized pipeline — reused true, the same queryKey — while each "
        "subscriber still gets its own hello/snapshot epoch; a different AST materializes "
        "a second pipeline with a different queryKey.",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"]), add("note", [2, "b"]), add("note", [3, "c"])],
                     cv=1), expect=snap_result(3))
    a = {"table": "note", "where": cmp("id", ">", 1)}
    b = {"table": "note", "orderBy": [["id", "desc"]]}
    s.sub("s1", 1, a, 0, False, N, [add("note", [2, "b"]), add("note", [3, "c"])], 1)
    s.ok("materializationCount", expect="1")
    s.ok("subscriberCount", expect="1")
    s.sub("s2", 4, a, 0, True, N, [add("note", [2, "b"]), add("note", [3, "c"])], 1)
    s.ok("materializationCount", expect="1")
    s.ok("subscriberCount", expect="2")
    all3 = [add("note", [1, "a"]), add("note", [2, "b"]), add("note", [3, "c"])]
    s.sub("s3", 1, b, 0, False, N, all3, 1)
    s.ok("materializationCount", expect="2")
    s.ok("subscriberCount", expect="3")
    s.sub("s4", 2, b, 0, True, N, all3, 1)
    s.ok("materializationCount", expect="2")
    s.ok("subscriberCount", expect="4")
    return s


def per_subscriber_envelopes():
    tag = T("tag", ["id", "name"])
    tables = [NOTE, tag]
    s = Scenario(
        "per_subscriber_envelopes",
        "Epoch per subscriber is the host's, seq is per subscriber from 0. Subscribers "
        "sharing one pipeline each get their own {epoch, seq} in the same drain; a "
        "subscriber that joins later starts its own seq; a subscriber whose query did not "
        "change gets no entry; an empty drain emits nothing and consumes no seq; every "
        "batch carries cv = headCv at the drain.",
        tables,
    )
    fp = hello(tables)["normalizedFp"]
    s.ok("open", hello(tables), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"]), add("tag", [1, "t"])], cv=1, fp=fp),
         expect=snap_result(2))
    s.sub("s1", 1, ALL, 0, False, N, [add("note", [1, "a"])], s.head)
    s.sub("s2", 5, ALL, 0, True, N, [add("note", [1, "a"])], s.head)
    s.sub("t1", 3, {"table": "tag"}, 0, False, ["tag"], [add("tag", [1, "t"])], s.head)
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=11, fp=fp), expect=live_result(1))
    ops = [add("note", [2, "b"])]
    s.drain(("s1", 1, 1, N, ops, s.head), ("s2", 5, 1, N, ops, s.head))
    s.sub("s3", 2, ALL, 0, True, N, [add("note", [1, "a"]), add("note", [2, "b"])], s.head)
    s.ok("apply", ub(2, [edit("note", [1, "a"], [1, "A"]), add("tag", [2, "u"])], cv=12, fp=fp),
         expect=live_result(2))
    ops = [edit("note", [1, "a"], [1, "A"])]
    s.drain(("s1", 1, 2, N, ops, s.head), ("s2", 5, 2, N, ops, s.head),
            ("s3", 2, 1, N, ops, s.head), ("t1", 3, 1, ["tag"], [add("tag", [2, "u"])], s.head))
    s.ok("apply", ub(3, [], cv=13, fp=fp), expect=live_result(0))
    s.ok("commitAll", expect="[]")
    s.ok("apply", ub(4, [rem("note", [2, "b"])], cv=14, fp=fp), expect=live_result(1))
    ops = [rem("note", [2, "b"])]
    s.drain(("s1", 1, 3, N, ops, s.head), ("s2", 5, 3, N, ops, s.head),
            ("s3", 2, 2, N, ops, s.head))
    s.ok("commitAll", expect="[]")
    return s


def resubscribe_replaces_envelope():
    s = Scenario(
        "resubscribe_replaces_envelope",
        "Re-subscribing an existing sub replaces its envelope: the new epoch, seq "
        "restarting at 0, one subscriber not two. The same AST is still materialized, so "
        "it is reused and the snapshot is the query's state at its last drain; a change "
        "made since then arrives with the next drain. A re-subscribe with a different AST "
        "moves the subscriber to a new pipeline (the old one stays materialized, idle).",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"])], cv=1), expect=snap_result(1))
    s.sub("s1", 1, ALL, 0, False, N, [add("note", [1, "a"])], s.head)
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=2), expect=live_result(1))
    s.drain(("s1", 1, 1, N, [add("note", [2, "b"])], s.head))
    # The query's state at this drain, and the drain's cv: what a reuse snapshots.
    at_drain, drain_cv = [add("note", [1, "a"]), add("note", [2, "b"])], s.head
    s.ok("apply", ub(2, [add("note", [3, "c"])], cv=3), expect=live_result(1))
    s.sub("s1", 2, ALL, 10, True, N, at_drain, drain_cv)
    s.ok("subscriberCount", expect="1")
    s.ok("materializationCount", expect="1")
    # The change made after that drain reaches the re-subscribed s1 with the next one.
    s.drain(("s1", 2, 1, N, [add("note", [3, "c"])], s.head))
    s.ok("apply", ub(3, [rem("note", [1, "a"])], cv=4), expect=live_result(1))
    s.drain(("s1", 2, 2, N, [rem("note", [1, "a"])], s.head))
    # A change lands, then s1 moves to another query before any drain: that query is
    # built now, so its snapshot is the current head, and the old pipeline has nobody to
    # send the change to.
    s.ok("apply", ub(4, [add("note", [4, "d"])], cv=5), expect=live_result(1))
    gt2 = {"table": "note", "where": cmp("id", ">", 2)}
    s.sub("s1", 3, gt2, 20, False, N, [add("note", [3, "c"]), add("note", [4, "d"])], s.head)
    s.ok("subscriberCount", expect="1")
    s.ok("materializationCount", expect="2")
    s.ok("commitAll", expect="[]")
    s.ok("apply", ub(5, [add("note", [5, "e"])], cv=6), expect=live_result(1))
    s.drain(("s1", 3, 1, N, [add("note", [5, "e"])], s.head))
    return s


def unsubscribe_and_sweep():
    tag = T("tag", ["id", "name"])
    tables = [NOTE, tag]
    s = Scenario(
        "unsubscribe_and_sweep",
        "unsubscribe returns whether the sub was attached (idempotent: false the "
        "second time, false for an unknown sub); a detached sub gets no frames; its query "
        "stays materialized and a quick re-subscribe reuses it; sweep(now) reclaims only "
        "queries with no subscribers idle longer than idle_ttl_ms (1000 here; boundaries "
        "avoided by a millisecond on each side), returns how many, and a re-subscribe "
        "resets the idle clock. A swept query materializes afresh (reused false).",
        tables,
    )
    fp = hello(tables)["normalizedFp"]
    s.ok("open", hello(tables), 1000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"]), add("tag", [1, "t"])], cv=1, fp=fp),
         expect=snap_result(2))
    s.sub("s1", 1, ALL, 0, False, N, [add("note", [1, "a"])], 1)
    s.sub("s2", 1, ALL, 0, True, N, [add("note", [1, "a"])], 1)
    s.sub("t1", 1, {"table": "tag"}, 0, False, ["tag"], [add("tag", [1, "t"])], 1)
    s.ok("unsubscribe", "s1", 100, expect="true")
    s.ok("unsubscribe", "s1", 100, expect="false")
    s.ok("unsubscribe", "nobody", 100, expect="false")
    s.ok("subscriberCount", expect="2")
    s.ok("materializationCount", expect="2")
    s.ok("unsubscribe", "s2", 200, expect="true")
    s.ok("subscriberCount", expect="1")
    s.ok("materializationCount", expect="2")
    s.ok("sweep", 1199, expect="0")
    s.ok("materializationCount", expect="2")
    s.ok("sweep", 1201, expect="1")
    s.ok("materializationCount", expect="1")
    s.ok("sweep", 5000, expect="0")
    s.ok("apply", ub(1, [add("note", [2, "b"]), add("tag", [2, "u"])], cv=2, fp=fp),
         expect=live_result(2))
    s.drain(("t1", 1, 1, ["tag"], [add("tag", [2, "u"])], 2))
    s.sub("s1", 2, ALL, 5100, False, N, [add("note", [1, "a"]), add("note", [2, "b"])], 2)
    s.ok("materializationCount", expect="2")
    s.ok("unsubscribe", "s1", 5200, expect="true")
    s.sub("s1", 3, ALL, 5300, True, N, [add("note", [1, "a"]), add("note", [2, "b"])], 2)
    s.ok("unsubscribe", "s1", 5400, expect="true")
    # Idle since 5400 (not 5200): 1100 ms after 5200 but 900 after 5400.
    s.ok("sweep", 6300, expect="0")
    s.ok("sweep", 6401, expect="1")
    s.ok("materializationCount", expect="1")
    s.ok("subscriberCount", expect="1")
    return s


def commit_netting():
    s = Scenario(
        "commit_netting",
        "Op netting: one commitAll holds the NET change per (table, pk) since the "
        "subscriber's last frame — absent->present add (new image), present->absent "
        "remove (the image the subscriber holds), changed image edit {old, new}, "
        "unchanged nothing — across several applies; a net-empty drain emits no frame and "
        "consumes no seq; ops ordered by primary key in comparator order (6 < 10).",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"]), add("note", [2, "b"]), add("note", [3, "c"])],
                     cv=1), expect=snap_result(3))
    s.sub("s1", 1, ALL, 0, False, N,
          [add("note", [1, "a"]), add("note", [2, "b"]), add("note", [3, "c"])], 1)
    s.ok("apply", ub(1, [add("note", [4, "d"]), edit("note", [1, "a"], [1, "A"]),
                         rem("note", [2, "b"])], cv=2), expect=live_result(3))
    s.drain(("s1", 1, 1, N, [edit("note", [1, "a"], [1, "A"]), rem("note", [2, "b"]),
                             add("note", [4, "d"])], 2))
    # add then remove: nothing.
    s.ok("apply", ub(2, [add("note", [5, "e"])], cv=3), expect=live_result(1))
    s.ok("apply", ub(3, [rem("note", [5, "e"])], cv=4), expect=live_result(1))
    s.ok("commitAll", expect="[]")
    # add then edit: one add with the latest image; seq 2 (the empty drain used none).
    s.ok("apply", ub(4, [add("note", [6, "f"])], cv=5), expect=live_result(1))
    s.ok("apply", ub(5, [edit("note", [6, "f"], [6, "F"])], cv=6), expect=live_result(1))
    s.drain(("s1", 1, 2, N, [add("note", [6, "F"])], 6))
    # edit and edit back: nothing.
    s.ok("apply", ub(6, [edit("note", [3, "c"], [3, "x"])], cv=7), expect=live_result(1))
    s.ok("apply", ub(7, [edit("note", [3, "x"], [3, "c"])], cv=8), expect=live_result(1))
    s.ok("commitAll", expect="[]")
    # edit then remove: a remove carrying the image the subscriber holds.
    s.ok("apply", ub(8, [edit("note", [3, "c"], [3, "y"])], cv=9), expect=live_result(1))
    s.ok("apply", ub(9, [rem("note", [3, "y"])], cv=10), expect=live_result(1))
    s.drain(("s1", 1, 3, N, [rem("note", [3, "c"])], 10))
    # remove then re-add with another image: an edit.
    s.ok("apply", ub(10, [rem("note", [4, "d"])], cv=11), expect=live_result(1))
    s.ok("apply", ub(11, [add("note", [4, "D"])], cv=12), expect=live_result(1))
    s.drain(("s1", 1, 4, N, [edit("note", [4, "d"], [4, "D"])], 12))
    # remove then re-add the same image: nothing.
    s.ok("apply", ub(12, [rem("note", [1, "A"])], cv=13), expect=live_result(1))
    s.ok("apply", ub(13, [add("note", [1, "A"])], cv=14), expect=live_result(1))
    s.ok("commitAll", expect="[]")
    # Several keys in one batch, applied in non-key order.
    s.ok("apply", ub(14, [add("note", [10, "j"]), edit("note", [6, "F"], [6, "G"]),
                          rem("note", [4, "D"]), add("note", [0, "z"])], cv=15),
         expect=live_result(4))
    s.drain(("s1", 1, 5, N, [add("note", [0, "z"]), rem("note", [4, "D"]),
                             edit("note", [6, "F"], [6, "G"]), add("note", [10, "j"])], 15))
    s.ok("headCv", expect="15")
    return s


def reuse_with_pending_changes():
    s = Scenario(
        "reuse_with_pending_changes",
        "A subscriber that joins a reused query while changes are still undrained gets "
        "the query's state at its last drain, stamped with that drain's cv (the published "
        "room's rule); the next drain brings those changes to every subscriber, the "
        "newcomer included. A key added before the join and removed after it nets to "
        "nothing for everyone.",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"])], cv=1), expect=snap_result(1))
    # Built now: its first state stands in for a drain.
    at_drain, drain_cv = [add("note", [1, "a"])], s.head
    s.sub("s1", 1, ALL, 0, False, N, at_drain, drain_cv)
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=2), expect=live_result(1))
    s.sub("s2", 1, ALL, 0, True, N, at_drain, drain_cv)
    ops = [add("note", [2, "b"])]
    s.drain(("s1", 1, 1, N, ops, s.head), ("s2", 1, 1, N, ops, s.head))
    s.ok("apply", ub(2, [edit("note", [1, "a"], [1, "A"])], cv=3), expect=live_result(1))
    ops = [edit("note", [1, "a"], [1, "A"])]
    s.drain(("s1", 1, 2, N, ops, s.head), ("s2", 1, 2, N, ops, s.head))
    at_drain, drain_cv = [add("note", [1, "A"]), add("note", [2, "b"])], s.head
    s.ok("apply", ub(3, [add("note", [3, "c"])], cv=4), expect=live_result(1))
    s.sub("s3", 1, ALL, 0, True, N, at_drain, drain_cv)
    # Key 3 came and went between two drains: no subscriber's frame carries it.
    s.ok("apply", ub(4, [rem("note", [3, "c"])], cv=5), expect=live_result(1))
    s.ok("commitAll", expect="[]")
    s.ok("apply", ub(5, [add("note", [4, "d"])], cv=6), expect=live_result(1))
    ops = [add("note", [4, "d"])]
    s.drain(("s1", 1, 3, N, ops, s.head), ("s2", 1, 3, N, ops, s.head),
            ("s3", 1, 1, N, ops, s.head))
    return s


def composite_pk_order():
    t = T("t", ["a", "b", "c"], pk=[1, 0])
    s = Scenario(
        "composite_pk_order",
        "A composite primary key [1, 0] (worked fingerprint 4d7c6430abf59f10): "
        "the downstream hello keeps primaryKey [1, 0], and ops are ordered by the key "
        "cells in primaryKey order — column b first, then a.",
        [t],
    )
    h = hello([t])
    assert h["normalizedFp"] == "4d7c6430abf59f10"
    s.ok("open", h, 30000, expect="null")
    rows = [add("t", [1, "x", 0]), add("t", [2, "w", 0]), add("t", [0, "x", 0]),
            add("t", [5, "a", 1])]
    s.ok("apply", ub(0, rows, cv=1, fp=h["normalizedFp"]), expect=snap_result(4))
    s.sub("s1", 1, {"table": "t"}, 0, False, ["t"], [
        add("t", [5, "a", 1]), add("t", [2, "w", 0]), add("t", [0, "x", 0]), add("t", [1, "x", 0]),
    ], 1)
    s.ok("apply", ub(1, [edit("t", [0, "x", 0], [0, "x", 7]), add("t", [3, "w", 9]),
                         rem("t", [5, "a", 1])], cv=2, fp=h["normalizedFp"]),
         expect=live_result(3))
    s.drain(("s1", 1, 1, ["t"], [rem("t", [5, "a", 1]), add("t", [3, "w", 9]),
                                 edit("t", [0, "x", 0], [0, "x", 7])], 2))
    return s


def scenarios():
    return [
        subscribe_hello_and_snapshot(),
        querykey_dedup(),
        per_subscriber_envelopes(),
        resubscribe_replaces_envelope(),
        unsubscribe_and_sweep(),
        commit_netting(),
        reuse_with_pending_changes(),
        composite_pk_order(),
    ]
