//! The primary-key index: row ids in a hash table hashed by their encoded primary key.
//!
//! The table holds ids only (4 bytes a slot, not a copy of each key): a probe hashes the
//! encoded key it looks for and compares it with the candidates' keys, encoded from
//! their rows. The key bytes of the row being inserted or looked up are at hand anyway,
//! and a probe meets one or two candidates.

use alloc::vec::Vec;
use core::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};

use crate::keys::cells_key_into;
use crate::value::Cells;

use super::{Row, RowId};

/// Row ids by primary key.
#[derive(Default)]
pub(crate) struct PkIndex {
    ids: HashTable<RowId>,
    hasher: DefaultHashBuilder,
    /// The key of a candidate, encoded for a comparison (taken and put back).
    probe: core::cell::Cell<Vec<u8>>,
}

impl core::fmt::Debug for PkIndex {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PkIndex")
            .field("len", &self.ids.len())
            .finish()
    }
}

/// The live row of `id` in the slab (present for every id the index holds).
fn row_of(rows: &[Option<Row>], id: RowId) -> Option<&Row> {
    rows.get(id as usize).and_then(Option::as_ref)
}

/// The hash of stored row `id`'s encoded key (a table growing re-hashes what it holds).
fn stored_hash(
    hasher: &DefaultHashBuilder,
    probe: &core::cell::Cell<Vec<u8>>,
    rows: &[Option<Row>],
    pk: &[usize],
    id: RowId,
) -> u64 {
    let mut buf = probe.take();
    buf.clear();
    if let Some(row) = row_of(rows, id) {
        cells_key_into(&mut buf, row, pk);
    }
    let hash = hasher.hash_one(buf.as_slice());
    probe.set(buf);
    hash
}

impl PkIndex {
    /// Heap bytes: the id table and the probe buffer.
    pub(crate) fn retained(&self) -> usize {
        let probe = self.probe.take();
        let n = probe.capacity();
        self.probe.set(probe);
        self.ids.allocation_size() + n
    }
}

impl PkIndex {
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Whether `id`'s row has the encoded primary key `key`.
    fn matches(&self, rows: &[Option<Row>], pk: &[usize], id: RowId, key: &[u8]) -> bool {
        let Some(row) = row_of(rows, id) else {
            return false;
        };
        let mut buf = self.probe.take();
        cells_key_into(&mut buf, row, pk);
        let same = buf == key;
        self.probe.set(buf);
        same
    }

    /// The id of the row with encoded primary key `key`.
    pub fn get(&self, rows: &[Option<Row>], pk: &[usize], key: &[u8]) -> Option<RowId> {
        self.ids
            .find(self.hash(key), |&id| self.matches(rows, pk, id, key))
            .copied()
    }

    /// The id of the row whose primary key equals `probe`'s (a full-width image whose
    /// encoded key is `key`): candidates are compared cell by cell, not re-encoded.
    pub fn get_like<R: Cells + ?Sized>(
        &self,
        rows: &[Option<Row>],
        pk: &[usize],
        key: &[u8],
        probe: &R,
    ) -> Option<RowId> {
        self.ids
            .find(self.hash(key), |&id| {
                row_of(rows, id).is_some_and(|row| pk.iter().all(|&c| row.get(c) == probe.cell(c)))
            })
            .copied()
    }

    /// Records `id` under `key` unless a row has that key already (`false`).
    pub fn insert(&mut self, rows: &[Option<Row>], pk: &[usize], key: &[u8], id: RowId) -> bool {
        let hash = self.hash(key);
        let (ids, hasher, probe) = (&mut self.ids, &self.hasher, &self.probe);
        let eq = |&other: &RowId| {
            row_of(rows, other).is_some_and(|row| {
                let mut buf = probe.take();
                cells_key_into(&mut buf, row, pk);
                let same = buf == key;
                probe.set(buf);
                same
            })
        };
        let rehash = |&other: &RowId| stored_hash(hasher, probe, rows, pk, other);
        match ids.entry(hash, eq, rehash) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(id);
                true
            }
        }
    }

    /// Makes room for `additional` more ids without growing on the way (a snapshot's
    /// rows are counted first: each growth re-encodes every key held).
    pub fn reserve(&mut self, rows: &[Option<Row>], pk: &[usize], additional: usize) {
        let (hasher, probe) = (&self.hasher, &self.probe);
        self.ids.reserve(additional, |&other: &RowId| {
            stored_hash(hasher, probe, rows, pk, other)
        });
    }

    /// Forgets row `id`, whose encoded key is `key`.
    pub fn remove(&mut self, key: &[u8], id: RowId) {
        if let Ok(entry) = self.ids.find_entry(self.hash(key), |&other| other == id) {
            entry.remove();
        }
    }

    /// The ids, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = RowId> + '_ {
        self.ids.iter().copied()
    }
}
