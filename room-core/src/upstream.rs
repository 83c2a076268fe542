//! The upstream leg of a room: applying the daemon's batches to the base store, and how
//! they meet the room's own writes (docs/design/decisions.md, "Upstream hello and
//! batches" and "Write plane").

use alloc::format;

use crate::keys::Key;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::{Error, ErrorCode};
use crate::room::Room;
use crate::serve::NetOp;
use crate::store::{Row, StoreRefusal};
use alloc::sync::Arc;
use core::fmt;

/// One upstream `nbatch.batch` (the room is the daemon's client).
#[derive(Clone, Debug)]
pub struct UpstreamBatch {
    /// The upstream subscription epoch.
    pub epoch: u64,
    /// The upstream sequence number (0 = snapshot).
    pub seq: u64,
    /// Must equal the hello's fingerprint.
    pub normalized_fp: String,
    /// The upstream commit version, when sent.
    pub cv: Option<f64>,
    /// Row changes, applied in order.
    pub ops: Vec<NetOp>,
}

/// The outcome of [`Room::apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyStatus {
    /// The seq-0 snapshot loaded `rows` rows; the room is live.
    Snapshot {
        /// Rows loaded.
        rows: usize,
    },
    /// A live batch applied `ops` ops; drain with [`Room::commit_all`].
    Live {
        /// Ops applied.
        ops: usize,
    },
    /// A batch at or below the last applied seq: ignored.
    Duplicate,
    /// A batch from an older epoch: ignored.
    StaleEpoch {
        /// The store's epoch.
        expected: u64,
        /// The batch's epoch.
        got: u64,
    },
}

impl Room {
    fn poison(&mut self, why: String) -> Error {
        let err = Error::new(
            ErrorCode::Poisoned,
            format!("upstream batch poisoned the store: {why}"),
        );
        self.poisoned = Some(why);
        err
    }

    /// Applies one upstream batch. After `Live`, drain with [`Room::commit_all`].
    ///
    /// The checks, in order (the published room's order):
    /// 1. a poisoned room refuses everything;
    /// 2. every batch carries its `cv`, a non-negative integer (an error, the room stays
    ///    usable);
    /// 3. a batch of another epoch, older or newer, is ignored as
    ///    [`ApplyStatus::StaleEpoch`];
    /// 4. a fingerprint other than the hello's **poisons** the room;
    /// 5. a seq at or below the last applied one is a [`ApplyStatus::Duplicate`]; a seq
    ///    past the next one, or a first batch that is not seq 0, **poisons** the room;
    /// 6. a snapshot op that is not an `add`, or an op that contradicts the store,
    ///    **poisons** the room.
    ///
    /// `headCv` moves to the snapshot's `cv`, then, per live batch, to the greater of
    /// `headCv + 1` and the batch's `cv`.
    pub fn apply(&mut self, batch: &UpstreamBatch) -> Result<ApplyStatus, Error> {
        let fp_ok = batch.normalized_fp == self.upstream_fp;
        self.apply_checked(batch, fp_ok)
    }

    /// Whether `fp` is the upstream hello's fingerprint.
    pub(crate) fn upstream_fp_is(&self, fp: &str) -> bool {
        self.upstream_fp == fp
    }

    /// [`Room::apply`] with the fingerprint already compared (the JSON path compares it
    /// on the borrowed text and skips copying it).
    pub(crate) fn apply_checked(
        &mut self,
        batch: &UpstreamBatch,
        fp_ok: bool,
    ) -> Result<ApplyStatus, Error> {
        if let Some(why) = &self.poisoned {
            return Err(Error::new(
                ErrorCode::NotLive,
                format!("the room's store is poisoned ({why}); open a new room"),
            ));
        }
        let cv = match batch.cv {
            Some(cv) => wire_counter(cv).ok_or_else(|| {
                Error::malformed(format!(
                    "malformed upstream batch: `cv` must be a non-negative integer, got {cv}"
                ))
            })?,
            None => {
                return Err(Error::malformed(
                    "malformed upstream batch: `cv` is missing (every batch carries its commit version)",
                ))
            }
        };
        if batch.epoch != self.epoch {
            return Ok(ApplyStatus::StaleEpoch {
                expected: self.epoch,
                got: batch.epoch,
            });
        }
        if !fp_ok {
            return Err(self.poison(format!(
                "normalizedFp {:?} does not match the hello's {:?}",
                batch.normalized_fp, self.upstream_fp
            )));
        }
        match self.last_seq {
            None => {
                if batch.seq != 0 {
                    return Err(self.poison(format!(
                        "gap: the first batch must be seq 0, got seq {}",
                        batch.seq
                    )));
                }
                if let Some(i) = batch
                    .ops
                    .iter()
                    .position(|op| !matches!(op, NetOp::Add { .. }))
                {
                    return Err(self.poison(format!(
                        "snapshot op {i} is not an add (a seq-0 snapshot holds only adds)"
                    )));
                }
                let rows = self.apply_ops(&batch.ops)?;
                Ok(self.finish_snapshot(rows, cv))
            }
            Some(last) if batch.seq <= last => Ok(ApplyStatus::Duplicate),
            Some(last) if batch.seq == last + 1 => {
                let ops = self.apply_ops(&batch.ops)?;
                self.last_seq = Some(batch.seq);
                self.cv = Some(cv as f64);
                self.head_cv = (self.head_cv + 1).max(cv);
                Ok(ApplyStatus::Live { ops })
            }
            Some(last) => Err(self.poison(format!(
                "gap: expected seq {}, got seq {}",
                last + 1,
                batch.seq
            ))),
        }
    }

    /// Whether the room awaits its seq-0 snapshot (and is not poisoned).
    pub(crate) fn awaits_snapshot(&self) -> bool {
        self.poisoned.is_none() && self.last_seq.is_none()
    }

    /// Whether a seq-0 snapshot of `epoch` may be applied op by op as it is parsed
    /// ([`Room::snapshot_op`]): the room awaits its snapshot, under that epoch.
    pub(crate) fn streams_snapshot(&self, epoch: u64) -> bool {
        self.awaits_snapshot() && self.epoch == epoch
    }

    /// One op of a streamed seq-0 snapshot: an add, applied as the batch path applies
    /// it. `false` (nothing applied for this op) means the stream must be discarded with
    /// [`Room::discard_snapshot`] and the batch applied the ordinary way, which reports
    /// what is wrong exactly as it always does.
    pub(crate) fn snapshot_op(&mut self, op: &NetOp) -> bool {
        matches!(op, NetOp::Add { .. }) && self.apply_upstream_op(op).is_ok()
    }

    /// [`Room::snapshot_op`] of an add to user table `t` whose row has the table's
    /// width (the caller checked both): while the write plane is quiet, a new key is
    /// inserted with one search of the primary-key index; anything else (a key the
    /// table holds) takes the general path, which decides it.
    pub(crate) fn snapshot_add(&mut self, t: usize, op: &NetOp) -> bool {
        let NetOp::Add { row, .. } = op else {
            return false;
        };
        self.add_new_key(t, row) || self.snapshot_op(op)
    }

    /// An upstream add of `row` to user table `t`, when it is plainly a new key: while
    /// the write plane is quiet (no dirty key, no batch in flight, no echo awaited) the
    /// row is inserted with one search of the primary-key index and every query
    /// maintained — what [`Room::apply_upstream_op`] would do, without its separate
    /// lookup of the key. `false` (nothing changed) when the plane is not quiet, the key
    /// is held or the width is wrong: the general path then decides, and says why.
    #[inline]
    fn add_new_key(&mut self, t: usize, row: &Row) -> bool {
        if t >= self.user_tables || !self.writes.as_ref().is_none_or(|w| w.quiet()) {
            return false;
        }
        let (table, scratch) = self.store.table_mut(t);
        match table.insert(row.clone(), scratch) {
            Ok(rid) => {
                self.engine.on_change(&self.store, t, rid, None, Some(row));
                true
            }
            Err(_) => false,
        }
    }

    /// Sizes user table `t` for `additional` more rows (a streamed snapshot's
    /// estimate), so its primary-key index does not grow step by step.
    pub(crate) fn reserve_rows(&mut self, t: usize, additional: usize) {
        if t < self.user_tables {
            self.store.table_mut(t).0.reserve(additional);
        }
    }

    /// Ends a seq-0 snapshot of `rows` ops at commit version `cv`: the room is live, its
    /// `headCv` is `cv`.
    pub(crate) fn finish_snapshot(&mut self, rows: usize, cv: u64) -> ApplyStatus {
        self.store.snapshot_loaded(self.user_tables);
        self.last_seq = Some(0);
        self.cv = Some(cv as f64);
        self.head_cv = cv;
        ApplyStatus::Snapshot { rows }
    }

    /// Drops what a streamed snapshot applied: before the snapshot the upstream tables
    /// are empty and nothing is materialized, so they are emptied again.
    pub(crate) fn discard_snapshot(&mut self) {
        self.store.clear_tables(self.user_tables);
    }

    fn apply_ops(&mut self, ops: &[NetOp]) -> Result<usize, Error> {
        self.reserve_for_adds(ops);
        // The table of the last add: a batch's ops mostly come table by table.
        let mut last: Option<(&alloc::sync::Arc<str>, usize)> = None;
        for (i, op) in ops.iter().enumerate() {
            if let NetOp::Add { table, row } = op {
                let t = match last {
                    Some((name, t)) if alloc::sync::Arc::ptr_eq(name, table) || name == table => {
                        Some(t)
                    }
                    _ => self.store.table_id_shared(table),
                };
                if let Some(t) = t {
                    last = Some((table, t));
                    if self.add_new_key(t, row) {
                        continue;
                    }
                }
            }
            if let Err(why) = self.apply_upstream_op(op) {
                return Err(self.poison(format!("op {i}: {why}")));
            }
        }
        Ok(ops.len())
    }

    /// Makes room in each table for the batch's adds up front (a snapshot of 100k rows
    /// would otherwise grow the primary-key table ~17 times, re-encoding every key each
    /// time). Batches of a few ops skip it.
    fn reserve_for_adds(&mut self, ops: &[NetOp]) {
        if ops.len() < 64 {
            return;
        }
        let mut adds: alloc::vec::Vec<usize> = alloc::vec![0; self.user_tables];
        let mut last: Option<(&alloc::sync::Arc<str>, usize)> = None;
        for op in ops {
            if let NetOp::Add { table, .. } = op {
                let t = match last {
                    Some((name, t)) if alloc::sync::Arc::ptr_eq(name, table) || name == table => t,
                    _ => match self.store.table_id_shared(table) {
                        Some(t) if t < self.user_tables => t,
                        _ => continue,
                    },
                };
                last = Some((table, t));
                adds[t] += 1;
            }
        }
        for (t, n) in adds.into_iter().enumerate() {
            if n > 0 {
                self.store.table_mut(t).0.reserve(n);
            }
        }
    }

    /// Writes one upstream op to the store and maintains every query.
    ///
    /// With a write plane, the echo of the room's own flushed write is recognized and
    /// changes nothing the room has written since; any other image of a key the room
    /// holds dirty is someone else's write and wins (docs/design/decisions.md, "Write
    /// plane"). On a **writable** table an op that disagrees with the head only about
    /// the key's existence is reconciled instead of poisoning (see
    /// `docs/decisions-local.md`).
    fn apply_upstream_op(&mut self, op: &NetOp) -> Result<(), UpstreamOpError> {
        let name = op.table();
        let t = self
            .store
            .table_id_shared(name)
            .filter(|&t| t < self.user_tables)
            .ok_or_else(|| UpstreamOpError::UnknownTable(name.clone()))?;
        let width = self.store.table(t).schema.columns.len();
        for row in [op.before(), op.after()].into_iter().flatten() {
            if row.len() != width {
                return Err(UpstreamOpError::WrongWidth {
                    table: name.clone(),
                    cells: row.len(),
                    columns: width,
                });
            }
        }
        let (old, new) = match op {
            NetOp::Add { row, .. } => (None, Some(row)),
            NetOp::Remove { row, .. } => (Some(row), None),
            NetOp::Edit { old, new, .. } => (Some(old), Some(new)),
        };
        let same_key = match (old, new) {
            (Some(o), Some(n)) => {
                let pk = &self.store.table(t).schema.primary_key;
                pk.iter().all(|&c| o.get(c) == n.get(c))
            }
            _ => false,
        };
        if same_key {
            return self.upstream_key(t, op, old, new);
        }
        // A key change arrives as remove (old key) + add (new key).
        if let Some(o) = old {
            self.upstream_key(t, op, Some(o), None)?;
        }
        if let Some(n) = new {
            self.upstream_key(t, op, None, Some(n))?;
        }
        Ok(())
    }

    /// Applies an upstream change of one key (`old` → `new`, same key).
    fn upstream_key(
        &mut self,
        t: usize,
        op: &NetOp,
        old: Option<&Row>,
        new: Option<&Row>,
    ) -> Result<(), UpstreamOpError> {
        let name = op.table();
        let Some(image) = old.or(new) else {
            return Ok(());
        };
        let rid = self.store.find(t, image);
        let mut tolerant = false;
        if let Some(w) = self.writes.as_mut() {
            let mut key = alloc::vec::Vec::new();
            self.store.table(t).key_of(image, &mut key);
            let k = (t, Key::from(key));
            // The echo of an earlier batch of the room's that committed is the room's
            // own write: logged, but not taken for someone else's should the batch in
            // flight conflict.
            let flight_id = w.flight.as_ref().map(|f| f.id);
            let earlier_echo = w.echoes.get(&k).and_then(|q| q.front()).is_some_and(|e| {
                e.committed && Some(e.flight) != flight_id && same_image(&e.image, new)
            });
            if let Some(f) = w.flight.as_mut() {
                if let Some(seen) = f.keys.get_mut(&k) {
                    seen.push(new.cloned());
                    if !earlier_echo {
                        f.foreign.insert(k.clone());
                    }
                }
            }
            // The room's own flushed write echoing back. A dirty key holds a later write
            // of the room's, and so does a key with a later echo still to come: nothing
            // changes. Otherwise the echo is the authority's current image, which the
            // head takes (it differs only when someone else's writes came in between).
            // Anything else is someone else's write (below).
            if let Some(q) = w
                .echoes
                .get_mut(&k)
                .filter(|q| q.front().is_some_and(|e| same_image(&e.image, new)))
            {
                q.pop_front();
                let last = q.is_empty();
                // A later batch of the room's that carried the key has committed: the
                // authority is past this image already.
                let overtaken = q.iter().any(|e| e.committed);
                if last {
                    w.echoes.remove(&k);
                }
                if let Some(d) = w.dirty.get_mut(&k) {
                    // A write of the room's no batch carries yet: the authority now
                    // holds the echoed image, its CAS base — unless a later committed
                    // batch of the room's wrote the key since (its `flushOk` made what it
                    // wrote the base, and its echo is still to come).
                    if d.sent.is_none() && !overtaken {
                        d.base = new.cloned();
                    }
                    return Ok(());
                }
                if !last {
                    return Ok(());
                }
                return self
                    .write_head(t, &k.1, new.cloned())
                    .map_err(UpstreamOpError::Head);
            }
            if w.dirty.remove(&k).is_some() {
                // Someone else wrote a key the room has a pending change of: upstream
                // wins, the head takes the image and the room's change is dropped.
                self.write_head(t, &k.1, new.cloned())
                    .map_err(UpstreamOpError::Head)?;
                return Ok(());
            }
            tolerant = w.writable(t);
        }
        match (rid, new) {
            (Some(rid), Some(row)) => {
                if old.is_none() && !tolerant {
                    return Err(UpstreamOpError::KeyExists(name.clone()));
                }
                self.replace_row(t, rid, row.clone());
            }
            (Some(rid), None) => self.remove_row(t, rid),
            (None, Some(row)) => {
                if old.is_some() && !tolerant {
                    return Err(UpstreamOpError::EditOfMissingKey(name.clone()));
                }
                self.insert_row(t, row.clone()).map_err(|e| match e.why {
                    StoreRefusal::KeyExists => UpstreamOpError::KeyExists(e.table),
                    StoreRefusal::WrongWidth => UpstreamOpError::WrongWidth {
                        table: e.table,
                        cells: row.len(),
                        columns: self.store.table(t).schema.columns.len(),
                    },
                })?;
            }
            (None, None) => {
                if !tolerant {
                    return Err(UpstreamOpError::RemoveOfMissingKey(name.clone()));
                }
            }
        }
        Ok(())
    }
}

fn same_image(a: &Option<Row>, b: Option<&Row>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// A JavaScript number used as a counter on the wire (`cv`, `seq`, `epoch`, a mid, a
/// time in ms): finite, integral and non-negative. `None` for anything else.
pub fn wire_counter(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0 && crate::value::is_integral(v) && v < 18_446_744_073_709_551_616.0)
        .then_some(v as u64)
}

/// Why an upstream op could not be applied (the incarnation is poisoned with it).
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum UpstreamOpError {
    /// The op names a table the hello did not list.
    UnknownTable(Arc<str>),
    /// A row of the op has the wrong number of cells.
    WrongWidth {
        /// The table.
        table: Arc<str>,
        /// The row's cells.
        cells: usize,
        /// The table's columns.
        columns: usize,
    },
    /// An add of a key the table holds.
    KeyExists(Arc<str>),
    /// An edit of a key the table does not hold.
    EditOfMissingKey(Arc<str>),
    /// A remove of a key the table does not hold.
    RemoveOfMissingKey(Arc<str>),
    /// Writing the head failed.
    Head(Error),
}

impl fmt::Display for UpstreamOpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamOpError::UnknownTable(t) => write!(f, "unknown table {t:?}"),
            UpstreamOpError::WrongWidth {
                table,
                cells,
                columns,
            } => write!(
                f,
                "a {table:?} row has {cells} cells, the table has {columns} columns"
            ),
            UpstreamOpError::KeyExists(t) => write!(f, "add of an existing key in {t:?}"),
            UpstreamOpError::EditOfMissingKey(t) => write!(f, "edit of a missing key in {t:?}"),
            UpstreamOpError::RemoveOfMissingKey(t) => {
                write!(f, "remove of a missing key in {t:?}")
            }
            UpstreamOpError::Head(e) => f.write_str(e.message()),
        }
    }
}
