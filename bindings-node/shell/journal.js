"use strict";
// The room journal (the published room's `RoomJournal`): the durable sidecar an ack means.
// `memoryJournal()` survives nothing beyond the process; `fileJournal(path)` is durable:
// every append is written and fsynced before its promise resolves.

/** The one reading rule for an entry's verdict: `outcome`, else the legacy flag. */
function journalEntryOutcome(entry) {
  if (entry.outcome === "applied" || entry.outcome === "rejected" || entry.outcome === "deopt") {
    return entry.outcome;
  }
  return entry.rejected === true ? "rejected" : "applied";
}

function copyEntry(e) {
  const out = { clientID: e.clientID, mid: e.mid, name: e.name, args: e.args, sub: e.sub ?? "" };
  if (e.outcome !== undefined) out.outcome = e.outcome;
  if (e.rejected !== undefined) out.rejected = e.rejected;
  return out;
}

function copyFlush(r) {
  return { seq: r.seq, epoch: r.epoch, body: r.body };
}

/** The state both journals keep in memory: entries, unconfirmed flushes, max seq. */
class JournalState {
  constructor() {
    this.entries = [];
    this.flushes = new Map(); // seq → record
    this.maxSeq = 0;
    this.bindings = new Map(); // clientID → subject, kept when its entries are compacted away
  }

  /** Drops the entries a durable lmid covers (`durable`: clientID → lmid), keeping each
   *  dropped client's subject binding — the file journal's compaction rule. */
  compact(durable) {
    for (const e of this.entries) {
      if (e.sub && !this.bindings.has(e.clientID)) this.bindings.set(e.clientID, e.sub);
    }
    this.entries = this.entries.filter((e) => !(durable[e.clientID] >= e.mid));
  }

  /** Every clientID → subject binding: compacted ones, then those of kept entries. */
  allBindings() {
    const out = [...this.bindings.entries()];
    for (const e of this.entries) if (e.sub) out.push([e.clientID, e.sub]);
    return out;
  }

  apply(record) {
    switch (record.k) {
      case "m":
        this.entries.push(copyEntry(record.e));
        break;
      case "f":
        this.flushes.set(record.r.seq, copyFlush(record.r));
        this.maxSeq = Math.max(this.maxSeq, record.r.seq);
        break;
      case "c":
        this.flushes.delete(record.seq);
        break;
      default:
        throw new Error(`unknown journal record kind ${JSON.stringify(record.k)}`);
    }
  }

  replay() {
    return this.entries.map(copyEntry);
  }

  replayFlushes() {
    const records = [...this.flushes.values()].sort((a, b) => a.seq - b.seq).map(copyFlush);
    return { records, maxSeq: this.maxSeq };
  }
}

/** An in-process journal: survives incarnations, and a second shell handed the same
 *  object (a simulated crash); not durable beyond the process. */
function memoryJournal() {
  const state = new JournalState();
  return {
    async append(entries) {
      for (const e of entries) state.apply({ k: "m", e });
    },
    async replay() {
      return state.replay();
    },
    async appendFlush(record) {
      state.apply({ k: "f", r: record });
    },
    async confirmFlush(seq) {
      state.apply({ k: "c", seq });
    },
    async replayFlushes() {
      return state.replayFlushes();
    },
    async compact(durable) {
      state.compact(durable);
    },
    async bindings() {
      return state.allBindings();
    },
  };
}

module.exports = { journalEntryOutcome, memoryJournal, JournalState };
