//! The rows of one secondary-index key: most keys of a correlation column (an issue's
//! comments, a user's issues) hold one row or a few, so those are kept without a hash
//! set — one inline id, or a short list — and only a key with many rows gets a set.
//! Building an index over a table then costs an allocation per crowded key, not per key.

use alloc::vec::Vec;

use hashbrown::HashSet;

use super::RowId;

/// A short list's longest length; one more row turns it into a set.
const FEW: usize = 16;

/// Row ids under one index key (never empty while in an index).
#[derive(Debug, Clone)]
pub(crate) enum IdSet {
    One(RowId),
    Few(Vec<RowId>),
    Many(HashSet<RowId>),
}

impl IdSet {
    /// A set of one row.
    pub fn new(id: RowId) -> IdSet {
        IdSet::One(id)
    }

    /// The set of `ids` (distinct, not empty), in the form a build of
    /// [`IdSet::push_new`] calls and [`IdSet::settle`] leaves.
    pub fn from_ids(ids: &[RowId]) -> IdSet {
        match ids {
            [id] => IdSet::One(*id),
            _ if ids.len() <= FEW => IdSet::Few(ids.to_vec()),
            _ => {
                let mut set = HashSet::with_capacity(ids.len());
                set.extend(ids.iter().copied());
                IdSet::Many(set)
            }
        }
    }

    /// Adds `id` (no duplicate is kept).
    pub fn insert(&mut self, id: RowId) {
        match self {
            IdSet::One(x) if *x == id => {}
            IdSet::One(x) => *self = IdSet::Few(alloc::vec![*x, id]),
            IdSet::Few(v) if v.contains(&id) => {}
            IdSet::Few(v) if v.len() < FEW => v.push(id),
            IdSet::Few(v) => {
                let mut set: HashSet<RowId> = v.drain(..).collect();
                set.insert(id);
                *self = IdSet::Many(set);
            }
            IdSet::Many(s) => {
                s.insert(id);
            }
        }
    }

    /// Adds `id`, known not to be in the set, while an index is built: a short list
    /// grows past [`FEW`] here; [`IdSet::settle`] makes it a set once the build is done,
    /// sized at once instead of grown row by row.
    pub fn push_new(&mut self, id: RowId) {
        match self {
            IdSet::One(x) => *self = IdSet::Few(alloc::vec![*x, id]),
            IdSet::Few(v) => v.push(id),
            IdSet::Many(s) => {
                s.insert(id);
            }
        }
    }

    /// Ends a build of [`IdSet::push_new`] calls: a list longer than [`FEW`] becomes a
    /// set.
    pub fn settle(&mut self) {
        if let IdSet::Few(v) = self {
            if v.len() > FEW {
                let mut set = HashSet::with_capacity(v.len());
                set.extend(v.iter().copied());
                *self = IdSet::Many(set);
            }
        }
    }

    /// Removes `id`; whether the set is empty now.
    pub fn remove(&mut self, id: RowId) -> bool {
        match self {
            IdSet::One(x) => *x == id,
            IdSet::Few(v) => {
                if let Some(at) = v.iter().position(|&x| x == id) {
                    v.swap_remove(at);
                }
                if v.len() == 1 {
                    *self = IdSet::One(v[0]);
                }
                false
            }
            IdSet::Many(s) => {
                s.remove(&id);
                s.is_empty()
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            IdSet::One(_) => 1,
            IdSet::Few(v) => v.len(),
            IdSet::Many(s) => s.len(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = RowId> + '_ {
        let (one, few, many) = match self {
            IdSet::One(x) => (Some(*x), None, None),
            IdSet::Few(v) => (None, Some(v.iter().copied()), None),
            IdSet::Many(s) => (None, None, Some(s.iter().copied())),
        };
        one.into_iter()
            .chain(few.into_iter().flatten())
            .chain(many.into_iter().flatten())
    }

    /// Heap bytes.
    pub fn allocation_size(&self) -> usize {
        match self {
            IdSet::One(_) => 0,
            IdSet::Few(v) => crate::retained::vec(v),
            IdSet::Many(s) => s.allocation_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use proptest::prelude::*;

    proptest! {
        /// A set built by `push_new` and settled holds the same ids as one built by
        /// `insert`, in the same representation, and goes on behaving as a set.
        #[test]
        fn a_built_set_equals_an_inserted_one(n in 1u32..60, extra in 0u32..80) {
            let mut built = IdSet::new(0);
            let mut inserted = IdSet::new(0);
            for id in 1..n {
                built.push_new(id);
                inserted.insert(id);
            }
            built.settle();
            prop_assert_eq!(
                core::mem::discriminant(&built),
                core::mem::discriminant(&inserted)
            );
            built.insert(extra);
            inserted.insert(extra);
            let a: BTreeSet<RowId> = built.iter().collect();
            let b: BTreeSet<RowId> = inserted.iter().collect();
            prop_assert_eq!(a, b);
            prop_assert_eq!(built.len(), inserted.len());
        }

        #[test]
        fn behaves_as_a_set(ops in proptest::collection::vec((any::<bool>(), 0u32..40), 1..200)) {
            let (first_add, first) = ops[0];
            let _ = first_add;
            let mut s = IdSet::new(first);
            let mut model: BTreeSet<RowId> = BTreeSet::from([first]);
            for (add, id) in ops.into_iter().skip(1) {
                if model.is_empty() {
                    s = IdSet::new(id);
                    model.insert(id);
                    continue;
                }
                if add {
                    s.insert(id);
                    model.insert(id);
                } else {
                    let empty = s.remove(id);
                    model.remove(&id);
                    prop_assert_eq!(empty, model.is_empty());
                }
                if !model.is_empty() {
                    prop_assert_eq!(s.len(), model.len());
                    let got: BTreeSet<RowId> = s.iter().collect();
                    prop_assert_eq!(&got, &model);
                }
            }
        }
    }
}
