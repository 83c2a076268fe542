//! The write plane (docs/architecture.md, the write plane): the client-mutation ledger and its watermarks,
//! mutation transactions with the commit gate, dirty-key tracking and the write-behind
//! flush.
//!
//! ## The write loop a host runs
//!
//! 1. `enable_writes` / `enable_writes_v2` once, right after the seq-0 snapshot.
//! 2. Per envelope: [`Room::begin_mutation`]; on `Tx` run the mutator against the staged
//!    transaction (`tx_get` / `tx_add` / `tx_edit` / `tx_remove`, or the keyed
//!    [`MutationTx`](keyed::MutationTx)), then [`Room::commit_mutation`] — or
//!    [`Room::reject_mutation`]. **Drain** (`commit_all`) right away: fan-out is never
//!    gated on durability.
//! 3. Journal the envelope durably, then [`Room::ack`] — the ledger rows advance as a
//!    local commit — and **drain** again (the lmid frames).
//! 4. On the flush cadence: [`Room::begin_flush`], send the batch, then
//!    [`Room::flush_ok`] or [`Room::flush_conflict`] (**drain** after a conflict that
//!    returned a cv: the corrective ops).
//!
//! Watermarks per client: *applied* (highest mid consumed by the head, the dedup
//! watermark), *acked* (the ledger row clients see) and *durable* (what the authority
//! committed).
//!
//! [`Room::begin_mutation`]: crate::Room::begin_mutation
//! [`Room::commit_mutation`]: crate::Room::commit_mutation
//! [`Room::reject_mutation`]: crate::Room::reject_mutation
//! [`Room::ack`]: crate::Room::ack
//! [`Room::begin_flush`]: crate::Room::begin_flush
//! [`Room::flush_ok`]: crate::Room::flush_ok
//! [`Room::flush_conflict`]: crate::Room::flush_conflict

mod adopt;
mod flush;
pub mod keyed;
mod keyed_json;
mod scope;
mod staging;
mod tx;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;

use crate::keys::Key;
use crate::store::Row;
use crate::value::Value;

pub use adopt::{committed_changes, ledger_advances, CommittedChange};
pub use flush::{Conflict, FlushBatch, FlushChange, FlushOk};
pub(crate) use scope::{Mode, TableScope, Writable};
pub use staging::{Begin, Commit, Deopt};

/// The ledger table every room serves lmids from.
pub const LEDGER_TABLE: &str = "_rindle_client_mutations";
/// The ledger's columns.
pub const LEDGER_COLUMNS: [&str; 2] = ["client_id", "last_mutation_id"];
/// The table durable outcome rows ride in a flush (the name the API server configures).
pub const OUTCOMES_TABLE: &str = "_rindle_room_mutation_outcomes";

/// One client's watermarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// Highest mid consumed by the head (dedup watermark).
    pub applied: u64,
    /// The ledger row's value.
    pub acked: u64,
    /// Highest mid the authority committed.
    pub durable: u64,
}

/// A recorded non-applied verdict, waiting to ride a flush as an outcome row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub client: String,
    pub mid: u64,
    /// `"rejected"` or `"deopt"`.
    pub kind: &'static str,
    pub reason: Option<String>,
    /// The envelope's mutator name (deopt rows only).
    pub name: Option<String>,
    /// The envelope's args as JSON text (deopt rows only).
    pub args: Option<String>,
}

impl Outcome {
    /// The `_rindle_room_mutation_outcomes` row `[client_id, mid, kind, reason, name, args]`.
    pub fn row(&self) -> Row {
        let opt = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::str);
        Row::from(alloc::vec![
            Value::str(&self.client),
            Value::num(self.mid as f64),
            Value::str(self.kind),
            opt(&self.reason),
            opt(&self.name),
            opt(&self.args),
        ])
    }
}

/// A key the room wrote whose net effect the authority does not hold yet.
#[derive(Clone, Debug)]
pub(crate) struct Dirty {
    /// The CAS base: the authority's last known image (`None` = absent).
    pub base: Option<Row>,
    /// While a flush carries this key: the image it sent.
    pub sent: Option<Option<Row>>,
    /// The head changed again after the in-flight batch was built.
    pub redirtied: bool,
}

/// How many unechoed flushed images a key keeps (the oldest goes first).
pub(crate) const MAX_ECHOES: usize = 8;

/// An image a flush of the room's wrote, expected back from upstream.
#[derive(Clone, Debug)]
pub(crate) struct Echo {
    /// The flight that carried it.
    pub flight: u64,
    /// Whether the authority has committed that flight (`flushOk`).
    pub committed: bool,
    /// The image (`None`: removed).
    pub image: Option<Row>,
}

/// What the batch in flight covers.
#[derive(Debug)]
pub(crate) struct Flight {
    /// Numbers the room's flushes (the echoes each one expects carry it).
    pub id: u64,
    /// The data keys the batch carries, each with the images upstream reported for it
    /// while the batch was in flight, in arrival (= authority commit) order.
    pub keys: BTreeMap<(usize, Key), Vec<Option<Row>>>,
    /// The carried keys someone else wrote during the flight: upstream reported an
    /// image other than the echo of an earlier committed batch of the room's (that
    /// echo is older than this batch, and the room's own write).
    pub foreign: alloc::collections::BTreeSet<(usize, Key)>,
    /// The image the batch writes for each of its data keys.
    pub sent: BTreeMap<(usize, Key), Option<Row>>,
    /// Ledger advances `(client, mid)`.
    pub lmids: Vec<(String, u64)>,
    /// Outcome rows `(client, mid)`.
    pub outcomes: Vec<(String, u64)>,
}

/// The write plane's state.
#[derive(Debug)]
pub(crate) struct WritePlane {
    pub mode: Mode,
    /// The ledger's table index.
    pub ledger: usize,
    pub clients: BTreeMap<String, Marks>,
    pub tx: Option<staging::Tx>,
    /// Processed mids `(client, mid)` not yet durable.
    pub pending: Vec<(String, u64)>,
    /// Dirty keys by `(table, encoded pk)`.
    pub dirty: BTreeMap<(usize, Key), Dirty>,
    /// Recorded non-applied outcomes not yet durable.
    pub outcomes: Vec<Outcome>,
    pub flight: Option<Flight>,
    /// Per data key, the images the room's flushes wrote (committed, or in flight)
    /// whose echo has not come back from upstream yet, oldest first, at most
    /// [`MAX_ECHOES`]. Upstream delivers in commit order, so an image equal to the front
    /// is the room's own write echoing back; any other image was written by someone
    /// else. (An echo the daemon netted into a later change never comes; the bound keeps
    /// such entries from piling up.)
    pub echoes: BTreeMap<(usize, Key), VecDeque<Echo>>,
    /// How many flushes the room has begun (the next flight's id).
    pub flights: u64,
}

impl WritePlane {
    /// Heap bytes: the per-client marks, pending mids, dirty keys (and the CAS-base
    /// images only they hold) and outcomes (see [`crate::retained`]).
    pub(crate) fn retained(&self) -> usize {
        use crate::retained as r;
        let clients =
            r::btree_map(&self.clients) + self.clients.keys().map(|c| c.capacity()).sum::<usize>();
        let pending = r::vec(&self.pending)
            + self
                .pending
                .iter()
                .map(|(c, _)| c.capacity())
                .sum::<usize>();
        let dirty = r::btree_map(&self.dirty)
            + self
                .dirty
                .iter()
                .map(|((_, k), d)| r::key(k) + d.base.as_ref().map_or(0, r::row))
                .sum::<usize>();
        let outcomes = r::vec(&self.outcomes)
            + self
                .outcomes
                .iter()
                .map(|o| o.client.capacity() + o.reason.as_ref().map_or(0, |s| s.capacity()))
                .sum::<usize>();
        let echoes = r::btree_map(&self.echoes)
            + self
                .echoes
                .iter()
                .map(|((_, k), q)| {
                    r::key(k)
                        + q.capacity() * core::mem::size_of::<Echo>()
                        + q.iter()
                            .filter_map(|e| e.image.as_ref())
                            .map(r::row)
                            .sum::<usize>()
                })
                .sum::<usize>();
        clients + pending + dirty + outcomes + echoes
    }

    fn new(mode: Mode, ledger: usize) -> WritePlane {
        WritePlane {
            mode,
            ledger,
            clients: BTreeMap::new(),
            tx: None,
            pending: Vec::new(),
            dirty: BTreeMap::new(),
            outcomes: Vec::new(),
            flight: None,
            echoes: BTreeMap::new(),
            flights: 0,
        }
    }

    /// A client's watermarks (zero when unknown).
    pub fn marks(&self, client: &str) -> Marks {
        self.clients.get(client).copied().unwrap_or_default()
    }

    fn marks_mut(&mut self, client: &str) -> &mut Marks {
        if !self.clients.contains_key(client) {
            self.clients.insert(String::from(client), Marks::default());
        }
        // Present: inserted above when missing.
        self.clients.get_mut(client).expect("the entry exists")
    }

    /// Whether upstream ops pass the write plane by: no change of the room's is pending,
    /// in flight or waiting for its echo, so an upstream image only meets the head.
    pub fn quiet(&self) -> bool {
        self.dirty.is_empty() && self.flight.is_none() && self.echoes.is_empty()
    }

    /// Whether mutators may write `table`.
    pub fn writable(&self, table: usize) -> bool {
        match &self.mode {
            Mode::V1 { owned } => owned.contains(&table),
            Mode::V2 { scopes } => scopes
                .iter()
                .any(|s| s.table == table && matches!(s.writable, Writable::Predicate { .. })),
        }
    }

    /// Whether mutators may read `table` with `tx_get`.
    pub fn readable(&self, table: usize, user_tables: usize) -> bool {
        match &self.mode {
            Mode::V1 { .. } => table < user_tables,
            Mode::V2 { scopes } => scopes.iter().any(|s| s.table == table),
        }
    }

    /// The scope of a table under v2.
    pub fn scope(&self, table: usize) -> Option<&TableScope> {
        match &self.mode {
            Mode::V1 { .. } => None,
            Mode::V2 { scopes } => scopes.iter().find(|s| s.table == table),
        }
    }

    /// Records that the head of `key` changed by a local commit; `before` is its image
    /// just before (the authority's image when the key was clean).
    pub fn touch_dirty(&mut self, table: usize, key: Key, before: Option<Row>) {
        match self.dirty.get_mut(&(table, key.clone())) {
            Some(d) => {
                if d.sent.is_some() {
                    d.redirtied = true;
                }
            }
            None => {
                self.dirty.insert(
                    (table, key),
                    Dirty {
                        base: before,
                        sent: None,
                        redirtied: false,
                    },
                );
            }
        }
    }

    /// Counts a processed mid as pending until it is durable.
    fn processed(&mut self, client: &str, mid: u64) {
        let marks = self.marks_mut(client);
        marks.applied = marks.applied.max(mid);
        if mid > marks.durable {
            self.pending.push((String::from(client), mid));
        }
    }

    /// Drops pending mids the durable watermarks now cover.
    fn retire_pending(&mut self) {
        let clients = &self.clients;
        self.pending
            .retain(|(c, mid)| clients.get(c).is_none_or(|m| *mid > m.durable));
    }
}

mod ledger;

#[cfg(test)]
mod adopt_tests;
#[cfg(test)]
mod tests;
