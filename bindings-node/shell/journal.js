"use strict";
// The room journal (the published room's `RoomJournal`): the durable sidecar an ack means.
// A journal stores opaque records: strings the addon produces (one journaled mutation,
// or a clientID's subject kept past compaction) and reads back at boot. The record codec
// lives in the Rust core only; nothing here looks inside a record — what a JavaScript
// journal needs to know about its records (which ones compaction drops, an entry's
// verdict) it asks the addon.
// `memoryJournal()` survives nothing beyond the process; `fileJournal(path)` is durable.
const native = require("../binding.js");

/** The verdict of one journaled entry: `"applied"`, `"rejected"` or `"deopt"`. Takes an
 *  opaque record or a legacy entry object (`outcome`, else the legacy `rejected` flag,
 *  else applied); an unknown `outcome` throws (the room refuses to boot from it). */
function journalEntryOutcome(entry) {
  return native.journalRecordOutcome(typeof entry === "string" ? entry : JSON.stringify(entry));
}

/** Compaction of a record list: the records to keep when the authority holds every mid
 *  up to `durable[clientID]` — the entries it does not cover, and one binding record per
 *  client in front, so a clientID stays bound to its subject across restarts. For a
 *  host application's own journal's `compact`. */
function compactJournalRecords(records, durable) {
  return JSON.parse(native.compactJournalRecords(JSON.stringify(records), JSON.stringify(durable)));
}

function copyFlush(r) {
  return { seq: r.seq, epoch: r.epoch, body: r.body };
}

/** An in-process journal: survives incarnations, and a second shell handed the same
 *  object (a simulated crash); not durable beyond the process. */
function memoryJournal() {
  let records = [];
  const flushes = new Map(); // seq → record
  let maxSeq = 0;
  return {
    async append(entries) {
      records.push(...entries);
    },
    async replay() {
      return [...records];
    },
    async appendFlush(record) {
      flushes.set(record.seq, copyFlush(record));
      maxSeq = Math.max(maxSeq, record.seq);
    },
    async confirmFlush(seq) {
      flushes.delete(seq);
    },
    async replayFlushes() {
      const kept = [...flushes.values()].sort((a, b) => a.seq - b.seq).map(copyFlush);
      return { records: kept, maxSeq };
    },
    async compact(durable) {
      records = compactJournalRecords(records, durable);
    },
  };
}

module.exports = { compactJournalRecords, journalEntryOutcome, memoryJournal };
