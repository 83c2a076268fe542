"use strict";
// A durable room journal in one append-only file, plain Node `fs`.
//
// Format: UTF-8 text, one record per line, `<crc32 of the JSON, 8 hex> <JSON>\n`. The
// first record is a header (`{"k":"h","format":"rindle-room-node-journal","v":1}`);
// then `{"k":"m","e":entry}` (one journaled mutation), `{"k":"f","r":{seq,epoch,body}}`
// (a flush batch, before its first send) and `{"k":"c","seq":n}` (a settled flush).
//
// Durability: `append` and `appendFlush` write their records and `fsync` the file
// before they resolve — resolving is the ack gate. `confirmFlush` is written without
// its own fsync (the next fsync covers it; a lost confirmation only makes the next boot
// resubmit a settled batch, which the authority deduplicates). A new file is created
// with its header and the directory is fsynced, so the file itself survives a crash.
//
// Recovery (on open): records are read in order and checked (checksum, JSON). A torn
// tail — an unterminated last line, or damaged records with no valid record after them
// (a write cut short by a crash) — is truncated away and the truncation fsynced. A
// damaged record FOLLOWED by valid ones is not a torn write but corruption: opening
// fails loudly rather than silently dropping acknowledged mutations. So does a file
// with complete lines but no valid header (someone else's file is never truncated).
//
// A failed write truncates the file back to its last good length, so a later append
// never lands behind a torn fragment; if even that fails the journal refuses every
// later call. One process at a time: nothing locks the file.
const fs = require("node:fs");
const path = require("node:path");
const { JournalState } = require("./journal.js");

const FORMAT = "rindle-room-node-journal";
const VERSION = 1;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE) of `buf` from `start` to `end`. */
function crc32(buf, start = 0, end = buf.length) {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One record as its line bytes. */
function encode(record) {
  const json = Buffer.from(JSON.stringify(record), "utf8");
  const head = Buffer.from(`${crc32(json).toString(16).padStart(8, "0")} `, "latin1");
  return Buffer.concat([head, json, Buffer.from("\n")]);
}

/** Parses the line `buf[start, end)` (without its newline): the record, or null. */
function decode(buf, start, end) {
  if (end - start < 10 || buf[start + 8] !== 0x20) return null;
  const hex = buf.toString("latin1", start, start + 8);
  if (!/^[0-9a-f]{8}$/.test(hex)) return null;
  const want = Number.parseInt(hex, 16);
  if (crc32(buf, start + 9, end) !== want) return null;
  try {
    const record = JSON.parse(buf.toString("utf8", start + 9, end));
    return record !== null && typeof record === "object" ? record : null;
  } catch {
    return null;
  }
}

/** Reads `file`: the valid records and the length of the valid prefix. Throws on
 *  corruption that is not a torn tail. */
function scan(buf, file) {
  const records = [];
  let good = 0;
  let pos = 0;
  let damagedAt = -1;
  while (pos < buf.length) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) break; // unterminated tail: torn
    const record = decode(buf, pos, nl);
    if (record === null) {
      if (damagedAt < 0) damagedAt = pos;
    } else if (damagedAt >= 0) {
      throw new Error(
        `journal ${file} is corrupt: the record at byte ${damagedAt} is damaged but valid ` +
          `records follow it (at byte ${pos}); refusing to drop acknowledged mutations`,
      );
    } else {
      records.push(record);
      good = nl + 1;
    }
    pos = nl + 1;
  }
  return { records, good };
}

function fsyncDir(dir) {
  let fd;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync a directory; the file's own fsync still ran.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const write = (fd, buf) =>
  new Promise((resolve, reject) => {
    const go = (offset) =>
      fs.write(fd, buf, offset, buf.length - offset, null, (err, n) => {
        if (err) return reject(err);
        if (offset + n < buf.length) return go(offset + n);
        resolve();
      });
    go(0);
  });
const fsync = (fd) => new Promise((resolve, reject) => fs.fsync(fd, (e) => (e ? reject(e) : resolve())));
const ftruncate = (fd, len) =>
  new Promise((resolve, reject) => fs.ftruncate(fd, len, (e) => (e ? reject(e) : resolve())));

/**
 * A durable journal in the file `file` (created if missing). Opening reads and checks
 * the whole file (torn-tail recovery happens here, synchronously, and throws on
 * corruption). The returned object is a `RoomJournal` plus `path`, `size()` and
 * `close()`.
 */
function fileJournal(file) {
  if (typeof file !== "string" || file.length === 0) {
    throw new TypeError("fileJournal: `path` must be a non-empty string");
  }
  const abs = path.resolve(file);
  const existed = fs.existsSync(abs);
  const fd = fs.openSync(abs, "a+");
  const state = new JournalState();
  let size;
  try {
    const buf = fs.readFileSync(abs);
    const { records, good } = scan(buf, abs);
    if (records.length === 0 && buf.indexOf(0x0a) >= 0) {
      // Complete lines but not one record: not a torn header write, someone else's file.
      throw new Error(`journal ${abs} is not a ${FORMAT} file (no valid record in it)`);
    }
    if (records.length > 0) {
      const h = records[0];
      if (h.k !== "h" || h.format !== FORMAT) {
        throw new Error(`journal ${abs} is not a ${FORMAT} file`);
      }
      if (h.v !== VERSION) {
        throw new Error(`journal ${abs} has format version ${h.v}; this build reads ${VERSION}`);
      }
      for (const r of records.slice(1)) state.apply(r);
    }
    size = good;
    if (good < buf.length) {
      fs.ftruncateSync(fd, good);
      fs.fsyncSync(fd);
    }
    if (records.length === 0) {
      const header = encode({ k: "h", format: FORMAT, v: VERSION });
      fs.writeSync(fd, header);
      fs.fsyncSync(fd);
      size = header.length;
      if (!existed) fsyncDir(path.dirname(abs));
    }
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }

  let chain = Promise.resolve();
  let broken = null;
  let closed = false;

  /** Serializes one write (+ fsync); applies the records to the state once durable. */
  function commit(records, sync) {
    const run = async () => {
      if (closed) throw new Error(`journal ${abs} is closed`);
      if (broken) throw broken;
      const buf = Buffer.concat(records.map(encode));
      try {
        await write(fd, buf);
        if (sync) await fsync(fd);
      } catch (e) {
        try {
          await ftruncate(fd, size);
        } catch (t) {
          broken = new Error(`journal ${abs} is unusable: a failed write could not be undone (${t.message})`);
        }
        throw e;
      }
      size += buf.length;
      for (const r of records) state.apply(r);
    };
    const p = chain.then(run);
    chain = p.catch(() => {});
    return p;
  }

  return {
    path: abs,
    append(entries) {
      return commit(entries.map((e) => ({ k: "m", e: copyForDisk(e) })), true);
    },
    async replay() {
      await chain;
      return state.replay();
    },
    appendFlush(record) {
      return commit([{ k: "f", r: { seq: record.seq, epoch: record.epoch, body: record.body } }], true);
    },
    confirmFlush(seq) {
      return commit([{ k: "c", seq }], false);
    },
    async replayFlushes() {
      await chain;
      return state.replayFlushes();
    },
    /** Bytes of valid records on disk. */
    size() {
      return size;
    },
    /** Waits for pending writes, fsyncs and closes the file. Idempotent. */
    async close() {
      if (closed) return;
      await chain;
      closed = true;
      try {
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    },
  };
}

function copyForDisk(e) {
  const out = { clientID: e.clientID, mid: e.mid, name: e.name, sub: e.sub ?? "" };
  if (e.args !== undefined) out.args = e.args;
  if (e.outcome !== undefined) out.outcome = e.outcome;
  if (e.rejected !== undefined) out.rejected = e.rejected;
  return out;
}

module.exports = { fileJournal, crc32 };
