"""Shared schema and expected-output builders for the write-plane scenarios
(writes.py, gate.py, flush.py).

The room under test follows a small deck footprint. Upstream hello (tables by name):
deck(id, title) · member(id, name) · slide(id, deckId, pos) · tag(id, label), every
primary key column 0. The ledger table `_rindle_client_mutations(client_id,
last_mutation_id)` pk [0] (docs/protocol.md, the lmid query) is registered by enableWrites; it is in the
catalog here only to spell the lmid subscription's hello and ops.
"""

from lib import Scenario, T, _rank, add, by_name, cmp, hello, js, normalized_fp, snap_result
from canon import batch_hash

DECK = T("deck", ["id", "title"])
SLIDE = T("slide", ["id", "deckId", "pos"])
MEMBER = T("member", ["id", "name"])
TAG = T("tag", ["id", "label"])
TABLES = by_name([DECK, SLIDE, MEMBER, TAG])
FP = normalized_fp(TABLES)

LEDGER_NAME = "_rindle_client_mutations"
LEDGER = T(LEDGER_NAME, ["client_id", "last_mutation_id"])
OUTCOMES_NAME = "_rindle_room_mutation_outcomes"
assert normalized_fp([LEDGER]) == "ff539a32a611f1b5"  # the brief's worked value

SNAPSHOT = [
    add("deck", ["d1", "Deck one"]),
    add("slide", ["s1", "d1", 1]),
    add("slide", ["s2", "d1", 2]),
    add("slide", ["s9", "d1", 500]),
    add("member", ["m1", "ann"]),
    add("tag", [2, "two"]),
    add("tag", [10, "ten"]),
]
SLIDES = [add("slide", ["s1", "d1", 1]), add("slide", ["s2", "d1", 2]),
          add("slide", ["s9", "d1", 500])]

# The scope specs, in the compiler's key order (docs/design/authority.md: table, writable,
# footprintWhere; inside writable: kind, where?, joinKeyCols).
DECK_FOOTPRINT = {"type": "or", "conditions": [cmp("id", "=", "d1"), cmp("id", "=", "d2")]}
SPECS = [
    {"table": "deck",
     "writable": {"kind": "predicate", "where": cmp("id", "=", "d1"), "joinKeyCols": ["id"]},
     "footprintWhere": DECK_FOOTPRINT},
    {"table": "member", "writable": {"kind": "none"},
     "footprintWhere": cmp("name", "=", "ann")},
    {"table": "slide",
     "writable": {"kind": "predicate", "where": cmp("pos", "<", 100),
                  "joinKeyCols": ["deckId"]}},
    {"table": "tag", "writable": {"kind": "predicate", "joinKeyCols": []},
     "footprintWhere": {"type": "and", "conditions": []}},
]
OWNED = ["deck", "slide", "tag"]

TX = '{"begin":"tx"}'
DEDUP = '{"begin":"dedup"}'
HEAD_NULL = '{"headCv":null}'


# Staging refusals, in the published room's words (docs/compat.md: Staging refusals); a
# client reads them as a rejection's reason.


def existing_key(table):
    return "add of an existing primary key in `%s`" % table


def no_row(table):
    return "no row with that primary key in `%s`" % table


def wrong_width(table):
    return "row width does not match the schema of `%s`" % table


def not_owned(table):
    return "table `%s` is not owned by this room \u2014 mutators write owned tables only" % table


def unknown_table(table):
    return "unknown table `%s`" % table


def head(n):
    return '{"headCv":%d}' % n


def flush_ok(retired, dirty):
    return '{"retired":%d,"dirty":%d}' % (retired, dirty)


def deopt(reason, table, pk, op=None, column=None):
    """A deopt: `{"deopt":{reason, table, pk, op?, column?}}`."""
    d = {"reason": reason, "table": table, "pk": pk}
    if op is not None:
        d["op"] = op
    if column is not None:
        d["column"] = column
    return js({"deopt": d})


# flush `changes` entries, key order table, op, old, row -------------------------


def f_add(table, row):
    return {"table": table, "op": "add", "row": row}


def f_rem(table, old):
    return {"table": table, "op": "remove", "old": old}


def f_edit(table, old, row):
    return {"table": table, "op": "edit", "old": old, "row": row}


def ledger_add(client, mid):
    return f_add(LEDGER_NAME, [client, mid])


def ledger_edit(client, durable, mid):
    return f_edit(LEDGER_NAME, [client, durable], [client, mid])


def outcome(client, mid, kind, reason=None, name=None, args=None):
    """`[client_id, mid, kind, reason, name, args]`; args is JSON text (a string cell)."""
    return f_add(OUTCOMES_NAME, [client, mid, kind, reason, name, args])


class WScenario(Scenario):
    def __init__(self, name, description, tables=TABLES):
        super().__init__(name, description, list(tables) + [LEDGER])

    def next_head(self):
        """`{headCv}` of a call that commits locally: headCv + 1."""
        return head(self.local())

    def boot(self, cv=100):
        """open + the seq-0 snapshot: headCv = its cv."""
        self.ok("open", hello(TABLES), 30000, expect="null")
        self.ok("apply", {"epoch": 1, "seq": 0, "normalizedFp": FP, "cv": cv, "ops": SNAPSHOT},
                expect=snap_result(len(SNAPSHOT)))

    def upstream(self, seq, ops, cv, result):
        self.ok("apply", {"epoch": 1, "seq": seq, "normalizedFp": FP, "cv": cv, "ops": ops},
                expect=result)

    def begin(self, client, mid, name=None, args=None, expect=TX):
        a = [client, mid]
        if name is not None or args is not None:
            a.append(name)
        if args is not None:
            a.append(args)
        self.step("beginMutation", a, expect=expect)

    def commit(self, expect):
        self.ok("commitMutation", expect=expect)

    def marks(self, client, applied, acked, durable):
        self.ok("appliedMid", client, expect=str(applied))
        self.ok("ackedLmid", client, expect=str(acked))
        self.ok("durableLmid", client, expect=str(durable))

    def lens(self, pending, dirty):
        self.ok("pendingLen", expect=str(pending))
        self.ok("dirtyLen", expect=str(dirty))

    def lmid_sub(self, sub, epoch, client, reused, ops, cv, now=0):
        """lmidSubscribe: the room-composed `_rindle_client_mutations WHERE client_id =
        <client>`, same return shape as subscribe; hello tables = [ledger]."""
        ast = {"table": LEDGER_NAME, "where": cmp("client_id", "=", client)}
        self.ok("lmidSubscribe", sub, epoch, client, now,
                expect=self.subscribed(ast, reused, epoch, [LEDGER_NAME], ops, cv))

    def flush(self, changes, lmids):
        """beginFlush: `{changes, batchHash, lmids}`. `changes` lists the data keys (in
        body order, checked), the outcome rows in the order they were recorded and the
        ledger rows; the body puts them in the published room's order (data, outcomes,
        ledger) and `batchHash` is computed from it (canon.batch_hash)."""
        part = [[c for c in changes if c["table"] not in (OUTCOMES_NAME, LEDGER_NAME)],
                [c for c in changes if c["table"] == OUTCOMES_NAME],
                [c for c in changes if c["table"] == LEDGER_NAME]]
        changes = part[0] + part[1] + part[2]
        self.check_d7(changes)
        # The pending mutations this flight makes durable: per ledger row, the mids
        # above the durable row it edits (none for an add).
        self.flight_mids = sum(c["row"][1] - (c["old"][1] if c["op"] == "edit" else 0)
                               for c in part[2])
        body = {"changes": changes, "batchHash": batch_hash(changes),
                "lmids": [{"clientID": c, "mid": m} for c, m in lmids]}
        self.ok("beginFlush", expect=js(body))

    def flush_ok(self, *cv, dirty):
        """flushOk: `{retired, dirty}` — retired counts the pending mutations the flight
        made durable; `dirty`, the keys still dirty, is given."""
        self.ok("flushOk", *cv, expect=flush_ok(self.flight_mids, dirty))

    def check_d7(self, changes):
        # The published room's body: data keys, then the outcome rows (in the order they
        # were recorded), then the ledger rows (by client).
        kinds = []
        for c in changes:
            kinds.append(1 if c["table"] == OUTCOMES_NAME else 2 if c["table"] == LEDGER_NAME
                         else 0)
        assert kinds == sorted(kinds), "data, then outcomes, then ledger"
        data = [c for c, k in zip(changes, kinds) if k == 0]
        keys = []
        for c in data:
            t = self.cat[c["table"]]
            image = c.get("row") or c.get("old")
            keys.append((c["table"].encode("utf-8"),
                         tuple(_rank(image[i]) for i in t["primaryKey"])))
        assert keys == sorted(keys) and len(set(keys)) == len(keys), data
        ledger = [(c.get("row") or c["old"])[0].encode("utf-8")
                  for c, k in zip(changes, kinds) if k == 2]
        assert ledger == sorted(ledger) and len(set(ledger)) == len(ledger)
        outs = [(c["row"][0], c["row"][1]) for c, k in zip(changes, kinds) if k == 1]
        assert len(set(outs)) == len(outs), "one outcome row per mid"
