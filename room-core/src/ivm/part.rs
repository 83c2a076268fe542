//! One partition of a query level: its qualifying rows in sort order, and the window
//! (`limit`) over them.
//!
//! The window is the first `limit` rows of the set. It is tracked by its length and its
//! boundary (the key of its last row), so every insert or remove costs `O(log n)` (a
//! short shift while the partition is small, see [`KeyedRows`]) and
//! reports exactly the rows that entered or left the window — a displaced boundary row,
//! a backfilled successor.

use alloc::vec::Vec;

use hashbrown::hash_map::EntryRef;
use hashbrown::HashMap;

use crate::keys::{Key, KeyedRows};
use crate::store::RowId;

/// Per-partition state of a level: for the root, its one partition (keyed by the empty
/// key) held inline; for a child level, a map by partition key. A root view then pays
/// for no hash table where it has one entry.
#[derive(Debug)]
pub(crate) enum ByPart<T> {
    /// The root's single partition (the key is always empty).
    One(Option<T>),
    /// Partitions by key.
    Keyed(HashMap<Key, T>),
}

impl<T> ByPart<T> {
    /// Heap bytes: the map (keyed) and what `each` says each state owns.
    pub fn retained(&self, each: impl Fn(&T) -> usize) -> usize {
        match self {
            ByPart::One(v) => v.as_ref().map_or(0, &each),
            ByPart::Keyed(m) => {
                m.allocation_size()
                    + m.iter()
                        .map(|(k, v)| crate::retained::key(k) + each(v))
                        .sum::<usize>()
            }
        }
    }
}

impl<T: Default> ByPart<T> {
    /// Empty state for a root level (`one`) or a child level.
    pub fn new(one: bool) -> ByPart<T> {
        if one {
            ByPart::One(None)
        } else {
            ByPart::Keyed(HashMap::new())
        }
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&T> {
        match self {
            ByPart::One(v) => v.as_ref(),
            ByPart::Keyed(m) => m.get(key),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut T> {
        match self {
            ByPart::One(v) => v.as_mut(),
            ByPart::Keyed(m) => m.get_mut(key),
        }
    }

    /// Room for `additional` more keys without regrowing the map (a level about to gain
    /// a key per row of a window being read).
    pub fn reserve(&mut self, additional: usize) {
        if let ByPart::Keyed(m) = self {
            m.reserve(additional);
        }
    }

    /// The state of `key`, created empty if absent.
    pub fn get_or_default(&mut self, key: &[u8]) -> &mut T {
        match self {
            ByPart::One(v) => v.get_or_insert_with(T::default),
            // One search; the key is copied only when it is new.
            ByPart::Keyed(m) => match m.entry_ref(key) {
                EntryRef::Occupied(e) => e.into_mut(),
                EntryRef::Vacant(e) => e.insert_with_key(Key::from(key), T::default()),
            },
        }
    }

    pub fn remove(&mut self, key: &[u8]) {
        match self {
            ByPart::One(v) => *v = None,
            ByPart::Keyed(m) => {
                m.remove(key);
            }
        }
    }
}

/// A row entering or leaving a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowEvent {
    /// The row is now inside the window.
    Enter(RowId),
    /// The row is no longer inside the window.
    Leave(RowId),
}

/// The qualifying rows of one partition, ordered by the level's completed sort.
#[derive(Debug, Default)]
pub(crate) struct Part {
    set: KeyedRows,
    /// `min(set.len(), limit)`; unused without a limit.
    win_len: u32,
    /// The key of the window's last row; `None` when the window is empty.
    boundary: Option<Key>,
    /// Whether the partition holds only a front of its qualifying rows: exactly those
    /// whose key is at most its last held key, never fewer than the window (see
    /// the `lazy` module of the engine).
    partial: bool,
}

impl Part {
    /// Heap bytes (see [`crate::retained`]).
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        self.set.retained() + self.boundary.as_ref().map_or(0, r::key)
    }

    /// Whether the partition holds no rows.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// How many rows the partition holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether only a front of the partition's rows is held.
    #[inline]
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// Records whether only a front of the partition's rows is held.
    #[inline]
    pub fn set_partial(&mut self, partial: bool) {
        self.partial = partial;
    }

    /// The key of the last row held.
    pub fn last_key(&self) -> Option<&Key> {
        self.set.last_key()
    }

    /// Drops the last row held, which must lie past the window (`len() > limit`):
    /// nothing enters or leaves the window.
    pub fn pop_past_window(&mut self, limit: u32) -> Option<RowId> {
        if self.set.len() <= limit as usize {
            return None;
        }
        self.set.pop_last()
    }

    /// Fills an empty partition with `entries` (sorted by key, keys unique) at once, as
    /// inserting them one by one would leave it (the window events are not reported).
    /// A partition that holds rows gets them inserted one by one.
    pub fn fill_sorted(&mut self, entries: Vec<(Key, RowId)>, limit: Option<u32>) {
        if !self.set.is_empty() {
            let mut ev = Vec::new();
            for (key, rid) in entries {
                self.insert(key, rid, limit, &mut ev);
                ev.clear();
            }
            return;
        }
        if let Some(l) = limit.filter(|&l| l > 0) {
            let n = entries.len().min(l as usize);
            self.win_len = n as u32;
            self.boundary = n.checked_sub(1).map(|i| entries[i].0.clone());
        }
        self.set = KeyedRows::from_sorted(entries);
    }

    /// Adds a row (its key must be new) and reports window changes.
    pub fn insert(&mut self, key: Key, rid: RowId, limit: Option<u32>, ev: &mut Vec<WindowEvent>) {
        let limit = match limit {
            None => {
                self.set.insert(key, rid);
                ev.push(WindowEvent::Enter(rid));
                return;
            }
            Some(0) => {
                self.set.insert(key, rid);
                return;
            }
            Some(l) => l,
        };
        if self.win_len < limit {
            // The window holds the whole set: the new row joins it.
            if self.boundary.as_deref().is_none_or(|b| &*key > b) {
                self.boundary = Some(key.clone());
            }
            self.set.insert(key, rid);
            self.win_len += 1;
            ev.push(WindowEvent::Enter(rid));
            return;
        }
        let Some(boundary) = self.boundary.take() else {
            // A full window of a positive limit always has a boundary.
            self.set.insert(key, rid);
            return;
        };
        if key < boundary {
            let displaced = self.set.get(&boundary);
            self.set.insert(key, rid);
            self.boundary = self.set.last_before(&boundary).cloned();
            if let Some(d) = displaced {
                ev.push(WindowEvent::Leave(d));
            }
            ev.push(WindowEvent::Enter(rid));
        } else {
            self.set.insert(key, rid);
            self.boundary = Some(boundary);
        }
    }

    /// Removes a row by key and reports window changes.
    pub fn remove(
        &mut self,
        key: &[u8],
        rid: RowId,
        limit: Option<u32>,
        ev: &mut Vec<WindowEvent>,
    ) {
        match limit {
            None => {
                if self.set.remove(key).is_some() {
                    ev.push(WindowEvent::Leave(rid));
                }
                return;
            }
            Some(0) => {
                self.set.remove(key);
                return;
            }
            Some(_) => {}
        }
        let in_window = self.boundary.as_deref().is_some_and(|b| key <= b);
        if !in_window {
            self.set.remove(key);
            return;
        }
        ev.push(WindowEvent::Leave(rid));
        let boundary = self.boundary.take().unwrap_or_default();
        let next = self.set.first_after(&boundary).map(|(k, r)| (k.clone(), r));
        match next {
            Some((k, r)) => {
                ev.push(WindowEvent::Enter(r));
                self.boundary = Some(k);
            }
            None => {
                self.win_len -= 1;
                self.boundary = if key == &*boundary {
                    self.set.last_before(key).cloned()
                } else {
                    Some(boundary)
                };
            }
        }
        self.set.remove(key);
    }

    /// Whether a row with this key (present in the set) is inside the window.
    pub fn in_window(&self, key: &[u8], limit: Option<u32>) -> bool {
        match limit {
            None => true,
            Some(0) => false,
            Some(_) => self.boundary.as_deref().is_some_and(|b| key <= b),
        }
    }

    /// The window's rows, in sort order.
    pub fn window(&self, limit: Option<u32>) -> impl Iterator<Item = RowId> + '_ {
        let n = match limit {
            None => usize::MAX,
            Some(_) => self.win_len as usize,
        };
        self.set.rows().take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use alloc::vec;

    fn k(n: u8) -> Key {
        Key::from([n].as_slice())
    }

    fn window(p: &Part, limit: Option<u32>) -> Vec<RowId> {
        p.window(limit).collect()
    }

    #[test]
    fn a_filled_partition_equals_one_built_by_inserts() {
        for limit in [None, Some(0), Some(1), Some(3), Some(10)] {
            for n in [0u8, 1, 2, 3, 7] {
                let keys: Vec<u8> = (0..n).map(|i| (i * 5) % 11).collect();
                let mut by_insert = Part::default();
                let mut ev = Vec::new();
                for &x in &keys {
                    by_insert.insert(k(x), RowId::from(x), limit, &mut ev);
                }
                let mut sorted: Vec<(Key, RowId)> =
                    keys.iter().map(|&x| (k(x), RowId::from(x))).collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                let mut filled = Part::default();
                filled.fill_sorted(sorted, limit);
                assert_eq!(
                    window(&filled, limit),
                    window(&by_insert, limit),
                    "{limit:?} {n}"
                );
                assert_eq!(filled.win_len, by_insert.win_len, "{limit:?} {n}");
                assert_eq!(filled.boundary, by_insert.boundary, "{limit:?} {n}");
                assert_eq!(filled.len(), by_insert.len());
                // And they go on alike.
                let (mut e1, mut e2) = (Vec::new(), Vec::new());
                by_insert.insert(k(4), 400, limit, &mut e1);
                filled.insert(k(4), 400, limit, &mut e2);
                assert_eq!(e1, e2);
                assert_eq!(window(&filled, limit), window(&by_insert, limit));
            }
        }
    }

    #[test]
    fn limited_window_displaces_and_backfills() {
        let mut p = Part::default();
        let mut ev = Vec::new();
        let lim = Some(2);
        p.insert(k(5), 5, lim, &mut ev);
        p.insert(k(3), 3, lim, &mut ev);
        assert_eq!(ev, vec![WindowEvent::Enter(5), WindowEvent::Enter(3)]);
        ev.clear();
        p.insert(k(9), 9, lim, &mut ev);
        assert!(ev.is_empty());
        p.insert(k(1), 1, lim, &mut ev);
        assert_eq!(ev, vec![WindowEvent::Leave(5), WindowEvent::Enter(1)]);
        assert_eq!(window(&p, lim), vec![1, 3]);
        ev.clear();
        p.remove(&k(1), 1, lim, &mut ev);
        assert_eq!(ev, vec![WindowEvent::Leave(1), WindowEvent::Enter(5)]);
        assert_eq!(window(&p, lim), vec![3, 5]);
        ev.clear();
        p.remove(&k(9), 9, lim, &mut ev);
        assert!(ev.is_empty());
        p.remove(&k(5), 5, lim, &mut ev);
        assert_eq!(ev, vec![WindowEvent::Leave(5)]);
        assert_eq!(window(&p, lim), vec![3]);
        assert!(p.in_window(&k(3), lim));
        ev.clear();
        p.remove(&k(3), 3, lim, &mut ev);
        assert!(p.is_empty());
        p.insert(k(7), 7, lim, &mut ev);
        assert_eq!(window(&p, lim), vec![7]);
    }

    #[test]
    fn zero_and_unbounded_limits() {
        let mut p = Part::default();
        let mut ev = Vec::new();
        p.insert(k(1), 1, Some(0), &mut ev);
        assert!(ev.is_empty());
        assert_eq!(window(&p, Some(0)), Vec::<RowId>::new());
        let mut q = Part::default();
        q.insert(k(2), 2, None, &mut ev);
        q.insert(k(1), 1, None, &mut ev);
        assert_eq!(window(&q, None), vec![1, 2]);
    }
}
