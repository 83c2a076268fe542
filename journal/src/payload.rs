//! The payloads of journal records: compact JSON objects (UTF-8), so a journal stays
//! inspectable (`rindle-room journal check`, `examples/journal_dump.rs`).
//!
//! * **entry** and **binding** — the host's journal records, encoded and decoded by
//!   the one record codec every journal shares
//!   ([`rindle_room_core::host::journal_record`], which documents their shape).
//! * **flush** — the published room's `RoomFlushRecord`: `{"seq":…,"epoch":…,"body":…}`.
//! * **confirm** — the authority settled a flush: `{"seq":…}`.
//! * **snapshot** — written first by compaction so the highest flush seq survives the
//!   records it dropped: `{"maxFlushSeq":…}`.
//! * **doc** — the document the journal belongs to: `{"doc":…}`.

use std::io;
use std::path::Path;

use rindle_room_core::host::journal_record;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::record::{invalid, RecordKind};
use super::JournalEntry;

/// Checks that an intact record's payload decodes, so a journal that cannot be
/// replayed fails when it is opened rather than mid-replay.
pub(crate) fn validate(
    path: &Path,
    offset: u64,
    kind: RecordKind,
    payload: &[u8],
) -> io::Result<()> {
    match kind {
        RecordKind::Entry => decode_entry(path, offset, payload).map(drop),
        RecordKind::Flush => decode::<FlushWire>(path, offset, payload).map(drop),
        RecordKind::Confirm => decode::<SeqOnly>(path, offset, payload).map(drop),
        RecordKind::Snapshot => decode::<Snapshot>(path, offset, payload).map(drop),
        RecordKind::Binding => decode_binding(path, offset, payload).map(drop),
        RecordKind::Doc => decode::<DocWire>(path, offset, payload).map(drop),
    }
}

// ---------------------------------------------------------------------------------------
// Payload encoding.

pub(crate) use rindle_room_core::host::journal_record::{
    encode_binding, encode_entry, push_json_string,
};

// ---------------------------------------------------------------------------------------
// Payload decoding.

/// Just what compaction needs from an entry.
#[derive(Deserialize)]
pub(crate) struct EntryKey {
    #[serde(rename = "clientID")]
    pub client_id: String,
    pub mid: u64,
}

#[derive(Deserialize)]
pub(crate) struct FlushWire {
    pub seq: u64,
    pub epoch: u64,
    pub body: String,
}

#[derive(Deserialize)]
pub(crate) struct SeqOnly {
    pub seq: u64,
}

/// A doc record: `{"doc":…}`.
#[derive(Deserialize)]
pub(crate) struct DocWire {
    pub doc: String,
}

/// Encodes a doc record.
pub(crate) fn encode_doc(doc: &str) -> String {
    let mut out = String::from("{\"doc\":");
    push_json_string(&mut out, doc);
    out.push('}');
    out
}

#[derive(Deserialize)]
pub(crate) struct Snapshot {
    #[serde(rename = "maxFlushSeq")]
    pub max_flush_seq: u64,
}

pub(crate) fn decode<T: DeserializeOwned>(
    path: &Path,
    offset: u64,
    payload: &[u8],
) -> io::Result<T> {
    serde_json::from_slice(payload)
        .map_err(|e| invalid(path, offset, format!("undecodable payload: {e}")))
}

pub(crate) fn decode_entry(path: &Path, offset: u64, payload: &[u8]) -> io::Result<JournalEntry> {
    journal_record::decode_entry(payload).map_err(|e| invalid(path, offset, e.to_string()))
}

/// The clientID → subject part of an entry or binding record (`sub` `""` = none).
pub(crate) fn decode_binding(
    path: &Path,
    offset: u64,
    payload: &[u8],
) -> io::Result<(String, String)> {
    journal_record::decode_binding(payload).map_err(|e| invalid(path, offset, e.to_string()))
}
