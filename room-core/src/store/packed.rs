//! Packed rows: how the store keeps a row — one allocation, cells inline, no per-cell
//! boxing.
//!
//! Layout, cell after cell: a tag byte, then the payload. `0` NULL, `1` false, `2` true
//! (no payload); `3` a number (8 bytes, the double's bits, little-endian); `4` text (its
//! byte length as LEB128, then the UTF-8 bytes). A W1 issue row (4 numbers, a boolean,
//! two short strings) packs into about 80 bytes where its `Arc<[Value]>` image takes
//! 184 plus one allocation per string.
//!
//! Reading column `i` walks the cells before it; rows are a handful of columns wide.
//! Queries and ops work on `Arc<[Value]>` images ([`Packed::unpack`]); keys, guards and
//! orderings read packed cells directly ([`Cells`]).

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::cells::{CellRef, Cells};
use crate::value::Value;

use super::Row;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const NUM: u8 = 3;
const STR: u8 = 4;

/// One packed row (well-formed by construction: only [`Packed::pack`] makes one).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Packed(Box<[u8]>);

impl core::fmt::Debug for Packed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Packed {
    /// Packs a row image.
    pub fn pack(row: &[Value]) -> Packed {
        let mut len = 0;
        for v in row {
            len += match v {
                Value::Null | Value::Bool(_) => 1,
                Value::Num(_) => 9,
                Value::Str(s) => 1 + leb_len(s.len()) + s.len(),
            };
        }
        let mut out = Vec::with_capacity(len);
        for v in row {
            match v {
                Value::Null => out.push(NULL),
                Value::Bool(false) => out.push(FALSE),
                Value::Bool(true) => out.push(TRUE),
                Value::Num(f) => {
                    out.push(NUM);
                    out.extend_from_slice(&f.to_bits().to_le_bytes());
                }
                Value::Str(s) => {
                    out.push(STR);
                    let mut n = s.len();
                    loop {
                        let byte = (n & 0x7f) as u8;
                        n >>= 7;
                        if n == 0 {
                            out.push(byte);
                            break;
                        }
                        out.push(byte | 0x80);
                    }
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
        Packed(out.into_boxed_slice())
    }

    /// The cells, in column order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { bytes: &self.0 }
    }

    /// The row image.
    pub fn unpack(&self) -> Row {
        self.iter().map(CellRef::to_value).collect()
    }

    /// How many bytes the row takes (its allocation).
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.0.len()
    }
}

fn leb_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// The cells of a packed row.
pub(crate) struct Iter<'a> {
    bytes: &'a [u8],
}

impl<'a> Iterator for Iter<'a> {
    type Item = CellRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<CellRef<'a>> {
        let (&tag, rest) = self.bytes.split_first()?;
        let (cell, rest) = match tag {
            NULL => (CellRef::Null, rest),
            FALSE => (CellRef::Bool(false), rest),
            TRUE => (CellRef::Bool(true), rest),
            NUM => {
                let (bits, rest) = rest.split_first_chunk::<8>()?;
                (
                    CellRef::Num(f64::from_bits(u64::from_le_bytes(*bits))),
                    rest,
                )
            }
            _ => {
                let mut n = 0usize;
                let mut shift = 0;
                let mut rest = rest;
                loop {
                    let (&b, r) = rest.split_first()?;
                    rest = r;
                    n |= usize::from(b & 0x7f) << shift;
                    shift += 7;
                    if b & 0x80 == 0 {
                        break;
                    }
                }
                let (text, rest) = rest.split_at_checked(n)?;
                // Packed from a `str`: valid UTF-8 (checked, so a bug cannot become UB).
                (CellRef::Str(core::str::from_utf8(text).ok()?), rest)
            }
        };
        self.bytes = rest;
        Some(cell)
    }
}

/// The bytes after the first cell of `b` (skipped without decoding it).
#[inline]
fn skip(b: &[u8]) -> &[u8] {
    match b.first() {
        Some(&NUM) => b.get(9..).unwrap_or_default(),
        Some(&STR) => {
            let mut n = 0usize;
            let mut shift = 0;
            let mut at = 1;
            while let Some(&byte) = b.get(at) {
                at += 1;
                n |= usize::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            b.get(at + n..).unwrap_or_default()
        }
        Some(_) => b.get(1..).unwrap_or_default(),
        None => b,
    }
}

impl Cells for Packed {
    #[inline]
    fn cell(&self, i: usize) -> CellRef<'_> {
        let mut b = &self.0[..];
        for _ in 0..i {
            b = skip(b);
        }
        // Every packed row has its table's width; a short one reads NULL.
        Iter { bytes: b }.next().unwrap_or(CellRef::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn rows_round_trip_and_pack_small() {
        let long = "x".repeat(300);
        let row = vec![
            Value::num(7.0),
            Value::str("title"),
            Value::Bool(true),
            Value::Null,
            Value::Num(-0.0),
            Value::Bool(false),
            Value::str(&long),
            Value::str("é\u{0}"),
            Value::num(f64::NAN),
        ];
        let p = Packed::pack(&row);
        let back = p.unpack();
        assert_eq!(back.len(), row.len());
        for (a, b) in back.iter().zip(&row) {
            assert!(crate::value::compare(a, b).is_eq(), "{a:?} / {b:?}");
        }
        assert!(matches!(p.cell(6), CellRef::Str(s) if s.len() == 300));
        assert_eq!(p.cell(1), CellRef::Str("title"));
        // 9 tags, 3 numbers, strings with their lengths (300 takes two LEB128 bytes).
        assert_eq!(p.bytes(), 9 + 3 * 8 + (1 + 5) + (2 + 300) + (1 + 3));
    }
}
