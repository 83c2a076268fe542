//! [`Room`]: the typed API of one room — the upstream-fed base store and its downstream
//! serving state.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::ast::{Cond, Query};
use crate::canonical::canonical_text;
use crate::error::{Error, ErrorCode};
use crate::fingerprint::{normalized_fp, Fnv64};
use crate::ivm::Engine;
use crate::projection::Projection;
use crate::schema::{Hello, TableSchema};
use crate::serve::{
    sort_ops, Batch, DownstreamHello, Frame, NetOp, Served, Server, Subscribed, Subscriber,
};
use crate::store::{Row, Store, StoreRefusal};

pub use crate::upstream::{ApplyStatus, UpstreamBatch};

/// One room. See the [crate docs](crate) for the mutate-then-drain loop.
#[derive(Debug)]
pub struct Room {
    pub(crate) store: Store,
    pub(crate) engine: Engine,
    pub(crate) server: Server,
    pub(crate) upstream_fp: String,
    pub(crate) epoch: u64,
    pub(crate) last_seq: Option<u64>,
    pub(crate) cv: Option<f64>,
    pub(crate) head_cv: u64,
    /// `head_cv` at the last [`Room::commit_all`]: a reused query's snapshot is its state
    /// then.
    pub(crate) drained_cv: u64,
    pub(crate) poisoned: Option<String>,
    pub(crate) idle_ttl_ms: u64,
    /// The write plane, once enabled.
    pub(crate) writes: Option<crate::write::WritePlane>,
    /// How many tables came from the upstream hello (system tables follow).
    pub(crate) user_tables: usize,
}

impl Room {
    /// Opens a room from a validated upstream hello. `idle_ttl_ms` is how long a query
    /// with no subscribers stays materialized before [`Room::sweep`] reclaims it.
    pub fn open(hello: Hello, idle_ttl_ms: u64) -> Result<Room, Error> {
        hello.validate()?;
        let tables = hello.tables.len();
        Ok(Room {
            store: Store::new(hello.tables),
            engine: Engine::new(tables),
            server: Server::default(),
            upstream_fp: hello.normalized_fp,
            epoch: hello.epoch,
            last_seq: None,
            cv: None,
            head_cv: 0,
            drained_cv: 0,
            poisoned: None,
            idle_ttl_ms,
            writes: None,
            user_tables: tables,
        })
    }

    /// The bytes this room retains on the heap: base rows and their indexes and
    /// orderings, every materialized query, subscriber and serving state, and the write
    /// plane — walked structure by structure with their capacities (see
    /// `retained.rs`), not estimated from row counts and not read from the allocator.
    /// A fleet box's memory budgets rest on it (docs/fleet.md, "Memory budgets"). It
    /// walks every row: call it when a budget is checked, not per operation.
    pub fn retained_bytes(&self) -> usize {
        self.store.retained()
            + self.engine.retained()
            + self.server.retained()
            + self.writes.as_ref().map_or(0, |w| w.retained())
            + self.upstream_fp.capacity()
    }

    /// The upstream epoch the store was opened under.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The `cv` of the last applied upstream batch that carried one.
    pub fn cv(&self) -> Option<f64> {
        self.cv
    }

    /// The room's own commit counter: 0 before the snapshot, then the snapshot's `cv`;
    /// per live batch the greater of `head_cv + 1` and the batch's `cv`; +1 per local
    /// commit that changed the head (docs/design/decisions.md, "Upstream hello and
    /// batches").
    pub fn head_cv(&self) -> u64 {
        self.head_cv
    }

    /// Whether the snapshot applied and nothing poisoned the store.
    pub fn is_live(&self) -> bool {
        self.last_seq.is_some() && self.poisoned.is_none()
    }

    /// Whether an apply poisoned the store (tear down and re-subscribe upstream).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// Why the store was poisoned (the batch it could not apply), if it was.
    pub fn poisoned_reason(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// Testing knob: queries subscribed from now on read a guard value's rows through
    /// the guard index (sorting them) when it has at most `rows` rows, and through a
    /// maintained table ordering otherwise (default 1024). Results do not depend on it;
    /// the differential tests run both ways.
    #[doc(hidden)]
    pub fn set_window_small_group(&mut self, rows: usize) {
        self.engine.small_group = rows;
    }

    /// Testing knob: a table ordering built for a windowed query from now on holds its
    /// first `rows` rows (by default 256, or what its first reader asks for if more),
    /// and is widened when a reader gets past them. Results do not depend on it; the window
    /// tests run with orderings of one or two rows.
    #[doc(hidden)]
    pub fn set_ordering_first_rows(&mut self, rows: usize) {
        self.store.set_ordering_first_rows(rows);
    }

    /// Testing knob: the block ranges that let an ordering build skip rows cover blocks
    /// of `1 << shift` row slots (by default 512, the most). Results do not depend on
    /// it; the window tests run with blocks of one to eight slots.
    #[doc(hidden)]
    pub fn set_block_shift(&mut self, shift: u32) {
        self.store.set_block_shift(shift);
    }

    /// Testing knob: a `related` level with a `limit` holds, of each partition, the
    /// first `rows` rows (at least the limit; by default one and a half times the limit) and reads on
    /// when removals leave fewer than the limit. Results do not depend on it; the
    /// differential oracle runs with fronts of one row.
    #[doc(hidden)]
    pub fn set_related_front_rows(&mut self, rows: usize) {
        self.engine.front_rows = Some(rows);
    }

    /// How many queries are materialized (after dedup).
    pub fn materialization_count(&self) -> usize {
        self.server.served.len()
    }

    /// How many subscribers are attached.
    pub fn subscriber_count(&self) -> usize {
        self.server.subs.len()
    }

    /// The tables of the upstream hello (plus any system tables), in table order.
    pub fn tables(&self) -> impl Iterator<Item = &TableSchema> {
        self.store.schemas()
    }

    /// The room's shared name of a table (no allocation for the caller).
    pub fn table_name(&self, name: &str) -> Option<Arc<str>> {
        self.store
            .table_id(name)
            .map(|t| self.store.table(t).schema.name.clone())
    }

    /// How many tables the upstream hello declared.
    pub(crate) fn user_tables(&self) -> usize {
        self.user_tables
    }

    /// Errors unless the room can serve: `store is not live` (no snapshot yet, or
    /// poisoned — the published room's words; [`Room::poisoned_reason`] says why).
    pub(crate) fn require_live(&self) -> Result<(), Error> {
        if self.poisoned.is_some() || self.last_seq.is_none() {
            return Err(Error::new(ErrorCode::NotLive, "store is not live"));
        }
        Ok(())
    }

    /// Inserts a row and maintains every query.
    pub(crate) fn insert_row(&mut self, t: usize, row: Row) -> Result<(), InsertRefused> {
        let (table, scratch) = self.store.table_mut(t);
        let rid = table
            .insert(row.clone(), scratch)
            .map_err(|why| InsertRefused {
                table: table.schema.name.clone(),
                why,
            })?;
        self.engine.on_change(&self.store, t, rid, None, Some(&row));
        Ok(())
    }

    /// Removes a row and maintains every query.
    pub(crate) fn remove_row(&mut self, t: usize, rid: crate::store::RowId) {
        let (table, scratch) = self.store.table_mut(t);
        if let Some(old) = table.remove(rid, scratch) {
            self.engine.on_change(&self.store, t, rid, Some(&old), None);
        }
    }

    /// Replaces a row's image (same key) and maintains every query.
    pub(crate) fn replace_row(&mut self, t: usize, rid: crate::store::RowId, row: Row) {
        let (table, scratch) = self.store.table_mut(t);
        if let Some(old) = table.replace(rid, row.clone(), scratch) {
            self.engine
                .on_change(&self.store, t, rid, Some(&old), Some(&row));
        }
    }

    /// Parses and validates a wire AST against this room's tables: the upstream hello's
    /// and, once writes are enabled, the client-mutation ledger (a lease may read it, as
    /// the published room allows; which rows is the lease issuer's decision).
    pub fn parse_query(&self, ast_json: &str) -> Result<Query, Error> {
        Query::parse(ast_json, &self.store)
    }

    /// Parses a subscription's AST and checks the store, in the published room's
    /// order: a malformed AST first, then a store that is not live
    /// (`subscribe: Query(StoreNotLive)`), then a query that cannot be built.
    pub fn parse_subscription(&self, ast_json: &str) -> Result<Query, Error> {
        let parsed = self.parse_query(ast_json);
        if matches!(&parsed, Err(e) if !e.is_query_build()) {
            return parsed;
        }
        self.require_live()
            .map_err(|_| Error::store_not_live("subscribe"))?;
        parsed
    }

    /// Attaches subscriber `sub` at `epoch` to `query` (materializing it, or reusing the
    /// pipeline of an identical query). Send `hello`, then `snapshot` (seq 0), then this
    /// subscriber's frames from each [`Room::commit_all`]. Re-subscribing an existing
    /// `sub` replaces its envelope.
    pub fn subscribe(
        &mut self,
        sub: &str,
        epoch: u64,
        query: &Query,
        now_ms: u64,
    ) -> Result<Subscribed, Error> {
        self.require_live()
            .map_err(|_| Error::store_not_live("subscribe"))?;
        let canonical = canonical_text(query, &self.store);
        let (p, reused) = match self.server.by_canonical.get(canonical.as_str()) {
            Some(&p) => (p, true),
            None => {
                let p = self.engine.build(&mut self.store, query);
                let projection = Projection::of(query, &self.store);
                let (tables, normalized_fp) = self.hello_of(query, &projection);
                let mut h = Fnv64::new();
                h.bytes(canonical.as_bytes());
                let cost = canonical.len() + query.conditions_bytes();
                let canonical: Arc<str> = Arc::from(canonical);
                let served = Served {
                    key: Arc::from(h.hex()),
                    canonical: canonical.clone(),
                    tables,
                    normalized_fp,
                    projection,
                    built_cv: self.head_cv,
                    subs: Vec::new(),
                    idle_since: None,
                    cost,
                };
                self.server.served.insert(p, served);
                self.server.by_canonical.insert(canonical, p);
                (p, false)
            }
        };
        self.detach(sub, now_ms);
        let key: Arc<str> = Arc::from(sub);
        self.server.subs.insert(
            key.clone(),
            Subscriber {
                pipeline: p,
                epoch,
                next_seq: 1,
            },
        );
        let served = self
            .server
            .served
            .get_mut(&p)
            .ok_or_else(internal_missing_pipeline)?;
        // Most queries have one subscriber: no spare capacity for the first.
        if served.subs.is_empty() {
            served.subs.reserve_exact(1);
        }
        served.subs.push(key);
        served.idle_since = None;
        let (query_key, tables, fp) = (
            served.key.clone(),
            served.tables.clone(),
            served.normalized_fp.clone(),
        );
        // A new pipeline is the head now. A reused one hands out its state at its last
        // drain (stamped with that drain's cv); the changes since reach the new
        // subscriber with everyone else's at the next drain — the published room's rule.
        let (ops, cv): (Arc<[NetOp]>, u64) = match reused {
            false => (self.snapshot_ops(p).into(), self.head_cv),
            true => {
                let drained_cv = self
                    .server
                    .served
                    .get(&p)
                    .map_or(self.head_cv, |s| s.built_cv.max(self.drained_cv));
                (self.drained_snapshot_ops(p).into(), drained_cv)
            }
        };
        let ops = self
            .server
            .served
            .get(&p)
            .and_then(|s| s.projection.ops(&ops))
            .unwrap_or(ops);
        Ok(Subscribed {
            query_key,
            reused,
            hello: DownstreamHello {
                epoch,
                tables,
                normalized_fp: fp.clone(),
            },
            snapshot: Batch {
                epoch,
                seq: 0,
                normalized_fp: fp,
                ops,
                cv,
            },
        })
    }

    /// The footprint's state at its last drain, as a snapshot's ops.
    fn drained_snapshot_ops(&self, p: crate::ivm::PipelineId) -> Vec<NetOp> {
        self.snapshot_of(self.engine.pipeline(p).footprint.drained_rows(&self.store))
    }

    /// The footprint now, as a snapshot's ops.
    fn snapshot_ops(&self, p: crate::ivm::PipelineId) -> Vec<NetOp> {
        self.snapshot_of(self.engine.pipeline(p).footprint.rows(&self.store))
    }

    /// Rows as a snapshot: adds in table, then primary-key order.
    fn snapshot_of<'r>(&self, rows: impl Iterator<Item = (u32, &'r Row)>) -> Vec<NetOp> {
        let ops = rows
            .map(|(t, row)| NetOp::Add {
                table: self.store.table(t as usize).schema.name.clone(),
                row: row.clone(),
            })
            .collect();
        sort_ops(&self.store, ops)
    }

    /// Detaches `sub`; its pipeline stays materialized for the idle TTL. Returns whether
    /// it was attached.
    pub fn unsubscribe(&mut self, sub: &str, now_ms: u64) -> bool {
        self.detach(sub, now_ms)
    }

    /// Takes back a subscribe: detaches `sub` and, if its query has no other
    /// subscriber, reclaims it at once (no idle grace) — a subscribe refused after the
    /// fact (a memory budget) leaves nothing behind. Returns whether `sub` existed.
    pub fn undo_subscribe(&mut self, sub: &str, now_ms: u64) -> bool {
        let Some(pipeline) = self.server.subs.get(sub).map(|s| s.pipeline) else {
            return false;
        };
        self.detach(sub, now_ms);
        let idle = self
            .server
            .served
            .get(&pipeline)
            .is_some_and(|s| s.subs.is_empty());
        if idle {
            if let Some(served) = self.server.served.remove(&pipeline) {
                self.server.by_canonical.remove(&*served.canonical);
            }
            self.engine.destroy(&mut self.store, pipeline);
        }
        true
    }

    fn detach(&mut self, sub: &str, now_ms: u64) -> bool {
        let Some(s) = self.server.subs.remove(sub) else {
            return false;
        };
        if let Some(served) = self.server.served.get_mut(&s.pipeline) {
            if let Some(i) = served.subs.iter().position(|k| &**k == sub) {
                served.subs.swap_remove(i);
            }
            if served.subs.is_empty() {
                served.idle_since = Some(now_ms);
            }
        }
        true
    }

    /// Reclaims queries idle for at least the TTL; returns how many.
    pub fn sweep(&mut self, now_ms: u64) -> usize {
        let ttl = self.idle_ttl_ms;
        let expired: Vec<crate::ivm::PipelineId> = self
            .server
            .served
            .iter()
            .filter(|(_, s)| {
                s.subs.is_empty()
                    && s.idle_since
                        .is_some_and(|t| now_ms.saturating_sub(t) >= ttl)
            })
            .map(|(&p, _)| p)
            .collect();
        for &p in &expired {
            if let Some(served) = self.server.served.remove(&p) {
                self.server.by_canonical.remove(&*served.canonical);
            }
            self.engine.destroy(&mut self.store, p);
        }
        expired.len()
    }

    /// Whether an identical query is materialized now (a subscribe to it would reuse
    /// its pipeline rather than build one).
    pub fn is_materialized(&self, query: &Query) -> bool {
        self.server
            .by_canonical
            .contains_key(canonical_text(query, &self.store).as_str())
    }

    /// What materializing `query` would add to [`Room::query_bytes`]: its canonical
    /// text and what its compiled conditions hold (an `IN` list's set, a LIKE matcher).
    /// `None` when an equal query is materialized already (subscribing shares it).
    pub fn materialization_cost(&self, query: &Query) -> Option<usize> {
        let canonical = canonical_text(query, &self.store);
        (!self.server.by_canonical.contains_key(canonical.as_str()))
            .then(|| canonical.len() + query.conditions_bytes())
    }

    /// The bytes every materialized query holds beyond its rows, as
    /// [`Room::materialization_cost`] counts them.
    pub fn query_bytes(&self) -> usize {
        self.server.served.values().map(|s| s.cost).sum()
    }

    /// The rows the nodes of every materialized query hold (a row two levels hold
    /// counts twice).
    pub fn held_rows(&self) -> usize {
        self.engine.held_rows()
    }

    /// Reclaims idle queries, longest idle first and regardless of the TTL, until at
    /// most `keep` queries are materialized (or none is idle); returns how many. A host
    /// calls it when it would pass its cap on materializations.
    pub fn reclaim_idle(&mut self, keep: usize) -> usize {
        let mut left = self.server.served.len();
        self.reclaim_idle_while(|_, _| {
            let more = left > keep;
            left = left.saturating_sub(1);
            more
        })
    }

    /// Reclaims idle queries, longest idle first, until the materialized ones hold at
    /// most `keep_bytes` ([`Room::query_bytes`]) or none is idle; returns how many. A
    /// host calls it when a new query would pass its cap on query bytes.
    pub fn reclaim_idle_bytes(&mut self, keep_bytes: usize) -> usize {
        let mut held = self.query_bytes();
        self.reclaim_idle_while(|_, q| {
            let more = held > keep_bytes;
            held = held.saturating_sub(q.cost);
            more
        })
    }

    /// Reclaims idle queries, longest idle first, until the materialized ones hold at
    /// most `keep_rows` rows ([`Room::held_rows`]) or none is idle; returns how many. A
    /// host calls it when a new query took the room past its cap on held rows.
    pub fn reclaim_idle_rows(&mut self, keep_rows: usize) -> usize {
        let mut held = self.held_rows();
        self.reclaim_idle_while(|engine, q| {
            let more = held > keep_rows;
            held = held.saturating_sub(engine.pipeline_rows(q.pipeline));
            more
        })
    }

    /// Drops idle queries, longest idle first, while `more(engine, the next)` says so.
    fn reclaim_idle_while(
        &mut self,
        mut more: impl FnMut(&crate::ivm::Engine, IdleQuery) -> bool,
    ) -> usize {
        let mut idle: Vec<(u64, crate::ivm::PipelineId, usize)> = self
            .server
            .served
            .iter()
            .filter(|(_, s)| s.subs.is_empty())
            .filter_map(|(&p, s)| s.idle_since.map(|t| (t, p, s.cost)))
            .collect();
        idle.sort_unstable();
        let mut reclaimed = 0;
        for &(_, p, cost) in &idle {
            if !more(&self.engine, IdleQuery { pipeline: p, cost }) {
                break;
            }
            if let Some(served) = self.server.served.remove(&p) {
                self.server.by_canonical.remove(&*served.canonical);
            }
            self.engine.destroy(&mut self.store, p);
            reclaimed += 1;
        }
        reclaimed
    }

    /// Drains every query once: one frame per subscriber with a non-empty net change
    /// since its last frame, in subscriber-key order, stamped with `headCv`. Empty when
    /// nothing changed or the room is not live.
    pub fn commit_all(&mut self) -> Vec<Frame> {
        if !self.is_live() {
            return Vec::new();
        }
        // Only pipelines whose footprint changed, and only their subscribers, are
        // visited: a drain costs what changed.
        let mut frames = Vec::new();
        let touched = self.engine.take_touched();
        for &p in &touched {
            let Some(pipeline) = self.engine.pipeline_opt_mut(p) else {
                continue;
            };
            if !pipeline.footprint.has_changes() {
                continue;
            }
            let changes = pipeline.footprint.take_changes(&self.store);
            let ops = sort_ops(&self.store, changes);
            let Some(served) = self.server.served.get(&p) else {
                continue;
            };
            if ops.is_empty() {
                continue;
            }
            let ops: Arc<[NetOp]> = ops.into();
            let ops = served.projection.ops(&ops).unwrap_or(ops);
            for key in &served.subs {
                let Some(s) = self.server.subs.get_mut(key) else {
                    continue;
                };
                frames.push(Frame {
                    sub: key.clone(),
                    batch: Batch {
                        epoch: s.epoch,
                        seq: s.next_seq,
                        normalized_fp: served.normalized_fp.clone(),
                        ops: ops.clone(),
                        cv: self.head_cv,
                    },
                });
                s.next_seq += 1;
            }
        }
        self.engine.put_touched(touched);
        frames.sort_by(|a, b| a.sub.as_bytes().cmp(b.sub.as_bytes()));
        self.drained_cv = self.head_cv;
        self.store.end_drain();
        frames
    }

    /// The rows a subscriber's query currently holds, as `(table, row)` in op order
    /// (table name, then primary key), for tests and diagnostics.
    pub fn footprint(&self, sub: &str) -> Option<Vec<(Arc<str>, Row)>> {
        let s = self.server.subs.get(sub)?;
        Some(
            self.snapshot_ops(s.pipeline)
                .into_iter()
                .filter_map(|op| match op {
                    NetOp::Add { table, row } => Some((table, row)),
                    _ => None,
                })
                .collect(),
        )
    }

    /// A table's rows in primary-key order (tests and diagnostics).
    pub fn rows(&self, table: &str) -> Vec<Row> {
        match self.store.table_id(table) {
            Some(t) => self.store.table(t).iter().map(|(_, r)| r.clone()).collect(),
            None => Vec::new(),
        }
    }

    /// How many engine nodes are live (diagnostics).
    pub fn node_count(&self) -> usize {
        self.engine.node_count()
    }
}

fn internal_missing_pipeline() -> Error {
    Error::new(
        ErrorCode::Internal,
        "internal: a subscribed pipeline has no serving state",
    )
}

/// The tables a query's footprint can draw rows from: the root, related levels, and the
/// children of witness-shipping EXISTS gates — sorted by name, cut by the query's
/// projection.
impl Room {
    /// The hello tables of a query and their fingerprint: built once per table set and
    /// shared by every query over it.
    fn hello_of(&mut self, q: &Query, projection: &Projection) -> (Arc<[TableSchema]>, Arc<str>) {
        if !projection.is_identity() {
            // Projected hellos are as many as the `select`s clients write: not cached.
            let tables: Arc<[TableSchema]> = hello_tables(q, &self.store)
                .iter()
                .map(|t| projection.schema(t))
                .collect();
            let fp: Arc<str> = Arc::from(normalized_fp(tables.iter()));
            return (tables, fp);
        }
        let mut ids = Vec::new();
        hello_table_ids(q, &mut ids);
        ids.sort_unstable();
        if let Some((tables, fp)) = self.server.hellos.get(&ids) {
            return (tables.clone(), fp.clone());
        }
        let tables: Arc<[TableSchema]> = hello_tables(q, &self.store).into();
        let fp: Arc<str> = Arc::from(normalized_fp(tables.iter()));
        // A cache: bounded however many table sets clients name.
        if self.server.hellos.len() >= MAX_CACHED_HELLOS {
            self.server.hellos.clear();
        }
        self.server.hellos.insert(ids, (tables.clone(), fp.clone()));
        (tables, fp)
    }
}

/// How many table sets' hellos [`Room::hello_of`] keeps.
const MAX_CACHED_HELLOS: usize = 64;

/// The tables a query's hello names (unsorted, each once).
fn hello_table_ids(q: &Query, out: &mut Vec<usize>) {
    fn cond(c: &Cond, out: &mut Vec<usize>) {
        match c {
            Cond::And(items) | Cond::Or(items) => items.iter().for_each(|c| cond(c, out)),
            Cond::Exists(e) if !e.permissions => hello_table_ids(&e.query, out),
            _ => {}
        }
    }
    if !out.contains(&q.table) {
        out.push(q.table);
    }
    if let Some(c) = &q.filter {
        cond(c, out);
    }
    for r in &q.related {
        hello_table_ids(&r.query, out);
    }
}

fn hello_tables(q: &Query, store: &Store) -> Vec<TableSchema> {
    let mut ids = Vec::new();
    hello_table_ids(q, &mut ids);
    let mut tables: Vec<TableSchema> = ids.iter().map(|&t| store.table(t).schema.clone()).collect();
    tables.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    tables
}

/// A row the store refused to insert, and into which table.
#[derive(Debug)]
pub(crate) struct InsertRefused {
    pub table: Arc<str>,
    pub why: StoreRefusal,
}

impl core::fmt::Display for InsertRefused {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = &self.table;
        match self.why {
            StoreRefusal::KeyExists => write!(f, "add of an existing key in {name:?}"),
            StoreRefusal::WrongWidth => write!(f, "a {name:?} row has the wrong width"),
        }
    }
}

/// An idle query [`Room::reclaim_idle_while`] may drop next: its pipeline and its
/// [`Room::materialization_cost`].
#[derive(Clone, Copy)]
struct IdleQuery {
    pipeline: crate::ivm::PipelineId,
    cost: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use alloc::format;
    use alloc::vec;

    /// The epoch-1 hello of `tables` (sorted by name).
    fn hello_of(tables: Vec<TableSchema>) -> Hello {
        Hello {
            epoch: 1,
            comparator_version: crate::value::COMPARATOR_VERSION,
            normalized_fp: normalized_fp(tables.iter()),
            tables,
        }
    }

    /// However many table sets clients' queries name, the shared-hello cache stays
    /// within [`MAX_CACHED_HELLOS`], and every query still gets its own tables.
    #[test]
    fn the_shared_hello_cache_is_bounded() {
        let mut names: Vec<String> = (0..MAX_CACHED_HELLOS + 6)
            .map(|i| format!("t{i}"))
            .collect();
        names.sort();
        let tables: Vec<TableSchema> = names
            .iter()
            .map(|n| TableSchema::new(n, &["id"], &[0]))
            .collect();
        let hello = hello_of(tables);
        let normalized_fp = hello.normalized_fp.clone();
        let mut room = Room::open(hello, 0).unwrap();
        room.apply(&UpstreamBatch {
            epoch: 1,
            seq: 0,
            normalized_fp,
            cv: Some(0.0),
            ops: vec![],
        })
        .unwrap();
        for (i, name) in names.iter().enumerate() {
            let q = room
                .parse_query(&format!(r#"{{"table":"{name}"}}"#))
                .unwrap();
            let s = room.subscribe(&format!("s{i}"), 1, &q, 0).unwrap();
            assert_eq!(&*s.hello.tables[0].name, name.as_str());
            assert!(room.server.hellos.len() <= MAX_CACHED_HELLOS);
        }
    }

    /// The end of a seq-0 snapshot, streamed or not, starts the block spans of the
    /// number columns in slot order (see `BlockRanges::keep_loaded`); a live batch
    /// starts none.
    #[test]
    fn a_snapshot_keeps_the_spans_of_its_sorted_number_columns() {
        let hello = hello_of(vec![TableSchema::new("t", &["id", "name", "at"], &[0])]);
        let normalized_fp = hello.normalized_fp.clone();
        let n = 2_048;
        let row = |i: usize| {
            Row::from(vec![
                Value::num(i as f64),
                Value::string(format!("n{i}")),
                Value::num((i * 7919 % n) as f64),
            ])
        };
        let adds = |ids: core::ops::Range<usize>| {
            ids.map(|i| NetOp::Add {
                table: Arc::from("t"),
                row: row(i),
            })
            .collect::<Vec<_>>()
        };
        let batch = |seq, ops| UpstreamBatch {
            epoch: 1,
            seq,
            normalized_fp: normalized_fp.clone(),
            cv: Some(seq as f64),
            ops,
        };
        let kept = |room: &Room| {
            (0..3)
                .map(|c| room.store.table(0).keeps_spans(c))
                .collect::<Vec<_>>()
        };

        let mut room = Room::open(hello.clone(), 0).unwrap();
        room.apply(&batch(0, adds(0..n))).unwrap();
        assert_eq!(kept(&room), [true, false, false]);

        let mut live = Room::open(hello, 0).unwrap();
        live.apply(&batch(0, vec![])).unwrap();
        live.apply(&batch(1, adds(0..n))).unwrap();
        assert_eq!(kept(&live), [false, false, false], "only a snapshot's end");
    }
}
