//! Inspecting a damaged journal and salvaging what is intact — never in place
//! (`rindle-room journal check PATH`, `rindle-room journal salvage PATH OUT`).
//!
//! [`check`] reads the whole file, stepping over damage, and reports every intact
//! record by kind and every damaged byte range. [`salvage`] writes every intact record,
//! in order, to a new file (refusing to overwrite one), syncs it, and reports what it
//! skipped. The original is only ever opened for reading.
//!
//! A salvaged journal may miss mutations that sat in a damaged range: booting it replays
//! what survived, and a client whose mids now have a gap is refused with the
//! `mutation gap` error until the authority's durable lmid covers it. The report says
//! which ranges were skipped so an operator can judge that first.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::payload::validate;
use super::record::{
    frame, is_torn_tail, open_to_read, survey, with_path, RecordKind, FILE_HEADER,
};

/// What [`check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The file inspected.
    pub path: PathBuf,
    /// Its length in bytes.
    pub file_len: u64,
    /// Intact records by kind name (`entry`, `flush`, …).
    pub records: BTreeMap<&'static str, u64>,
    /// Intact records whose payload does not decode (listed by offset).
    pub unreadable: Vec<(u64, String)>,
    /// Damaged byte ranges (holding no intact record), in file order.
    pub damaged: Vec<Range<u64>>,
    /// Whether a damaged range running to the end of the file is what a crash during an
    /// append leaves (too short for a record, a record cut short, zeroes), which opening
    /// the journal cuts; a complete record failing its checksum is not.
    pub torn_tail: bool,
}

impl Report {
    /// Intact records in all.
    pub fn intact(&self) -> u64 {
        self.records.values().sum()
    }

    /// Whether the file is clean: no damage and nothing unreadable.
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty() && self.unreadable.is_empty()
    }

    /// Whether the only damage is a torn tail (one range running to the end of the
    /// file), which opening the journal repairs by truncation.
    pub fn is_torn_tail_only(&self) -> bool {
        self.unreadable.is_empty()
            && self.damaged.len() == 1
            && self.damaged[0].end == self.file_len
            && self.torn_tail
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "journal {} ({} bytes)",
            self.path.display(),
            self.file_len
        )?;
        let kinds: Vec<String> = self
            .records
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let kinds = if kinds.is_empty() {
            String::from("none")
        } else {
            kinds.join(", ")
        };
        writeln!(f, "intact records: {} ({kinds})", self.intact())?;
        for r in &self.damaged {
            let what = if r.end != self.file_len {
                "corruption (intact records follow)"
            } else if self.torn_tail {
                "torn tail (opening the journal truncates it)"
            } else {
                "damage at the end (a complete record that fails its checksum, or bytes no \
                 crash leaves)"
            };
            writeln!(
                f,
                "damaged: bytes {}..{} ({} bytes): {what}",
                r.start,
                r.end,
                r.end - r.start
            )?;
        }
        for (offset, why) in &self.unreadable {
            writeln!(f, "unreadable: record at byte {offset}: {why}")?;
        }
        let verdict = if self.is_clean() {
            "clean"
        } else if self.is_torn_tail_only() {
            "a torn tail only: the room opens it, cutting the tail"
        } else {
            "damaged: the room refuses to open it; `rindle-room journal salvage` writes the \
             intact records to a new file"
        };
        write!(f, "verdict: {verdict}")
    }
}

/// Reads the journal at `path` (never modifying it) and reports its intact records and
/// its damage.
pub fn check(path: impl AsRef<Path>) -> io::Result<Report> {
    let path = path.as_ref();
    let mut report = Report {
        path: path.to_path_buf(),
        file_len: 0,
        records: BTreeMap::new(),
        unreadable: Vec::new(),
        damaged: Vec::new(),
        torn_tail: false,
    };
    let (damaged, torn_tail) = walk(path, &mut report.file_len, |offset, kind, payload| {
        match kind.and_then(|k| validate(path, offset, k, &payload).map(|()| k)) {
            Ok(kind) => *report.records.entry(kind.name()).or_default() += 1,
            Err(e) => report.unreadable.push((offset, e.to_string())),
        }
        Ok(())
    })?;
    report.damaged = damaged;
    report.torn_tail = torn_tail;
    Ok(report)
}

/// Writes every intact record of the journal at `path` to the new file `out` (which
/// must not exist), syncs it, and returns the report of the original. Records whose
/// payload does not decode are skipped too (they are listed as unreadable).
pub fn salvage(path: impl AsRef<Path>, out: impl AsRef<Path>) -> io::Result<Report> {
    let (path, out) = (path.as_ref(), out.as_ref());
    if out == path {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "salvage never writes in place: name a new file for the salvaged copy",
        ));
    }
    // Refuse what is not a journal before anything is created.
    drop(open_to_read(path)?);
    let mut target = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|e| with_path(out, "create the salvaged copy", e))?;
    let mut report = Report {
        path: path.to_path_buf(),
        file_len: 0,
        records: BTreeMap::new(),
        unreadable: Vec::new(),
        damaged: Vec::new(),
        torn_tail: false,
    };
    let mut buf = FILE_HEADER.to_vec();
    let (damaged, torn_tail) = walk(path, &mut report.file_len, |offset, kind, payload| {
        let kind = match kind.and_then(|k| validate(path, offset, k, &payload).map(|()| k)) {
            Ok(kind) => kind,
            Err(e) => {
                report.unreadable.push((offset, e.to_string()));
                return Ok(());
            }
        };
        *report.records.entry(kind.name()).or_default() += 1;
        frame(out, &mut buf, kind, &payload)?;
        if buf.len() >= 1 << 20 {
            target
                .write_all(&buf)
                .map_err(|e| with_path(out, "write", e))?;
            buf.clear();
        }
        Ok(())
    })?;
    report.damaged = damaged;
    report.torn_tail = torn_tail;
    target
        .write_all(&buf)
        .map_err(|e| with_path(out, "write", e))?;
    target.sync_all().map_err(|e| with_path(out, "sync", e))?;
    Ok(report)
}

/// Surveys the whole file at `path`, setting `file_len`; returns the damaged ranges and
/// whether a damaged range at the end is a torn tail.
fn walk(
    path: &Path,
    file_len: &mut u64,
    visit: impl FnMut(u64, io::Result<RecordKind>, Vec<u8>) -> io::Result<()>,
) -> io::Result<(Vec<Range<u64>>, bool)> {
    let (file, len) = open_to_read(path)?;
    *file_len = len;
    let damaged = survey(path, &file, FILE_HEADER.len() as u64, *file_len, visit)?;
    let torn = match damaged.last() {
        Some(r) if r.end == *file_len => is_torn_tail(path, &file, r.start, *file_len)?,
        _ => false,
    };
    Ok((damaged, torn))
}
