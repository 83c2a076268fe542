//! Block ranges: for every block of row slots, the span of key prefixes the cells of a
//! column have had there.
//!
//! The first windowed query on a freshly loaded table used to pass over every row to
//! choose its ordering's front, keying each. With block ranges it reads the blocks whose
//! least possible prefix is smallest first and stops once the next block cannot hold a
//! row before the front it has found: when rows arrive roughly in the order a query
//! sorts by (ids, creation times), the front of a large table is found in a block or
//! two. When they do not, every block is read, as before.
//!
//! A column's spans are kept from the first ordering build that leads with it on a
//! table large enough to gain from them (one pass reading that column alone), and from
//! then on by every write, for as long as the table lives: a column no query sorts by
//! costs nothing. A span is widened by every write and never narrowed (a removal or an
//! overwrite leaves it as wide as it was), so it always covers the cells its block
//! holds: skipping a block on it is safe, only less useful after much churn. Cost: two
//! integers per block of 512 slots per column kept (0.03 bytes per row), and one span
//! update per column kept per insert or overwrite.

use alloc::vec::Vec;

use crate::keys::{cell_prefix_span, least_prefix};

use super::{Row, RowId};

/// How many row slots share a range, as a power of two.
pub(crate) const BLOCK_SHIFT: u32 = 9;

/// The span of an empty block: it admits nothing (its least prefix is the largest).
const EMPTY: (u64, u64) = (u64::MAX, 0);

/// One column's spans, by block.
#[derive(Debug)]
struct ColumnSpans {
    col: usize,
    /// The least and greatest [`cell_prefix_span`] bounds of the column's cells written
    /// to each block; blocks past the end never held a row.
    spans: Vec<(u64, u64)>,
}

/// A table's block ranges.
#[derive(Debug)]
pub(crate) struct BlockRanges {
    shift: u32,
    columns: Vec<ColumnSpans>,
}

impl Default for BlockRanges {
    fn default() -> BlockRanges {
        BlockRanges {
            shift: BLOCK_SHIFT,
            columns: Vec::new(),
        }
    }
}

impl BlockRanges {
    /// Testing knob: blocks of `1 << shift` slots from now on. Every column kept is
    /// rebuilt from `slab`.
    pub fn set_shift(&mut self, shift: u32, slab: &[Option<Row>]) {
        self.shift = shift.min(BLOCK_SHIFT);
        for c in &mut self.columns {
            c.spans = spans_of(slab, c.col, self.shift);
        }
    }

    /// How many slots a block has.
    #[inline]
    pub fn block_rows(&self) -> usize {
        1 << self.shift
    }

    /// The block of slot `id`.
    #[inline]
    pub fn block_of(&self, id: RowId) -> usize {
        (id >> self.shift) as usize
    }

    /// Keeps the spans of column `col` from now on, reading them off `slab` if they are
    /// not kept yet.
    pub fn keep(&mut self, col: usize, slab: &[Option<Row>]) {
        if !self.columns.iter().any(|c| c.col == col) {
            let spans = spans_of(slab, col, self.shift);
            self.columns.push(ColumnSpans { col, spans });
        }
    }

    /// Widens the spans of `id`'s block to cover `row`'s cells in the columns kept.
    #[inline(always)]
    pub fn note(&mut self, id: RowId, row: &Row) {
        if !self.columns.is_empty() {
            self.note_kept(id, row);
        }
    }

    fn note_kept(&mut self, id: RowId, row: &Row) {
        let block = self.block_of(id);
        for c in &mut self.columns {
            if c.spans.len() <= block {
                c.spans.resize(block + 1, EMPTY);
            }
            widen(&mut c.spans[block], row, c.col);
        }
    }

    /// The least sort prefix a row held in `block` can have under an order whose first
    /// column is `col` (`desc` or not): `u64::MAX` for a block that never held a row, 0
    /// (anything) when the column's spans are not kept.
    #[inline]
    pub fn least(&self, block: usize, col: usize, desc: bool) -> u64 {
        let Some(c) = self.columns.iter().find(|c| c.col == col) else {
            return 0;
        };
        match c.spans.get(block) {
            Some(&span) if span != EMPTY => least_prefix(span, desc),
            _ => u64::MAX,
        }
    }

    /// Forgets every span (the table was emptied); the columns stay kept.
    pub fn clear(&mut self) {
        for c in &mut self.columns {
            c.spans = Vec::new();
        }
    }

    /// Heap bytes (see [`crate::retained`]).
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        r::vec(&self.columns) + self.columns.iter().map(|c| r::vec(&c.spans)).sum::<usize>()
    }
}

/// Widens `span` to cover `row`'s cell at `col`.
#[inline]
fn widen(span: &mut (u64, u64), row: &Row, col: usize) {
    let (lo, hi) = cell_prefix_span(row.get(col));
    span.0 = span.0.min(lo);
    span.1 = span.1.max(hi);
}

/// The spans of column `col` over the rows of `slab`, blocks of `1 << shift` slots.
fn spans_of(slab: &[Option<Row>], col: usize, shift: u32) -> Vec<(u64, u64)> {
    let mut spans = Vec::with_capacity(slab.len().div_ceil(1 << shift));
    for block in slab.chunks(1 << shift) {
        let (mut lo, mut hi) = EMPTY;
        for row in block.iter().flatten() {
            let (l, h) = cell_prefix_span(row.get(col));
            lo = lo.min(l);
            hi = hi.max(h);
        }
        spans.push((lo, hi));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::sort_prefix;
    use crate::value::Value;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    fn cell() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1e6..1e6f64).prop_map(Value::num),
            "[a\\x00z]{0,10}".prop_map(|s: String| Value::string(s)),
        ]
    }

    proptest! {
        /// Every row ever written to a block sorts at or after the block's least prefix,
        /// whichever column leads the order and in either direction.
        #[test]
        fn a_block_never_holds_a_row_before_its_least_prefix(
            rows in prop::collection::vec((cell(), cell()), 1..60),
            shift in 0u32..4,
        ) {
            let rows: Vec<Row> = rows.into_iter().map(|(a, b)| Row::from(vec![a, b])).collect();
            // Column 0 kept from the start, column 1 read off the rows written before.
            let (early, late) = rows.split_at(rows.len() / 2);
            let mut ranges = BlockRanges::default();
            ranges.set_shift(shift, &[]);
            ranges.keep(0, &[]);
            let mut slab: Vec<Option<Row>> = Vec::new();
            for row in early {
                ranges.note(slab.len() as RowId, row);
                slab.push(Some(row.clone()));
            }
            ranges.keep(1, &slab);
            for row in late {
                ranges.note(slab.len() as RowId, row);
                slab.push(Some(row.clone()));
            }
            let mut scratch = Vec::new();
            for (id, row) in rows.iter().enumerate() {
                let block = ranges.block_of(id as RowId);
                for order in [[(0, false), (1, true)], [(0, true), (1, false)], [(1, true), (0, true)]] {
                    let least = ranges.least(block, order[0].0, order[0].1);
                    prop_assert!(least <= sort_prefix(&mut scratch, row, &order));
                }
            }
            let past = rows.len().div_ceil(1 << shift);
            prop_assert_eq!(ranges.least(past, 0, false), u64::MAX);
            prop_assert_eq!(ranges.least(0, 2, true), 0, "a column not kept bounds nothing");
        }
    }
}
