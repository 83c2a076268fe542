//! The journal's record codec, the only one: every journal stores what this module
//! encodes and hands it back for this module to decode. The file journal
//! (`rindle-room-journal`) frames these payloads on disk; the Node addon gives them to a
//! JavaScript journal as opaque strings; the JSON drivers (the C library) read them as
//! JSON objects.
//!
//! A record is one compact JSON object (UTF-8):
//!
//! * **entry** — one journaled mutation, in the shape of `@rindle/room` 0.9's
//!   `RoomJournalEntry`: `{"clientID":…,"mid":…,"name":…,"args":…,"sub":…,"outcome":…}`,
//!   plus `"rejected":true` beside both non-applied outcomes (what a reader that predates
//!   `outcome` understands). `args` is embedded as the JSON value itself, byte for byte
//!   as the client sent it; args text that is not one JSON value without surrounding
//!   whitespace is stored as a JSON string with `"argsText":true`.
//! * **binding** — a clientID's subject kept by compaction after the client's entries
//!   were dropped: `{"clientID":…,"sub":…}` (no `mid`).
//!
//! Reading an entry's verdict: `outcome` when present, else `rejected: true` means
//! rejected, else applied; a missing `sub` reads as `""`, missing `args` as `null`. An
//! `outcome` other than `applied`, `rejected` or `deopt` is refused
//! ([`RecordError::UnknownOutcome`]): the room cannot know whether such a mutation took
//! effect, so it does not boot from that journal (docs/host.md, "The journal").

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

use super::{JournalEntry, Outcome};

/// One decoded journal record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalRecord {
    /// A journaled mutation.
    Entry(JournalEntry),
    /// A clientID's subject, kept after compaction dropped the client's entries.
    Binding {
        /// The clientID.
        client_id: String,
        /// The subject it is bound to.
        sub: String,
    },
}

/// A record that does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// Not a JSON object of a record's shape: the parser's message.
    Malformed(String),
    /// An entry whose `outcome` is none of `applied`, `rejected`, `deopt`.
    UnknownOutcome(String),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Malformed(m) => write!(f, "undecodable journal record: {m}"),
            RecordError::UnknownOutcome(o) => write!(
                f,
                "journal entry with unknown outcome {o:?} (expected \"applied\", \"rejected\" \
                 or \"deopt\")"
            ),
        }
    }
}

impl core::error::Error for RecordError {}

// ---------------------------------------------------------------------------------------
// Encoding.

/// Encodes an entry record (see the module docs).
pub fn encode_entry(entry: &JournalEntry) -> String {
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

/// Encodes a binding record: `{"clientID":…,"sub":…}`.
pub fn encode_binding(client_id: &str, sub: &str) -> String {
    let mut out = String::with_capacity(24 + client_id.len() + sub.len());
    out.push_str("{\"clientID\":");
    push_json_string(&mut out, client_id);
    out.push_str(",\"sub\":");
    push_json_string(&mut out, sub);
    out.push('}');
    out
}

/// Encodes a record.
pub fn encode(record: &JournalRecord) -> String {
    match record {
        JournalRecord::Entry(e) => encode_entry(e),
        JournalRecord::Binding { client_id, sub } => encode_binding(client_id, sub),
    }
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

/// Appends `s` as a JSON string literal with the escapes every journal written so far
/// uses: `JSON.stringify`'s, but `\u0008` and `\u000c` for backspace and form feed.
pub fn push_json_string(out: &mut String, s: &str) {
    crate::json::write::write_quoted(out, s, crate::json::write::BackspaceFormFeed::Unicode);
}

// ---------------------------------------------------------------------------------------
// Decoding.

/// The scalar fields of a record (`args` is located separately, byte-exact).
#[derive(Deserialize)]
struct RecordWire {
    #[serde(rename = "clientID")]
    client_id: String,
    #[serde(default)]
    mid: Option<u64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    rejected: Option<bool>,
    #[serde(default, rename = "argsText")]
    args_text: bool,
}

fn malformed(e: impl fmt::Display) -> RecordError {
    RecordError::Malformed(e.to_string())
}

/// Decodes a record: an entry when it has a `mid`, else a binding.
pub fn decode(payload: &[u8]) -> Result<JournalRecord, RecordError> {
    let wire: RecordWire = serde_json::from_slice(payload).map_err(malformed)?;
    let Some(mid) = wire.mid else {
        return Ok(JournalRecord::Binding {
            client_id: wire.client_id,
            sub: wire.sub.unwrap_or_default(),
        });
    };
    let outcome = match wire.outcome.as_deref() {
        Some("applied") => Outcome::Applied,
        Some("rejected") => Outcome::Rejected,
        Some("deopt") => Outcome::Deopt,
        Some(other) => return Err(RecordError::UnknownOutcome(other.to_string())),
        None if wire.rejected == Some(true) => Outcome::Rejected,
        None => Outcome::Applied,
    };
    let span = top_level_value_span(payload, "args")?;
    let args = match span {
        // `undefined` args vanish from JSON.stringify output; read them as null.
        None => String::from("null"),
        Some(span) if wire.args_text => {
            serde_json::from_slice::<String>(&payload[span]).map_err(malformed)?
        }
        // The payload is valid UTF-8 JSON (decoded above) and a value span starts and
        // ends on ASCII bytes, so nothing is replaced here.
        Some(span) => String::from_utf8_lossy(&payload[span]).into_owned(),
    };
    Ok(JournalRecord::Entry(JournalEntry {
        client_id: wire.client_id,
        mid,
        name: wire.name.unwrap_or_default(),
        args,
        sub: wire.sub.unwrap_or_default(),
        outcome,
    }))
}

/// Decodes an entry record (a binding record is [`RecordError::Malformed`]).
pub fn decode_entry(payload: &[u8]) -> Result<JournalEntry, RecordError> {
    match decode(payload)? {
        JournalRecord::Entry(e) => Ok(e),
        JournalRecord::Binding { .. } => Err(RecordError::Malformed(String::from(
            "a binding record where an entry was expected",
        ))),
    }
}

/// The clientID → subject part of an entry or binding record (`sub` `""` = none).
pub fn decode_binding(payload: &[u8]) -> Result<(String, String), RecordError> {
    #[derive(Deserialize)]
    struct BindingWire {
        #[serde(rename = "clientID")]
        client_id: String,
        #[serde(default)]
        sub: String,
    }
    let b: BindingWire = serde_json::from_slice(payload).map_err(malformed)?;
    Ok((b.client_id, b.sub))
}

/// The byte range of the value under top-level `key` in the JSON object `json`.
fn top_level_value_span(json: &[u8], key: &str) -> Result<Option<Range<usize>>, RecordError> {
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
            _ => {
                return Err(RecordError::Malformed(format!(
                    "expected ',' or '}}' at byte {i}"
                )))
            }
        }
    }
}

/// Parses one JSON value starting at `at`, returning it and the offset just past it.
fn next_value<T: DeserializeOwned>(json: &[u8], at: usize) -> Result<(T, usize), RecordError> {
    let mut stream = serde_json::Deserializer::from_slice(&json[at..]).into_iter::<T>();
    match stream.next() {
        Some(Ok(value)) => Ok((value, at + stream.byte_offset())),
        Some(Err(e)) => Err(RecordError::Malformed(e.to_string())),
        None => Err(RecordError::Malformed(format!(
            "unexpected end at byte {at}"
        ))),
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while matches!(json.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

fn expect_byte(json: &[u8], i: &mut usize, byte: u8) -> Result<(), RecordError> {
    if json.get(*i) == Some(&byte) {
        *i += 1;
        Ok(())
    } else {
        Err(RecordError::Malformed(format!(
            "expected {:?} at byte {}",
            char::from(byte),
            *i
        )))
    }
}

// ---------------------------------------------------------------------------------------
// Bindings and compaction.

/// Every clientID → subject binding `records` establish, first per client, in journal
/// order: binding records and the subject of each entry (entries with no subject bind
/// nothing). What the host seeds at boot.
pub fn bindings<'a>(records: impl IntoIterator<Item = &'a JournalRecord>) -> Vec<(String, String)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for record in records {
        let (client, sub) = match record {
            JournalRecord::Entry(e) => (&e.client_id, &e.sub),
            JournalRecord::Binding { client_id, sub } => (client_id, sub),
        };
        if !sub.is_empty() && seen.insert(client.clone()) {
            out.push((client.clone(), sub.clone()));
        }
    }
    out
}

/// Compaction of a record list: drops the entries a durable lmid covers
/// (`mid <= durable[clientID]`), and keeps every binding as one binding record per
/// client, in front of the entries kept.
pub fn compact(records: &[JournalRecord], durable: &BTreeMap<String, u64>) -> Vec<JournalRecord> {
    let mut out: Vec<JournalRecord> = bindings(records)
        .into_iter()
        .map(|(client_id, sub)| JournalRecord::Binding { client_id, sub })
        .collect();
    out.extend(records.iter().filter_map(|r| match r {
        JournalRecord::Entry(e) if durable.get(&e.client_id).is_none_or(|&d| e.mid > d) => {
            Some(r.clone())
        }
        _ => None,
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(args: &str, outcome: Outcome) -> JournalEntry {
        JournalEntry {
            client_id: String::from("c\"1"),
            mid: 7,
            name: String::from("add"),
            args: String::from(args),
            sub: String::from("user\n2"),
            outcome,
        }
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

    #[test]
    fn entries_and_bindings_round_trip() {
        for args in [r#"{"n":1e400}"#, " 1", "not json", ""] {
            for outcome in [Outcome::Applied, Outcome::Rejected, Outcome::Deopt] {
                let e = entry(args, outcome);
                let text = encode_entry(&e);
                assert_eq!(decode(text.as_bytes()), Ok(JournalRecord::Entry(e)));
            }
        }
        let b = JournalRecord::Binding {
            client_id: String::from("c\"1"),
            sub: String::from("user\n2"),
        };
        assert_eq!(decode(encode(&b).as_bytes()), Ok(b));
    }

    #[test]
    fn the_verdict_reads_outcome_then_the_legacy_flag() {
        let read = |text: &str| decode_entry(text.as_bytes()).map(|e| e.outcome);
        let base = r#"{"clientID":"c","mid":1,"name":"n","args":null"#;
        assert_eq!(read(&format!("{base}}}")), Ok(Outcome::Applied));
        assert_eq!(
            read(&format!("{base},\"rejected\":true}}")),
            Ok(Outcome::Rejected)
        );
        assert_eq!(
            read(&format!("{base},\"outcome\":\"deopt\",\"rejected\":true}}")),
            Ok(Outcome::Deopt)
        );
        assert_eq!(
            read(&format!("{base},\"outcome\":\"maybe\",\"rejected\":true}}")),
            Err(RecordError::UnknownOutcome(String::from("maybe")))
        );
    }

    #[test]
    fn compaction_keeps_one_binding_per_client() {
        let mut a1 = entry("1", Outcome::Applied);
        a1.client_id = String::from("a");
        let mut a2 = a1.clone();
        a2.mid = 8;
        a2.sub = String::from("other");
        let mut b1 = a1.clone();
        b1.client_id = String::from("b");
        b1.sub = String::new();
        let records = [a1, a2, b1].map(JournalRecord::Entry);
        let durable = BTreeMap::from([(String::from("a"), 8), (String::from("b"), 7)]);
        let kept = compact(&records, &durable);
        let bound = JournalRecord::Binding {
            client_id: String::from("a"),
            sub: String::from("user\n2"),
        };
        assert_eq!(kept, [bound]);
        assert_eq!(
            bindings(&kept),
            [(String::from("a"), String::from("user\n2"))]
        );
    }
}
