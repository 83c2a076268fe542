//! The model's transaction: staged writes and the v2 commit gate, computed by the model.

use super::*;

// ----------------------------------------------------- the model's transaction

/// A staged key: its head image at first write and its staged image.
type StagedKey = (Option<Image>, Option<Image>);

/// One staged write: `(table, id, image before it, image after)`.
pub type StagedOp = (usize, i64, Option<Image>, Option<Image>);

/// The model's transaction over a head.
pub struct ModelTx<'a> {
    head: &'a Tables,
    /// `(table, id) → (before, after)`.
    pub staged: BTreeMap<(usize, i64), StagedKey>,
    /// Keys in first-write order.
    pub order: Vec<(usize, i64)>,
    /// Every staged write in call order: `(table, id, image before it, image after)`.
    pub ops: Vec<StagedOp>,
    /// Reads that found nothing.
    pub absent: Vec<(usize, i64)>,
}

fn refused(what: &str) -> MutErr {
    MutErr::Refused(format!("model: {what}"))
}

impl<'a> ModelTx<'a> {
    /// A transaction over `head`.
    pub fn new(head: &'a Tables) -> ModelTx<'a> {
        ModelTx {
            head,
            staged: BTreeMap::new(),
            order: Vec::new(),
            ops: Vec::new(),
            absent: Vec::new(),
        }
    }

    fn table(name: &str) -> Result<usize, MutErr> {
        table_index(name).ok_or_else(|| refused("unknown table"))
    }

    fn writable(t: usize) -> Result<(), MutErr> {
        if t == CTX {
            Err(refused("context tables are not writable"))
        } else {
            Ok(())
        }
    }

    fn effective(&self, t: usize, id: i64) -> Option<Image> {
        match self.staged.get(&(t, id)) {
            Some((_, after)) => after.clone(),
            None => self.head[t].get(&id).cloned(),
        }
    }

    fn read(&mut self, t: usize, id: i64) -> Option<Image> {
        let r = self.effective(t, id);
        if r.is_none() {
            self.absent.push((t, id));
        }
        r
    }

    fn stage(&mut self, t: usize, id: i64, after: Option<Image>) {
        let before = match self.staged.get_mut(&(t, id)) {
            Some(s) => std::mem::replace(&mut s.1, after.clone()),
            None => {
                self.order.push((t, id));
                let before = self.head[t].get(&id).cloned();
                self.staged.insert((t, id), (before.clone(), after.clone()));
                before
            }
        };
        self.ops.push((t, id, before, after));
    }

    fn known(t: usize, keyed: &[(&str, Value)]) -> Result<(), MutErr> {
        if keyed.iter().all(|(k, _)| COLUMNS[t].contains(k)) {
            Ok(())
        } else {
            Err(refused("unknown column"))
        }
    }

    fn pk(keyed: &[(&str, Value)]) -> Result<i64, MutErr> {
        keyed
            .iter()
            .rev()
            .find(|(k, _)| *k == "id")
            .map(|(_, v)| id_of(v))
            .ok_or_else(|| refused("missing pk"))
    }

    fn full(t: usize, keyed: &[(&str, Value)]) -> Result<Image, MutErr> {
        Self::known(t, keyed)?;
        COLUMNS[t]
            .iter()
            .map(|c| {
                keyed
                    .iter()
                    .rev()
                    .find(|(k, _)| k == c)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| refused("a full row names every column"))
            })
            .collect()
    }

    fn keyed(t: usize, image: &[Value]) -> Vec<(String, Value)> {
        COLUMNS[t]
            .iter()
            .zip(image)
            .map(|(c, v)| (c.to_string(), v.clone()))
            .collect()
    }
}

impl Mtx for ModelTx<'_> {
    fn row(
        &mut self,
        table: &str,
        pk: &[(&str, Value)],
    ) -> Result<Option<Vec<(String, Value)>>, MutErr> {
        let t = Self::table(table)?;
        Self::known(t, pk)?;
        let id = Self::pk(pk)?;
        Ok(self.read(t, id).map(|r| Self::keyed(t, &r)))
    }
    fn insert(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        let full = Self::full(t, row)?;
        Self::writable(t)?;
        let id = id_of(&full[0]);
        if self.effective(t, id).is_some() {
            return Err(refused("the key exists"));
        }
        self.stage(t, id, Some(full));
        Ok(())
    }
    fn update(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        Self::known(t, row)?;
        let id = Self::pk(row)?;
        let Some(mut cur) = self.read(t, id) else {
            return Ok(());
        };
        for (k, v) in row {
            let c = COLUMNS[t]
                .iter()
                .position(|c| c == k)
                .expect("known column");
            cur[c] = v.clone();
        }
        Self::writable(t)?;
        self.stage(t, id, Some(cur));
        Ok(())
    }
    fn upsert(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        let full = Self::full(t, row)?;
        let id = id_of(&full[0]);
        self.read(t, id);
        Self::writable(t)?;
        self.stage(t, id, Some(full));
        Ok(())
    }
    fn delete(&mut self, table: &str, pk: &[(&str, Value)]) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        Self::known(t, pk)?;
        let id = Self::pk(pk)?;
        if self.read(t, id).is_some() {
            Self::writable(t)?;
            self.stage(t, id, None);
        }
        Ok(())
    }
    fn get(&mut self, table: &str, pk: &[Value]) -> Result<Option<Image>, MutErr> {
        let t = Self::table(table)?;
        if pk.len() != 1 {
            return Err(refused("pk width"));
        }
        Ok(self.read(t, id_of(&pk[0])))
    }
    fn add(&mut self, table: &str, cells: Image) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        Self::writable(t)?;
        if cells.len() != COLUMNS[t].len() {
            return Err(refused("row width"));
        }
        let id = id_of(&cells[0]);
        if self.effective(t, id).is_some() {
            return Err(refused("the key exists"));
        }
        self.stage(t, id, Some(cells));
        Ok(())
    }
    fn remove(&mut self, table: &str, cells: &[Value]) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        if cells.len() != 1 && cells.len() != COLUMNS[t].len() {
            return Err(refused("pk width"));
        }
        Self::writable(t)?;
        let id = id_of(&cells[0]);
        if self.effective(t, id).is_none() {
            return Err(refused("no such row"));
        }
        self.stage(t, id, None);
        Ok(())
    }
    fn edit(&mut self, table: &str, old: &[Value], new: &[Option<Value>]) -> Result<(), MutErr> {
        let t = Self::table(table)?;
        let width = COLUMNS[t].len();
        if old.len() != width || new.len() != width {
            return Err(refused("row width"));
        }
        let id = id_of(&old[0]);
        let Some(mut cur) = self.read(t, id) else {
            return Err(refused("no such row"));
        };
        if let Some(Some(v)) = new.first() {
            if *v != cur[0] {
                return Err(refused("the primary key cannot change"));
            }
        }
        for (c, cell) in new.iter().enumerate() {
            if let Some(v) = cell {
                cur[c] = v.clone();
            }
        }
        Self::writable(t)?;
        self.stage(t, id, Some(cur));
        Ok(())
    }
    fn query(&mut self) -> Result<(), MutErr> {
        Err(MutErr::Env("model: tx.query".into()))
    }
}

/// The v2 commit gate over a model transaction: per staged key in first-write
/// order `writeOutOfScope` then `joinKeyChanged`, then the absent reads.
pub fn model_gate(tx: &ModelTx<'_>) -> Option<GateDeopt> {
    let deopt =
        |reason: &str, t: usize, id: i64, op: Option<&str>, column: Option<&str>| GateDeopt {
            reason: reason.into(),
            table: NAMES[t].into(),
            pk: vec![n_id(id)],
            op: op.map(String::from),
            column: column.map(String::from),
        };
    // Every staged write in call order: an add's new row, a remove's old row and an
    // edit's new row in scope, an edit keeping the join key.
    for (t, id, before, after) in &tx.ops {
        let (t, id) = (*t, *id);
        let (op, checked) = match (before, after) {
            (None, None) => continue,
            (None, Some(b)) => ("add", b),
            (Some(a), None) => ("remove", a),
            (Some(_), Some(b)) => ("edit", b),
        };
        // item: writable where `qty < 100` (NULL or a non-number fails it).
        if t == ITEM && !matches!(checked[2], Value::Num(q) if q < 100.0) {
            return Some(deopt("writeOutOfScope", t, id, Some(op), None));
        }
        if let (Some(a), Some(b)) = (before, after) {
            // The join keys: item.owner, tag.itemId (both column 1).
            if t != CTX && a[1] != b[1] {
                let column = if t == ITEM { "owner" } else { "itemId" };
                return Some(deopt("joinKeyChanged", t, id, None, Some(column)));
            }
        }
    }
    for &(t, id) in &tx.absent {
        let proven = match t {
            ITEM => id < 50,
            CTX => id <= 2,
            // tag's footprintWhere reads `label`, not the key: never a proof.
            _ => false,
        };
        if !proven {
            return Some(deopt("absentReadUnproven", t, id, None, None));
        }
    }
    None
}
