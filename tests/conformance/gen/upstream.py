"""Scenarios: the upstream hello (`open`) and batches (`apply`), cv/headCv, poisoning.

Every expected output below is derived by hand from the upstream rules of docs/protocol.md; the comment
above each step group says why.
"""

from lib import (DUPLICATE, Scenario, T, add, edit, hello, live_result, normalized_fp, rem,
                 snap_result, stale_result)

NOTE = T("note", ["id", "body"])
FP_NOTE = "d0ffe1b66912a02b"  # a worked normalizedFp value (tests/vectors/fp_vectors.py)
ALL = {"table": "note"}


def ub(seq, ops, epoch=1, cv=None, fp=FP_NOTE):
    """An upstream nbatch.batch."""
    b = {"epoch": epoch, "seq": seq, "normalizedFp": fp}
    if cv is not None:
        b["cv"] = cv
    b["ops"] = ops
    return b


def open_lifecycle():
    s = Scenario(
        "open_lifecycle",
        "A freshly opened room before and after an empty seq-0 snapshot: "
        "epoch() is the hello's epoch; not live and cv() undefined before the snapshot; "
        "commitAll() is [] while not live; the snapshot makes it live with headCv 1 and "
        "cv the batch's cv; a subscribe then gets a seq-0 snapshot even with zero ops "
        "stamped cv = headCv.",
        [NOTE],
    )
    s.ok("open", hello([NOTE], epoch=3), 30000, expect="null")
    s.ok("epoch", expect="3")
    s.ok("isLive", expect="false")
    s.ok("isPoisoned", expect="false")
    s.ok("cv", expect="null")
    s.ok("materializationCount", expect="0")
    s.ok("subscriberCount", expect="0")
    s.ok("commitAll", expect="[]")
    s.ok("apply", ub(0, [], epoch=3, cv=10), expect=snap_result(0))
    s.ok("isLive", expect="true")
    s.ok("isPoisoned", expect="false")
    s.ok("cv", expect="10")
    s.ok("headCv", expect="1")
    s.ok("epoch", expect="3")
    s.sub("c1:1", 1, ALL, 0, False, ["note"], [], 1)
    s.ok("subscriberCount", expect="1")
    s.ok("materializationCount", expect="1")
    s.ok("commitAll", expect="[]")
    return s


def hello_refusals():
    good = hello([NOTE])
    s = Scenario(
        "hello_refusals",
        "open() refuses every hello that breaks a rule of the hello — comparatorVersion "
        "other than 2, a "
        "normalizedFp that is not the fingerprint of the tables as sent ("
        "table order matters), an empty/out-of-range/non-integer primary key, a duplicate "
        "column, a duplicate table, an empty table name — plus non-object input and a "
        "negative idle_ttl_ms; each error names what was wrong and nothing is "
        "constructed (later calls find no room). A valid hello then opens.",
        [NOTE],
    )
    cv1 = dict(good, comparatorVersion=1)
    s.err("open", cv1, 30000, error="comparatorVersion")
    cv_str = dict(good, comparatorVersion="2")
    s.err("open", cv_str, 30000, error="comparatorVersion")
    s.err("open", dict(good, normalizedFp="0000000000000000"), 30000, error="normalizedFp")
    acl = T("acl", ["id", "principal"])
    # [note, acl] sent with the fingerprint of [acl, note] (7e03c732f8965727).
    swapped = {"epoch": 1, "comparatorVersion": 2, "tables": [NOTE, acl],
               "normalizedFp": normalized_fp([acl, NOTE])}
    assert swapped["normalizedFp"] == "7e03c732f8965727"
    s.err("open", swapped, 30000, error="normalizedFp")
    empty_pk = T("note", ["id", "body"], pk=[])
    s.err("open", hello([empty_pk]), 30000, error="primaryKey")
    # An out-of-range / negative / fractional index has no fingerprint; send the one
    # of the table with pk [0] so the key is the only defect.
    for bad in ([2], [-1], [0.5]):
        t = T("note", ["id", "body"], pk=bad)
        h = {"epoch": 1, "comparatorVersion": 2, "tables": [t], "normalizedFp": FP_NOTE}
        s.err("open", h, 30000, error="primaryKey")
    dup_col = T("note", ["id", "id"])
    s.err("open", hello([dup_col]), 30000, error='"id"')
    s.err("open", hello([NOTE, NOTE]), 30000, error='"note"')
    s.err("open", hello([T("", ["id"])]), 30000, error="name")
    s.err("open", [], 30000, error="hello")
    no_tables = {"epoch": 1, "comparatorVersion": 2, "normalizedFp": FP_NOTE}
    s.err("open", no_tables, 30000, error="tables")
    s.err("open", dict(good, epoch=-1), 30000, error="epoch")
    s.err("open", dict(good, epoch=1.5), 30000, error="epoch")
    s.err("open", good, -1, error="idle_ttl_ms")
    # Nothing was constructed by any refusal.
    s.err("isLive", error="no room")
    s.err("epoch", error="no room")
    s.ok("open", good, 30000, expect="null")
    s.ok("epoch", expect="1")
    s.ok("isLive", expect="false")
    return s


def apply_snapshot_then_live():
    s = Scenario(
        "apply_snapshot_then_live",
        "apply() outcomes and the two counters: the seq-0 snapshot returns "
        "{applied:snapshot, rows} and sets headCv 1; each next seq returns "
        "{applied:live, ops: <ops in the batch>} and bumps headCv by exactly 1 (an empty "
        "batch too); cv() is always the last applied batch's cv field (fractions kept). A "
        "later subscribe snapshots the current head stamped cv = headCv.",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [2, "b"]), add("note", [1, "a"])], cv=100),
         expect=snap_result(2))
    s.ok("cv", expect="100")
    s.ok("headCv", expect="1")
    s.ok("isLive", expect="true")
    s.ok("apply", ub(1, [add("note", [3, "c"]), edit("note", [1, "a"], [1, "A"]),
                         rem("note", [2, "b"])], cv=101), expect=live_result(3))
    s.ok("cv", expect="101")
    s.ok("headCv", expect="2")
    s.ok("apply", ub(2, [], cv=105), expect=live_result(0))
    s.ok("cv", expect="105")
    s.ok("headCv", expect="3")
    s.ok("apply", ub(3, [add("note", [4, "d"])], cv=106.5), expect=live_result(1))
    s.ok("cv", expect="106.5")
    s.ok("headCv", expect="4")
    s.sub("c1", 1, ALL, 0, False, ["note"],
          [add("note", [1, "A"]), add("note", [3, "c"]), add("note", [4, "d"])], 4)
    s.ok("commitAll", expect="[]")
    return s


def apply_duplicate_and_stale_epoch():
    s = Scenario(
        "apply_duplicate_and_stale_epoch",
        "A batch from a lower epoch is ignored with {applied:staleEpoch, expected: "
        "<store epoch>, got: <batch epoch>} (before and after the snapshot); seq <= last "
        "is {applied:duplicate}. Neither changes the head, headCv or cv.",
        [NOTE],
    )
    s.ok("open", hello([NOTE], epoch=2), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"])], epoch=1, cv=1), expect=stale_result(2, 1))
    s.ok("isLive", expect="false")
    s.ok("apply", ub(0, [add("note", [1, "a"])], epoch=2, cv=1), expect=snap_result(1))
    s.ok("apply", ub(0, [add("note", [9, "z"])], epoch=2, cv=50), expect=DUPLICATE)
    s.ok("headCv", expect="1")
    s.ok("cv", expect="1")
    s.ok("apply", ub(1, [add("note", [2, "b"])], epoch=2, cv=2), expect=live_result(1))
    s.ok("apply", ub(1, [add("note", [8, "y"])], epoch=2, cv=60), expect=DUPLICATE)
    s.ok("apply", ub(2, [add("note", [7, "x"])], epoch=1, cv=70), expect=stale_result(2, 1))
    s.ok("apply", ub(5, [], epoch=0, cv=80), expect=stale_result(2, 0))
    s.ok("headCv", expect="2")
    s.ok("cv", expect="2")
    s.ok("epoch", expect="2")
    s.sub("c1", 1, ALL, 0, False, ["note"], [add("note", [1, "a"]), add("note", [2, "b"])], 2)
    return s


def apply_errors_keep_room_usable():
    s = Scenario(
        "apply_errors_keep_room_usable",
        "Upstream errors that are not poison: a first batch that is not seq 0, an epoch ahead of "
        "the store, a normalizedFp mismatch, a snapshot holding a non-add op, and a seq gap "
        "after the snapshot. Each is an error; the store is not poisoned and nothing "
        "changed, so the right batch still applies afterwards.",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.err("apply", ub(1, [add("note", [1, "a"])]), error="seq")
    s.err("apply", ub(0, [add("note", [1, "a"])], epoch=2), error="epoch")
    s.err("apply", ub(0, [add("note", [1, "a"])], fp="0000000000000000"), error="normalizedFp")
    s.err("apply", ub(0, [rem("note", [1, "a"])]), error="add")
    s.ok("isPoisoned", expect="false")
    s.ok("isLive", expect="false")
    s.ok("cv", expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"])], cv=5), expect=snap_result(1))
    s.err("apply", ub(3, [add("note", [2, "b"])], cv=6), error="gap")
    s.err("apply", ub(1, [add("note", [2, "b"])], epoch=2, cv=6), error="epoch")
    s.err("apply", ub(1, [add("note", [2, "b"])], cv=6, fp="0123456789abcdef"),
          error="normalizedFp")
    s.ok("isPoisoned", expect="false")
    s.ok("isLive", expect="true")
    s.ok("headCv", expect="1")
    s.ok("cv", expect="5")
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=6), expect=live_result(1))
    s.ok("headCv", expect="2")
    s.ok("apply", ub(1, [add("note", [2, "b"])], cv=6), expect=DUPLICATE)
    s.err("apply", ub(3, [add("note", [3, "c"])], cv=7), error="gap")
    s.sub("c1", 1, ALL, 0, False, ["note"], [add("note", [1, "a"]), add("note", [2, "b"])], 2)
    return s


def _poison(name, what, bad_ops):
    s = Scenario(
        name,
        "Poison: a live batch with %s poisons the store. The apply errors; "
        "isPoisoned() is true and isLive() false; commitAll() returns [] (even though "
        "an earlier op of the same batch was valid and a subscriber is attached); every "
        "later call that needs the head errors (subscribe, apply)." % what,
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [1, "a"])], cv=1), expect=snap_result(1))
    s.sub("c1", 1, ALL, 0, False, ["note"], [add("note", [1, "a"])], 1)
    s.ok("isPoisoned", expect="false")
    s.err("apply", ub(1, [add("note", [2, "b"])] + bad_ops, cv=2), error="poison")
    s.ok("isPoisoned", expect="true")
    s.ok("isLive", expect="false")
    s.ok("commitAll", expect="[]")
    s.err("subscribe", "c2", 1, ALL, 0, error="poison")
    s.err("apply", ub(2, [add("note", [3, "c"])], cv=3), error="poison")
    s.ok("isPoisoned", expect="true")
    s.ok("commitAll", expect="[]")
    return s


def scenarios():
    return [
        open_lifecycle(),
        hello_refusals(),
        apply_snapshot_then_live(),
        apply_duplicate_and_stale_epoch(),
        apply_errors_keep_room_usable(),
        _poison("poison_duplicate_add", "an add of an existing key",
                [add("note", [1, "x"])]),
        _poison("poison_missing_remove", "a remove of a missing key",
                [rem("note", [9, "z"])]),
        _poison("poison_missing_edit", "an edit of a missing key",
                [edit("note", [9, "z"], [9, "y"])]),
        _poison("poison_wrong_width", "a row of the wrong width", [add("note", [3])]),
    ]
