//! The pass that bounds a column's compact integers over a run of row slots: what a
//! table's block spans are read off when a query first orders by that column.
//!
//! Every row of a table has the table's width, and most share one offset width too,
//! so most share one header. For a run of rows with the header of the first, where the
//! cell's offset sits (and how wide it is) is fixed: [`scan`] is compiled once per
//! offset width and integer tag and reads, per row, the header (to check it), one
//! offset, the tag (to check it) and the payload. A row with another header, or whose cell is not a compact integer,
//! ends the run; the next run starts at it (or just past it, once the caller has
//! seen the cell).

use super::{cell_start, Row, TAG_I16, TAG_I32, TAG_I8};
use crate::value::row_image::{cells_start, HEADER};

/// The least and greatest compact integer (an i8, i16 or i32 tag) in cell `col` of the
/// live `rows`, calling `other` with each row whose cell there is anything else;
/// `(i32::MAX, i32::MIN)` when no row has one. No [`CellRef`](super::CellRef) is
/// built for the integers that ids, counts and timestamps are.
///
/// # Panics
///
/// If a row has no column `col` (callers index by schema column).
pub fn compact_int_span(
    rows: &[Option<Row>],
    col: usize,
    mut other: impl FnMut(&Row),
) -> (i32, i32) {
    let mut span = (i32::MAX, i32::MIN);
    let mut at = 0;
    while let Some(slot) = rows.get(at) {
        let Some(row) = slot else {
            at += 1;
            continue;
        };
        let b = row.0.as_ptr();
        // SAFETY: every packed row starts with its header; `cell_start` checks `col`
        // against the width (panicking past it), so every row with the same header
        // has a cell `col`, whose tag is in the image.
        let (h, shift, tag) = unsafe {
            let (start, shift) = cell_start(b, col);
            (
                b.cast::<[u8; HEADER]>().read_unaligned(),
                shift,
                *b.add(start),
            )
        };
        let run = &rows[at..];
        // SAFETY: `h` is the header of the image just read, whose width `cell_start`
        // checked against `col`, with offsets of `1 << shift` bytes.
        let taken = unsafe {
            match (shift, tag) {
                (0, TAG_I8) => scan::<0, TAG_I8>(run, h, col, &mut span),
                (0, TAG_I16) => scan::<0, TAG_I16>(run, h, col, &mut span),
                (0, TAG_I32) => scan::<0, TAG_I32>(run, h, col, &mut span),
                (1, TAG_I8) => scan::<1, TAG_I8>(run, h, col, &mut span),
                (1, TAG_I16) => scan::<1, TAG_I16>(run, h, col, &mut span),
                (1, TAG_I32) => scan::<1, TAG_I32>(run, h, col, &mut span),
                (_, TAG_I8) => scan::<2, TAG_I8>(run, h, col, &mut span),
                (_, TAG_I16) => scan::<2, TAG_I16>(run, h, col, &mut span),
                (_, TAG_I32) => scan::<2, TAG_I32>(run, h, col, &mut span),
                _ => 0,
            }
        };
        if taken == 0 {
            // The cell is not a compact integer.
            other(row);
            at += 1;
        } else {
            at += taken;
        }
    }
    span
}

/// Widens `span` over the leading rows of `rows` whose header is `h` (offsets of
/// `1 << SHIFT` bytes, more than `col` cells) and whose cell `col` has the compact
/// integer tag `TAG`, empty slots skipped; returns how many slots it took (none when
/// the first row's cell has another tag). No call in the loop and one tag to decode:
/// kept out of line, the loop has the registers to itself.
///
/// # Safety
///
/// `h` is the header of a packed image with more than `col` cells and offsets of
/// `1 << SHIFT` bytes (every row the loop reads past its header check is such an image).
#[inline(never)]
unsafe fn scan<const SHIFT: u32, const TAG: u8>(
    rows: &[Option<Row>],
    h: [u8; HEADER],
    col: usize,
    span: &mut (i32, i32),
) -> usize {
    let width = usize::from(u16::from_le_bytes(h) >> 2);
    let first_cell = cells_start(width, SHIFT);
    // Where the offset that ends cell `col - 1` (and so starts cell `col`) sits.
    let end_before = HEADER + (col.saturating_sub(1) << SHIFT);
    let (mut lo, mut hi) = *span;
    let mut slots = rows.iter();
    let stopped = loop {
        let Some(slot) = slots.next() else {
            break false;
        };
        let Some(row) = slot else { continue };
        let b = row.0.as_ptr();
        // SAFETY: the row's header is `h`, so (as the caller promises of `h`) it has
        // `width > col` cells and offsets of `1 << SHIFT` bytes: the offset at `end_before` (when `col > 0`) is in its
        // table; the cell it starts is in the image, its tag first, and the compact
        // tag `TAG` is followed by its 1, 2 or 4 payload bytes.
        let v = unsafe {
            if b.cast::<[u8; HEADER]>().read_unaligned() != h {
                break true;
            }
            let start = if col == 0 {
                first_cell
            } else {
                let o = b.add(end_before);
                match SHIFT {
                    0 => usize::from(*o),
                    1 => usize::from(u16::from_le_bytes(o.cast::<[u8; 2]>().read_unaligned())),
                    _ => u32::from_le_bytes(o.cast::<[u8; 4]>().read_unaligned()) as usize,
                }
            };
            if *b.add(start) != TAG {
                break true;
            }
            let p = b.add(start + 1);
            match TAG {
                TAG_I8 => i32::from(*p as i8),
                TAG_I16 => i32::from(i16::from_le_bytes(p.cast::<[u8; 2]>().read_unaligned())),
                _ => i32::from_le_bytes(p.cast::<[u8; 4]>().read_unaligned()),
            }
        };
        lo = lo.min(v);
        hi = hi.max(v);
    };
    *span = (lo, hi);
    // The slot that ended the run (if one did) is not taken: worked out from what is
    // left, not counted per row.
    rows.len() - slots.len() - usize::from(stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{CellRef, Value};
    use alloc::string::String;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    /// A cell, with text long enough now and then to widen a row's offsets to 2 or 4
    /// bytes (so one slab mixes headers).
    fn cell() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => (-200i32..200).prop_map(|i| Value::num(f64::from(i))),
            2 => (-100_000i32..100_000).prop_map(|i| Value::num(f64::from(i))),
            2 => any::<i32>().prop_map(|i| Value::num(f64::from(i))),
            1 => (-1e6..1e6f64).prop_map(Value::num),
            1 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::Bool),
            1 => "[a-z]{0,8}".prop_map(|s: String| Value::string(s)),
            1 => (200usize..400).prop_map(|n| Value::string("w".repeat(n))),
            1 => Just(Value::string("x".repeat(70_000))),
        ]
    }

    /// The span worked out cell by cell, and the rows it leaves to `other`.
    fn naive(rows: &[Option<Row>], col: usize) -> ((i32, i32), Vec<usize>) {
        let mut span = (i32::MAX, i32::MIN);
        let mut others = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let Some(row) = row else { continue };
            match row.get(col) {
                CellRef::Num(f) if f64::from(f as i32).to_bits() == f.to_bits() => {
                    span = (span.0.min(f as i32), span.1.max(f as i32));
                }
                _ => others.push(i),
            }
        }
        (span, others)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The pass agrees with reading every cell, over slabs that mix offset widths
        /// and hold empty slots, for every column.
        #[test]
        fn the_pass_bounds_what_reading_every_cell_bounds(
            rows in prop::collection::vec(
                prop::option::weighted(0.9, prop::collection::vec(cell(), 3)),
                0..40,
            ),
        ) {
            let slab: Vec<Option<Row>> =
                rows.into_iter().map(|r| r.map(|cells| Row::new(&cells[..]))).collect();
            for col in 0..3 {
                let mut others = Vec::new();
                let span = compact_int_span(&slab, col, |row| {
                    let i = slab
                        .iter()
                        .position(|s| s.as_ref().is_some_and(|r| Row::ptr_eq(r, row)))
                        .expect("a row of the slab");
                    others.push(i);
                });
                prop_assert_eq!((span, others), naive(&slab, col));
            }
        }
    }
}
