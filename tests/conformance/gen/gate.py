"""Scenarios: the v2 commit gate (docs/compat.md, the v2 commit gate;
docs/design/authority.md: Scope specs and the commit gate; the published WasmRoom API:
commitMutation / enableWritesV2).

The specs (wlib.SPECS): deck writable where id = 'd1', joinKeyCols [id], footprintWhere
id = 'd1' OR id = 'd2'; member a context table (kind none) whose footprintWhere reads a
non-pk column (name = 'ann'); slide writable where pos < 100, joinKeyCols [deckId], no
footprintWhere; tag writable everywhere, joinKeyCols [], footprintWhere the empty AND
(true). Head: deck d1; slides s1 (pos 1), s2 (pos 2), s9 (pos 500); member m1; tags 2, 10.

A deopt is `{"deopt":{reason, table, pk, op?, column?}}`: nothing is applied
(commitAll [], headCv unchanged), the transaction is consumed and the mid burnt
(appliedMid advances). The gate runs over the NET staged writes (a key staged and
restored is no write). Where several violations exist, the first wins: staged writes in
first-touch order, each checked for scope then join key, then absent reads in read order
(decisions-local "Gate order"; the contract only says "first violation wins").
"""

from lib import add, edit, rem
from wlib import (OWNED, SLIDES, SPECS, WScenario, deopt, f_edit, ledger_add,
                  outcome)

SL = ["slide"]
WOOS = "writeOutOfScope"
JKC = "joinKeyChanged"
ARU = "absentReadUnproven"


def gate_write_out_of_scope():
    s = WScenario(
        "gate_write_out_of_scope",
        "writeOutOfScope (+op), as the published room judges it: every staged write in call order"
        " — an add's new row, a remove's old row, an edit's new row — must pass the table's "
        "writable where (slide pos < 100; a NULL pos is not < 100); the first one that fails "
        "deopts with op add/remove/edit and the key's pk. An edit is judged by its new row only "
        "(an edit bringing an out-of-scope row into scope applies), and each write counts even "
        "when a later one undoes it. Nothing is applied and the mid is consumed. The flush then "
        "carries the applied edits, the ledger advance and one outcome row per deopt [c1, mid, "
        "deopt, writeOutOfScope, name, args] echoing the envelope's name and JSON-text args, or "
        "null when beginMutation had none.",
    )
    s.boot()
    s.ok("enableWritesV2", SPECS, OWNED, expect="null")
    s.sub("d", 1, {"table": "deck"}, 0, False, ["deck"], [add("deck", ["d1", "Deck one"])], s.head)
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1, "addDeck", {"id": "d2"})
    s.ok("txAdd", "deck", ["d2", "Two"], expect="null")
    s.commit(deopt(WOOS, "deck", ["d2"], op="add"))
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    s.marks("c1", 1, 0, 0)
    s.begin("c1", 2, "dropSlide", {"id": "s9"})
    s.ok("txRemove", "slide", ["s9"], expect="null")
    s.commit(deopt(WOOS, "slide", ["s9"], op="remove"))
    s.begin("c1", 3)
    s.ok("txEdit", "slide", ["s1", "d1", 200], expect="null")
    s.commit(deopt(WOOS, "slide", ["s1"], op="edit"))
    # An edit is judged by its new row only: s9 500 -> 5 comes into scope and applies.
    s.begin("c1", 4)
    s.ok("txEdit", "slide", ["s9", "d1", 5], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 5)
    s.ok("txEdit", "slide", ["s2", "d1", 50], expect="null")
    s.ok("txAdd", "slide", ["s4", "d1", 150], expect="null")
    s.commit(deopt(WOOS, "slide", ["s4"], op="add"))
    s.begin("c1", 6)
    s.ok("txAdd", "slide", ["s5", "d1", None], expect="null")
    s.commit(deopt(WOOS, "slide", ["s5"], op="add"))
    s.drain(("q", 1, 1, SL, [edit("slide", ["s9", "d1", 500], ["s9", "d1", 5])], s.head))
    s.ok("headCv", expect=str(s.head))
    # Every staged write counts, even one a later write undoes: the add of deck d2
    # (out of scope) is the first violation, before the removal that undoes it.
    s.begin("c1", 7)
    s.ok("txAdd", "deck", ["d2", "Two"], expect="null")
    s.ok("txRemove", "deck", ["d2"], expect="null")
    s.ok("txEdit", "slide", ["s1", "d1", 300], expect="null")
    s.ok("txEdit", "slide", ["s1", "d1", 1], expect="null")
    s.ok("txEdit", "slide", ["s2", "d1", 20], expect="null")
    s.commit(deopt(WOOS, "deck", ["d2"], op="add"))
    s.ok("commitAll", expect="[]")
    s.ok("commitAll", expect="[]")
    s.sub("q2", 1, {"table": "slide"}, 0, True, SL,
          [add("slide", ["s1", "d1", 1]), add("slide", ["s2", "d1", 2]),
           add("slide", ["s9", "d1", 5])], s.head)
    s.marks("c1", 7, 0, 0)
    s.lens(7, 1)
    s.flush([
        f_edit("slide", ["s9", "d1", 500], ["s9", "d1", 5]),
        ledger_add("c1", 7),
        outcome("c1", 1, "deopt", WOOS, "addDeck", '{"id":"d2"}'),
        outcome("c1", 2, "deopt", WOOS, "dropSlide", '{"id":"s9"}'),
        outcome("c1", 3, "deopt", WOOS),
        outcome("c1", 5, "deopt", WOOS),
        outcome("c1", 6, "deopt", WOOS),
        outcome("c1", 7, "deopt", WOOS),
    ], [("c1", 7)])
    return s


def gate_join_key_changed():
    s = WScenario(
        "gate_join_key_changed",
        "joinKeyChanged (+column), as the published room judges it: every staged edit in call "
        "order that changes a joinKeyCols column (slide deckId, to another deck or to NULL) "
        "deopts naming the column, also when a later edit moves it back; adds and removes with "
        "any deckId are not edits and apply; a deck edit keeping id applies. An edit both out of "
        "scope and moving decks reports writeOutOfScope (scope first); with two staged edits the "
        "first violating write wins. enableWritesV2 without the owned argument accepts the specs.",
    )
    s.boot()
    s.ok("enableWritesV2", SPECS, expect="null")
    s.sub("q", 1, {"table": "slide"}, 0, False, SL, SLIDES, s.head)
    s.begin("c1", 1, "moveSlide", {"id": "s1", "to": "d2"})
    s.ok("txEdit", "slide", ["s1", "d2", 1], expect="null")
    s.commit(deopt(JKC, "slide", ["s1"], column="deckId"))
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    # Every staged edit is judged in call order: moving s1 away and back still deopts.
    s.begin("c1", 2)
    s.ok("txEdit", "slide", ["s1", "d2", 1], expect="null")
    s.ok("txEdit", "slide", ["s1", "d1", 7], expect="null")
    s.commit(deopt(JKC, "slide", ["s1"], column="deckId"))
    s.ok("commitAll", expect="[]")
    s.begin("c1", 3)
    s.ok("txAdd", "slide", ["s5", "d9", 5], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 1, SL, [add("slide", ["s5", "d9", 5])], s.head))
    s.begin("c1", 4)
    s.ok("txRemove", "slide", ["s5"], expect="null")
    s.commit(s.next_head())
    s.drain(("q", 1, 2, SL, [rem("slide", ["s5", "d9", 5])], s.head))
    s.begin("c1", 5)
    s.ok("txEdit", "slide", ["s2", None, 2], expect="null")
    s.commit(deopt(JKC, "slide", ["s2"], column="deckId"))
    s.begin("c1", 6)
    s.ok("txEdit", "slide", ["s1", "d3", 500], expect="null")
    s.commit(deopt(WOOS, "slide", ["s1"], op="edit"))
    s.begin("c1", 7)
    s.ok("txEdit", "deck", ["d1", "Renamed"], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 8)
    s.ok("txEdit", "slide", ["s2", "d1", 3], expect="null")
    s.ok("txEdit", "slide", ["s1", "d4", 7], expect="null")
    s.commit(deopt(JKC, "slide", ["s1"], column="deckId"))
    s.ok("commitAll", expect="[]")
    s.ok("headCv", expect=str(s.head))
    s.marks("c1", 8, 0, 0)
    return s


def gate_absent_read():
    s = WScenario(
        "gate_absent_read",
        "absentReadUnproven: a txGet that found no row deopts unless the table's "
        "footprintWhere references only pk columns and is true for the probed pk. Unproven: "
        "slide (no footprintWhere), deck d5 (id = d1 OR id = d2 is false), member m9 "
        "(footprintWhere reads name, a non-pk column), and an absent read of a key the same "
        "transaction then adds (the read still found no row). Proven: deck d2, tag 99 (the "
        "empty AND is true), deck d1 read after the transaction removed it. Present reads "
        "(slide s1, context member m1) are not absent reads. A staged-write violation "
        "outranks an earlier absent read; among absent reads the first unproven one in "
        "read order is named (decisions-local). The pk of the deopt is the probed pk.",
    )
    s.boot()
    s.ok("enableWritesV2", SPECS, OWNED, expect="null")
    s.begin("c1", 1)
    s.ok("txGet", "slide", ["s7"], expect="null")
    s.commit(deopt(ARU, "slide", ["s7"]))
    s.begin("c1", 2)
    s.ok("txGet", "deck", ["d2"], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 3)
    s.ok("txGet", "deck", ["d5"], expect="null")
    s.commit(deopt(ARU, "deck", ["d5"]))
    s.begin("c1", 4)
    s.ok("txGet", "member", ["m9"], expect="null")
    s.commit(deopt(ARU, "member", ["m9"]))
    s.begin("c1", 5)
    s.ok("txGet", "tag", [99], expect="null")
    s.ok("txAdd", "tag", [99, "n"], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 6)
    s.ok("txGet", "slide", ["s1"], expect='["s1","d1",1]')
    s.ok("txEdit", "slide", ["s1", "d1", 3], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 7)
    s.ok("txGet", "slide", ["s8"], expect="null")
    s.ok("txAdd", "slide", ["s8", "d1", 8], expect="null")
    s.ok("txGet", "slide", ["s8"], expect='["s8","d1",8]')
    s.commit(deopt(ARU, "slide", ["s8"]))
    s.begin("c1", 8)
    s.ok("txRemove", "deck", ["d1"], expect="null")
    s.ok("txGet", "deck", ["d1"], expect="null")
    s.commit(s.next_head())
    s.begin("c1", 9)
    s.ok("txGet", "slide", ["zz"], expect="null")
    s.ok("txEdit", "slide", ["s2", "d9", 2], expect="null")
    s.commit(deopt(JKC, "slide", ["s2"], column="deckId"))
    s.begin("c1", 10)
    s.ok("txGet", "deck", ["d2"], expect="null")
    s.ok("txGet", "deck", ["d6"], expect="null")
    s.ok("txGet", "slide", ["s6"], expect="null")
    s.commit(deopt(ARU, "deck", ["d6"]))
    s.begin("c1", 11)
    s.ok("txGet", "member", ["m1"], expect='["m1","ann"]')
    s.commit(s.next_head())
    s.ok("headCv", expect=str(s.head))
    s.marks("c1", 11, 0, 0)
    s.sub("d", 1, {"table": "deck"}, 0, False, ["deck"], [], s.head)
    s.sub("t", 1, {"table": "tag"}, 0, False, ["tag"],
          [add("tag", [2, "two"]), add("tag", [10, "ten"]), add("tag", [99, "n"])], s.head)
    s.sub("q", 1, {"table": "slide"}, 0, False, SL,
          [add("slide", ["s1", "d1", 3]), add("slide", ["s2", "d1", 2]),
           add("slide", ["s9", "d1", 500])], s.head)
    return s


def scenarios():
    return [
        gate_write_out_of_scope(),
        gate_join_key_changed(),
        gate_absent_read(),
    ]
