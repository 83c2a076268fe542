//! The right-hand side of `IN` / `NOT IN`, searched in logarithmic time.
//!
//! A cell is in the list when it is [`identical`](super::identical) to one of its
//! elements: a number to a number of the same value (integers exactly), a string to
//! the same bytes, a boolean to the same boolean. The elements are kept as the cells
//! they equal ([`Lit::as_cell`]), sorted and without repeats, one sorted list per type,
//! so a condition over a list of a hundred thousand ids costs a binary search per row,
//! not a hundred thousand comparisons.

use alloc::vec::Vec;

use super::Lit;
use crate::value::{CellRef, Text, Value};

/// The cells of an `IN` list (nulls and literals no cell can equal left out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InSet {
    /// Sorted by `total_cmp`, `-0` kept as `0`.
    nums: Vec<f64>,
    /// Sorted by bytes.
    strs: Vec<Text>,
    /// Whether `false` and whether `true` are in the list.
    bools: [bool; 2],
}

/// `-0` as `0`: the two are identical.
#[inline]
fn unsigned_zero(f: f64) -> f64 {
    if f == 0.0 {
        0.0
    } else {
        f
    }
}

impl InSet {
    /// The set of the cells `items` equal.
    pub fn new(items: &[Lit]) -> InSet {
        let mut set = InSet::default();
        for cell in items.iter().filter_map(Lit::as_cell) {
            match cell {
                Value::Null => {}
                Value::Bool(b) => set.bools[usize::from(b)] = true,
                Value::Num(f) => set.nums.push(unsigned_zero(f)),
                Value::Str(s) => set.strs.push(s),
            }
        }
        set.settle();
        set
    }

    /// The union of `sets`.
    pub fn union(sets: impl IntoIterator<Item = InSet>) -> InSet {
        let mut out = InSet::default();
        for s in sets {
            out.nums.extend(s.nums);
            out.strs.extend(s.strs);
            out.bools[0] |= s.bools[0];
            out.bools[1] |= s.bools[1];
        }
        out.settle();
        out
    }

    /// Heap bytes, as `Room::retained_bytes` counts them.
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        r::vec(&self.nums)
            + r::vec(&self.strs)
            + self.strs.iter().map(Text::heap_bytes).sum::<usize>()
    }

    /// Sorts the lists and drops repeats.
    fn settle(&mut self) {
        self.nums.sort_unstable_by(f64::total_cmp);
        self.nums.dedup_by(|a, b| a.total_cmp(b).is_eq());
        self.strs
            .sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        self.strs.dedup_by(|a, b| a.as_bytes() == b.as_bytes());
        self.nums.shrink_to_fit();
        self.strs.shrink_to_fit();
    }

    /// Whether `cell` is identical to an element of the list.
    #[inline]
    pub fn contains(&self, cell: CellRef<'_>) -> bool {
        match cell {
            CellRef::Null => false,
            CellRef::Bool(b) => self.bools[usize::from(b)],
            CellRef::Num(f) => {
                let f = unsigned_zero(f);
                self.nums.binary_search_by(|g| g.total_cmp(&f)).is_ok()
            }
            CellRef::Str(s) => self
                .strs
                .binary_search_by(|t| t.as_bytes().cmp(s.as_bytes()))
                .is_ok(),
        }
    }
}
