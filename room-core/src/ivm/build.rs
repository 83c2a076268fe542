//! Building a pipeline from a validated [`Query`], hydrating it from the store, and
//! tearing it down.

use alloc::boxed::Box;
use alloc::vec::Vec;

use hashbrown::{HashMap, HashSet};

use crate::ast::{Cond, Query};
use crate::keys::{join_key_into, sort_key_into, Key};
use crate::store::{RowId, Store};

use super::fold::merge_set_leaves;
use super::footprint::Footprint;
use super::node::{find_guard, Filter, Link, Node, Role, Windowed};
use super::part::ByPart;
use super::{Engine, NodeId, Pipeline, PipelineId};

/// How a child node hangs off its parent.
struct Attach {
    parent: NodeId,
    parent_table: usize,
    link: Link,
    role: Role,
    /// The window: the related `limit`, or the witness cap of an EXISTS.
    limit: Option<u32>,
}

/// The witness cap of a non-flipped EXISTS (docs/design/decisions.md, "Footprints").
pub(crate) const WITNESS_CAP: u32 = 3;

impl Engine {
    /// Materializes `query`: builds its nodes, hydrates them from `store` and brings the
    /// root window in. The returned pipeline's footprint holds the snapshot; nothing is
    /// pending to drain.
    pub(crate) fn build(&mut self, store: &mut Store, query: &Query) -> PipelineId {
        let p = match self.free_pipelines.pop() {
            Some(p) => p,
            None => {
                self.pipelines.push(None);
                (self.pipelines.len() - 1) as PipelineId
            }
        };
        let mut order = Vec::new();
        let mut indexes = Vec::new();
        let root = self.build_node(store, p, query, None, &mut order, &mut indexes);
        let mut orderings = Vec::new();
        if let Some(w) = self.windowed(store, root, query, &mut indexes) {
            if let Some(o) = w.ordering {
                orderings.push((query.table, o as usize));
            }
            self.node_mut(root).window = Some(w);
        }
        self.pipelines[p as usize] = Some(Pipeline {
            nodes: order.clone().into_boxed_slice(),
            indexes: indexes.into_boxed_slice(),
            orderings: orderings.into_boxed_slice(),
            footprint: Footprint::default(),
        });
        // Children before parents: an EXISTS child is complete before its parent reads it.
        for &n in &order {
            self.hydrate(store, n);
            self.work.clear();
            self.register(n);
        }
        self.demand_inc(store, root, &[]);
        // Hydration touched every member: start the drain point with no capacity held.
        self.pipeline_mut(p).footprint.dirty = HashMap::new();
        p
    }

    fn build_node(
        &mut self,
        store: &mut Store,
        p: PipelineId,
        q: &Query,
        attach: Option<Attach>,
        order: &mut Vec<NodeId>,
        indexes: &mut Vec<(usize, usize)>,
    ) -> NodeId {
        let n = self.alloc_node();
        let mut demanded = Vec::new();
        let filter = match &q.filter {
            None => Filter::Const(true),
            Some(c) => self.compile(store, p, q.table, n, c, &mut demanded, order, indexes),
        };
        for r in &q.related {
            let link = Link {
                parent: r.link.parent.as_slice().into(),
                child: r.link.child.as_slice().into(),
            };
            let c = self.build_node(
                store,
                p,
                &r.query,
                Some(Attach {
                    parent: n,
                    parent_table: q.table,
                    link,
                    role: Role::Related,
                    limit: r.query.limit,
                }),
                order,
                indexes,
            );

            demanded.push(c);
        }
        let start = q.start.as_ref().map(|b| {
            let mut key = Vec::new();
            sort_key_into(&mut key, &b.row, &q.order);
            Box::new((Key::from(key), b.exclusive))
        });
        let guard = find_guard(&filter);
        // A related level reads its partitions through an index on its correlation
        // columns; it needs no guard index (dispatch finds it by the guard's value).
        let child_index = match &attach {
            Some(a) if a.role == Role::Related => {
                let (table, scratch) = store.table_mut(q.table);
                let ix = table.ensure_index(&a.link.child, scratch);
                indexes.push((q.table, ix));
                Some(ix as u32)
            }
            _ => None,
        };
        // A boolean guard splits a table in two at best: its rows are read from an
        // ordering, or by a pass over the table, never through an index worth building.
        let guard_index = guard
            .as_ref()
            .filter(|(_, v)| child_index.is_none() && !matches!(v, crate::value::Value::Bool(_)))
            .map(|(col, _)| {
                let (table, scratch) = store.table_mut(q.table);
                let ix = table.ensure_index(&[*col], scratch);
                indexes.push((q.table, ix));
                ix as u32
            });
        let (parent, link, role, limit, parent_index) = match attach {
            None => (None, None, Role::Root, q.limit, None),
            Some(a) => {
                let parent_index = if a.role == Role::Exists {
                    let (table, scratch) = store.table_mut(a.parent_table);
                    let ix = table.ensure_index(&a.link.parent, scratch);
                    indexes.push((a.parent_table, ix));
                    Some(ix as u32)
                } else {
                    None
                };
                (
                    Some(a.parent),
                    Some(Box::new(a.link)),
                    a.role,
                    a.limit,
                    parent_index,
                )
            }
        };
        self.nodes[n as usize] = Some(Node {
            pipeline: p,
            table: q.table,
            role,
            parent,
            link,
            filter,
            order: q.order.as_slice().into(),
            start,
            limit,
            demanded_children: demanded.into_boxed_slice(),

            parent_index,
            guard,
            guard_index,
            child_index,
            window: None,
            rows: HashSet::new(),
            refreshed_in: 0,
            parts: ByPart::new(role == Role::Root),
            demand: ByPart::new(role == Role::Root),
        });
        order.push(n);
        n
    }

    #[allow(clippy::too_many_arguments)]
    fn compile(
        &mut self,
        store: &mut Store,
        p: PipelineId,
        table: usize,
        n: NodeId,
        c: &Cond,

        demanded: &mut Vec<NodeId>,
        order: &mut Vec<NodeId>,
        indexes: &mut Vec<(usize, usize)>,
    ) -> Filter {
        match c {
            Cond::Const(b) => Filter::Const(*b),
            Cond::Simple { col, pred, .. } => Filter::Leaf(*col, pred.clone()),
            Cond::And(items) | Cond::Or(items) => {
                let or = matches!(c, Cond::Or(_));
                let mut compiled: Vec<Filter> = items
                    .iter()
                    .map(|c| self.compile(store, p, table, n, c, demanded, order, indexes))
                    .collect();
                merge_set_leaves(&mut compiled, or);
                let compiled: Box<[Filter]> = compiled.into_boxed_slice();
                if or {
                    Filter::Or(compiled)
                } else {
                    Filter::And(compiled)
                }
            }
            Cond::Exists(e) => {
                let link = Link {
                    parent: e.link.parent.as_slice().into(),
                    child: e.link.child.as_slice().into(),
                };
                let limit = if e.flipped { None } else { Some(WITNESS_CAP) };
                let c = self.build_node(
                    store,
                    p,
                    &e.query,
                    Some(Attach {
                        parent: n,
                        parent_table: table,
                        link,
                        role: Role::Exists,
                        limit,
                    }),
                    order,
                    indexes,
                );

                // EXISTS and NOT EXISTS alike ship the first matching children: why the
                // condition holds, or why it does not. A permissions gate ships none.
                if !e.permissions {
                    demanded.push(c);
                }
                Filter::Exists {
                    node: c,
                    cols: e.link.parent.as_slice().into(),
                    negated: e.negated,
                }
            }
        }
    }

    fn hydrate(&mut self, store: &Store, n: NodeId) {
        if self.node(n).is_lazy() {
            // Its partitions are read when demanded.
            return;
        }
        if self.node(n).window.is_some() {
            self.read_window(store, n);
            return;
        }
        let node = self.node(n);
        let table = store.table(node.table);
        let candidates: Vec<RowId> = match (&node.guard, node.guard_index.map(|i| i as usize)) {
            (Some((col, v)), Some(ix)) => {
                let mut key = Vec::new();
                crate::keys::join_key_into(&mut key, core::slice::from_ref(v), &[0]);
                let _ = col;
                table.index_lookup(ix, &key).collect()
            }
            _ => table.ids().collect(),
        };
        // Row-id order walks the row slab sequentially.
        let mut candidates = candidates;
        candidates.sort_unstable();
        for rid in candidates {
            self.refresh(store, n, rid);
        }
    }

    /// The windowed state of a root level that has a `limit`: where reading starts, and
    /// what it reads. A guard value with few rows ([`SMALL_GROUP`] or fewer) is read
    /// through the guard's secondary index, sorting the few candidates when reading;
    /// any other root reads a table ordering (of its guard value's rows, or of every
    /// row), built now if no query built it before — and then needs no guard index.
    fn windowed(
        &mut self,
        store: &mut Store,
        root: NodeId,
        q: &Query,
        indexes: &mut Vec<(usize, usize)>,
    ) -> Option<Windowed> {
        if !is_windowed(q) {
            return None;
        }
        let node = self.node(root);
        let guard = node.guard.clone();
        let mut from = Vec::new();
        if let Some(b) = &q.start {
            sort_key_into(&mut from, &b.row, &q.order);
        }
        if let (Some((_, v)), Some(ix)) = (&guard, node.guard_index.map(|i| i as usize)) {
            let mut key = Vec::new();
            let small = join_key_into(&mut key, core::slice::from_ref(v), &[0])
                && store.table(q.table).index_len(ix, &key) <= self.small_group;
            if small {
                return Some(Windowed {
                    ordering: None,
                    from: from.into_boxed_slice(),
                    complete: false,
                });
            }
        }
        let (table, scratch) = store.table_mut(q.table);
        // The ordering is built (or found) while the level still holds its guard index,
        // so a guarded ordering finds its rows through it instead of building it again.
        let want = q.limit.map_or(0, Windowed::target);
        let ordering = table.ensure_ordering(
            guard.as_ref().map(|(c, v)| (*c, v)),
            &q.order,
            want,
            scratch,
        );
        if let Some(ix) = node.guard_index.map(|i| i as usize) {
            table.release_index(ix);
            if let Some(at) = indexes.iter().position(|&u| u == (q.table, ix)) {
                indexes.swap_remove(at);
            }
        }
        self.node_mut(root).guard_index = None;
        Some(Windowed {
            ordering: Some(ordering as u32),
            from: from.into_boxed_slice(),
            complete: false,
        })
    }

    /// Tears a pipeline down: its nodes leave dispatch, its store indexes are released.
    pub(crate) fn destroy(&mut self, store: &mut Store, p: PipelineId) {
        let Some(pipeline) = self.pipelines[p as usize].take() else {
            return;
        };
        for &n in &pipeline.nodes {
            self.unregister(n);
        }
        for &n in &pipeline.nodes {
            self.nodes[n as usize] = None;
            self.free_nodes.push(n);
        }
        for &(t, ix) in &pipeline.indexes {
            store.table_mut(t).0.release_index(ix);
        }
        for &(t, o) in &pipeline.orderings {
            store.table_mut(t).0.release_ordering(o);
        }
        self.free_pipelines.push(p);
    }
}

/// A guard value with at most this many rows is read through the guard index (sorting
/// its rows when a window reads on) instead of a maintained ordering.
pub(crate) const SMALL_GROUP: usize = 1024;

/// Whether a query's root level is windowed: it has a positive `limit`, so it holds a
/// prefix of its qualifying rows read from an ordering instead of all of them.
fn is_windowed(q: &Query) -> bool {
    q.limit.is_some_and(|l| l >= 1)
}
