//! A strict model of one downstream subscriber (docs/protocol.md, `nhello` / `nbatch`):
//! it folds the hello, the seq-0 snapshot and every later batch into a map
//! `(table, pk) → row`, and refuses anything a conforming room must never send.
//!
//! Stricter than the real client on purpose: a lone `add` of a key already held, a
//! `remove` or `edit` of a key not held, an `edit` whose `old` is not the held image, an
//! empty batch, ops out of op order or two ops on one key, a table not in the hello, a
//! wrong epoch or fingerprint, or a seq that does not advance by exactly one are all
//! errors.

use core::cmp::Ordering;
use std::collections::HashMap;

use rindle_room_core::value::{compare, Cells, Value};
use rindle_room_core::{Batch, DownstreamHello, NetOp, TableSchema};

use crate::naive::Member;

/// One subscriber's view of its footprint.
#[derive(Clone, Debug)]
pub struct ClientModel {
    epoch: u64,
    normalized_fp: String,
    tables: Vec<TableSchema>,
    next_seq: u64,
    rows: HashMap<(String, Vec<Value>), Vec<Value>>,
    /// Tables whose rows reach this client cut down by a `select`: an edit of a column
    /// the client does not get arrives with equal images (the published room sends such
    /// edits too). Anywhere else equal images are a bug.
    projected: Vec<String>,
}

impl ClientModel {
    /// Marks `table` as reaching this client cut down by a `select`.
    pub fn projected(&mut self, table: &str) {
        self.projected.push(table.to_string());
    }

    /// Starts from a subscription's hello and its seq-0 snapshot.
    pub fn new(hello: &DownstreamHello, snapshot: &Batch) -> Result<ClientModel, String> {
        let mut model = ClientModel {
            epoch: hello.epoch,
            normalized_fp: hello.normalized_fp.to_string(),
            tables: hello.tables.to_vec(),
            next_seq: 0,
            rows: HashMap::new(),
            projected: Vec::new(),
        };
        for pair in model.tables.windows(2) {
            if pair[0].name.as_bytes() >= pair[1].name.as_bytes() {
                return Err(format!(
                    "hello tables not sorted by name: {:?}",
                    hello.tables
                ));
            }
        }
        for op in snapshot.ops.iter() {
            if !matches!(op, NetOp::Add { .. }) {
                return Err(format!("snapshot holds a non-add op: {op:?}"));
            }
        }
        model.apply(snapshot)?;
        Ok(model)
    }

    /// Folds one later batch (seq ≥ 1).
    pub fn apply(&mut self, batch: &Batch) -> Result<(), String> {
        if batch.epoch != self.epoch {
            return Err(format!("batch epoch {} != {}", batch.epoch, self.epoch));
        }
        if batch.seq != self.next_seq {
            return Err(format!(
                "batch seq {} != expected {}",
                batch.seq, self.next_seq
            ));
        }
        if *batch.normalized_fp != *self.normalized_fp {
            return Err(format!(
                "batch normalizedFp {} != hello's",
                batch.normalized_fp
            ));
        }
        if batch.seq > 0 && batch.ops.is_empty() {
            return Err(format!("empty batch at seq {}", batch.seq));
        }
        self.next_seq += 1;
        let mut previous: Option<(String, Vec<Value>)> = None;
        for op in batch.ops.iter() {
            let key = self.key_of(op)?;
            if let Some(prev) = &previous {
                if self.key_order(prev, &key) != Ordering::Less {
                    return Err(format!(
                        "ops out of order or repeated: {prev:?} then {key:?}"
                    ));
                }
            }
            self.fold(op, key.clone())?;
            previous = Some(key);
        }
        Ok(())
    }

    /// The held rows as footprint members, in op order.
    pub fn members(&self) -> Vec<Member> {
        let mut out: Vec<(String, Vec<Value>)> = Vec::new();
        for ((table, _), row) in &self.rows {
            out.push((table.clone(), row.clone()));
        }
        out.sort_by(|a, b| {
            let pa = self.pk_cells(&a.0, &a.1);
            let pb = self.pk_cells(&b.0, &b.1);
            self.key_order(&(a.0.clone(), pa), &(b.0.clone(), pb))
        });
        out
    }

    /// The next seq this subscriber expects.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn schema(&self, table: &str) -> Option<&TableSchema> {
        self.tables.iter().find(|t| &*t.name == table)
    }

    fn pk_cells<R: Cells + ?Sized>(&self, table: &str, row: &R) -> Vec<Value> {
        match self.schema(table) {
            Some(s) => s
                .primary_key
                .iter()
                .map(|&c| row.cell(c).to_value())
                .collect(),
            None => Vec::new(),
        }
    }

    fn key_order(&self, a: &(String, Vec<Value>), b: &(String, Vec<Value>)) -> Ordering {
        let o = a.0.as_bytes().cmp(b.0.as_bytes());
        if o != Ordering::Equal {
            return o;
        }
        for (x, y) in a.1.iter().zip(b.1.iter()) {
            let o = compare(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    fn key_of(&self, op: &NetOp) -> Result<(String, Vec<Value>), String> {
        let table = op.table().to_string();
        let schema = self
            .schema(&table)
            .ok_or_else(|| format!("op on table {table:?} not in the hello: {op:?}"))?;
        let width = schema.columns.len();
        for image in [op.before(), op.after()].into_iter().flatten() {
            if image.len() != width {
                return Err(format!("op row width {} != {width}: {op:?}", image.len()));
            }
        }
        let image = op.after().or(op.before()).ok_or("op without an image")?;
        Ok((table, self.pk_cells(&op.table()[..], image)))
    }

    fn fold(&mut self, op: &NetOp, key: (String, Vec<Value>)) -> Result<(), String> {
        match op {
            NetOp::Add { row, .. } => {
                if self.rows.contains_key(&key) {
                    return Err(format!("add of a key already held: {op:?}"));
                }
                self.rows.insert(key, row.to_vec());
            }
            NetOp::Remove { row, .. } => match self.rows.remove(&key) {
                None => return Err(format!("remove of a key not held: {op:?}")),
                Some(held) if *row != held[..] => {
                    return Err(format!("remove image {row:?} != held {held:?}"));
                }
                Some(_) => {}
            },
            NetOp::Edit { old, new, .. } => {
                let old_pk = self.pk_cells(&key.0, old);
                if old_pk != key.1 {
                    return Err(format!("edit changes the primary key: {op:?}"));
                }
                if old == new && !self.projected.iter().any(|t| *t == *key.0) {
                    return Err(format!("edit with identical images: {op:?}"));
                }
                match self.rows.get_mut(&key) {
                    None => return Err(format!("edit of a key not held: {op:?}")),
                    Some(held) if *old != held[..] => {
                        return Err(format!("edit old {old:?} != held {held:?}"));
                    }
                    Some(held) => *held = new.to_vec(),
                }
            }
        }
        Ok(())
    }
}
