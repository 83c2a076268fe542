//! A deterministic in-process harness: opens a room, feeds it upstream batches, attaches
//! subscribers with a [`ClientModel`] each, drains, and checks after every drain that
//! each subscriber's maintained footprint, the naive footprint and the client's folded
//! view are the same rows.

use std::collections::BTreeMap;

use rindle_room_core::ast::Query;
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::value::{Value, COMPARATOR_VERSION};
use rindle_room_core::{
    ApplyStatus, DownstreamHello, Hello, NetOp, Room, TableSchema, UpstreamBatch,
};

use crate::client::ClientModel;
use crate::naive::{self, Db, Member};
use crate::projection;

/// The upstream epoch every harness room uses.
pub const UPSTREAM_EPOCH: u64 = 1;

/// Builds a valid upstream hello for `tables`: sorted by name, as the daemon lists them
/// (and a room requires), fingerprint computed.
pub fn hello_for(mut tables: Vec<TableSchema>) -> Hello {
    tables.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let normalized_fp = normalized_fp(tables.iter());
    Hello {
        epoch: UPSTREAM_EPOCH,
        comparator_version: COMPARATOR_VERSION,
        tables,
        normalized_fp,
    }
}

/// A room under test plus its upstream cursor and subscribers.
#[derive(Debug)]
pub struct Harness {
    /// The room under test.
    pub room: Room,
    fp: String,
    next_upstream_seq: u64,
    subs: BTreeMap<String, (Query, ClientModel)>,
    /// The head at each `headCv` so far: a subscriber joining a reused query holds the
    /// query's state at its last drain (the snapshot's cv) until the next drain.
    history: BTreeMap<u64, Db>,
    /// Subscribers whose client view is still at an older cv than the head.
    lagging: BTreeMap<String, u64>,
}

impl Harness {
    /// Opens a room over `tables` and applies `rows` (`(table, row)`) as the seq-0
    /// snapshot.
    pub fn open(tables: Vec<TableSchema>, rows: Vec<(String, Vec<Value>)>) -> Harness {
        let hello = hello_for(tables);
        let fp = hello.normalized_fp.clone();
        let room = Room::open(hello, 60_000).expect("the harness hello is valid");
        let mut h = Harness {
            room,
            fp,
            next_upstream_seq: 0,
            subs: BTreeMap::new(),
            history: BTreeMap::new(),
            lagging: BTreeMap::new(),
        };
        let ops = rows
            .into_iter()
            .map(|(table, row)| NetOp::Add {
                table: table.as_str().into(),
                row: row.into(),
            })
            .collect();
        let status = h.upstream(ops).expect("the snapshot applies");
        assert!(matches!(status, ApplyStatus::Snapshot { .. }), "{status:?}");
        h
    }

    /// Applies one upstream batch (the next seq) without draining.
    pub fn upstream(&mut self, ops: Vec<NetOp>) -> Result<ApplyStatus, String> {
        let batch = UpstreamBatch {
            epoch: UPSTREAM_EPOCH,
            seq: self.next_upstream_seq,
            normalized_fp: self.fp.clone(),
            cv: Some(self.next_upstream_seq as f64),
            ops,
        };
        let status = self
            .room
            .apply(&batch)
            .map_err(|e| e.message().to_string())?;
        self.next_upstream_seq += 1;
        self.history
            .insert(self.room.head_cv(), Db::from_room(&self.room));
        Ok(status)
    }

    /// Attaches (or re-attaches) subscriber `sub` to `query` and folds its snapshot.
    /// Returns whether the room reused an existing pipeline.
    pub fn subscribe(&mut self, sub: &str, epoch: u64, query: Query) -> Result<bool, String> {
        let res = self
            .room
            .subscribe(sub, epoch, &query, 0)
            .map_err(|e| e.message().to_string())?;
        // A new pipeline is the head; a reused one its state at its last drain.
        let head_cv = self.room.head_cv();
        let cv = res.snapshot.cv;
        if cv != head_cv && !(res.reused && cv < head_cv && self.history.contains_key(&cv)) {
            return Err(format!(
                "snapshot cv {cv} is neither headCv {head_cv} nor (reused) an earlier head"
            ));
        }
        match cv == head_cv {
            true => self.lagging.remove(sub),
            false => self.lagging.insert(sub.to_string(), cv),
        };
        self.check_hello(&res.hello, epoch, &query)
            .map_err(|e| format!("subscriber {sub}: {e}"))?;
        let mut model = ClientModel::new(&res.hello, &res.snapshot)
            .map_err(|e| format!("subscriber {sub}: {e}"))?;
        let schemas: Vec<&TableSchema> = self.room.tables().collect();
        for (t, cols) in projection::columns(&query, &schemas) {
            if cols.len() < schemas[t].columns.len() {
                model.projected(&schemas[t].name);
            }
        }
        self.subs.insert(sub.to_string(), (query, model));
        Ok(res.reused)
    }

    /// Checks a downstream hello: the subscriber's epoch, exactly the tables the
    /// footprint can draw from, sorted by name, with the columns the query ships (see
    /// [`projection`]), and a matching fingerprint.
    fn check_hello(
        &self,
        hello: &DownstreamHello,
        epoch: u64,
        query: &Query,
    ) -> Result<(), String> {
        if hello.epoch != epoch {
            return Err(format!("hello epoch {} != {epoch}", hello.epoch));
        }
        let schemas: Vec<&TableSchema> = self.room.tables().collect();
        let kept = projection::columns(query, &schemas);
        let mut want: Vec<TableSchema> = naive::footprint_tables(query)
            .into_iter()
            .map(|t| projection::schema(schemas[t], &kept[&t]))
            .collect();
        want.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        if hello.tables[..] != want[..] {
            return Err(format!("hello tables {:?} != {want:?}", hello.tables));
        }
        if *hello.normalized_fp != normalized_fp(want.iter()) {
            return Err(format!(
                "hello normalizedFp {} does not match its tables",
                hello.normalized_fp
            ));
        }
        Ok(())
    }

    /// Detaches `sub`.
    pub fn unsubscribe(&mut self, sub: &str) {
        self.room.unsubscribe(sub, 0);
        self.subs.remove(sub);
        self.lagging.remove(sub);
    }

    /// Reclaims every pipeline with no subscriber; returns how many.
    pub fn sweep(&mut self) -> usize {
        self.room.sweep(u64::MAX / 2)
    }

    /// Drains the room once and folds every frame into its subscriber's model. Returns
    /// how many frames were emitted.
    pub fn drain(&mut self) -> Result<usize, String> {
        let frames = self.room.commit_all();
        let head_cv = self.room.head_cv();
        self.lagging.clear();
        let mut seen: Vec<String> = Vec::new();
        for f in &frames {
            let sub = f.sub.to_string();
            if let Some(last) = seen.last() {
                if last.as_bytes() >= sub.as_bytes() {
                    return Err(format!("frames not in subscriber order: {last} then {sub}"));
                }
            }
            if f.batch.cv != head_cv {
                return Err(format!("frame cv {} != headCv {head_cv}", f.batch.cv));
            }
            let (_, model) = self
                .subs
                .get_mut(&sub)
                .ok_or_else(|| format!("frame for unknown subscriber {sub}"))?;
            model
                .apply(&f.batch)
                .map_err(|e| format!("subscriber {sub}: {e}"))?;
            seen.push(sub);
        }
        Ok(frames.len())
    }

    /// Checks every subscriber: room footprint == naive footprint == client view.
    pub fn check(&self) -> Result<(), String> {
        let db = Db::from_room(&self.room);
        for sub in self.subs.keys() {
            self.check_sub(&db, sub, true)?;
        }
        Ok(())
    }

    /// Checks every subscriber's maintained footprint against the naive one (valid at
    /// any time, drained or not; client views lag until the next drain).
    pub fn check_room(&self) -> Result<(), String> {
        let db = Db::from_room(&self.room);
        for sub in self.subs.keys() {
            self.check_sub(&db, sub, false)?;
        }
        Ok(())
    }

    /// Checks one subscriber against the naive footprint over `db` (the current head):
    /// the room's footprint, and with `client` also the client's folded view.
    pub fn check_sub(&self, db: &Db, sub: &str, client: bool) -> Result<(), String> {
        let (query, model) = self
            .subs
            .get(sub)
            .ok_or_else(|| format!("harness does not know subscriber {sub}"))?;
        let want = naive::footprint(db, query);
        let got = self.footprint(sub)?;
        if got != want {
            return Err(format!(
                "subscriber {sub}: room footprint differs from the naive one\n{}",
                diff(&want, &got)
            ));
        }
        if client {
            let held = model.members();
            let want = match self.lagging.get(sub).and_then(|cv| self.history.get(cv)) {
                Some(then) => naive::footprint(then, query),
                None => want,
            };
            let schemas: Vec<&TableSchema> = self.room.tables().collect();
            let kept = projection::columns(query, &schemas);
            let want = projection::members(want, &kept, &schemas);
            if held != want {
                return Err(format!(
                    "subscriber {sub}: client view differs from the naive footprint\n{}",
                    diff(&want, &held)
                ));
            }
        }
        Ok(())
    }

    /// The room's footprint of `sub` as members.
    pub fn footprint(&self, sub: &str) -> Result<Vec<Member>, String> {
        let fp = self
            .room
            .footprint(sub)
            .ok_or_else(|| format!("room does not know subscriber {sub}"))?;
        Ok(fp
            .into_iter()
            .map(|(t, r)| (t.to_string(), r.to_vec()))
            .collect())
    }

    /// The subscribers' names.
    pub fn subscribers(&self) -> Vec<String> {
        self.subs.keys().cloned().collect()
    }
}

/// A readable difference of two member lists: `-` only in `want`, `+` only in `got`.
pub fn diff(want: &[Member], got: &[Member]) -> String {
    let mut out = String::new();
    for m in want {
        if !got.contains(m) {
            out.push_str(&format!("  - {} {:?}\n", m.0, m.1));
        }
    }
    for m in got {
        if !want.contains(m) {
            out.push_str(&format!("  + {} {:?}\n", m.0, m.1));
        }
    }
    if out.is_empty() {
        out.push_str("  (same rows, different order)\n");
    }
    out
}
