//! Rows by sort key: a sorted vector while they are few, a B-tree once they grow.
//!
//! Most partitions of a relational query hold a handful of rows (one author, a few
//! comments), and a table ordering's first build holds about a hundred; a B-tree spends
//! a node allocation and a descent on each entry, which made entering a child partition
//! cost several times what reading its rows did, and building an ordering from rows
//! already sorted cost a sort check and a node build per entry. Up to [`SMALL`] rows
//! live in one sorted vector (a binary search, a shift of a few entries); past it the
//! rows move to a B-tree for good, so a large set keeps `O(log n)` inserts and removes.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::ops::Bound;

use crate::keys::Key;
use crate::store::RowId;

/// The most rows held in the sorted vector.
pub(crate) const SMALL: usize = 128;

/// Rows by unique sort key, in key order.
#[derive(Debug)]
pub(crate) enum KeyedRows {
    /// Sorted by key, keys unique, at most [`SMALL`] entries.
    Small(Vec<(Key, RowId)>),
    /// Past [`SMALL`] rows.
    Large(BTreeMap<Key, RowId>),
}

impl Default for KeyedRows {
    fn default() -> KeyedRows {
        KeyedRows::Small(Vec::new())
    }
}

impl KeyedRows {
    /// From entries sorted by key with unique keys.
    pub fn from_sorted(entries: Vec<(Key, RowId)>) -> KeyedRows {
        if entries.len() <= SMALL {
            KeyedRows::Small(entries)
        } else {
            KeyedRows::Large(entries.into_iter().collect())
        }
    }

    /// Heap bytes (see [`crate::retained`]).
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        match self {
            KeyedRows::Small(v) => r::vec(v) + v.iter().map(|(k, _)| r::key(k)).sum::<usize>(),
            KeyedRows::Large(m) => r::btree_map(m) + m.keys().map(r::key).sum::<usize>(),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self {
            KeyedRows::Small(v) => v.len(),
            KeyedRows::Large(m) => m.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The last key held.
    pub fn last_key(&self) -> Option<&Key> {
        match self {
            KeyedRows::Small(v) => v.last().map(|(k, _)| k),
            KeyedRows::Large(m) => m.last_key_value().map(|(k, _)| k),
        }
    }

    /// Takes the last row out.
    pub fn pop_last(&mut self) -> Option<RowId> {
        match self {
            KeyedRows::Small(v) => v.pop().map(|(_, r)| r),
            KeyedRows::Large(m) => m.pop_last().map(|(_, r)| r),
        }
    }

    /// The row under `key`.
    pub fn get(&self, key: &[u8]) -> Option<RowId> {
        match self {
            KeyedRows::Small(v) => v
                .binary_search_by(|(k, _)| (**k).cmp(key))
                .ok()
                .map(|i| v[i].1),
            KeyedRows::Large(m) => m.get(key).copied(),
        }
    }

    /// Adds a row under a key not held yet (a held key's row is replaced).
    pub fn insert(&mut self, key: Key, rid: RowId) {
        match self {
            KeyedRows::Small(v) => match v.binary_search_by(|(k, _)| (**k).cmp(&*key)) {
                Ok(i) => v[i].1 = rid,
                Err(i) if v.len() < SMALL => v.insert(i, (key, rid)),
                Err(_) => {
                    let mut m: BTreeMap<Key, RowId> = core::mem::take(v).into_iter().collect();
                    m.insert(key, rid);
                    *self = KeyedRows::Large(m);
                }
            },
            KeyedRows::Large(m) => {
                m.insert(key, rid);
            }
        }
    }

    /// Removes the row under `key`; returns it when there was one.
    pub fn remove(&mut self, key: &[u8]) -> Option<RowId> {
        match self {
            KeyedRows::Small(v) => {
                let i = v.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
                Some(v.remove(i).1)
            }
            KeyedRows::Large(m) => m.remove(key),
        }
    }

    /// The last key strictly before `key`.
    pub fn last_before(&self, key: &[u8]) -> Option<&Key> {
        match self {
            KeyedRows::Small(v) => {
                let i = v.partition_point(|(k, _)| &**k < key);
                i.checked_sub(1).map(|i| &v[i].0)
            }
            KeyedRows::Large(m) => m
                .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(key)))
                .next_back()
                .map(|(k, _)| k),
        }
    }

    /// The first entry strictly after `key`.
    pub fn first_after(&self, key: &[u8]) -> Option<(&Key, RowId)> {
        match self {
            KeyedRows::Small(v) => {
                let i = v.partition_point(|(k, _)| &**k <= key);
                v.get(i).map(|(k, r)| (k, *r))
            }
            KeyedRows::Large(m) => m
                .range::<[u8], _>((Bound::Excluded(key), Bound::Unbounded))
                .next()
                .map(|(k, r)| (k, *r)),
        }
    }

    /// The entries whose key is past `lower`, in key order.
    pub fn range_from(&self, lower: Bound<&[u8]>) -> Entries<'_> {
        match self {
            KeyedRows::Small(v) => {
                let from = match lower {
                    Bound::Included(key) => v.partition_point(|(k, _)| &**k < key),
                    Bound::Excluded(key) => v.partition_point(|(k, _)| &**k <= key),
                    Bound::Unbounded => 0,
                };
                Entries::Small(v[from..].iter())
            }
            KeyedRows::Large(m) => Entries::Large(m.range::<[u8], _>((lower, Bound::Unbounded))),
        }
    }

    /// Drops every row (a set that grew into a B-tree stays one).
    pub fn clear(&mut self) {
        match self {
            KeyedRows::Small(v) => v.clear(),
            KeyedRows::Large(m) => m.clear(),
        }
    }

    /// The rows in key order.
    pub fn rows(&self) -> Rows<'_> {
        match self {
            KeyedRows::Small(v) => Rows::Small(v.iter()),
            KeyedRows::Large(m) => Rows::Large(m.values()),
        }
    }
}

/// The rows of a [`KeyedRows`], in key order.
pub(crate) enum Rows<'a> {
    Small(core::slice::Iter<'a, (Key, RowId)>),
    Large(alloc::collections::btree_map::Values<'a, Key, RowId>),
}

/// The entries of a [`KeyedRows`] from some key on, in key order.
pub(crate) enum Entries<'a> {
    Small(core::slice::Iter<'a, (Key, RowId)>),
    Large(alloc::collections::btree_map::Range<'a, Key, RowId>),
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a Key, RowId);

    #[inline]
    fn next(&mut self) -> Option<(&'a Key, RowId)> {
        match self {
            Entries::Small(it) => it.next().map(|(k, r)| (k, *r)),
            Entries::Large(it) => it.next().map(|(k, r)| (k, *r)),
        }
    }
}

impl Iterator for Rows<'_> {
    type Item = RowId;

    #[inline]
    fn next(&mut self) -> Option<RowId> {
        match self {
            Rows::Small(it) => it.next().map(|(_, r)| *r),
            Rows::Large(it) => it.next().copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn k(n: u16) -> Key {
        Key::from(n.to_be_bytes().as_slice())
    }

    proptest! {
        /// Every operation answers as a B-tree of the same rows does, across the move
        /// from the vector to the tree.
        #[test]
        fn answers_as_a_btree_does(ops in prop::collection::vec((0u8..4, 0u16..400), 0..700)) {
            let mut set = KeyedRows::default();
            let mut model: BTreeMap<Key, RowId> = BTreeMap::new();
            for (op, n) in ops {
                let key = k(n);
                match op {
                    0 | 1 => {
                        set.insert(key.clone(), RowId::from(n));
                        model.insert(key.clone(), RowId::from(n));
                    }
                    2 => prop_assert_eq!(set.remove(&key), model.remove(&key)),
                    _ => prop_assert_eq!(set.pop_last(), model.pop_last().map(|(_, r)| r)),
                }
                prop_assert_eq!(set.len(), model.len());
                prop_assert_eq!(set.get(&key), model.get(&key).copied());
                prop_assert_eq!(set.last_key(), model.last_key_value().map(|(k, _)| k));
                let before = model
                    .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(&*key)))
                    .next_back()
                    .map(|(k, _)| k);
                prop_assert_eq!(set.last_before(&key), before);
                let after = model
                    .range::<[u8], _>((Bound::Excluded(&*key), Bound::Unbounded))
                    .next()
                    .map(|(k, r)| (k, *r));
                prop_assert_eq!(set.first_after(&key), after);
                prop_assert!(set.rows().eq(model.values().copied()));
                for lower in [Bound::Included(&*key), Bound::Excluded(&*key), Bound::Unbounded] {
                    let want = model.range::<[u8], _>((lower, Bound::Unbounded)).map(|(k, r)| (k, *r));
                    prop_assert!(set.range_from(lower).eq(want));
                }
            }
            let sorted: Vec<(Key, RowId)> = model.iter().map(|(k, r)| (k.clone(), *r)).collect();
            prop_assert!(KeyedRows::from_sorted(sorted).rows().eq(model.values().copied()));
        }
    }
}
