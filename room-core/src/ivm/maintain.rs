//! Incremental maintenance: how one row change flows through the nodes.
//!
//! 1. [`Engine::on_change`] finds the nodes over the changed table that could hold the
//!    old or new image (equality guards make this an index lookup, not a scan).
//! 2. [`Engine::refresh`] re-decides one row in one node: does it qualify now, in which
//!    partition, at which sort position? It compares with what the node holds and moves
//!    the row — each move reports the rows that entered or left a window. Refresh is
//!    idempotent, so cascades simply refresh again.
//! 3. A window change in a demanded partition changes **membership**: the footprint
//!    refcount moves, and the member's children (related levels, shipped witnesses)
//!    gain or lose demand for their partitions, recursively.
//! 4. An EXISTS partition turning empty or non-empty re-decides every parent row that
//!    correlates with it (found through a store index): they are queued for refresh.
//!
//! Every step costs in proportion to what changes, plus `O(log n)` per ordered-set
//! operation.

use crate::keys::Key;
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::keys::{join_key_into, sort_key_into};
use crate::store::{Row, RowId, Store};

use super::footprint::{Before, Footprint};
use super::lazy::past_front;
use super::node::{Filter, Node};
use super::part::WindowEvent;
use super::{Engine, NodeId};

impl Engine {
    /// Applies one base-row change (already written to `store`) to every query.
    pub(crate) fn on_change(
        &mut self,
        store: &Store,
        table: usize,
        rid: RowId,
        old: Option<&Row>,
        new: Option<&Row>,
    ) {
        self.change_no = self.change_no.wrapping_add(1);
        let d = &self.dispatch[table];
        if d.unguarded.is_empty() && d.guarded.is_empty() {
            // No query reads the table (a snapshot loading before any subscribe).
            return;
        }
        self.changing = Some(((table as u32, rid), old.cloned()));
        let d = &self.dispatch[table];
        self.work.extend(d.unguarded.iter().map(|&n| (n, rid)));
        for (col, by_value) in &d.guarded {
            if let Some(o) = old {
                if let Some(nodes) = by_value.get(&o.get(*col)) {
                    self.work.extend(nodes.iter().map(|&n| (n, rid)));
                }
            }
            if let Some(nw) = new {
                if old.is_none_or(|o| o.get(*col) != nw.get(*col)) {
                    if let Some(nodes) = by_value.get(&nw.get(*col)) {
                        self.work.extend(nodes.iter().map(|&n| (n, rid)));
                    }
                }
            }
        }
        self.run(store);
        self.changing = None;
    }

    /// Drains the refresh queue.
    pub(crate) fn run(&mut self, store: &Store) {
        while let Some((n, rid)) = self.work.pop() {
            self.refresh(store, n, rid);
        }
    }

    /// Re-decides row `rid` in node `n` against the store's current image.
    pub(crate) fn refresh(&mut self, store: &Store, n: NodeId, rid: RowId) {
        let node = self.node(n);
        let now = match store.row(node.table, rid) {
            Some(r) if self.materialized(node, r) && self.qualifies(node, r) => Some(r.clone()),
            _ => None,
        };
        let held = self.held_image(store, n, rid);
        match (held, now) {
            (None, None) => {}
            (Some(old), Some(new)) => {
                if Row::ptr_eq(&old, &new) {
                    return;
                }
                if same_slot(node, &old, &new) {
                    self.image_changed(store, n, rid, old, new);
                } else {
                    self.leave_part(store, n, rid, &old);
                    // A windowed level's read-on may already have taken the row at its
                    // new place.
                    if !self.node(n).rows.contains(&rid) {
                        self.enter_part(store, n, rid, new, false);
                    }
                }
            }
            (Some(old), None) => self.leave_part(store, n, rid, &old),
            (None, Some(new)) => self.enter_part(store, n, rid, new, false),
        }
    }

    /// The image node `n` holds row `rid` with (`None`: not held). Nodes keep row ids
    /// only: a held row's image is the store's, except while a change is applied — a
    /// node not yet refreshed for the row that change rewrites still holds its old
    /// image.
    pub(crate) fn held_image(&self, store: &Store, n: NodeId, rid: RowId) -> Option<Row> {
        if !self.node(n).rows.contains(&rid) {
            return None;
        }
        self.image_of_held(store, n, rid)
    }

    /// [`Engine::held_image`] of a row node `n` is known to hold (one of its partitions'
    /// rows).
    #[inline]
    fn image_of_held(&self, store: &Store, n: NodeId, rid: RowId) -> Option<Row> {
        let node = self.node(n);
        debug_assert!(
            node.rows.contains(&rid),
            "row {rid} is not held by node {n}"
        );
        if let Some((key, old)) = &self.changing {
            if *key == (node.table as u32, rid) && node.refreshed_in != self.change_no {
                return old.clone();
            }
        }
        store.row(node.table, rid).cloned()
    }

    /// Node `n` now holds row `rid` with the store's image: if that is the row the
    /// change being applied rewrites, the node no longer holds its old image.
    pub(super) fn note_refreshed(&mut self, n: NodeId, rid: RowId) {
        if self.changing_row(self.node(n).table) == Some(rid) {
            let stamp = self.change_no;
            self.node_mut(n).refreshed_in = stamp;
        }
    }

    /// The row of `table` the change being applied rewrites, if it is one of that
    /// table's.
    pub(super) fn changing_row(&self, table: usize) -> Option<RowId> {
        match &self.changing {
            Some(((t, rid), _)) if *t == table as u32 => Some(*rid),
            _ => None,
        }
    }

    /// Whether `row` falls in a partition `node` holds: any, unless the node is lazy
    /// (then one that some member parent demands or once demanded: a partition read
    /// stays read, so a lazy node never holds more than an eager one would).
    fn materialized(&self, node: &Node, row: &Row) -> bool {
        if !node.is_lazy() {
            return true;
        }
        let mut key = self.scratch.take();
        let held = join_key_into(&mut key, row, node.part_cols())
            && node.demand.get(key.as_slice()).is_some();
        self.scratch.set(key);
        held
    }

    /// Whether `row` qualifies for `node`: inside the `start` bound and passing the filter.
    pub(crate) fn qualifies(&self, node: &Node, row: &Row) -> bool {
        if let Some(b) = &node.start {
            let (bound, exclusive) = &**b;
            let mut key = self.scratch.take();
            sort_key_into(&mut key, row, &node.order);
            let o = key.as_slice().cmp(bound);
            self.scratch.set(key);
            match o {
                Ordering::Less => return false,
                Ordering::Equal if *exclusive => return false,
                _ => {}
            }
        }
        self.eval(&node.filter, row)
    }

    fn eval(&self, f: &Filter, row: &Row) -> bool {
        match f {
            Filter::Const(b) => *b,
            Filter::Leaf(col, pred) => pred.eval_cell(row.get(*col)),
            Filter::And(items) => items.iter().all(|f| self.eval(f, row)),
            Filter::Or(items) => items.iter().any(|f| self.eval(f, row)),
            Filter::Exists {
                node,
                cols,
                negated,
            } => {
                // The engine's scratch buffer: a filter of many EXISTS gates evaluates
                // one per gate for every row it reads.
                let mut key = self.scratch.take();
                let has = join_key_into(&mut key, row, cols)
                    && self
                        .node(*node)
                        .parts
                        .get(key.as_slice())
                        .is_some_and(|p| !p.is_empty());
                self.scratch.set(key);
                has != *negated
            }
        }
    }

    fn leave_part(&mut self, store: &Store, n: NodeId, rid: RowId, old: &Row) {
        let mut pk = self.take_buf();
        let mut sk = self.take_buf();
        let mut events = core::mem::take(&mut self.events);
        events.clear();
        let (emptied, demanded, was_partial) = {
            let node = self.node_mut(n);
            // Held rows always have a non-NULL partition key (they were inserted with it).
            let _ = join_key_into(&mut pk, old, node.part_cols());
            sort_key_into(&mut sk, old, &node.order);
            let limit = node.limit;
            let (emptied, was_partial) = match node.parts.get_mut(pk.as_slice()) {
                Some(part) => {
                    part.remove(&sk, rid, limit, &mut events);
                    (part.is_empty(), part.is_partial())
                }
                None => (false, false),
            };
            if emptied {
                node.parts.remove(pk.as_slice());
            }
            (
                emptied,
                node.demand.get(pk.as_slice()).is_some_and(|d| *d > 0),
                was_partial,
            )
        };
        if demanded {
            self.apply_events(store, n, &events);
        }
        self.node_mut(n).rows.remove(&rid);
        self.events = events;
        if emptied && self.node(n).is_exists() {
            self.queue_parents(store, n, &pk);
        }
        self.after_leave(store, n, &pk, was_partial);
        self.put_buf(pk);
        self.put_buf(sk);
        let node = self.node(n);
        if let (Some(w), Some(limit)) = (&node.window, node.limit) {
            let held = node.parts.get(&[][..]).map_or(0, |p| p.len());
            if !w.complete && held < limit as usize {
                self.read_window(store, n);
            }
        }
    }

    /// Holds a row that qualifies. `read` says it comes from [`Engine::read_window`];
    /// any other row of a windowed level that sorts past the last held row is not held.
    pub(super) fn enter_part(
        &mut self,
        store: &Store,
        n: NodeId,
        rid: RowId,
        new: Row,
        read: bool,
    ) {
        let mut pk = self.take_buf();
        let mut sk = self.take_buf();
        let mut events = core::mem::take(&mut self.events);
        events.clear();
        let (was_empty, demanded) = {
            let node = self.node_mut(n);
            if !join_key_into(&mut pk, &new, node.part_cols()) {
                // A NULL correlation cell: the row belongs to no partition.
                self.events = events;
                self.put_buf(pk);
                self.put_buf(sk);
                return;
            }
            sort_key_into(&mut sk, &new, &node.order);
            if let Some(w) = node.window.as_ref().filter(|w| !read && !w.complete) {
                let _ = w;
                let last = node.parts.get(pk.as_slice()).and_then(|p| p.last_key());
                if last.is_none_or(|last| sk.as_slice() > last.as_bytes()) {
                    // Past the held prefix: a later read finds it. (Holding none while
                    // incomplete does not last: the read-on below fills the window.)
                    let empty = last.is_none();
                    self.events = events;
                    self.put_buf(pk);
                    self.put_buf(sk);
                    if empty {
                        self.read_window(store, n);
                    }
                    return;
                }
            }
            if !read && past_front(node, &pk, &sk) {
                self.events = events;
                self.put_buf(pk);
                self.put_buf(sk);
                return;
            }
            node.rows.insert(rid);
            let limit = node.limit;
            let part = node.parts.get_or_default(pk.as_slice());
            let was_empty = part.is_empty();
            part.insert(Key::from(sk.as_slice()), rid, limit, &mut events);
            (
                was_empty,
                node.demand.get(pk.as_slice()).is_some_and(|d| *d > 0),
            )
        };
        self.note_refreshed(n, rid);
        if demanded {
            self.apply_events(store, n, &events);
        }
        self.events = events;
        if was_empty && self.node(n).is_exists() {
            self.queue_parents(store, n, &pk);
        }
        self.trim_part(n, &pk);
        self.put_buf(pk);
        self.put_buf(sk);
        self.trim_window(n);
    }

    fn image_changed(&mut self, store: &Store, n: NodeId, rid: RowId, old: Row, new: Row) {
        self.note_refreshed(n, rid);
        let mut pk = self.take_buf();
        let mut sk = self.take_buf();
        let member = {
            let node = self.node_mut(n);
            let _ = join_key_into(&mut pk, &new, node.part_cols());
            sort_key_into(&mut sk, &new, &node.order);
            let demanded = node.demand.get(pk.as_slice()).is_some_and(|d| *d > 0);
            demanded
                && node
                    .parts
                    .get(pk.as_slice())
                    .is_some_and(|p| p.in_window(&sk, node.limit))
        };
        self.put_buf(pk);
        self.put_buf(sk);
        if member {
            self.member_image(store, n, rid, &old, &new);
        }
    }

    fn apply_events(&mut self, store: &Store, n: NodeId, events: &[WindowEvent]) {
        for ev in events {
            match *ev {
                WindowEvent::Enter(r) => {
                    if let Some(img) = self.image_of_held(store, n, r) {
                        self.member_enter(store, n, r, &img);
                    }
                }
                WindowEvent::Leave(r) => {
                    if let Some(img) = self.image_of_held(store, n, r) {
                        self.member_leave(store, n, r, &img);
                    }
                }
            }
        }
    }

    /// Queues a refresh of every parent row correlated with an EXISTS partition.
    pub(super) fn queue_parents(&mut self, store: &Store, n: NodeId, part_key: &[u8]) {
        let node = self.node(n);
        let (Some(parent), Some(ix)) = (node.parent, node.parent_index.map(|i| i as usize)) else {
            return;
        };
        let parent_table = self.node(parent).table;
        self.work.extend(
            store
                .table(parent_table)
                .index_lookup(ix, part_key)
                .map(|r| (parent, r)),
        );
    }

    /// Runs `f` on the footprint of node `n`'s pipeline (with the node's table) and
    /// records the pipeline as touched when it goes from clean to changed.
    fn footprint_of(
        &mut self,
        store: &Store,
        n: NodeId,
        f: impl FnOnce(&mut Footprint, usize, &Before<'_>),
    ) {
        let (p, table) = {
            let node = self.node(n);
            (node.pipeline, node.table)
        };
        let changing = self.changing.take();
        let before = Before {
            store,
            changing: changing.as_ref().map(|(k, old)| (*k, old.as_ref())),
        };
        let pipeline = self.pipeline_mut(p);
        let was_clean = !pipeline.footprint.has_changes();
        f(&mut pipeline.footprint, table, &before);
        let now_dirty = pipeline.footprint.has_changes();
        self.changing = changing;
        if was_clean && now_dirty {
            self.touched.push(p);
        }
    }

    /// One more (`inc`) or one fewer demand from a member `row` of node `n` on each of
    /// its demanded children's partitions.
    fn children_demand(&mut self, store: &Store, n: NodeId, row: &Row, inc: bool) {
        let count = self.node(n).demanded_children.len();
        for i in 0..count {
            let c = self.node(n).demanded_children[i];
            let mut key = self.take_buf();
            if self.child_key(c, row, &mut key) {
                if inc {
                    self.demand_inc(store, c, &key);
                } else {
                    self.demand_dec(store, c, &key);
                }
            }
            self.put_buf(key);
        }
    }

    /// A row became a member of the result tree through node `n`.
    pub(crate) fn member_enter(&mut self, store: &Store, n: NodeId, rid: RowId, row: &Row) {
        self.footprint_of(store, n, |fp, table, before| fp.enter(table, rid, before));
        self.children_demand(store, n, row, true);
    }

    /// A row stopped being a member through node `n` (`row` is the image it entered with).
    pub(crate) fn member_leave(&mut self, store: &Store, n: NodeId, rid: RowId, row: &Row) {
        self.footprint_of(store, n, |fp, table, before| fp.leave(table, rid, before));
        self.children_demand(store, n, row, false);
    }

    fn member_image(&mut self, store: &Store, n: NodeId, rid: RowId, old: &Row, new: &Row) {
        self.footprint_of(store, n, |fp, table, before| fp.image(table, rid, before));
        let count = self.node(n).demanded_children.len();
        for i in 0..count {
            let c = self.node(n).demanded_children[i];
            let (mut ko, mut kn) = (self.take_buf(), self.take_buf());
            let has_old = self.child_key(c, old, &mut ko);
            let has_new = self.child_key(c, new, &mut kn);
            if has_old != has_new || ko != kn {
                if has_new {
                    self.demand_inc(store, c, &kn);
                }
                if has_old {
                    self.demand_dec(store, c, &ko);
                }
            }
            self.put_buf(ko);
            self.put_buf(kn);
        }
    }

    /// The partition of child `c` that a parent row demands (`false`: none, NULL cell).
    fn child_key(&self, c: NodeId, parent_row: &Row, out: &mut Vec<u8>) -> bool {
        match &self.node(c).link {
            Some(link) => join_key_into(out, parent_row, &link.parent),
            None => false,
        }
    }

    /// One more demand for partition `key` of node `c`; the first brings its window in.
    pub(crate) fn demand_inc(&mut self, store: &Store, c: NodeId, key: &[u8]) {
        // A partition already demanded (or read) costs one search.
        let held = match self.node_mut(c).demand.get_mut(key) {
            Some(d) => {
                *d += 1;
                Some(*d == 1)
            }
            None => None,
        };
        let first = match held {
            Some(first) => first,
            None => {
                if self.node(c).is_lazy() {
                    // Read at its first demand, its entry present at zero.
                    self.node_mut(c).demand.get_or_default(key);
                    self.materialize(store, c, key);
                }
                let d = self.node_mut(c).demand.get_or_default(key);
                *d += 1;
                *d == 1
            }
        };
        if first {
            let mut rows = self.window_rows(store, c, key);
            for (r, img) in rows.drain(..) {
                self.member_enter(store, c, r, &img);
            }
            self.put_rows(rows);
        }
    }

    /// One demand fewer; the last takes the window out.
    pub(crate) fn demand_dec(&mut self, store: &Store, c: NodeId, key: &[u8]) {
        let last = {
            let node = self.node_mut(c);
            let lazy = node.is_lazy();
            match node.demand.get_mut(key) {
                Some(d) if *d > 1 => {
                    *d -= 1;
                    false
                }
                Some(d) if *d == 1 => {
                    if lazy {
                        // The partition stays read (and maintained): a parent that
                        // demands it again costs no second read.
                        *d = 0;
                    } else {
                        node.demand.remove(key);
                    }
                    true
                }
                _ => false,
            }
        };
        if last {
            let mut rows = self.window_rows(store, c, key);
            for (r, img) in rows.drain(..) {
                self.member_leave(store, c, r, &img);
            }
            self.put_rows(rows);
        }
    }

    /// The rows of partition `key`'s window of node `c`, with their images, in a
    /// buffer to hand back through [`Engine::put_rows`] (demand changes recurse, so
    /// there is a small stack of them).
    fn window_rows(&mut self, store: &Store, c: NodeId, key: &[u8]) -> Vec<(RowId, Row)> {
        let mut out = self.row_bufs.pop().unwrap_or_default();
        let node = self.node(c);
        if let Some(part) = node.parts.get(key) {
            out.extend(
                part.window(node.limit)
                    .filter_map(|r| self.image_of_held(store, c, r).map(|img| (r, img))),
            );
        }
        out
    }

    /// Takes back a [`Engine::window_rows`] buffer (emptied; a large one is freed).
    fn put_rows(&mut self, mut rows: Vec<(RowId, Row)>) {
        rows.clear();
        if rows.capacity() <= 64 && self.row_bufs.len() < 8 {
            self.row_bufs.push(rows);
        }
    }
}

/// Whether two images of a row sit in the same partition at the same sort position.
fn same_slot(node: &Node, a: &Row, b: &Row) -> bool {
    node.part_cols().iter().all(|&c| a.get(c) == b.get(c))
        && node.order.iter().all(|&(c, _)| a.get(c) == b.get(c))
}
