//! Orderings: a table's rows in a query's sort order, shared by every query that reads
//! a window of that order.
//!
//! An ordering is keyed by the rows' cells at its **prefix** columns (ascending; a query's
//! equality guard, so one ordering serves every guard value) followed by their sort key
//! under its order (which ends with the primary key, so keys are unique). A windowed
//! query seeks to `prefix ++ position` and reads forward: hydration and backfill touch
//! the rows they return, not the table.
//!
//! The table keeps its orderings current on every write. An ordering outlives its last
//! user (a re-subscribe, or another query of the same order, finds it built), but at most
//! [`MAX_IDLE_ORDERINGS`] idle ones are kept per table; the one idle longest goes first.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::keys::{push_cell, Key};
use crate::value::Value;

use super::RowId;

/// How many orderings without a user a table keeps built.
pub(crate) const MAX_IDLE_ORDERINGS: usize = 4;

/// One ordering of a table's rows.
#[derive(Debug)]
pub(crate) struct Ordering {
    pub prefix: Box<[usize]>,
    pub order: Box<[(usize, bool)]>,
    users: u32,
    /// When the last user left (the table's release counter), for eviction.
    idle_since: u64,
    pub map: BTreeMap<Key, RowId>,
}

impl Ordering {
    /// Builds an ordering over `rows` (the table's slab).
    pub fn build<'a>(
        prefix: &[usize],
        order: &[(usize, bool)],
        rows: impl Iterator<Item = (RowId, &'a [Value])>,
        scratch: &mut Vec<u8>,
    ) -> Ordering {
        let mut entries: Vec<(Key, RowId)> = rows
            .map(|(id, row)| {
                encode(scratch, prefix, order, row);
                (Key::from(scratch.as_slice()), id)
            })
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ordering {
            prefix: prefix.into(),
            order: order.into(),
            users: 1,
            idle_since: 0,
            // Sorted input: the map is built by appending.
            map: entries.into_iter().collect(),
        }
    }

    /// Whether this ordering is the one for `(prefix, order)`.
    pub fn is(&self, prefix: &[usize], order: &[(usize, bool)]) -> bool {
        &*self.prefix == prefix && &*self.order == order
    }

    /// One more user.
    pub fn acquire(&mut self) {
        self.users += 1;
    }

    /// One user fewer; `tick` stamps the moment it went idle.
    pub fn release(&mut self, tick: u64) {
        self.users = self.users.saturating_sub(1);
        if self.users == 0 {
            self.idle_since = tick;
        }
    }

    /// Whether no query uses it, and since when.
    pub fn idle(&self) -> Option<u64> {
        (self.users == 0).then_some(self.idle_since)
    }

    /// Whether a change from `old` to `new` can move the row in this ordering.
    fn moves(&self, old: &[Value], new: &[Value]) -> bool {
        self.prefix.iter().any(|&c| old[c] != new[c])
            || self.order.iter().any(|&(c, _)| old[c] != new[c])
    }

    pub fn insert(&mut self, id: RowId, row: &[Value], scratch: &mut Vec<u8>) {
        encode(scratch, &self.prefix, &self.order, row);
        self.map.insert(Key::from(scratch.as_slice()), id);
    }

    pub fn remove(&mut self, row: &[Value], scratch: &mut Vec<u8>) {
        encode(scratch, &self.prefix, &self.order, row);
        self.map.remove(scratch.as_slice());
    }

    pub fn replace(&mut self, id: RowId, old: &[Value], new: &[Value], scratch: &mut Vec<u8>) {
        if self.moves(old, new) {
            self.remove(old, scratch);
            self.insert(id, new, scratch);
        }
    }
}

/// The ordering key of `row`: its prefix cells, then its sort key (`out` cleared first).
pub(crate) fn encode(out: &mut Vec<u8>, prefix: &[usize], order: &[(usize, bool)], row: &[Value]) {
    out.clear();
    for &c in prefix {
        push_cell(out, &row[c], false);
    }
    for &(c, desc) in order {
        push_cell(out, &row[c], desc);
    }
}
