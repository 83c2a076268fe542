//! The durable file journal: one append-only file of checksummed records, `fsync`ed
//! before any call returns. The record framing (header, [`RecordKind`], [`crc32c`]) comes
//! from the crate's private `record.rs` and is re-exported here; the payloads are
//! described in `payload.rs` (entries and bindings are the host's journal records,
//! [`rindle_room_core::host::journal_record`]).
//!
//! # Durability and recovery
//!
//! Every mutating call encodes all of its records into one buffer, writes it with one
//! `write_all` at the end of the file and calls `sync_data` before returning (all through
//! one private function). Because the file is only ever appended to and every append is
//! synced before it is acknowledged, a crash can only damage the **tail**: the last
//! append may be partially written, or the file may end in garbage or zeroes.
//!
//! One record is not written when it is made: a flush **confirmation**
//! ([`Journal::confirm_flush`]) is kept in memory and written at the front of the
//! journal's next write, synced with it (or taken into the next compaction, or written
//! unsynced when the journal is dropped). Losing one in a crash loses nothing: the next
//! boot resubmits the flush it confirms, and the authority answers a flush it already
//! committed as applied. Reads and compactions see it as if it were written. This
//! saves a sync per flush; a journal never holds more than that one unsynced write.
//!
//! [`FileJournal::open`] first checks the 16-byte file header ([`FILE_HEADER`]): a file
//! that does not start with it is not a journal and is refused untouched (a prefix of
//! it, or nothing, is a journal whose creation did not finish: it holds no record and
//! gets its header). Then it reads the records. Where the intact records end before the
//! file does, it looks at everything after that point:
//!
//! - **No intact record after it, and what a crash during an append leaves — too few
//!   bytes for a record header, a record whose declared length runs past the end of the
//!   file, or zeroes: a torn tail.** The file is truncated there (then synced) and
//!   [`FileJournal::recovered`] reports the bytes cut; the caller logs it. A complete
//!   record that fails its checksum, or other bytes, is damage, refused like the case
//!   below.
//! - **An intact record after it: corruption.** A damaged record followed by more
//!   records cannot come from a crash under this write discipline — it is outside damage
//!   (a flipped bit, a bad sector), and truncating would delete acknowledged writes. The
//!   open fails with a [`CorruptJournal`] error (kind `InvalidData`) naming the file, the
//!   damaged range and the intact records after it, and **the file is not modified**.
//!   `rindle-room journal check PATH` shows the damage; `rindle-room journal salvage
//!   PATH OUT` writes every intact record to a new file ([`super::salvage`]).
//!
//! A record whose checksum is valid but which cannot be understood (a future format
//! version, an unknown kind, a payload that does not decode) is never truncated away:
//! it is an `InvalidData` error naming the file and offset.
//!
//! Any failed write or sync poisons the journal: every later mutating call fails too,
//! since after a failed `fsync` the kernel's view of the file can no longer be trusted
//! (and the trait makes an error fatal to the incarnation anyway). A write past a
//! file-size limit fails like any other (the server ignores `SIGXFSZ`).
//!
//! Only one process may open a journal file at a time; nothing enforces that.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

mod compact;

pub use super::record::{crc32c, RecordKind, FILE_HEADER, HEADER_LEN, MAGIC, MAX_PAYLOAD, VERSION};

use super::group_sync::GroupSync;
use super::group_writer::{GroupDone, GroupJob};
use super::payload::{
    decode, decode_binding, decode_entry, encode_doc, encode_entry, push_json_string, validate,
    DocWire, FlushWire, SeqOnly, Snapshot,
};
use super::record::{
    frame, invalid, is_torn_tail, not_a_journal, open_to_read, read_head, require_regular, scan,
    survey, with_path, Head,
};
use super::{FlushRecord, GroupedWrite, Journal, JournalEntry};

/// The journal holds damage followed by intact records: it cannot be a torn tail, so
/// the journal refuses to open (and leaves the file as it is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptJournal {
    /// The journal file.
    pub path: PathBuf,
    /// Where the first damaged range starts (a byte offset).
    pub offset: u64,
    /// How many bytes are damaged in all.
    pub damaged_bytes: u64,
    /// Intact records after the first damaged range.
    pub records_after: u64,
}

impl fmt::Display for CorruptJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        let after = match self.records_after {
            0 => String::from(
                "the last record is complete but fails its checksum (damage, not a short \
                 write)",
            ),
            n => format!("followed by {n} intact record(s)"),
        };
        write!(
            f,
            "journal {path} is corrupt: damaged record at byte {} ({} damaged byte(s)), \
             {after} — this is not a torn tail, so nothing was truncated and the file was \
             not modified. Inspect it with `rindle-room journal check {path}`, then write a \
             salvaged copy with `rindle-room journal salvage {path} <new file>` and point \
             the room at the copy",
            self.offset, self.damaged_bytes
        )
    }
}

impl std::error::Error for CorruptJournal {}

/// server should log this, loudly when `truncated_bytes > 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Intact records kept.
    pub records: u64,
    /// Bytes cut from the end of the file: a torn tail.
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
    let (file, file_len) = open_to_read(path)?;
    let mut records = Vec::new();
    let end = scan(
        path,
        &file,
        FILE_HEADER.len() as u64,
        file_len,
        |offset, kind, payload| {
            let payload = String::from_utf8(payload)
                .map_err(|_| invalid(path, offset, "payload is not UTF-8".to_string()))?;
            records.push(StoredRecord {
                offset,
                kind,
                payload,
            });
            Ok(())
        },
    )?;
    Ok(Inspection {
        records,
        valid_len: end.valid_len,
        file_len,
    })
}

/// The largest journal [`holds_nothing`] reads: a compacted journal that holds nothing
/// is a few hundred bytes, so a longer one holds something.
pub const EMPTY_JOURNAL_MAX_BYTES: u64 = 4_096;

/// Whether the journal at `path` holds nothing a room needs again: its only records are
/// its doc record and compaction's flush-seq snapshot — no entry, no flush, no binding.
/// Reads only; a file past [`EMPTY_JOURNAL_MAX_BYTES`], or with a torn tail or damage,
/// holds something (it is never read as empty).
pub fn holds_nothing(path: impl AsRef<Path>) -> io::Result<bool> {
    let path = path.as_ref();
    if std::fs::metadata(path)?.len() > EMPTY_JOURNAL_MAX_BYTES {
        return Ok(false);
    }
    let inspection = read_records(path)?;
    Ok(inspection.valid_len == inspection.file_len
        && inspection
            .records
            .iter()
            .all(|r| matches!(r.kind, RecordKind::Doc | RecordKind::Snapshot)))
}

/// The durable, append-only, checksummed file journal (see the module docs for the
/// format and the recovery rules).
#[derive(Debug)]
pub struct FileJournal {
    path: PathBuf,
    compact_path: PathBuf,
    recovered: RecoveryReport,
    inner: Mutex<Inner>,
    /// The box's shared sync, when appends are covered by it instead of their own
    /// `fdatasync` (see [`FileJournal::sync_through`]).
    group: Option<Arc<GroupSync>>,
}

#[derive(Debug)]
struct Inner {
    /// Opened read + append: writes always land at the end.
    file: File,
    /// The length of the synced, intact prefix (= the file length unless poisoned).
    len: u64,
    /// Why the journal refuses writes, once a write, sync or compaction failed.
    poisoned: Option<String>,
    /// Confirmation records made but not written yet (payloads): the next write carries
    /// them (see the module docs).
    carried: Vec<Vec<u8>>,
}

impl FileJournal {
    /// Opens (creating it and its parent directories if missing) the journal at `path`,
    /// removes a leftover `<path>.compact`, and truncates a torn tail. Errors name the
    /// path; damage followed by intact records is a [`CorruptJournal`] error (kind
    /// `InvalidData`) and leaves the file untouched.
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

        require_regular(&path)?;
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

        let mut file_len = file
            .metadata()
            .map_err(|e| with_path(&path, "stat", e))?
            .len();
        match read_head(&path, &file, file_len)? {
            Head::Whole => {}
            // Someone else's file: refused, never written to.
            Head::Foreign => return Err(not_a_journal(&path)),
            // New, or created by a process that died before its header was synced: it
            // holds no record, so (re)writing the header loses nothing.
            Head::Partial => {
                file.set_len(0)
                    .and_then(|()| (&file).write_all(&FILE_HEADER))
                    .and_then(|()| file.sync_all())
                    .map_err(|e| with_path(&path, "write the file header", e))?;
                file_len = FILE_HEADER.len() as u64;
            }
        }
        let head = FILE_HEADER.len() as u64;
        let end = scan(&path, &file, head, file_len, |offset, kind, payload| {
            validate(&path, offset, kind, &payload)
        })?;
        if end.valid_len < file_len {
            // A torn tail holds no intact record; anything else is corruption.
            let mut records_after = 0u64;
            let damaged = survey(&path, &file, end.valid_len, file_len, |offset, kind, p| {
                records_after += 1;
                validate(&path, offset, kind?, &p)
            })?;
            if records_after > 0 {
                let corrupt = CorruptJournal {
                    path: path.clone(),
                    offset: end.valid_len,
                    damaged_bytes: damaged.iter().map(|r| r.end - r.start).sum(),
                    records_after,
                };
                return Err(io::Error::new(io::ErrorKind::InvalidData, corrupt));
            }
            // No intact record follows: a torn tail if it is what a crash during an
            // append leaves, damage otherwise (a complete record failing its checksum).
            if !is_torn_tail(&path, &file, end.valid_len, file_len)? {
                let corrupt = CorruptJournal {
                    path: path.clone(),
                    offset: end.valid_len,
                    damaged_bytes: file_len - end.valid_len,
                    records_after: 0,
                };
                return Err(io::Error::new(io::ErrorKind::InvalidData, corrupt));
            }
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
                carried: Vec::new(),
            }),
            path,
            compact_path,
            group: None,
        })
    }

    /// Covers this journal's appends by the box's `group` sync instead of an
    /// `fdatasync` of its own. Returns false (and changes nothing) when the file is not
    /// on the group's filesystem.
    pub fn sync_through(&mut self, group: Arc<GroupSync>) -> bool {
        let covered = match self.inner.get_mut() {
            Ok(inner) => group.covers(&inner.file),
            Err(_) => false,
        };
        if covered {
            self.group = Some(group);
        }
        covered
    }

    /// Opens the journal of `doc`'s room (fleet mode): a new or empty journal gets a
    /// doc record first (synced); an existing one must name `doc` — a journal of another
    /// doc, or one without a doc record, is an `InvalidData` error and is not modified.
    pub fn open_for_doc(path: impl AsRef<Path>, doc: &str) -> io::Result<FileJournal> {
        let journal = FileJournal::open(path)?;
        match journal.doc()? {
            Some(d) if d == doc => Ok(journal),
            Some(other) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "journal {} belongs to doc {other:?}, not {doc:?}; the file was not \
                     modified — move it back under its own room directory",
                    journal.path.display()
                ),
            )),
            None if journal.is_empty()? => {
                let mut frames = Vec::new();
                frame(
                    &journal.path,
                    &mut frames,
                    RecordKind::Doc,
                    encode_doc(doc).as_bytes(),
                )?;
                journal.commit("write the doc record", &frames)?;
                Ok(journal)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "journal {} has records but no doc record, so it is not a fleet room's \
                     journal; the file was not modified",
                    journal.path.display()
                ),
            )),
        }
    }

    /// The doc its first doc record names, if it has one.
    pub fn doc(&self) -> io::Result<Option<String>> {
        let inner = self.lock()?;
        for (offset, kind, payload) in self.read_locked(&inner)? {
            if kind == RecordKind::Doc {
                return Ok(Some(decode::<DocWire>(&self.path, offset, &payload)?.doc));
            }
        }
        Ok(None)
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

    /// Whether the journal holds no record (only its file header).
    pub fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len_bytes()? <= FILE_HEADER.len() as u64)
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

    /// THE write path: every append-type call (`append`, `append_flush`) goes through
    /// here — one `write_all` of the whole batch (after the confirmations it carries),
    /// then one `sync_data` (or the box's group sync, which returns after a `syncfs`
    /// that began after the write), both under the lock, so batches never interleave and
    /// nothing returns `Ok` before it is on disk.
    fn commit(&self, op: &str, frames: &[u8]) -> io::Result<()> {
        if frames.is_empty() {
            return Ok(());
        }
        let mut inner = self.lock_writable()?;
        self.write_locked(&mut inner, op, frames)?;
        let result = match &self.group {
            // The lock stays held: this journal's batches never interleave.
            Some(group) => group.sync(),
            None => inner.file.sync_data(),
        };
        result.map_err(|e| self.poison(&mut inner, op, e))
    }

    /// Writes the carried confirmations and `frames` in one `write_all`, unsynced.
    fn write_locked(&self, inner: &mut Inner, op: &str, frames: &[u8]) -> io::Result<()> {
        let carried;
        let bytes = if inner.carried.is_empty() {
            frames
        } else {
            let mut all = Vec::with_capacity(frames.len() + 64 * inner.carried.len());
            for payload in &inner.carried {
                frame(&self.path, &mut all, RecordKind::Confirm, payload)?;
            }
            all.extend_from_slice(frames);
            carried = all;
            &carried
        };
        match (&inner.file).write_all(bytes) {
            Ok(()) => {
                inner.len += bytes.len() as u64;
                inner.carried.clear();
                Ok(())
            }
            Err(e) => Err(self.poison(inner, op, e)),
        }
    }

    /// Refuses writes from now on, for `e` (returned, with the path).
    fn poison(&self, inner: &mut Inner, op: &str, e: io::Error) -> io::Error {
        let e = with_path(&self.path, op, e);
        inner.poisoned = Some(e.to_string());
        e
    }

    /// For the box's writer ([`crate::group_writer`]): writes `frames` (after the
    /// carried confirmations) without syncing them; the writer's sync covers them, and
    /// a failed sync comes back through [`FileJournal::sync_failed`].
    pub(crate) fn write_unsynced(&self, op: &str, frames: &[u8]) -> io::Result<()> {
        let mut inner = self.lock_writable()?;
        self.write_locked(&mut inner, op, frames)
    }

    /// The box's sync that was to cover this journal's last write failed: the journal
    /// refuses writes from now on, as after its own failed `fdatasync`.
    pub(crate) fn sync_failed(&self, op: &str, e: &io::Error) -> io::Error {
        let copy = io::Error::new(e.kind(), e.to_string());
        match self.lock() {
            Ok(mut inner) => self.poison(&mut inner, op, copy),
            Err(lock) => lock,
        }
    }

    /// The box's shared sync covering this journal, if any.
    pub(crate) fn group(&self) -> Option<&Arc<GroupSync>> {
        self.group.as_ref()
    }

    /// Reads every record of the synced prefix through the journal's own handle.
    fn read_locked(&self, inner: &Inner) -> io::Result<Vec<(u64, RecordKind, Vec<u8>)>> {
        let mut records = Vec::new();
        let end = scan(
            &self.path,
            &inner.file,
            FILE_HEADER.len() as u64,
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
        // The confirmations not written yet read as if they were, after the rest.
        let mut offset = inner.len;
        for payload in &inner.carried {
            records.push((offset, RecordKind::Confirm, payload.clone()));
            offset += (HEADER_LEN + payload.len()) as u64;
        }
        Ok(records)
    }
}

impl FileJournal {
    /// `entries` as records.
    fn entry_frames(&self, entries: &[JournalEntry]) -> io::Result<Vec<u8>> {
        let mut frames = Vec::new();
        for entry in entries {
            frame(
                &self.path,
                &mut frames,
                RecordKind::Entry,
                encode_entry(entry).as_bytes(),
            )?;
        }
        Ok(frames)
    }

    /// `record` as a record.
    fn flush_frames(&self, record: &FlushRecord) -> io::Result<Vec<u8>> {
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
        Ok(frames)
    }
}

impl Journal for FileJournal {
    fn append(&self, entries: &[JournalEntry]) -> io::Result<()> {
        let frames = self.entry_frames(entries)?;
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
        let frames = self.flush_frames(record)?;
        self.commit("append_flush", &frames)
    }

    fn submit_grouped(
        self: Arc<Self>,
        write: GroupedWrite,
        done: GroupDone,
    ) -> Result<(), (GroupedWrite, GroupDone)> {
        let Some(group) = self.group.clone() else {
            return Err((write, done));
        };
        let (op, frames) = match &write {
            GroupedWrite::Entries(entries) => ("append", self.entry_frames(entries)),
            GroupedWrite::Flush(record) => ("append_flush", self.flush_frames(record)),
        };
        match frames {
            Ok(frames) if !frames.is_empty() => group.submit(GroupJob {
                journal: self,
                op,
                frames,
                done,
            }),
            Ok(_) => done(Ok(())),
            Err(e) => done(Err(e)),
        }
        Ok(())
    }

    fn confirm_flush(&self, seq: u64) -> io::Result<()> {
        // Carried by the next write (module docs): no I/O here.
        let mut inner = self.lock_writable()?;
        inner
            .carried
            .push(format!("{{\"seq\":{seq}}}").into_bytes());
        Ok(())
    }

    fn replay_flushes(&self) -> io::Result<(Vec<FlushRecord>, u64)> {
        let inner = self.lock()?;
        let mut live = BTreeMap::new();
        let mut max_seq = 0;
        for (offset, kind, payload) in self.read_locked(&inner)? {
            match kind {
                RecordKind::Entry | RecordKind::Binding | RecordKind::Doc => {}
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

    fn bindings(&self) -> io::Result<Vec<(String, String)>> {
        let inner = self.lock()?;
        let mut out = Vec::new();
        for (offset, kind, payload) in self.read_locked(&inner)? {
            if kind == RecordKind::Binding {
                let (client, sub) = decode_binding(&self.path, offset, &payload)?;
                if !sub.is_empty() {
                    out.push((client, sub));
                }
            }
        }
        Ok(out)
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

impl Drop for FileJournal {
    /// Writes the carried confirmations (unsynced, best effort), so that a journal
    /// opened again in this process sees them.
    fn drop(&mut self) {
        if let Ok(mut inner) = self.lock_writable() {
            if !inner.carried.is_empty() {
                let _ = self.write_locked(&mut inner, "write carried confirmations", &[]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Paths.

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
