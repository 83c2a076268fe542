//! A row image packed into one shared allocation: no cell array, no per-cell boxing.
//!
//! Layout of the bytes (all integers little-endian):
//!
//! ```text
//! [width << 2 | w code: u16] [end of cell 0 .. end of cell width-1: w bytes each] [cells]
//! cell = tag [payload]   tag 0 NULL, 1 false, 2 true, 3 number (8 bytes, the f64's
//!                        bits), 4 text (its UTF-8 bytes, up to the next cell),
//!                        5 / 6 / 7 an integral number as an i8 / i16 / i32
//! ```
//!
//! A number is stored in the narrowest of those that gives back its exact bits (so
//! `-0.0`, fractions, NaN and numbers past the i32 range take 8 bytes): ids, counts and
//! timestamps in seconds cost 2–5 bytes, not 9. The packing stays canonical — one
//! image per row — so equal rows are equal bytes.
//!
//! `w` is the smallest of 1, 2 or 4 that can hold every offset (code 0, 1, 2), so a
//! typical row pays one byte per cell for random access; cell `i` starts where cell
//! `i - 1` ends (cell 0 right after the table), and the last end is the image's length.
//! A row has at most [`MAX_ROW_CELLS`] cells. The image lives behind a thin pointer with
//! a 4-byte count in front of it (`row_image.rs`). The store, the queries and the emitted ops all
//! share one image per row version; readers take [`CellRef`]s out of it (see
//! [`Cells`]), and only [`Row::to_vec`] unpacks.

use alloc::vec::Vec;
use core::fmt;
use core::mem::MaybeUninit;

use super::cell::{CellRef, Cells};
pub use super::row_image::MAX_ROW_CELLS;
use super::row_image::{cells_start, end_of, header, header_bytes, Image, HEADER};
use super::Value;

mod int_span;
pub use int_span::compact_int_span;

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_NUM: u8 = 3;
const TAG_STR: u8 = 4;
const TAG_I8: u8 = 5;
const TAG_I16: u8 = 6;
const TAG_I32: u8 = 7;

/// The payload width of `f` as a compact integer (1, 2 or 4 bytes), if it is one.
#[inline]
fn int_width(f: f64) -> Option<usize> {
    let i = f as i32;
    if (i as f64).to_bits() != f.to_bits() {
        return None;
    }
    Some(if i8::try_from(i).is_ok() {
        1
    } else if i16::try_from(i).is_ok() {
        2
    } else {
        4
    })
}

/// A packed row image (see the module docs). Cloning shares the image.
#[derive(Clone)]
pub struct Row(Image);

impl Row {
    /// Packs `cells`.
    ///
    /// # Panics
    ///
    /// If the row has more than [`MAX_ROW_CELLS`] cells (the hello and the row parsers
    /// refuse wider rows first), or `cells` reports different cells on two reads (the
    /// image is sized by the first).
    pub fn new<C: Cells + ?Sized>(cells: &C) -> Row {
        let width = cells.width();
        assert!(width <= MAX_ROW_CELLS, "a row of {width} cells");
        let body: usize = (0..width).map(|i| cell_len(cells.cell(i))).sum();
        let w = offset_width(HEADER + width * 4 + body);
        let len = HEADER + width * w + body;
        assert!(len <= u32::MAX as usize, "a row of {body} bytes of cells");
        Row(Image::new(len, |buf| write_into(buf, cells, w)))
    }

    /// How many cells.
    #[inline(always)]
    pub fn len(&self) -> usize {
        // SAFETY: every packed row starts with its header (`write_into`).
        unsafe { header(self.0.as_ptr()).0 }
    }

    /// Whether the row has no cells.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cell at `col`.
    ///
    /// # Panics
    ///
    /// If `col` is not below [`Row::len`] (callers index by schema column).
    #[inline(always)]
    pub fn get(&self, col: usize) -> CellRef<'_> {
        let b = self.0.as_ptr();
        // SAFETY: `write_into` wrote the header, `width` end offsets of `w` bytes each,
        // and the cells: cell `col` runs from the end of the one before it (or the end
        // of the table) to its own end, inside the image; it starts with its tag; a
        // number cell has its payload bytes, a text cell's bytes are a `&str`'s. A
        // `Row`'s bytes are never written after packing, and `col < width`.
        unsafe {
            let (start, shift) = cell_start(b, col);
            let tag = *b.add(start);
            let at = b.add(start + 1);
            if tag >= TAG_I8 {
                // `write_into` wrote 1, 2 or 4 payload bytes after these tags.
                CellRef::Num(match tag {
                    TAG_I8 => f64::from(*at as i8),
                    TAG_I16 => f64::from(i16::from_le_bytes(at.cast::<[u8; 2]>().read_unaligned())),
                    _ => f64::from(i32::from_le_bytes(at.cast::<[u8; 4]>().read_unaligned())),
                })
            } else if tag == TAG_NUM {
                let bits = at.cast::<[u8; 8]>().read_unaligned();
                CellRef::Num(f64::from_bits(u64::from_le_bytes(bits)))
            } else if tag == TAG_STR {
                let end = end_of(b, shift, col);
                CellRef::Str(core::str::from_utf8_unchecked(core::slice::from_raw_parts(
                    at,
                    end - start - 1,
                )))
            } else if tag == TAG_NULL {
                CellRef::Null
            } else {
                CellRef::Bool(tag == TAG_TRUE)
            }
        }
    }

    /// [`compare_refs`](super::compare_refs) of the two rows' cells at `col`, without
    /// building either cell when both are numbers or both text.
    #[inline]
    pub fn compare_at(&self, other: &Row, col: usize) -> core::cmp::Ordering {
        match (self.get(col), other.get(col)) {
            (CellRef::Num(x), CellRef::Num(y)) => x.total_cmp(&y),
            (CellRef::Str(x), CellRef::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
            (x, y) => super::compare_refs(x, y),
        }
    }

    /// Every cell, in column order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = CellRef<'_>> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// The cells as owned values (the typed API's view; allocates).
    pub fn to_vec(&self) -> Vec<Value> {
        self.iter().map(CellRef::to_value).collect()
    }

    /// Whether two rows share one image.
    #[inline]
    pub fn ptr_eq(a: &Row, b: &Row) -> bool {
        Image::same(&a.0, &b.0)
    }

    /// Heap bytes of the image: the shared allocation (the count and the bytes).
    pub fn heap_bytes(&self) -> usize {
        self.0.allocation_size().next_multiple_of(8)
    }
}

/// Where cell `col` of the image at `b` starts (its tag), and the image's offset
/// width shift.
///
/// # Safety
///
/// `b` points at a packed image. Cell `col` runs from the end of the one before it (or
/// the end of the offset table) to its own end, inside the image.
///
/// # Panics
///
/// If the image has no cell `col`.
#[inline(always)]
unsafe fn cell_start(b: *const u8, col: usize) -> (usize, u32) {
    // SAFETY: the caller's image has its header and `width` offsets; `col < width` is
    // checked before an offset is read.
    unsafe {
        let (width, shift) = header(b);
        if col >= width {
            out_of_range(col, width);
        }
        let start = if col == 0 {
            cells_start(width, shift)
        } else {
            end_of(b, shift, col - 1)
        };
        (start, shift)
    }
}

#[cold]
#[inline(never)]
fn out_of_range(col: usize, width: usize) -> ! {
    panic!("column {col} of a {width}-cell row")
}

fn cell_len(c: CellRef<'_>) -> usize {
    match c {
        CellRef::Null | CellRef::Bool(_) => 1,
        CellRef::Num(f) => 1 + int_width(f).unwrap_or(8),
        CellRef::Str(s) => 1 + s.len(),
    }
}

/// The offset width for a row of at most `bound` bytes.
fn offset_width(bound: usize) -> usize {
    if bound <= u8::MAX as usize {
        1
    } else if bound <= u16::MAX as usize {
        2
    } else {
        4
    }
}

/// Copies `src` into `buf` at `at` (bounds-checked).
#[inline(always)]
fn put(buf: &mut [MaybeUninit<u8>], at: usize, src: &[u8]) {
    let dst = &mut buf[at..at + src.len()];
    // SAFETY: `dst` holds `src.len()` elements, and `MaybeUninit<u8>` is laid out as
    // `u8`; the two cannot overlap (`src` is borrowed shared, `buf` exclusively).
    unsafe {
        core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<u8>(), src.len())
    };
}

/// Writes the header, the offsets and the cells into `buf`, front to back; returns how
/// many bytes it wrote.
fn write_into<C: Cells + ?Sized>(buf: &mut [MaybeUninit<u8>], cells: &C, w: usize) -> usize {
    let width = cells.width();
    put(buf, 0, &header_bytes(width, w));
    let mut at = HEADER + width * w;
    for i in 0..width {
        at += match cells.cell(i) {
            CellRef::Null => {
                buf[at].write(TAG_NULL);
                1
            }
            CellRef::Bool(b) => {
                buf[at].write(if b { TAG_TRUE } else { TAG_FALSE });
                1
            }
            CellRef::Num(f) => match int_width(f) {
                Some(n) => {
                    let i = f as i32;
                    let tag = [TAG_I8, TAG_I16, TAG_I16, TAG_I32][n - 1];
                    buf[at].write(tag);
                    put(buf, at + 1, &i.to_le_bytes()[..n]);
                    1 + n
                }
                None => {
                    buf[at].write(TAG_NUM);
                    put(buf, at + 1, &f.to_bits().to_le_bytes());
                    9
                }
            },
            CellRef::Str(s) => {
                buf[at].write(TAG_STR);
                put(buf, at + 1, s.as_bytes());
                1 + s.len()
            }
        };
        let o = HEADER + i * w;
        match w {
            1 => {
                buf[o].write(at as u8);
            }
            2 => put(buf, o, &(at as u16).to_le_bytes()),
            _ => put(buf, o, &(at as u32).to_le_bytes()),
        }
    }
    at
}

impl Cells for Row {
    #[inline]
    fn cell(&self, col: usize) -> CellRef<'_> {
        self.get(col)
    }

    #[inline]
    fn width(&self) -> usize {
        self.len()
    }
}

/// Equal images: the same cells under storage identity (the packing is canonical, so
/// this is byte equality).
impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        Row::ptr_eq(self, other) || self.0.bytes() == other.0.bytes()
    }
}

impl Eq for Row {}

/// The same cells as `cells`, under storage identity.
impl PartialEq<[Value]> for Row {
    fn eq(&self, cells: &[Value]) -> bool {
        self.len() == cells.len() && self.iter().zip(cells).all(|(a, b)| a == b.cell())
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Row {
        Row::new(cells.as_slice())
    }
}

impl From<&[Value]> for Row {
    fn from(cells: &[Value]) -> Row {
        Row::new(cells)
    }
}

impl<const N: usize> From<[Value; N]> for Row {
    fn from(cells: [Value; N]) -> Row {
        Row::new(cells.as_slice())
    }
}

/// Gathers up to 16 cells on the stack before packing them (one allocation: the
/// image).
impl FromIterator<Value> for Row {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Row {
        let mut iter = iter.into_iter();
        let mut stack: [Value; GATHER] = core::array::from_fn(|_| Value::Null);
        let mut n = 0;
        while n < GATHER {
            match iter.next() {
                Some(v) => {
                    stack[n] = v;
                    n += 1;
                }
                None => return Row::new(&stack[..n]),
            }
        }
        let mut cells: Vec<Value> = stack.into_iter().collect();
        cells.extend(iter);
        Row::new(cells.as_slice())
    }
}

/// Cells gathered on the stack by [`Row`]'s `FromIterator`.
const GATHER: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    use alloc::string::String;
    use alloc::vec;

    #[test]
    fn round_trips_every_kind_of_cell() {
        let cells = vec![
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::num(-2.5),
            Value::Num(-0.0),
            Value::Num(f64::NAN),
            Value::str(""),
            Value::str("short"),
            Value::str("a text longer than fourteen bytes, with ü"),
        ];
        let row = Row::from(cells.clone());
        assert_eq!(row.len(), cells.len());
        for (i, v) in cells.iter().enumerate() {
            assert_eq!(row.get(i), v.cell(), "cell {i}");
        }
        assert_eq!(Row::from(row.to_vec()), row);
        assert!(Row::from(Vec::new()).is_empty());
    }

    #[test]
    fn wide_offsets_for_long_rows() {
        for len in [10usize, 300, 70_000] {
            let long: String = "x".repeat(len);
            let cells = vec![Value::str(&long), Value::num(7.0), Value::Null];
            let row = Row::from(cells.clone());
            assert_eq!(row.get(0), CellRef::Str(&long));
            assert_eq!(row.get(1), CellRef::Num(7.0));
            assert_eq!(row.get(2), CellRef::Null);
        }
    }

    #[test]
    fn equality_is_storage_identity() {
        let a = Row::from(vec![Value::num(1.0), Value::str("a")]);
        let b = Row::from(vec![Value::num(1.0), Value::str("a")]);
        let c = Row::from(vec![Value::num(1.0), Value::str("b")]);
        assert_eq!(a, b);
        assert!(!Row::ptr_eq(&a, &b));
        assert_ne!(a, c);
        assert_ne!(
            Row::from(vec![Value::Num(-0.0)]),
            Row::from(vec![Value::num(0.0)])
        );
    }

    #[test]
    fn every_offset_width_and_the_empty_row_round_trip() {
        assert_eq!(Row::from(Vec::new()).len(), 0);
        assert_eq!(Row::from(Vec::new()).0.bytes().len(), HEADER);
        for text in [0usize, 200, 300, 70_000] {
            let long: String = "x".repeat(text);
            let cells = vec![
                Value::num(1.5),
                Value::str(&long),
                Value::Null,
                Value::str("é"),
            ];
            let row = Row::from(cells.clone());
            assert_eq!(row.to_vec(), cells, "text of {text}");
            assert_eq!(
                row.heap_bytes(),
                (4 + row.0.bytes().len()).next_multiple_of(8)
            );
            let shared = row.clone();
            assert!(Row::ptr_eq(&row, &shared));
            drop(row);
            assert_eq!(shared.to_vec(), cells, "alive while a holder is");
        }
    }

    #[test]
    fn the_widest_row_round_trips() {
        let mut cells = vec![Value::Null; MAX_ROW_CELLS];
        cells[MAX_ROW_CELLS - 1] = Value::str("end");
        let row = Row::from(cells.clone());
        assert_eq!(row.len(), MAX_ROW_CELLS);
        assert_eq!(row.get(MAX_ROW_CELLS - 1), CellRef::Str("end"));
        assert_eq!(row.to_vec(), cells);
    }

    #[test]
    #[should_panic(expected = "a row of 16384 cells")]
    fn a_row_past_the_widest_is_refused() {
        let _ = Row::from(vec![Value::Null; MAX_ROW_CELLS + 1]);
    }

    #[test]
    fn integral_numbers_take_the_narrowest_exact_form() {
        let size = |f: f64| Row::from(vec![Value::Num(f)]).0.bytes().len() - 3;
        for (f, bytes) in [
            (0.0, 2),
            (-1.0, 2),
            (127.0, 2),
            (-128.0, 2),
            (128.0, 3),
            (-32_768.0, 3),
            (32_768.0, 5),
            (f64::from(i32::MAX), 5),
            (f64::from(i32::MIN), 5),
            (2_147_483_648.0, 9),
            (-0.0, 9),
            (0.5, 9),
            (f64::NAN, 9),
            (f64::INFINITY, 9),
            (1e300, 9),
        ] {
            assert_eq!(size(f), bytes, "{f}");
            let row = Row::from(vec![Value::Num(f)]);
            assert_eq!(row.get(0).to_value().cell(), Value::Num(f).cell(), "{f}");
            match row.get(0) {
                CellRef::Num(g) => assert_eq!(g.to_bits(), f.to_bits(), "{f}"),
                other => panic!("{other:?}"),
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_cells_round_trip(cells in proptest::collection::vec(cell(), 0..40)) {
            let row = Row::from(cells.clone());
            proptest::prop_assert_eq!(row.len(), cells.len());
            for (i, v) in cells.iter().enumerate() {
                proptest::prop_assert_eq!(row.get(i), v.cell());
            }
            proptest::prop_assert_eq!(row.to_vec(), cells.clone());
            proptest::prop_assert!(row == cells[..]);
        }
    }

    fn cell() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<f64>().prop_map(Value::Num),
            any::<i32>().prop_map(|i| Value::Num(f64::from(i))),
            (-200i32..200).prop_map(|i| Value::Num(f64::from(i))),
            ".{0,40}".prop_map(|s: String| Value::string(s)),
            proptest::collection::vec(any::<char>(), 200..400)
                .prop_map(|c| Value::string(c.into_iter().collect())),
        ]
    }

    #[test]
    #[should_panic(expected = "column 2 of a 2-cell row")]
    fn out_of_range_columns_panic_with_the_width() {
        let _ = Row::from(vec![Value::Null, Value::Null]).get(2);
    }
}
