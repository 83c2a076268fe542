//! Choosing the first rows of an ordering without sorting all of them.
//!
//! A windowed query reads a few dozen rows from the front of its ordering; sorting every
//! row of a large table to serve them is what made the first query on a freshly loaded
//! room slow. The rows' sort-key prefixes pick the front ([`crate::keys::keep_front`]);
//! the kept rows are exactly those whose key is at most the last kept key, the
//! ordering's *bound*. With [block ranges](super::super::ranges) the rows are read a
//! block at a time, the block that may hold the smallest prefix first, and the blocks
//! that cannot hold a row before the front found so far are not read at all.

use alloc::vec::Vec;

use crate::keys::{keep_front, keyed_by_prefix, sort_prefix, Key};
use crate::value::CellRef;

use super::super::ranges::BlockRanges;
use super::super::{Row, RowId};

/// The rows of an ordering that a build keeps, in key order, and the bound they reach.
pub(super) struct Chosen {
    pub entries: Vec<(Key, RowId)>,
    /// `None`: every row was kept. `Some(b)`: exactly the rows with key `<= b` were.
    pub bound: Option<Key>,
}

/// The rows an ordering is built from: the table's rows by id (`slab`), and which of
/// them belong to the ordering.
pub(crate) struct Members<'a> {
    pub slab: &'a [Option<Row>],
    /// The members' ids (ascending), when the guard index found them; else every live
    /// row of the slab with the guard's cell (or every live row) is one.
    pub ids: Option<Vec<RowId>>,
    /// The guard column and its value, for a pass over the slab.
    pub guard: Option<(usize, CellRef<'a>)>,
    /// The slab's block ranges, if the build may skip blocks.
    pub ranges: Option<&'a BlockRanges>,
}

/// The candidates of a build: `(sort prefix, id)` of members, and whether they are every
/// member (`complete`) or exactly the members whose prefix is at most the largest held.
struct Candidates {
    all: Vec<(u64, RowId)>,
    complete: bool,
}

impl Members<'_> {
    /// Pushes the sort-key prefix of every member among `ids` (the members' ids, or a
    /// range of slots to filter by the guard).
    fn push_prefixes(
        &self,
        ids: MemberIds<'_>,
        order: &[(usize, bool)],
        scratch: &mut Vec<u8>,
        all: &mut Vec<(u64, RowId)>,
    ) {
        match ids {
            MemberIds::Listed(ids) => {
                for &id in ids {
                    if let Some(Some(row)) = self.slab.get(id as usize) {
                        all.push((sort_prefix(scratch, row, order), id));
                    }
                }
            }
            MemberIds::Slots(from, to) => {
                let to = to.min(self.slab.len());
                let from = from.min(to);
                let slots = self.slab[from..to].iter().zip(from as RowId..);
                match self.guard {
                    Some((col, cell)) => {
                        for (row, id) in slots {
                            if let Some(row) = row {
                                if row.get(col) == cell {
                                    all.push((sort_prefix(scratch, row, order), id));
                                }
                            }
                        }
                    }
                    None => {
                        for (row, id) in slots {
                            if let Some(row) = row {
                                all.push((sort_prefix(scratch, row, order), id));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every member's sort-key prefix.
    fn prefixes(&self, order: &[(usize, bool)], scratch: &mut Vec<u8>) -> Vec<(u64, RowId)> {
        let mut all = Vec::new();
        match &self.ids {
            Some(ids) => {
                all.reserve(ids.len());
                self.push_prefixes(MemberIds::Listed(ids), order, scratch, &mut all);
            }
            None => {
                all.reserve(self.slab.len());
                self.push_prefixes(MemberIds::Slots(0, usize::MAX), order, scratch, &mut all);
            }
        }
        all
    }

    /// The members' ids block by block (the slots of each block, or each block's run of
    /// the listed ids), with the least prefix each block may hold, smallest first.
    fn blocks(&self, ranges: &BlockRanges, (col, desc): (usize, bool)) -> Vec<(u64, usize, usize)> {
        let rows = ranges.block_rows();
        let mut blocks: Vec<(u64, usize, usize)> = match &self.ids {
            Some(ids) => {
                let mut runs = Vec::new();
                let mut from = 0;
                while from < ids.len() {
                    let block = ranges.block_of(ids[from]);
                    let to = from + ids[from..].partition_point(|&id| ranges.block_of(id) == block);
                    runs.push((ranges.least(block, col, desc), from, to));
                    from = to;
                }
                runs
            }
            None => (0..self.slab.len().div_ceil(rows))
                .map(|b| (ranges.least(b, col, desc), b * rows, (b + 1) * rows))
                .collect(),
        };
        blocks.sort_unstable_by_key(|b| b.0);
        blocks
    }

    /// The candidates for the first `keep` members, reading as few blocks as the ranges
    /// allow: a block is skipped when at least `keep` candidates are in hand and the
    /// block's least prefix is past the `keep`-th smallest of theirs (the *cut*).
    fn candidates(
        &self,
        order: &[(usize, bool)],
        keep: usize,
        scratch: &mut Vec<u8>,
    ) -> Candidates {
        let members = self.ids.as_ref().map_or(self.slab.len(), Vec::len);
        let (Some(ranges), Some(&first)) = (self.ranges, order.first()) else {
            return Candidates {
                all: self.prefixes(order, scratch),
                complete: true,
            };
        };
        if members <= keep.saturating_mul(2) + ranges.block_rows() || !ranges.keeps(first.0) {
            return Candidates {
                all: self.prefixes(order, scratch),
                complete: true,
            };
        }
        // Candidates past this many are cut back to the `keep` smallest.
        let spare = keep.saturating_mul(8);
        let mut all = Vec::with_capacity(spare + ranges.block_rows());
        let mut complete = true;
        // The `keep`-th smallest prefix of the candidates when it was last worked out:
        // at least the current one (more candidates only lower it), so a block whose
        // least prefix is past it can be skipped. Worked out once `keep` are in hand,
        // then at each cut back: once per block would cost a selection per block where
        // no block can be skipped.
        let mut cut: Option<u64> = None;
        for (least, from, to) in self.blocks(ranges, first) {
            if cut.is_some_and(|cut| least > cut) {
                // This block and every one after it can only hold rows past the cut.
                complete = false;
                break;
            }
            let ids = match &self.ids {
                Some(ids) => MemberIds::Listed(&ids[from..to]),
                None => MemberIds::Slots(from, to),
            };
            self.push_prefixes(ids, order, scratch, &mut all);
            if (cut.is_none() && all.len() >= keep) || all.len() > spare {
                let c = all.select_nth_unstable_by_key(keep - 1, |e| e.0).1 .0;
                cut = Some(c);
                if all.len() > spare {
                    let before = all.len();
                    all.retain(|e| e.0 <= c);
                    complete &= all.len() == before;
                }
            }
        }
        if !complete {
            // Rows were left out, each with a prefix past the cut: so must every held one be
            // at most the cut, or a held row could sort after one left out.
            if let Some(c) = cut {
                all.retain(|e| e.0 <= c);
            }
        }
        Candidates { all, complete }
    }
}

/// Which ids a pass reads.
enum MemberIds<'a> {
    /// These (the guard index found them).
    Listed(&'a [RowId]),
    /// The live slots in `from..to` that hold the guard's cell.
    Slots(usize, usize),
}

/// Keeps about the first `keep` of the `members` under `order` (more when rows tie on
/// their prefix; all of them when there are not many more than `keep`).
pub(super) fn first_rows(
    members: &Members<'_>,
    order: &[(usize, bool)],
    keep: usize,
    scratch: &mut Vec<u8>,
) -> Chosen {
    let keep = keep.max(1);
    let Candidates { mut all, complete } = members.candidates(order, keep, scratch);
    let kept_all = keep_front(&mut all, keep) && complete;
    let entries = keyed_by_prefix(
        &mut all,
        |id: RowId| members.slab.get(id as usize).and_then(Option::as_ref),
        order,
        scratch,
    );
    let bound = if kept_all {
        None
    } else {
        entries.last().map(|(k, _)| k.clone())
    };
    Chosen { entries, bound }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::sort_key_into;
    use crate::value::Value;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    fn rows(cells: &[(f64, &str)]) -> Vec<Row> {
        cells
            .iter()
            .enumerate()
            .map(|(i, (n, s))| {
                Row::from(vec![
                    Value::num(i as f64),
                    Value::num(*n),
                    Value::string(String::from(*s)),
                ])
            })
            .collect()
    }

    /// Every row, keyed and sorted: what a whole build holds.
    fn sorted(rows: &[Row], order: &[(usize, bool)]) -> Vec<(Vec<u8>, RowId)> {
        let mut all: Vec<(Vec<u8>, RowId)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut k = Vec::new();
                sort_key_into(&mut k, r, order);
                (k, i as RowId)
            })
            .collect();
        all.sort();
        all
    }

    proptest! {
        /// The kept rows are a prefix of the whole sorted order, at least `keep` long
        /// (or everything), and every row left out sorts past the bound.
        #[test]
        fn kept_rows_are_exactly_those_up_to_the_bound(
            cells in prop::collection::vec(
                (prop_oneof![Just(1.0), Just(2.0), -50.0..50.0f64],
                 prop_oneof![
                    Just(String::from("a")),
                    Just(String::from("aaaaaaaaaaaaab")),
                    Just(String::from("aaaaaaaaaaaaaa")),
                    "[ab]{0,12}",
                 ]),
                0..200),
            keep in 1usize..40,
            desc in any::<bool>(),
            by_text in any::<bool>(),
            // `None`: no block ranges; else blocks of `1 << shift` slots.
            shift in prop::option::of(0u32..4),
            sorted_slab in any::<bool>(),
            guarded in any::<bool>(),
        ) {
            let mut cells: Vec<(f64, &str)> = cells.iter().map(|(n, s)| (*n, s.as_str())).collect();
            if sorted_slab {
                // Rows that arrive in about the order read: the case block ranges help.
                cells.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            let rows = rows(&cells);
            let order = if by_text { [(2, desc), (0, false)] } else { [(1, desc), (0, false)] };
            // A guard keeps the rows with an even id (listed, as a guard index finds them).
            let members_of = |rows: &[Row]| -> Vec<Row> {
                rows.iter()
                    .enumerate()
                    .filter(|(i, _)| !guarded || i % 2 == 0)
                    .map(|(_, r)| r.clone())
                    .collect()
            };
            let whole: Vec<(Vec<u8>, RowId)> = sorted(&members_of(&rows), &order)
                .into_iter()
                .map(|(k, i)| (k, if guarded { i * 2 } else { i }))
                .collect();
            let mut scratch = Vec::new();
            let slab: Vec<Option<Row>> = rows.iter().cloned().map(Some).collect();
            let mut ranges = BlockRanges::default();
            ranges.set_shift(shift.unwrap_or(0), &slab);
            ranges.keep(order[0].0, &slab);
            let members = Members {
                slab: &slab,
                ids: guarded.then(|| (0..rows.len() as RowId).step_by(2).collect()),
                guard: None,
                ranges: shift.map(|_| &ranges),
            };
            let chosen = first_rows(
                &members,
                &order,
                keep,
                &mut scratch,
            );
            let got: Vec<(Vec<u8>, RowId)> =
                chosen.entries.iter().map(|(k, id)| (k.as_bytes().to_vec(), *id)).collect();
            prop_assert_eq!(&got[..], &whole[..got.len()]);
            match &chosen.bound {
                None => prop_assert_eq!(got.len(), whole.len()),
                Some(b) => {
                    prop_assert!(got.len() >= keep);
                    prop_assert_eq!(b.as_bytes(), &got[got.len() - 1].0[..]);
                    prop_assert!(whole[got.len()..].iter().all(|(k, _)| k.as_slice() > b.as_bytes()));
                }
            }
        }
    }
}
