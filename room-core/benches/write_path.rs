//! Write-path benchmarks (issue "room-core: the write plane"): the cost of one client
//! mutation through the host loop of `write/mod.rs`, and of building and settling a
//! write-behind flush, through the typed [`Room`] API and through the [`JsonRoom`]
//! contract.
//!
//! - **W4**: 100 users, 10,000 issues with `creatorID = id % 1000`, and 1,000 standing
//!   views `issue where creatorID = u`, one subscriber each. The write plane is enabled
//!   (v1, owned `issue`). Client `c<u>` owns creator `u`. One mutation (a *unit*) is the
//!   whole host cycle: `begin_mutation`, a keyed update of one issue of creator `u`
//!   (its `modified` counter gets a new value), `commit_mutation`, `commit_all` (one
//!   frame, to subscriber `s<u>`), `ack`, then `commit_all` again. Units cycle over the
//!   creators, so every unit touches exactly one subscriber's view.
//!   - The **JSON** face runs the same cycle through `JsonRoom`: `begin_mutation`,
//!     `tx_get` and `tx_edit` (the row text the mutator would send back is rendered
//!     before the timed loop), `commit_mutation`, `commit_all`, `ack`, `commit_all`.
//!   - **+lmid**: each client also holds an `lmid_subscribe` subscription (2,000
//!     subscribers), so the drain after `ack` emits that client's ledger frame.
//!   - **flush/512**: the same cycle, plus a flush (`begin_flush`, `to_json`,
//!     `flush_ok`, `commit_all`) after every 512 units, inside the timed loop.
//!   - In the **pure** configurations, the dirty keys and pending mids pile up during a
//!     repetition; an untimed flush settles them between repetitions.
//! - **Flush build**: 512 committed mutations from 512 clients, each editing a distinct
//!   issue, then `begin_flush` (512 data edits + 512 ledger co-edits, and the FNV-1a
//!   `batchHash` over their hash text), `FlushBatch::to_json`, and `flush_ok`, each timed
//!   on its own; so is escaping the batch text into a journal flush record's body.
//! - **flush_ok, upstream moving / idle**: the settlement with the echoes of the
//!   settled keys arriving from upstream after each flush (they retire the pending
//!   echoes) and with upstream idle (the pending echoes stay).
//!
//! Run: `cargo bench -p rindle-room-core --bench write_path`. `WRITE_PATH_REPS` sets the
//! repetitions (default 9), `WRITE_PATH_REP_MS` the target length of one repetition of
//! one configuration (default 40), `WRITE_PATH_FLUSH_ROUNDS` the timed flush rounds
//! (default 101). Medians over the repetitions, configurations interleaved inside each
//! repetition; compare ratios from one run, not timings across runs.
//!
//! `WRITE_PATH_FILTER=<text>` runs only the configurations (and the `flush typed`,
//! `flush json`, `flush cv moving` and `flush cv idle` sections) whose label contains the
//! text. For stable instruction counts:
//!
//! ```text
//! WRITE_PATH_FILTER="W4 typed" WRITE_PATH_REPS=1 WRITE_PATH_REP_MS=20 \
//!   valgrind --tool=callgrind --toggle-collect='*Subject::step*' <bench binary>
//! WRITE_PATH_FILTER="flush typed" WRITE_PATH_FLUSH_ROUNDS=11 \
//!   valgrind --tool=callgrind --toggle-collect='*flush_build*' <bench binary>
//! ```
//!
//! and divide the collected `Ir` by the units (or flush rounds) the run prints.
//!
//! Nothing here asserts a timing. The checks are of the workloads' shape (each
//! mutation applies and emits the expected frames; each flush carries the expected
//! changes), so that a broken workload cannot pass for a fast one.

extern crate alloc;

use alloc::sync::Arc;
use core::hint::black_box;
use core::sync::atomic::Ordering;
use core::time::Duration;
use std::time::Instant;

use sha2::{Digest, Sha256};

use rindle_room_core::contract::JsonRoom;
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::host::journal_record::push_json_string;
use rindle_room_core::json::write::write_row;
use rindle_room_core::value::COMPARATOR_VERSION;
use rindle_room_core::{
    Begin, Commit, FlushBatch, FlushChange, Hello, KeyedRow, NetOp, Room, Row, TableSchema,
    UpstreamBatch, Value,
};

// ---------------------------------------------------------------------------------------
// The counting allocator (as in read_path.rs).
// ---------------------------------------------------------------------------------------

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, ALLOCS, COUNTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Turns counting on; returns the allocation count so far.
fn count_start() -> u64 {
    COUNTING.store(true, Ordering::SeqCst);
    count_read()
}

fn count_read() -> u64 {
    ALLOCS.load(Ordering::SeqCst)
}

/// Turns counting off; returns the allocations since `start`.
fn count_stop(start: u64) -> u64 {
    let end = count_read();
    COUNTING.store(false, Ordering::SeqCst);
    end - start
}

// ---------------------------------------------------------------------------------------
// Data.
// ---------------------------------------------------------------------------------------

const USERS: usize = 100;
const ISSUES: usize = 10_000;
const CREATORS: usize = 1_000;
/// Issues per creator.
const PER_CREATOR: usize = ISSUES / CREATORS;
const FLUSH_KEYS: usize = 512;
const MUTATOR: &str = "bumpModified";
const ISSUE_COLUMNS: &[&str] = &[
    "id",
    "title",
    "open",
    "created",
    "creatorID",
    "modified",
    "description",
];
/// The `modified` column.
const MODIFIED: usize = 5;

fn hello() -> Hello {
    // A hello lists its tables by name (byte order).
    let tables = vec![
        TableSchema::new("issue", ISSUE_COLUMNS, &[0]),
        TableSchema::new("user", &["id", "name"], &[0]),
    ];
    let fp = normalized_fp(tables.iter());
    Hello {
        epoch: 1,
        comparator_version: COMPARATOR_VERSION,
        tables,
        normalized_fp: fp,
    }
}

fn num(n: usize) -> Value {
    Value::num(n as f64)
}

/// Issue `id` with `modified = modified`:
/// `[id, title, open, created, creatorID, modified, description]`.
fn issue_row(id: usize, modified: usize) -> Row {
    Row::from(vec![
        num(id),
        Value::string(format!("Issue {id}")),
        Value::Bool(!id.is_multiple_of(3)),
        num(id),
        num(id % CREATORS),
        num(modified),
        Value::string(format!("Description of issue {id}.")),
    ])
}

/// The seq-0 snapshot: 100 users and 10,000 issues.
fn snapshot(h: &Hello) -> UpstreamBatch {
    let (user, issue): (Arc<str>, Arc<str>) = (Arc::from("user"), Arc::from("issue"));
    let mut ops = Vec::with_capacity(USERS + ISSUES);
    for id in 0..USERS {
        ops.push(NetOp::Add {
            table: user.clone(),
            row: Row::from(vec![num(id), Value::string(format!("user {id}"))]),
        });
    }
    for id in 0..ISSUES {
        ops.push(NetOp::Add {
            table: issue.clone(),
            row: issue_row(id, id),
        });
    }
    UpstreamBatch {
        epoch: h.epoch,
        seq: 0,
        normalized_fp: h.normalized_fp.clone(),
        cv: Some(0.0),
        ops,
    }
}

fn view_ast(creator: usize) -> String {
    format!(
        r#"{{"table":"issue","where":{{"type":"simple","op":"=","left":{{"type":"column","name":"creatorID"}},"right":{{"type":"literal","value":{creator}}}}}}}"#
    )
}

fn client(u: usize) -> String {
    format!("c{u:04}")
}

fn view_sub(u: usize) -> String {
    format!("s{u:04}")
}

/// What unit `k` of W4 does: client `c<u>` (its mid-th mutation) sets issue `id`'s
/// `modified` to `modified`. Every value of `modified` is new (the base rows have
/// `modified = id < 10,000`), so every unit changes the head.
#[derive(Clone, Copy, Debug)]
struct Unit {
    u: usize,
    mid: u64,
    id: usize,
    modified: usize,
}

fn unit(k: u64) -> Unit {
    let u = (k % CREATORS as u64) as usize;
    let round = k / CREATORS as u64;
    Unit {
        u,
        mid: round + 1,
        id: u + CREATORS * (round % PER_CREATOR as u64) as usize,
        modified: ISSUES + k as usize,
    }
}

/// A room with the W4 data, the 1,000 views and the write plane; with `lmid`, every
/// client also subscribes to its ledger row.
fn w4_room(lmid: bool) -> Room {
    let h = hello();
    let mut room = Room::open(h.clone(), 0).expect("open");
    room.apply(&snapshot(&h)).expect("snapshot");
    room.enable_writes(&["issue"]).expect("enable_writes");
    for u in 0..CREATORS {
        let q = room.parse_query(&view_ast(u)).expect("query");
        let s = room.subscribe(&view_sub(u), 1, &q, 0).expect("subscribe");
        assert_eq!(
            s.snapshot.ops.len(),
            PER_CREATOR,
            "each view holds its issues"
        );
        if lmid {
            room.lmid_subscribe(&format!("l{u:04}"), 1, &client(u), 0)
                .expect("lmid_subscribe");
        }
    }
    room
}

// ---------------------------------------------------------------------------------------
// Faces, prepared units and the cycle.
// ---------------------------------------------------------------------------------------

enum Face {
    Typed(Room),
    Json(JsonRoom),
}

struct Subject {
    face: Face,
    /// `c0000` … `c0999`.
    clients: Vec<String>,
}

/// One typed unit, built before the timed loop: the keyed update row and the ack list.
struct TypedUnit {
    u: usize,
    mid: u64,
    keyed: KeyedRow,
    ack: Vec<(String, u64)>,
}

/// One JSON unit, rendered before the timed loop: the pk and row texts the mutator
/// sends, and the ack text the host sends.
struct JsonUnit {
    u: usize,
    mid: f64,
    pk: String,
    row: String,
    ack: String,
}

enum Prepared {
    Typed(Vec<TypedUnit>),
    Json(Vec<JsonUnit>),
}

impl Prepared {
    fn len(&self) -> usize {
        match self {
            Prepared::Typed(v) => v.len(),
            Prepared::Json(v) => v.len(),
        }
    }
}

/// Called after each phase of a unit: 0 `begin_mutation`, 1 the mutator's reads and
/// writes, 2 `commit_mutation`, 3 drain, 4 `ack`, 5 drain. The no-op probe of the timed
/// loop compiles away.
trait Probe {
    fn at(&mut self, phase: usize);
}

impl Probe for () {
    #[inline(always)]
    fn at(&mut self, _phase: usize) {}
}

const PHASES: usize = 6;
const PHASE_NAMES: [&str; PHASES] = [
    "begin",
    "update / tx_get+tx_edit",
    "commit_mutation",
    "drain",
    "ack",
    "drain",
];

/// Counts allocations per phase.
struct AllocProbe {
    last: u64,
    per_phase: [u64; PHASES],
}

impl Probe for AllocProbe {
    fn at(&mut self, phase: usize) {
        let now = count_read();
        self.per_phase[phase] += now - self.last;
        self.last = now;
    }
}

/// Times each phase (adds a clock read per phase).
struct TimeProbe {
    last: Instant,
    per_phase: [Duration; PHASES],
}

impl Probe for TimeProbe {
    fn at(&mut self, phase: usize) {
        let now = Instant::now();
        self.per_phase[phase] += now - self.last;
        self.last = now;
    }
}

impl Subject {
    fn new(json: bool, lmid: bool) -> Subject {
        let room = w4_room(lmid);
        Subject {
            face: if json {
                Face::Json(JsonRoom::from_room(room))
            } else {
                Face::Typed(room)
            },
            clients: (0..CREATORS).map(client).collect(),
        }
    }

    fn room(&self) -> &Room {
        match &self.face {
            Face::Typed(r) => r,
            Face::Json(r) => r.room(),
        }
    }

    /// Units `start .. start + units`, ready for the face.
    fn prepare(&self, start: u64, units: u64) -> Prepared {
        let units = (start..start + units).map(unit);
        match self.face {
            Face::Typed(_) => Prepared::Typed(
                units
                    .map(|w| TypedUnit {
                        u: w.u,
                        mid: w.mid,
                        keyed: vec![
                            (String::from("id"), num(w.id)),
                            (String::from("modified"), num(w.modified)),
                        ],
                        ack: vec![(client(w.u), w.mid)],
                    })
                    .collect(),
            ),
            Face::Json(_) => Prepared::Json(
                units
                    .map(|w| {
                        let mut row = String::new();
                        write_row(&mut row, &issue_row(w.id, w.modified));
                        JsonUnit {
                            u: w.u,
                            mid: w.mid as f64,
                            pk: format!("[{}]", w.id),
                            row,
                            ack: format!(
                                "[{{\"clientID\":\"{}\",\"mid\":{}}}]",
                                client(w.u),
                                w.mid
                            ),
                        }
                    })
                    .collect(),
            ),
        }
    }

    /// Runs prepared unit `i`: the whole host cycle. Returns the frame counts of the two
    /// drains (for the JSON face: whether each drain emitted anything). Never inlined,
    /// so that a profiler can collect exactly the unprobed cycles
    /// (`valgrind --tool=callgrind --toggle-collect='*Subject::step*'`).
    #[inline(never)]
    fn step(&mut self, prepared: &Prepared, i: usize) -> (usize, usize) {
        self.cycle(prepared, i, &mut ())
    }

    /// [`Subject::step`] with a probe after each phase (kept out of profiles).
    #[inline(never)]
    fn probed<P: Probe>(&mut self, prepared: &Prepared, i: usize, probe: &mut P) {
        self.cycle(prepared, i, probe);
    }

    #[inline(always)]
    fn cycle<P: Probe>(&mut self, prepared: &Prepared, i: usize, probe: &mut P) -> (usize, usize) {
        match (&mut self.face, prepared) {
            (Face::Typed(r), Prepared::Typed(units)) => {
                let w = &units[i];
                let begun = r
                    .begin_mutation(&self.clients[w.u], w.mid, Some(MUTATOR), None)
                    .expect("begin_mutation");
                assert!(
                    begun == Begin::Tx,
                    "unit {i}: a fresh mid opens a transaction"
                );
                probe.at(0);
                r.mutation_tx()
                    .expect("mutation_tx")
                    .update("issue", &w.keyed)
                    .expect("update");
                probe.at(1);
                let commit = r.commit_mutation().expect("commit_mutation");
                assert!(matches!(commit, Commit::Applied { .. }), "v1 never deopts");
                probe.at(2);
                let frames = r.commit_all();
                let first = frames.len();
                black_box(frames);
                probe.at(3);
                black_box(r.ack(&w.ack).expect("ack"));
                probe.at(4);
                let frames = r.commit_all();
                let second = frames.len();
                black_box(frames);
                probe.at(5);
                (first, second)
            }
            (Face::Json(r), Prepared::Json(units)) => {
                let w = &units[i];
                let begun = r
                    .begin_mutation(&self.clients[w.u], w.mid, Some(MUTATOR), None)
                    .expect("begin_mutation");
                black_box(begun);
                probe.at(0);
                let current = r.tx_get("issue", &w.pk).expect("tx_get");
                black_box(current);
                r.tx_edit("issue", &w.row).expect("tx_edit");
                probe.at(1);
                black_box(r.commit_mutation().expect("commit_mutation"));
                probe.at(2);
                let out = r.commit_all();
                // `[]` is an empty drain.
                let first = usize::from(out.len() > 2);
                black_box(out);
                probe.at(3);
                black_box(r.ack(&w.ack).expect("ack"));
                probe.at(4);
                let out = r.commit_all();
                let second = usize::from(out.len() > 2);
                black_box(out);
                probe.at(5);
                (first, second)
            }
            _ => unreachable!("a prepared unit matches its face"),
        }
    }

    /// One flush through the face (`begin_flush`, the JSON text, `flush_ok`, drain);
    /// returns whether there was anything to flush.
    #[inline(never)]
    fn flush_cycle(&mut self) -> bool {
        match &mut self.face {
            Face::Typed(r) => {
                let Some(batch) = r.begin_flush().expect("begin_flush") else {
                    return false;
                };
                black_box(batch.to_json());
                black_box(batch);
                black_box(r.flush_ok().expect("flush_ok"));
                black_box(r.commit_all());
                true
            }
            Face::Json(r) => {
                let Some(text) = r.begin_flush().expect("begin_flush") else {
                    return false;
                };
                black_box(text);
                black_box(r.flush_ok().expect("flush_ok"));
                black_box(r.commit_all());
                true
            }
        }
    }
}

/// One W4 configuration.
struct Config {
    label: String,
    subject: usize,
    /// The drain after `ack` emits a frame (lmid subscriptions).
    lmid: bool,
    /// Flush inside the timed loop after every this many units; `None` = pure cycle.
    flush_every: Option<u64>,
    next_unit: u64,
    units: u64,
    /// Flushes run inside timed loops.
    flushes: u64,
    /// Units run through [`Subject::step`] (the unprobed cycle).
    stepped: u64,
    /// ns per unit, one entry per repetition.
    samples: Vec<f64>,
}

impl Config {
    /// Units per repetition are a multiple of this: a whole round over the creators,
    /// or whole flush periods.
    fn period(&self) -> u64 {
        self.flush_every.unwrap_or(CREATORS as u64)
    }
}

/// Runs `units` units from `config.next_unit`; returns the elapsed time of the loop
/// only. The pure configurations are settled by an untimed flush afterwards.
fn run(subject: &mut Subject, config: &mut Config, units: u64) -> Duration {
    let prepared = subject.prepare(config.next_unit, units);
    let start = Instant::now();
    match config.flush_every {
        None => {
            for i in 0..prepared.len() {
                subject.step(&prepared, i);
            }
        }
        Some(every) => {
            for i in 0..prepared.len() {
                subject.step(&prepared, i);
                if (config.next_unit + i as u64 + 1).is_multiple_of(every) {
                    subject.flush_cycle();
                    config.flushes += 1;
                }
            }
        }
    }
    let elapsed = start.elapsed();
    config.next_unit += units;
    config.stepped += units;
    drop(prepared);
    if config.flush_every.is_none() {
        subject.flush_cycle();
    }
    elapsed
}

/// Runs 1,024 units outside [`Subject::step`], then flushes: every client has a mid
/// and a durable ledger row from then on (the steady state; a client's first `ack`
/// inserts its ledger row instead of replacing it).
fn warm_up(subject: &mut Subject, config: &mut Config) {
    let units = 2 * FLUSH_KEYS as u64;
    let prepared = subject.prepare(config.next_unit, units);
    for i in 0..prepared.len() {
        subject.probed(&prepared, i, &mut ());
    }
    config.next_unit += units;
    subject.flush_cycle();
    let room = subject.room();
    assert_eq!((room.dirty_len(), room.pending_len()), (0, 0));
}

/// Runs one period, checking every unit: it opens a transaction and applies (both
/// asserted inside [`Subject::step`]), its first drain emits exactly one frame and its
/// creator's view now holds the new image, its second drain emits the ledger frame
/// exactly when the client has an lmid subscription, and the watermarks advance. The
/// closing flush must retire everything.
fn check_shape(subject: &mut Subject, config: &mut Config) {
    let period = config.period();
    let prepared = subject.prepare(config.next_unit, period);
    let label = &config.label;
    for i in 0..prepared.len() {
        let k = config.next_unit + i as u64;
        let w = unit(k);
        let before = subject.room().head_cv();
        let (first, second) = subject.step(&prepared, i);
        assert_eq!(first, 1, "{label}: unit {k} emits one frame");
        assert_eq!(
            second,
            usize::from(config.lmid),
            "{label}: unit {k}, ledger frame"
        );
        let room = subject.room();
        assert_eq!(room.head_cv(), before + 2, "{label}: commit and ack");
        assert_eq!(room.applied_mid(&client(w.u)), w.mid);
        assert_eq!(room.acked_lmid(&client(w.u)), w.mid);
        let view = room.footprint(&view_sub(w.u)).expect("the view");
        assert_eq!(view.len(), PER_CREATOR, "{label}: unit {k}");
        let row = view
            .iter()
            .map(|(_, r)| r)
            .find(|r| r.get(0) == num(w.id))
            .expect("the view holds the issue");
        assert_eq!(row.get(MODIFIED), num(w.modified), "{label}: unit {k}");
    }
    config.next_unit += period;
    config.stepped += period;
    assert!(subject.flush_cycle(), "{label}: the units left dirty keys");
    let room = subject.room();
    assert_eq!(room.dirty_len(), 0, "{label}: the flush retired every key");
    assert_eq!(room.pending_len(), 0, "{label}: every mid is durable");
}

/// Picks a unit count so that one repetition takes about `rep_ms`.
fn calibrate(subject: &mut Subject, config: &mut Config, rep_ms: u64) -> u64 {
    let period = config.period();
    let mut units = period;
    loop {
        let t = run(subject, config, units);
        if t.as_millis() as u64 >= rep_ms / 4 || units >= 1 << 22 {
            let per = t.as_secs_f64() / units as f64;
            let want = (rep_ms as f64 / 1000.0 / per) as u64;
            return (want / period * period).max(period);
        }
        units *= 4;
    }
}

// ---------------------------------------------------------------------------------------
// The flush build.
// ---------------------------------------------------------------------------------------

/// A room with the W4 data and views, fed 512 mutations per round. Held behind the JSON
/// contract so that both faces can flush it; the typed face goes through `room_mut`.
struct FlushSubject {
    room: JsonRoom,
    round: u64,
    /// The next upstream seq.
    seq: u64,
}

impl FlushSubject {
    fn new() -> FlushSubject {
        FlushSubject {
            room: JsonRoom::from_room(w4_room(false)),
            round: 0,
            seq: 1,
        }
    }

    /// The authority's commit cv of this round's flush: `2 × round` (odd cvs are left
    /// for [`FlushSubject::upstream_tick`]).
    fn commit_cv(&self) -> f64 {
        (2 * self.round) as f64
    }

    /// An upstream batch with no ops and a cv above every commit cv so far (upstream
    /// traffic moving on after a flush); then a drain.
    fn upstream_tick(&mut self) {
        let h = hello();
        let batch = UpstreamBatch {
            epoch: h.epoch,
            seq: self.seq,
            normalized_fp: h.normalized_fp,
            cv: Some(self.commit_cv() + 1.0),
            ops: Vec::new(),
        };
        self.seq += 1;
        self.typed().apply(&batch).expect("upstream batch");
        self.typed().commit_all();
    }

    fn typed(&mut self) -> &mut Room {
        self.room.room_mut()
    }

    /// 512 committed and acked mutations (clients `c0000` … `c0511`, one each), each
    /// editing a distinct issue; untimed.
    fn dirty_round(&mut self) {
        let round = self.round;
        let r = self.typed();
        for u in 0..FLUSH_KEYS {
            let c = client(u);
            let mid = round + 1;
            let id = u + CREATORS * (round % PER_CREATOR as u64) as usize;
            assert_eq!(
                r.begin_mutation(&c, mid, Some(MUTATOR), None)
                    .expect("begin"),
                Begin::Tx
            );
            let modified = ISSUES + round as usize * FLUSH_KEYS + u;
            let keyed: KeyedRow = vec![
                (String::from("id"), num(id)),
                (String::from("modified"), num(modified)),
            ];
            r.mutation_tx()
                .expect("tx")
                .update("issue", &keyed)
                .expect("update");
            r.commit_mutation().expect("commit");
            r.commit_all();
            r.ack(&[(c, mid)]).expect("ack");
            r.commit_all();
        }
        self.round += 1;
        assert_eq!(self.room.room().dirty_len(), FLUSH_KEYS);
    }
}

/// `begin_flush` on its own. Never inlined (callgrind: `--toggle-collect='*flush_build*'`
/// collects this and [`flush_build_json`]).
#[inline(never)]
fn flush_build(room: &mut Room) -> FlushBatch {
    room.begin_flush().expect("begin_flush").expect("a batch")
}

/// `FlushBatch::to_json` on its own.
#[inline(never)]
fn flush_render(batch: &FlushBatch) -> String {
    batch.to_json()
}

/// `flush_ok` on its own (callgrind: `--toggle-collect='*flush_settle*'`).
#[inline(never)]
fn flush_settle(room: &mut Room) {
    let ok = room.flush_ok().expect("flush_ok");
    assert_eq!((ok.retired, ok.dirty), (FLUSH_KEYS, 0), "every key retires");
}

/// `flush_ok()` while upstream moves on after every flush (callgrind:
/// `--toggle-collect='*settle_cv_moving*'`).
#[inline(never)]
fn settle_cv_moving(room: &mut Room) {
    let ok = room.flush_ok().expect("flush_ok");
    assert_eq!((ok.retired, ok.dirty), (FLUSH_KEYS, 0), "every key retires");
}

/// `flush_ok()` while upstream is idle (callgrind:
/// `--toggle-collect='*settle_cv_idle*'`).
#[inline(never)]
fn settle_cv_idle(room: &mut Room) {
    let ok = room.flush_ok().expect("flush_ok");
    assert_eq!((ok.retired, ok.dirty), (FLUSH_KEYS, 0), "every key retires");
}

/// The JSON contract's `beginFlush` (= `begin_flush` + `to_json`).
#[inline(never)]
fn flush_build_json(room: &mut JsonRoom) -> String {
    room.begin_flush().expect("beginFlush").expect("a batch")
}

/// Checks one batch: 512 issue edits, then 512 ledger edits (steady state: every client
/// already has a durable ledger row), and the 512 lmids.
fn check_batch(batch: &FlushBatch) {
    assert_eq!(
        batch.changes.len(),
        2 * FLUSH_KEYS,
        "data + ledger co-edits"
    );
    let (data, ledger) = batch.changes.split_at(FLUSH_KEYS);
    assert!(data
        .iter()
        .all(|c| matches!(c, FlushChange::Edit { table, .. } if &**table == "issue")));
    assert!(ledger.iter().all(
        |c| matches!(c, FlushChange::Edit { table, .. } if &**table == "_rindle_client_mutations")
    ));
    assert_eq!(batch.lmids.len(), FLUSH_KEYS);
    assert_eq!(batch.batch_hash.len(), 16);
}

struct FlushTimes {
    build: Vec<f64>,
    render: Vec<f64>,
    /// SHA-256 over the `changes` text (as long as the JCS text `begin_flush` hashes).
    sha: Vec<f64>,
    /// Dropping the batch and its text.
    drop: Vec<f64>,
    /// The batch text as a journal flush record's body (a JSON string).
    journal: Vec<f64>,
    settle: Vec<f64>,
    json_build: Vec<f64>,
    json_settle: Vec<f64>,
    bytes: usize,
    allocs_build: u64,
    allocs_render: u64,
    allocs_settle: u64,
    allocs_json_build: u64,
}

/// Times `rounds` flushes on a typed room and, interleaved, on a JSON room.
fn flush_bench(rounds: usize, typed: bool, json: bool) -> FlushTimes {
    let mut t = FlushSubject::new();
    let mut j = FlushSubject::new();
    let mut out = FlushTimes {
        build: Vec::new(),
        render: Vec::new(),
        sha: Vec::new(),
        drop: Vec::new(),
        journal: Vec::new(),
        settle: Vec::new(),
        json_build: Vec::new(),
        json_settle: Vec::new(),
        bytes: 0,
        allocs_build: 0,
        allocs_render: 0,
        allocs_settle: 0,
        allocs_json_build: 0,
    };
    // Warm-up: the first round's ledger co-edits are adds (no durable row yet).
    for s in [&mut t, &mut j] {
        for _ in 0..2 {
            s.dirty_round();
            s.typed().begin_flush().expect("begin_flush");
            s.typed().flush_ok().expect("flush_ok");
        }
    }
    // Allocation counts (one round each), and the batch shape.
    if typed {
        t.dirty_round();
        let c = count_start();
        let batch = flush_build(t.typed());
        out.allocs_build = count_stop(c);
        check_batch(&batch);
        let c = count_start();
        let text = flush_render(&batch);
        out.allocs_render = count_stop(c);
        out.bytes = text.len();
        drop((batch, text));
        let c = count_start();
        flush_settle(t.typed());
        out.allocs_settle = count_stop(c);
    }
    if json {
        j.dirty_round();
        let c = count_start();
        let text = flush_build_json(&mut j.room);
        out.allocs_json_build = count_stop(c);
        drop(text);
        j.room.flush_ok().expect("flushOk");
    }
    // Timed rounds.
    for _ in 0..rounds {
        if typed {
            t.dirty_round();
            let t0 = Instant::now();
            let batch = flush_build(t.typed());
            let t1 = Instant::now();
            let text = flush_render(&batch);
            let t2 = Instant::now();
            black_box(&text);
            let mut record = String::new();
            let j0 = Instant::now();
            push_json_string(&mut record, black_box(&text));
            let j1 = Instant::now();
            black_box(&record);
            drop(record);
            // The same members as the JCS text in another key order: the same length.
            let changes = batch.changes_json();
            let s0 = Instant::now();
            black_box(Sha256::digest(changes.as_bytes()));
            let s1 = Instant::now();
            drop(changes);
            let t3 = Instant::now();
            drop((batch, text));
            let t4 = Instant::now();
            flush_settle(t.typed());
            let t5 = Instant::now();
            out.build.push((t1 - t0).as_nanos() as f64);
            out.render.push((t2 - t1).as_nanos() as f64);
            out.sha.push((s1 - s0).as_nanos() as f64);
            out.journal.push((j1 - j0).as_nanos() as f64);
            out.drop.push((t4 - t3).as_nanos() as f64);
            out.settle.push((t5 - t4).as_nanos() as f64);
        }
        if json {
            j.dirty_round();
            let t0 = Instant::now();
            let text = flush_build_json(&mut j.room);
            let t1 = Instant::now();
            black_box(&text);
            drop(text);
            let t2 = Instant::now();
            black_box(j.room.flush_ok().expect("flushOk"));
            let t3 = Instant::now();
            out.json_build.push((t1 - t0).as_nanos() as f64);
            out.json_settle.push((t3 - t2).as_nanos() as f64);
        }
    }
    out
}

/// Times `flush_ok()` over `rounds` flushes of 512 keys. With `moving`, an
/// upstream batch with a higher cv follows every flush (its arrival retires the
/// settled-key fences); without, upstream stays idle and the fences of every key ever
/// settled stay (5,120 after the warm-up: 10 groups of 512 issues). Returns the ns per
/// call and the allocations of one call.
fn flush_cv_bench(rounds: usize, moving: bool) -> (Vec<f64>, u64) {
    let mut s = FlushSubject::new();
    let settle = |s: &mut FlushSubject| {
        if moving {
            settle_cv_moving(s.typed());
        } else {
            settle_cv_idle(s.typed());
        }
    };
    // Warm-up: steady-state ledger rows, and (idle) the fences of all 10 issue groups.
    for _ in 0..(2 + PER_CREATOR) {
        s.dirty_round();
        s.typed().begin_flush().expect("begin_flush");
        s.typed().flush_ok().expect("flush_ok");
        if moving {
            s.upstream_tick();
        }
    }
    s.dirty_round();
    black_box(s.typed().begin_flush().expect("begin_flush"));
    let c = count_start();
    settle(&mut s);
    let allocs = count_stop(c);
    if moving {
        s.upstream_tick();
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        s.dirty_round();
        black_box(s.typed().begin_flush().expect("begin_flush"));
        let t0 = Instant::now();
        settle(&mut s);
        times.push(t0.elapsed().as_nanos() as f64);
        if moving {
            s.upstream_tick();
        }
    }
    (times, allocs)
}

// ---------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.is_empty() {
        f64::NAN
    } else if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

/// Median of the per-repetition ratios `a / b`.
fn ratio(a: &Config, b: &Config) -> f64 {
    let r: Vec<f64> = a
        .samples
        .iter()
        .zip(&b.samples)
        .map(|(x, y)| x / y)
        .collect();
    median(&r)
}

// ---------------------------------------------------------------------------------------
// The benchmarks.
// ---------------------------------------------------------------------------------------

fn main() {
    let reps = env_u64("WRITE_PATH_REPS", 9).max(1) as usize;
    let rep_ms = env_u64("WRITE_PATH_REP_MS", 40).max(1);
    let rounds = env_u64("WRITE_PATH_FLUSH_ROUNDS", 101).max(1) as usize;
    let filter = std::env::var("WRITE_PATH_FILTER").ok();
    let selected = |label: &str| filter.as_deref().is_none_or(|f| label.contains(f));
    println!(
        "# write_path: {reps} repetitions, ~{rep_ms} ms per configuration and repetition, \
         {rounds} flush rounds"
    );
    println!();

    // --- Subjects and configurations -------------------------------------------------
    let t0 = Instant::now();
    let mut subjects: Vec<Subject> = Vec::new();
    let mut configs: Vec<Config> = Vec::new();
    // (label suffix, lmid, flush every)
    let kinds: [(&str, bool, Option<u64>); 3] = [
        ("", false, None),
        ("+lmid ", true, None),
        ("flush/512 ", false, Some(FLUSH_KEYS as u64)),
    ];
    for (kind, lmid, flush_every) in kinds {
        for json in [false, true] {
            let label = format!("W4 {kind}{}", if json { "json" } else { "typed" });
            if !selected(&label) {
                continue;
            }
            subjects.push(Subject::new(json, lmid));
            configs.push(Config {
                label,
                subject: subjects.len() - 1,
                lmid,
                flush_every,
                next_unit: 0,
                units: 0,
                flushes: 0,
                stepped: 0,
                samples: Vec::new(),
            });
        }
    }
    println!(
        "setup: {} rooms, {} configurations in {:.1} s",
        subjects.len(),
        configs.len(),
        t0.elapsed().as_secs_f64()
    );

    // --- Warm-up, shape checks and calibration ---------------------------------------
    for c in &mut configs {
        let s = &mut subjects[c.subject];
        warm_up(s, c);
        check_shape(s, c);
        c.units = calibrate(s, c, rep_ms);
    }

    // --- Timed repetitions (configurations interleaved) ------------------------------
    for _ in 0..reps {
        for c in &mut configs {
            let s = &mut subjects[c.subject];
            let units = c.units;
            let t = run(s, c, units);
            c.samples.push(t.as_nanos() as f64 / units as f64);
        }
    }

    if !configs.is_empty() {
        println!();
        println!("## W4: per mutation (the whole host cycle)");
        println!();
        println!("| configuration | units/rep | median ns | min ns | mutations/s (median) |");
        println!("|---|---:|---:|---:|---:|");
        for c in &configs {
            let m = median(&c.samples);
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} |",
                c.label,
                c.units,
                m,
                min(&c.samples),
                1e9 / m
            );
        }
    }

    // --- Per-phase time and allocations ----------------------------------------------
    if !configs.is_empty() {
        println!();
        println!("## W4: per phase, ns (the cycle only, no flush; each phase timed alone, ~1 clock read each)");
        println!();
        println!("| configuration | {} |", PHASE_NAMES.join(" | "));
        println!("|---|{}", "---:|".repeat(PHASES));
        for c in &mut configs {
            let s = &mut subjects[c.subject];
            let mut per_rep: Vec<Vec<f64>> = vec![Vec::new(); PHASES];
            for _ in 0..reps.min(5) {
                let units = CREATORS as u64;
                let prepared = s.prepare(c.next_unit, units);
                let mut probe = TimeProbe {
                    last: Instant::now(),
                    per_phase: [Duration::ZERO; PHASES],
                };
                for i in 0..prepared.len() {
                    probe.last = Instant::now();
                    s.probed(&prepared, i, &mut probe);
                }
                c.next_unit += units;
                drop(prepared);
                s.flush_cycle();
                for (k, d) in probe.per_phase.iter().enumerate() {
                    per_rep[k].push(d.as_nanos() as f64 / units as f64);
                }
            }
            let cells: Vec<String> = per_rep
                .iter()
                .map(|v| format!("{:.0}", median(v)))
                .collect();
            println!("| {} | {} |", c.label, cells.join(" | "));
        }

        println!();
        println!("## W4: allocations per mutation (counting allocator)");
        println!();
        println!(
            "| configuration | allocs/mutation | {} |",
            PHASE_NAMES.join(" | ")
        );
        println!("|---|---:|{}", "---:|".repeat(PHASES));
        for c in &mut configs {
            let s = &mut subjects[c.subject];
            let units = CREATORS as u64;
            let prepared = s.prepare(c.next_unit, units);
            let start = count_start();
            let mut probe = AllocProbe {
                last: start,
                per_phase: [0; PHASES],
            };
            for i in 0..prepared.len() {
                probe.last = count_read();
                s.probed(&prepared, i, &mut probe);
            }
            let total = count_stop(start);
            c.next_unit += units;
            drop(prepared);
            // The flush is counted apart (see the flush section).
            s.flush_cycle();
            let cells: Vec<String> = probe
                .per_phase
                .iter()
                .map(|a| format!("{:.1}", *a as f64 / units as f64))
                .collect();
            println!(
                "| {} | {:.1} | {} |",
                c.label,
                total as f64 / units as f64,
                cells.join(" | ")
            );
        }
    }

    // --- Targets ---------------------------------------------------------------------
    let find = |label: &str| configs.iter().find(|c| c.label == label);
    if let Some(typed) = find("W4 typed") {
        let m = median(&typed.samples);
        println!();
        println!("## Targets and ratios (ratios: median of per-repetition ratios)");
        println!();
        println!("| target | measured | verdict |");
        println!("|---|---:|---|");
        println!(
            "| W4 typed ≥ 100,000 mutations/s | {:.0} /s ({:.2} µs) | {} |",
            1e9 / m,
            m / 1000.0,
            verdict(m <= 10_000.0)
        );
        for (a, b) in [
            ("W4 json", "W4 typed"),
            ("W4 +lmid typed", "W4 typed"),
            ("W4 +lmid json", "W4 +lmid typed"),
            ("W4 flush/512 typed", "W4 typed"),
            ("W4 flush/512 json", "W4 json"),
        ] {
            if let (Some(a), Some(b)) = (find(a), find(b)) {
                println!("| {} / {} | {:.2}× | – |", a.label, b.label, ratio(a, b));
            }
        }
    }

    // Every unit went through `Subject::step`: a profiler's count for the whole run
    // divided by this is a per-unit cost.
    if !configs.is_empty() {
        println!();
        println!("## Units through Subject::step (shape check, calibration, timed repetitions)");
        println!();
        println!("| configuration | units through Subject::step | flushes in the timed loop |");
        println!("|---|---:|---:|");
        for c in &configs {
            println!("| {} | {} | {} |", c.label, c.stepped, c.flushes);
        }
    }
    drop(configs);
    drop(subjects);

    // --- The flush build -------------------------------------------------------------
    let (typed, json) = (selected("flush typed"), selected("flush json"));
    if typed || json {
        let f = flush_bench(rounds, typed, json);
        println!();
        println!(
            "## Flush over {FLUSH_KEYS} dirty keys + {FLUSH_KEYS} ledger co-edits \
             ({rounds} rounds, µs)"
        );
        println!();
        println!("| step | median | min | allocations |");
        println!("|---|---:|---:|---:|");
        let us = |v: &[f64]| (median(v) / 1000.0, min(v) / 1000.0);
        if typed {
            let sum: Vec<f64> = f.build.iter().zip(&f.render).map(|(a, b)| a + b).collect();
            let na = u64::MAX;
            for (name, v, a) in [
                (
                    "begin_flush (changes, JCS, SHA-256)",
                    &f.build,
                    f.allocs_build,
                ),
                ("… of which SHA-256 (same-length text)", &f.sha, na),
                ("FlushBatch::to_json", &f.render, f.allocs_render),
                (
                    "begin_flush + to_json",
                    &sum,
                    f.allocs_build + f.allocs_render,
                ),
                ("dropping the batch and its text", &f.drop, 0),
                ("the text as a journal record's body", &f.journal, na),
                ("flush_ok", &f.settle, f.allocs_settle),
            ] {
                let (m, lo) = us(v);
                let a = if a == na {
                    String::from("–")
                } else {
                    a.to_string()
                };
                println!("| {name} | {m:.0} | {lo:.0} | {a} |");
            }
        }
        if json {
            let (m, lo) = us(&f.json_build);
            println!(
                "| JsonRoom::begin_flush | {m:.0} | {lo:.0} | {} |",
                f.allocs_json_build
            );
            let (m, lo) = us(&f.json_settle);
            println!("| JsonRoom::flush_ok | {m:.0} | {lo:.0} | – |");
        }
        println!();
        println!(
            "Calls of flush_build, flush_render, flush_settle (typed) and flush_build_json: {} \
             each (the timed rounds and the allocation round).",
            rounds + 1
        );
        if typed {
            let sum: Vec<f64> = f.build.iter().zip(&f.render).map(|(a, b)| a + b).collect();
            let m = median(&sum);
            println!();
            println!(
                "batch JSON: {} bytes; per dirty key: {:.0} ns (begin_flush + to_json)",
                f.bytes,
                m / FLUSH_KEYS as f64
            );
            println!();
            println!("| target | measured | verdict |");
            println!("|---|---:|---|");
            println!(
                "| flush build (begin_flush + to_json) over 512 keys ≤ 1 ms | {:.3} ms | {} |",
                m / 1e6,
                verdict(m <= 1e6)
            );
        }
    }

    // --- flush_ok with the authority's commit cv -------------------------------------
    let modes = [("flush cv moving", true), ("flush cv idle", false)];
    if modes.iter().any(|(l, _)| selected(l)) {
        println!();
        println!("## flush_ok() over {FLUSH_KEYS} keys ({rounds} rounds, µs)");
        println!();
        println!("| upstream | median | min | allocations |");
        println!("|---|---:|---:|---:|");
    }
    for (label, moving) in modes {
        if !selected(label) {
            continue;
        }
        let (times, allocs) = flush_cv_bench(rounds, moving);
        let what = if moving {
            "moves on after each flush (fences retired)"
        } else {
            "idle (5,120 fences stay)"
        };
        println!(
            "| {what} | {:.0} | {:.0} | {allocs} |",
            median(&times) / 1000.0,
            min(&times) / 1000.0
        );
    }
}
