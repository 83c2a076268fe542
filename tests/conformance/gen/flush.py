"""Scenarios: the write-behind flush (docs/design/decisions.md: Write-behind flush; the
published WasmRoom API: beginFlush / flushOk / flushConflict / rejectMutation;
docs/design/authority.md: The apply call, Ledger rows in a flush).

beginFlush's body is composed here from the flush rule: `changes` = one entry per dirty key with a
net effect against its CAS base (data keys by table name, then pk in comparator order),
then the ledger co-edits on `_rindle_client_mutations` ([client_id, applied watermark];
an `add` when nothing is durable, else an `edit` whose old is the last durable row;
clients in byte order), then one `add` per recorded non-applied outcome on
`_rindle_mutation_outcomes` ([client_id, mid, kind, reason, name, args], by client then
mid). `batchHash` is recomputed from scratch (canon.batch_hash: SHA-256 over RFC 8785 JCS
of `changes`, first 16 hex). `lmids` lists the same advances as the ledger co-edits, in
the same client order. The ledger co-edit carries the APPLIED watermark, not the acked
one (decisions-local), so rejected and deopted mids are covered too.
"""

from lib import T, add, cmp, edit, hello, rem, snap_result
from wlib import (FP, HEAD_NULL, LEDGER_NAME, OUTCOMES_NAME, OWNED, SLIDES, SPECS, WScenario,
                  deopt, f_add, f_edit, f_rem, flush_ok, head, ledger_add, ledger_edit,
                  outcome)

SL = ["slide"]
ODD = "ann \u00e9\u0001\u2028\U0001f600"


def flush_outcome_rows():
    s = WScenario(
        "flush_outcome_rows",
        "Non-applied outcomes ride the next flush beside the covering ledger co-edit: "
        "rejectMutation() records kind rejected with a null "
        "reason, (rejected, reason) keeps the reason, (deopt, environment) is a deopt row "
        "echoing the beginMutation name and JSON-text args (null when none were given), a "
        "deopt with no reason (a journal replay) has a null reason; "
        "rejected rows never carry name/args; a gate deopt is recorded with its reason. "
        "Applied mids get no outcome row. Order: the data key, ledger rows by client_id "
        "in byte order (B < a < b), outcome rows by (client_id, mid). flushOk retires "
        "everything; an empty room then flushes nothing; a later reject flushes a ledger "
        "edit from the durable row plus its own outcome row.",
    )
    s.boot()
    s.ok("enableWritesV2", SPECS, OWNED, expect="null")
    s.begin("b", 1, "rename", {"id": "s1"})
    s.ok("rejectMutation", expect="null")
    s.begin("b", 2, "rename", {"id": "s1", "title": "x"})
    s.ok("rejectMutation", "rejected", "not allowed", expect="null")
    s.begin("b", 3, "replayed", {"k": True})
    s.ok("rejectMutation", "deopt", expect="null")
    s.begin("a", 1, "useQuery", {"q": 1})
    s.ok("rejectMutation", "deopt", "environment", expect="null")
    s.begin("a", 2)
    s.ok("rejectMutation", "deopt", "environment", expect="null")
    s.begin("a", 3, "addDeck", {"id": "d2"})
    s.ok("txAdd", "deck", ["d2", "Two"], expect="null")
    s.commit(deopt("writeOutOfScope", "deck", ["d2"], op="add"))
    s.begin("B", 1, "noop", [])
    s.commit(head(1))
    s.begin("a", 4, "retag", {"id": 2})
    s.ok("txEdit", "tag", [2, "TWO"], expect="null")
    s.commit(head(2))
    s.err("rejectMutation", error="transaction")
    s.marks("a", 4, 0, 0)
    s.marks("b", 3, 0, 0)
    s.marks("B", 1, 0, 0)
    s.ok("ack", [{"clientID": "b", "mid": 2}, {"clientID": "a", "mid": 4},
                 {"clientID": "B", "mid": 1}], expect=head(3))
    s.lens(8, 1)
    s.flush([
        f_edit("tag", [2, "two"], [2, "TWO"]),
        ledger_add("B", 1),
        ledger_add("a", 4),
        ledger_add("b", 3),
        outcome("a", 1, "deopt", "environment", "useQuery", '{"q":1}'),
        outcome("a", 2, "deopt", "environment"),
        outcome("a", 3, "deopt", "writeOutOfScope", "addDeck", '{"id":"d2"}'),
        outcome("b", 1, "rejected"),
        outcome("b", 2, "rejected", "not allowed"),
        outcome("b", 3, "deopt", None, "replayed", '{"k":true}'),
    ], [("B", 1), ("a", 4), ("b", 3)])
    s.ok("flushOk", expect=flush_ok(1, 0))
    s.marks("a", 4, 4, 4)
    s.lens(0, 0)
    s.ok("beginFlush", expect="null")
    s.begin("a", 5, "x", {"y": [1, 2]})
    s.ok("rejectMutation", "rejected", "again", expect="null")
    s.flush([ledger_edit("a", 4, 5), outcome("a", 5, "rejected", "again")], [("a", 5)])
    s.ok("flushOk", expect=flush_ok(0, 0))
    s.lens(0, 0)
    s.marks("a", 5, 4, 5)
    return s


def flush_body_order_and_hash():
    s = WScenario(
        "flush_body_order_and_hash",
        "beginFlush's body: data changes sorted by table NAME (deck < member < slide < "
        "tag, although member comes after slide in the upstream hello) then pk in "
        "comparator order — strings by bytes (s10 < s2 < s9), numbers numerically (-5 < 2 "
        "< 2.5 < 10 < 100) — with add {row}, remove {old}, edit {old, row} against the "
        "CAS base; keys whose net effect is nothing (edited and restored by two clients; "
        "added then removed) are dropped; ledger adds by client_id bytes (Alpha < alpha < "
        "zed) carrying each applied watermark; outcome rows by (client, mid) with mid "
        "numeric (2 before 10); batchHash over the JCS text (raw non-ASCII and U+2028, "
        "\\u0001 escaped, 0.1 in shortest form); lmids in client order. While "
        "the batch is in flight a second beginFlush errors, mutations still commit.",
    )
    s.boot()
    s.ok("enableWrites", ["deck", "slide", "tag", "member"], expect="null")
    s.begin("zed", 1)
    s.ok("txEdit", "deck", ["d1", "Deck 1"], expect="null")
    s.ok("txAdd", "slide", ["s10", "d1", 10], expect="null")
    s.commit(head(2))
    s.begin("zed", 2)
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.ok("txRemove", "slide", ["s9"], expect="null")
    s.commit(head(3))
    s.begin("zed", 3)
    s.ok("txAdd", "tag", [100, "hundred"], expect="null")
    s.ok("txRemove", "tag", [10], expect="null")
    s.ok("txEdit", "tag", [2, "TWO"], expect="null")
    s.ok("txAdd", "tag", [-5, "minus five"], expect="null")
    s.ok("txAdd", "tag", [2.5, 0.1], expect="null")
    s.commit(head(4))
    s.begin("Alpha", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "member", ["m1", ODD], expect="null")
    s.commit(head(5))
    s.begin("alpha", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 1], expect="null")
    s.commit(head(6))
    s.begin("alpha", 2)
    s.ok("rejectMutation", "rejected", "no", expect="null")
    s.begin("alpha", 3)
    s.ok("txAdd", "tag", [50, "fifty"], expect="null")
    s.commit(head(7))
    s.begin("alpha", 4)
    s.ok("txRemove", "tag", [50], expect="null")
    s.commit(head(8))
    for mid in range(5, 10):
        s.begin("alpha", mid)
        s.commit(head(8))
    s.begin("alpha", 10)
    s.ok("rejectMutation", "rejected", "ten", expect="null")
    s.ok("pendingLen", expect="14")
    s.flush([
        f_edit("deck", ["d1", "Deck one"], ["d1", "Deck 1"]),
        f_edit("member", ["m1", "ann"], ["m1", ODD]),
        f_add("slide", ["s10", "d1", 10]),
        f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
        f_rem("slide", ["s9", "d1", 500]),
        f_add("tag", [-5, "minus five"]),
        f_edit("tag", [2, "two"], [2, "TWO"]),
        f_add("tag", [2.5, 0.1]),
        f_rem("tag", [10, "ten"]),
        f_add("tag", [100, "hundred"]),
        ledger_add("Alpha", 1),
        ledger_add("alpha", 10),
        ledger_add("zed", 3),
        outcome("alpha", 2, "rejected", "no"),
        outcome("alpha", 10, "rejected", "ten"),
    ], [("Alpha", 1), ("alpha", 10), ("zed", 3)])
    s.ok("flushInFlight", expect="true")
    s.err("beginFlush", error="flight")
    s.begin("zed", 4)
    s.ok("txEdit", "tag", [-5, "minus 5"], expect="null")
    s.commit(head(9))
    s.ok("flushInFlight", expect="true")
    return s


def flush_ok_redirtied():
    s = WScenario(
        "flush_ok_redirtied",
        "flushOk: {retired, dirty}. A key written again while its batch was "
        "in flight is not retired; it re-bases onto the image the batch wrote, so the next "
        "batch's edit has old = that image (pos 5), not the original (pos 1); a key first "
        "written during the flight is dirty too (dirty 2). The durable watermark advances "
        "to the batch's lmid (1) and pendingLen drops the covered mid; the next batch's "
        "ledger co-edit is an edit from [c1, 1]. After it settles: retired 2, dirty 0, "
        "nothing pending or dirty, beginFlush undefined, flushOk without a flight errors. "
        "A retired key written again starts from the image the authority now holds (the "
        "row the room added).",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5])], 2))
    s.lens(1, 1)
    s.ok("flushInFlight", expect="false")
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.ok("flushInFlight", expect="true")
    s.begin("c1", 2)
    s.ok("txEdit", "slide", ["s1", "d1", 6], expect="null")
    s.commit(head(3))
    s.begin("c1", 3)
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(head(4))
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 6]),
                             add("slide", ["s3", "d1", 3])], 4))
    s.lens(3, 2)
    s.ok("flushOk", expect=flush_ok(0, 2))
    s.ok("flushInFlight", expect="false")
    s.marks("c1", 3, 0, 1)
    s.lens(2, 2)
    s.flush([f_edit("slide", ["s1", "d1", 5], ["s1", "d1", 6]),
             f_add("slide", ["s3", "d1", 3]),
             ledger_edit("c1", 1, 3)], [("c1", 3)])
    s.ok("flushOk", expect=flush_ok(2, 0))
    s.err("flushOk", error="flight")
    s.marks("c1", 3, 0, 3)
    s.lens(0, 0)
    s.ok("beginFlush", expect="null")
    s.ok("commitAll", expect="[]")
    # s3 is clean again: its next CAS base is the row the room added and flushed.
    s.begin("c1", 4)
    s.ok("txEdit", "slide", ["s3", "d1", 4], expect="null")
    s.commit(head(5))
    s.flush([f_edit("slide", ["s3", "d1", 3], ["s3", "d1", 4]), ledger_edit("c1", 3, 4)],
            [("c1", 4)])
    s.ok("flushOk", expect=flush_ok(1, 0))
    s.lens(0, 0)
    return s


def flush_conflict_converges():
    s = WScenario(
        "flush_conflict_converges",
        "flushConflict([{table, pk, current}]) (docs/design/authority.md, The apply call): each "
        "conflicted key converges to the authority's image — slide s1 to pos 42, tag 7 "
        "removed (current null), tag 2 already equal (no head change) — the local net "
        "effect is dropped and the key is clean; the head change is one local commit "
        "({headCv:n}, +1) whose corrective frames ship at the next commitAll; the rest "
        "(slide s3) stays dirty and the ledger co-edit is rebuilt (durable not advanced). "
        "A conflict that changes nothing is {headCv:null} and ships nothing. The flight "
        "ends either way; flushConflict without one errors.",
    )
    s.boot()
    s.ok("enableWrites", ["slide", "tag"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, 1)
    s.sub("t", 1, {"table": "tag"}, 0, False, ["tag"],
          [add("tag", [2, "two"]), add("tag", [10, "ten"])], 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.ok("txEdit", "tag", [2, "TWO"], expect="null")
    s.ok("txAdd", "tag", [7, "seven"], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             add("slide", ["s3", "d1", 3])], 2),
            ("t", 1, 1, ["tag"], [edit("tag", [2, "two"], [2, "TWO"]),
                                  add("tag", [7, "seven"])], 2))
    s.flush([
        f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
        f_add("slide", ["s3", "d1", 3]),
        f_edit("tag", [2, "two"], [2, "TWO"]),
        f_add("tag", [7, "seven"]),
        ledger_add("c1", 1),
    ], [("c1", 1)])
    s.ok("flushConflict", [
        {"table": "slide", "pk": ["s1"], "current": ["s1", "d1", 42]},
        {"table": "tag", "pk": [7], "current": None},
        {"table": "tag", "pk": [2], "current": [2, "TWO"]},
    ], expect=head(3))
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 42])], 3),
            ("t", 1, 2, ["tag"], [rem("tag", [7, "seven"])], 3))
    s.ok("flushInFlight", expect="false")
    s.marks("c1", 1, 0, 0)
    s.lens(1, 1)
    s.flush([f_add("slide", ["s3", "d1", 3]), ledger_add("c1", 1)], [("c1", 1)])
    s.ok("flushConflict", [{"table": "slide", "pk": ["s3"], "current": ["s3", "d1", 3]}],
         expect=HEAD_NULL)
    s.ok("commitAll", expect="[]")
    s.lens(1, 0)
    s.flush([ledger_add("c1", 1)], [("c1", 1)])
    s.ok("flushOk", expect=flush_ok(0, 0))
    s.lens(0, 0)
    s.marks("c1", 1, 0, 1)
    s.err("flushConflict", [], error="flight")
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 42]), add("slide", ["s2", "d1", 2]),
           add("slide", ["s3", "d1", 3]), add("slide", ["s9", "d1", 500])], 3)
    return s


def flush_conflict_ledger_and_outcome():
    s = WScenario(
        "flush_conflict_ledger_and_outcome",
        "decisions-local: a flushConflict entry on the ledger table resets that client's "
        "durable watermark to the authority's value (so the next co-edit is an edit whose "
        "old is the authority's row [c1, 1]) and retires the pending mids it covers; one "
        "on the outcomes table drops the room's pending outcome row (the authority has "
        "it). Neither changes the head ({headCv:null}).",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.begin("c1", 1, "m", {"a": 1})
    s.ok("rejectMutation", "rejected", "x", expect="null")
    s.begin("c1", 2)
    s.commit(head(1))
    s.flush([ledger_add("c1", 2), outcome("c1", 1, "rejected", "x")], [("c1", 2)])
    s.ok("flushConflict", [
        {"table": LEDGER_NAME, "pk": ["c1"], "current": ["c1", 1]},
        {"table": OUTCOMES_NAME, "pk": ["c1", 1],
         "current": ["c1", 1, "rejected", "x", None, None]},
    ], expect=HEAD_NULL)
    s.marks("c1", 2, 0, 1)
    s.lens(1, 0)
    s.flush([ledger_edit("c1", 1, 2)], [("c1", 2)])
    s.ok("flushOk", expect=flush_ok(0, 0))
    s.lens(0, 0)
    s.marks("c1", 2, 0, 2)
    return s


def upstream_op_on_dirty_key():
    s = WScenario(
        "upstream_op_on_dirty_key",
        "A dirty key's head image is the room's own. An upstream edit of dirty slide s1 "
        "only replaces its CAS base (head keeps pos 5, nothing fans out) while the same "
        "batch's edit of clean s2 applies and ships; the apply still counts (live, "
        "headCv +1, cv = the batch's). The next batch edits from the upstream image (old "
        "pos 7). Once flushOk retired s1, an upstream edit of it applies normally. An "
        "upstream remove of a dirty key makes its base absent (the flush sends an add); an "
        "upstream add of a dirty key the room added makes that row the base (the flush "
        "sends an edit from it).",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5])], 2))
    s.upstream(1, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 7]),
                   edit("slide", ["s2", "d1", 2], ["s2", "d1", 8])], 101,
               '{"applied":"live","ops":2}')
    s.ok("headCv", expect="3")
    s.ok("cv", expect="101")
    s.drain(("q", 1, 2, SL, [edit("slide", ["s2", "d1", 2], ["s2", "d1", 8])], 3))
    s.sub("q2", 2, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 5]), add("slide", ["s2", "d1", 8]),
           add("slide", ["s9", "d1", 500])], 3)
    s.lens(1, 1)
    s.flush([f_edit("slide", ["s1", "d1", 7], ["s1", "d1", 5]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.ok("flushOk", expect=flush_ok(1, 0))
    s.upstream(2, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9])], 102,
               '{"applied":"live","ops":1}')
    s.ok("headCv", expect="4")
    ops = [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9])]
    s.drain(("q", 1, 3, SL, ops, 4), ("q2", 2, 1, SL, ops, 4))
    s.begin("c1", 2)
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(head(5))
    s.begin("c1", 3)
    s.ok("txEdit", "slide", ["s2", "d1", 10], expect="null")
    s.commit(head(6))
    ops = [edit("slide", ["s2", "d1", 8], ["s2", "d1", 10]), add("slide", ["s3", "d1", 3])]
    s.drain(("q", 1, 4, SL, ops, 6), ("q2", 2, 2, SL, ops, 6))
    s.upstream(3, [rem("slide", ["s2", "d1", 8]), add("slide", ["s3", "d1", 33])], 103,
               '{"applied":"live","ops":2}')
    s.ok("headCv", expect="7")
    s.ok("commitAll", expect="[]")
    s.sub("q3", 3, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 9]), add("slide", ["s2", "d1", 10]),
           add("slide", ["s3", "d1", 3]), add("slide", ["s9", "d1", 500])], 7)
    s.flush([f_add("slide", ["s2", "d1", 10]),
             f_edit("slide", ["s3", "d1", 33], ["s3", "d1", 3]),
             ledger_edit("c1", 1, 3)], [("c1", 3)])
    return s


def composite_pk_write_plane():
    cell = T("cell", ["a", "b", "v"], pk=[1, 0])
    s = WScenario(
        "composite_pk_write_plane",
        "A composite primary key [1, 0] (b, then a) through the write plane: txGet takes "
        "pk cells in primaryKey order ([b, a]); the absent-read proof maps them onto their "
        "columns (footprintWhere b = 1 proves [1, 9], not [3, 1]); a deopt's pk is in "
        "primaryKey order ([1, 9] for the row a=9, b=1); the drain and the flush's "
        "data changes order keys by b then a — (1,1) < (2,1) < (3,0) — not by column "
        "order.",
        tables=[cell],
    )
    h = hello([cell])
    s.ok("open", h, 30000, expect="null")
    s.ok("apply", {"epoch": 1, "seq": 0, "normalizedFp": h["normalizedFp"], "cv": 1,
                   "ops": [add("cell", [1, 1, 5]), add("cell", [2, 1, 6]),
                           add("cell", [1, 2, 7])]}, expect=snap_result(3))
    specs = [{"table": "cell",
              "writable": {"kind": "predicate", "where": cmp("v", "<", 10), "joinKeyCols": []},
              "footprintWhere": cmp("b", "=", 1)}]
    s.ok("enableWritesV2", specs, ["cell"], expect="null")
    s.sub("q", 1, {"table": "cell"}, 0, False, ["cell"],
          [add("cell", [1, 1, 5]), add("cell", [2, 1, 6]), add("cell", [1, 2, 7])], 1)
    s.begin("c1", 1)
    s.ok("txGet", "cell", [1, 2], expect="[2,1,6]")
    s.ok("txGet", "cell", [2, 1], expect="[1,2,7]")
    s.ok("txGet", "cell", [1, 9], expect="null")
    s.commit(head(1))
    s.begin("c1", 2)
    s.ok("txGet", "cell", [3, 1], expect="null")
    s.commit(deopt("absentReadUnproven", "cell", [3, 1]))
    s.begin("c1", 3)
    s.ok("txAdd", "cell", [9, 1, 50], expect="null")
    s.commit(deopt("writeOutOfScope", "cell", [1, 9], op="add"))
    s.begin("c1", 4)
    s.ok("txEdit", "cell", [1, 1, 8], expect="null")
    s.ok("txAdd", "cell", [0, 3, 1], expect="null")
    s.ok("txRemove", "cell", [2, 1], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, ["cell"], [edit("cell", [1, 1, 5], [1, 1, 8]), rem("cell", [1, 2, 7]),
                                   add("cell", [0, 3, 1])], 2))
    s.flush([
        f_edit("cell", [1, 1, 5], [1, 1, 8]),
        f_rem("cell", [1, 2, 7]),
        f_add("cell", [0, 3, 1]),
        ledger_add("c1", 4),
        outcome("c1", 2, "deopt", "absentReadUnproven"),
        outcome("c1", 3, "deopt", "writeOutOfScope"),
    ], [("c1", 4)])
    s.ok("flushOk", expect=flush_ok(3, 0))
    s.lens(0, 0)
    return s


def write_plane_poisoned():
    s = WScenario(
        "write_plane_poisoned",
        "Poison reaches the write plane: an upstream add of an existing key in a table "
        "mutators cannot write (deck; decisions-local keeps the strict upstream rule there) "
        "poisons the store; afterwards every write-plane call that needs the head errors "
        "(beginMutation, ack, seedDurable, lmidSubscribe, beginFlush) and commitAll is [].",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.lmid_sub("L", 1, "c1", False, [], 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(head(2))
    s.ok("ack", [{"clientID": "c1", "mid": 1}], expect=head(3))
    s.drain(("L", 1, 1, [LEDGER_NAME], [add(LEDGER_NAME, ["c1", 1])], 3))
    s.err("apply", {"epoch": 1, "seq": 1, "normalizedFp": FP, "cv": 101,
                    "ops": [add("deck", ["d1", "dup"])]}, error="poison")
    s.ok("isPoisoned", expect="true")
    s.ok("isLive", expect="false")
    s.ok("commitAll", expect="[]")
    s.err("beginMutation", "c1", 2, error="poison")
    s.err("ack", [{"clientID": "c1", "mid": 1}], error="poison")
    s.err("seedDurable", [{"clientID": "c1", "lmid": 1}], error="poison")
    s.err("lmidSubscribe", "L2", 1, "c1", 0, error="poison")
    s.err("beginFlush", error="poison")
    s.ok("commitAll", expect="[]")
    return s


def write_plane_malformed_args():
    s = WScenario(
        "write_plane_malformed_args",
        "Bad input on the write plane: malformed JSON text or shapes for ack, seedDurable, txGet, "
        "txEdit, txRemove, flushConflict, and an unknown rejectMutation kind, each error "
        "naming the method (or the unknown table) and change nothing: the transaction "
        "stays open, a flushConflict naming an unknown table, a pk or current row of the "
        "wrong width, or a current row with another key — even after a valid entry — "
        "applies nothing and leaves the flight to settle normally.",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.err("ack", "x", error="ack")
    s.err("ack", [{"clientID": "c1"}], error="ack")
    s.err("ack", [{"clientID": "c1", "mid": 1.5}], error="ack")
    s.err("ack", [{"clientID": "c1", "mid": -1}], error="ack")
    s.err("ack", {"$text": "[{"}, error="ack")
    s.err("seedDurable", {"clientID": "c1", "lmid": 1}, error="seedDurable")
    s.err("seedDurable", [{"clientID": 1, "lmid": 1}], error="seedDurable")
    s.ok("headCv", expect="1")
    s.marks("c1", 0, 0, 0)
    s.begin("c1", 1)
    s.err("txGet", "slide", "s1", error="txGet")
    s.err("txRemove", "slide", {"$text": "nope"}, error="txRemove")
    s.err("txEdit", "slide", 5, error="txEdit")
    s.err("rejectMutation", "maybe", error="maybe")
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(head(2))
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.err("flushConflict", "x", error="flushConflict")
    s.err("flushConflict", [{"table": "nope", "pk": ["s1"], "current": None}], error="nope")
    s.err("flushConflict", [{"table": "slide", "pk": ["s1", "x"], "current": None}],
          error="flushConflict")
    s.err("flushConflict", [{"table": "slide", "pk": ["s1"], "current": ["s1", "d1"]}],
          error="flushConflict")
    s.err("flushConflict", [{"table": "slide", "pk": ["s1"], "current": ["s2", "d1", 5]}],
          error="flushConflict")
    s.err("flushConflict", [{"table": "slide", "pk": ["s1"], "current": ["s1", "d1", 42]},
                            {"table": "nope", "pk": ["x"], "current": None}], error="nope")
    s.ok("flushInFlight", expect="true")
    s.ok("headCv", expect="2")
    s.ok("commitAll", expect="[]")
    s.ok("flushOk", expect=flush_ok(1, 0))
    s.lens(0, 0)
    s.sub("q", 1, {"table": "slide"}, 0, False, SL,
          [add("slide", ["s1", "d1", 5]), add("slide", ["s2", "d1", 2]),
           add("slide", ["s9", "d1", 500])], 2)
    return s


def flush_ok_cv_takes_newer_upstream_image():
    s = WScenario(
        "flush_ok_cv_takes_newer_upstream_image",
        "flushOk(cv) after the feed raced ahead of the settlement (the "
        "room's settlement rule): while a batch is in flight, every upstream image of a "
        "key it carries is logged with its upstream batch's cv (an upstream op on a dirty "
        "key still only "
        "moves the "
        "CAS base: commitAll ships nothing). flushOk(101) says the authority committed the "
        "batch at cv 101, so the newest logged image of an upstream batch with cv > 101 "
        "is the authority's image; the batch's own echo (cv 101) does not count. slide "
        "s1, not written again, converges to it: one local commit (headCv +1, the "
        "result is still {retired, dirty}) whose corrective edit 5 -> 9 ships at the "
        "next commitAll. slide s2, written again during the flight (pos 21), stays dirty "
        "and re-bases onto the newer image: the next batch edits from pos 30, not from "
        "the pos 20 it sent. A flushOk(cv) with nothing logged changes nothing.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 20])], 2))
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
             f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
             ledger_add("c1", 1)], [("c1", 1)])
    s.begin("c1", 2)
    s.ok("txEdit", "slide", ["s2", "d1", 21], expect="null")
    s.commit(head(3))
    s.drain(("q", 1, 2, SL, [edit("slide", ["s2", "d1", 20], ["s2", "d1", 21])], 3))
    # The authority commits the batch at cv 101 (its echo), then another writer edits
    # both rows at cv 102; the feed delivers both before the flush response arrives.
    s.upstream(1, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                   edit("slide", ["s2", "d1", 2], ["s2", "d1", 20])], 101,
               '{"applied":"live","ops":2}')
    s.upstream(2, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9]),
                   edit("slide", ["s2", "d1", 20], ["s2", "d1", 30])], 102,
               '{"applied":"live","ops":2}')
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect="5")
    s.ok("cv", expect="102")
    s.ok("flushOk", 101, expect=flush_ok(1, 1))
    s.ok("headCv", expect="6")
    s.drain(("q", 1, 3, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9])], 6))
    s.marks("c1", 2, 0, 1)
    s.lens(1, 1)
    s.flush([f_edit("slide", ["s2", "d1", 30], ["s2", "d1", 21]),
             ledger_edit("c1", 1, 2)], [("c1", 2)])
    s.ok("flushOk", 103, expect=flush_ok(1, 0))
    s.ok("headCv", expect="6")
    s.ok("commitAll", expect="[]")
    s.lens(0, 0)
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 9]), add("slide", ["s2", "d1", 21]),
           add("slide", ["s9", "d1", 500])], 6)
    return s


def flush_ok_takes_images_after_the_echo():
    s = WScenario(
        "flush_ok_takes_images_after_the_echo",
        "flushOk() without a cv (the room's settlement rule): the room cannot "
        "place upstream batches against the commit, so it reads the log of each carried "
        "key from the batch's own echo (the image it sent) on: once that image has been "
        "reported, the newest logged image is the authority's. slide s1: echo pos 5, "
        "then another writer's pos 7 -> converges to 7. slide s3, added by the batch: "
        "echo add, then another writer's remove -> the row goes. slide s2: echo last -> "
        "stays as sent. All three retire; the convergence is one local commit (headCv "
        "+1) whose corrective ops (edit s1, remove s3, in op order) ship at the next "
        "commitAll. The keys are clean afterwards: a later upstream edit of s1 applies "
        "and fans out.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
                             add("slide", ["s3", "d1", 3])], 2))
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
             f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
             f_add("slide", ["s3", "d1", 3]),
             ledger_add("c1", 1)], [("c1", 1)])
    s.upstream(1, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                   edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
                   add("slide", ["s3", "d1", 3])], 101, '{"applied":"live","ops":3}')
    s.upstream(2, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 7]),
                   rem("slide", ["s3", "d1", 3])], 102, '{"applied":"live","ops":2}')
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect="4")
    s.ok("flushOk", expect=flush_ok(3, 0))
    s.ok("headCv", expect="5")
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 7]),
                             rem("slide", ["s3", "d1", 3])], 5))
    s.marks("c1", 1, 0, 1)
    s.lens(0, 0)
    s.ok("beginFlush", expect="null")
    s.upstream(3, [edit("slide", ["s1", "d1", 7], ["s1", "d1", 8])], 103,
               '{"applied":"live","ops":1}')
    s.drain(("q", 1, 3, SL, [edit("slide", ["s1", "d1", 7], ["s1", "d1", 8])], 6))
    return s


def flush_conflict_takes_images_after_current():
    s = WScenario(
        "flush_conflict_takes_images_after_current",
        "flushConflict when the feed is ahead of the 409 (the room's "
        "settlement rule): another writer set s9 to pos 600 (cv 101) and s1 to pos 42 "
        "(cv 102), the authority refused the batch with those images as `current`, then "
        "the writer set s1 to 43 (cv 103); the feed delivered all three before the 409 "
        "reached the room (commitAll ships nothing: the keys are dirty). The 409's image "
        "of s1 was already logged while s1 was in flight, so what was logged after it is "
        "newer: s1 converges to 43, not 42. s9's `current` is its newest logged image: "
        "600. One local commit ({headCv}, +1) whose corrective edits ship at the next "
        "commitAll. s2 (no conflict) stays dirty with its CAS base and goes out in the "
        "next batch with the ledger add.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, 1)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.ok("txEdit", "slide", ["s9", "d1", 501], expect="null")
    s.commit(head(2))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
                             edit("slide", ["s9", "d1", 500], ["s9", "d1", 501])], 2))
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
             f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
             f_edit("slide", ["s9", "d1", 500], ["s9", "d1", 501]),
             ledger_add("c1", 1)], [("c1", 1)])
    s.upstream(1, [edit("slide", ["s9", "d1", 500], ["s9", "d1", 600])], 101,
               '{"applied":"live","ops":1}')
    s.upstream(2, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 42])], 102,
               '{"applied":"live","ops":1}')
    s.upstream(3, [edit("slide", ["s1", "d1", 42], ["s1", "d1", 43])], 103,
               '{"applied":"live","ops":1}')
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect="5")
    s.ok("flushConflict", [
        {"table": "slide", "pk": ["s1"], "current": ["s1", "d1", 42]},
        {"table": "slide", "pk": ["s9"], "current": ["s9", "d1", 600]},
    ], expect=head(6))
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 43]),
                             edit("slide", ["s9", "d1", 501], ["s9", "d1", 600])], 6))
    s.ok("flushInFlight", expect="false")
    s.marks("c1", 1, 0, 0)
    s.lens(1, 1)
    s.flush([f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.ok("flushOk", 104, expect=flush_ok(1, 0))
    s.lens(0, 0)
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 43]), add("slide", ["s2", "d1", 20]),
           add("slide", ["s9", "d1", 600])], 6)
    return s


def scenarios():
    return [
        flush_outcome_rows(),
        flush_body_order_and_hash(),
        flush_ok_redirtied(),
        flush_conflict_converges(),
        flush_conflict_ledger_and_outcome(),
        flush_ok_cv_takes_newer_upstream_image(),
        flush_ok_takes_images_after_the_echo(),
        flush_conflict_takes_images_after_current(),
        upstream_op_on_dirty_key(),
        composite_pk_write_plane(),
        write_plane_poisoned(),
        write_plane_malformed_args(),
    ]
