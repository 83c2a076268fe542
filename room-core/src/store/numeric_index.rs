//! Building the index of a one-column correlation on a number column at once.
//!
//! Built row by row, every row hashes and compares its key's bytes, and a crowded key
//! grows its list by doubling. Here each row contributes its number's order bits and its
//! id; sorting the pairs groups every key's rows, so each key is hashed once and its
//! rows are stored in a list (or set) of exactly their count.

use alloc::vec::Vec;

use hashbrown::HashMap;

use super::id_set::IdSet;
use super::{Row, RowId};
use crate::keys::{num_join_key, total_order_bits, Key};
use crate::value::CellRef;

/// The index of column `col` of `rows` when every cell of it is a number or NULL (a
/// NULL never correlates, so its row is in no key); `None` when another kind of cell
/// appears (the caller builds the index row by row).
pub(super) fn build(rows: &[Option<Row>], col: usize) -> Option<HashMap<Key, IdSet>> {
    let mut pairs: Vec<(u64, RowId)> = Vec::with_capacity(rows.len());
    for (id, row) in rows.iter().enumerate() {
        let Some(row) = row else { continue };
        match row.get(col) {
            CellRef::Num(f) => pairs.push((total_order_bits(f), id as RowId)),
            CellRef::Null => {}
            _ => return None,
        }
    }
    // By key, then id: a key's ids in the order a row-by-row build pushes them.
    radix_sort(&mut pairs);
    let keys = pairs.chunk_by(|a, b| a.0 == b.0).count();
    let mut map: HashMap<Key, IdSet> = HashMap::with_capacity(keys);
    let mut ids: Vec<RowId> = Vec::new();
    for run in pairs.chunk_by(|a, b| a.0 == b.0) {
        ids.clear();
        ids.extend(run.iter().map(|p| p.1));
        // Each run is one key, met once: the entry is always vacant, and filling it
        // needs no second probe.
        map.entry(Key::from(num_join_key(run[0].0).as_slice()))
            .or_insert_with(|| IdSet::from_ids(&ids));
    }
    Some(map)
}

/// Sorts by key, keeping ids in order within a key (the pairs arrive in id order): a
/// stable least-significant-digit radix sort on 11-bit digits, skipping every digit all
/// keys share (most of a small integer's bits).
fn radix_sort(pairs: &mut Vec<(u64, RowId)>) {
    const DIGIT: usize = 11;
    const MASK: u64 = (1 << DIGIT) - 1;
    if pairs.len() < 64 {
        pairs.sort_unstable();
        return;
    }
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let (mut or, mut and) = (0u64, u64::MAX);
    for p in pairs.iter() {
        lo = lo.min(p.0);
        hi = hi.max(p.0);
        or |= p.0;
        and &= p.0;
    }
    if lo == hi {
        return; // one key: already in id order
    }
    let varying = or ^ and; // the bits that differ between some two keys
    let mut from = core::mem::take(pairs);
    let mut to: Vec<(u64, RowId)> = Vec::with_capacity(from.len());
    let mut counts = alloc::vec![0usize; 1 << DIGIT];
    for shift in (0..64).step_by(DIGIT) {
        if (varying >> shift) & MASK == 0 {
            continue;
        }
        counts.iter_mut().for_each(|c| *c = 0);
        for p in &from {
            counts[((p.0 >> shift) & MASK) as usize] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        to.clear();
        // Every slot below is written exactly once: the counts partition 0..len.
        to.resize(from.len(), (0, 0));
        for p in &from {
            let d = ((p.0 >> shift) & MASK) as usize;
            to[counts[d]] = *p;
            counts[d] += 1;
        }
        core::mem::swap(&mut from, &mut to);
    }
    *pairs = from;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::join_key_into;
    use crate::value::Value;
    use alloc::collections::BTreeMap;
    use alloc::vec;
    use proptest::prelude::*;

    /// What an index holds, comparable: each key's ids in stored order (sorted for a
    /// set) and the representation's name.
    fn shape(map: &HashMap<Key, IdSet>) -> BTreeMap<Vec<u8>, (&'static str, Vec<RowId>)> {
        map.iter()
            .map(|(k, s)| {
                let kind = match s {
                    IdSet::One(_) => "one",
                    IdSet::Few(_) => "few",
                    IdSet::Many(_) => "many",
                };
                let mut ids: Vec<RowId> = s.iter().collect();
                if kind == "many" {
                    ids.sort_unstable();
                }
                (k.as_bytes().to_vec(), (kind, ids))
            })
            .collect()
    }

    /// The row-by-row build, written out.
    fn by_rows(rows: &[Option<Row>], col: usize) -> HashMap<Key, IdSet> {
        let mut map: HashMap<Key, IdSet> = HashMap::new();
        let mut scratch = Vec::new();
        for (id, row) in rows.iter().enumerate() {
            let Some(row) = row else { continue };
            if join_key_into(&mut scratch, row, &[col]) {
                match map.get_mut(scratch.as_slice()) {
                    Some(set) => set.push_new(id as RowId),
                    None => {
                        map.insert(Key::from(scratch.as_slice()), IdSet::new(id as RowId));
                    }
                }
            }
        }
        map
    }

    proptest! {
        /// The radix sort orders as a sort by (key, id) does.
        #[test]
        fn radix_sort_orders_by_key_then_id(
            keys in prop::collection::vec(
                prop_oneof![any::<u64>(), 0u64..5, (0u64..70_000).prop_map(|k| k << 20)],
                0..600),
        ) {
            let mut pairs: Vec<(u64, RowId)> =
                keys.iter().enumerate().map(|(i, k)| (*k, i as RowId)).collect();
            let mut want = pairs.clone();
            want.sort_unstable();
            radix_sort(&mut pairs);
            prop_assert_eq!(pairs, want);
        }

        /// The sorted build holds exactly what the row-by-row build holds, in the same
        /// representation and order; a column with a string in it is left to the
        /// row-by-row build.
        #[test]
        fn equals_the_row_by_row_build(
            cells in prop::collection::vec(
                prop_oneof![
                    4 => (0u8..40).prop_map(|n| Some(f64::from(n))),
                    1 => Just(Some(-0.0)),
                    1 => Just(Some(f64::NAN)),
                    1 => Just(Some(-7.25)),
                    1 => Just(None),
                ],
                0..400),
            holes in prop::collection::vec(any::<bool>(), 400),
            text in any::<bool>(),
        ) {
            let mut rows: Vec<Option<Row>> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let cell = c.map_or(Value::Null, Value::num);
                    (!holes[i]).then(|| Row::from(vec![Value::num(i as f64), cell]))
                })
                .collect();
            if text {
                rows.push(Some(Row::from(vec![Value::num(1e9), Value::string("x".into())])));
                prop_assert!(build(&rows, 1).is_none());
            } else {
                let built = build(&rows, 1).expect("a number column");
                prop_assert_eq!(shape(&built), shape(&by_rows(&rows, 1)));
            }
        }
    }
}
