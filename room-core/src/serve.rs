//! Downstream serving: pipelines shared by QueryKey, subscribers with their own
//! epoch/seq envelopes, and op netting (docs/protocol.md, `nbatch`).

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::ivm::PipelineId;
pub use crate::net_op::NetOp;
use crate::schema::TableSchema;

mod op_sort;
pub(crate) use op_sort::sort_ops;

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
    /// What the query holds beyond its rows: its canonical text and its compiled
    /// conditions ([`crate::Room::materialization_cost`]).
    pub cost: usize,
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
