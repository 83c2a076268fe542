//! `scopeSpecsHash` over JSON text, with JavaScript's reading of it: the text is read as
//! `JSON.parse` reads it (strings as UTF-16 code units, so an unpaired surrogate escape
//! such as `"\ud800"` is a string like any other; a number past the double range is
//! `Infinity`; a repeated key keeps its last value), written canonically (object keys
//! sorted by UTF-16 code units, no whitespace, numbers and strings as `JSON.stringify`
//! spells them — `Infinity` as `null`, an unpaired surrogate as its `\u` escape), and
//! each UTF-16 code unit of that text is one FNV-1a-32 step.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::error::Error;
use crate::json::write::write_f64;

/// The deepest nesting of arrays and objects read (deeper text is refused, not hashed).
pub(crate) const MAX_DEPTH: usize = 256;

/// A JSON value as `JSON.parse` builds it; strings are UTF-16 code units.
enum Js {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u16>),
    Arr(Vec<Js>),
    Obj(Vec<(Vec<u16>, Js)>),
}

/// `scopeSpecsHash` of JSON text: 8 lowercase hex characters.
pub(crate) fn hash_json_text(text: &str) -> Result<String, Error> {
    let mut reader = Reader {
        text: text.as_bytes(),
        at: 0,
    };
    reader.space();
    let value = reader.value(0)?;
    reader.space();
    if reader.at < reader.text.len() {
        return Err(reader.error("unexpected text after the value"));
    }
    let mut fnv = Fnv32(0x811c_9dc5);
    write_canonical(&value, &mut fnv);
    let mut out = String::with_capacity(8);
    let _ = write!(out, "{:08x}", fnv.0);
    Ok(out)
}

/// FNV-1a 32, one step per UTF-16 code unit.
struct Fnv32(u32);

impl Fnv32 {
    fn unit(&mut self, u: u16) {
        self.0 = (self.0 ^ u32::from(u)).wrapping_mul(0x0100_0193);
    }

    fn ascii(&mut self, s: &str) {
        for b in s.bytes() {
            self.unit(u16::from(b));
        }
    }
}

fn write_canonical(v: &Js, out: &mut Fnv32) {
    match v {
        Js::Null => out.ascii("null"),
        Js::Bool(b) => out.ascii(if *b { "true" } else { "false" }),
        Js::Num(f) => {
            let mut s = String::new();
            write_f64(&mut s, *f);
            out.ascii(&s);
        }
        Js::Str(units) => write_units(units, out),
        Js::Arr(items) => {
            out.ascii("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.ascii(",");
                }
                write_canonical(item, out);
            }
            out.ascii("]");
        }
        Js::Obj(members) => {
            let mut sorted: Vec<&(Vec<u16>, Js)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.ascii("{");
            for (i, (key, value)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.ascii(",");
                }
                write_units(key, out);
                out.ascii(":");
                write_canonical(value, out);
            }
            out.ascii("}");
        }
    }
}

/// A string as `JSON.stringify` writes it: `"` and `\` escaped, control characters as
/// their short escape or `\u00xx`, an unpaired surrogate as `\udxxx`, the rest as is.
fn write_units(units: &[u16], out: &mut Fnv32) {
    out.ascii("\"");
    for (i, &u) in units.iter().enumerate() {
        let paired = match u {
            0xd800..=0xdbff => units
                .get(i + 1)
                .is_some_and(|n| (0xdc00..=0xdfff).contains(n)),
            0xdc00..=0xdfff => i > 0 && (0xd800..=0xdbff).contains(&units[i - 1]),
            _ => true,
        };
        match u {
            0x22 => out.ascii("\\\""),
            0x5c => out.ascii("\\\\"),
            0x08 => out.ascii("\\b"),
            0x0c => out.ascii("\\f"),
            0x0a => out.ascii("\\n"),
            0x0d => out.ascii("\\r"),
            0x09 => out.ascii("\\t"),
            _ if u < 0x20 || !paired => {
                let mut s = String::with_capacity(6);
                let _ = write!(s, "\\u{u:04x}");
                out.ascii(&s);
            }
            _ => out.unit(u),
        }
    }
    out.ascii("\"");
}

/// A strict JSON reader (RFC 8259, as `JSON.parse` accepts it).
struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn error(&self, what: &str) -> Error {
        Error::malformed(alloc::format!(
            "scope specs are not JSON: {what} at byte {}",
            self.at
        ))
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &str, value: Js) -> Result<Js, Error> {
        if self.text[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("an unknown literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Js, Error> {
        match self.peek() {
            None => Err(self.error("the text ends where a value should be")),
            Some(b'n') => self.literal("null", Js::Null),
            Some(b't') => self.literal("true", Js::Bool(true)),
            Some(b'f') => self.literal("false", Js::Bool(false)),
            Some(b'"') => Ok(Js::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') | Some(b'{') if depth >= MAX_DEPTH => {
                Err(self
                    .error("arrays and objects nest deeper than 256 levels (scope specs never do)"))
            }
            Some(b'[') => self.array(depth),
            Some(b'{') => self.object(depth),
            Some(_) => Err(self.error("an unexpected character")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Js, Error> {
        self.at += 1;
        let mut items = Vec::new();
        self.space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Js::Arr(items));
        }
        loop {
            self.space();
            items.push(self.value(depth + 1)?);
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Js::Arr(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Js, Error> {
        self.at += 1;
        let mut members: Vec<(Vec<u16>, Js)> = Vec::new();
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Js::Obj(members));
        }
        loop {
            self.space();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a member name"));
            }
            let key = self.string()?;
            self.space();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.at += 1;
            self.space();
            let value = self.value(depth + 1)?;
            // JSON.parse: a repeated name keeps its last value.
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => members.push((key, value)),
            }
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Js::Obj(members));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    /// A string's UTF-16 code units; `self.at` is on its opening quote.
    fn string(&mut self) -> Result<Vec<u16>, Error> {
        self.at += 1;
        let mut units = Vec::new();
        loop {
            let Some(b) = self.peek() else {
                return Err(self.error("an unterminated string"));
            };
            match b {
                b'"' => {
                    self.at += 1;
                    return Ok(units);
                }
                b'\\' => {
                    let unit = match self.text.get(self.at + 1) {
                        Some(b'"') => 0x22,
                        Some(b'\\') => 0x5c,
                        Some(b'/') => 0x2f,
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => 0x0a,
                        Some(b'r') => 0x0d,
                        Some(b't') => 0x09,
                        Some(b'u') => {
                            let hex = self
                                .text
                                .get(self.at + 2..self.at + 6)
                                .and_then(|h| core::str::from_utf8(h).ok())
                                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                                .and_then(|h| u16::from_str_radix(h, 16).ok())
                                .ok_or_else(|| self.error("a bad \\u escape"))?;
                            self.at += 4;
                            hex
                        }
                        _ => return Err(self.error("a bad escape")),
                    };
                    units.push(unit);
                    self.at += 2;
                }
                0x00..=0x1f => return Err(self.error("a raw control character in a string")),
                _ => {
                    // `text` came from a `&str`: a char starts here and is whole.
                    let rest = &self.text[self.at..];
                    let len = match b {
                        0x00..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    let ch = core::str::from_utf8(&rest[..len.min(rest.len())])
                        .ok()
                        .and_then(|s| s.chars().next())
                        .ok_or_else(|| self.error("text that is not UTF-8"))?;
                    let mut buf = [0u16; 2];
                    units.extend_from_slice(ch.encode_utf16(&mut buf));
                    self.at += len;
                }
            }
        }
    }

    /// A number (JSON grammar); one past the double range is `Infinity`, as in
    /// JavaScript.
    fn number(&mut self) -> Result<Js, Error> {
        let start = self.at;
        let digits = |r: &mut Self| {
            let from = r.at;
            while matches!(r.peek(), Some(b'0'..=b'9')) {
                r.at += 1;
            }
            r.at - from
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.error("a bad number")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return Err(self.error("a bad number (no digit after `.`)"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("a bad number (no digit in the exponent)"));
            }
        }
        // The slice is ASCII digits and signs: UTF-8, and in Rust's float grammar.
        let text = core::str::from_utf8(&self.text[start..self.at])
            .map_err(|_| self.error("a bad number"))?;
        text.parse::<f64>()
            .map(Js::Num)
            .map_err(|_| self.error("a bad number"))
    }
}
