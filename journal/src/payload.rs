//! The payloads of journal records: compact JSON objects (UTF-8), so a journal stays
//! inspectable (`rindle-room journal check`, `examples/journal_dump.rs`).
//!
//! * **entry** — the published room's `RoomJournalEntry`:
//!   `{"clientID":…,"mid":…,"name":…,"args":…,"sub":…,"outcome":…}` plus the legacy
//!   `"rejected":true` for both non-applied outcomes. `args` is embedded as the JSON
//!   value itself, byte for byte as given; args text that is not a single JSON value
//!   (without surrounding whitespace) is stored as a JSON string with `"argsText":true`.
//!   On read, `outcome` wins when present, else `rejected: true` means rejected, else
//!   applied (the published room's `journalEntryOutcome`); a missing `sub` reads as `""`.
//! * **flush** — the published room's `RoomFlushRecord`: `{"seq":…,"epoch":…,"body":…}`.
//! * **confirm** — the authority settled a flush: `{"seq":…}`.
//! * **snapshot** — written first by compaction so the highest flush seq survives the
//!   records it dropped: `{"maxFlushSeq":…}`.
//! * **binding** — written by compaction for a client whose entries it dropped, so the
//!   clientID stays bound to its subject: `{"clientID":…,"sub":…}`.

use std::io;
use std::ops::Range;
use std::path::Path;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

use super::record::{invalid, RecordKind};
use super::{JournalEntry, Outcome};

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
        RecordKind::Binding => decode::<BindingWire>(path, offset, payload).map(drop),
        RecordKind::Doc => decode::<DocWire>(path, offset, payload).map(drop),
    }
}

// ---------------------------------------------------------------------------------------
// Payload encoding.

/// Encodes an entry as JSON in the published room's shape (see the module docs).
pub(crate) fn encode_entry(entry: &JournalEntry) -> String {
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
pub(crate) fn push_json_string(out: &mut String, s: &str) {
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

/// A binding record's payload: `{"clientID":…,"sub":…}`.
pub(crate) fn encode_binding(client: &str, sub: &str) -> String {
    let mut out = String::with_capacity(24 + client.len() + sub.len());
    out.push_str("{\"clientID\":");
    push_json_string(&mut out, client);
    out.push_str(",\"sub\":");
    push_json_string(&mut out, sub);
    out.push('}');
    out
}

// ---------------------------------------------------------------------------------------
// Payload decoding.

/// A binding record (and the binding part of an entry).
#[derive(Deserialize)]
pub(crate) struct BindingWire {
    #[serde(rename = "clientID")]
    pub client_id: String,
    #[serde(default)]
    pub sub: String,
}

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
    let wire: EntryWire = decode(path, offset, payload)?;
    // The published `journalEntryOutcome`: outcome when present, else the legacy rejected
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn binding_payloads_round_trip() {
        let text = encode_binding("c\"1", "user\n2");
        let b: BindingWire = serde_json::from_str(&text).unwrap();
        assert_eq!((b.client_id.as_str(), b.sub.as_str()), ("c\"1", "user\n2"));
    }
}
