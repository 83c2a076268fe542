"""Scenarios: the write-behind flush (docs/design/decisions.md: Write-behind flush; the
published WasmRoom API: beginFlush / flushOk / flushConflict / rejectMutation;
docs/design/authority.md: The apply call, Ledger rows in a flush).

beginFlush's body is composed here from the flush rule, as the published room builds it:
`changes` = one entry per dirty key with a net effect against its CAS base (data keys by
table name, then pk in comparator order), then one `add` per recorded non-applied outcome
on `_rindle_room_mutation_outcomes` ([client_id, mid, kind, reason, name, args], in the
order recorded), then the ledger co-edits on `_rindle_client_mutations` ([client_id,
applied watermark]; an `add` when nothing is durable, else an `edit` whose old is the last
durable row; clients in byte order). `batchHash` is recomputed from scratch
(canon.batch_hash: FNV-1a 64 over the changes with keys in byte order and numbers written
as floats). `lmids` lists the same advances as the ledger co-edits, in the same client
order. The ledger co-edit carries the APPLIED watermark, not the acked one
(decisions-local), so rejected and deopted mids are covered too. flushOk's `retired`
counts the pending mutations the flight made durable (WScenario.flush_ok).
"""

from lib import T, add, cmp, edit, hello, rem, snap_result
from wlib import (FP, HEAD_NULL, LEDGER_NAME, OUTCOMES_NAME, OWNED, SLIDES, SPECS, WScenario,
                  deopt, f_add, f_edit, f_rem, ledger_add, ledger_edit,
                  outcome)

SL = ["slide"]
ODD = "ann \u00e9\u0001\u2028\U0001f600"


def flush_outcome_rows():
    s = WScenario(
        "flush_outcome_rows",
        "Non-applied outcomes ride the next flush in `_rindle_room_mutation_outcomes` beside the "
        "covering ledger co-edit: rejectMutation() records kind rejected with a null reason, "
        "(rejected, reason) keeps the reason, (deopt, environment) is a deopt row echoing the "
        "beginMutation name and JSON-text args (null when none were given), a deopt with no "
        "reason has a null reason; rejected rows never carry name/args; a gate deopt is recorded "
        "with its reason. Applied mids get no outcome row. Order: the data key, outcome rows in "
        "the order recorded, ledger rows by client_id in byte order. flushOk retires everything; "
        "an empty room then flushes nothing.",
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
    s.commit(s.next_head())
    s.begin("a", 4, "retag", {"id": 2})
    s.ok("txEdit", "tag", [2, "TWO"], expect="null")
    s.commit(s.next_head())
    s.err("rejectMutation", error="transaction")
    s.marks("a", 4, 0, 0)
    s.marks("b", 3, 0, 0)
    s.marks("B", 1, 0, 0)
    s.ok("ack", [{"clientID": "b", "mid": 2}, {"clientID": "a", "mid": 4},
                 {"clientID": "B", "mid": 1}], expect=s.next_head())
    s.lens(8, 1)
    s.flush([
        f_edit("tag", [2, "two"], [2, "TWO"]),
        ledger_add("B", 1),
        ledger_add("a", 4),
        ledger_add("b", 3),
        # Outcome rows in the order the calls above recorded them.
        outcome("b", 1, "rejected"),
        outcome("b", 2, "rejected", "not allowed"),
        outcome("b", 3, "deopt", None, "replayed", '{"k":true}'),
        outcome("a", 1, "deopt", "environment", "useQuery", '{"q":1}'),
        outcome("a", 2, "deopt", "environment"),
        outcome("a", 3, "deopt", "writeOutOfScope", "addDeck", '{"id":"d2"}'),
    ], [("B", 1), ("a", 4), ("b", 3)])
    s.flush_ok(dirty=0)
    s.marks("a", 4, 4, 4)
    s.lens(0, 0)
    s.ok("beginFlush", expect="null")
    s.begin("a", 5, "x", {"y": [1, 2]})
    s.ok("rejectMutation", "rejected", "again", expect="null")
    s.flush([ledger_edit("a", 4, 5), outcome("a", 5, "rejected", "again")], [("a", 5)])
    s.flush_ok(dirty=0)
    s.lens(0, 0)
    s.marks("a", 5, 4, 5)
    return s


def flush_body_order_and_hash():
    s = WScenario(
        "flush_body_order_and_hash",
        "beginFlush's body, as the published room builds it: data changes sorted by table name "
        "(deck < member < slide < tag) then primary key in comparator order — strings by bytes "
        "(s10 < s2 < s9), numbers numerically (-5 < 2 < 2.5 < 10 < 100) — with add {row}, remove "
        "{old}, edit {old, row} against the CAS base; keys whose net effect is nothing ride the "
        "flight without a change; then outcome rows in the order recorded; then ledger rows by "
        "client_id bytes (Alpha < alpha < zed) carrying each applied watermark. batchHash is "
        "FNV-1a 64 over the changes with keys in byte order and every number written as a float; "
        "lmids in client order.",
    )
    s.boot()
    s.ok("enableWrites", ["deck", "slide", "tag", "member"], expect="null")
    s.begin("zed", 1)
    s.ok("txEdit", "deck", ["d1", "Deck 1"], expect="null")
    s.ok("txAdd", "slide", ["s10", "d1", 10], expect="null")
    s.commit(s.next_head())
    s.begin("zed", 2)
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.ok("txRemove", "slide", ["s9"], expect="null")
    s.commit(s.next_head())
    s.begin("zed", 3)
    s.ok("txAdd", "tag", [100, "hundred"], expect="null")
    s.ok("txRemove", "tag", [10], expect="null")
    s.ok("txEdit", "tag", [2, "TWO"], expect="null")
    s.ok("txAdd", "tag", [-5, "minus five"], expect="null")
    s.ok("txAdd", "tag", [2.5, 0.1], expect="null")
    s.commit(s.next_head())
    s.begin("Alpha", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "member", ["m1", ODD], expect="null")
    s.commit(s.next_head())
    s.begin("alpha", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 1], expect="null")
    s.commit(s.next_head())
    s.begin("alpha", 2)
    s.ok("rejectMutation", "rejected", "no", expect="null")
    s.begin("alpha", 3)
    s.ok("txAdd", "tag", [50, "fifty"], expect="null")
    s.commit(s.next_head())
    s.begin("alpha", 4)
    s.ok("txRemove", "tag", [50], expect="null")
    s.commit(s.next_head())
    for mid in range(5, 10):
        s.begin("alpha", mid)
        s.commit(s.next_head())
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
    s.commit(s.next_head())
    s.ok("flushInFlight", expect="true")
    return s


def flush_ok_redirtied():
    s = WScenario(
        "flush_ok_redirtied",
        "flushOk: {retired, dirty} — the pending mutations the flight made durable, the keys "
        "still dirty. A key written again while its batch was in flight is not retired; it "
        "re-bases onto the image the batch wrote, so the next batch's edit has old = that image "
        "(pos 5), not the original (pos 1); a key first written during the flight is dirty too. "
        "The durable watermark advances to the batch's lmid and pendingLen drops the covered mid;"
        " the next batch's ledger co-edit is an edit from [c1, 1]. After it settles, nothing is "
        "pending or dirty, beginFlush is undefined, and flushOk without a flight errors.",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5])], s.head))
    s.lens(1, 1)
    s.ok("flushInFlight", expect="false")
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.ok("flushInFlight", expect="true")
    s.begin("c1", 2)
    s.ok("txEdit", "slide", ["s1", "d1", 6], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 3)
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 6]),
                             add("slide", ["s3", "d1", 3])], s.head))
    s.lens(3, 2)
    s.flush_ok(dirty=2)
    s.ok("flushInFlight", expect="false")
    s.marks("c1", 3, 0, 1)
    s.lens(2, 2)
    s.flush([f_edit("slide", ["s1", "d1", 5], ["s1", "d1", 6]),
             f_add("slide", ["s3", "d1", 3]),
             ledger_edit("c1", 1, 3)], [("c1", 3)])
    s.flush_ok(dirty=0)
    s.err("flushOk", error="flight")
    s.marks("c1", 3, 0, 3)
    s.lens(0, 0)
    s.ok("beginFlush", expect="null")
    s.ok("commitAll", expect="[]")
    # s3 is clean again: its next CAS base is the row the room added and flushed.
    s.begin("c1", 4)
    s.ok("txEdit", "slide", ["s3", "d1", 4], expect="null")
    s.commit(s.next_head())
    s.flush([f_edit("slide", ["s3", "d1", 3], ["s3", "d1", 4]), ledger_edit("c1", 3, 4)],
            [("c1", 4)])
    s.flush_ok(dirty=0)
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
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.sub("t", 1, {"table": "tag"}, 0, False, ["tag"],
          [add("tag", [2, "two"]), add("tag", [10, "ten"])], s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.ok("txEdit", "tag", [2, "TWO"], expect="null")
    s.ok("txAdd", "tag", [7, "seven"], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             add("slide", ["s3", "d1", 3])], s.head),
            ("t", 1, 1, ["tag"], [edit("tag", [2, "two"], [2, "TWO"]),
                                  add("tag", [7, "seven"])], s.head))
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
    ], expect=s.next_head())
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 42])], s.head),
            ("t", 1, 2, ["tag"], [rem("tag", [7, "seven"])], s.head))
    s.ok("flushInFlight", expect="false")
    s.marks("c1", 1, 0, 0)
    s.lens(1, 1)
    s.flush([f_add("slide", ["s3", "d1", 3]), ledger_add("c1", 1)], [("c1", 1)])
    s.ok("flushConflict", [{"table": "slide", "pk": ["s3"], "current": ["s3", "d1", 3]}],
         expect=HEAD_NULL)
    s.ok("commitAll", expect="[]")
    s.lens(1, 0)
    s.flush([ledger_add("c1", 1)], [("c1", 1)])
    s.flush_ok(dirty=0)
    s.lens(0, 0)
    s.marks("c1", 1, 0, 1)
    s.err("flushConflict", [], error="flight")
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 42]), add("slide", ["s2", "d1", 2]),
           add("slide", ["s3", "d1", 3]), add("slide", ["s9", "d1", 500])], s.head)
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
    s.commit(s.next_head())
    s.flush([ledger_add("c1", 2), outcome("c1", 1, "rejected", "x")], [("c1", 2)])
    s.ok("flushConflict", [
        {"table": LEDGER_NAME, "pk": ["c1"], "current": ["c1", 1]},
        {"table": OUTCOMES_NAME, "pk": ["c1", 1],
         "current": ["c1", 1, "rejected", "x", None, None]},
    ], expect=HEAD_NULL)
    s.marks("c1", 2, 0, 1)
    s.lens(1, 0)
    s.flush([ledger_edit("c1", 1, 2)], [("c1", 2)])
    s.flush_ok(dirty=0)
    s.lens(0, 0)
    s.marks("c1", 2, 0, 2)
    return s


def upstream_op_on_dirty_key():
    s = WScenario(
        "upstream_op_on_dirty_key",
        "An upstream image of a key the room has a pending write of is someone else's write and "
        "wins, as in the published room: the head takes it, the room's change is dropped, the key"
        " is clean and its image fans out; a clean key's edit in the same batch applies as usual "
        "(live, headCv moves, cv = the batch's). Once a flush retired a key, upstream edits of it"
        " apply normally; the room's own flushed write echoing back changes nothing.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5])], s.head))
    # The upstream image of dirty s1 is another writer's and wins: the head takes it, the
    # room's change to s1 is dropped (s1 is clean), and it fans out with clean s2's edit.
    s.upstream(1, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 7]),
                   edit("slide", ["s2", "d1", 2], ["s2", "d1", 8])], 101,
               '{"applied":"live","ops":2}')
    s.ok("headCv", expect=str(s.head))
    s.ok("cv", expect="101")
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 7]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 8])], s.head))
    s.sub("q2", 2, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 7]), add("slide", ["s2", "d1", 8]),
           add("slide", ["s9", "d1", 500])], s.head)
    # Mid 1 is still pending; no key is dirty, so the flight carries the ledger only.
    s.lens(1, 0)
    s.flush([ledger_add("c1", 1)], [("c1", 1)])
    s.flush_ok(dirty=0)
    # The upstream edit names old pos 5; the head holds 7, and subscribers get 7 -> 9.
    s.upstream(2, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9])], 102,
               '{"applied":"live","ops":1}')
    s.ok("headCv", expect=str(s.head))
    ops = [edit("slide", ["s1", "d1", 7], ["s1", "d1", 9])]
    s.drain(("q", 1, 3, SL, ops, s.head), ("q2", 2, 1, SL, ops, s.head))
    s.begin("c1", 2)
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 3)
    s.ok("txEdit", "slide", ["s2", "d1", 10], expect="null")
    s.commit(s.next_head())
    ops = [edit("slide", ["s2", "d1", 8], ["s2", "d1", 10]), add("slide", ["s3", "d1", 3])]
    s.drain(("q", 1, 4, SL, ops, s.head), ("q2", 2, 2, SL, ops, s.head))
    # Upstream removes dirty s2 and adds dirty s3 (which the room added): both images
    # win over the room's writes, which are dropped, and fan out.
    s.upstream(3, [rem("slide", ["s2", "d1", 8]), add("slide", ["s3", "d1", 33])], 103,
               '{"applied":"live","ops":2}')
    s.ok("headCv", expect=str(s.head))
    ops = [rem("slide", ["s2", "d1", 10]), edit("slide", ["s3", "d1", 3], ["s3", "d1", 33])]
    s.drain(("q", 1, 5, SL, ops, s.head), ("q2", 2, 3, SL, ops, s.head))
    s.sub("q3", 3, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 9]), add("slide", ["s3", "d1", 33]),
           add("slide", ["s9", "d1", 500])], s.head)
    s.flush([ledger_edit("c1", 1, 3)], [("c1", 3)])
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
          [add("cell", [1, 1, 5]), add("cell", [2, 1, 6]), add("cell", [1, 2, 7])], s.head)
    s.begin("c1", 1)
    s.ok("txGet", "cell", [1, 2], expect="[2,1,6]")
    s.ok("txGet", "cell", [2, 1], expect="[1,2,7]")
    s.ok("txGet", "cell", [1, 9], expect="null")
    s.commit(s.next_head())
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
    s.commit(s.next_head())
    s.drain(("q", 1, 1, ["cell"], [edit("cell", [1, 1, 5], [1, 1, 8]), rem("cell", [1, 2, 7]),
                                   add("cell", [0, 3, 1])], s.head))
    s.flush([
        f_edit("cell", [1, 1, 5], [1, 1, 8]),
        f_rem("cell", [1, 2, 7]),
        f_add("cell", [0, 3, 1]),
        ledger_add("c1", 4),
        outcome("c1", 2, "deopt", "absentReadUnproven"),
        outcome("c1", 3, "deopt", "writeOutOfScope"),
    ], [("c1", 4)])
    s.flush_ok(dirty=0)
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
    s.lmid_sub("L", 1, "c1", False, [], s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(s.next_head())
    s.ok("ack", [{"clientID": "c1", "mid": 1}], expect=s.next_head())
    s.drain(("L", 1, 1, [LEDGER_NAME], [add(LEDGER_NAME, ["c1", 1])], s.head))
    s.err("apply", {"epoch": 1, "seq": 1, "normalizedFp": FP, "cv": 101,
                    "ops": [add("deck", ["d1", "dup"])]}, error="poison")
    s.ok("isPoisoned", expect="true")
    s.ok("isLive", expect="false")
    s.ok("commitAll", expect="[]")
    # The published room's refusal texts for a store that is not live.
    s.err("beginMutation", "c1", 2, error="store is not live")
    s.err("ack", [{"clientID": "c1", "mid": 1}], error="store is not live")
    s.err("seedDurable", [{"clientID": "c1", "lmid": 1}], error="store is not live")
    s.err("lmidSubscribe", "L2", 1, "c1", 0, error="StoreNotLive")
    s.err("beginFlush", error="store is not live")
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
    s.ok("headCv", expect=str(s.head))
    s.marks("c1", 0, 0, 0)
    s.begin("c1", 1)
    # The JSON reader's own words after `pk: not JSON: ` / `row: not JSON: `.
    s.err("txGet", "slide", "s1", error='pk: not JSON: invalid type: string "s1", expected a '
          "row (an array of cells) at line 1 column 4")
    s.err("txRemove", "slide", {"$text": "nope"},
          error="pk: not JSON: expected ident at line 1 column 2")
    s.err("txEdit", "slide", 5, error="row: not JSON: invalid type: integer `5`, expected a "
          "row (an array of cells) at line 1 column 1")
    s.err("rejectMutation", "maybe", error="maybe")
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(s.next_head())
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
    s.ok("headCv", expect=str(s.head))
    s.ok("commitAll", expect="[]")
    s.flush_ok(dirty=0)
    s.lens(0, 0)
    s.sub("q", 1, {"table": "slide"}, 0, False, SL,
          [add("slide", ["s1", "d1", 5]), add("slide", ["s2", "d1", 2]),
           add("slide", ["s9", "d1", 500])], s.head)
    return s


def flush_ok_cv_takes_newer_upstream_image():
    s = WScenario(
        "flush_ok_cv_takes_newer_upstream_image",
        "flushOk (it takes no argument, as in the published room) after the feed raced ahead of "
        "the settlement: the batch's own echo changes nothing, an image another writer committed "
        "after the batch wins as it arrives and ships at the next commitAll; a key written again "
        "during the flight stays dirty and re-bases onto what the batch wrote.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 20])], s.head))
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
             f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
             ledger_add("c1", 1)], [("c1", 1)])
    s.begin("c1", 2)
    s.ok("txEdit", "slide", ["s2", "d1", 21], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 2, SL, [edit("slide", ["s2", "d1", 20], ["s2", "d1", 21])], s.head))
    # The authority commits the batch at cv 101 (its echo), then another writer edits
    # both rows at cv 102; the feed delivers both before the flush response arrives.
    s.upstream(1, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                   edit("slide", ["s2", "d1", 2], ["s2", "d1", 20])], 101,
               '{"applied":"live","ops":2}')
    s.upstream(2, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9]),
                   edit("slide", ["s2", "d1", 20], ["s2", "d1", 30])], 102,
               '{"applied":"live","ops":2}')
    # The echo changed nothing; the other writer's images win as they arrive, over s2's
    # write during the flight too (it is dropped: s2 is clean).
    s.drain(("q", 1, 3, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 9]),
                             edit("slide", ["s2", "d1", 21], ["s2", "d1", 30])], s.head))
    s.ok("headCv", expect=str(s.head))
    s.ok("cv", expect="102")
    s.flush_ok(101, dirty=0)
    s.ok("headCv", expect=str(s.head))
    s.ok("commitAll", expect="[]")
    s.marks("c1", 2, 0, 1)
    s.lens(1, 0)
    s.flush([ledger_edit("c1", 1, 2)], [("c1", 2)])
    s.flush_ok(103, dirty=0)
    s.ok("headCv", expect=str(s.head))
    s.ok("commitAll", expect="[]")
    s.lens(0, 0)
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 9]), add("slide", ["s2", "d1", 30]),
           add("slide", ["s9", "d1", 500])], s.head)
    return s


def flush_ok_takes_images_after_the_echo():
    s = WScenario(
        "flush_ok_takes_images_after_the_echo",
        "flushOk after the feed raced ahead of the settlement: while a batch is in flight, its "
        "own echo (the image it sent) changes nothing, and an image another writer committed "
        "after it wins at once (the head takes it and ships at the next commitAll, as in the "
        "published room); a key added by the batch and then removed by another writer goes. An "
        "upstream image older than a committed write of the room's (from before its batch) "
        "differs from the published room here (docs/compat.md).",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
                             add("slide", ["s3", "d1", 3])], s.head))
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
             f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
             f_add("slide", ["s3", "d1", 3]),
             ledger_add("c1", 1)], [("c1", 1)])
    s.upstream(1, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                   edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
                   add("slide", ["s3", "d1", 3])], 101, '{"applied":"live","ops":3}')
    # The batch's own echo (cv 101) changes nothing; another writer's images after it
    # (cv 102) win at once and ship at the next commitAll.
    s.upstream(2, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 7]),
                   rem("slide", ["s3", "d1", 3])], 102, '{"applied":"live","ops":2}')
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 7]),
                             rem("slide", ["s3", "d1", 3])], s.head))
    s.ok("headCv", expect=str(s.head))
    # Nothing is left to converge: flushOk is no local commit.
    s.flush_ok(dirty=0)
    s.ok("headCv", expect=str(s.head))
    s.ok("commitAll", expect="[]")
    s.marks("c1", 1, 0, 1)
    s.lens(0, 0)
    s.ok("beginFlush", expect="null")
    s.upstream(3, [edit("slide", ["s1", "d1", 7], ["s1", "d1", 8])], 103,
               '{"applied":"live","ops":1}')
    s.drain(("q", 1, 3, SL, [edit("slide", ["s1", "d1", 7], ["s1", "d1", 8])], s.head))
    return s


def flush_conflict_takes_images_after_current():
    s = WScenario(
        "flush_conflict_takes_images_after_current",
        "flushConflict when the feed is ahead of the 409: other writers' images of carried keys "
        "win as they arrive; when the 409's `current` for a key was already reported during the "
        "flight, what was reported after it is newer and the head keeps that (the published room "
        "would take `current`; docs/compat.md). A key with no conflict stays dirty with its CAS "
        "base and goes out in the next batch.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.ok("txEdit", "slide", ["s9", "d1", 501], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]),
                             edit("slide", ["s9", "d1", 500], ["s9", "d1", 501])], s.head))
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
    # Another writer's images win as they arrive: s9 and s1 take them and ship.
    s.drain(("q", 1, 2, SL, [edit("slide", ["s1", "d1", 5], ["s1", "d1", 43]),
                             edit("slide", ["s9", "d1", 501], ["s9", "d1", 600])], s.head))
    s.ok("headCv", expect=str(s.head))
    # The 409's `current` images are older than what the head already took: the conflict
    # changes nothing ({headCv: null}) and nothing more ships.
    s.ok("flushConflict", [
        {"table": "slide", "pk": ["s1"], "current": ["s1", "d1", 42]},
        {"table": "slide", "pk": ["s9"], "current": ["s9", "d1", 600]},
    ], expect=HEAD_NULL)
    s.ok("commitAll", expect="[]")
    s.ok("flushInFlight", expect="false")
    s.marks("c1", 1, 0, 0)
    s.lens(1, 1)
    s.flush([f_edit("slide", ["s2", "d1", 2], ["s2", "d1", 20]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.flush_ok(104, dirty=0)
    s.lens(0, 0)
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 43]), add("slide", ["s2", "d1", 20]),
           add("slide", ["s9", "d1", 600])], s.head)
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
