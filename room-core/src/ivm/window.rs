//! A windowed level's reads of its table ordering: the rows it holds past its window,
//! read on when removals leave it short, and the first read of a new subscription.
//!
//! A windowed level (a root with a `limit`) holds a prefix of its qualifying rows in
//! sort order — the window and some rows past it ([`Windowed::target`]) — read from a
//! table ordering or, for a guard value with few rows, through the guard's index.

use alloc::vec::Vec;
use core::ops::Bound;

use crate::keys::{join_key_into, sort_key_into, Key};
use crate::store::{Row, RowId, Store};

use super::node::Windowed;
use super::{Engine, NodeId};

/// The most rows of one window read that [`Engine::reserve_for_rows`] sizes maps for.
const RESERVE_MAX_ROWS: usize = 256;

impl Engine {
    /// Reads a windowed level's ordering on from its last held row (or from its first
    /// position when it holds none) until it holds [`Windowed::target`] rows or the
    /// ordering ends — then it holds every qualifying row (`complete`).
    pub(crate) fn read_window(&mut self, store: &Store, n: NodeId) {
        let mut found: Vec<(RowId, Row)> = Vec::new();
        // The sort keys of `found`, when the read can take them from the ordering.
        let mut keys: Vec<Key> = Vec::new();
        let (complete, first_read) = {
            let node = self.node(n);
            let (Some(w), Some(limit)) = (&node.window, node.limit) else {
                return;
            };
            let part = node.parts.get(&[][..]);
            let held = part.map_or(0, |p| p.len());
            let want = Windowed::target(limit).saturating_sub(held);
            let last = part.and_then(|p| p.last_key());
            let table = store.table(node.table);
            // A held row the table has at a new place waits for its own refresh.
            let fresh = |rid: &RowId| !node.rows.contains(rid);
            let qualifying = |rid: RowId| {
                table
                    .row(rid)
                    .filter(|row| self.qualifies(node, row))
                    .map(|row| (rid, row.clone()))
            };
            match (
                w.ordering,
                &node.guard,
                node.guard_index.map(|i| i as usize),
            ) {
                (Some(o), _, _) => {
                    let Some(ordering) = table.ordering(o as usize) else {
                        return;
                    };
                    // A first read into an empty partition, from an ordering that
                    // sorts as the level does (the one built for it): its keys are the
                    // level's, taken as they are ([`Engine::enter_sorted`]).
                    let first_read = held == 0 && *ordering.order == *node.order;
                    // Where reading resumes: past the last row seen, once a partial
                    // ordering had to be widened.
                    let mut seen: Option<Key> = None;
                    loop {
                        let lower = match (&seen, last) {
                            (Some(seen), _) => Bound::Excluded(seen.as_bytes()),
                            (None, Some(last)) => Bound::Excluded(last.as_bytes()),
                            (None, None) => Bound::Included(&w.from[..]),
                        };
                        let held = ordering.held();
                        let mut at = None;
                        let mut full = false;
                        for (key, rid) in held.map.range_from(lower) {
                            if found.len() >= want {
                                full = true;
                                break;
                            }
                            at = Some(key);
                            if !fresh(&rid) {
                                continue;
                            }
                            if let Some(entry) = qualifying(rid) {
                                found.push(entry);
                                if first_read {
                                    keys.push(key.clone());
                                }
                            }
                        }
                        if full {
                            break (false, first_read);
                        }
                        if held.bound.is_none() {
                            break (true, first_read);
                        }
                        // The held rows ran out before the ordering's end: widen it and
                        // read on from the last row seen.
                        if let Some(at) = at {
                            seen = Some(at.clone());
                        }
                        drop(held);
                        let mut scratch = self.scratch.take();
                        table.widen_ordering(o as usize, &mut scratch);
                        self.scratch.set(scratch);
                    }
                }
                (None, Some((_, v)), Some(ix)) => {
                    // Few rows: the guard value's qualifying rows past the last held
                    // one; sorted only when more than wanted.
                    let mut key = self.scratch.take();
                    join_key_into(&mut key, core::slice::from_ref(v), &[0]);
                    let bounded = last.is_some() || !w.from.is_empty();
                    let mut sk = Vec::new();
                    let mut past: Vec<(RowId, Row)> = Vec::new();
                    for rid in table.index_lookup(ix, &key).filter(fresh) {
                        if bounded {
                            let Some(row) = table.row(rid) else { continue };
                            sort_key_into(&mut sk, row, &node.order);
                            let after = match last {
                                Some(last) => sk.as_slice() > last.as_bytes(),
                                None => sk.as_slice() >= &w.from[..],
                            };
                            if !after {
                                continue;
                            }
                        }
                        past.extend(qualifying(rid));
                    }
                    self.scratch.set(key);
                    if past.len() <= want {
                        found = past;
                        (true, false)
                    } else {
                        let mut keyed: Vec<(Key, RowId, Row)> = past
                            .into_iter()
                            .map(|(rid, row)| {
                                sort_key_into(&mut sk, &row, &node.order);
                                (Key::from(sk.as_slice()), rid, row)
                            })
                            .collect();
                        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                        found.extend(keyed.into_iter().take(want).map(|(_, rid, row)| (rid, row)));
                        (false, false)
                    }
                }
                _ => return,
            }
        };
        if let Some(w) = self.node_mut(n).window.as_mut() {
            w.complete = complete;
        }
        self.reserve_for_rows(n, found.len());
        if first_read && !found.is_empty() {
            self.enter_sorted(store, n, keys, found);
        } else {
            for (rid, row) in found {
                self.enter_part(store, n, rid, row, true);
            }
        }
    }

    /// Holds the rows of a first window read at once, as [`Engine::enter_part`] of each
    /// in turn would: the level's partition is empty, `found` are qualifying rows it does
    /// not hold, in sort order, and `keys` their sort keys. The partition is filled in
    /// one step, and the first `limit` rows enter the window — members, in order, when
    /// the partition is demanded. Saves keying each row again and a sorted insert per
    /// row, the larger part of a first query's window read.
    fn enter_sorted(&mut self, store: &Store, n: NodeId, keys: Vec<Key>, found: Vec<(RowId, Row)>) {
        debug_assert_eq!(keys.len(), found.len());
        let (window, demanded, exists) = {
            let node = self.node_mut(n);
            node.rows.extend(found.iter().map(|&(rid, _)| rid));
            let limit = node.limit;
            let entries: Vec<(Key, RowId)> = keys
                .into_iter()
                .zip(found.iter().map(|&(rid, _)| rid))
                .collect();
            node.parts.get_or_default(&[]).fill_sorted(entries, limit);
            let window = limit.map_or(found.len(), |l| found.len().min(l as usize));
            let demanded = node.demand.get(&[][..]).is_some_and(|d| *d > 0);
            (window, demanded, node.is_exists())
        };
        for &(rid, _) in &found {
            self.note_refreshed(n, rid);
        }
        if demanded {
            for (rid, row) in &found[..window] {
                self.member_enter(store, n, *rid, row);
            }
        }
        if exists {
            self.queue_parents(store, n, &[]);
        }
        self.trim_part(n, &[]);
        self.trim_window(n);
    }

    /// Room for `rows` more members of node `n` in every map they will enter: the
    /// node's rows, its pipeline's footprint (each row and a row of each demanded
    /// child), and each demanded child's demand. A window read enters
    /// its rows one by one; without this the maps grow step by step (a first query of
    /// limit 50 regrew them about twenty times). At most [`RESERVE_MAX_ROWS`] rows are
    /// reserved for: children may bring fewer rows than their parents (or none), and a
    /// large window's maps regrow only a few times past that.
    fn reserve_for_rows(&mut self, n: NodeId, rows: usize) {
        if rows < 2 {
            return;
        }
        let rows = rows.min(RESERVE_MAX_ROWS);
        let node = self.node_mut(n);
        node.rows.reserve(rows);
        let pipeline = node.pipeline;
        let children = node.demanded_children.len();
        for i in 0..children {
            let c = self.node(n).demanded_children[i];
            let child = self.node_mut(c);
            // Every demanded key gets a demand entry; a partition only if it has rows
            // — most do under a `related` level (its map is sized for all of them, not
            // regrown a few times over), few may under an EXISTS one.
            child.demand.reserve(rows);
            if !child.is_exists() {
                child.parts.reserve(rows);
            }
        }
        self.pipeline_mut(pipeline)
            .footprint
            .reserve(rows.saturating_mul(1 + children));
    }

    /// Drops a windowed level's held rows past [`Windowed::max`] back to
    /// [`Windowed::target`] (all past the window: nothing is emitted).
    pub(super) fn trim_window(&mut self, n: NodeId) {
        let node = self.node_mut(n);
        let (Some(w), Some(limit)) = (node.window.as_mut(), node.limit) else {
            return;
        };
        let Some(part) = node.parts.get_mut(&[][..]) else {
            return;
        };
        if part.len() <= Windowed::max(limit) {
            return;
        }
        while part.len() > Windowed::target(limit) {
            match part.pop_past_window(limit) {
                Some(rid) => {
                    node.rows.remove(&rid);
                }
                None => break,
            }
        }
        w.complete = false;
    }
}
