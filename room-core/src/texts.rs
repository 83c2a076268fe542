//! Texts the room host and the fleet both write: error bodies, the constant-time bearer
//! check, reply snippets for error messages, stranded-mutation lists. Below both, so
//! neither imports the other for them.

use alloc::format;
use alloc::string::{String, ToString};

use crate::json::write::{write_i64, write_str};

/// `{"error":message}`.
pub fn error_body(message: &str) -> String {
    let mut s = String::from("{\"error\":");
    write_str(&mut s, message);
    s.push('}');
    s
}

/// Whether `given` equals `expected`, in time that depends only on `expected`'s length
/// (a timing side channel must not reveal how much of the token a guess got right).
pub fn bearer_matches(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(!e);
        diff |= g ^ e;
    }
    core::hint::black_box(diff) == 0
}

/// How much of a reply body an error message quotes.
pub const REPLY_SNIPPET_BYTES: usize = 512;

/// The body text trimmed and cut at [`REPLY_SNIPPET_BYTES`] (on a char boundary).
pub fn snippet(text: &str) -> String {
    let text = text.trim();
    if text.len() <= REPLY_SNIPPET_BYTES {
        return text.to_string();
    }
    let mut end = REPLY_SNIPPET_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// A mutation acknowledged by this box that its settlement could not deliver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrandedMutation {
    /// The doc.
    pub doc: String,
    /// The envelope's clientID.
    pub client_id: String,
    /// The envelope's mid.
    pub mid: u64,
    /// The mutator name.
    pub name: String,
}

/// Stranded mutations as a JSON array of `{doc, clientID, mid, name}` (`/stats` and the
/// host's `stranded` output share it).
pub fn write_stranded(s: &mut String, list: &[StrandedMutation]) {
    s.push('[');
    for (i, m) in list.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"doc\":");
        write_str(s, &m.doc);
        s.push_str(",\"clientID\":");
        write_str(s, &m.client_id);
        s.push_str(",\"mid\":");
        write_i64(s, m.mid as i64);
        s.push_str(",\"name\":");
        write_str(s, &m.name);
        s.push('}');
    }
    s.push(']');
}
