//! The write-behind flush (docs/design/decisions.md, "Write-behind flush"): the net
//! effect of the dirty keys against their CAS bases, the ledger co-edits and the outcome
//! rows, as one authority batch; then its settlement.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::error::{Error, ErrorCode};
use crate::fingerprint::Fnv64;
use crate::json::write::{write_key, write_row, write_row_float_layout, write_str};
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

    fn parts(&self) -> (&Arc<str>, &'static str, Option<&Row>, Option<&Row>) {
        match self {
            FlushChange::Add { table, row } => (table, "add", None, Some(row)),
            FlushChange::Remove { table, old } => (table, "remove", Some(old), None),
            FlushChange::Edit { table, old, row } => (table, "edit", Some(old), Some(row)),
        }
    }

    /// Appends the change as the wire carries it: `{table, op, old?, row?}`.
    fn write(&self, out: &mut String) {
        let (table, op, old, row) = self.parts();
        out.push('{');
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
        out.push('}');
    }

    /// Appends the change in the batch hash's layout: keys in byte order (`old`, `op`,
    /// `row`, `table`), numbers in [`write_f64_float_layout`].
    fn write_hashed(&self, out: &mut String) {
        let (table, op, old, row) = self.parts();
        out.push('{');
        if let Some(old) = old {
            write_key(out, "old");
            write_row_float_layout(out, old);
            out.push(',');
        }
        write_key(out, "op");
        write_str(out, op);
        if let Some(row) = row {
            out.push(',');
            write_key(out, "row");
            write_row_float_layout(out, row);
        }
        out.push(',');
        write_key(out, "table");
        write_str(out, table);
        out.push('}');
    }
}

/// The batch identity: FNV-1a 64 over the `changes` array in the hash layout (keys in
/// byte order, every number written as a float: `3.0`, `1e+16`), as 16 lowercase hex
/// characters. It equals the hash `@rindle/room@0.9.0` gives the same changes, so a
/// batch keeps its identity whichever room built it.
pub fn batch_hash(changes: &[FlushChange]) -> String {
    let mut text = String::from("[");
    for (i, c) in changes.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        c.write_hashed(&mut text);
    }
    text.push(']');
    let mut fnv = Fnv64::new();
    fnv.bytes(text.as_bytes());
    fnv.hex()
}

/// What `begin_flush` built.
#[derive(Clone, Debug, PartialEq)]
pub struct FlushBatch {
    /// The `/apply-row-change-txn` `changes` array.
    pub changes: Vec<FlushChange>,
    /// The batch identity: FNV-1a 64 over the `changes` array in the hash layout (keys
    /// in byte order, every number written as a float: `3.0`, `1e+16`), 16 hex chars.
    pub batch_hash: String,
    /// The `(clientID, mid)` advances the batch makes durable.
    pub lmids: Vec<(String, u64)>,
}

impl FlushBatch {
    /// The `changes` array as JSON text (key order as the wire writes it).
    pub fn changes_json(&self) -> String {
        write_changes(&self.changes)
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

fn write_changes(changes: &[FlushChange]) -> String {
    let mut out = String::from("[");
    for (i, c) in changes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        c.write(&mut out);
    }
    out.push(']');
    out
}

/// The result of `flush_ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushOk {
    /// Pending mutations the batch made durable (they retire).
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

/// A dirty key as [`Room::begin_flush`] takes it.
struct Carried {
    t: usize,
    key: Key,
    /// Its net change against its CAS base; `None` when the head is the base again.
    change: Option<FlushChange>,
    /// The head image (`None` = absent).
    head: Option<Row>,
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
        // Every dirty key in the map's order, with its net change against its CAS base
        // (`None`: it came back to its base) and the head image a change writes.
        let mut carried: Vec<Carried> = Vec::with_capacity(w.dirty.len());
        for ((t, key), d) in &w.dirty {
            let table = self.store.table(*t);
            let head = table
                .id_by_key(key)
                .and_then(|r| self.store.row(*t, r).cloned());
            let change = FlushChange::between(&table.schema.name, d.base.clone(), head.clone());
            carried.push(Carried {
                t: *t,
                key: key.clone(),
                change,
                head,
            });
        }
        // The data changes in the batch's order: by table name (bytes), then key.
        let mut order: Vec<usize> = (0..carried.len())
            .filter(|&i| carried[i].change.is_some())
            .collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&carried[a], &carried[b]);
            let name = |t: usize| self.store.table(t).schema.name.as_bytes();
            name(a.t).cmp(name(b.t)).then_with(|| a.key.cmp(&b.key))
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
        let outcomes = w.outcomes.clone();
        let outcomes_name: Arc<str> = Arc::from(OUTCOMES_TABLE);
        let flight_id = w.flights;
        let w = self.writes_mut()?;
        if order.is_empty() && ledger.is_empty() && outcomes.is_empty() {
            // Every dirty key came back to its base: nothing to send, nothing dirty.
            w.dirty.clear();
            return Ok(None);
        }
        // Every carried key rides the flight (one with no change retires with it, as in
        // the published room, and expects no echo): the image it sends, its base when it
        // has no change. `dirty` iterates in the order `carried` was built in.
        let mut sent_images = Vec::with_capacity(carried.len());
        for (d, c) in w.dirty.values_mut().zip(&carried) {
            let image = if c.change.is_some() {
                c.head.clone()
            } else {
                d.base.clone()
            };
            d.sent = Some(image.clone());
            d.redirtied = false;
            sent_images.push(image);
        }
        for c in carried.iter().filter(|c| c.change.is_some()) {
            let q = w.echoes.entry((c.t, c.key.clone())).or_default();
            if q.len() >= super::MAX_ECHOES {
                q.pop_front();
            }
            q.push_back(super::Echo {
                flight: flight_id,
                committed: false,
                image: c.head.clone(),
            });
        }
        let mut changes = Vec::with_capacity(order.len() + ledger.len() + outcomes.len());
        for &i in &order {
            if let Some(change) = carried[i].change.take() {
                changes.push(change);
            }
        }
        // Built from keys in order: one bulk build each, no search per key.
        let sent: BTreeMap<(usize, Key), Option<Row>> = carried
            .iter()
            .zip(sent_images)
            .map(|(c, image)| ((c.t, c.key.clone()), image))
            .collect();
        let keys: BTreeMap<(usize, Key), Vec<Option<Row>>> = carried
            .into_iter()
            .map(|c| ((c.t, c.key), Vec::new()))
            .collect();
        changes.extend(outcomes.iter().map(|o| FlushChange::Add {
            table: outcomes_name.clone(),
            row: o.row(),
        }));
        changes.extend(ledger);
        let batch_hash = batch_hash(&changes);
        let w = self.writes_mut()?;
        w.flights += 1;
        w.flight = Some(Flight {
            id: flight_id,
            keys,
            foreign: Default::default(),
            sent,
            lmids: lmids.clone(),
            outcomes: outcomes.iter().map(|o| (o.client.clone(), o.mid)).collect(),
        });
        Ok(Some(FlushBatch {
            changes,
            batch_hash,
            lmids,
        }))
    }

    /// The room's number for the batch in flight (what the echoes it expects carry).
    pub fn flight_id(&self) -> Option<u64> {
        self.writes.as_ref()?.flight.as_ref().map(|f| f.id)
    }

    /// The number the room's next batch gets (a flush begun, or a committed batch taken
    /// in at boot).
    pub fn next_flight_id(&self) -> u64 {
        self.writes.as_ref().map_or(0, |w| w.flights)
    }

    /// The room's batches with an image still expected back from upstream (their echo
    /// not in yet), by number: one pass over the keys awaiting an echo.
    pub fn flights_awaiting_echo(&self) -> alloc::collections::BTreeSet<u64> {
        self.writes.as_ref().map_or_else(Default::default, |w| {
            w.echoes.values().flatten().map(|e| e.flight).collect()
        })
    }

    /// `flushOk()`: the authority committed the batch in flight. Its keys retire, or,
    /// when written again meanwhile, re-base onto the image the batch wrote (or onto the
    /// image upstream replaced it with, see [`Room::apply`]); durable watermarks
    /// advance; the pending mutations they cover retire. The head does not change.
    pub fn flush_ok(&mut self) -> Result<FlushOk, Error> {
        let w = self.writes_mut()?;
        let flight = w.flight.take().ok_or_else(no_flight)?;
        for k in flight.keys.keys() {
            let mut echo_due = false;
            for e in w.echoes.get_mut(k).into_iter().flatten() {
                if e.flight == flight.id {
                    e.committed = true;
                    echo_due = true;
                }
            }
            let Some(d) = w.dirty.get_mut(k) else {
                continue;
            };
            if d.sent.is_none() {
                // Written again after upstream took the key over during the flight. With
                // this batch's echo still to come, what took the key over was committed
                // before the batch: the authority holds what the batch wrote, the CAS
                // base of the new write. (With the echo in, the takeover came after it
                // and the base already is the authority's image.)
                if let (true, Some(image)) = (echo_due, flight.sent.get(k)) {
                    d.base = image.clone();
                }
                continue;
            }
            let sent = d.sent.take().flatten();
            if d.redirtied {
                d.base = sent;
                d.redirtied = false;
            } else {
                w.dirty.remove(k);
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
        let pending = w.pending.len();
        w.retire_pending();
        Ok(FlushOk {
            retired: pending - w.pending.len(),
            dirty: w.dirty.len(),
        })
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
        let mut conflicted = Vec::new();
        for r in resolved {
            match r {
                Resolved::Data(t, key, current) => {
                    conflicted.push((t, key.clone()));
                    // Upstream order is the authority's commit order: when the 409's
                    // image already arrived during the flight, what arrived after it is
                    // newer, and the head keeps that.
                    let current = match self
                        .writes_ref()?
                        .flight
                        .as_ref()
                        .and_then(|f| f.keys.get(&(t, key.clone())))
                    {
                        Some(seen) => newest_after(seen, &current).unwrap_or(current),
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
        let mut taken_over = Vec::new();
        if let Some(flight) = w.flight.take() {
            for (k, seen) in &flight.keys {
                if let Some(d) = w.dirty.get_mut(k) {
                    d.sent = None;
                    d.redirtied = false;
                }
                // The batch never committed: no echo of it will come.
                if let Some(q) = w.echoes.get_mut(k) {
                    q.retain(|e| e.flight != flight.id);
                    if q.is_empty() {
                        w.echoes.remove(k);
                    }
                }
                // So every image upstream reported for a carried key during the flight
                // was someone else's write, and the newest wins — even one that looked
                // like this batch's echo — unless the only ones were echoes of the
                // room's earlier batches: then the room's change of the key stands.
                if let Some(last) = seen.last() {
                    if !conflicted.contains(k) && flight.foreign.contains(k) {
                        taken_over.push((k.clone(), last.clone()));
                    }
                }
            }
        }
        for ((t, key), image) in taken_over {
            self.writes_mut()?.dirty.remove(&(t, key.clone()));
            let head = self
                .store
                .table(t)
                .id_by_key(&key)
                .and_then(|rid| self.store.row(t, rid).cloned());
            if head != image {
                self.write_head(t, &key, image)?;
                changed = true;
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

/// The last image of `seen` when `marker` is among them (the log then reaches past the
/// state `marker` stands for); `None` otherwise.
fn newest_after(seen: &[Option<Row>], marker: &Option<Row>) -> Option<Option<Row>> {
    if seen.iter().any(|img| img == marker) {
        seen.last().cloned()
    } else {
        None
    }
}

fn no_flight() -> Error {
    Error::new(
        ErrorCode::WrongState,
        "no flush is in flight (call beginFlush first)",
    )
}
