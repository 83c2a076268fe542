"""Scenarios: enabling the write plane, mutation transactions (begin / dedup / gap,
staging, read-your-writes, commit and fan-out), the lmid ledger (lmidSubscribe, ack,
seedDurable) — docs/compat.md (headCv, the write plane), the published WasmRoom API,
docs/design/authority.md (Scope specs and the commit gate).

Counters used below, derived from the upstream rules: the snapshot sets headCv to its cv;
every upstream apply takes the greater of headCv + 1 and its cv; a mutation commit +1 only when it changed the head (a net-empty
commit returns the current headCv); an ack or seedDurable that wrote ledger rows +1 (one
per call);
a deopt or a reject changes nothing. Every nbatch carries cv = headCv at its drain.

Error substrings: where the spec fixes the text (the mutation gap) the whole message is
given; otherwise the substring is what the error must name (the table, the method) or,
for state errors, one word of the situation ("snapshot", "enable", "already", "open",
"transaction"). Those words are the room's choice, not the spec's.
"""

from lib import add, cmp, edit, hello, live_result, rem, snap_result
from wlib import (DEDUP, FP, HEAD_NULL, LEDGER_NAME, OWNED, SLIDES, SNAPSHOT, SPECS, TABLES,
                  WScenario, existing_key, f_edit, ledger_add, ledger_edit, no_row, not_owned,
                  outcome, unknown_table, wrong_width)

LD = LEDGER_NAME
SL = ["slide"]


def writes_enable_v1():
    s = WScenario(
        "writes_enable_v1",
        "enableWrites(owned): refused before the seq-0 snapshot; every "
        "write-plane call before it is enabled errors; an owned table not in the upstream "
        "hello (named in the error) or a non-array argument is refused and enables nothing; "
        "enabling twice, or v2 after v1, throws. Fresh watermarks are 0, nothing is pending "
        "or dirty, no flush is in flight and beginFlush() is undefined. Mutators may write "
        "only owned tables (deck and tag are refused, slide is written).",
    )
    s.ok("open", hello(TABLES), 30000, expect="null")
    s.err("enableWrites", ["slide"], error="store is not live")
    s.err("enableWritesV2", SPECS, OWNED, error="store is not live")
    s.ok("apply", {"epoch": 1, "seq": 0, "normalizedFp": FP, "cv": 100, "ops": SNAPSHOT},
         expect=snap_result(7))
    s.err("beginMutation", "c1", 1, error="enable")
    s.err("lmidSubscribe", "L", 1, "c1", 0, error="enable")
    s.err("ack", [{"clientID": "c1", "mid": 1}], error="enable")
    s.err("seedDurable", [{"clientID": "c1", "lmid": 1}], error="enable")
    s.err("beginFlush", error="enable")
    s.err("enableWrites", ["slide", "nope"], error="nope")
    s.err("enableWrites", "slide", error="enableWrites")
    s.err("enableWrites", {"$text": '["slide"'}, error="enableWrites")
    s.err("beginMutation", "c1", 1, error="enable")  # nothing was enabled
    s.ok("enableWrites", ["slide"], expect="null")
    s.err("enableWrites", ["slide"], error="already")
    s.err("enableWritesV2", SPECS, OWNED, error="already")
    s.marks("c1", 0, 0, 0)
    s.lens(0, 0)
    s.ok("flushInFlight", expect="false")
    s.ok("beginFlush", expect="null")
    s.begin("c1", 1)
    s.err("txAdd", "deck", ["d2", "x"], error=not_owned("deck"))
    s.err("txAdd", "tag", [3, "x"], error=not_owned("tag"))
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(s.next_head())
    s.ok("headCv", expect=str(s.head))
    return s


def writes_enable_v2_refusals():
    s = WScenario(
        "writes_enable_v2_refusals",
        "enableWritesV2(specs, owned?) compiles every predicate now, loudly: "
        "a correlatedSubquery in writable.where or footprintWhere, a "
        "column-vs-column condition, an unknown table or column, a bad writable.kind, a "
        "missing writable, a duplicate table, a non-array, a spec marking a table writable "
        "outside the owned set (scopes narrow, never widen), an unknown owned table — each "
        "errors naming what was wrong, and nothing is enabled (a later valid enable works). "
        "Enabling twice (either flavour) throws. Under v2 a context table (writable.kind "
        "none) is readable with txGet and refused by txAdd/txEdit/txRemove; the "
        "ledger is neither readable nor writable.",
    )
    s.boot()
    exists = {"type": "correlatedSubquery", "op": "EXISTS",
              "related": {"correlation": {"parentField": ["id"], "childField": ["deckId"]},
                          "subquery": {"table": "slide", "alias": "s"}}}

    def with_deck(**over):
        deck = dict(SPECS[0])
        deck.update(over)
        return [deck] + SPECS[1:]

    bad_where = with_deck(writable={"kind": "predicate", "where": exists, "joinKeyCols": ["id"]})
    s.err("enableWritesV2", bad_where, OWNED, error='"deck"')
    s.err("enableWritesV2", with_deck(footprintWhere=exists), OWNED, error='"deck"')
    col_col = {"type": "simple", "op": "=", "left": {"type": "column", "name": "pos"},
               "right": {"type": "column", "name": "id"}}
    s.err("enableWritesV2",
          [{"table": "slide", "writable": {"kind": "predicate", "where": col_col,
                                           "joinKeyCols": []}}], error='"slide"')
    s.err("enableWritesV2", SPECS + [{"table": "nope", "writable": {"kind": "none"}}],
          error='"nope"')
    s.err("enableWritesV2", [{"table": "deck", "writable": {"kind": "sometimes"}}],
          error="kind")
    s.err("enableWritesV2", [{"table": "deck"}], error="writable")
    s.err("enableWritesV2",
          [{"table": "slide", "writable": {"kind": "predicate", "joinKeyCols": ["zz"]}}],
          error="zz")
    s.err("enableWritesV2",
          [{"table": "slide", "writable": {"kind": "predicate", "where": cmp("zz", "=", 1),
                                           "joinKeyCols": []}}], error="zz")
    s.err("enableWritesV2", [{"table": "deck", "writable": {"kind": "none"}},
                             {"table": "deck", "writable": {"kind": "none"}}], error='"deck"')
    s.err("enableWritesV2", {"table": "deck", "writable": {"kind": "none"}}, error="array")
    s.err("enableWritesV2", SPECS, ["deck", "tag"], error=['"slide"', "owned"])
    s.err("enableWritesV2", SPECS, OWNED + ["zz9"], error="zz9")
    s.err("beginMutation", "c1", 1, error="enable")  # nothing was enabled
    s.ok("enableWritesV2", SPECS, OWNED, expect="null")
    s.err("enableWritesV2", SPECS, OWNED, error="already")
    s.err("enableWrites", OWNED, error="already")
    s.begin("c1", 1)
    s.ok("txGet", "member", ["m1"], expect='["m1","ann"]')
    s.err("txAdd", "member", ["m2", "bob"], error=not_owned("member"))
    s.err("txEdit", "member", ["m1", "ANN"], error=not_owned("member"))
    s.err("txRemove", "member", ["m1"], error=not_owned("member"))
    s.err("txGet", LD, ["c1"], error=LD)
    s.err("txAdd", LD, ["c1", 1], error=LD)
    s.ok("rejectMutation", "rejected", "context write", expect="null")
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    s.marks("c1", 1, 0, 0)
    return s


def lmid_subscribe_and_ack():
    s = WScenario(
        "lmid_subscribe_and_ack",
        "The lmid ledger: lmidSubscribe serves the "
        "room-composed `_rindle_client_mutations WHERE client_id = <c>` with the subscribe "
        "shape — hello tables [ledger] (normalizedFp ff539a32a611f1b5), one row: that "
        "client's; the same client's query is reused. A commit moves appliedMid, not the "
        "ledger; ack([{clientID, mid}]) writes the rows as ONE local commit ({headCv:n}, "
        "headCv +1) and the next commitAll ships add [c, mid] then edit old->new to every "
        "lmid subscriber of that client; an ack already covered is {headCv:null}; an ack "
        "beyond the applied watermark errors (decisions-local); a reject consumes its mid "
        "and is acked like any other. A late lmidSubscribe snapshots the current row. "
        "durableLmid stays 0 without a flush.",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.lmid_sub("L1", 1, "c1", False, [], s.head)
    s.lmid_sub("L2", 4, "c2", False, [], s.head)
    s.lmid_sub("L1b", 2, "c1", True, [], s.head)
    s.ok("subscriberCount", expect="4")
    s.ok("materializationCount", expect="3")
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 10], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 10])], s.head))
    s.marks("c1", 1, 0, 0)
    s.ok("ack", [{"clientID": "c1", "mid": 1}], expect=s.next_head())
    s.marks("c1", 1, 1, 0)
    ops = [add(LD, ["c1", 1])]
    s.drain(("L1", 1, 1, [LD], ops, s.head), ("L1b", 2, 1, [LD], ops, s.head))
    s.ok("ack", [{"clientID": "c1", "mid": 1}], expect=HEAD_NULL)
    s.ok("commitAll", expect="[]")
    s.err("ack", [{"clientID": "c1", "mid": 2}], error="c1")
    s.begin("c1", 2)
    s.ok("rejectMutation", expect="null")
    s.begin("c1", 3)
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 2, SL, [add("slide", ["s3", "d1", 3])], s.head))
    s.begin("c2", 1)
    s.commit(s.next_head())
    s.ok("ack", [{"clientID": "c1", "mid": 2}, {"clientID": "c2", "mid": 1},
                 {"clientID": "c1", "mid": 3}], expect=s.next_head())
    ops1 = [edit(LD, ["c1", 1], ["c1", 3])]
    s.drain(("L1", 1, 2, [LD], ops1, s.head), ("L1b", 2, 2, [LD], ops1, s.head),
            ("L2", 4, 1, [LD], [add(LD, ["c2", 1])], s.head))
    s.lmid_sub("L3", 7, "c1", True, [add(LD, ["c1", 3])], s.head)
    s.marks("c1", 3, 3, 0)
    s.marks("c2", 1, 1, 0)
    s.ok("commitAll", expect="[]")
    return s


def mutation_begin_dedup_gap():
    s = WScenario(
        "mutation_begin_dedup_gap",
        "beginMutation: mid <= the client's applied watermark is {begin:dedup} (mid 0 "
        "of a fresh client too); mid = watermark+1 opens {begin:tx}; anything else errors "
        "with exactly `mutation gap for <clientID>: expected mid <w+1>, got <mid>`. While "
        "a transaction is open a second beginMutation (any client) errors; commit/reject "
        "without one errors. Watermarks are per client; a reject and a net-empty commit "
        "both consume the mid (appliedMid) and leave headCv alone; pendingLen counts every "
        "processed mid not yet durable (decisions-local). A fractional or negative mid is "
        "refused.",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.err("beginMutation", "c1", 2, error="mutation gap for c1: expected mid 1, got 2")
    s.begin("c1", 0, expect=DEDUP)
    s.begin("c1", 1)
    s.err("beginMutation", "c1", 1, error="open")
    s.err("beginMutation", "c2", 1, error="open")
    s.commit(s.next_head())
    s.err("commitMutation", error="transaction")
    s.err("rejectMutation", error="transaction")
    s.marks("c1", 1, 0, 0)
    s.begin("c1", 1, expect=DEDUP)
    s.err("beginMutation", "c1", 3, error="mutation gap for c1: expected mid 2, got 3")
    s.begin("c1", 2)
    s.ok("rejectMutation", expect="null")
    s.marks("c1", 2, 0, 0)
    s.begin("c1", 2, expect=DEDUP)
    s.begin("c1", 1, expect=DEDUP)
    s.err("beginMutation", "user:7/\u00e4", 5,
          error="mutation gap for user:7/\u00e4: expected mid 1, got 5")
    s.begin("c2", 1)
    s.ok("rejectMutation", "deopt", "environment", expect="null")
    s.marks("c2", 1, 0, 0)
    s.err("beginMutation", "c1", 3.5, error="mid")
    s.err("beginMutation", "c1", -1, error="mid")
    s.lens(3, 0)
    s.ok("headCv", expect=str(s.head))
    s.begin("c1", 3)
    s.commit(s.next_head())
    s.marks("c1", 3, 0, 0)
    return s


def mutation_dedup_resent():
    s = WScenario(
        "mutation_dedup_resent",
        "A re-sent mid (dedup) is absorbed at every stage — after its commit, after its "
        "ack, after the flush made it durable: {begin:dedup}, no transaction opens, the "
        "head, headCv, pendingLen and commitAll are unchanged. The next mid still opens.",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1, "setPos", {"id": "s1", "pos": 7})
    s.ok("txEdit", "slide", ["s1", "d1", 7], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 7])], s.head))
    s.begin("c1", 1, "setPos", {"id": "s1", "pos": 7}, expect=DEDUP)
    s.err("txEdit", "slide", ["s1", "d1", 8], error="transaction")
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    s.lens(1, 1)
    s.ok("ack", [{"clientID": "c1", "mid": 1}], expect=s.next_head())
    s.begin("c1", 1, expect=DEDUP)
    s.flush([f_edit("slide", ["s1", "d1", 1], ["s1", "d1", 7]), ledger_add("c1", 1)],
            [("c1", 1)])
    s.flush_ok(dirty=0)
    s.marks("c1", 1, 1, 1)
    s.lens(0, 0)
    s.begin("c1", 1, expect=DEDUP)
    s.ok("commitAll", expect="[]")
    s.begin("c1", 2)
    s.ok("rejectMutation", expect="null")
    s.marks("c1", 2, 1, 1)
    return s


def tx_get_read_your_writes():
    s = WScenario(
        "tx_get_read_your_writes",
        "txGet: the effective row under this transaction's staged writes — the "
        "head row, undefined when absent, then the staged add / edit / remove / re-add "
        "images (read-your-writes). Staged writes are invisible to commitAll until the "
        "commit. txGet needs an open transaction and the table's full primary key; the "
        "ledger and unknown tables are refused. Under v1 an absent read never deopts. An "
        "add then remove of one key in one transaction nets to nothing.",
    )
    s.boot()
    s.ok("enableWrites", ["slide", "tag"], expect="null")
    s.err("txGet", "slide", ["s1"], error="transaction")
    s.begin("c1", 1)
    s.ok("txGet", "slide", ["s1"], expect='["s1","d1",1]')
    s.ok("txGet", "slide", ["zz"], expect="null")
    s.ok("txGet", "tag", [10], expect='[10,"ten"]')
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.ok("txGet", "slide", ["s3"], expect='["s3","d1",3]')
    s.ok("txEdit", "slide", ["s3", "d1", 4], expect="null")
    s.ok("txGet", "slide", ["s3"], expect='["s3","d1",4]')
    s.ok("txEdit", "slide", ["s1", "d1", 11], expect="null")
    s.ok("txGet", "slide", ["s1"], expect='["s1","d1",11]')
    s.ok("txRemove", "slide", ["s2"], expect="null")
    s.ok("txGet", "slide", ["s2"], expect="null")
    s.ok("txAdd", "slide", ["s2", "d1", 22], expect="null")
    s.ok("txGet", "slide", ["s2"], expect='["s2","d1",22]')
    s.ok("txRemove", "slide", ["s3"], expect="null")
    s.ok("txGet", "slide", ["s3"], expect="null")
    s.err("txGet", "slide", ["s1", "x"], error=wrong_width("slide"))
    s.err("txGet", LD, ["c1"], error=LD)
    s.err("txGet", "nope", ["x"], error="nope")
    s.ok("commitAll", expect="[]")
    s.commit(s.next_head())
    s.sub("q", 1, {"table": "slide"}, 0, False, SL,
          [add("slide", ["s1", "d1", 11]), add("slide", ["s2", "d1", 22]),
           add("slide", ["s9", "d1", 500])], s.head)
    s.begin("c1", 2)
    s.ok("txGet", "slide", ["s3"], expect="null")
    s.commit(s.next_head())
    s.ok("commitAll", expect="[]")
    return s


def tx_staging_refusals():
    s = WScenario(
        "tx_staging_refusals",
        "Staging refusals: an add of an existing "
        "key (head or staged), an edit or remove of a missing key, a row of the wrong width "
        "(short, long), a pk of the wrong width, a table not owned, the ledger table, an "
        "unknown table, malformed row text, a non-array row, an object cell — each throws "
        "naming the table and leaves the head untouched (commitAll [], headCv, a fresh "
        "snapshot). The host then rejects: the mid is consumed, the valid staged edit is "
        "dropped, and the flush carries the ledger advance plus the outcome row "
        "[c1, 1, rejected, reason, null, null] (name/args ride deopt rows only).",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1, "addSlide", {"id": "s2"})
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.err("txAdd", "slide", ["s2", "d1", 9], error=existing_key("slide"))
    s.err("txAdd", "slide", ["s1", "d1", 5], error=existing_key("slide"))
    s.err("txEdit", "slide", ["s7", "d1", 1], error=no_row("slide"))
    s.err("txRemove", "slide", ["s7"], error=no_row("slide"))
    s.err("txAdd", "slide", ["s8", "d1"], error=wrong_width("slide"))
    s.err("txAdd", "slide", ["s8", "d1", 1, 0], error=wrong_width("slide"))
    s.err("txEdit", "slide", ["s1", "d1"], error=wrong_width("slide"))
    s.err("txRemove", "slide", ["s1", "x"], error=wrong_width("slide"))
    s.err("txAdd", "deck", ["d2", "x"], error=not_owned("deck"))
    s.err("txAdd", "member", ["m2", "bob"], error=not_owned("member"))
    s.err("txAdd", LD, ["c1", 5], error=unknown_table(LD))
    s.err("txEdit", LD, ["c1", 5], error=unknown_table(LD))
    s.err("txRemove", LD, ["c1"], error=unknown_table(LD))
    s.err("txAdd", "nope", [1], error=unknown_table("nope"))
    # Text that is not a row: the JSON reader's own words after `row: not JSON: `.
    s.err("txAdd", "slide", {"$text": '["s8","d1"'},
          error="row: not JSON: EOF while parsing a list at line 1 column 10")
    s.err("txAdd", "slide", {"id": "s8"}, error="row: not JSON: invalid type: map, expected "
          "a row (an array of cells) at line 1 column 0")
    s.err("txAdd", "slide", ["s8", "d1", {"x": 1}], error="row: not JSON: invalid type: map, "
          "expected a cell (null, boolean, number or string) at line 1 column 12")
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    s.ok("rejectMutation", "rejected", "bad row", expect="null")
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    s.marks("c1", 1, 0, 0)
    s.lens(1, 0)
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL, SLIDES, s.head)
    s.begin("c1", 2)
    s.ok("txGet", "slide", ["s1"], expect='["s1","d1",1]')
    s.commit(s.next_head())
    s.flush([ledger_add("c1", 2), outcome("c1", 1, "rejected", "bad row")], [("c1", 2)])
    return s


def commit_fanout():
    s = WScenario(
        "commit_fanout",
        "commitMutation applies the net staged writes as one local commit: {headCv:n} with headCv"
        " +1; nothing is visible before the commit; the next commitAll ships each affected "
        "subscriber one frame (edit s1, remove s2, add s3, by table then key) stamped cv = "
        "headCv; unaffected subscribers get nothing. cv() stays the upstream cv. An upstream "
        "apply in between moves headCv to the greater of headCv + 1 and its cv. A commit whose "
        "net effect is nothing still moves headCv by one and ships nothing.",
    )
    s.boot(cv=100)
    s.ok("enableWrites", ["slide", "tag"], expect="null")
    s.sub("d", 1, {"table": "deck"}, 0, False, ["deck"], [add("deck", ["d1", "Deck one"])], s.head)
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.sub("t", 1, {"table": "tag"}, 0, False, ["tag"],
          [add("tag", [2, "two"]), add("tag", [10, "ten"])], s.head)
    s.begin("c1", 1)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.ok("txAdd", "slide", ["s3", "d1", 3], expect="null")
    s.ok("txRemove", "slide", ["s2"], expect="null")
    s.ok("txAdd", "tag", [7, "seven"], expect="null")
    s.ok("commitAll", expect="[]")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [edit("slide", ["s1", "d1", 1], ["s1", "d1", 5]),
                             rem("slide", ["s2", "d1", 2]), add("slide", ["s3", "d1", 3])], s.head),
            ("t", 1, 1, ["tag"], [add("tag", [7, "seven"])], s.head))
    s.ok("cv", expect="100")
    s.ok("headCv", expect=str(s.head))
    s.upstream(1, [edit("deck", ["d1", "Deck one"], ["d1", "Deck 1"])], 101, live_result(1))
    s.ok("headCv", expect=str(s.head))
    s.drain(("d", 1, 1, ["deck"], [edit("deck", ["d1", "Deck one"], ["d1", "Deck 1"])], s.head))
    s.begin("c1", 2)
    s.ok("txEdit", "slide", ["s1", "d1", 5], expect="null")
    s.commit(s.next_head())
    s.ok("commitAll", expect="[]")
    s.begin("c1", 3)
    s.ok("txEdit", "tag", [7, "SEVEN"], expect="null")
    s.commit(s.next_head())
    s.drain(("t", 1, 2, ["tag"], [edit("tag", [7, "seven"], [7, "SEVEN"])], s.head))
    s.ok("cv", expect="101")
    return s


def seed_durable():
    s = WScenario(
        "seed_durable",
        "seedDurable([{clientID, lmid}]): the boot probe raises the durable "
        "AND applied watermarks (seeded mids replay as dedup, the next one opens, a jump "
        "is a gap) and writes the ledger rows as one local commit ({headCv:n}; the lmid "
        "subscriber gets add [c1, 4]); a seed at or below the row is {headCv:null}; an lmid "
        "0 writes nothing; a negative lmid is refused. The next flush's ledger co-edit is "
        "an edit whose old is the last durable row [c1, 4]; flushOk makes mid 5 "
        "durable; a later ack ships the ledger edit.",
    )
    s.boot()
    s.ok("enableWrites", ["slide"], expect="null")
    s.lmid_sub("L", 1, "c1", False, [], s.head)
    s.err("seedDurable", [{"clientID": "c1", "lmid": -1}], error="lmid")
    s.ok("seedDurable", [{"clientID": "c1", "lmid": 4}, {"clientID": "c2", "lmid": 0}],
         expect=s.next_head())
    s.drain(("L", 1, 1, [LD], [add(LD, ["c1", 4])], s.head))
    s.marks("c1", 4, 4, 4)
    s.marks("c2", 0, 0, 0)
    s.lens(0, 0)
    s.begin("c1", 3, expect=DEDUP)
    s.begin("c1", 4, expect=DEDUP)
    s.err("beginMutation", "c1", 6, error="mutation gap for c1: expected mid 5, got 6")
    s.begin("c1", 5)
    s.commit(s.next_head())
    s.lens(1, 0)
    s.ok("seedDurable", [{"clientID": "c1", "lmid": 4}], expect=HEAD_NULL)
    s.ok("seedDurable", [{"clientID": "c1", "lmid": 2}], expect=HEAD_NULL)
    s.marks("c1", 5, 4, 4)
    s.ok("commitAll", expect="[]")
    s.flush([ledger_edit("c1", 4, 5)], [("c1", 5)])
    s.flush_ok(dirty=0)
    s.marks("c1", 5, 4, 5)
    s.lens(0, 0)
    s.ok("ack", [{"clientID": "c1", "mid": 5}], expect=s.next_head())
    s.drain(("L", 1, 2, [LD], [edit(LD, ["c1", 4], ["c1", 5])], s.head))
    return s


def scenarios():
    return [
        writes_enable_v1(),
        writes_enable_v2_refusals(),
        lmid_subscribe_and_ack(),
        mutation_begin_dedup_gap(),
        mutation_dedup_resent(),
        tx_get_read_your_writes(),
        tx_staging_refusals(),
        commit_fanout(),
        seed_durable(),
    ]
