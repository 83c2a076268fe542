//! A query level as the engine maintains it.
//!
//! Every level of a query — the root, each `related` child, each EXISTS child — is one
//! node over one table. A node keeps the rows of its table that qualify (pass its
//! `where`, EXISTS gates included, and its `start` bound), partitioned by its correlation
//! columns and ordered by its completed sort; each partition has a window (`limit`, or
//! the witness cap of an EXISTS). Which partitions matter is the parent's business: the
//! node counts **demand** per partition, and a row is a *member* of the result tree while
//! its partition is demanded and it sits inside that partition's window.
//!
//! An EXISTS child keeps **all** its qualifying rows: whether a partition is empty gates
//! parent rows that are not members yet. A `related` child is **lazy**: it holds only
//! the partitions some member parent has demanded, each read through a store index on
//! its correlation columns when its first demand comes (and kept, maintained, after
//! the last), so a relational query costs what its parents' children cost, not a scan
//! of every child table.

use alloc::boxed::Box;

use hashbrown::HashSet;

use crate::keys::Key;
use crate::predicate::Pred;
use crate::store::RowId;
use crate::value::Value;

use super::part::{ByPart, Part};
use super::{NodeId, PipelineId};

/// What a node is to its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The query's root level (one partition, always demanded).
    Root,
    /// A `related` child: members ship, partitions are per parent.
    Related,
    /// An EXISTS child: the partition's emptiness gates the parent; its window holds the
    /// witnesses when the gate ships them.
    Exists,
}

/// A compiled filter over one row.
#[derive(Clone, Debug)]
pub(crate) enum Filter {
    /// Constant.
    Const(bool),
    /// A leaf test on one column.
    Leaf(usize, Pred),
    /// All hold.
    And(Box<[Filter]>),
    /// Any holds.
    Or(Box<[Filter]>),
    /// (NOT) EXISTS: whether the child node's partition for this row's `cols` is
    /// non-empty.
    Exists {
        /// The EXISTS child node.
        node: NodeId,
        /// This row's correlation columns.
        cols: Box<[usize]>,
        /// NOT EXISTS.
        negated: bool,
    },
}

/// The correlation of a child node with its parent.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    /// Columns of the parent's table.
    pub parent: Box<[usize]>,
    /// Columns of this node's table (the partition key).
    pub child: Box<[usize]>,
}

/// How a root level with a `limit` holds its rows: not every qualifying row, but a
/// prefix of them in sort order — the window plus some rows past it — read from a table
/// [ordering](crate::store::Ordering) on demand.
///
/// Invariant: the held rows are the first `held` qualifying rows; when `complete`, they
/// are all of them. While not complete, at least `limit` rows are held, so the window
/// is always right; a removal that leaves fewer reads on from the last held row. A row
/// that starts qualifying past the last held row is not held (the next read finds it).
#[derive(Debug)]
pub(crate) struct Windowed {
    /// The table ordering read (of the rows with the level's guard value, if it has one);
    /// `None`: the guard value's rows are few, found through the guard index and sorted
    /// when read.
    pub ordering: Option<u32>,
    /// Where reading starts: the `start` bound's sort key (empty: the beginning).
    pub from: Box<[u8]>,
    /// Whether every qualifying row is held.
    pub complete: bool,
}

impl Windowed {
    /// How many rows a read brings the held prefix up to: the window and half as many
    /// again. Every held row costs its keying and insertion at hydrate; the spare half
    /// lets a few removals pass before the level reads on (a seek in its ordering).
    pub fn target(limit: u32) -> usize {
        limit as usize + (limit as usize).div_ceil(2)
    }

    /// Past this many held rows, the tail is dropped back to [`Windowed::target`].
    pub fn max(limit: u32) -> usize {
        Windowed::target(limit) + limit as usize
    }
}

/// One maintained query level.
#[derive(Debug)]
pub(crate) struct Node {
    pub pipeline: PipelineId,
    pub table: usize,
    pub role: Role,
    pub parent: Option<NodeId>,
    /// Boxed: a root has none, and the node arena holds every node inline.
    pub link: Option<Box<Link>>,
    pub filter: Filter,
    pub order: Box<[(usize, bool)]>,
    /// The `start` bound's key and whether it is exclusive (boxed: rare).
    pub start: Option<Box<(Key, bool)>>,
    /// The window size per partition (`None` = everything).
    pub limit: Option<u32>,
    /// Children whose partitions this node's members demand (related children and
    /// witness-shipping EXISTS children).
    pub demanded_children: Box<[NodeId]>,
    /// For an EXISTS child: the store index on the parent's table by the parent's
    /// correlation columns (which parent rows a partition gates).
    pub parent_index: Option<u32>,
    /// An equality the filter requires (`col = value`): dispatch and hydration use it.
    pub guard: Option<(usize, Value)>,
    /// The store index on `guard`'s column.
    pub guard_index: Option<u32>,
    /// A lazy (`related`) node: the store index on its table by its correlation columns,
    /// through which a partition is read when first demanded. `None`: the node holds
    /// every qualifying row (root, EXISTS).
    pub child_index: Option<u32>,
    /// A windowed root: holds a prefix of its qualifying rows (see [`Windowed`]).
    pub window: Option<Windowed>,
    /// Qualifying rows (held ones, for a windowed root). Their images are the store's
    /// (see [`Engine::held_image`](super::Engine::held_image)).
    pub rows: HashSet<RowId>,
    /// The change (numbered by the engine) in which this node last took the image of
    /// the row that change rewrites.
    pub refreshed_in: u64,
    /// Qualifying rows by partition key (the root uses the empty key).
    pub parts: ByPart<Part>,
    /// How many member parents demand each partition.
    pub demand: ByPart<u32>,
}

impl Filter {
    /// Heap bytes of the filter tree: its nodes and what its predicates hold (an `IN`
    /// set, a LIKE matcher, a text literal).
    fn retained(&self) -> usize {
        use crate::retained as r;
        match self {
            Filter::And(items) | Filter::Or(items) => {
                r::slice(items) + items.iter().map(Filter::retained).sum::<usize>()
            }
            Filter::Exists { cols, .. } => r::slice(cols),
            Filter::Leaf(_, pred) => pred.retained(),
            Filter::Const(_) => 0,
        }
    }
}

impl Node {
    /// Heap bytes: the filter, the held rows' slots (the images are the store's), the
    /// partitions and the demand counts (see [`crate::retained`]).
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        self.link.as_ref().map_or(0, |l| {
            core::mem::size_of::<Link>() + r::slice(&l.parent) + r::slice(&l.child)
        }) + self.filter.retained()
            + r::slice(&self.order)
            + self
                .start
                .as_ref()
                .map_or(0, |b| core::mem::size_of::<(Key, bool)>() + r::key(&b.0))
            + r::slice(&self.demanded_children)
            + self.guard.as_ref().map_or(0, |(_, v)| r::value(v))
            + self.window.as_ref().map_or(0, |w| r::slice(&w.from))
            + self.rows.allocation_size()
            + self.parts.retained(super::part::Part::retained)
            + self.demand.retained(|_| 0)
    }

    /// The partition key columns (empty for the root).
    pub fn part_cols(&self) -> &[usize] {
        match &self.link {
            Some(l) => &l.child,
            None => &[],
        }
    }

    /// Whether this node's partitions gate a parent.
    pub fn is_exists(&self) -> bool {
        self.role == Role::Exists
    }

    /// Whether the node holds only its demanded partitions (see the module docs).
    pub fn is_lazy(&self) -> bool {
        self.child_index.is_some()
    }
}

/// Finds an equality the filter requires, for dispatch and reading: a top-level
/// `col = literal` (or `col IS literal`) leaf, alone or inside the top-level AND. Among
/// several, one on a non-boolean literal is preferred: a boolean column splits a table
/// in two at best, an id-like column into small groups.
pub(crate) fn find_guard(filter: &Filter) -> Option<(usize, Value)> {
    fn leaf(f: &Filter) -> Option<(usize, Value)> {
        match f {
            Filter::Leaf(col, Pred::Cmp(crate::predicate::SimpleOp::Eq, lit))
            | Filter::Leaf(col, Pred::Is(lit, false)) => lit.as_cell().map(|v| (*col, v)),
            _ => None,
        }
    }
    match filter {
        Filter::And(items) => {
            let mut first = None;
            for g in items.iter().filter_map(leaf) {
                if !matches!(g.1, Value::Bool(_)) {
                    return Some(g);
                }
                first.get_or_insert(g);
            }
            first
        }
        f => leaf(f),
    }
}
