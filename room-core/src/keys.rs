//! Order-preserving byte keys.
//!
//! Every ordered structure in the room (the primary-key index, a query's sort order, a
//! `start` bound, a partition of a related child) is keyed by bytes whose plain `memcmp`
//! order equals the [comparator](crate::value::compare) order of the cells they encode.
//! One byte comparison replaces a walk over cells with a sort spec, and a key can be
//! built into a reusable buffer and used for lookups without allocating.
//!
//! Encoding of one cell (self-delimiting, so concatenations compare cell by cell):
//! - NULL `01`; booleans `02 00|01`; numbers `03` + 8 bytes of the totalOrder image,
//!   big-endian; strings `04` + bytes with `00` escaped as `00 FF`, ended by `00 00`.
//! - A descending column inverts every byte of its cell's encoding.

use alloc::vec::Vec;

#[cfg(test)]
use crate::value::Value;
use crate::value::{CellRef, Cells};

const TAG_NULL: u8 = 0x01;
const TAG_BOOL: u8 = 0x02;
const TAG_NUM: u8 = 0x03;
const TAG_STR: u8 = 0x04;

mod front;
mod keyed_rows;
mod owned;
pub(crate) use front::{keep_front, keyed_by_prefix};
pub(crate) use keyed_rows::KeyedRows;
pub(crate) use owned::Key;

/// The totalOrder image of a double as an unsigned integer: larger means later.
#[inline]
pub(crate) fn total_order_bits(f: f64) -> u64 {
    let bits = f.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Appends the encoding of one cell.
#[inline]
pub(crate) fn push_cell(out: &mut Vec<u8>, v: CellRef<'_>, desc: bool) {
    let start = out.len();
    match v {
        CellRef::Null => out.push(TAG_NULL),
        CellRef::Bool(b) => {
            out.push(TAG_BOOL);
            out.push(b as u8);
        }
        CellRef::Num(f) => {
            // The nine bytes at once, inverted here when descending.
            let bits = total_order_bits(f);
            let (tag, bits) = if desc {
                (!TAG_NUM, !bits)
            } else {
                (TAG_NUM, bits)
            };
            let mut key = [tag; 9];
            key[1..].copy_from_slice(&bits.to_be_bytes());
            out.extend_from_slice(&key);
            return;
        }
        CellRef::Str(s) => {
            out.push(TAG_STR);
            let bytes = s.as_bytes();
            if bytes.contains(&0) {
                for &b in bytes {
                    out.push(b);
                    if b == 0 {
                        out.push(0xFF);
                    }
                }
            } else {
                out.extend_from_slice(bytes);
            }
            out.extend_from_slice(&[0, 0]);
        }
    }
    if desc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// Writes the key of `row` under a resolved `(column, descending)` order into `out`
/// (cleared first).
#[inline]
pub(crate) fn sort_key_into<R: Cells + ?Sized>(
    out: &mut Vec<u8>,
    row: &R,
    order: &[(usize, bool)],
) {
    out.clear();
    for &(col, desc) in order {
        push_cell(out, row.cell(col), desc);
    }
}

/// The first 8 bytes of `row`'s key under `order` (as [`sort_key_into`] writes it),
/// zero-padded, as a big-endian integer: when two rows' prefixes differ, they compare as
/// their keys do. A leading number column is encoded without the buffer.
#[inline(always)]
pub(crate) fn sort_prefix<R: Cells + ?Sized>(
    scratch: &mut Vec<u8>,
    row: &R,
    order: &[(usize, bool)],
) -> u64 {
    if let Some(&(col, desc)) = order.first() {
        if let CellRef::Num(f) = row.cell(col) {
            let p = num_prefix(f);
            return if desc { !p } else { p };
        }
    }
    scratch.clear();
    for &(col, desc) in order {
        push_cell(scratch, row.cell(col), desc);
        if scratch.len() >= 8 {
            break;
        }
    }
    let mut bytes = [0u8; 8];
    let n = scratch.len().min(8);
    bytes[..n].copy_from_slice(&scratch[..n]);
    u64::from_be_bytes(bytes)
}

/// The first 8 bytes of a number cell's key (ascending) as an integer: the tag, then the
/// first 7 bytes of its [`total_order_bits`].
#[inline(always)]
pub(crate) fn num_prefix(f: f64) -> u64 {
    (u64::from(TAG_NUM) << 56) | (total_order_bits(f) >> 8)
}

/// The least and the greatest first-8-byte prefix (as [`sort_prefix`] reads it) of a key
/// that starts with `cell`, ascending: the cell's encoding padded with `00` bytes and with
/// `FF` bytes. The two are equal when the encoding has 8 bytes or more (a number, a
/// string of 7 bytes or more). See [`least_prefix`].
#[inline]
pub(crate) fn cell_prefix_span(cell: CellRef<'_>) -> (u64, u64) {
    let mut bytes = [0u8; 8];
    let n = match cell {
        CellRef::Num(f) => {
            let p = num_prefix(f);
            return (p, p);
        }
        CellRef::Null => {
            bytes[0] = TAG_NULL;
            1
        }
        CellRef::Bool(b) => {
            bytes[0] = TAG_BOOL;
            bytes[1] = b as u8;
            2
        }
        CellRef::Str(s) => {
            bytes[0] = TAG_STR;
            let mut n = 1;
            for &b in s.as_bytes() {
                if n == 8 {
                    break;
                }
                bytes[n] = b;
                n += 1;
                if b == 0 && n < 8 {
                    bytes[n] = 0xFF;
                    n += 1;
                }
            }
            // The terminator `00 00` (its bytes are 0 already).
            (n + 2).min(8)
        }
    };
    let lo = u64::from_be_bytes(bytes);
    let pad = if n >= 8 { 0 } else { u64::MAX >> (8 * n) };
    (lo, lo | pad)
}

/// The least [`sort_prefix`] a row can have whose first sort column is `desc` (or not)
/// and holds a cell with its [`cell_prefix_span`] within `(lo, hi)`.
///
/// Ascending, a key starts with the cell's encoding, so its prefix is at least `lo`.
/// Descending, it starts with the inverted encoding followed by bytes of at least `00`,
/// which is at least the inverse of the encoding padded with `FF`: `!hi`.
#[inline]
pub(crate) fn least_prefix((lo, hi): (u64, u64), desc: bool) -> u64 {
    if desc {
        !hi
    } else {
        lo
    }
}

/// Writes the ascending key of `row`'s cells at `cols` into `out` (cleared first).
#[inline]
pub(crate) fn cells_key_into<R: Cells + ?Sized>(out: &mut Vec<u8>, row: &R, cols: &[usize]) {
    out.clear();
    if let [col] = cols {
        // One column (most primary keys): no loop.
        push_cell(out, row.cell(*col), false);
        return;
    }
    for &col in cols {
        push_cell(out, row.cell(col), false);
    }
}

/// The key of a one-column correlation on a number, from the number's
/// [`total_order_bits`]: what [`join_key_into`] writes for it.
#[inline]
pub(crate) fn num_join_key(bits: u64) -> [u8; 9] {
    let mut key = [TAG_NUM; 9];
    key[1..].copy_from_slice(&bits.to_be_bytes());
    key
}

/// Like [`cells_key_into`], but refuses (returns false) when any cell is NULL: a
/// correlation never matches a NULL cell, so such a row belongs to no partition.
#[inline]
pub(crate) fn join_key_into<R: Cells + ?Sized>(out: &mut Vec<u8>, row: &R, cols: &[usize]) -> bool {
    out.clear();
    if let [col] = cols {
        // One number column (most correlations: an id): written in one step.
        if let CellRef::Num(f) = row.cell(*col) {
            out.extend_from_slice(&num_join_key(total_order_bits(f)));
            return true;
        }
    }
    for &col in cols {
        let v = row.cell(col);
        if v.is_null() {
            return false;
        }
        push_cell(out, v, false);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_column_join_key_is_the_cells_key() {
        let cells = [
            Value::num(0.0),
            Value::num(-0.0),
            Value::num(-17.5),
            Value::num(1e300),
            Value::num(f64::NAN),
            Value::num(f64::NEG_INFINITY),
            Value::string("ab".into()),
            Value::Bool(true),
        ];
        for v in cells {
            let row = [Value::Null, v.clone()];
            let (mut a, mut b) = (Vec::new(), Vec::new());
            assert!(join_key_into(&mut a, &row[..], &[1]));
            cells_key_into(&mut b, &row[..], &[1]);
            assert_eq!(a, b, "{v:?}");
        }
        assert!(!join_key_into(&mut Vec::new(), &[Value::Null][..], &[0]));
    }

    #[test]
    fn a_sort_prefix_is_the_first_8_bytes_of_the_key() {
        let rows = [
            [Value::num(3.5), Value::string("ab".into())],
            [Value::num(-1.0), Value::Null],
            [Value::Null, Value::string("abcdefghijk".into())],
            [Value::Bool(true), Value::num(2.0)],
            [Value::string("x".into()), Value::Bool(false)],
        ];
        let mut scratch = Vec::new();
        let mut key = Vec::new();
        for row in &rows {
            for order in [
                [(0, false), (1, false)],
                [(0, true), (1, true)],
                [(1, false), (0, true)],
            ] {
                sort_key_into(&mut key, &row[..], &order);
                let mut want = [0u8; 8];
                let n = key.len().min(8);
                want[..n].copy_from_slice(&key[..n]);
                assert_eq!(
                    sort_prefix(&mut scratch, &row[..], &order),
                    u64::from_be_bytes(want),
                    "{row:?} {order:?}"
                );
            }
        }
    }
    #[test]
    fn a_key_prefix_is_never_below_its_first_cells_least_prefix() {
        let firsts = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::num(-3.25),
            Value::num(7.0),
            Value::str(""),
            Value::str("a"),
            Value::str("\u{0}\u{0}\u{0}"),
            Value::str("ab\u{0}cd"),
            Value::str("abcdef"),
            Value::str("abcdefg"),
            Value::str("abcdefghij"),
        ];
        let seconds = [
            Value::Null,
            Value::num(0.0),
            Value::str(""),
            Value::str("\u{0}"),
            Value::str("zzzzzzzz"),
        ];
        let mut scratch = Vec::new();
        for first in &firsts {
            let span = cell_prefix_span(first.cell());
            assert!(span.0 <= span.1, "{first:?}");
            for second in &seconds {
                let row = [first.clone(), second.clone()];
                for desc in [false, true] {
                    for order in [
                        &[(0, desc)][..],
                        &[(0, desc), (1, false)],
                        &[(0, desc), (1, true)],
                    ] {
                        let p = sort_prefix(&mut scratch, &row[..], order);
                        assert!(least_prefix(span, desc) <= p, "{row:?} {order:?}");
                        if !desc {
                            assert!(p <= span.1, "{row:?} {order:?}");
                        }
                    }
                }
            }
        }
    }

    use crate::value::compare;
    use core::cmp::Ordering;

    fn key(v: &Value, desc: bool) -> Vec<u8> {
        let mut out = Vec::new();
        push_cell(&mut out, v.cell(), desc);
        out
    }

    #[test]
    fn key_order_matches_comparator() {
        let cells = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Num(f64::NEG_INFINITY),
            Value::Num(-1.5),
            Value::Num(-0.0),
            Value::Num(0.0),
            Value::Num(2.0),
            Value::Num(f64::INFINITY),
            Value::str(""),
            Value::str("a"),
            Value::str("a\u{0}"),
            Value::str("a\u{0}b"),
            Value::str("ab"),
            Value::str("b"),
            Value::str("😀"),
        ];
        for a in &cells {
            for b in &cells {
                let want = compare(a, b);
                assert_eq!(key(a, false).cmp(&key(b, false)), want, "{a:?} vs {b:?}");
                assert_eq!(
                    key(a, true).cmp(&key(b, true)),
                    want.reverse(),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn concatenated_keys_compare_cell_by_cell() {
        let rows = [
            [Value::str("a"), Value::num(2.0)],
            [Value::str("a"), Value::num(10.0)],
            [Value::str("ab"), Value::num(1.0)],
            [Value::Null, Value::num(9.0)],
        ];
        let order = [(0, false), (1, true)];
        for a in &rows {
            for b in &rows {
                let (mut ka, mut kb) = (Vec::new(), Vec::new());
                sort_key_into(&mut ka, a, &order);
                sort_key_into(&mut kb, b, &order);
                let want = crate::value::compare_rows(a, b, &order);
                assert_eq!(ka.cmp(&kb), want);
            }
        }
        let _ = Ordering::Equal;
    }

    #[test]
    fn join_keys_refuse_null() {
        let mut out = Vec::new();
        assert!(!join_key_into(
            &mut out,
            &[Value::Null, Value::num(1.0)],
            &[0]
        ));
        assert!(join_key_into(
            &mut out,
            &[Value::Null, Value::num(1.0)],
            &[1]
        ));
    }
}
