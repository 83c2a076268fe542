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
//! A column's spans are kept from the end of the seq-0 snapshot that loaded the table,
//! for the number columns that look sorted by slot nearly all the way (ids, creation
//! and modification times: [`BlockRanges::keep_loaded`]), or else from the first
//! ordering build that leads with it and is likely to gain from them
//! ([`BlockRanges::worth_keeping`]: enough rows, and a sample of the column that looks
//! sorted by slot). Either way they are read in one pass over that column alone, and
//! from then on kept by every write, for as long as the table lives: any other column
//! no query sorts by costs nothing. A load pays that pass while its rows are still in
//! cache (about 18 instructions per row and column for compact integers); the first
//! query would pay it reading every row cold. A span is widened by every write and never narrowed (a removal or an
//! overwrite leaves it as wide as it was), so it always covers the cells its block
//! holds: skipping a block on it is safe, only less useful after much churn. Cost: two
//! integers per block of 512 slots per column kept (0.03 bytes per row), and one span
//! update per column kept per insert or overwrite.

use alloc::vec::Vec;

use crate::keys::{cell_prefix_span, least_prefix, num_prefix};
use crate::value::row::compact_int_span;
use crate::value::CellRef;

use super::{Row, RowId};

/// How many row slots share a range, as a power of two.
pub(crate) const BLOCK_SHIFT: u32 = 9;

/// The most columns a table keeps spans for: past it, builds on other columns read every
/// member (the spans of a wide table's every column would cost 0.03 bytes per row each).
pub(crate) const MAX_KEPT_COLUMNS: usize = 8;

/// The fewest blocks of rows a bulk load must leave for [`BlockRanges::keep_loaded`] to
/// keep any column's spans.
pub(crate) const LOADED_MIN_BLOCKS: usize = 4;

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
    /// Testing knob (set with the block size): keep a column's spans for any build
    /// that could skip blocks, however its cells look.
    always: bool,
    columns: Vec<ColumnSpans>,
}

impl Default for BlockRanges {
    fn default() -> BlockRanges {
        BlockRanges {
            shift: BLOCK_SHIFT,
            always: false,
            columns: Vec::new(),
        }
    }
}

impl BlockRanges {
    /// Testing knob: blocks of `1 << shift` slots from now on, and spans kept for any
    /// build that could skip blocks. Every column kept is rebuilt from `slab`.
    pub fn set_shift(&mut self, shift: u32, slab: &[Option<Row>]) {
        self.shift = shift.min(BLOCK_SHIFT);
        self.always = true;
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

    /// Whether a build of `members` rows (of `slab`) keeping its first `keep`, whose order
    /// leads with `col`, should start keeping `col`'s spans: it has enough members to
    /// skip blocks, they are at least half the table (the spans are read off every
    /// row), and a sample of the column looks sorted by slot, up or down
    /// ([`looks_sorted`]). Otherwise reading the spans costs more than skipping blocks
    /// saves; the build reads every member instead, as without ranges.
    pub fn worth_keeping(
        &self,
        col: usize,
        slab: &[Option<Row>],
        members: usize,
        keep: usize,
    ) -> bool {
        !self.keeps(col)
            && self.columns.len() < MAX_KEPT_COLUMNS
            && members > keep.saturating_mul(2) + self.block_rows()
            && (self.always || (members.saturating_mul(2) >= slab.len() && looks_sorted(slab, col)))
    }

    /// After a bulk load of `slab` (a seq-0 snapshot): starts keeping the spans of
    /// every column among the first [`MAX_KEPT_COLUMNS`] of a `width`-column table whose
    /// sampled cells are all numbers and look sorted by slot, nearly all the way
    /// ([`LOADED_SORTED`]) — ids,
    /// creation and modification times, the columns a first windowed query most often
    /// leads its order with and skips blocks on. Their pass runs now, while the rows
    /// just written are still in cache, instead of in that query, where it reads every
    /// row cold. Text columns are left to their first query: their pass costs several
    /// times a number column's. A table of fewer than [`LOADED_MIN_BLOCKS`] blocks
    /// keeps none: its first query's pass is short anyway.
    pub fn keep_loaded(&mut self, width: usize, slab: &[Option<Row>], rows: usize) {
        if rows < LOADED_MIN_BLOCKS << self.shift || rows.saturating_mul(2) < slab.len() {
            return;
        }
        for col in 0..width.min(MAX_KEPT_COLUMNS) {
            if self.columns.len() >= MAX_KEPT_COLUMNS {
                break;
            }
            if !self.keeps(col)
                && looks_numeric(slab, col)
                && looks_sorted_by(slab, col, LOADED_SORTED)
            {
                self.keep(col, slab);
            }
        }
    }

    /// Whether column `col`'s spans are kept.
    pub fn keeps(&self, col: usize) -> bool {
        self.columns.iter().any(|c| c.col == col)
    }

    /// Keeps the spans of column `col` from now on, reading them off `slab` if they are
    /// not kept yet.
    pub fn keep(&mut self, col: usize, slab: &[Option<Row>]) {
        if !self.keeps(col) {
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

/// How many rows [`looks_sorted`] reads.
const SAMPLES: usize = 64;

/// Whether the cells of column `col` look sorted by slot: of [`SAMPLES`] rows at evenly
/// spaced slots, at least three in four neighbouring pairs that differ step the same way.
/// Cheap (64 cells), and only a guess: it decides whether reading the column's spans
/// is likely to pay, never what a build returns.
fn looks_sorted(slab: &[Option<Row>], col: usize) -> bool {
    looks_sorted_by(slab, col, (3, 4))
}

/// What share of the sampled steps must go one way for a load to keep a column's spans
/// ([`BlockRanges::keep_loaded`]): fifteen in sixteen — ids and times, not a column
/// that merely trends (a creator id cycling through the users), which a query may
/// never sort by.
const LOADED_SORTED: (usize, usize) = (15, 16);

/// [`looks_sorted`] with at least `share.0` in `share.1` of the steps one way.
fn looks_sorted_by(slab: &[Option<Row>], col: usize, share: (usize, usize)) -> bool {
    let step = (slab.len() / SAMPLES).max(1);
    let mut last: Option<u64> = None;
    let (mut up, mut down) = (0usize, 0usize);
    for row in slab.iter().step_by(step).flatten() {
        let (lo, _) = cell_prefix_span(row.get(col));
        match last {
            Some(prev) if lo > prev => up += 1,
            Some(prev) if lo < prev => down += 1,
            _ => {}
        }
        last = Some(lo);
    }
    let steps = up + down;
    steps > 0 && up.max(down) * share.1 >= steps * share.0
}

/// Whether every row [`looks_sorted`] samples has a number in column `col`.
fn looks_numeric(slab: &[Option<Row>], col: usize) -> bool {
    let step = (slab.len() / SAMPLES).max(1);
    slab.iter()
        .step_by(step)
        .flatten()
        .all(|row| matches!(row.get(col), CellRef::Num(_)))
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
        // Compact integers (most sort columns: ids, times) are bounded as integers and
        // turned into prefixes once per block: the prefix order is theirs.
        let (int_lo, int_hi) = compact_int_span(block, col, |row| {
            let (l, h) = cell_prefix_span(row.get(col));
            lo = lo.min(l);
            hi = hi.max(h);
        });
        if int_lo <= int_hi {
            lo = lo.min(num_prefix(f64::from(int_lo)));
            hi = hi.max(num_prefix(f64::from(int_hi)));
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
            // Packed as compact integers of each width (and a few past i32).
            (-200i32..200).prop_map(|i| Value::num(f64::from(i))),
            (-100_000i32..100_000).prop_map(|i| Value::num(f64::from(i))),
            any::<i32>().prop_map(|i| Value::num(f64::from(i))),
            (-1i64 << 40..1i64 << 40).prop_map(|i| Value::num(i as f64)),
            "[a\\x00z]{0,10}".prop_map(|s: String| Value::string(s)),
        ]
    }

    fn slab_of(values: impl Iterator<Item = usize>) -> Vec<Option<Row>> {
        values
            .map(|v| Some(Row::from(vec![Value::num(v as f64)])))
            .collect()
    }

    #[test]
    fn a_column_in_slot_order_looks_sorted_and_a_scattered_one_does_not() {
        let n = 10_000;
        assert!(looks_sorted(&slab_of(0..n), 0));
        assert!(looks_sorted(&slab_of((0..n).rev()), 0));
        assert!(!looks_sorted(&slab_of((0..n).map(|i| i * 7919 % n)), 0));
        assert!(
            !looks_sorted(&slab_of((0..n).map(|_| 5)), 0),
            "no steps at all"
        );
        let ranges = BlockRanges::default();
        let sorted = slab_of(0..n);
        assert!(ranges.worth_keeping(0, &sorted, n, 256));
        assert!(
            !ranges.worth_keeping(0, &sorted, n / 3, 256),
            "a third of the table"
        );
        assert!(
            !ranges.worth_keeping(0, &sorted[..1000], 1000, 256),
            "too few to skip"
        );
    }

    #[test]
    fn a_table_keeps_spans_for_at_most_eight_columns() {
        let n = 2_000;
        let wide: Vec<Option<Row>> = (0..n)
            .map(|i| {
                let cells: Vec<Value> = (0..12).map(|c| Value::num((i + c) as f64)).collect();
                Some(Row::from(cells))
            })
            .collect();
        let mut ranges = BlockRanges::default();
        for col in 0..12 {
            if ranges.worth_keeping(col, &wide, n, 256) {
                ranges.keep(col, &wide);
            }
        }
        assert_eq!(
            (0..12).filter(|&c| ranges.keeps(c)).count(),
            MAX_KEPT_COLUMNS
        );
    }

    #[test]
    fn a_load_keeps_the_number_columns_that_look_sorted_and_no_others() {
        let n = LOADED_MIN_BLOCKS << BLOCK_SHIFT;
        // id (sorted), a text column in slot order, a number in no order, a time
        // running down the slots, a creator id cycling through 300 users (it trends
        // up: four steps in five at these samples).
        let slab: Vec<Option<Row>> = (0..n)
            .map(|i| {
                Some(Row::from(vec![
                    Value::num(i as f64),
                    Value::string(alloc::format!("name {i:06}")),
                    Value::num((i * 7919 % n) as f64),
                    Value::num(1.7e12 - i as f64),
                    Value::num((i % 300) as f64),
                ]))
            })
            .collect();
        assert!(looks_sorted(&slab, 4), "a query's build would keep it");
        let mut ranges = BlockRanges::default();
        ranges.keep_loaded(5, &slab, n);
        assert_eq!(
            (0..5).map(|c| ranges.keeps(c)).collect::<Vec<_>>(),
            [true, false, false, true, false]
        );
        // What it keeps bounds every block as a pass at the first query would.
        for (b, block) in slab.chunks(1 << BLOCK_SHIFT).enumerate() {
            let least = block
                .iter()
                .flatten()
                .map(|r| sort_prefix(&mut Vec::new(), r, &[(3, false)]))
                .min();
            assert_eq!(Some(ranges.least(b, 3, false)), least);
        }

        let mut small = BlockRanges::default();
        small.keep_loaded(5, &slab[..n - 1], n - 1);
        assert!(!small.keeps(0), "fewer rows than the blocks it asks for");
        let mut sparse = BlockRanges::default();
        sparse.keep_loaded(5, &slab, n / 2 - 1);
        assert!(!sparse.keeps(0), "fewer live rows than half the slots");
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
