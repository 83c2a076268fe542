"use strict";
// `fileJournal(path)`: the durable room journal (the published room's `RoomJournal`), the server's
// own file format and implementation (`rindle-room-journal`, through the addon's
// `NativeFileJournal`): one append-only file of checksummed records, every write
// fsynced before its promise resolves, a torn tail cut at open, damage followed by
// intact records refused (the file left as it is), someone else's file refused. A
// journal written by the smol server boots this shell, and back. Writes run on libuv's
// thread pool, one at a time, in call order.
//
// The shell talks to it through `NATIVE_JOURNAL` (JSON text straight to the native
// journal); any other caller uses the `RoomJournal` methods.
const native = require("../binding.js");

/** The key under which a journal object offers its native journal to the shell. */
const NATIVE_JOURNAL = Symbol.for("rindle.room.nativeJournal");

/** The durable file journal at `path` (opened, and its tail checked, at once: a
 *  damaged or foreign file throws here). */
function fileJournal(path) {
  if (typeof path !== "string" || path.length === 0) {
    throw new TypeError("fileJournal: `path` must be a non-empty string");
  }
  const journal = new native.NativeFileJournal(path);
  let closed = false;
  let chain = Promise.resolve();
  /** Runs `op` after every earlier call (the file sees calls in call order). */
  const serially = (op) => {
    const run = () => {
      if (closed) throw new Error(`fileJournal ${path}: the journal is closed`);
      return op();
    };
    const next = chain.then(run, run);
    chain = next.catch(() => {});
    return next;
  };
  // The shell's view: the native journal, its calls serialized with the others.
  const nativeView = {
    readAll: () => serially(() => journal.readAll()),
    append: (json) => serially(() => journal.append(json)),
    appendFlush: (json) => serially(() => journal.appendFlush(json)),
    confirmFlush: (seq) => serially(() => journal.confirmFlush(seq)),
    compact: (json) => serially(() => journal.compact(json)),
  };
  const contents = async () => JSON.parse(await nativeView.readAll());
  return {
    [NATIVE_JOURNAL]: () => nativeView,
    /** Appends opaque records (or legacy entry objects) durably. */
    async append(entries) {
      await nativeView.append(JSON.stringify(entries));
    },
    /** Every record still kept, as opaque strings. */
    async replay() {
      return (await contents()).entries;
    },
    async appendFlush(record) {
      await nativeView.appendFlush(JSON.stringify(record));
    },
    async confirmFlush(seq) {
      await nativeView.confirmFlush(seq);
    },
    async replayFlushes() {
      const c = await contents();
      return { records: c.flushes, maxSeq: c.maxFlushSeq };
    },
    /** Drops the entries the authority holds (`mid <= durable[clientID]`) and the
     *  settled flush records. Not in the published interface: the shell calls it when offered. */
    async compact(durable) {
      await nativeView.compact(JSON.stringify(durable));
    },
    /** `[records kept, bytes of a torn tail cut]` when the file was opened. */
    recovered() {
      const [records, truncatedBytes] = journal.recovered();
      return { records, truncatedBytes };
    },
    /** Closes the file once the calls in flight are done; later calls reject. */
    async close() {
      await serially(async () => {});
      closed = true;
      journal.close();
    },
  };
}

module.exports = { fileJournal, NATIVE_JOURNAL };
