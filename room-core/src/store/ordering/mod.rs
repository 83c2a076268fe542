//! Orderings: the rows of a table that have one value in a guard column (or all rows),
//! in a query's sort order, shared by every query that reads a window of that order.
//!
//! A windowed query seeks into its ordering and reads forward: hydration and backfill
//! touch the rows they return, not the table. An ordering is keyed by the rows' sort key
//! under its order, which ends with the primary key, so keys are unique.
//!
//! An ordering may hold only the front of its order: a build keeps the first
//! [`FIRST_ROWS`] rows or so (or what its first reader asks for; see [`select`]), with a
//! *bound*: it then holds exactly the rows whose key is at most the bound. A write past
//! the bound is not kept; a reader that reaches the bound widens the ordering
//! ([`Table::widen_ordering`](super::Table::widen_ordering)) to four times as many rows,
//! until it holds every row. So the first query on a large table pays a linear pass, not
//! a sort of the table, and a write far down the order costs the ordering nothing.
//!
//! The table keeps its orderings current on every write; a write touches only the
//! orderings of its rows' guard values (one hash probe per guard column in use), so an
//! ordering costs nothing to writes that do not concern it. An ordering outlives its
//! last user (a re-subscribe, or another query of the same order, finds it built), but
//! at most [`MAX_IDLE_ORDERINGS`] idle ones are kept per table; the one idle longest goes
//! first.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::{Ref, RefCell};

use hashbrown::HashMap;

use crate::keys::{sort_key_into, Key, KeyedRows};
use crate::value::Value;

use super::Row;

use super::RowId;

mod select;
pub(crate) use select::Members;

/// How many orderings without a user a table keeps built.
pub(crate) const MAX_IDLE_ORDERINGS: usize = 4;

/// How many rows a build keeps at least (when the ordering has more).
///
/// Every row kept is keyed and put in the ordering's tree, so the first query on a
/// large table pays for each: a build keeps what its reader asks for and a quarter
/// more (a reader whose filter drops a few held rows, or a window that loses a few,
/// reads on without widening), and at least this many.
pub(crate) const FIRST_ROWS: usize = 128;

/// The rows an ordering holds.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// The rows by sort key (a sorted vector while a build's hundred or so rows are
    /// all it holds: a build hands over its sorted entries as they are).
    pub map: KeyedRows,
    /// `None`: every row of the ordering is held. `Some(b)`: exactly the rows whose key
    /// is at most `b`; a reader that gets past the last one must widen the ordering.
    pub bound: Option<Key>,
    /// How many rows the last build or widening kept at least.
    keep: usize,
}

impl Held {
    /// Whether a row with sort key `key` belongs in the held rows.
    #[inline]
    fn admits(&self, key: &[u8]) -> bool {
        self.bound.as_ref().is_none_or(|b| key <= b.as_bytes())
    }
}

/// One ordering: the rows with `guard`'s value (or every row) by sort key.
#[derive(Debug)]
pub(crate) struct Ordering {
    pub guard: Option<(usize, Value)>,
    pub order: Box<[(usize, bool)]>,
    /// The secondary index on the guard column this ordering holds a use of (it finds
    /// the rows of other guard values when their orderings are built).
    pub index: Option<usize>,
    users: u32,
    /// When the last user left (the table's release counter), for eviction.
    idle_since: u64,
    /// Widened by readers holding only `&Table` (see [`Ordering::widen`]).
    held: RefCell<Held>,
}

impl Ordering {
    fn is(&self, guard: Option<(usize, &Value)>, order: &[(usize, bool)]) -> bool {
        self.guard.as_ref().map(|(c, v)| (*c, v)) == guard && &*self.order == order
    }

    fn insert(&mut self, id: RowId, row: &Row, scratch: &mut Vec<u8>) {
        sort_key_into(scratch, row, &self.order);
        let held = self.held.get_mut();
        if held.admits(scratch) {
            held.map.insert(Key::from(scratch.as_slice()), id);
        }
    }

    fn remove(&mut self, row: &Row, scratch: &mut Vec<u8>) {
        sort_key_into(scratch, row, &self.order);
        self.held.get_mut().map.remove(scratch.as_slice());
    }

    /// The rows held now.
    ///
    /// # Panics
    ///
    /// While [`Ordering::widen`] runs (it is never called with this borrowed: a reader
    /// drops the held rows before it widens).
    pub fn held(&self) -> Ref<'_, Held> {
        self.held.borrow()
    }

    /// Rebuilds the held rows from its `members`, keeping four times as many as the
    /// last build kept.
    pub fn widen(&self, members: &Members<'_>, scratch: &mut Vec<u8>) {
        let keep = self.held.borrow().keep.saturating_mul(4);
        let held = build(members, &self.order, keep, scratch);
        *self.held.borrow_mut() = held;
    }

    /// Whether a change from `old` to `new` moves the row in this ordering.
    fn moves(&self, old: &Row, new: &Row) -> bool {
        self.order.iter().any(|&(c, _)| old.get(c) != new.get(c))
    }
}

/// A table's orderings, and which of them a row belongs to.
#[derive(Debug, Default)]
pub(crate) struct Orderings {
    /// Testing knob: how many rows every build keeps, whatever its reader asks for
    /// (`None`: [`FIRST_ROWS`] or what the reader asks for, if more).
    pub first_rows: Option<usize>,
    slots: Vec<Option<Ordering>>,
    /// Orderings of every row.
    unguarded: Vec<usize>,
    /// Orderings of one guard value, by guard column, then value.
    guarded: Vec<(usize, HashMap<Value, Vec<usize>>)>,
    /// Counts releases: the idle order.
    release_tick: u64,
}

/// The held rows of a build that keeps at least `keep` of the `members`.
fn build(
    members: &Members<'_>,
    order: &[(usize, bool)],
    keep: usize,
    scratch: &mut Vec<u8>,
) -> Held {
    let keep = keep.max(1);
    let chosen = select::first_rows(members, order, keep, scratch);
    Held {
        map: KeyedRows::from_sorted(chosen.entries),
        bound: chosen.bound,
        keep,
    }
}

impl Ordering {
    /// Heap bytes (see [`crate::retained`]).
    fn retained(&self) -> usize {
        use crate::retained as r;
        let held = self.held.borrow();
        r::slice(&self.order)
            + self.guard.as_ref().map_or(0, |(_, v)| r::value(v))
            + held.map.retained()
            + held.bound.as_ref().map_or(0, r::key)
    }
}

impl Orderings {
    /// Heap bytes of every ordering and the dispatch lists (see [`crate::retained`]).
    pub(crate) fn retained(&self) -> usize {
        use crate::retained as r;
        r::vec(&self.slots)
            + self
                .slots
                .iter()
                .flatten()
                .map(Ordering::retained)
                .sum::<usize>()
            + r::vec(&self.unguarded)
            + r::vec(&self.guarded)
            + self
                .guarded
                .iter()
                .map(|(_, m)| {
                    m.allocation_size()
                        + m.iter()
                            .map(|(v, ids)| r::value(v) + r::vec(ids))
                            .sum::<usize>()
                })
                .sum::<usize>()
    }
}

impl Orderings {
    /// The ordering for `(guard, order)`, if built; takes one more use of it.
    pub fn acquire(
        &mut self,
        guard: Option<(usize, &Value)>,
        order: &[(usize, bool)],
    ) -> Option<usize> {
        let i = self
            .slots
            .iter()
            .position(|o| o.as_ref().is_some_and(|o| o.is(guard, order)))?;
        if let Some(o) = self.slots[i].as_mut() {
            o.users += 1;
        }
        Some(i)
    }

    /// How many rows a build for a reader of the first `want` keeps at least: `want`
    /// and a quarter more, at least [`FIRST_ROWS`].
    pub fn build_keep(&self, want: usize) -> usize {
        self.first_rows
            .unwrap_or(want.saturating_add(want / 4).max(FIRST_ROWS))
    }

    /// Adds an ordering built from its `members` (the rows with the guard value, or all), with
    /// one user. It holds at least the first `keep` rows (and [`FIRST_ROWS`]).
    pub fn add(
        &mut self,
        guard: Option<(usize, Value)>,
        order: &[(usize, bool)],
        index: Option<usize>,
        (members, keep): (&Members<'_>, usize),
        scratch: &mut Vec<u8>,
    ) -> usize {
        let ordering = Ordering {
            guard: guard.clone(),
            order: order.into(),
            index,
            users: 1,
            idle_since: 0,
            held: RefCell::new(build(members, order, self.build_keep(keep), scratch)),
        };
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => {
                self.slots[i] = Some(ordering);
                i
            }
            None => {
                self.slots.push(Some(ordering));
                self.slots.len() - 1
            }
        };
        match guard {
            None => self.unguarded.push(i),
            Some((col, v)) => {
                let at = match self.guarded.iter().position(|(c, _)| *c == col) {
                    Some(at) => at,
                    None => {
                        self.guarded.push((col, HashMap::new()));
                        self.guarded.len() - 1
                    }
                };
                self.guarded[at].1.entry(v).or_default().push(i);
            }
        }
        i
    }

    /// Drops one use of ordering `i`. It stays built while idle, until more than
    /// [`MAX_IDLE_ORDERINGS`] are idle: then the one idle longest is dropped. Returns the
    /// secondary indexes the dropped orderings held a use of.
    pub fn release(&mut self, i: usize) -> Vec<usize> {
        let mut indexes = Vec::new();
        self.release_tick += 1;
        let tick = self.release_tick;
        if let Some(o) = self.slots.get_mut(i).and_then(Option::as_mut) {
            o.users = o.users.saturating_sub(1);
            if o.users == 0 {
                o.idle_since = tick;
            }
        }
        loop {
            let mut idle = 0;
            let mut oldest: Option<(u64, usize)> = None;
            for (i, o) in self.slots.iter().enumerate() {
                if let Some(o) = o.as_ref().filter(|o| o.users == 0) {
                    idle += 1;
                    if oldest.is_none_or(|(t, _)| o.idle_since < t) {
                        oldest = Some((o.idle_since, i));
                    }
                }
            }
            match oldest {
                Some((_, i)) if idle > MAX_IDLE_ORDERINGS => indexes.extend(self.drop_slot(i)),
                _ => break,
            }
        }
        indexes
    }

    fn drop_slot(&mut self, i: usize) -> Option<usize> {
        let o = self.slots[i].take()?;
        let index = o.index;
        match o.guard {
            None => self.unguarded.retain(|&x| x != i),
            Some((col, v)) => {
                if let Some((_, by_value)) = self.guarded.iter_mut().find(|(c, _)| *c == col) {
                    if let Some(list) = by_value.get_mut(&v) {
                        list.retain(|&x| x != i);
                        if list.is_empty() {
                            by_value.remove(&v);
                        }
                    }
                }
                self.guarded.retain(|(_, by_value)| !by_value.is_empty());
            }
        }
        index
    }

    /// A built ordering.
    pub fn get(&self, i: usize) -> Option<&Ordering> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    /// How many orderings are built.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Calls `f` on every ordering `row` belongs to.
    fn each_of(&mut self, row: &Row, mut f: impl FnMut(&mut Ordering)) {
        for &i in &self.unguarded {
            if let Some(o) = self.slots[i].as_mut() {
                f(o);
            }
        }
        for (col, by_value) in &self.guarded {
            if let Some(list) = by_value.get(&row.get(*col)) {
                for &i in list {
                    if let Some(o) = self.slots[i].as_mut() {
                        f(o);
                    }
                }
            }
        }
    }

    #[inline]
    pub fn on_insert(&mut self, id: RowId, row: &Row, scratch: &mut Vec<u8>) {
        if self.slots.is_empty() {
            return;
        }
        self.each_of(row, |o| o.insert(id, row, scratch));
    }

    pub fn on_remove(&mut self, row: &Row, scratch: &mut Vec<u8>) {
        self.each_of(row, |o| o.remove(row, scratch));
    }

    pub fn on_replace(&mut self, id: RowId, old: &Row, new: &Row, scratch: &mut Vec<u8>) {
        if self.slots.is_empty() {
            return;
        }
        let guards_kept = self.guarded.iter().all(|&(c, _)| old.get(c) == new.get(c));
        if guards_kept {
            self.each_of(new, |o| {
                if o.moves(old, new) {
                    o.remove(old, scratch);
                    o.insert(id, new, scratch);
                }
            });
        } else {
            self.on_remove(old, scratch);
            self.on_insert(id, new, scratch);
        }
    }

    /// Empties every ordering (they stay registered). Each holds nothing and admits
    /// nothing until a reader widens it: the rows loaded next are not sorted for it.
    pub fn clear(&mut self) {
        for o in self.slots.iter_mut().flatten() {
            let held = o.held.get_mut();
            held.map.clear();
            held.bound = Some(Key::default());
            // The first widening keeps as many as the last build did.
            held.keep /= 4;
        }
    }
}
