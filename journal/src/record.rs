//! The journal's record framing: the header, the CRC-32C, and the two ways of reading a
//! file — [`scan`], which stops at the first record that is not intact, and [`survey`],
//! which steps over damage to find every intact record after it.
//!
//! # Record format
//!
//! A journal file starts with the 16-byte file header [`FILE_HEADER`]
//! (`0x89 "RINDLE-JOURNAL" 0x01`: a non-ASCII first byte, the name, the file format
//! version), then a plain sequence of records. A file that does not start with it is not
//! a journal and is never written to. Each record is a 12-byte header followed by its
//! payload:
//!
//! | bytes   | field                                                                 |
//! |---------|-----------------------------------------------------------------------|
//! | 0       | magic, [`MAGIC`] (`0xB7`)                                             |
//! | 1       | format version, [`VERSION`] (`1`)                                     |
//! | 2       | record kind ([`RecordKind`]: 1 entry, 2 flush, 3 confirm, 4 snapshot, 5 binding, 6 doc) |
//! | 3       | reserved, written `0`, ignored on read                                |
//! | 4..8    | payload length, `u32` little-endian, at most [`MAX_PAYLOAD`]          |
//! | 8..12   | CRC-32C (Castagnoli) of header bytes `0..8` followed by the payload   |
//!
//! A record is *intact* when its magic byte is right, its length fits in the file and
//! its checksum matches. The payloads are described in [`super::file`].

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

/// The first 16 bytes of every journal file.
pub const FILE_HEADER: [u8; 16] = *b"\x89RINDLE-JOURNAL\x01";

/// The first byte of every record header.
pub const MAGIC: u8 = 0xB7;
/// The record format version this build writes and reads.
pub const VERSION: u8 = 1;
/// The length of a record header in bytes.
pub const HEADER_LEN: usize = 12;

/// What one framed record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A journaled mutation ([`JournalEntry`](crate::JournalEntry)).
    Entry,
    /// A journaled flush batch ([`FlushRecord`](crate::FlushRecord)).
    Flush,
    /// A flush confirmation: the authority settled that seq.
    Confirm,
    /// Written first by compaction: the highest flush seq ever appended.
    Snapshot,
    /// Written by compaction: a clientID's subject, kept when its entries are dropped.
    Binding,
    /// Written first in a fleet room's journal: the doc it belongs to (a box never
    /// derives a doc from a file name). Compaction keeps it first.
    Doc,
}

impl RecordKind {
    pub(crate) fn to_byte(self) -> u8 {
        match self {
            RecordKind::Entry => 1,
            RecordKind::Flush => 2,
            RecordKind::Confirm => 3,
            RecordKind::Snapshot => 4,
            RecordKind::Binding => 5,
            RecordKind::Doc => 6,
        }
    }

    pub(crate) fn from_byte(byte: u8) -> Option<RecordKind> {
        match byte {
            1 => Some(RecordKind::Entry),
            2 => Some(RecordKind::Flush),
            3 => Some(RecordKind::Confirm),
            4 => Some(RecordKind::Snapshot),
            5 => Some(RecordKind::Binding),
            6 => Some(RecordKind::Doc),
            _ => None,
        }
    }

    /// The kind's lowercase name (`"entry"`, `"flush"`, `"confirm"`, `"snapshot"`,
    /// `"binding"`, `"doc"`).
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Entry => "entry",
            RecordKind::Flush => "flush",
            RecordKind::Confirm => "confirm",
            RecordKind::Snapshot => "snapshot",
            RecordKind::Binding => "binding",
            RecordKind::Doc => "doc",
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The largest payload a record may carry (256 MiB). A header that claims more is not a
/// record: reading it would mean trusting a length that damage may have written.
pub const MAX_PAYLOAD: u32 = 256 * 1024 * 1024;

/// Appends one framed record to `out`.
pub(crate) fn frame(
    path: &Path,
    out: &mut Vec<u8>,
    kind: RecordKind,
    payload: &[u8],
) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= MAX_PAYLOAD)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "journal {}: {kind} record of {} bytes exceeds the {} MiB record limit",
                    path.display(),
                    payload.len(),
                    MAX_PAYLOAD >> 20
                ),
            )
        })?;
    out.reserve(HEADER_LEN + payload.len());
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

/// An intact record as read: where it starts, its header bytes 1 and 2 (version, kind)
/// and its payload.
struct Raw {
    offset: u64,
    version: u8,
    kind: u8,
    payload: Vec<u8>,
}

impl Raw {
    fn end(&self) -> u64 {
        self.offset + HEADER_LEN as u64 + self.payload.len() as u64
    }

    /// The record's kind; a checksum-valid record of another format version or an
    /// unknown kind is an error (it is intact, just not ours to read), never damage.
    fn kind(&self, path: &Path) -> io::Result<RecordKind> {
        if self.version != VERSION {
            return Err(invalid(
                path,
                self.offset,
                format!("unsupported record format version {}", self.version),
            ));
        }
        RecordKind::from_byte(self.kind).ok_or_else(|| {
            invalid(
                path,
                self.offset,
                format!("unknown record kind {}", self.kind),
            )
        })
    }
}

/// A read window over `file[..len]`: bytes are loaded as records need them and dropped
/// once the reader has moved past them, so memory stays at one record plus a buffer.
struct Window<'a> {
    path: &'a Path,
    file: &'a File,
    len: u64,
    /// File offset of `buf[0]`.
    base: u64,
    buf: Vec<u8>,
}

/// How much a window reads ahead at a time.
const READ_AHEAD: usize = 64 * 1024;

impl<'a> Window<'a> {
    fn new(path: &'a Path, file: &'a File, from: u64, len: u64) -> io::Result<Window<'a>> {
        let mut handle = file;
        handle
            .seek(SeekFrom::Start(from))
            .map_err(|e| with_path(path, "seek", e))?;
        Ok(Window {
            path,
            file,
            len,
            base: from,
            buf: Vec::new(),
        })
    }

    /// `file[at..at + n]`, or `None` past the end.
    fn bytes(&mut self, at: u64, n: usize) -> io::Result<Option<&[u8]>> {
        if at + n as u64 > self.len {
            return Ok(None);
        }
        if at < self.base {
            return Err(with_path(
                self.path,
                "read",
                io::Error::other("journal window moved backwards"),
            ));
        }
        let start = (at - self.base) as usize;
        let want = start + n;
        if want > self.buf.len() {
            let loaded = self.base + self.buf.len() as u64;
            let more = (want - self.buf.len()).max(READ_AHEAD);
            let more = more.min((self.len - loaded) as usize);
            let old = self.buf.len();
            self.buf.resize(old + more, 0);
            let mut handle = self.file;
            handle
                .read_exact(&mut self.buf[old..])
                .map_err(|e| with_path(self.path, "read", e))?;
        }
        Ok(Some(&self.buf[start..want]))
    }

    /// Forgets the bytes before `upto` (the reader will not look back past it).
    fn release(&mut self, upto: u64) {
        let done = upto.saturating_sub(self.base) as usize;
        if done >= READ_AHEAD && done <= self.buf.len() {
            self.buf.drain(..done);
            self.base = upto;
        }
    }

    /// The intact record starting at `at`, if one does.
    fn record_at(&mut self, at: u64) -> io::Result<Option<Raw>> {
        let Some(header) = self.bytes(at, HEADER_LEN)? else {
            return Ok(None);
        };
        if header[0] != MAGIC {
            return Ok(None);
        }
        let header: [u8; HEADER_LEN] = header.try_into().unwrap_or([0; HEADER_LEN]);
        let payload_len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if payload_len > MAX_PAYLOAD {
            return Ok(None);
        }
        let Some(payload) = self.bytes(at + HEADER_LEN as u64, payload_len as usize)? else {
            return Ok(None);
        };
        let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if Crc32c::new().update(&header[..8]).update(payload).finish() != crc {
            return Ok(None);
        }
        Ok(Some(Raw {
            offset: at,
            version: header[1],
            kind: header[2],
            payload: payload.to_vec(),
        }))
    }
}

/// Where a scan stopped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanEnd {
    /// Intact records seen.
    pub records: u64,
    /// The end of the intact prefix.
    pub valid_len: u64,
}

/// How a file starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// With the whole [`FILE_HEADER`]: a journal.
    Whole,
    /// With a proper prefix of it (nothing at all included): a journal whose creation
    /// did not finish; it can hold no record.
    Partial,
    /// With anything else: not a journal.
    Foreign,
}

/// Reads how `file` (of `len` bytes) starts.
pub(crate) fn read_head(path: &Path, file: &File, len: u64) -> io::Result<Head> {
    let n = len.min(FILE_HEADER.len() as u64) as usize;
    let mut start = [0u8; FILE_HEADER.len()];
    let mut handle = file;
    handle
        .seek(SeekFrom::Start(0))
        .and_then(|_| handle.read_exact(&mut start[..n]))
        .map_err(|e| with_path(path, "read the file header", e))?;
    Ok(
        match (start[..n] == FILE_HEADER[..n], n == FILE_HEADER.len()) {
            (true, true) => Head::Whole,
            (true, false) => Head::Partial,
            (false, _) => Head::Foreign,
        },
    )
}

/// The error for a file that is not a journal.
pub(crate) fn not_a_journal(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{} is not a rindle-room journal (it does not start with the journal file header); the file was not modified — check the path",
            path.display()
        ),
    )
}

/// Opens the journal at `path` for reading: a regular file that starts with the whole
/// [`FILE_HEADER`] (anything else is refused, untouched). Returns it and its length.
pub(crate) fn open_to_read(path: &Path) -> io::Result<(File, u64)> {
    require_regular(path)?;
    let file = File::open(path).map_err(|e| with_path(path, "open", e))?;
    let len = file
        .metadata()
        .map_err(|e| with_path(path, "stat", e))?
        .len();
    if read_head(path, &file, len)? != Head::Whole {
        return Err(not_a_journal(path));
    }
    Ok((file, len))
}

/// Refuses a path that exists and is not a regular file (a FIFO would block a reader).
pub(crate) fn require_regular(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a directory, a FIFO, a device or a socket); a journal is a regular file",
                path.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether the bytes of `file` from `from` to `len`, which hold no intact record, are
/// what a crash during an append leaves: too few bytes for a record header, a record
/// whose declared length runs past the end of the file (a short write), or zeroes. A
/// complete record whose checksum fails, or other bytes, are damage.
pub(crate) fn is_torn_tail(path: &Path, file: &File, from: u64, len: u64) -> io::Result<bool> {
    let rest = len.saturating_sub(from);
    if rest < HEADER_LEN as u64 {
        return Ok(true);
    }
    let mut handle = file;
    handle
        .seek(SeekFrom::Start(from))
        .map_err(|e| with_path(path, "seek", e))?;
    let mut header = [0u8; HEADER_LEN];
    handle
        .read_exact(&mut header)
        .map_err(|e| with_path(path, "read", e))?;
    if header[0] == MAGIC {
        let declared = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if u64::from(declared) + HEADER_LEN as u64 > rest {
            return Ok(true);
        }
    }
    // All zeroes (the file grew but its data never reached the disk)?
    let mut seen = header.iter().all(|&b| b == 0);
    let mut buf = vec![0u8; 64 * 1024];
    while seen {
        let n = handle
            .read(&mut buf)
            .map_err(|e| with_path(path, "read", e))?;
        if n == 0 {
            break;
        }
        seen = buf[..n].iter().all(|&b| b == 0);
    }
    Ok(seen)
}

/// Reads records from `from` (the end of the file header) up to `len`, calling
/// `visit(offset, kind, payload)` for each intact one, and stops at the first record
/// that is not intact. Errors: I/O failures, and checksum-valid records that cannot be
/// understood.
pub(crate) fn scan(
    path: &Path,
    file: &File,
    from: u64,
    len: u64,
    mut visit: impl FnMut(u64, RecordKind, Vec<u8>) -> io::Result<()>,
) -> io::Result<ScanEnd> {
    let mut window = Window::new(path, file, from, len)?;
    let mut pos = from;
    let mut records = 0u64;
    loop {
        window.release(pos);
        let Some(raw) = window.record_at(pos)? else {
            break;
        };
        let kind = raw.kind(path)?;
        let end = raw.end();
        visit(raw.offset, kind, raw.payload)?;
        pos = end;
        records += 1;
    }
    Ok(ScanEnd {
        records,
        valid_len: pos,
    })
}

/// Reads `file[from..len]` record by record, stepping over damage: where no intact
/// record starts, it moves on a byte at a time until one does. Calls `visit` for every
/// intact record and returns the damaged byte ranges (ranges holding no intact record),
/// in file order. A range that runs to `len` is a tail; one followed by an intact
/// record is damage in the middle. An intact record of another format version or an
/// unknown kind reaches `visit` as an error kind (the caller decides).
pub(crate) fn survey(
    path: &Path,
    file: &File,
    from: u64,
    len: u64,
    mut visit: impl FnMut(u64, io::Result<RecordKind>, Vec<u8>) -> io::Result<()>,
) -> io::Result<Vec<Range<u64>>> {
    let mut window = Window::new(path, file, from, len)?;
    let mut damaged: Vec<Range<u64>> = Vec::new();
    let mut bad_from: Option<u64> = None;
    let mut pos = from;
    while pos < len {
        window.release(pos);
        match window.record_at(pos)? {
            Some(raw) => {
                if let Some(start) = bad_from.take() {
                    damaged.push(start..pos);
                }
                let kind = raw.kind(path);
                let end = raw.end();
                visit(raw.offset, kind, raw.payload)?;
                pos = end;
            }
            None => {
                bad_from.get_or_insert(pos);
                pos += 1;
            }
        }
    }
    if let Some(start) = bad_from {
        damaged.push(start..len);
    }
    Ok(damaged)
}

// ---------------------------------------------------------------------------------------
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
pub(crate) struct Crc32c(u32);

impl Crc32c {
    pub(crate) fn new() -> Crc32c {
        Crc32c(!0)
    }

    pub(crate) fn update(mut self, bytes: &[u8]) -> Crc32c {
        for &b in bytes {
            self.0 = CRC32C_TABLE[((self.0 ^ u32::from(b)) & 0xFF) as usize] ^ (self.0 >> 8);
        }
        self
    }

    pub(crate) fn finish(self) -> u32 {
        !self.0
    }
}

/// CRC-32C of `bytes` (exposed for tests and tools that frame records by hand).
pub fn crc32c(bytes: &[u8]) -> u32 {
    Crc32c::new().update(bytes).finish()
}

// ---------------------------------------------------------------------------------------
// Errors.

/// Wraps `e` with the path and the operation, keeping its kind.
pub(crate) fn with_path(path: &Path, op: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("journal {}: {op}: {e}", path.display()))
}

pub(crate) fn invalid(path: &Path, offset: u64, what: String) -> io::Error {
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
}
