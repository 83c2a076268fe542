//! The CAS authority flushes are settled against.

use super::*;

// -------------------------------------------------------------- the authority

/// The write authority: rows, ledger lmids and outcome rows, with CAS apply.
#[derive(Clone, Debug)]
pub struct Authority {
    /// The user tables.
    pub rows: Tables,
    /// `client → lmid`.
    pub ledger: BTreeMap<String, u64>,
    /// `(client, mid) → outcome row`.
    pub outcomes: BTreeMap<(String, u64), Image>,
    /// The commit version of its latest commit (a committed batch or an own change; 0
    /// is the snapshot). Strictly increasing, so the change feed's batches carry
    /// increasing `cv`s.
    pub cv: u64,
}

/// The authority's answer to one batch.
#[derive(Clone, Debug)]
pub enum Settled {
    /// Committed; the upstream echo of the data changes (empty: nothing to stream).
    Ok(Vec<NetOp>),
    /// Refused on CAS: one conflict per failed change, nothing applied.
    Conflict(Vec<Conflict>),
}

impl Authority {
    /// An authority holding `rows`.
    pub fn new(rows: &Tables) -> Authority {
        Authority {
            rows: rows.clone(),
            ledger: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            cv: SNAPSHOT_CV,
        }
    }

    /// Applies a batch all-or-nothing with CAS: an add needs the key absent, a remove or
    /// edit needs `old` to equal the current row. A commit takes the next `cv`.
    pub fn apply(&mut self, changes: &[Change]) -> Settled {
        let mut conflicts = Vec::new();
        for c in changes {
            let image = c.key_image();
            if c.table == LEDGER_TABLE {
                let client = as_text(&image[0]);
                let current = self
                    .ledger
                    .get(&client)
                    .map(|m| vec![text(&client), num(*m as f64)]);
                let ok = match c.op {
                    "add" => current.is_none(),
                    _ => current.as_ref() == c.old.as_ref(),
                };
                if !ok {
                    conflicts.push(Conflict {
                        table: c.table.clone(),
                        pk: vec![text(&client)],
                        current: current.map(|r| row(&r)),
                    });
                }
            } else if c.table == OUTCOMES_TABLE {
                let key = (as_text(&image[0]), as_num(&image[1]) as u64);
                if let Some(current) = self.outcomes.get(&key).filter(|_| c.op == "add") {
                    conflicts.push(Conflict {
                        table: c.table.clone(),
                        pk: vec![image[0].clone(), image[1].clone()],
                        current: Some(row(current)),
                    });
                }
            } else {
                let t = table_index(&c.table).expect("a user table");
                let id = id_of(&image[0]);
                let current = self.rows[t].get(&id);
                let ok = match c.op {
                    "add" => current.is_none(),
                    _ => current == c.old.as_ref(),
                };
                if !ok {
                    conflicts.push(Conflict {
                        table: c.table.clone(),
                        pk: vec![n_id(id)],
                        current: current.map(|r| row(r)),
                    });
                }
            }
        }
        if !conflicts.is_empty() {
            return Settled::Conflict(conflicts);
        }
        self.cv += 1;
        let mut echo = Vec::new();
        for c in changes {
            let image = c.key_image().clone();
            if c.table == LEDGER_TABLE {
                self.ledger
                    .insert(as_text(&image[0]), as_num(&image[1]) as u64);
            } else if c.table == OUTCOMES_TABLE {
                self.outcomes
                    .insert((as_text(&image[0]), as_num(&image[1]) as u64), image);
            } else {
                let t = table_index(&c.table).expect("a user table");
                echo.push(self.write(t, id_of(&image[0]), c.row.clone()));
            }
        }
        Settled::Ok(echo)
    }

    /// Writes one key and returns the upstream op that streams the change.
    pub fn write(&mut self, t: usize, id: i64, new: Option<Image>) -> NetOp {
        let table: Arc<str> = Arc::from(NAMES[t]);
        let old = match &new {
            Some(image) => self.rows[t].insert(id, image.clone()),
            None => self.rows[t].remove(&id),
        };
        match (old, new) {
            (None, Some(r)) => NetOp::Add {
                table,
                row: row(&r),
            },
            (Some(o), None) => NetOp::Remove {
                table,
                row: row(&o),
            },
            (Some(o), Some(r)) => NetOp::Edit {
                table,
                old: row(&o),
                new: row(&r),
            },
            (None, None) => panic!("the authority never removes an absent key"),
        }
    }

    /// The authority changes a row on its own: edits or removes a present key, adds an
    /// absent one, as one commit (the next `cv`). Returns the upstream op.
    pub fn own_change(&mut self, t: usize, k: u8, val: u8) -> NetOp {
        self.cv += 1;
        let id = pick(ids(t), k);
        let new = match self.rows[t].get(&id) {
            Some(_) if val.is_multiple_of(4) => None,
            Some(cur) => {
                let mut next = image_for(t, id, val);
                if next == *cur {
                    next = image_for(t, id, val.wrapping_add(1));
                }
                Some(next)
            }
            None => Some(image_for(t, id, val)),
        };
        self.write(t, id, new)
    }
}

/// Checks the model's order of a batch's changes: data sorted by (table bytes, pk), then the
/// ledger rows by client bytes, then outcome rows by (client bytes, mid).
pub fn check_change_order(changes: &[Change]) -> Result<(), String> {
    let class = |c: &Change| match c.table.as_str() {
        OUTCOMES_TABLE => 1,
        LEDGER_TABLE => 2,
        _ => 0,
    };
    for w in changes.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let (ka, kb) = (a.key_image(), b.key_image());
        let ordered = match class(a).cmp(&class(b)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => match class(a) {
                0 => (a.table.as_bytes(), id_of(&ka[0])) < (b.table.as_bytes(), id_of(&kb[0])),
                // Outcome rows keep the order the verdicts were recorded in.
                1 => true,
                _ => as_text(&ka[0]).as_bytes() < as_text(&kb[0]).as_bytes(),
            },
        };
        if !ordered {
            return Err(format!(
                "flush changes out of order (data, outcomes, ledger): {a:?} then {b:?}"
            ));
        }
    }
    Ok(())
}
