//! Which room a downstream URL names (`docs/fleet.md`, "Where a client connects"):
//! `/rooms/<doc>`, the doc
//! percent-encoded as one path segment.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// The path prefix of a room's websocket endpoint.
pub const ROOMS_PREFIX: &str = "/rooms/";

/// The longest doc a room URL may name, in bytes (decoded): a box keeps every doc it
/// served in its room table, so a client must not make it hold arbitrary strings.
pub const MAX_DOC_BYTES: usize = 1024;

/// Why an upgrade's path names no room.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathError {
    /// The path is not under `/rooms/`.
    NotARoom,
    /// `/rooms/` with nothing after it.
    EmptyDoc,
    /// A raw `/` inside the doc segment (a `/` in a doc travels as `%2F`).
    NestedSegment,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// The decoded doc is not UTF-8.
    NotUtf8,
    /// The decoded doc is longer than [`MAX_DOC_BYTES`].
    TooLong,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::NotARoom => "not a room endpoint: connect to /rooms/<doc>",
            PathError::EmptyDoc => "no doc in the path: connect to /rooms/<doc>",
            PathError::NestedSegment => {
                "the doc must be one path segment: encode `/` inside it as %2F"
            }
            PathError::BadEscape => "a `%` in the doc is not followed by two hex digits",
            PathError::NotUtf8 => "the percent-decoded doc is not UTF-8",
            PathError::TooLong => "the doc is longer than 1024 bytes",
        })
    }
}

/// The request path of `doc`'s room: `/rooms/` and the doc with every byte outside
/// `[A-Za-z0-9._~-]` percent-encoded (so `a/b` becomes `/rooms/a%2Fb`).
pub fn room_path(doc: &str) -> String {
    let mut out = String::with_capacity(ROOMS_PREFIX.len() + doc.len());
    out.push_str(ROOMS_PREFIX);
    for &b in doc.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-') {
            out.push(b as char);
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
    out
}

/// The doc an upgrade's request path (its query string ignored) names.
pub fn doc_from_path(path: &str) -> Result<String, PathError> {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let segment = path.strip_prefix(ROOMS_PREFIX).ok_or(PathError::NotARoom)?;
    if segment.is_empty() {
        return Err(PathError::EmptyDoc);
    }
    if segment.contains('/') {
        return Err(PathError::NestedSegment);
    }
    if segment.len() > 3 * MAX_DOC_BYTES {
        return Err(PathError::TooLong);
    }
    let doc = percent_decode(segment)?;
    if doc.len() > MAX_DOC_BYTES {
        return Err(PathError::TooLong);
    }
    Ok(doc)
}

/// Decodes `%XX` escapes (nothing else: `+` stays `+`) into a UTF-8 string.
pub fn percent_decode(text: &str) -> Result<String, PathError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(PathError::BadEscape)?;
            let digit = |c: u8| (c as char).to_digit(16).ok_or(PathError::BadEscape);
            out.push((digit(hex[0])? * 16 + digit(hex[1])?) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| PathError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn docs_round_trip_through_their_path() {
        for doc in ["d1", "deck/7", "a b%c", "ü/€", "x?y#z", "-._~"] {
            let path = room_path(doc);
            assert!(!path[ROOMS_PREFIX.len()..].contains('/'), "{path}");
            assert_eq!(doc_from_path(&path).as_deref(), Ok(doc), "{path}");
        }
        assert_eq!(room_path("deck/7"), "/rooms/deck%2F7");
    }

    #[test]
    fn paths_that_name_no_room_are_refused() {
        assert_eq!(doc_from_path("/"), Err(PathError::NotARoom));
        assert_eq!(doc_from_path("/room/x"), Err(PathError::NotARoom));
        assert_eq!(doc_from_path("/rooms/"), Err(PathError::EmptyDoc));
        assert_eq!(doc_from_path("/rooms/a/b"), Err(PathError::NestedSegment));
        assert_eq!(doc_from_path("/rooms/a%2"), Err(PathError::BadEscape));
        assert_eq!(doc_from_path("/rooms/a%zz"), Err(PathError::BadEscape));
        assert_eq!(doc_from_path("/rooms/%FF"), Err(PathError::NotUtf8));
        assert_eq!(doc_from_path("/rooms/a%2Fb?x=1").as_deref(), Ok("a/b"));
        let longest = "d".repeat(MAX_DOC_BYTES);
        assert_eq!(doc_from_path(&room_path(&longest)), Ok(longest.clone()));
        let over = format!("{longest}d");
        assert_eq!(doc_from_path(&room_path(&over)), Err(PathError::TooLong));
        assert_eq!(
            doc_from_path(&room_path(&"/".repeat(MAX_DOC_BYTES + 1))),
            Err(PathError::TooLong)
        );
    }
}
