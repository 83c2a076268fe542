//! Downstream serving: pipelines shared by QueryKey, subscribers with their own
//! epoch/seq envelopes, and op netting (docs/protocol.md, `nbatch`).

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;

use hashbrown::HashMap;

use crate::ivm::PipelineId;
pub use crate::net_op::NetOp;
use crate::schema::TableSchema;
use crate::store::Store;

/// One downstream `nbatch.batch`.
#[derive(Clone, Debug)]
pub struct Batch {
    /// The subscriber's epoch.
    pub epoch: u64,
    /// The subscriber's sequence number (0 = snapshot).
    pub seq: u64,
    /// The subscription's `normalizedFp`.
    pub normalized_fp: Arc<str>,
    /// Net ops, ordered by table name then primary key.
    pub ops: Arc<[NetOp]>,
    /// The room's `headCv` at the drain.
    pub cv: u64,
}

/// One entry of a drain: a subscriber and its batch.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The host's opaque subscriber key.
    pub sub: Arc<str>,
    /// The batch to send.
    pub batch: Batch,
}

/// The downstream hello of one subscription (docs/design/decisions.md, "Downstream hello
/// and op netting").
#[derive(Clone, Debug)]
pub struct DownstreamHello {
    /// The subscriber's epoch.
    pub epoch: u64,
    /// Every table the footprint can draw from, by name: full width, or the columns a
    /// `select` keeps (see `projection`).
    pub tables: Arc<[TableSchema]>,
    /// The fingerprint of `tables`.
    pub normalized_fp: Arc<str>,
}

/// What `subscribe` returns.
#[derive(Clone, Debug)]
pub struct Subscribed {
    /// The pipeline's key (shared by identical queries).
    pub query_key: Arc<str>,
    /// Whether an existing pipeline was reused.
    pub reused: bool,
    /// Send as `nhello.hello`.
    pub hello: DownstreamHello,
    /// Send as the seq-0 `nbatch.batch`.
    pub snapshot: Batch,
}

/// Serving state of one pipeline.
#[derive(Debug)]
pub(crate) struct Served {
    pub key: Arc<str>,
    /// The canonical text, shared with the `by_canonical` key.
    pub canonical: Arc<str>,
    pub tables: Arc<[TableSchema]>,
    pub normalized_fp: Arc<str>,
    /// The columns subscribers receive (`select`); applied as frames leave.
    pub projection: crate::projection::Projection,
    /// `headCv` when the pipeline was built (its first drain point).
    pub built_cv: u64,
    /// The attached subscribers' keys.
    pub subs: Vec<Arc<str>>,
    pub idle_since: Option<u64>,
}

/// One attached subscriber.
#[derive(Debug)]
pub(crate) struct Subscriber {
    pub pipeline: PipelineId,
    pub epoch: u64,
    pub next_seq: u64,
}

/// A query hello's tables and their fingerprint, shared by the queries over them.
pub(crate) type SharedHello = (Arc<[TableSchema]>, Arc<str>);

/// Subscribers and the pipelines they share.
#[derive(Debug, Default)]
pub(crate) struct Server {
    pub served: HashMap<PipelineId, Served>,
    pub by_canonical: HashMap<Arc<str>, PipelineId>,
    /// Hello tables and their fingerprint per table set, shared by the queries over it.
    pub hellos: HashMap<Vec<usize>, SharedHello>,
    pub subs: BTreeMap<Arc<str>, Subscriber>,
}

/// Primary-key columns per table name, looked up once per sort (the first few tables
/// without allocating: a drain rarely spans more).
struct PkCols<'s> {
    first: [(Option<Arc<str>>, &'s [usize]); 4],
    more: Vec<(Arc<str>, &'s [usize])>,
}

impl<'s> PkCols<'s> {
    fn new(store: &'s Store, ops: &[NetOp]) -> PkCols<'s> {
        let mut pks = PkCols {
            first: Default::default(),
            more: Vec::new(),
        };
        for op in ops {
            let t = op.table();
            if pks.find(t).is_some() {
                continue;
            }
            let pk: &'s [usize] = match store.table_id_shared(t) {
                Some(i) => &store.table(i).schema.primary_key,
                None => &[],
            };
            match pks.first.iter_mut().find(|(n, _)| n.is_none()) {
                Some(slot) => *slot = (Some(t.clone()), pk),
                None => pks.more.push((t.clone(), pk)),
            }
        }
        pks
    }

    fn find(&self, table: &Arc<str>) -> Option<&'s [usize]> {
        let same = |n: &Arc<str>| Arc::ptr_eq(n, table) || n == table;
        if let Some((_, pk)) = self
            .first
            .iter()
            .find(|(n, _)| n.as_ref().is_some_and(same))
        {
            return Some(pk);
        }
        self.more.iter().find(|(n, _)| same(n)).map(|(_, pk)| *pk)
    }

    #[inline]
    fn get(&self, table: &Arc<str>) -> &'s [usize] {
        // Most sorts see one table: its name is the first one's, the same `Arc`.
        match &self.first[0] {
            (Some(n), pk) if Arc::ptr_eq(n, table) => pk,
            _ => self.find(table).unwrap_or(&[]),
        }
    }
}

/// The op order: table name (bytes), then primary key (comparator order).
fn op_order(pks: &PkCols<'_>, a: &NetOp, b: &NetOp) -> Ordering {
    // Ops of one table share its name (the room's own `Arc<str>`).
    if !Arc::ptr_eq(a.table(), b.table()) {
        let o = a.table().as_bytes().cmp(b.table().as_bytes());
        if o != Ordering::Equal {
            return o;
        }
    }
    let (ra, rb) = (a.image(), b.image());
    for &c in pks.get(a.table()) {
        let o = ra.compare_at(rb, c);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Orders ops and folds two ops on one key into one: a key removed and re-added
/// within a drain gets a fresh row id, so it arrives as a remove of the old id and an
/// add of the new one.
pub(crate) fn sort_ops(store: &Store, mut ops: Vec<NetOp>) -> Vec<NetOp> {
    if ops.len() < 2 {
        return ops;
    }
    let pks = PkCols::new(store, &ops);
    ops.sort_by(|a, b| op_order(&pks, a, b));
    // Folded in place: `ops[..kept]` are the ops so far, the last one possibly merged.
    let mut kept = 0;
    for i in 0..ops.len() {
        if kept > 0 && op_order(&pks, &ops[kept - 1], &ops[i]) == Ordering::Equal {
            let (last, op) = (&ops[kept - 1], &ops[i]);
            let before = last.before().cloned().or(op.before().cloned());
            let after = op.after().cloned().or(last.after().cloned());
            match NetOp::between(op.table(), before, after) {
                Some(merged) => ops[kept - 1] = merged,
                None => kept -= 1,
            }
            continue;
        }
        ops.swap(kept, i);
        kept += 1;
    }
    ops.truncate(kept);
    ops
}

impl Server {
    /// Heap bytes: the served queries, subscribers, shared hellos and canonical texts
    /// (each shared text counted once) (see [`crate::retained`]).
    pub(crate) fn retained(&self) -> usize {
        use crate::retained as r;
        let served = self.served.allocation_size()
            + self
                .served
                .values()
                .map(|s| {
                    // A projected hello is the query's own (shared hellos are counted below).
                    let own_hello = match s.projection.is_identity() {
                        true => 0,
                        false => r::slice(&s.tables) + r::arc_str(&s.normalized_fp),
                    };
                    r::arc_str(&s.canonical)
                        + r::vec(&s.subs)
                        + s.projection.allocation_size()
                        + own_hello
                })
                .sum::<usize>();
        let hellos = self.hellos.allocation_size()
            + self
                .hellos
                .iter()
                .map(|(ids, (tables, fp))| {
                    r::vec(ids)
                        + 2 * core::mem::size_of::<usize>()
                        + r::slice(tables)
                        + r::arc_str(fp)
                })
                .sum::<usize>();
        let subs = r::btree_map(&self.subs) + self.subs.keys().map(r::arc_str).sum::<usize>();
        served + self.by_canonical.allocation_size() + hellos + subs
    }
}
