//! A query's footprint: the distinct `(table, pk)` rows of its result tree (D4), kept as
//! a multiset refcount over every membership, plus the before-images of the keys touched
//! since the last drain — the input of op netting (D5).

use alloc::vec::Vec;

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use crate::store::{Row, RowId};

/// A footprint key: table index and row id.
pub(crate) type FpKey = (u32, RowId);

/// One present row.
#[derive(Debug)]
pub(crate) struct FpEntry {
    /// How many memberships reference the row.
    pub count: u32,
    /// The image the query currently holds.
    pub row: Row,
}

/// A net change of one key since the last drain: `(table, before, after)`.
pub(crate) type NetChange = (u32, Option<Row>, Option<Row>);

/// The footprint of one pipeline.
#[derive(Debug, Default)]
pub(crate) struct Footprint {
    pub members: HashMap<FpKey, FpEntry>,
    /// Keys touched since the last drain, with their image at that drain (`None` =
    /// absent then).
    pub dirty: HashMap<FpKey, Option<Row>>,
}

impl Footprint {
    /// Heap bytes: the two maps' slots (the images are the store's).
    pub fn retained(&self) -> usize {
        self.members.allocation_size() + self.dirty.allocation_size()
    }

    /// One more membership of `(table, rid)` with image `row`.
    pub fn enter(&mut self, table: usize, rid: RowId, row: &Row) {
        let key = (table as u32, rid);
        match self.members.entry(key) {
            Entry::Occupied(mut e) => {
                let e = e.get_mut();
                e.count += 1;
                if !Row::ptr_eq(&e.row, row) {
                    self.dirty.entry(key).or_insert_with(|| Some(e.row.clone()));
                    e.row = row.clone();
                }
            }
            Entry::Vacant(v) => {
                self.dirty.entry(key).or_insert(None);
                v.insert(FpEntry {
                    count: 1,
                    row: row.clone(),
                });
            }
        }
    }

    /// One membership fewer.
    pub fn leave(&mut self, table: usize, rid: RowId) {
        let key = (table as u32, rid);
        if let Entry::Occupied(mut e) = self.members.entry(key) {
            let entry = e.get_mut();
            entry.count -= 1;
            if entry.count == 0 {
                let (_, gone) = e.remove_entry();
                self.dirty.entry(key).or_insert(Some(gone.row));
            }
        }
    }

    /// A present row's image changed in place.
    pub fn image(&mut self, table: usize, rid: RowId, row: &Row) {
        let key = (table as u32, rid);
        if let Some(e) = self.members.get_mut(&key) {
            if !Row::ptr_eq(&e.row, row) {
                self.dirty.entry(key).or_insert_with(|| Some(e.row.clone()));
                e.row = row.clone();
            }
        }
    }

    /// Takes the net changes since the last drain (unsorted, unchanged keys dropped).
    pub fn take_changes(&mut self) -> Vec<NetChange> {
        let mut out = Vec::with_capacity(self.dirty.len());
        for (key, before) in self.dirty.drain() {
            let after = self.members.get(&key).map(|e| e.row.clone());
            match (&before, &after) {
                (None, None) => continue,
                (Some(b), Some(a)) if Row::ptr_eq(b, a) || b[..] == a[..] => continue,
                _ => {}
            }
            out.push((key.0, before, after));
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
