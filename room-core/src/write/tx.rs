//! Mutation transactions: dedup and gap checks, staged writes with read-your-writes,
//! the v2 commit gate (docs/design/decisions.md, "Write plane"), and the local commit.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::{Error, ErrorCode};
use crate::keys::{cells_key_into, Key};
use crate::room::Room;
use crate::store::Row;
use crate::value::{Cells, Value};

use super::staging::{Begin, Commit, Deopt, Staged, Tx};
use super::{Outcome, Writable};

impl Room {
    /// `beginMutation(client, mid, name?, args?)`: dedup, gap check, open the
    /// transaction. The gap error's message is exactly
    /// `mutation gap for <client>: expected mid <w+1>, got <mid>`.
    pub fn begin_mutation(
        &mut self,
        client: &str,
        mid: u64,
        name: Option<&str>,
        args_json: Option<&str>,
    ) -> Result<Begin, Error> {
        // The published room's order: the write plane, an open transaction, then the
        // store (a store poisoned while a transaction is open still says it is open).
        if self.writes_ref()?.tx.is_some() {
            return Err(Error::new(
                ErrorCode::WrongState,
                "a mutation transaction is already open",
            ));
        }
        self.require_live()?;
        let applied = self.writes_ref()?.marks(client).applied;
        if mid <= applied {
            return Ok(Begin::Dedup);
        }
        if mid != applied + 1 {
            return Err(Error::new(
                ErrorCode::MutationGap,
                format!(
                    "mutation gap for {client}: expected mid {}, got {mid}",
                    applied + 1
                ),
            ));
        }
        self.writes_mut()?.tx = Some(Tx {
            client: String::from(client),
            mid,
            name: name.map(String::from),
            args: args_json.map(String::from),
            staged: BTreeMap::new(),
            order: Vec::new(),
            absent_reads: Vec::new(),
            ops: Vec::new(),
        });
        Ok(Begin::Tx)
    }

    fn open_tx(&self) -> Result<&Tx, Error> {
        self.writes_ref()?.tx.as_ref().ok_or_else(no_tx)
    }

    /// Resolves a table a mutator names, checking it may be read (or written). The
    /// refusals read as the published room's do (they reach clients as a rejection's
    /// reason). Under v1 a mutator may read every upstream table (the published room
    /// refuses reads of tables it does not own; `docs/compat.md`).
    pub(crate) fn tx_table(&self, table: &str, write: bool, _what: &str) -> Result<usize, Error> {
        let w = self.writes_ref()?;
        let Some(t) = self
            .store
            .table_id(table)
            .filter(|&t| t < self.user_tables())
        else {
            return Err(Error::new(
                ErrorCode::WriteRefused,
                format!("unknown table `{table}`"),
            ));
        };
        if !w.readable(t, self.user_tables()) || (write && !w.writable(t)) {
            return Err(Error::new(
                ErrorCode::WriteRefused,
                format!(
                    "table `{table}` is not owned by this room — mutators write owned tables only"
                ),
            ));
        }
        Ok(t)
    }

    /// The effective image of a key: staged if the transaction touched it, else the head.
    fn effective(&self, t: usize, key: &[u8]) -> Option<Row> {
        if let Ok(tx) = self.open_tx() {
            if let Some(s) = tx.staged.get(&(t, Key::from(key))) {
                return s.after.clone();
            }
        }
        self.store
            .table(t)
            .id_by_key(key)
            .and_then(|rid| self.store.row(t, rid).cloned())
    }

    fn pk_key(&self, t: usize, pk: &[Value], _what: &str) -> Result<Key, Error> {
        let schema = &self.store.table(t).schema;
        if pk.len() != schema.primary_key.len() {
            return Err(width_mismatch(&schema.name));
        }
        let mut key = Vec::new();
        for v in pk {
            crate::keys::push_cell(&mut key, v.cell(), false);
        }
        Ok(Key::from(key))
    }

    fn row_key<R: Cells + ?Sized>(&self, t: usize, row: &R, _what: &str) -> Result<Key, Error> {
        let schema = &self.store.table(t).schema;
        if row.width() != schema.columns.len() {
            return Err(width_mismatch(&schema.name));
        }
        let mut key = Vec::new();
        cells_key_into(&mut key, row, &schema.primary_key);
        Ok(Key::from(key))
    }

    /// `txGet(table, pk)`: the row under this transaction's staged writes, or `None`.
    pub fn tx_get(&mut self, table: &str, pk: &[Value]) -> Result<Option<Row>, Error> {
        self.open_tx()?;
        let t = self.tx_table(table, false, "txGet")?;
        let key = self.pk_key(t, pk, "txGet")?;
        let row = self.effective(t, &key);
        if row.is_none() {
            if let Some(tx) = self.writes.as_mut().and_then(|w| w.tx.as_mut()) {
                tx.absent_reads.push((t, pk.to_vec()));
            }
        }
        Ok(row)
    }

    fn stage(&mut self, t: usize, key: Key, after: Option<Row>) -> Result<(), Error> {
        let head = self
            .store
            .table(t)
            .id_by_key(&key)
            .and_then(|rid| self.store.row(t, rid).cloned());
        let tx = self.writes_mut()?.tx.as_mut().ok_or_else(no_tx)?;
        let before = match tx.staged.get_mut(&(t, key.clone())) {
            Some(s) => core::mem::replace(&mut s.after, after.clone()),
            None => {
                tx.order.push((t, key.clone()));
                tx.staged.insert(
                    (t, key.clone()),
                    Staged {
                        before: head.clone(),
                        after: after.clone(),
                    },
                );
                head
            }
        };
        tx.ops.push((t, key, before, after));
        Ok(())
    }

    /// `txAdd(table, row)`: stages an add of a full-width row; refused when the key
    /// exists, the table is not writable, or the width is wrong.
    pub fn tx_add(&mut self, table: &str, row: Row) -> Result<(), Error> {
        self.open_tx()?;
        let t = self.tx_table(table, true, "txAdd")?;
        let key = self.row_key(t, &row, "txAdd")?;
        if self.effective(t, &key).is_some() {
            return Err(Error::new(
                ErrorCode::WriteRefused,
                format!("add of an existing primary key in `{table}`"),
            ));
        }
        self.stage(t, key, Some(row))
    }

    /// `txEdit(table, row)`: stages a full-width replacement of the row with the same
    /// primary key; refused when the row does not exist.
    pub fn tx_edit(&mut self, table: &str, row: Row) -> Result<(), Error> {
        self.open_tx()?;
        let t = self.tx_table(table, true, "txEdit")?;
        let key = self.row_key(t, &row, "txEdit")?;
        if self.effective(t, &key).is_none() {
            return Err(Error::new(
                ErrorCode::WriteRefused,
                format!("no row with that primary key in `{table}`"),
            ));
        }
        self.stage(t, key, Some(row))
    }

    /// `txRemove(table, pk)`: stages a remove; refused when the row does not exist.
    pub fn tx_remove(&mut self, table: &str, pk: &[Value]) -> Result<(), Error> {
        self.open_tx()?;
        let t = self.tx_table(table, true, "txRemove")?;
        let key = self.pk_key(t, pk, "txRemove")?;
        if self.effective(t, &key).is_none() {
            return Err(Error::new(
                ErrorCode::WriteRefused,
                format!("no row with that primary key in `{table}`"),
            ));
        }
        self.stage(t, key, None)
    }

    /// `rejectMutation(kind, reason)`: consumes the mid with no effects and records the
    /// outcome (`kind` `"rejected"` by default, or `"deopt"`).
    pub fn reject_mutation(
        &mut self,
        kind: Option<&str>,
        reason: Option<&str>,
    ) -> Result<(), Error> {
        let kind: &'static str = match kind {
            None | Some("rejected") => "rejected",
            Some("deopt") => "deopt",
            Some(other) => {
                return Err(Error::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "rejectMutation: kind must be \"rejected\" or \"deopt\", got {other:?}"
                    ),
                ))
            }
        };
        let w = self.writes_mut()?;
        let tx = w.tx.take().ok_or_else(no_tx)?;
        w.record_outcome(tx, kind, reason.map(String::from));
        Ok(())
    }

    /// `commitMutation()`: runs the gate (v2), then applies the net staged writes as one
    /// local commit. Drain next.
    pub fn commit_mutation(&mut self) -> Result<Commit, Error> {
        // No write plane means no transaction either (the published room says so).
        if self.writes.as_ref().is_none_or(|w| w.tx.is_none()) {
            return Err(no_tx());
        }
        self.require_live()?;
        let w = self.writes_mut()?;
        let tx = w.tx.take().ok_or_else(no_tx)?;
        if let Some(deopt) = self.gate(&tx) {
            let w = self.writes_mut()?;
            w.record_outcome(tx, "deopt", Some(String::from(deopt.reason)));
            return Ok(Commit::Deopt(deopt));
        }
        for (t, key) in &tx.order {
            let Some(s) = tx.staged.get(&(*t, key.clone())) else {
                continue;
            };
            let same = match (&s.before, &s.after) {
                (None, None) => true,
                (Some(a), Some(b)) => a == b,
                _ => false,
            };
            // A key the transaction wrote is dirty even when its net change is nothing
            // (the published room's `dirtyLen` counts it; the flush drops it).
            if !same {
                self.write_head(*t, key, s.after.clone())?;
            }
            if let Some(w) = self.writes.as_mut() {
                w.touch_dirty(*t, key.clone(), s.before.clone());
            }
        }
        // Every applied mutation is a local commit, with or without an effect.
        self.head_cv += 1;
        let w = self.writes_mut()?;
        w.processed(&tx.client, tx.mid);
        Ok(Commit::Applied {
            head_cv: self.head_cv,
        })
    }

    /// Writes one key's new head image (a local commit step) and maintains every query.
    pub(crate) fn write_head(
        &mut self,
        t: usize,
        key: &[u8],
        after: Option<Row>,
    ) -> Result<(), Error> {
        let rid = self.store.table(t).id_by_key(key);
        match (rid, after) {
            (Some(rid), Some(row)) => self.replace_row(t, rid, row),
            (Some(rid), None) => self.remove_row(t, rid),
            (None, Some(row)) => self
                .insert_row(t, row)
                .map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?,
            (None, None) => {}
        }
        Ok(())
    }

    /// The v2 commit gate over the net staged writes: the first violation, if any.
    fn gate(&self, tx: &Tx) -> Option<Deopt> {
        let w = self.writes.as_ref()?;
        if matches!(w.mode, super::Mode::V1 { .. }) {
            return None;
        }
        // Every staged write, in call order: an add's new row, a remove's old row and an
        // edit's new row must be in scope, and an edit must keep the join keys.
        for (t, _key, before, after) in &tx.ops {
            let (op, checked) = match (before, after) {
                (None, None) => continue,
                (None, Some(b)) => ("add", b),
                (Some(a), None) => ("remove", a),
                (Some(_), Some(b)) => ("edit", b),
            };
            let Some(scope) = w.scope(*t) else { continue };
            let Writable::Predicate {
                where_,
                join_key_cols,
            } = &scope.writable
            else {
                continue;
            };
            let schema = &self.store.table(*t).schema;
            let pk: Vec<Value> = schema
                .primary_key
                .iter()
                .map(|&c| checked.get(c).to_value())
                .collect();
            let deopt = |reason, op, column| Deopt {
                reason,
                table: String::from(&*schema.name),
                pk: pk.clone(),
                op,
                column,
            };
            if let Some(cond) = where_ {
                if cond.eval_row_local(checked) != Some(true) {
                    return Some(deopt("writeOutOfScope", Some(op), None));
                }
            }
            if let (Some(a), Some(b)) = (before, after) {
                if let Some(&c) = join_key_cols.iter().find(|&&c| a.get(c) != b.get(c)) {
                    let column = String::from(&*schema.columns[c]);
                    return Some(deopt("joinKeyChanged", None, Some(column)));
                }
            }
        }
        for (t, pk) in &tx.absent_reads {
            let schema = &self.store.table(*t).schema;
            let proven = w
                .scope(*t)
                .and_then(|s| s.footprint_where.as_ref())
                .is_some_and(|cond| {
                    let mut cols = Vec::new();
                    cond.columns(&mut cols);
                    if cols.iter().any(|c| !schema.primary_key.contains(c)) {
                        return false;
                    }
                    let mut row = alloc::vec![Value::Null; schema.columns.len()];
                    for (i, &c) in schema.primary_key.iter().enumerate() {
                        row[c] = pk[i].clone();
                    }
                    cond.eval_row_local(&row) == Some(true)
                });
            if !proven {
                return Some(Deopt {
                    reason: "absentReadUnproven",
                    table: String::from(&*schema.name),
                    pk: pk.clone(),
                    op: None,
                    column: None,
                });
            }
        }
        None
    }
}

impl super::WritePlane {
    /// Consumes a transaction's mid with no effects and records the verdict.
    pub(crate) fn record_outcome(&mut self, tx: Tx, kind: &'static str, reason: Option<String>) {
        self.processed(&tx.client, tx.mid);
        let deopt = kind == "deopt";
        self.outcomes.push(Outcome {
            client: tx.client,
            mid: tx.mid,
            kind,
            reason,
            // A deopt row echoes the envelope, when it named its mutator (the
            // published room leaves the args out of a row without a name too).
            args: if deopt && tx.name.is_some() {
                tx.args
            } else {
                None
            },
            name: if deopt { tx.name } else { None },
        });
    }
}

fn no_tx() -> Error {
    Error::new(ErrorCode::WrongState, "no mutation transaction is open")
}

/// A row or key whose width is not the table's (the published room's wording).
fn width_mismatch(table: &str) -> Error {
    Error::new(
        ErrorCode::WriteRefused,
        format!("row width does not match the schema of `{table}`"),
    )
}
