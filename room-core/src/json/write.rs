//! JSON output, byte-compatible with JavaScript's `JSON.stringify` (docs/protocol.md, "Numbers").
//!
//! Numbers print as ECMAScript `Number::toString` does: integral values without a
//! fraction, the shortest digits that round-trip, exponent form outside `[1e-7, 1e21)`,
//! `-0` as `0`, and non-finite values as `null`. Strings escape exactly what
//! `JSON.stringify` escapes: `"`, `\`, and control characters below U+0020.

use alloc::string::String;
use core::fmt::Write;

use crate::value::{CellRef, Cells, Value};

/// Appends `f` formatted as JavaScript would.
pub fn write_f64(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str("null");
        return;
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    // Integers below 2^53 print as plain digits (exact, and the common case).
    if crate::value::is_integral(f) && f.abs() < 9_007_199_254_740_992.0 {
        write_i64(out, f as i64);
        return;
    }
    write_laid_out(out, f, &JS_LAYOUT);
}

/// Where a number's digits go: plain while the point position `n` is at most
/// `plain_max`, a leading `0.` while it is above `small_min`, exponent form otherwise;
/// `integral_suffix` ends a plain integral value.
struct Layout {
    plain_max: i32,
    small_min: i32,
    integral_suffix: &'static str,
}

/// JavaScript's `Number::toString`.
const JS_LAYOUT: Layout = Layout {
    plain_max: 21,
    small_min: -6,
    integral_suffix: "",
};

/// A Rust JSON serializer's float (serde_json).
const FLOAT_LAYOUT: Layout = Layout {
    plain_max: 16,
    small_min: -5,
    integral_suffix: ".0",
};

/// Appends finite, non-zero `f` in `layout`.
fn write_laid_out(out: &mut String, f: f64, layout: &Layout) {
    if f < 0.0 {
        out.push('-');
    }
    let (digits, n) = shortest_digits(f);
    let digits = digits.as_str();
    let k = digits.len() as i32;
    if k <= n && n <= layout.plain_max {
        out.push_str(digits);
        for _ in 0..(n - k) {
            out.push('0');
        }
        out.push_str(layout.integral_suffix);
    } else if 0 < n && n <= layout.plain_max {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if layout.small_min < n && n <= 0 {
        out.push_str("0.");
        for _ in 0..(-n) {
            out.push('0');
        }
        out.push_str(digits);
    } else {
        write_exponent_form(out, digits, n);
    }
}

/// The shortest round-trip decimal digits of `|f|` (finite, non-zero) and `n`, the
/// position of the decimal point: the value is 0.d1d2…dk × 10^n. Where two digit
/// strings of that length round-trip, the one nearer the exact value (JavaScript's
/// choice, and serde_json's), which Rust's own `{:e}` does not always make.
fn shortest_digits(f: f64) -> (StackBuf, i32) {
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(f.abs());
    let (mantissa, exp) = match text.split_once('e') {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let int_len = mantissa.find('.').unwrap_or(mantissa.len()) as i32;
    let mut digits = StackBuf::new();
    let mut leading = 0;
    for c in mantissa.chars().filter(|c| *c != '.') {
        if digits.len == 0 && c == '0' {
            leading += 1;
            continue;
        }
        let _ = digits.write_char(c);
    }
    while digits.len > 1 && digits.buf[digits.len - 1] == b'0' {
        digits.len -= 1;
    }
    (digits, int_len + exp - leading)
}

/// `d[.ddd]e±x` for the digits `d1…dk` and point position `n`.
fn write_exponent_form(out: &mut String, digits: &str, n: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    let e = n - 1;
    out.push(if e < 0 { '-' } else { '+' });
    let _ = write!(out, "{}", e.unsigned_abs());
}

/// Appends `f` in the layout of a Rust JSON serializer that always marks a float: the
/// same shortest digits as [`write_f64`], but an integral value keeps a `.0` (`3.0`),
/// the plain form is used only while the point falls within the first 16 digits
/// (`1e+16`, `0.00001`, `1e-6`), and zero is `0.0` (`-0.0` when negative). The batch
/// hash is computed over this layout (see [`crate::FlushBatch`]).
pub fn write_f64_float_layout(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str("null");
        return;
    }
    if f == 0.0 {
        out.push_str(if f.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    // An integer below 2^53 is its own shortest digits (every integer there is a
    // distinct f64) and has at most 16 of them, so it is laid out plain: its decimal
    // digits and the `.0` — without the shortest-digits search.
    if crate::value::is_integral(f) && f.abs() < 9_007_199_254_740_992.0 {
        write_i64(out, f as i64);
        out.push_str(FLOAT_LAYOUT.integral_suffix);
        return;
    }
    write_laid_out(out, f, &FLOAT_LAYOUT);
}

/// Appends a positional row as a JSON array, numbers in [`write_f64_float_layout`].
pub fn write_row_float_layout<R: Cells + ?Sized>(out: &mut String, row: &R) {
    out.push('[');
    for i in 0..row.width() {
        if i > 0 {
            out.push(',');
        }
        match row.cell(i) {
            CellRef::Num(f) => write_f64_float_layout(out, f),
            cell => write_cell(out, cell),
        }
    }
    out.push(']');
}

/// `"00" "01" … "99"`: two digits per lookup.
const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Appends an integer in decimal.
pub fn write_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    write_u64(out, v.unsigned_abs());
}

/// Appends an unsigned integer in decimal.
pub fn write_u64(out: &mut String, mut n: u64) {
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
        return;
    }
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while n >= 100 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    }
    if n >= 10 {
        let d = n as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    // A few ASCII digits: pushed one by one, cheaper than checking them as UTF-8 and
    // copying them as a slice.
    out.reserve(buf.len() - i);
    for &d in &buf[i..] {
        out.push(char::from(d));
    }
}

/// Skips string content from `i` eight bytes at a time while none of them is `"`, `\`
/// or a control byte; the index of the first such byte (or of the tail, under eight
/// bytes, which the caller reads byte by byte).
#[inline]
pub(crate) fn plain_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero → its high bit is set here (exact about whether any is).
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = b.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok()) {
        let x = u64::from_le_bytes(chunk);
        let quote = zero_byte(x ^ (ONES * u64::from(b'"')));
        let backslash = zero_byte(x ^ (ONES * u64::from(b'\\')));
        // Some byte below 0x20 (the same trick with 0x20 in place of 1).
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let found = quote | backslash | control;
        if found != 0 {
            // A flag can be wrong only above a true one (a borrow runs upwards), so
            // the lowest flag marks the first byte that needs attention.
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// Which bytes `JSON.stringify` escapes: `"`, `\\` and control characters.
const ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Appends `s` as a JSON string literal, escaped as `JSON.stringify` does.
pub fn write_str(out: &mut String, s: &str) {
    write_quoted(out, s, BackspaceFormFeed::Short);
}

/// How [`write_quoted`] writes the two control characters JSON has short escapes for
/// beside `\n`, `\r` and `\t`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackspaceFormFeed {
    /// `\b` and `\f`, as `JSON.stringify` writes them.
    Short,
    /// `\u0008` and `\u000c`, as the journal's records always have.
    Unicode,
}

/// Appends `s` as a JSON string literal: `"`, `\` and control characters escaped, the
/// runs between them copied whole.
pub(crate) fn write_quoted(out: &mut String, s: &str, bf: BackspaceFormFeed) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    let mut i = plain_run(bytes, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if !ESCAPE[b as usize] {
            i += 1;
            continue;
        }
        // Every escaped byte is ASCII, so `run..i` lies on character boundaries.
        out.push_str(&s[run..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 if bf == BackspaceFormFeed::Short => out.push_str("\\b"),
            0x0c if bf == BackspaceFormFeed::Short => out.push_str("\\f"),
            _ => {
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        run = i + 1;
        i = plain_run(bytes, run);
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// Appends one cell.
pub fn write_value(out: &mut String, v: &Value) {
    write_cell(out, v.cell());
}

/// Appends one borrowed cell.
pub fn write_cell(out: &mut String, v: CellRef<'_>) {
    match v {
        CellRef::Null => out.push_str("null"),
        CellRef::Bool(true) => out.push_str("true"),
        CellRef::Bool(false) => out.push_str("false"),
        CellRef::Num(f) => write_f64(out, f),
        CellRef::Str(s) => write_str(out, s),
    }
}

/// Appends a positional row as a JSON array.
pub fn write_row<R: Cells + ?Sized>(out: &mut String, row: &R) {
    out.push('[');
    for i in 0..row.width() {
        if i > 0 {
            out.push(',');
        }
        write_cell(out, row.cell(i));
    }
    out.push(']');
}

/// Appends a JSON array of strings.
pub fn write_str_array<S: AsRef<str>>(out: &mut String, items: &[S]) {
    out.push('[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, s.as_ref());
    }
    out.push(']');
}

/// Appends `"key":` (the key must not need escaping beyond `write_str`).
#[inline]
pub(crate) fn write_key(out: &mut String, key: &str) {
    write_str(out, key);
    out.push(':');
}

/// A fixed stack buffer for formatting one number without allocating.
struct StackBuf {
    buf: [u8; 40],
    len: usize,
}

impl StackBuf {
    fn new() -> StackBuf {
        StackBuf {
            buf: [0; 40],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits, '.', 'e' and '-' are ever written.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Write for StackBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(f: f64) -> String {
        let mut s = String::new();
        write_f64(&mut s, f);
        s
    }

    #[test]
    fn strings_escape_like_json_stringify_at_every_offset() {
        // Each special byte at each offset of strings longer than one 8-byte chunk, so
        // the chunked scan and the byte loop both meet it. serde_json escapes the same
        // set the same way (short escapes, lowercase `\u00xx`).
        for special in ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '\u{7f}', '😀', ' '] {
            for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 33] {
                for at in 0..=len {
                    let mut text: String =
                        (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
                    text.insert(at.min(text.len()), special);
                    let mut out = String::new();
                    write_str(&mut out, &text);
                    assert_eq!(out, serde_json::to_string(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn integers_print_as_digits() {
        for v in [
            0i64,
            7,
            -7,
            10,
            1234567890,
            -9_007_199_254_740_991,
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = String::new();
            write_i64(&mut out, v);
            assert_eq!(out, alloc::format!("{v}"));
        }
        for k in 0..19u32 {
            for v in [
                10i64.pow(k) - 1,
                10i64.pow(k),
                -(10i64.pow(k)),
                10i64.pow(k) + 1,
            ] {
                let mut out = String::new();
                write_i64(&mut out, v);
                assert_eq!(out, alloc::format!("{v}"));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_integer_prints_as_rust_prints_it(v in proptest::prelude::any::<i64>()) {
            let mut out = String::new();
            write_i64(&mut out, v);
            proptest::prop_assert_eq!(out, alloc::format!("{v}"));
        }
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js(0.0), "0");
        assert_eq!(js(-0.0), "0");
        assert_eq!(js(5.0), "5");
        assert_eq!(js(-5.0), "-5");
        assert_eq!(js(0.1), "0.1");
        assert_eq!(js(1.5e-7), "1.5e-7");
        assert_eq!(js(1e-7), "1e-7");
        assert_eq!(js(0.000001), "0.000001");
        assert_eq!(js(1e21), "1e+21");
        assert_eq!(js(1e20), "100000000000000000000");
        assert_eq!(js(9007199254740993.0), "9007199254740992");
        assert_eq!(js(123456789012345680000.0), "123456789012345680000");
        assert_eq!(js(1.7976931348623157e308), "1.7976931348623157e+308");
        assert_eq!(js(5e-324), "5e-324");
        assert_eq!(js(-1.25), "-1.25");
        assert_eq!(js(123.456), "123.456");
        assert_eq!(js(2.5e25), "2.5e+25");
        // Two 17-digit strings round-trip; JavaScript prints the nearer one.
        assert_eq!(js(1.2075164805155353e15), "1207516480515535.2");
        assert_eq!(js(f64::NAN), "null");
        assert_eq!(js(f64::INFINITY), "null");
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let mut s = String::new();
        write_str(&mut s, "a\"b\\c\n\u{1}\u{7f}/é\u{2028}");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}/é\u{2028}\"");
    }
}

#[cfg(test)]
mod float_layout_tests {
    use super::*;

    fn float(f: f64) -> String {
        let mut s = String::new();
        write_f64_float_layout(&mut s, f);
        s
    }

    #[test]
    fn floats_keep_a_fraction_or_an_exponent() {
        for (f, text) in [
            (3.0, "3.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (-1.5, "-1.5"),
            (1e15, "1000000000000000.0"),
            (9_007_199_254_740_992.0, "9007199254740992.0"),
            (1e16, "1e+16"),
            (-1e16, "-1e+16"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
            (1.5e300, "1.5e+300"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.00012, "0.00012"),
            (1e-5, "0.00001"),
            (1e-6, "1e-6"),
            (-1e-7, "-1e-7"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(float(f), text, "{f:e}");
        }
    }

    #[test]
    fn floats_print_as_serde_json_prints_an_f64() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if !f.is_finite() {
                continue;
            }
            for g in [f, (f * 1e6).round() / 1e3, (x % 100_000) as f64 / 8.0] {
                assert_eq!(float(g), serde_json::to_string(&g).unwrap(), "{g:e}");
            }
        }
    }

    #[test]
    fn integers_take_the_short_path_to_the_same_text() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut checked = 0;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let big = (x >> 11) as f64; // below 2^53
            let near = 9_007_199_254_740_992.0 - (x % 1_000) as f64;
            let round = 10f64.powi((x % 16) as i32) * ((x >> 40) % 10) as f64;
            for g in [big, -big, near, -near, round, -round, (x % 1_000) as f64] {
                if g == 0.0 {
                    continue;
                }
                let mut general = String::new();
                write_laid_out(&mut general, g, &FLOAT_LAYOUT);
                assert_eq!(float(g), general, "{g:e}");
                assert_eq!(float(g), serde_json::to_string(&g).unwrap(), "{g:e}");
                checked += 1;
            }
        }
        assert!(checked > 100_000);
    }
}

#[cfg(test)]
mod plain_run_tests {
    use super::plain_run;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn needs_attention(b: u8) -> bool {
        b == b'"' || b == b'\\' || b < 0x20
    }

    proptest! {
        /// Every byte skipped is plain, and the scan stops at the first byte that is
        /// not (or in the tail shorter than a chunk).
        #[test]
        fn stops_exactly_at_the_first_byte_that_needs_attention(
            bytes in prop::collection::vec(
                prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..=0xff, b'a'..=b'z'],
                0..64,
            ),
            from in 0usize..8,
        ) {
            let b: Vec<u8> = bytes;
            let from = from.min(b.len());
            let r = plain_run(&b, from);
            prop_assert!(r >= from && r <= b.len());
            prop_assert!(b[from..r].iter().all(|&c| !needs_attention(c)));
            let first = b[from..].iter().position(|&c| needs_attention(c)).map(|p| from + p);
            let limit = first.unwrap_or(b.len());
            prop_assert!(r <= limit);
            prop_assert!(r == limit || r + 8 > b.len());
        }
    }
}

#[cfg(test)]
mod quoted_tests {
    use super::{write_quoted, write_str, BackspaceFormFeed};
    use crate::host::journal_record::push_json_string;
    use alloc::format;
    use alloc::string::String;
    use proptest::prelude::*;

    /// Escapes one character at a time: what both escapers must write.
    fn reference(s: &str, bf: BackspaceFormFeed) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' if bf == BackspaceFormFeed::Short => out.push_str("\\b"),
                '\u{c}' if bf == BackspaceFormFeed::Short => out.push_str("\\f"),
                c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest! {
        /// Runs copied whole and escapes in between give the same text as escaping one
        /// character at a time, for `JSON.stringify`'s escapes and the journal's, and the
        /// text reads back as `s`.
        #[test]
        fn quoting_matches_escaping_char_by_char(
            s in "([\"\\\\\u{0}-\u{1f}a-z]|é|😀|[\u{7f}-\u{ff}]){0,40}",
        ) {
            let mut js = String::new();
            write_str(&mut js, &s);
            prop_assert_eq!(&js, &reference(&s, BackspaceFormFeed::Short));
            let mut journal = String::new();
            push_json_string(&mut journal, &s);
            prop_assert_eq!(&journal, &reference(&s, BackspaceFormFeed::Unicode));
            let mut direct = String::from("x");
            write_quoted(&mut direct, &s, BackspaceFormFeed::Unicode);
            prop_assert_eq!(&direct[1..], &journal[..]);
            prop_assert_eq!(serde_json::from_str::<String>(&journal).unwrap(), s.clone());
            prop_assert_eq!(serde_json::from_str::<String>(&js).unwrap(), s);
        }
    }
}
