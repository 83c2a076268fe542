//! The partitions of a lazy (`related`) level: read when first demanded, and — under a
//! `limit` — held only as a front.
//!
//! A `related` child with a limit shows the first `limit` rows of each partition a
//! parent demands, but a partition can be large (a user's issues). Reading it whole
//! would key and sort every row to show ten. Instead the level holds a *front* of each
//! partition: the qualifying rows whose key is at most its last held key, at least the
//! window's worth. The invariant, per partition:
//!
//! - whole (not partial): every qualifying row of the partition is held;
//! - partial: exactly the qualifying rows with key `<=` the last held key are held, and
//!   at least `limit` of them, so the window is always right.
//!
//! What keeps it: a row that starts qualifying past the last held key of a partial
//! partition is not held ([`Engine::enter_part`]); a removal that leaves fewer than
//! `limit` rows reads on from the last held key ([`Engine::read_part`]); a front that
//! grows past [`Windowed::max`] drops its tail back to [`Windowed::target`]
//! ([`Engine::trim_part`]), rows past the window that nobody sees.

use alloc::vec::Vec;

use crate::keys::{keep_front, keyed_by_prefix, sort_key_into, sort_prefix};
use crate::store::{RowId, Store};

use super::node::{Node, Windowed};
use super::{Engine, NodeId};

/// The largest sort-prefix buffer [`Engine::materialize`] keeps for the next read.
const MAX_KEPT_PREFIXES: usize = 1024;

impl Engine {
    /// How many rows a front of lazy node `n` keeps, and past how many held rows its
    /// tail is dropped (`None`: the node holds whole partitions — it is not lazy or has
    /// no positive limit).
    fn front_size(&self, n: NodeId) -> Option<(usize, usize)> {
        let node = self.node(n);
        match node.limit {
            Some(l) if l > 0 && node.is_lazy() => {
                let target = self
                    .front_rows
                    .map_or(Windowed::target(l), |r| r.max(l as usize));
                Some((target, target + l as usize))
            }
            _ => None,
        }
    }

    /// Reads partition `key` of lazy node `c` (its demand entry is present, at zero):
    /// the qualifying rows of the partition, found through the node's correlation
    /// index, are held — all of them, or a front (see the module docs). Nothing is a
    /// member yet, so no window event fires; the rows are keyed, sorted and put in the
    /// partition at once. (A row the node still holds in another partition — its
    /// correlation cell is changing — moves through [`Engine::refresh`].)
    pub(super) fn materialize(&mut self, store: &Store, c: NodeId, key: &[u8]) {
        let target = self.front_size(c).map(|(t, _)| t);
        let mut prefixes = core::mem::take(&mut self.prefixes);
        let node = self.node(c);
        let Some(ix) = node.child_index else {
            self.prefixes = prefixes;
            return;
        };
        let table = store.table(node.table);
        let mut sk = self.scratch.take();
        let mut moving: Vec<RowId> = Vec::new();
        for rid in table.index_lookup(ix as usize, key) {
            if node.rows.contains(&rid) {
                moving.push(rid);
                continue;
            }
            // The index finds rows by their correlation cells: each is in partition
            // `key`, which the node now holds.
            let Some(row) = table.row(rid).filter(|r| self.qualifies(node, r)) else {
                continue;
            };
            prefixes.push((sort_prefix(&mut sk, row, &node.order), rid));
        }
        let whole = target.is_none_or(|t| keep_front(&mut prefixes, t));
        let fresh = keyed_by_prefix(&mut prefixes, |rid| table.row(rid), &node.order, &mut sk);
        self.scratch.set(sk);
        prefixes.clear();
        if prefixes.capacity() <= MAX_KEPT_PREFIXES {
            self.prefixes = prefixes;
        }
        // The row the change being applied rewrites, if this node reads it now: the
        // node then holds its new image (as [`Engine::note_refreshed`] records).
        let changing = self.changing_row(self.node(c).table);
        let refreshed = changing.is_some_and(|r| fresh.iter().any(|&(_, rid)| rid == r));
        let stamp = self.change_no;
        let node = self.node_mut(c);
        node.rows.extend(fresh.iter().map(|&(_, rid)| rid));
        if refreshed {
            node.refreshed_in = stamp;
        }
        let limit = node.limit;
        if !fresh.is_empty() {
            let part = node.parts.get_or_default(key);
            part.fill_sorted(fresh, limit);
            part.set_partial(!whole);
        }
        for rid in moving {
            self.refresh(store, c, rid);
        }
    }

    /// After a removal from partition `key` of node `n`: a partial partition left with
    /// fewer rows than its window reads on.
    pub(super) fn after_leave(&mut self, store: &Store, n: NodeId, key: &[u8], was_partial: bool) {
        let node = self.node(n);
        let (true, Some(limit)) = (was_partial, node.limit) else {
            return;
        };
        let held = node.parts.get(key).map_or(0, |p| p.len());
        if held < limit as usize {
            self.read_part(store, n, key);
        }
    }

    /// Reads partition `key` of lazy node `n` on from its last held row (from its
    /// start when it holds none) until it holds [`Windowed::target`] rows, or all of
    /// them — then it is whole again. The rows enter one by one, so the window reports
    /// the ones that join it.
    pub(super) fn read_part(&mut self, store: &Store, n: NodeId, key: &[u8]) {
        let Some((target, _)) = self.front_size(n) else {
            return;
        };
        let node = self.node(n);
        let Some(ix) = node.child_index else {
            return;
        };
        let part = node.parts.get(key);
        let held = part.map_or(0, |p| p.len());
        let want = target.saturating_sub(held);
        let last: Option<Vec<u8>> = part
            .and_then(|p| p.last_key())
            .map(|k| k.as_bytes().to_vec());
        let table = store.table(node.table);
        let mut sk = self.scratch.take();
        let mut prefixes: Vec<(u64, RowId)> = Vec::new();
        for rid in table.index_lookup(ix as usize, key) {
            if node.rows.contains(&rid) {
                continue;
            }
            let Some(row) = table.row(rid).filter(|r| self.qualifies(node, r)) else {
                continue;
            };
            if let Some(last) = &last {
                // Within the front: only a row being refreshed right now, which
                // enters by itself.
                sort_key_into(&mut sk, row, &node.order);
                if sk.as_slice() <= last.as_slice() {
                    continue;
                }
            }
            prefixes.push((sort_prefix(&mut sk, row, &node.order), rid));
        }
        let whole = keep_front(&mut prefixes, want);
        let fresh = keyed_by_prefix(&mut prefixes, |rid| table.row(rid), &node.order, &mut sk);
        self.scratch.set(sk);
        let t = node.table;
        let mut trimmed = false;
        for (_, rid) in fresh {
            let Some(row) = store.row(t, rid) else {
                continue;
            };
            let before = self.node(n).parts.get(key).map_or(0, |p| p.len());
            self.enter_part(store, n, rid, row.clone(), true);
            // Rows that tie on their prefix are read together, so the front may grow
            // past its maximum and have its tail dropped on the way
            // ([`Engine::trim_part`]). The rows still to come sort after the one just
            // read, past the trimmed front: holding them would leave out the rows the
            // trim dropped between them and the front. The front is partial then.
            if self.node(n).parts.get(key).map_or(0, |p| p.len()) <= before {
                trimmed = true;
                break;
            }
        }
        if let Some(p) = self.node_mut(n).parts.get_mut(key) {
            p.set_partial(!whole || trimmed);
        }
    }

    /// Drops the tail of partition `key` of lazy node `n` past its front's maximum
    /// ([`Windowed::max`]) back to its target ([`Windowed::target`]) rows (all past the window: nothing is emitted); the
    /// partition is partial then.
    pub(super) fn trim_part(&mut self, n: NodeId, key: &[u8]) {
        let Some((target, max)) = self.front_size(n) else {
            return;
        };
        let node = self.node_mut(n);
        let Some(limit) = node.limit else {
            return;
        };
        let Some(part) = node.parts.get_mut(key) else {
            return;
        };
        if part.len() <= max {
            return;
        }
        while part.len() > target {
            match part.pop_past_window(limit) {
                Some(rid) => {
                    node.rows.remove(&rid);
                }
                None => break,
            }
        }
        part.set_partial(true);
    }
}

/// Whether a row keyed `sort_key` that starts qualifying for partition `part_key` of
/// `node` lies past the partition's held front (then it is not held: a later read
/// finds it).
pub(super) fn past_front(node: &Node, part_key: &[u8], sort_key: &[u8]) -> bool {
    node.is_lazy()
        && node
            .parts
            .get(part_key)
            .filter(|p| p.is_partial())
            .and_then(|p| p.last_key())
            .is_some_and(|last| sort_key > last.as_bytes())
}
