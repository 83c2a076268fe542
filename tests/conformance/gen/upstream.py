"""Scenarios: the upstream hello (`open`) and batches (`apply`), cv/headCv, poisoning.

Every expected output below is derived by hand from the upstream rules of docs/protocol.md; the comment
above each step group says why.
"""

from lib import (DUPLICATE, Scenario, T, add, edit, hello, js, live_result, normalized_fp,
                 rem, snap_result, stale_result)

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


def eb(seq, ops, cv=None, epoch=1, fp=FP_NOTE):
    """An upstream batch with `cv` after `ops` (member order is free on the wire)."""
    b = {"epoch": epoch, "seq": seq, "normalizedFp": fp, "ops": ops}
    if cv is not None:
        b["cv"] = cv
    return b


def open_lifecycle():
    s = Scenario(
        "open_lifecycle",
        "A freshly opened room before and after an empty seq-0 snapshot: "
        "epoch() is the hello's epoch; not live and cv() undefined before the snapshot; "
        "commitAll() is [] while not live; the snapshot makes it live with headCv and "
        "cv() both the batch's cv (10); a subscribe then gets a seq-0 snapshot even with zero ops "
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
    s.ok("headCv", expect=js(s.head))  # the snapshot's cv
    s.ok("epoch", expect="3")
    s.sub("c1:1", 1, ALL, 0, False, ["note"], [], s.head)
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
        "normalizedFp that is not the fingerprint of the tables as sent, an "
        "empty/out-of-range/non-integer primary key, a duplicate column, a duplicate "
        "table, an empty table name — plus non-object input and a negative idle_ttl_ms; "
        "each error names what was wrong and constructs nothing: the room a valid "
        "two-table hello opened among them stays as it was. A valid hello then opens "
        "afresh.",
        [NOTE],
    )
    cv1 = dict(good, comparatorVersion=1)
    s.err("open", cv1, 30000, error="comparatorVersion")
    cv_str = dict(good, comparatorVersion="2")
    s.err("open", cv_str, 30000, error="comparatorVersion")
    s.err("open", dict(good, normalizedFp="0000000000000000"), 30000, error="normalizedFp")
    acl = T("acl", ["id", "principal"])
    # [acl, note], sorted by name, with its fingerprint (7e03c732f8965727): a valid hello,
    # so this one opens a room and the refusals after it leave that room as it was.
    by_name = hello([acl, NOTE])
    assert by_name["normalizedFp"] == normalized_fp([acl, NOTE]) == "7e03c732f8965727"
    s.ok("open", by_name, 30000, expect="null")
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
    s.err("open", good, -1, error="idleTtlMs")
    # No refusal constructed anything: the room opened above is still the one.
    s.ok("isLive", expect="false")
    s.ok("epoch", expect="1")
    s.ok("open", good, 30000, expect="null")
    s.ok("epoch", expect="1")
    s.ok("isLive", expect="false")
    return s


def apply_snapshot_then_live():
    s = Scenario(
        "apply_snapshot_then_live",
        "apply() outcomes and the two counters: the seq-0 snapshot returns "
        "{applied:snapshot, rows} and sets headCv to the snapshot's cv; each next seq "
        "returns {applied:live, ops: <ops in the batch>} and moves headCv to the greater "
        "of headCv + 1 and the batch's cv (an empty batch too); cv() is always the last "
        "applied batch's cv. A later subscribe snapshots the current head stamped cv = "
        "headCv.",
        [NOTE],
    )
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", ub(0, [add("note", [2, "b"]), add("note", [1, "a"])], cv=100),
         expect=snap_result(2))
    s.ok("cv", expect="100")
    s.ok("headCv", expect=js(s.head))  # 100, the snapshot's cv
    s.ok("isLive", expect="true")
    s.ok("apply", ub(1, [add("note", [3, "c"]), edit("note", [1, "a"], [1, "A"]),
                         rem("note", [2, "b"])], cv=101), expect=live_result(3))
    s.ok("cv", expect="101")
    s.ok("headCv", expect=js(s.head))  # max(100 + 1, 101)
    s.ok("apply", ub(2, [], cv=105), expect=live_result(0))
    s.ok("cv", expect="105")
    s.ok("headCv", expect=js(s.head))  # max(101 + 1, 105): the batch's cv
    s.ok("apply", ub(3, [add("note", [4, "d"])], cv=106), expect=live_result(1))
    s.ok("cv", expect="106")
    s.ok("headCv", expect=js(s.head))
    s.sub("c1", 1, ALL, 0, False, ["note"],
          [add("note", [1, "A"]), add("note", [3, "c"]), add("note", [4, "d"])], s.head)
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


def apply_envelope_rules():
    s = Scenario(
        "apply_envelope_rules",
        "The upstream envelope, as the published room takes it. A batch of another epoch, "
        "older or newer, is ignored as staleEpoch, before anything else is checked. Every "
        "batch carries `cv`, a non-negative integer: a batch without one, or with a "
        "fraction, is an error that leaves the room usable (nothing applied, not "
        "poisoned), as is text that is not a batch. headCv is the snapshot's cv, then per "
        "live batch the greater of headCv + 1 and the batch's cv; cv() is the last "
        "batch's cv. A seq at or below the last is a duplicate.",
        [NOTE],
    )
    r0, r1, r2, r3 = ([i + 1, "r%d" % i] for i in range(4))
    s.ok("open", hello([NOTE]), 30000, expect="null")
    # The epoch is checked first: a newer one, and an older one whose fingerprint is
    # wrong too, are both only stale.
    s.ok("apply", eb(0, [add("note", r0)], 5, epoch=2), expect=stale_result(1, 2))
    s.ok("apply", eb(0, [add("note", r0)], 5, epoch=0, fp="0000000000000000"),
         expect=stale_result(1, 0))
    s.err("apply", eb(0, [add("note", r0)]), error="cv")
    s.err("apply", eb(0, [add("note", r0)], 5.5), error="cv")
    s.err("apply", {"$text": '{"epoch":1,"seq":0'}, error="malformed")
    s.ok("isPoisoned", expect="false")
    s.ok("isLive", expect="false")
    s.ok("apply", eb(0, [add("note", r0)], 5), expect=snap_result(1))
    s.ok("headCv", expect=js(s.head))  # the snapshot's cv, 5
    s.ok("cv", expect="5")
    s.ok("apply", eb(1, [add("note", r1)], 3), expect=live_result(1))
    s.ok("headCv", expect=js(s.head))  # max(5 + 1, 3)
    s.ok("cv", expect="3")
    s.ok("apply", eb(2, [add("note", r2)], 50), expect=live_result(1))
    s.ok("headCv", expect=js(s.head))  # max(6 + 1, 50)
    s.ok("apply", eb(1, [add("note", r1)], 3), expect=DUPLICATE)
    s.ok("apply", eb(3, [add("note", r3)], 7, epoch=9), expect=stale_result(1, 9))
    s.err("apply", eb(3, [add("note", r3)]), error="cv")
    s.ok("isPoisoned", expect="false")
    s.sub("c1", 1, ALL, 0, False, ["note"],
          [add("note", r0), add("note", r1), add("note", r2)], s.head)
    s.ok("apply", eb(3, [add("note", r3)], 51), expect=live_result(1))
    s.drain(("c1", 1, 1, ["note"], [add("note", r3)], s.head))
    return s


def apply_poison_rules():
    s = Scenario(
        "apply_poison_rules",
        "What poisons the store, as the published room has it: a fingerprint other than "
        "the hello's (even on a duplicate seq), a seq gap, a first batch that is not seq "
        "0, a snapshot holding a non-add op. A poisoned room refuses every later batch "
        "and subscription; isLive is false. A fresh room (open) serves again.",
        [NOTE],
    )
    r0, r1, r2 = ([i + 1, "r%d" % i] for i in range(3))
    # A first batch that is not seq 0.
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.err("apply", eb(1, [add("note", r1)], 101), error="seq 0")
    s.ok("isPoisoned", expect="true")
    s.err("apply", eb(0, [add("note", r0)], 100), error="poisoned")
    # A snapshot holding a remove.
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.err("apply", eb(0, [rem("note", [1, "a"])], 100), error="add")
    s.ok("isPoisoned", expect="true")
    # Another fingerprint, on the seq already applied.
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", eb(0, [add("note", r0)], 100), expect=snap_result(1))
    s.err("apply", eb(0, [add("note", r0)], 100, fp="0123456789abcdef"),
          error="normalizedFp")
    s.ok("isPoisoned", expect="true")
    s.ok("isLive", expect="false")
    s.err("subscribe", "c1", 1, ALL, 0, error="StoreNotLive")
    # A seq gap.
    s.ok("open", hello([NOTE]), 30000, expect="null")
    s.ok("apply", eb(0, [add("note", r0)], 100), expect=snap_result(1))
    s.err("apply", eb(2, [add("note", r2)], 102), error="gap")
    s.ok("isPoisoned", expect="true")
    s.ok("commitAll", expect="[]")
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
    s.err("subscribe", "c2", 1, ALL, 0, error="StoreNotLive")
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
        apply_envelope_rules(),
        apply_poison_rules(),
        _poison("poison_duplicate_add", "an add of an existing key",
                [add("note", [1, "x"])]),
        _poison("poison_missing_remove", "a remove of a missing key",
                [rem("note", [9, "z"])]),
        _poison("poison_missing_edit", "an edit of a missing key",
                [edit("note", [9, "z"], [9, "y"])]),
        _poison("poison_wrong_width", "a row of the wrong width", [add("note", [3])]),
    ]
