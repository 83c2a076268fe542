//! Choosing the first rows of an ordering without sorting all of them.
//!
//! A windowed query reads a few dozen rows from the front of its ordering; sorting every
//! row of a large table to serve them is what made the first query on a freshly loaded
//! room slow. The rows' sort-key prefixes pick the front ([`crate::keys::keep_front`]);
//! the kept rows are exactly those whose key is at most the last kept key, the
//! ordering's *bound*.

use alloc::vec::Vec;

use crate::keys::{keep_front, keyed_by_prefix, sort_prefix, Key};
use crate::value::CellRef;

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
    /// The members' ids, when the guard index found them; else every live row of the
    /// slab with the guard's cell (or every live row) is one.
    pub ids: Option<Vec<RowId>>,
    /// The guard column and its value, for a pass over the slab.
    pub guard: Option<(usize, CellRef<'a>)>,
}

impl Members<'_> {
    /// Every member's sort-key prefix, in id order of the pass.
    fn prefixes(&self, order: &[(usize, bool)], scratch: &mut Vec<u8>) -> Vec<(u64, RowId)> {
        let mut all = Vec::new();
        match (&self.ids, self.guard) {
            (Some(ids), _) => {
                all.reserve(ids.len());
                for &id in ids {
                    if let Some(Some(row)) = self.slab.get(id as usize) {
                        all.push((sort_prefix(scratch, row, order), id));
                    }
                }
            }
            (None, Some((col, cell))) => {
                all.reserve(self.slab.len());
                for (id, row) in self.slab.iter().enumerate() {
                    if let Some(row) = row {
                        if row.get(col) == cell {
                            all.push((sort_prefix(scratch, row, order), id as RowId));
                        }
                    }
                }
            }
            (None, None) => {
                all.reserve(self.slab.len());
                for (id, row) in self.slab.iter().enumerate() {
                    if let Some(row) = row {
                        all.push((sort_prefix(scratch, row, order), id as RowId));
                    }
                }
            }
        }
        all
    }
}

/// Keeps about the first `keep` of the `members` under `order` (more when rows tie on
/// their prefix; all of them when there are not many more than `keep`).
pub(super) fn first_rows(
    members: &Members<'_>,
    order: &[(usize, bool)],
    keep: usize,
    scratch: &mut Vec<u8>,
) -> Chosen {
    let mut all = members.prefixes(order, scratch);
    let kept_all = keep_front(&mut all, keep);
    let entries = keyed_by_prefix(
        all,
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
        ) {
            let cells: Vec<(f64, &str)> = cells.iter().map(|(n, s)| (*n, s.as_str())).collect();
            let rows = rows(&cells);
            let order = if by_text { [(2, desc), (0, false)] } else { [(1, desc), (0, false)] };
            let whole = sorted(&rows, &order);
            let mut scratch = Vec::new();
            let slab: Vec<Option<Row>> = rows.iter().cloned().map(Some).collect();
            let members = Members { slab: &slab, ids: None, guard: None };
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
