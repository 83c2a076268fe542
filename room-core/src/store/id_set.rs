//! The rows of one secondary-index key: most keys of a correlation column (an issue's
//! comments, a user's issues) hold one row or a few, so those are kept without a hash
//! set — one inline id, or a short list — and only a key with many rows gets a set.
//!
//! An index build leaves every key's rows as a list, however many: filling a hash set
//! row by row cost more than the rest of a build (a hashed insert per row), and most
//! keys of a freshly built index are only read. A list past [`FEW`] becomes a set at its
//! first change, so writes stay constant-time from then on.

use alloc::vec::Vec;

use hashbrown::HashSet;

use super::RowId;

/// A list's longest length once it has been changed; a change to a longer one (only an
/// index build makes those) turns it into a set.
const FEW: usize = 16;

/// Row ids under one index key (never empty while in an index).
#[derive(Debug, Clone)]
pub(crate) enum IdSet {
    One(RowId),
    /// Distinct ids; at most [`FEW`] unless an index build made it and nothing has
    /// changed it since.
    Few(Vec<RowId>),
    Many(HashSet<RowId>),
}

impl IdSet {
    /// A set of one row.
    pub fn new(id: RowId) -> IdSet {
        IdSet::One(id)
    }

    /// The set of `ids` (distinct, not empty), as a build leaves it: see
    /// [`IdSet::push_new`].
    pub fn from_ids(ids: &[RowId]) -> IdSet {
        match ids {
            [id] => IdSet::One(*id),
            _ => IdSet::Few(ids.to_vec()),
        }
    }

    /// A list past [`FEW`] as a set, before a change.
    fn make_changeable(&mut self) {
        if let IdSet::Few(v) = self {
            if v.len() > FEW {
                let mut set = HashSet::with_capacity(v.len() + 1);
                set.extend(v.iter().copied());
                *self = IdSet::Many(set);
            }
        }
    }

    /// Adds `id` (no duplicate is kept).
    pub fn insert(&mut self, id: RowId) {
        self.make_changeable();
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

    /// Adds `id`, known not to be in the set, while an index is built row by row: the
    /// list grows past [`FEW`] here, as [`IdSet::from_ids`] would have made it.
    pub fn push_new(&mut self, id: RowId) {
        match self {
            IdSet::One(x) => *self = IdSet::Few(alloc::vec![*x, id]),
            IdSet::Few(v) => v.push(id),
            IdSet::Many(s) => {
                s.insert(id);
            }
        }
    }

    /// Removes `id`; whether the set is empty now.
    pub fn remove(&mut self, id: RowId) -> bool {
        self.make_changeable();
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
        /// A set built by `push_new` (or `from_ids`) holds the same ids as one built by
        /// `insert`, and goes on behaving as a set through inserts and removals.
        #[test]
        fn a_built_set_equals_an_inserted_one(
            n in 1u32..60,
            changes in proptest::collection::vec((any::<bool>(), 0u32..80), 0..8),
            bulk in any::<bool>(),
        ) {
            let mut built = IdSet::new(0);
            let mut inserted = IdSet::new(0);
            for id in 1..n {
                built.push_new(id);
                inserted.insert(id);
            }
            if bulk {
                built = IdSet::from_ids(&(0..n).collect::<Vec<_>>());
            }
            let mut model: BTreeSet<RowId> = (0..n).collect();
            for (add, id) in changes {
                if model.len() == 1 && !add {
                    continue;
                }
                if add {
                    built.insert(id);
                    inserted.insert(id);
                    model.insert(id);
                } else {
                    prop_assert_eq!(built.remove(id), false);
                    inserted.remove(id);
                    model.remove(&id);
                }
                prop_assert!(built.len() <= FEW || matches!(built, IdSet::Many(_)),
                    "a changed list is at most FEW long");
            }
            let a: BTreeSet<RowId> = built.iter().collect();
            let b: BTreeSet<RowId> = inserted.iter().collect();
            prop_assert_eq!(&a, &model);
            prop_assert_eq!(&b, &model);
            prop_assert_eq!(built.len(), model.len());
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
