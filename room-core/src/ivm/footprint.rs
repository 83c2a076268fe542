//! A query's footprint: the distinct `(table, pk)` rows of its result tree
//! (docs/design/decisions.md, "Footprints"), kept as
//! a multiset refcount over every membership, plus the before-images of the keys touched
//! since the last drain — the input of op netting.
//!
//! The footprint holds no images of its own: a member's current image is the store's
//! (every member row is in the store once a change has been applied), and a key's image
//! at the last drain is captured when the key is first touched after it — the store's
//! image then, or, for the row the change being applied rewrites, that change's old
//! image ([`Before`]).

use alloc::vec::Vec;

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use crate::net_op::NetOp;
use crate::store::{Row, RowId, Store};

/// A footprint key: table index and row id.
pub(crate) type FpKey = (u32, RowId);

/// Where a touched key's image before the change being applied comes from.
pub(crate) struct Before<'a> {
    pub store: &'a Store,
    /// The row the change being applied rewrites, and its old image (`None` outside a
    /// change, or for an insert).
    pub changing: Option<(FpKey, Option<&'a Row>)>,
}

impl Before<'_> {
    /// Whether `key` is the row being rewritten (its image may differ from the last
    /// drain's without the footprint having been told yet).
    fn is_changing(&self, key: FpKey) -> bool {
        self.changing.is_some_and(|(k, _)| k == key)
    }

    /// The image `key` had before the change being applied.
    fn image(&self, key: FpKey) -> Option<Row> {
        match self.changing {
            Some((k, old)) if k == key => old.cloned(),
            _ => self.store.row(key.0 as usize, key.1).cloned(),
        }
    }
}

/// The footprint of one pipeline.
#[derive(Debug, Default)]
pub(crate) struct Footprint {
    /// Memberships per present row.
    pub members: HashMap<FpKey, u32>,
    /// Keys touched since the last drain, with their image at that drain (`None` =
    /// absent then).
    pub dirty: HashMap<FpKey, Option<Row>>,
}

impl Footprint {
    /// Heap bytes: the two maps' slots (the images are the store's).
    pub fn retained(&self) -> usize {
        self.members.allocation_size() + self.dirty.allocation_size()
    }

    /// Room for `additional` more members (and their dirty entries) without regrowing.
    pub fn reserve(&mut self, additional: usize) {
        self.members.reserve(additional);
        self.dirty.reserve(additional);
    }

    /// One more membership of `(table, rid)`.
    pub fn enter(&mut self, table: usize, rid: RowId, before: &Before<'_>) {
        let key = (table as u32, rid);
        match self.members.entry(key) {
            Entry::Occupied(mut e) => {
                *e.get_mut() += 1;
                if before.is_changing(key) {
                    self.dirty.entry(key).or_insert_with(|| before.image(key));
                }
            }
            Entry::Vacant(v) => {
                v.insert(1);
                self.dirty.entry(key).or_insert(None);
            }
        }
    }

    /// One membership fewer.
    pub fn leave(&mut self, table: usize, rid: RowId, before: &Before<'_>) {
        let key = (table as u32, rid);
        if let Entry::Occupied(mut e) = self.members.entry(key) {
            let count = e.get_mut();
            *count -= 1;
            if *count == 0 {
                e.remove();
                self.dirty.entry(key).or_insert_with(|| before.image(key));
            } else if before.is_changing(key) {
                self.dirty.entry(key).or_insert_with(|| before.image(key));
            }
        }
    }

    /// A present row's image changed in place.
    pub fn image(&mut self, table: usize, rid: RowId, before: &Before<'_>) {
        let key = (table as u32, rid);
        if self.members.contains_key(&key) {
            self.dirty.entry(key).or_insert_with(|| before.image(key));
        }
    }

    /// The current image of every member (the store's), by table and row id: rows a
    /// snapshot loaded in key order come out in key order, which the op sort that
    /// follows then merely checks.
    pub fn rows<'s>(&'s self, store: &'s Store) -> impl Iterator<Item = (u32, &'s Row)> + 's {
        let mut keys: Vec<FpKey> = self.members.keys().copied().collect();
        keys.sort_unstable();
        keys.into_iter()
            .filter_map(|(t, rid)| store.row(t as usize, rid).map(|r| (t, r)))
    }

    /// Every member's image at the last drain: a touched key's before-image (absent
    /// then: left out), an untouched member's current one. What a subscriber joining
    /// now holds until the next drain brings it the changes since.
    pub fn drained_rows<'s>(
        &'s self,
        store: &'s Store,
    ) -> impl Iterator<Item = (u32, &'s Row)> + 's {
        let current = self
            .members
            .keys()
            .filter(|k| !self.dirty.contains_key(*k))
            .filter_map(|&(t, rid)| store.row(t as usize, rid).map(|r| (t, r)));
        let before = self
            .dirty
            .iter()
            .filter_map(|(&(t, _), image)| image.as_ref().map(|r| (t, r)));
        current.chain(before)
    }

    /// Takes the net changes since the last drain as ops (unsorted; unchanged keys
    /// dropped).
    pub fn take_changes(&mut self, store: &Store) -> Vec<NetOp> {
        let mut out = Vec::with_capacity(self.dirty.len());
        for (key, before) in self.dirty.drain() {
            let after = if self.members.contains_key(&key) {
                store.row(key.0 as usize, key.1).cloned()
            } else {
                None
            };
            let table = &store.table(key.0 as usize).schema.name;
            out.extend(NetOp::between(table, before, after));
        }
        // A burst of changes leaves no large table behind on a standing query.
        if self.dirty.capacity() > 64 {
            self.dirty = HashMap::new();
        }
        out
    }

    /// Whether anything was touched since the last drain.
    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }
}
