//! Incremental view maintenance: materialized queries (pipelines of [nodes](node)) kept
//! current under row changes, each with its [footprint](footprint).
//!
//! The engine owns nodes and pipelines; the [store](crate::store) owns rows. Callers
//! write a row change to the store first, then call [`Engine::on_change`].

mod build;
mod fold;
pub(crate) mod footprint;
mod lazy;
mod maintain;
pub(crate) mod node;
pub(crate) mod part;
mod window;

use alloc::boxed::Box;
use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::store::RowId;
use crate::value::Value;

use footprint::Footprint;
use node::Node;

/// A node's handle.
pub(crate) type NodeId = u32;
/// A pipeline's handle.
pub(crate) type PipelineId = u32;

/// One materialized query.
#[derive(Debug)]
pub(crate) struct Pipeline {
    /// Every node, in build (post-) order.
    pub nodes: Box<[NodeId]>,
    /// Store indexes this pipeline holds a use of: `(table, index)`.
    pub indexes: Box<[(usize, usize)]>,
    /// Store orderings this pipeline holds a use of: `(table, ordering)`.
    pub orderings: Box<[(usize, usize)]>,
    /// The current result footprint.
    pub footprint: Footprint,
}

/// Which nodes to refresh when a table changes.
#[derive(Debug, Default)]
struct TableDispatch {
    /// Nodes that may hold any row.
    unguarded: Vec<NodeId>,
    /// Nodes that only hold rows with `col = value`, by column then value.
    guarded: HashMap<usize, HashMap<Value, Vec<NodeId>>>,
}

/// All materialized queries of a room.
#[derive(Debug, Default)]
pub(crate) struct Engine {
    nodes: Vec<Option<Node>>,
    free_nodes: Vec<NodeId>,
    pipelines: Vec<Option<Pipeline>>,
    free_pipelines: Vec<PipelineId>,
    dispatch: Vec<TableDispatch>,
    /// Pending `(node, row)` refreshes.
    work: Vec<(NodeId, RowId)>,
    /// A reusable window-event buffer.
    events: Vec<part::WindowEvent>,
    /// The row the change being applied rewrites and its old image (see
    /// [`footprint::Before`]).
    changing: Option<(footprint::FpKey, Option<crate::store::Row>)>,
    /// Counts applied changes: a node's [`Node::refreshed_in`] stamp.
    change_no: u64,
    /// Pipelines whose footprint went from clean to changed since the last drain.
    touched: Vec<PipelineId>,
    /// Window-row buffers to reuse (see `Engine::window_rows`).
    row_bufs: Vec<Vec<(RowId, crate::store::Row)>>,
    /// Key buffers to reuse (`&mut self` paths).
    bufs: Vec<Vec<u8>>,
    /// A sort-prefix buffer to reuse (a lazy partition's first read).
    prefixes: Vec<(u64, RowId)>,
    /// A key buffer for `&self` paths (taken and put back, never held across calls).
    scratch: Scratch,
    /// Guard values with at most this many rows are read through the guard index
    /// ([`build::SMALL_GROUP`] unless a test says otherwise).
    pub(crate) small_group: usize,
    /// Testing knob: the rows a lazy level's partition front keeps (at least its
    /// `limit`); `None`: [`node::Windowed::target`].
    pub(crate) front_rows: Option<usize>,
}

/// A reusable key buffer behind a `Cell`: `take` it, use it, `set` it back.
#[derive(Default)]
pub(crate) struct Scratch(core::cell::Cell<Vec<u8>>);

impl Scratch {
    pub(crate) fn take(&self) -> Vec<u8> {
        let mut b = self.0.take();
        b.clear();
        b
    }

    pub(crate) fn set(&self, b: Vec<u8>) {
        self.0.set(b);
    }
}

impl core::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Scratch")
    }
}

impl Engine {
    /// The rows every node of every pipeline holds, counted per node (a row two levels
    /// hold counts twice): what materialized queries hold beyond their text.
    pub fn held_rows(&self) -> usize {
        self.nodes.iter().flatten().map(|n| n.rows.len()).sum()
    }

    /// The rows the nodes of pipeline `p` hold (0 for a pipeline that is gone).
    pub(crate) fn pipeline_rows(&self, p: PipelineId) -> usize {
        self.pipelines
            .get(p as usize)
            .and_then(Option::as_ref)
            .map_or(0, |pl| {
                pl.nodes
                    .iter()
                    .filter_map(|&n| self.nodes.get(n as usize).and_then(Option::as_ref))
                    .map(|n| n.rows.len())
                    .sum()
            })
    }

    /// Heap bytes of every node, pipeline and dispatch list (see [`crate::retained`]).
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        let nodes = r::vec(&self.nodes)
            + self
                .nodes
                .iter()
                .flatten()
                .map(Node::retained)
                .sum::<usize>();
        let pipelines = r::vec(&self.pipelines)
            + self
                .pipelines
                .iter()
                .flatten()
                .map(|p| {
                    r::slice(&p.nodes)
                        + r::slice(&p.indexes)
                        + r::slice(&p.orderings)
                        + p.footprint.retained()
                })
                .sum::<usize>();
        let dispatch = r::vec(&self.dispatch)
            + self
                .dispatch
                .iter()
                .map(|d| {
                    r::vec(&d.unguarded)
                        + d.guarded.allocation_size()
                        + d.guarded
                            .values()
                            .map(|m| {
                                m.allocation_size()
                                    + m.iter()
                                        .map(|(v, ids)| r::value(v) + r::vec(ids))
                                        .sum::<usize>()
                            })
                            .sum::<usize>()
                })
                .sum::<usize>();
        let scratch = {
            let b = self.scratch.0.take();
            let n = b.capacity();
            self.scratch.0.set(b);
            n
        };
        nodes
            + pipelines
            + dispatch
            + r::vec(&self.free_nodes)
            + r::vec(&self.free_pipelines)
            + r::vec(&self.work)
            + r::vec(&self.events)
            + r::vec(&self.touched)
            + r::vec(&self.bufs)
            + self.bufs.iter().map(r::vec).sum::<usize>()
            + r::vec(&self.row_bufs)
            + self.row_bufs.iter().map(r::vec).sum::<usize>()
            + scratch
    }

    /// An engine over `tables` tables.
    pub fn new(tables: usize) -> Engine {
        let mut e = Engine {
            small_group: build::SMALL_GROUP,
            front_rows: None,
            ..Engine::default()
        };
        e.dispatch.resize_with(tables, TableDispatch::default);
        e
    }

    #[inline]
    pub(crate) fn node(&self, n: NodeId) -> &Node {
        // Node ids held anywhere (dispatch, children, filters, pipelines) are removed
        // before their node is freed, so a held id always names a live node.
        self.nodes[n as usize]
            .as_ref()
            .expect("node ids held by the engine are live")
    }

    #[inline]
    pub(crate) fn node_mut(&mut self, n: NodeId) -> &mut Node {
        // Same invariant as `node`.
        self.nodes[n as usize]
            .as_mut()
            .expect("node ids held by the engine are live")
    }

    /// A live pipeline.
    pub fn pipeline(&self, p: PipelineId) -> &Pipeline {
        // Pipeline ids are only handed out for live pipelines and dropped by `destroy`.
        self.pipelines[p as usize]
            .as_ref()
            .expect("pipeline ids held by the room are live")
    }

    /// A live pipeline, mutably.
    pub fn pipeline_mut(&mut self, p: PipelineId) -> &mut Pipeline {
        // Same invariant as `pipeline`.
        self.pipelines[p as usize]
            .as_mut()
            .expect("pipeline ids held by the room are live")
    }

    /// A pipeline, if `p` names a live one.
    pub fn pipeline_opt_mut(&mut self, p: PipelineId) -> Option<&mut Pipeline> {
        self.pipelines.get_mut(p as usize).and_then(Option::as_mut)
    }

    /// Takes the pipelines whose footprint changed since the last call (may repeat ids
    /// or name pipelines destroyed since; callers check).
    pub fn take_touched(&mut self) -> Vec<PipelineId> {
        core::mem::take(&mut self.touched)
    }

    /// Hands back the list [`Engine::take_touched`] returned (its capacity is reused).
    pub fn put_touched(&mut self, mut list: Vec<PipelineId>) {
        if self.touched.is_empty() {
            list.clear();
            self.touched = list;
        }
    }

    /// Makes room for a table added to the store.
    pub fn add_table(&mut self) {
        self.dispatch.push(TableDispatch::default());
    }

    /// A cleared key buffer from the pool.
    #[inline]
    pub(crate) fn take_buf(&mut self) -> Vec<u8> {
        self.bufs.pop().unwrap_or_default()
    }

    /// Returns a key buffer to the pool.
    #[inline]
    pub(crate) fn put_buf(&mut self, mut b: Vec<u8>) {
        if self.bufs.len() < 32 {
            b.clear();
            self.bufs.push(b);
        }
    }

    fn alloc_node(&mut self) -> NodeId {
        match self.free_nodes.pop() {
            Some(n) => n,
            None => {
                self.nodes.push(None);
                (self.nodes.len() - 1) as NodeId
            }
        }
    }

    fn register(&mut self, n: NodeId) {
        let node = self.node(n);
        let (table, guard) = (node.table, node.guard.clone());
        let d = &mut self.dispatch[table];
        match guard {
            Some((col, v)) => {
                let nodes = d.guarded.entry(col).or_default().entry(v).or_default();
                // Most guard values have one node: no spare capacity for the first.
                if nodes.is_empty() {
                    nodes.reserve_exact(1);
                }
                nodes.push(n);
            }
            None => d.unguarded.push(n),
        }
    }

    fn unregister(&mut self, n: NodeId) {
        let node = self.node(n);
        let (table, guard) = (node.table, node.guard.clone());
        let d = &mut self.dispatch[table];
        let remove = |list: &mut Vec<NodeId>| {
            if let Some(i) = list.iter().position(|&x| x == n) {
                list.swap_remove(i);
            }
        };
        match guard {
            Some((col, v)) => {
                if let Some(by_value) = d.guarded.get_mut(&col) {
                    if let Some(list) = by_value.get_mut(&v) {
                        remove(list);
                        if list.is_empty() {
                            by_value.remove(&v);
                        }
                    }
                    if by_value.is_empty() {
                        d.guarded.remove(&col);
                    }
                }
            }
            None => remove(&mut d.unguarded),
        }
    }

    /// How many nodes are live (diagnostics).
    pub fn node_count(&self) -> usize {
        self.nodes.iter().flatten().count()
    }
}
