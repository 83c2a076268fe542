//! The durable file journal: one append-only file of checksummed records, `fsync`ed
//! before any call returns.
//!
//! # File format
//!
//! The file is a plain sequence of records, no file header. Each record is a 12-byte
//! header followed by its payload:
//!
//! | bytes   | field                                                                 |
//! |---------|-----------------------------------------------------------------------|
//! | 0       | magic, [`MAGIC`] (`0xB7`)                                             |
//! | 1       | format version, [`VERSION`] (`1`)                                     |
//! | 2       | record kind ([`RecordKind`]: 1 entry, 2 flush, 3 confirm, 4 snapshot) |
//! | 3       | reserved, written `0`, ignored on read                                |
//! | 4..8    | payload length, `u32` little-endian                                   |
//! | 8..12   | CRC-32C (Castagnoli) of header bytes `0..8` followed by the payload   |
//!
//! The payload is one compact JSON object (UTF-8), so a journal stays inspectable (see
//! `examples/journal_dump.rs`, which prints one JSON line per record):
//!
//! * **entry** — seed 000 `RoomJournalEntry`:
//!   `{"clientID":…,"mid":…,"name":…,"args":…,"sub":…,"outcome":…}` plus the legacy
//!   `"rejected":true` for both non-applied outcomes. `args` is embedded as the JSON
//!   value itself, byte for byte as given; args text that is not a single JSON value
//!   (without surrounding whitespace) is stored as a JSON string with `"argsText":true`.
//!   On read, `outcome` wins when present, else `rejected: true` means rejected, else
//!   applied (seed 000 `journalEntryOutcome`); a missing `sub` reads as `""`.
//! * **flush** — seed 000 `RoomFlushRecord`: `{"seq":…,"epoch":…,"body":…}`.
//! * **confirm** — the authority settled a flush: `{"seq":…}`.
//! * **snapshot** — written first by compaction so the highest flush seq survives the
//!   records it dropped: `{"maxFlushSeq":…}`.
//!
//! # Durability and recovery
//!
//! Every mutating call encodes all of its records into one buffer, writes it with one
//! `write_all` at the end of the file and calls `sync_data` before returning (all through
//! one private function). Because the file is only ever appended to and every append is
//! synced before it is acknowledged, a crash can only damage the **tail**: the last
//! append may be partially written, or the file may end in garbage or zeroes.
//! [`FileJournal::open`] therefore scans from the start and stops at the first record
//! that is incomplete, has a bad magic byte or fails its checksum, and truncates the file
//! there (then syncs). A corrupt record in the middle of the file followed by valid
//! records is treated the same way — everything from it onwards is cut — because under
//! this write discipline it can only come from outside damage, and nothing after a gap can
//! be trusted to be contiguous. The caller learns what happened from
//! [`FileJournal::recovered`] and should log it loudly when `truncated_bytes > 0`.
//!
//! A record whose checksum is valid but which cannot be understood (a future format
//! version, an unknown kind, a payload that does not decode) is never truncated away:
//! it is an `InvalidData` error naming the file and offset.
//!
//! Any failed write or sync poisons the journal: every later mutating call fails too,
//! since after a failed `fsync` the kernel's view of the file can no longer be trusted
//! (and the trait makes an error fatal to the incarnation anyway).
//!
//! Only one process may open a journal file at a time; nothing enforces that.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

use super::{FlushRecord, Journal, JournalEntry, Outcome};

/// The first byte of every record header.
pub const MAGIC: u8 = 0xB7;
/// The record format version this build writes and reads.
pub const VERSION: u8 = 1;
/// The length of a record header in bytes.
pub const HEADER_LEN: usize = 12;

/// What one framed record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A journaled mutation ([`JournalEntry`]).
    Entry,
    /// A journaled flush batch ([`FlushRecord`]).
    Flush,
    /// A flush confirmation: the authority settled that seq.
    Confirm,
    /// Written first by compaction: the highest flush seq ever appended.
    Snapshot,
}

impl RecordKind {
    fn to_byte(self) -> u8 {
        match self {
            RecordKind::Entry => 1,
            RecordKind::Flush => 2,
            RecordKind::Confirm => 3,
            RecordKind::Snapshot => 4,
        }
    }

    fn from_byte(byte: u8) -> Option<RecordKind> {
        match byte {
            1 => Some(RecordKind::Entry),
            2 => Some(RecordKind::Flush),
            3 => Some(RecordKind::Confirm),
            4 => Some(RecordKind::Snapshot),
            _ => None,
        }
    }

    /// The kind's lowercase name (`"entry"`, `"flush"`, `"confirm"`, `"snapshot"`).
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Entry => "entry",
            RecordKind::Flush => "flush",
            RecordKind::Confirm => "confirm",
            RecordKind::Snapshot => "snapshot",
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What [`FileJournal::open`] found and repaired. The journal logs nothing itself; the
/// server should log this, loudly when `truncated_bytes > 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Intact records kept.
    pub records: u64,
    /// Bytes cut from the end of the file: a torn tail (or damage, see the module docs).
    pub truncated_bytes: u64,
    /// Whether a leftover `<path>.compact` from an interrupted compaction was removed.
    pub stale_compact_removed: bool,
}

/// One record as stored, for inspection ([`read_records`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    /// The byte offset of the record header in the file.
    pub offset: u64,
    /// The record kind.
    pub kind: RecordKind,
    /// The JSON payload text.
    pub payload: String,
}

/// The result of [`read_records`]: every intact record, and where the intact prefix ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The intact records, in file order.
    pub records: Vec<StoredRecord>,
    /// The length of the intact prefix; [`FileJournal::open`] would truncate to this.
    pub valid_len: u64,
    /// The file's length.
    pub file_len: u64,
}

/// Reads every intact record of the journal at `path` without modifying the file (the
/// torn tail, if any, is reported through [`Inspection::valid_len`], not cut).
pub fn read_records(path: impl AsRef<Path>) -> io::Result<Inspection> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| with_path(path, "open", e))?;
    let file_len = file
        .metadata()
        .map_err(|e| with_path(path, "stat", e))?
        .len();
    let mut records = Vec::new();
    let end = scan(path, &file, file_len, |offset, kind, payload| {
        let payload = String::from_utf8(payload)
            .map_err(|_| invalid(path, offset, "payload is not UTF-8".to_string()))?;
        records.push(StoredRecord {
            offset,
            kind,
            payload,
        });
        Ok(())
    })?;
    Ok(Inspection {
        records,
        valid_len: end.valid_len,
        file_len,
    })
}

/// The durable, append-only, checksummed file journal (see the module docs for the
/// format and the recovery rules).
#[derive(Debug)]
pub struct FileJournal {
    path: PathBuf,
    compact_path: PathBuf,
    recovered: RecoveryReport,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Opened read + append: writes always land at the end.
    file: File,
    /// The length of the synced, intact prefix (= the file length unless poisoned).
    len: u64,
    /// Why the journal refuses writes, once a write, sync or compaction failed.
    poisoned: Option<String>,
}

impl FileJournal {
    /// Opens (creating it and its parent directories if missing) the journal at `path`,
    /// removes a leftover `<path>.compact`, and truncates a torn tail. Errors name the
    /// path.
    pub fn open(path: impl AsRef<Path>) -> io::Result<FileJournal> {
        let path = path.as_ref().to_path_buf();
        let compact_path = compact_path_for(&path);
        let dir = parent_dir(&path);
        fs::create_dir_all(&dir).map_err(|e| with_path(&dir, "create directory", e))?;

        // A `.compact` file is only ever renamed over the journal after it is complete
        // and synced; one still lying around is from a compaction that died before its
        // rename, and the journal itself is still the authoritative, untouched original.
        let stale_compact_removed = match fs::remove_file(&compact_path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(with_path(&compact_path, "remove stale compaction file", e)),
        };

        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| with_path(&path, "open", e))?;
        if !existed || stale_compact_removed {
            sync_dir(&dir)?;
        }

        let file_len = file
            .metadata()
            .map_err(|e| with_path(&path, "stat", e))?
            .len();
        let end = scan(&path, &file, file_len, |offset, kind, payload| {
            validate(&path, offset, kind, &payload)
        })?;
        if end.valid_len < file_len {
            file.set_len(end.valid_len)
                .map_err(|e| with_path(&path, "truncate torn tail", e))?;
            file.sync_all()
                .map_err(|e| with_path(&path, "sync after truncation", e))?;
        }

        Ok(FileJournal {
            recovered: RecoveryReport {
                records: end.records,
                truncated_bytes: file_len - end.valid_len,
                stale_compact_removed,
            },
            inner: Mutex::new(Inner {
                file,
                len: end.valid_len,
                poisoned: None,
            }),
            path,
            compact_path,
        })
    }

    /// What [`open`](Self::open) found and repaired.
    pub fn recovered(&self) -> RecoveryReport {
        self.recovered
    }

    /// The journal file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current length of the journal file in bytes.
    pub fn len_bytes(&self) -> io::Result<u64> {
        Ok(self.lock()?.len)
    }

    fn lock(&self) -> io::Result<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| {
            io::Error::other(format!(
                "journal {}: lock poisoned by a panic",
                self.path.display()
            ))
        })
    }

    /// Locks for a mutation: fails once the journal is poisoned.
    fn lock_writable(&self) -> io::Result<MutexGuard<'_, Inner>> {
        let inner = self.lock()?;
        if let Some(why) = &inner.poisoned {
            return Err(io::Error::other(format!(
                "journal {}: refusing writes after an earlier failure: {why}",
                self.path.display()
            )));
        }
        Ok(inner)
    }

    /// THE write path: every append-type call (`append`, `append_flush`,
    /// `confirm_flush`) goes through here — one `write_all` of the whole batch, then one
    /// `sync_data`, both under the lock, so batches never interleave and nothing returns
    /// `Ok` before it is on disk.
    fn commit(&self, op: &str, frames: &[u8]) -> io::Result<()> {
        if frames.is_empty() {
            return Ok(());
        }
        let mut inner = self.lock_writable()?;
        let result = (&inner.file)
            .write_all(frames)
            .and_then(|()| inner.file.sync_data());
        match result {
            Ok(()) => {
                inner.len += frames.len() as u64;
                Ok(())
            }
            Err(e) => {
                let e = with_path(&self.path, op, e);
                inner.poisoned = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Reads every record of the synced prefix through the journal's own handle.
    fn read_locked(&self, inner: &Inner) -> io::Result<Vec<(u64, RecordKind, Vec<u8>)>> {
        let mut records = Vec::new();
        let end = scan(
            &self.path,
            &inner.file,
            inner.len,
            |offset, kind, payload| {
                records.push((offset, kind, payload));
                Ok(())
            },
        )?;
        if end.valid_len != inner.len {
            return Err(invalid(
                &self.path,
                end.valid_len,
                "record damaged after it was written and synced".to_string(),
            ));
        }
        Ok(records)
    }

    fn compact_locked(&self, inner: &mut Inner, durable: &BTreeMap<String, u64>) -> io::Result<()> {
        let records = self.read_locked(inner)?;
        let mut keep = vec![false; records.len()];
        let mut live_flushes: BTreeMap<u64, usize> = BTreeMap::new();
        let mut max_seq = 0;
        for (i, (offset, kind, payload)) in records.iter().enumerate() {
            match kind {
                RecordKind::Entry => {
                    let key: EntryKey = decode(&self.path, *offset, payload)?;
                    keep[i] = durable.get(&key.client_id).is_none_or(|&d| key.mid > d);
                }
                RecordKind::Flush => {
                    let seq = decode::<SeqOnly>(&self.path, *offset, payload)?.seq;
                    max_seq = max_seq.max(seq);
                    // A re-appended seq replaces the earlier record, as in replay_flushes.
                    live_flushes.insert(seq, i);
                }
                RecordKind::Confirm => {
                    let seq = decode::<SeqOnly>(&self.path, *offset, payload)?.seq;
                    live_flushes.remove(&seq);
                }
                RecordKind::Snapshot => {
                    let snap: Snapshot = decode(&self.path, *offset, payload)?;
                    max_seq = max_seq.max(snap.max_flush_seq);
                }
            }
        }
        for &i in live_flushes.values() {
            keep[i] = true;
        }
        let droppable = records
            .iter()
            .zip(&keep)
            .filter(|((_, kind, _), &kept)| !kept && *kind != RecordKind::Snapshot)
            .count();
        if droppable == 0 {
            return Ok(());
        }

        let mut frames = Vec::new();
        if max_seq > 0 {
            let snap = format!("{{\"maxFlushSeq\":{max_seq}}}");
            frame(
                &self.path,
                &mut frames,
                RecordKind::Snapshot,
                snap.as_bytes(),
            )?;
        }
        for ((_, kind, payload), _) in records.iter().zip(&keep).filter(|(_, &k)| k) {
            frame(&self.path, &mut frames, *kind, payload)?;
        }

        let file = self.write_compacted(&frames).inspect_err(|_| {
            // Best effort: open() removes it anyway.
            let _ = fs::remove_file(&self.compact_path);
        })?;
        // The commit point: before the rename the original is untouched and valid; after
        // it the complete, synced compacted file is the journal.
        fs::rename(&self.compact_path, &self.path)
            .map_err(|e| with_path(&self.compact_path, "rename over the journal", e))?;
        sync_dir(&parent_dir(&self.path))?;
        inner.file = file;
        inner.len = frames.len() as u64;
        Ok(())
    }

    /// Writes and syncs `<path>.compact`, returning its handle (read + append).
    fn write_compacted(&self, frames: &[u8]) -> io::Result<File> {
        let path = &self.compact_path;
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(with_path(path, "remove stale compaction file", e)),
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| with_path(path, "create", e))?;
        file.write_all(frames)
            .map_err(|e| with_path(path, "write", e))?;
        file.sync_all().map_err(|e| with_path(path, "sync", e))?;
        Ok(file)
    }
}

impl Journal for FileJournal {
    fn append(&self, entries: &[JournalEntry]) -> io::Result<()> {
        let mut frames = Vec::new();
        for entry in entries {
            frame(
                &self.path,
                &mut frames,
                RecordKind::Entry,
                encode_entry(entry).as_bytes(),
            )?;
        }
        self.commit("append", &frames)
    }

    fn replay(&self) -> io::Result<Vec<JournalEntry>> {
        let inner = self.lock()?;
        let mut entries = Vec::new();
        for (offset, kind, payload) in self.read_locked(&inner)? {
            if kind == RecordKind::Entry {
                entries.push(decode_entry(&self.path, offset, &payload)?);
            }
        }
        Ok(entries)
    }

    fn append_flush(&self, record: &FlushRecord) -> io::Result<()> {
        let mut payload = format!(
            "{{\"seq\":{},\"epoch\":{},\"body\":",
            record.seq, record.epoch
        );
        push_json_string(&mut payload, &record.body);
        payload.push('}');
        let mut frames = Vec::new();
        frame(
            &self.path,
            &mut frames,
            RecordKind::Flush,
            payload.as_bytes(),
        )?;
        self.commit("append_flush", &frames)
    }

    fn confirm_flush(&self, seq: u64) -> io::Result<()> {
        let payload = format!("{{\"seq\":{seq}}}");
        let mut frames = Vec::new();
        frame(
            &self.path,
            &mut frames,
            RecordKind::Confirm,
            payload.as_bytes(),
        )?;
        self.commit("confirm_flush", &frames)
    }

    fn replay_flushes(&self) -> io::Result<(Vec<FlushRecord>, u64)> {
        let inner = self.lock()?;
        let mut live = BTreeMap::new();
        let mut max_seq = 0;
        for (offset, kind, payload) in self.read_locked(&inner)? {
            match kind {
                RecordKind::Entry => {}
                RecordKind::Flush => {
                    let record: FlushWire = decode(&self.path, offset, &payload)?;
                    max_seq = max_seq.max(record.seq);
                    live.insert(
                        record.seq,
                        FlushRecord {
                            seq: record.seq,
                            epoch: record.epoch,
                            body: record.body,
                        },
                    );
                }
                RecordKind::Confirm => {
                    live.remove(&decode::<SeqOnly>(&self.path, offset, &payload)?.seq);
                }
                RecordKind::Snapshot => {
                    let snap: Snapshot = decode(&self.path, offset, &payload)?;
                    max_seq = max_seq.max(snap.max_flush_seq);
                }
            }
        }
        Ok((live.into_values().collect(), max_seq))
    }

    fn compact(&self, durable: &BTreeMap<String, u64>) -> io::Result<()> {
        let mut inner = self.lock_writable()?;
        let result = self.compact_locked(&mut inner, durable);
        if let Err(e) = &result {
            inner.poisoned = Some(format!("compaction failed: {e}"));
        }
        result
    }
}

// ---------------------------------------------------------------------------------------
// Framing and scanning.

/// Appends one framed record to `out`.
fn frame(path: &Path, out: &mut Vec<u8>, kind: RecordKind, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "journal {}: {kind} record of {} bytes exceeds the 4 GiB record limit",
                path.display(),
                payload.len()
            ),
        )
    })?;
    let mut header = [0u8; HEADER_LEN];
    header[0] = MAGIC;
    header[1] = VERSION;
    header[2] = kind.to_byte();
    header[4..8].copy_from_slice(&len.to_le_bytes());
    let crc = Crc32c::new().update(&header[..8]).update(payload).finish();
    header[8..12].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(payload);
    Ok(())
}

/// Where a scan stopped.
struct ScanEnd {
    /// Intact records seen.
    records: u64,
    /// The end of the intact prefix.
    valid_len: u64,
}

/// Reads records from the start of `file` up to `len`, calling `visit(offset, kind,
/// payload)` for each intact one, and stops at the first incomplete or corrupt record.
/// Errors: I/O failures, and checksum-valid records that cannot be understood.
fn scan(
    path: &Path,
    file: &File,
    len: u64,
    mut visit: impl FnMut(u64, RecordKind, Vec<u8>) -> io::Result<()>,
) -> io::Result<ScanEnd> {
    let mut handle = file;
    handle
        .seek(SeekFrom::Start(0))
        .map_err(|e| with_path(path, "seek", e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, handle.take(len));
    let mut pos = 0u64;
    let mut records = 0u64;
    loop {
        let remaining = len - pos;
        if remaining < HEADER_LEN as u64 {
            // Clean end (0) or a torn header.
            break;
        }
        let mut header = [0u8; HEADER_LEN];
        reader
            .read_exact(&mut header)
            .map_err(|e| with_path(path, "read", e))?;
        if header[0] != MAGIC {
            break;
        }
        let payload_len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if u64::from(payload_len) > remaining - HEADER_LEN as u64 {
            break;
        }
        let mut payload = vec![0u8; payload_len as usize];
        reader
            .read_exact(&mut payload)
            .map_err(|e| with_path(path, "read", e))?;
        let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if Crc32c::new().update(&header[..8]).update(&payload).finish() != crc {
            break;
        }
        if header[1] != VERSION {
            return Err(invalid(
                path,
                pos,
                format!("unsupported record format version {}", header[1]),
            ));
        }
        let kind = RecordKind::from_byte(header[2])
            .ok_or_else(|| invalid(path, pos, format!("unknown record kind {}", header[2])))?;
        visit(pos, kind, payload)?;
        pos += HEADER_LEN as u64 + u64::from(payload_len);
        records += 1;
    }
    Ok(ScanEnd {
        records,
        valid_len: pos,
    })
}

/// Checks at open that an intact record's payload decodes, so a journal that cannot be
/// replayed fails at boot rather than mid-replay.
fn validate(path: &Path, offset: u64, kind: RecordKind, payload: &[u8]) -> io::Result<()> {
    match kind {
        RecordKind::Entry => decode_entry(path, offset, payload).map(drop),
        RecordKind::Flush => decode::<FlushWire>(path, offset, payload).map(drop),
        RecordKind::Confirm => decode::<SeqOnly>(path, offset, payload).map(drop),
        RecordKind::Snapshot => decode::<Snapshot>(path, offset, payload).map(drop),
    }
}

// ---------------------------------------------------------------------------------------
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven.

const CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// A running CRC-32C.
#[derive(Clone, Copy, Debug)]
struct Crc32c(u32);

impl Crc32c {
    fn new() -> Crc32c {
        Crc32c(!0)
    }

    fn update(mut self, bytes: &[u8]) -> Crc32c {
        for &b in bytes {
            self.0 = CRC32C_TABLE[((self.0 ^ u32::from(b)) & 0xFF) as usize] ^ (self.0 >> 8);
        }
        self
    }

    fn finish(self) -> u32 {
        !self.0
    }
}

/// CRC-32C of `bytes` (exposed for tests and tools that frame records by hand).
pub fn crc32c(bytes: &[u8]) -> u32 {
    Crc32c::new().update(bytes).finish()
}

// ---------------------------------------------------------------------------------------
// Payload encoding.

/// Encodes an entry as seed-000-shaped JSON (see the module docs).
fn encode_entry(entry: &JournalEntry) -> String {
    let mut out = String::with_capacity(64 + entry.args.len() + entry.name.len());
    out.push_str("{\"clientID\":");
    push_json_string(&mut out, &entry.client_id);
    out.push_str(",\"mid\":");
    out.push_str(&entry.mid.to_string());
    out.push_str(",\"name\":");
    push_json_string(&mut out, &entry.name);
    out.push_str(",\"args\":");
    if args_embeddable(&entry.args) {
        out.push_str(&entry.args);
    } else {
        push_json_string(&mut out, &entry.args);
        out.push_str(",\"argsText\":true");
    }
    out.push_str(",\"sub\":");
    push_json_string(&mut out, &entry.sub);
    out.push_str(match entry.outcome {
        Outcome::Applied => ",\"outcome\":\"applied\"}",
        Outcome::Rejected => ",\"outcome\":\"rejected\",\"rejected\":true}",
        Outcome::Deopt => ",\"outcome\":\"deopt\",\"rejected\":true}",
    });
    out
}

/// Whether `args` can be embedded verbatim as a JSON value: exactly one JSON value, no
/// surrounding whitespace (which the reader could not give back), and parseable one
/// nesting level deeper (inside the entry object).
fn args_embeddable(args: &str) -> bool {
    let trimmed = args.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    if trimmed.len() != args.len() || args.is_empty() {
        return false;
    }
    let mut nested = Vec::with_capacity(args.len() + 2);
    nested.push(b'[');
    nested.extend_from_slice(args.as_bytes());
    nested.push(b']');
    serde_json::from_slice::<IgnoredAny>(&nested).is_ok()
}

/// Appends `s` as a JSON string literal.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------------------
// Payload decoding.

/// The scalar fields of an entry payload (`args` is located separately, byte-exact).
#[derive(Deserialize)]
struct EntryWire {
    #[serde(rename = "clientID")]
    client_id: String,
    mid: u64,
    name: String,
    #[serde(default)]
    sub: String,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    rejected: Option<bool>,
    #[serde(default, rename = "argsText")]
    args_text: bool,
}

/// Just what compaction needs from an entry.
#[derive(Deserialize)]
struct EntryKey {
    #[serde(rename = "clientID")]
    client_id: String,
    mid: u64,
}

#[derive(Deserialize)]
struct FlushWire {
    seq: u64,
    epoch: u64,
    body: String,
}

#[derive(Deserialize)]
struct SeqOnly {
    seq: u64,
}

#[derive(Deserialize)]
struct Snapshot {
    #[serde(rename = "maxFlushSeq")]
    max_flush_seq: u64,
}

fn decode<T: DeserializeOwned>(path: &Path, offset: u64, payload: &[u8]) -> io::Result<T> {
    serde_json::from_slice(payload)
        .map_err(|e| invalid(path, offset, format!("undecodable payload: {e}")))
}

fn decode_entry(path: &Path, offset: u64, payload: &[u8]) -> io::Result<JournalEntry> {
    let wire: EntryWire = decode(path, offset, payload)?;
    // Seed 000 `journalEntryOutcome`: outcome when present, else the legacy rejected
    // flag, else applied.
    let outcome = match wire.outcome.as_deref() {
        Some("applied") => Outcome::Applied,
        Some("rejected") => Outcome::Rejected,
        Some("deopt") => Outcome::Deopt,
        Some(other) => {
            return Err(invalid(path, offset, format!("unknown outcome {other:?}")));
        }
        None if wire.rejected == Some(true) => Outcome::Rejected,
        None => Outcome::Applied,
    };
    let span = top_level_value_span(payload, "args")
        .map_err(|e| invalid(path, offset, format!("undecodable payload: {e}")))?;
    let args = match span {
        // `undefined` args vanish from JSON.stringify output; read them as null.
        None => "null".to_string(),
        Some(span) if wire.args_text => decode::<String>(path, offset, &payload[span])?,
        // The payload is valid UTF-8 JSON (decoded above) and a value span starts and
        // ends on ASCII bytes, so this cannot fail.
        Some(span) => String::from_utf8_lossy(&payload[span]).into_owned(),
    };
    Ok(JournalEntry {
        client_id: wire.client_id,
        mid: wire.mid,
        name: wire.name,
        args,
        sub: wire.sub,
        outcome,
    })
}

/// The byte range of the value under top-level `key` in the JSON object `json`.
fn top_level_value_span(json: &[u8], key: &str) -> Result<Option<Range<usize>>, String> {
    let mut i = skip_ws(json, 0);
    expect_byte(json, &mut i, b'{')?;
    i = skip_ws(json, i);
    if json.get(i) == Some(&b'}') {
        return Ok(None);
    }
    loop {
        let (name, end) = next_value::<String>(json, i)?;
        i = skip_ws(json, end);
        expect_byte(json, &mut i, b':')?;
        i = skip_ws(json, i);
        let (IgnoredAny, end) = next_value::<IgnoredAny>(json, i)?;
        if name == key {
            return Ok(Some(i..end));
        }
        i = skip_ws(json, end);
        match json.get(i) {
            Some(b',') => i = skip_ws(json, i + 1),
            Some(b'}') => return Ok(None),
            _ => return Err(format!("expected ',' or '}}' at byte {i}")),
        }
    }
}

/// Parses one JSON value starting at `at`, returning it and the offset just past it.
fn next_value<T: DeserializeOwned>(json: &[u8], at: usize) -> Result<(T, usize), String> {
    let mut stream = serde_json::Deserializer::from_slice(&json[at..]).into_iter::<T>();
    match stream.next() {
        Some(Ok(value)) => Ok((value, at + stream.byte_offset())),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(format!("unexpected end at byte {at}")),
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while matches!(json.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

fn expect_byte(json: &[u8], i: &mut usize, byte: u8) -> Result<(), String> {
    if json.get(*i) == Some(&byte) {
        *i += 1;
        Ok(())
    } else {
        Err(format!("expected {:?} at byte {}", char::from(byte), *i))
    }
}

// ---------------------------------------------------------------------------------------
// Paths and errors.

fn compact_path_for(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".compact");
    PathBuf::from(name)
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes a rename or file creation in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| with_path(dir, "sync directory", e))
    }
    #[cfg(not(unix))]
    {
        // Directories cannot be opened as files here; the rename is as durable as the
        // platform makes it.
        let _ = dir;
        Ok(())
    }
}

/// Wraps `e` with the path and the operation, keeping its kind.
fn with_path(path: &Path, op: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("journal {}: {op}: {e}", path.display()))
}

fn invalid(path: &Path, offset: u64, what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "journal {}: record at byte {offset}: {what}",
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn args_span_is_byte_exact() {
        let payload =
            br#"{"a":1, "args" : {"z":1,"a":[1e2, 123456789012345678901234567890]} ,"b":2}"#;
        let span = top_level_value_span(payload, "args").unwrap().unwrap();
        assert_eq!(
            &payload[span],
            br#"{"z":1,"a":[1e2, 123456789012345678901234567890]}"#
        );
        assert_eq!(
            top_level_value_span(br#"{"x":"args"}"#, "args").unwrap(),
            None
        );
        assert_eq!(top_level_value_span(b"{}", "args").unwrap(), None);
    }
}
