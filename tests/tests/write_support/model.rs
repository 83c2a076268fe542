//! The reference model of the write plane: head, dirty keys, flushes and their settlement.

use super::*;

// ------------------------------------------------------------------ the model

/// One client's watermarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// Highest consumed mid (dedup watermark).
    pub applied: u64,
    /// The ledger row's value.
    pub acked: u64,
    /// What the authority committed.
    pub durable: u64,
}

/// A dirty key: its CAS base, what the flight sent, whether it changed since.
#[derive(Clone, Debug)]
pub struct DirtyKey {
    /// The authority's last known image.
    pub base: Option<Image>,
    /// The image the in-flight batch carries.
    pub sent: Option<Option<Image>>,
    /// Written again after the in-flight batch was built.
    pub redirtied: bool,
}

/// What a settlement did beyond retiring keys (for the coverage counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SettleReport {
    /// Carried keys upstream took over during the flight (nothing to settle for them).
    pub taken_over: usize,
    /// Conflicted keys resolved to an image that arrived after the 409's `current`.
    pub past_current: usize,
}

/// A recorded non-applied outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeRow {
    /// The client.
    pub client: String,
    /// The mid.
    pub mid: u64,
    /// `rejected` | `deopt`.
    pub kind: String,
    /// The reason.
    pub reason: Option<String>,
    /// The envelope's name (deopt only).
    pub name: Option<String>,
    /// The envelope's args as JSON text (deopt only).
    pub args: Option<String>,
}

impl OutcomeRow {
    /// The `_rindle_room_mutation_outcomes` row.
    pub fn image(&self) -> Image {
        let opt = |s: &Option<String>| s.as_deref().map_or(Value::Null, text);
        vec![
            text(&self.client),
            num(self.mid as f64),
            text(&self.kind),
            opt(&self.reason),
            opt(&self.name),
            opt(&self.args),
        ]
    }
}

/// One flush change, comparable across the core and the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The table.
    pub table: String,
    /// `add` | `remove` | `edit`.
    pub op: &'static str,
    /// The CAS base (remove / edit).
    pub old: Option<Image>,
    /// The new image (add / edit).
    pub row: Option<Image>,
}

impl Change {
    /// From the core's change.
    pub fn from_core(c: &FlushChange) -> Change {
        match c {
            FlushChange::Add { table, row } => Change {
                table: table.to_string(),
                op: "add",
                old: None,
                row: Some(row.to_vec()),
            },
            FlushChange::Remove { table, old } => Change {
                table: table.to_string(),
                op: "remove",
                old: Some(old.to_vec()),
                row: None,
            },
            FlushChange::Edit { table, old, row } => Change {
                table: table.to_string(),
                op: "edit",
                old: Some(old.to_vec()),
                row: Some(row.to_vec()),
            },
        }
    }

    fn between(table: &str, base: Option<Image>, head: Option<Image>) -> Option<Change> {
        let (op, old, row) = match (base, head) {
            (None, None) => return None,
            (Some(a), Some(b)) if a == b => return None,
            (None, Some(b)) => ("add", None, Some(b)),
            (Some(a), None) => ("remove", Some(a), None),
            (Some(a), Some(b)) => ("edit", Some(a), Some(b)),
        };
        Some(Change {
            table: table.into(),
            op,
            old,
            row,
        })
    }

    /// The image that identifies the key (`row` for adds, else `old`).
    pub fn key_image(&self) -> &Image {
        self.row
            .as_ref()
            .or(self.old.as_ref())
            .expect("a change carries an image")
    }
}

/// A predicted flush batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// `changes`.
    pub changes: Vec<Change>,
    /// `lmids`.
    pub lmids: Vec<(String, u64)>,
}

#[derive(Clone, Debug)]
struct Flight {
    id: u64,
    /// The carried data keys, each with the images upstream reported for it during the
    /// flight (commit order).
    keys: BTreeMap<(usize, i64), Vec<Option<Image>>>,
    /// Carried keys someone else wrote during the flight (a report other than the echo
    /// of an earlier committed flush).
    foreign: BTreeSet<(usize, i64)>,
    /// The image the batch writes per carried key.
    sent: BTreeMap<(usize, i64), Option<Image>>,
    lmids: Vec<(String, u64)>,
    outcomes: Vec<(String, u64)>,
}

/// An image a flush of the room's wrote, expected back from upstream:
/// `(flight, committed, image)`.
pub type Echo = (u64, bool, Option<Image>);

/// The reference model of a room's head and write plane.
#[derive(Clone, Debug)]
pub struct Model {
    /// Whether the v2 gate is armed.
    pub v2: bool,
    /// The head's user tables.
    pub head: Tables,
    /// Watermarks per client.
    pub marks: BTreeMap<String, Marks>,
    /// Processed mids not yet durable.
    pub pending: Vec<(String, u64)>,
    /// Dirty keys.
    pub dirty: BTreeMap<(usize, i64), DirtyKey>,
    /// Recorded outcomes not yet durable.
    pub outcomes: Vec<OutcomeRow>,
    flight: Option<Flight>,
    /// Per data key: images of the room's flushes (committed or in flight) whose echo
    /// has not arrived, oldest first.
    pub echoes: BTreeMap<(usize, i64), VecDeque<Echo>>,
    /// Flushes begun so far (the next flight's id).
    pub flights: u64,
    /// The room's commit counter.
    pub head_cv: u64,
}

impl Model {
    /// A room just after its snapshot and `enable`.
    pub fn new(snapshot: &Tables, mode: WriteMode) -> Model {
        Model {
            v2: mode != WriteMode::V1,
            head: snapshot.clone(),
            marks: BTreeMap::new(),
            pending: Vec::new(),
            dirty: BTreeMap::new(),
            outcomes: Vec::new(),
            flight: None,
            echoes: BTreeMap::new(),
            flights: 0,
            head_cv: SNAPSHOT_CV,
        }
    }

    /// A client's marks.
    pub fn marks(&self, client: &str) -> Marks {
        self.marks.get(client).copied().unwrap_or_default()
    }

    fn marks_mut(&mut self, client: &str) -> &mut Marks {
        self.marks.entry(client.to_string()).or_default()
    }

    /// Whether a flush is in flight.
    pub fn in_flight(&self) -> bool {
        self.flight.is_some()
    }

    /// The ledger rows the head must hold (`acked > 0`), by client byte order.
    pub fn ledger(&self) -> Vec<(String, u64)> {
        self.marks
            .iter()
            .filter(|(_, m)| m.acked > 0)
            .map(|(c, m)| (c.clone(), m.acked))
            .collect()
    }

    fn processed(&mut self, client: &str, mid: u64) {
        let m = self.marks_mut(client);
        m.applied = m.applied.max(mid);
        if mid > m.durable {
            self.pending.push((client.to_string(), mid));
        }
    }

    fn record(
        &mut self,
        client: &str,
        mid: u64,
        kind: &str,
        reason: Option<String>,
        envelope: (&str, &str),
    ) {
        self.processed(client, mid);
        let deopt = kind == "deopt";
        self.outcomes.push(OutcomeRow {
            client: client.into(),
            mid,
            kind: kind.into(),
            reason,
            name: deopt.then(|| envelope.0.to_string()),
            args: deopt.then(|| envelope.1.to_string()),
        });
    }

    /// Replaces the last recorded outcome's reason (a refusal's message is the core's).
    pub fn set_last_reason(&mut self, reason: Option<String>) {
        if let Some(o) = self.outcomes.last_mut() {
            o.reason = reason;
        }
    }

    /// One envelope, as the shell runs it (see [`run_on_room`]); `Err` is the exact gap
    /// message.
    pub fn run(
        &mut self,
        client: &str,
        mid: u64,
        name: &str,
        args: &Json,
        journaled: Option<&str>,
    ) -> Result<Verdict, String> {
        let applied = self.marks(client).applied;
        if mid <= applied {
            return Ok(Verdict::Dedup);
        }
        if mid != applied + 1 {
            return Err(format!(
                "mutation gap for {client}: expected mid {}, got {mid}",
                applied + 1
            ));
        }
        let args_text = args.to_string();
        let envelope = (name, args_text.as_str());
        if let Some(kind) = journaled.filter(|k| *k != "applied") {
            self.record(client, mid, kind, None, envelope);
            return Ok(replayed(kind));
        }
        let Some(m) = Mutation::from_envelope(name, args) else {
            let reason = format!("unknown mutator `{name}`");
            self.record(client, mid, "rejected", Some(reason.clone()), envelope);
            return Ok(Verdict::Rejected {
                reason: Some(reason),
                refused: false,
            });
        };
        let head = self.head.clone();
        let mut tx = ModelTx::new(&head);
        let verdict = match m.run(&mut tx) {
            Err(MutErr::Env(_)) => Verdict::Deopt {
                reason: Some("environment".into()),
                gate: None,
            },
            Err(MutErr::Refused(msg)) => Verdict::Rejected {
                reason: Some(msg),
                refused: true,
            },
            Err(MutErr::Thrown(msg)) => Verdict::Rejected {
                reason: Some(msg),
                refused: false,
            },
            Ok(()) => match model_gate(&tx).filter(|_| self.v2) {
                Some(d) => Verdict::Deopt {
                    reason: Some(d.reason.clone()),
                    gate: Some(d),
                },
                None => Verdict::Applied,
            },
        };
        match &verdict {
            Verdict::Applied => {
                for &(t, id) in &tx.order {
                    let (before, after) = tx.staged[&(t, id)].clone();
                    if before != after {
                        match &after {
                            Some(image) => self.head[t].insert(id, image.clone()),
                            None => self.head[t].remove(&id),
                        };
                    }
                    self.touch_dirty(t, id, before);
                }
                // Every applied mutation moves headCv, with or without an effect.
                self.head_cv += 1;
                self.processed(client, mid);
            }
            Verdict::Rejected { reason, .. } => {
                self.record(client, mid, "rejected", reason.clone(), envelope)
            }
            Verdict::Deopt { reason, .. } => {
                self.record(client, mid, "deopt", reason.clone(), envelope)
            }
            Verdict::Dedup => unreachable!("dedup returned above"),
        }
        Ok(verdict)
    }

    fn touch_dirty(&mut self, t: usize, id: i64, before: Option<Image>) {
        match self.dirty.get_mut(&(t, id)) {
            Some(d) => {
                if d.sent.is_some() {
                    d.redirtied = true;
                }
            }
            None => {
                self.dirty.insert(
                    (t, id),
                    DirtyKey {
                        base: before,
                        sent: None,
                        redirtied: false,
                    },
                );
            }
        }
    }

    /// `ack(entries)`; `Err` when an entry is beyond its applied watermark.
    pub fn ack(&mut self, entries: &[(String, u64)]) -> Result<Option<u64>, String> {
        if let Some((c, m)) = entries.iter().find(|(c, m)| *m > self.marks(c).applied) {
            return Err(format!("ack of {c} mid {m} beyond applied"));
        }
        let mut raised = false;
        for (c, m) in entries {
            let marks = self.marks_mut(c);
            if *m > marks.acked {
                marks.acked = *m;
                raised = true;
            }
        }
        Ok(self.bump_if(raised))
    }

    fn bump_if(&mut self, changed: bool) -> Option<u64> {
        changed.then(|| {
            self.head_cv += 1;
            self.head_cv
        })
    }

    /// `seedDurable(seeds)`.
    pub fn seed(&mut self, seeds: &[(String, u64)]) -> Option<u64> {
        let mut raised = false;
        for (c, lmid) in seeds {
            let m = self.marks_mut(c);
            m.durable = m.durable.max(*lmid);
            m.applied = m.applied.max(*lmid);
            if *lmid > m.acked {
                m.acked = *lmid;
                raised = true;
            }
        }
        self.retire_pending();
        self.bump_if(raised)
    }

    fn retire_pending(&mut self) {
        let marks = &self.marks;
        self.pending
            .retain(|(c, mid)| *mid > marks.get(c).map_or(0, |m| m.durable));
    }

    /// `beginFlush()` as docs/design/decisions.md, "Write-behind flush" describes it.
    pub fn begin_flush(&mut self) -> Option<Batch> {
        assert!(
            self.flight.is_none(),
            "the test never begins a second flight"
        );
        let mut data = Vec::new();
        let mut settled = Vec::new();
        for (&(t, id), d) in &self.dirty {
            let head = self.head[t].get(&id).cloned();
            match Change::between(NAMES[t], d.base.clone(), head.clone()) {
                Some(c) => data.push(((t, id), c, head)),
                None => settled.push((t, id)),
            }
        }
        data.sort_by(|a, b| {
            NAMES[a.0 .0]
                .as_bytes()
                .cmp(NAMES[b.0 .0].as_bytes())
                .then(a.0 .1.cmp(&b.0 .1))
        });
        let mut changes = Vec::new();
        let mut lmids = Vec::new();
        let mut keys = BTreeMap::new();
        let mut sent = BTreeMap::new();
        for (k, c, head) in data {
            if let Some(d) = self.dirty.get_mut(&k) {
                d.sent = Some(head.clone());
                d.redirtied = false;
            }
            sent.insert(k, head.clone());
            let q = self.echoes.entry(k).or_default();
            if q.len() >= 8 {
                q.pop_front();
            }
            q.push_back((self.flights, false, head));
            keys.insert(k, Vec::new());
            changes.push(c);
        }
        let outcomes = self.outcomes.clone();
        for o in &outcomes {
            changes.push(Change {
                table: OUTCOMES_TABLE.into(),
                op: "add",
                old: None,
                row: Some(o.image()),
            });
        }
        for (c, m) in &self.marks {
            if m.applied > m.durable {
                let row = vec![text(c), num(m.applied as f64)];
                changes.push(if m.durable > 0 {
                    Change {
                        table: LEDGER_TABLE.into(),
                        op: "edit",
                        old: Some(vec![text(c), num(m.durable as f64)]),
                        row: Some(row),
                    }
                } else {
                    Change {
                        table: LEDGER_TABLE.into(),
                        op: "add",
                        old: None,
                        row: Some(row),
                    }
                });
                lmids.push((c.clone(), m.applied));
            }
        }
        if changes.is_empty() {
            for k in settled {
                self.dirty.remove(&k);
            }
            return None;
        }
        // A key whose net change is nothing rides the flight without a change.
        for k in settled {
            if let Some(d) = self.dirty.get_mut(&k) {
                d.sent = Some(d.base.clone());
                d.redirtied = false;
                sent.insert(k, d.base.clone());
            }
            keys.insert(k, Vec::new());
        }
        self.flight = Some(Flight {
            id: self.flights,
            keys,
            foreign: BTreeSet::new(),
            sent,
            lmids: lmids.clone(),
            outcomes: outcomes.iter().map(|o| (o.client.clone(), o.mid)).collect(),
        });
        self.flights += 1;
        Some(Batch { changes, lmids })
    }

    /// `flushOk()`: the authority committed the batch in flight. A carried key retires,
    /// or, when written again during the flight, re-bases onto the image the batch sent.
    /// A key upstream took over during the flight is skipped. The head does not change.
    pub fn flush_ok(&mut self) -> SettleReport {
        let flight = self.flight.take().expect("a flight");
        let mut report = SettleReport::default();
        for k in flight.keys.keys() {
            let mut echo_due = false;
            for e in self.echoes.get_mut(k).into_iter().flatten() {
                if e.0 == flight.id {
                    e.1 = true;
                    echo_due = true;
                }
            }
            let Some(d) = self.dirty.get_mut(k) else {
                report.taken_over += 1;
                continue;
            };
            if d.sent.is_none() {
                report.taken_over += 1;
                if let (true, Some(image)) = (echo_due, flight.sent.get(k)) {
                    d.base = image.clone();
                }
                continue;
            }
            let sent = d.sent.take().expect("checked above");
            if d.redirtied {
                d.base = sent;
                d.redirtied = false;
            } else {
                self.dirty.remove(k);
            }
        }
        for (c, mid) in &flight.lmids {
            let m = self.marks_mut(c);
            m.durable = m.durable.max(*mid);
        }
        self.outcomes
            .retain(|o| !flight.outcomes.contains(&(o.client.clone(), o.mid)));
        self.retire_pending();
        report
    }

    /// `flushConflict(conflicts)`: nothing of the batch committed. A conflicted key drops
    /// its local effect and takes the authority's image: the 409's `current`, unless
    /// upstream already reported that image during the flight — then the newest report,
    /// which is at least as new. Returns the new `headCv`.
    pub fn flush_conflict(&mut self, conflicts: &[Conflict]) -> (Option<u64>, SettleReport) {
        let mut report = SettleReport::default();
        let mut changed = false;
        for c in conflicts {
            if c.table == OUTCOMES_TABLE {
                let (client, mid) = (as_text(&c.pk[0]), as_num(&c.pk[1]) as u64);
                self.outcomes
                    .retain(|o| !(o.client == client && o.mid == mid));
            } else if c.table == LEDGER_TABLE {
                let lmid = c
                    .current
                    .as_ref()
                    .map_or(0, |r| as_num(&r.get(1).to_value()) as u64);
                self.marks_mut(&as_text(&c.pk[0])).durable = lmid;
                self.retire_pending();
            } else {
                let t = table_index(&c.table).expect("a user table");
                let id = id_of(&c.pk[0]);
                let mut current = c.current.as_ref().map(|r| r.to_vec());
                let seen = self.flight.as_ref().and_then(|f| f.keys.get(&(t, id)));
                if let Some(seen) = seen.filter(|seen| seen.contains(&current)) {
                    let newest = seen.last().expect("non-empty").clone();
                    if newest != current {
                        report.past_current += 1;
                    }
                    current = newest;
                }
                if self.head[t].get(&id) != current.as_ref() {
                    changed = true;
                    match current {
                        Some(image) => self.head[t].insert(id, image),
                        None => self.head[t].remove(&id),
                    };
                }
                self.dirty.remove(&(t, id));
            }
        }
        if let Some(flight) = self.flight.take() {
            for (k, seen) in &flight.keys {
                if let Some(d) = self.dirty.get_mut(k) {
                    d.sent = None;
                    d.redirtied = false;
                }
                if let Some(q) = self.echoes.get_mut(k) {
                    q.retain(|(id, _, _)| *id != flight.id);
                    if q.is_empty() {
                        self.echoes.remove(k);
                    }
                }
                // Nothing of the batch committed: every image reported for a carried
                // key during the flight was someone else's, and the newest wins — unless
                // the only reports were echoes of earlier committed flushes.
                let conflicted = conflicts
                    .iter()
                    .any(|c| table_index(&c.table) == Some(k.0) && id_of(&c.pk[0]) == k.1);
                let foreign = flight.foreign.contains(k);
                if let (Some(last), false, true) = (seen.last(), conflicted, foreign) {
                    self.dirty.remove(k);
                    if self.head[k.0].get(&k.1) != last.as_ref() {
                        changed = true;
                        match last.clone() {
                            Some(image) => self.head[k.0].insert(k.1, image),
                            None => self.head[k.0].remove(&k.1),
                        };
                    }
                }
            }
        }
        (self.bump_if(changed), report)
    }

    /// One live upstream batch carrying `cv`: `headCv` moves to the greater of
    /// `headCv + 1` and `cv`. An image equal to the oldest unechoed image the room's
    /// flushes wrote for the key is that write echoing back: ignored while the key is
    /// dirty or a later echo is due, else applied. Any other image applies;
    /// on a dirty key it wins over the room's pending change (the key is clean again).
    /// Every image of a key the flight carries is logged.
    pub fn upstream(&mut self, cv: u64, ops: &[NetOp]) {
        self.head_cv = (self.head_cv + 1).max(cv);
        for op in ops {
            let (table, key_image, new) = match op {
                NetOp::Add { table, row } => (table, row, Some(row.to_vec())),
                NetOp::Remove { table, row } => (table, row, None),
                NetOp::Edit { table, old, new } => (table, old, Some(new.to_vec())),
            };
            let t = table_index(table).expect("a user table");
            let id = id_of(&key_image.get(0).to_value());
            let flight_id = self.flight.as_ref().map(|f| f.id);
            let earlier_echo = (self.echoes.get(&(t, id)).and_then(|q| q.front())).is_some_and(
                |(f, committed, img)| *committed && Some(*f) != flight_id && *img == new,
            );
            if let Some(f) = self.flight.as_mut() {
                if let Some(seen) = f.keys.get_mut(&(t, id)) {
                    seen.push(new.clone());
                    if !earlier_echo {
                        f.foreign.insert((t, id));
                    }
                }
            }
            if let Some(q) = self
                .echoes
                .get_mut(&(t, id))
                .filter(|q| q.front().is_some_and(|(_, _, img)| *img == new))
            {
                q.pop_front();
                let last = q.is_empty();
                // A later committed flush of the key: the authority is past this image.
                let overtaken = q.iter().any(|(_, committed, _)| *committed);
                if last {
                    self.echoes.remove(&(t, id));
                }
                if let Some(d) = self.dirty.get_mut(&(t, id)) {
                    if d.sent.is_none() && !overtaken {
                        d.base = new.clone();
                    }
                    continue;
                }
                if !last {
                    continue;
                }
            }
            self.dirty.remove(&(t, id));
            match new {
                Some(image) => self.head[t].insert(id, image),
                None => self.head[t].remove(&id),
            };
        }
    }

    /// Compares the room's observable state with the model's.
    pub fn check_room(&self, room: &Room) -> Result<(), String> {
        let rows = room_tables(room);
        for t in 0..3 {
            if rows[t] != self.head[t] {
                return Err(format!(
                    "table {}: room head differs from the model\n  room:  {:?}\n  model: {:?}",
                    NAMES[t], rows[t], self.head[t]
                ));
            }
        }
        let ledger = room_ledger(room);
        if ledger != self.ledger() {
            return Err(format!(
                "ledger rows: room {ledger:?}, model {:?}",
                self.ledger()
            ));
        }
        for c in CLIENTS
            .iter()
            .map(|c| c.to_string())
            .chain(self.marks.keys().cloned())
        {
            let m = self.marks(&c);
            let got = Marks {
                applied: room.applied_mid(&c),
                acked: room.acked_lmid(&c),
                durable: room.durable_lmid(&c),
            };
            if got != m {
                return Err(format!("marks of {c}: room {got:?}, model {m:?}"));
            }
        }
        let checks = [
            ("pending_len", room.pending_len(), self.pending.len()),
            ("dirty_len", room.dirty_len(), self.dirty.len()),
            ("head_cv", room.head_cv() as usize, self.head_cv as usize),
            (
                "flush_in_flight",
                room.flush_in_flight() as usize,
                self.flight.is_some() as usize,
            ),
        ];
        for (what, got, want) in checks {
            if got != want {
                return Err(format!("{what}: room {got}, model {want}"));
            }
        }
        Ok(())
    }
}
