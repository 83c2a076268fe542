//! The write-behind flush (D7): the net effect of the dirty keys against their CAS
//! bases, the ledger co-edits and the outcome rows, as one authority batch; then its
//! settlement.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorCode};
use crate::json::write::{write_key, write_row, write_str};
use crate::keys::Key;
use crate::room::Room;
use crate::store::Row;
use crate::value::{CellRef, Value};

use super::{Flight, LEDGER_TABLE, OUTCOMES_TABLE};

/// One element of `changes` (the authority's ingest shape).
#[derive(Clone, Debug, PartialEq)]
pub enum FlushChange {
    /// `{table, op:"add", row}`.
    Add {
        /// The table.
        table: Arc<str>,
        /// The new row.
        row: Row,
    },
    /// `{table, op:"remove", old}`.
    Remove {
        /// The table.
        table: Arc<str>,
        /// The CAS base.
        old: Row,
    },
    /// `{table, op:"edit", old, row}`.
    Edit {
        /// The table.
        table: Arc<str>,
        /// The CAS base.
        old: Row,
        /// The new row.
        row: Row,
    },
}

impl FlushChange {
    fn between(table: &Arc<str>, base: Option<Row>, head: Option<Row>) -> Option<FlushChange> {
        let table = table.clone();
        match (base, head) {
            (None, None) => None,
            (None, Some(row)) => Some(FlushChange::Add { table, row }),
            (Some(old), None) => Some(FlushChange::Remove { table, old }),
            (Some(old), Some(row)) if old == row => None,
            (Some(old), Some(row)) => Some(FlushChange::Edit { table, old, row }),
        }
    }

    /// Appends the change as JSON; `canonical` sorts keys as RFC 8785 does.
    fn write(&self, out: &mut String, canonical: bool) {
        let (table, op, old, row) = match self {
            FlushChange::Add { table, row } => (table, "add", None, Some(row)),
            FlushChange::Remove { table, old } => (table, "remove", Some(old), None),
            FlushChange::Edit { table, old, row } => (table, "edit", Some(old), Some(row)),
        };
        out.push('{');
        if canonical {
            // "old" < "op" < "row" < "table" in UTF-16 order.
            if let Some(old) = old {
                write_key(out, "old");
                write_row(out, old);
                out.push(',');
            }
            write_key(out, "op");
            write_str(out, op);
            if let Some(row) = row {
                out.push(',');
                write_key(out, "row");
                write_row(out, row);
            }
            out.push(',');
            write_key(out, "table");
            write_str(out, table);
        } else {
            write_key(out, "table");
            write_str(out, table);
            out.push(',');
            write_key(out, "op");
            write_str(out, op);
            if let Some(old) = old {
                out.push(',');
                write_key(out, "old");
                write_row(out, old);
            }
            if let Some(row) = row {
                out.push(',');
                write_key(out, "row");
                write_row(out, row);
            }
        }
        out.push('}');
    }
}

/// What `begin_flush` built.
#[derive(Clone, Debug, PartialEq)]
pub struct FlushBatch {
    /// The `/apply-row-change-txn` `changes` array.
    pub changes: Vec<FlushChange>,
    /// First 16 hex chars of SHA-256 over the JCS text of `changes`.
    pub batch_hash: String,
    /// The `(clientID, mid)` advances the batch makes durable.
    pub lmids: Vec<(String, u64)>,
}

impl FlushBatch {
    /// The `changes` array as JSON text (key order as the wire writes it).
    pub fn changes_json(&self) -> String {
        write_changes(&self.changes, false)
    }

    /// `{"changes":[…],"batchHash":"…","lmids":[{"clientID":…,"mid":…}]}`.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"changes\":");
        out.push_str(&self.changes_json());
        out.push_str(",\"batchHash\":");
        write_str(&mut out, &self.batch_hash);
        out.push_str(",\"lmids\":[");
        for (i, (client, mid)) in self.lmids.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"clientID\":");
            write_str(&mut out, client);
            let _ = write!(out, ",\"mid\":{mid}}}");
        }
        out.push_str("]}");
        out
    }
}

fn write_changes(changes: &[FlushChange], canonical: bool) -> String {
    let mut out = String::from("[");
    for (i, c) in changes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        c.write(&mut out, canonical);
    }
    out.push(']');
    out
}

/// The result of `flush_ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushOk {
    /// Dirty keys retired.
    pub retired: usize,
    /// Keys still dirty (written during the flight): schedule another flush.
    pub dirty: usize,
}

/// One CAS rejection from the authority's 409 body.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    /// The table.
    pub table: String,
    /// The key's pk cells.
    pub pk: Vec<Value>,
    /// The authority's current row (`None` = absent).
    pub current: Option<Row>,
}

fn ledger_row(client: &str, mid: u64) -> Row {
    Row::from(alloc::vec![Value::str(client), Value::num(mid as f64)])
}

impl Room {
    /// `beginFlush()`: builds the next batch, or `None` when nothing is unflushed. At
    /// most one flush may be in flight.
    pub fn begin_flush(&mut self) -> Result<Option<FlushBatch>, Error> {
        self.require_live()?;
        let w = self.writes_ref()?;
        if w.flight.is_some() {
            return Err(Error::new(
                ErrorCode::WrongState,
                "a flush is already in flight (settle it with flushOk or flushConflict)",
            ));
        }
        let mut data: Vec<(Arc<str>, Key, FlushChange, Option<Row>)> = Vec::new();
        let mut settled: Vec<(usize, Key)> = Vec::new();
        for ((t, key), d) in &w.dirty {
            let head = self
                .store
                .table(*t)
                .id_by_key(key)
                .and_then(|r| self.store.row(*t, r).cloned());
            let name = &self.store.table(*t).schema.name;
            match FlushChange::between(name, d.base.clone(), head.clone()) {
                Some(change) => data.push((name.clone(), key.clone(), change, head)),
                None => settled.push((*t, key.clone())),
            }
        }
        data.sort_by(|a, b| {
            a.0.as_bytes()
                .cmp(b.0.as_bytes())
                .then_with(|| a.1.cmp(&b.1))
        });
        let ledger_name: Arc<str> = Arc::from(LEDGER_TABLE);
        let mut lmids = Vec::new();
        let mut ledger = Vec::new();
        for (client, m) in &w.clients {
            if m.applied > m.durable {
                let row = ledger_row(client, m.applied);
                ledger.push(if m.durable > 0 {
                    FlushChange::Edit {
                        table: ledger_name.clone(),
                        old: ledger_row(client, m.durable),
                        row,
                    }
                } else {
                    FlushChange::Add {
                        table: ledger_name.clone(),
                        row,
                    }
                });
                lmids.push((client.clone(), m.applied));
            }
        }
        let mut outcomes = w.outcomes.clone();
        outcomes.sort_by(|a, b| {
            a.client
                .as_bytes()
                .cmp(b.client.as_bytes())
                .then(a.mid.cmp(&b.mid))
        });
        let outcomes_name: Arc<str> = Arc::from(OUTCOMES_TABLE);
        let w = self.writes_mut()?;
        for k in &settled {
            w.dirty.remove(k);
        }
        if data.is_empty() && ledger.is_empty() && outcomes.is_empty() {
            return Ok(None);
        }
        let mut changes = Vec::with_capacity(data.len() + ledger.len() + outcomes.len());
        let mut keys = Vec::with_capacity(data.len());
        for (name, key, change, head) in data {
            if let Some(t) = self.store.table_id(&name) {
                if let Some(d) = self
                    .writes
                    .as_mut()
                    .and_then(|w| w.dirty.get_mut(&(t, key.clone())))
                {
                    d.sent = Some(head);
                    d.redirtied = false;
                }
                keys.push((t, key));
            }
            changes.push(change);
        }
        changes.extend(ledger);
        changes.extend(outcomes.iter().map(|o| FlushChange::Add {
            table: outcomes_name.clone(),
            row: o.row(),
        }));
        let digest = Sha256::digest(write_changes(&changes, true).as_bytes());
        let mut batch_hash = String::with_capacity(16);
        for b in &digest[..8] {
            let _ = write!(batch_hash, "{b:02x}");
        }
        let w = self.writes_mut()?;
        w.flight = Some(Flight {
            keys,
            lmids: lmids.clone(),
            outcomes: outcomes.iter().map(|o| (o.client.clone(), o.mid)).collect(),
        });
        Ok(Some(FlushBatch {
            changes,
            batch_hash,
            lmids,
        }))
    }

    /// `flushOk(cv?)`: the authority committed the batch in flight (at commit version
    /// `cv`, when the host knows it). Its keys retire (or re-base onto the authority's
    /// image, when written again meanwhile); durable watermarks advance; covered pending
    /// mutations retire.
    ///
    /// Upstream ops that reached an in-flight key and were committed **after** the batch
    /// are the authority's newest image: a key not written again converges to it (the
    /// head changes — drain next), a key written again re-bases onto it. With `cv`, those
    /// are the ops of upstream batches with a greater `cv`; without it, the ops after the
    /// batch's own echo (the image it sent).
    pub fn flush_ok(&mut self, cv: Option<f64>) -> Result<FlushOk, Error> {
        let w = self.writes_mut()?;
        let flight = w.flight.take().ok_or_else(no_flight)?;
        let mut retired = 0;
        let mut converge: Vec<(usize, Key, Option<Row>)> = Vec::new();
        for k in &flight.keys {
            let Some(d) = w.dirty.get_mut(k) else {
                continue;
            };
            let sent = d.sent.take().flatten();
            let log = core::mem::take(&mut d.in_flight_log);
            let newer = newest_after_commit(&log, &sent, cv);
            if d.redirtied {
                d.base = newer.unwrap_or(sent);
                d.redirtied = false;
            } else {
                if let Some(image) = newer {
                    if !same_image(&image, &sent) {
                        converge.push((k.0, k.1.clone(), image));
                    }
                }
                w.dirty.remove(k);
                retired += 1;
            }
        }
        if let Some(cv) = cv {
            for (t, key) in &flight.keys {
                w.fences.insert((*t, key.clone()), cv);
            }
        }
        for (client, mid) in &flight.lmids {
            let m = w.marks_mut(client);
            m.durable = m.durable.max(*mid);
        }
        w.outcomes.retain(|o| {
            !flight
                .outcomes
                .iter()
                .any(|(c, m)| *c == o.client && *m == o.mid)
        });
        w.retire_pending();
        let dirty = w.dirty.len();
        if !converge.is_empty() {
            let mut changed = false;
            for (t, key, image) in converge {
                changed |= self.converge_head(t, &key, image)?;
            }
            if changed {
                self.head_cv += 1;
            }
        }
        Ok(FlushOk { retired, dirty })
    }

    /// Sets a key's head image if it differs; returns whether it did.
    fn converge_head(&mut self, t: usize, key: &[u8], image: Option<Row>) -> Result<bool, Error> {
        let head = self
            .store
            .table(t)
            .id_by_key(key)
            .and_then(|rid| self.store.row(t, rid).cloned());
        if same_image(&head, &image) {
            return Ok(false);
        }
        self.write_head(t, key, image)?;
        Ok(true)
    }

    /// `flushConflict(conflicts)`: the authority refused the batch on CAS. Each conflicted
    /// key converges to the authority's image (its local net effect is dropped); the rest
    /// stays dirty for the next flush. Returns the new `headCv` when the head changed —
    /// drain next to ship the corrective ops.
    pub fn flush_conflict(&mut self, conflicts: &[Conflict]) -> Result<Option<u64>, Error> {
        self.require_live()?;
        if self.writes_ref()?.flight.is_none() {
            return Err(no_flight());
        }
        // Validate everything before changing anything.
        let mut resolved = Vec::with_capacity(conflicts.len());
        for (i, c) in conflicts.iter().enumerate() {
            let bad = |why: String| {
                Error::new(
                    ErrorCode::MalformedInput,
                    format!("flushConflict: conflict {i}: {why}"),
                )
            };
            if c.table == OUTCOMES_TABLE {
                resolved.push(Resolved::Outcome(c.pk.clone()));
                continue;
            }
            let t = self
                .store
                .table_id(&c.table)
                .ok_or_else(|| bad(format!("unknown table {:?}", c.table)))?;
            let schema = &self.store.table(t).schema;
            if c.pk.len() != schema.primary_key.len() {
                return Err(bad(format!(
                    "pk has {} cells, the key has {}",
                    c.pk.len(),
                    schema.primary_key.len()
                )));
            }
            if let Some(row) = &c.current {
                if row.len() != schema.columns.len() {
                    return Err(bad(format!(
                        "current has {} cells, the table has {} columns",
                        row.len(),
                        schema.columns.len()
                    )));
                }
                let same_key = schema
                    .primary_key
                    .iter()
                    .zip(&c.pk)
                    .all(|(&col, v)| row.get(col) == v.cell());
                if !same_key {
                    return Err(bad(String::from("current's primary key differs from pk")));
                }
            }
            let mut key = Vec::new();
            for v in &c.pk {
                crate::keys::push_cell(&mut key, v.cell(), false);
            }
            if c.table == LEDGER_TABLE {
                resolved.push(Resolved::Ledger(c.pk.clone(), c.current.clone()));
            } else {
                resolved.push(Resolved::Data(t, Key::from(key), c.current.clone()));
            }
        }
        let mut changed = false;
        for r in resolved {
            match r {
                Resolved::Data(t, key, current) => {
                    // Upstream order is authority order: when the 409's image already
                    // arrived during the flight, what arrived after it is newer.
                    let current = match self.writes_ref()?.dirty.get(&(t, key.clone())) {
                        Some(d) => {
                            newest_after_image(&d.in_flight_log, &current).unwrap_or(current)
                        }
                        None => current,
                    };
                    let head = self
                        .store
                        .table(t)
                        .id_by_key(&key)
                        .and_then(|rid| self.store.row(t, rid).cloned());
                    let differs = match (&head, &current) {
                        (None, None) => false,
                        (Some(a), Some(b)) => a != b,
                        _ => true,
                    };
                    if differs {
                        self.write_head(t, &key, current)?;
                        changed = true;
                    }
                    self.writes_mut()?.dirty.remove(&(t, key));
                }
                Resolved::Ledger(pk, current) => {
                    let client = match pk.first() {
                        Some(Value::Str(s)) => String::from(&**s),
                        _ => continue,
                    };
                    let lmid = match current.as_ref().map(|r| r.get(1)) {
                        Some(CellRef::Num(f)) if f >= 0.0 => f as u64,
                        _ => 0,
                    };
                    let w = self.writes_mut()?;
                    w.marks_mut(&client).durable = lmid;
                    w.retire_pending();
                }
                Resolved::Outcome(pk) => {
                    let w = self.writes_mut()?;
                    if let (Some(Value::Str(c)), Some(Value::Num(m))) = (pk.first(), pk.get(1)) {
                        let (c, m) = (String::from(&**c), *m as u64);
                        w.outcomes.retain(|o| !(o.client == c && o.mid == m));
                    }
                }
            }
        }
        let w = self.writes_mut()?;
        if let Some(flight) = w.flight.take() {
            for k in &flight.keys {
                if let Some(d) = w.dirty.get_mut(k) {
                    d.sent = None;
                    d.redirtied = false;
                    d.in_flight_log.clear();
                }
            }
        }
        if changed {
            self.head_cv += 1;
            Ok(Some(self.head_cv))
        } else {
            Ok(None)
        }
    }
}

enum Resolved {
    Data(usize, Key, Option<Row>),
    Ledger(Vec<Value>, Option<Row>),
    Outcome(Vec<Value>),
}

/// The newest image upstream reported after the batch committed: with the commit `cv`,
/// the last entry of a later batch; without it, the last entry after the batch's own
/// echo (`sent`). `None` when nothing newer arrived.
fn newest_after_commit(
    log: &[(Option<f64>, Option<Row>)],
    sent: &Option<Row>,
    cv: Option<f64>,
) -> Option<Option<Row>> {
    match cv {
        Some(commit) if log.iter().all(|(c, _)| c.is_some()) => log
            .iter()
            .rev()
            .find(|(c, _)| c.is_some_and(|c| c > commit))
            .map(|(_, img)| img.clone()),
        _ => newest_after_image(log, sent),
    }
}

/// The last logged image, if `marker` appears in the log (the log then reaches past the
/// state `marker` stands for); `None` otherwise.
fn newest_after_image(
    log: &[(Option<f64>, Option<Row>)],
    marker: &Option<Row>,
) -> Option<Option<Row>> {
    if log.iter().any(|(_, img)| same_image(img, marker)) {
        log.last().map(|(_, img)| img.clone())
    } else {
        None
    }
}

fn same_image(a: &Option<Row>, b: &Option<Row>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn no_flight() -> Error {
    Error::new(
        ErrorCode::WrongState,
        "no flush is in flight (call beginFlush first)",
    )
}
