//! Read-path benchmarks: the cost of keeping queries current and serving
//! them, through the typed [`Room`] API and through the [`JsonRoom`] contract.
//!
//! - **W1** — 100 users, N issues, one query `issue where open = true order by created
//!   desc limit 50` with a `related` `creator`; a 4-step cycle of single-op live batches
//!   (add a newest open issue, edit its title, edit a deep row's title, remove the added
//!   issue), each followed by `commit_all`.
//! - **W3** — 10,000 issues, `creatorID = id % Q`, Q standing views `issue where
//!   creatorID = u order by created desc limit 20`, one subscriber each; writes add then
//!   remove a newest issue of one creator (cycling over creators), or of a creator no
//!   view watches.
//! - Subscribe (hydration) time, allocations per applied op and retained bytes per base
//!   row (a counting global allocator).
//!
//! Run: `cargo bench -p rindle-room-core --bench read_path`. `READ_PATH_REPS` sets the
//! repetitions (default 9), `READ_PATH_REP_MS` the target length of one repetition of
//! one configuration (default 40). Results are medians over the repetitions, with the
//! configurations interleaved inside each repetition so that machine noise hits them
//! alike; compare ratios from one run, not timings across runs.
//!
//! `READ_PATH_FILTER=<text>` runs only the configurations (and the `hydrate …` /
//! `memory …` sections) whose label contains the text. For stable instruction counts:
//!
//! ```text
//! READ_PATH_FILTER="W1 N=10k typed" READ_PATH_REPS=1 READ_PATH_REP_MS=20 \
//!   valgrind --tool=callgrind --toggle-collect='*Subject::step*' <bench binary>
//! ```
//!
//! and divide the collected `Ir` by the "units applied" the run prints.
//!
//! Nothing here asserts a timing. The only checks are of the workloads' shape (which
//! drains emit frames), so that a broken workload cannot pass for a fast one.

extern crate alloc;

use alloc::sync::Arc;
use core::hint::black_box;
use core::sync::atomic::Ordering;
use core::time::Duration;
use std::time::Instant;

use rindle_room_core::contract::{write_ops, JsonRoom};
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::value::COMPARATOR_VERSION;
use rindle_room_core::{Hello, NetOp, Room, Row, TableSchema, UpstreamBatch, Value};

// ---------------------------------------------------------------------------------------
// The counting allocator.
// ---------------------------------------------------------------------------------------

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, ALLOCS, COUNTING, LIVE, PEAK};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Counter readings at one instant.
#[derive(Clone, Copy, Debug)]
struct Mark {
    allocs: u64,
    live: isize,
}

/// Turns counting on and reads the counters.
fn count_start() -> Mark {
    COUNTING.store(true, Ordering::SeqCst);
    count_read()
}

fn count_read() -> Mark {
    Mark {
        allocs: ALLOCS.load(Ordering::SeqCst),
        live: LIVE.load(Ordering::SeqCst),
    }
}

/// Turns counting off; returns `(allocations, net live bytes)` since `start`.
fn count_stop(start: Mark) -> (u64, isize) {
    let end = count_read();
    COUNTING.store(false, Ordering::SeqCst);
    (end.allocs - start.allocs, end.live - start.live)
}

// ---------------------------------------------------------------------------------------
// Data.
// ---------------------------------------------------------------------------------------

const USERS: usize = 100;
const ISSUE_COLUMNS: &[&str] = &[
    "id",
    "title",
    "open",
    "created",
    "creatorID",
    "modified",
    "description",
];

fn tables() -> Vec<TableSchema> {
    // Sorted by name, as a hello must be.
    vec![
        TableSchema::new("issue", ISSUE_COLUMNS, &[0]),
        TableSchema::new("user", &["id", "name"], &[0]),
    ]
}

fn hello() -> Hello {
    let tables = tables();
    let fp = normalized_fp(tables.iter());
    Hello {
        epoch: 1,
        comparator_version: COMPARATOR_VERSION,
        tables,
        normalized_fp: fp,
    }
}

fn hello_json(h: &Hello) -> String {
    let mut s = format!(
        "{{\"epoch\":{},\"comparatorVersion\":{},\"tables\":[",
        h.epoch, h.comparator_version
    );
    for (i, t) in h.tables.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        t.write_json(&mut s);
    }
    s.push_str("],\"normalizedFp\":\"");
    s.push_str(&h.normalized_fp);
    s.push_str("\"}");
    s
}

fn num(n: usize) -> Value {
    Value::num(n as f64)
}

fn user_row(id: usize) -> Row {
    Row::from(vec![num(id), Value::string(format!("user {id}"))])
}

/// One issue row: `[id, title, open, created, creatorID, modified, description]`.
fn issue_row(id: usize, title: &str, open: bool, created: usize, creator: usize) -> Row {
    Row::from(vec![
        num(id),
        Value::str(title),
        Value::Bool(open),
        num(created),
        num(creator),
        num(created),
        Value::string(format!("Description of issue {id}.")),
    ])
}

/// The base issue `id` with creators `id % creators`.
fn base_issue(id: usize, creators: usize) -> Row {
    issue_row(
        id,
        &format!("Issue {id}"),
        !id.is_multiple_of(3),
        id,
        id % creators,
    )
}

/// The seq-0 snapshot: 100 users and issues `0..n`.
fn snapshot(n: usize, creators: usize) -> Vec<NetOp> {
    let (user, issue): (Arc<str>, Arc<str>) = (Arc::from("user"), Arc::from("issue"));
    let mut ops = Vec::with_capacity(USERS + n);
    for id in 0..USERS {
        ops.push(NetOp::Add {
            table: user.clone(),
            row: user_row(id),
        });
    }
    for id in 0..n {
        ops.push(NetOp::Add {
            table: issue.clone(),
            row: base_issue(id, creators),
        });
    }
    ops
}

fn batch(h: &Hello, seq: u64, ops: Vec<NetOp>) -> UpstreamBatch {
    UpstreamBatch {
        epoch: h.epoch,
        seq,
        normalized_fp: h.normalized_fp.clone(),
        cv: Some(seq as f64),
        ops,
    }
}

/// Renders an upstream batch as the `nbatch.batch` JSON the contract parses.
fn render_batch(b: &UpstreamBatch) -> String {
    let mut s = String::with_capacity(64 + 160 * b.ops.len());
    s.push_str(&format!(
        "{{\"epoch\":{},\"seq\":{},\"normalizedFp\":\"{}\",\"ops\":",
        b.epoch, b.seq, b.normalized_fp
    ));
    write_ops(&mut s, &b.ops);
    s.push_str(&format!(",\"cv\":{}}}", b.cv.unwrap_or(b.seq as f64)));
    s
}

const W1_AST: &str = r#"{"table":"issue","where":{"type":"simple","op":"=","left":{"type":"column","name":"open"},"right":{"type":"literal","value":true}},"orderBy":[["created","desc"]],"limit":50,"related":[{"correlation":{"parentField":["creatorID"],"childField":["id"]},"subquery":{"table":"user","alias":"creator"}}]}"#;

fn w3_ast(creator: usize) -> String {
    format!(
        r#"{{"table":"issue","where":{{"type":"simple","op":"=","left":{{"type":"column","name":"creatorID"}},"right":{{"type":"literal","value":{creator}}}}},"orderBy":[["created","desc"]],"limit":20}}"#
    )
}

/// Creators in the boot-storm room (the issues are spread over them).
const BOOT_STORM_CREATORS: usize = 250;

/// 1,000 distinct W1-like queries: W1's `open = true` and a creator, newest (or by
/// another order) first, 50 of them, with their creator.
fn boot_storm_asts() -> Vec<String> {
    let orders = [
        r#"[["created","desc"]]"#,
        r#"[["modified","desc"]]"#,
        r#"[["title","asc"]]"#,
        r#"[["created","asc"]]"#,
    ];
    let mut out = Vec::new();
    for creator in 0..BOOT_STORM_CREATORS {
        for order in orders {
            out.push(format!(
                r#"{{"table":"issue","where":{{"type":"and","conditions":[{{"type":"simple","op":"=","left":{{"type":"column","name":"open"}},"right":{{"type":"literal","value":true}}}},{{"type":"simple","op":"=","left":{{"type":"column","name":"creatorID"}},"right":{{"type":"literal","value":{creator}}}}}]}},"orderBy":{order},"limit":50,"related":[{{"correlation":{{"parentField":["creatorID"],"childField":["id"]}},"subquery":{{"table":"user","alias":"creator"}}}}]}}"#
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Faces and scripts.
// ---------------------------------------------------------------------------------------

/// A room behind one of the two faces, with the upstream seq it expects next.
enum Face {
    Typed(Room),
    Json(JsonRoom),
}

struct Subject {
    face: Face,
    hello: Hello,
    next_seq: u64,
}

impl Subject {
    /// Opens a room and loads the snapshot through the subject's own face.
    fn load(json: bool, n: usize, creators: usize) -> Subject {
        let h = hello();
        let snap = batch(&h, 0, snapshot(n, creators));
        let face = if json {
            let mut room = JsonRoom::open(&hello_json(&h), 0.0).expect("open");
            room.apply(&render_batch(&snap)).expect("snapshot");
            Face::Json(room)
        } else {
            let mut room = Room::open(h.clone(), 0).expect("open");
            room.apply(&snap).expect("snapshot");
            Face::Typed(room)
        };
        Subject {
            face,
            hello: h,
            next_seq: 1,
        }
    }

    fn room(&self) -> &Room {
        match &self.face {
            Face::Typed(r) => r,
            Face::Json(r) => r.room(),
        }
    }

    fn subscribe(&mut self, sub: &str, ast: &str) {
        match &mut self.face {
            Face::Typed(r) => {
                let q = r.parse_query(ast).expect("query");
                r.subscribe(sub, 1, &q, 0).expect("subscribe");
            }
            Face::Json(r) => {
                r.subscribe(sub, 1.0, ast, 0.0).expect("subscribe");
            }
        }
    }

    /// Builds the next `units` batches of `script` (from unit `start`), numbered from
    /// the subject's next seq.
    fn prepare(&mut self, script: &dyn Script, start: u64, units: u64) -> Prepared {
        let batches: Vec<UpstreamBatch> = (start..start + units)
            .map(|u| {
                let b = batch(&self.hello, self.next_seq, script.ops(u));
                self.next_seq += 1;
                b
            })
            .collect();
        match self.face {
            Face::Typed(_) => Prepared::Typed(batches),
            Face::Json(_) => Prepared::Json(batches.iter().map(render_batch).collect()),
        }
    }

    /// Applies one prepared unit and drains; returns how many frames the drain emitted.
    /// Never inlined, so that a profiler can collect exactly the applies and drains
    /// (`valgrind --tool=callgrind --toggle-collect='*Subject::step*'`).
    #[inline(never)]
    fn step(&mut self, prepared: &Prepared, i: usize) -> usize {
        match (&mut self.face, prepared) {
            (Face::Typed(r), Prepared::Typed(b)) => {
                r.apply(&b[i]).expect("apply");
                let frames = r.commit_all();
                let n = frames.len();
                black_box(frames);
                n
            }
            (Face::Json(r), Prepared::Json(t)) => {
                black_box(r.apply(&t[i]).expect("apply"));
                let out = r.commit_all();
                // `[]` is an empty drain; frames only appear in longer output.
                let n = usize::from(out.len() > 2);
                black_box(out);
                n
            }
            _ => unreachable!("a prepared script matches its face"),
        }
    }
}

/// Batches ready to apply: typed batches, or their pre-rendered JSON texts.
enum Prepared {
    Typed(Vec<UpstreamBatch>),
    Json(Vec<String>),
}

impl Prepared {
    fn len(&self) -> usize {
        match self {
            Prepared::Typed(b) => b.len(),
            Prepared::Json(t) => t.len(),
        }
    }
}

/// A workload: the ops of unit `u` (one upstream batch). Units come in cycles of
/// `period()`; the room is back in its starting state after every full cycle.
trait Script {
    fn ops(&self, u: u64) -> Vec<NetOp>;
    fn period(&self) -> u64;
    /// Frames the drain after unit `u` must emit (the workload shape check).
    fn frames(&self, u: u64) -> usize;
}

/// W1's 4-step cycle.
struct W1 {
    added: Row,
    edited: Row,
    deep: [Row; 2],
}

impl W1 {
    fn new(n: usize) -> W1 {
        let id = n + 1;
        // A mid-table open issue: far older than the 50-row window.
        let mut deep_id = n / 2;
        while deep_id.is_multiple_of(3) {
            deep_id += 1;
        }
        let creator = id % USERS;
        W1 {
            added: issue_row(id, &format!("Issue {id}"), true, id, creator),
            edited: issue_row(id, &format!("Issue {id} (edited)"), true, id, creator),
            deep: [
                base_issue(deep_id, USERS),
                issue_row(
                    deep_id,
                    &format!("Issue {deep_id} (edited)"),
                    true,
                    deep_id,
                    deep_id % USERS,
                ),
            ],
        }
    }
}

impl Script for W1 {
    fn ops(&self, u: u64) -> Vec<NetOp> {
        let table: Arc<str> = Arc::from("issue");
        let cycle = (u / 4) as usize;
        vec![match u % 4 {
            0 => NetOp::Add {
                table,
                row: self.added.clone(),
            },
            1 => NetOp::Edit {
                table,
                old: self.added.clone(),
                new: self.edited.clone(),
            },
            2 => NetOp::Edit {
                table,
                old: self.deep[cycle % 2].clone(),
                new: self.deep[(cycle + 1) % 2].clone(),
            },
            _ => NetOp::Remove {
                table,
                row: self.edited.clone(),
            },
        }]
    }

    fn period(&self) -> u64 {
        4
    }

    fn frames(&self, u: u64) -> usize {
        usize::from(u % 4 != 2)
    }
}

/// W3's writes: add then remove a newest issue of creator `pair % Q` (`hit`), or of
/// creator `Q`, which no view watches.
struct W3 {
    n: usize,
    q: usize,
    hit: bool,
}

impl W3 {
    fn creator(&self, u: u64) -> usize {
        if self.hit {
            (u / 2) as usize % self.q
        } else {
            self.q
        }
    }
}

impl Script for W3 {
    fn ops(&self, u: u64) -> Vec<NetOp> {
        let table: Arc<str> = Arc::from("issue");
        let id = self.n + 1;
        let row = issue_row(id, &format!("Issue {id}"), true, id, self.creator(u));
        vec![if u.is_multiple_of(2) {
            NetOp::Add { table, row }
        } else {
            NetOp::Remove { table, row }
        }]
    }

    fn period(&self) -> u64 {
        2
    }

    fn frames(&self, _u: u64) -> usize {
        usize::from(self.hit)
    }
}

/// A subject driven by a script, with its unit counter.
struct Config {
    label: String,
    subject: usize,
    script: Box<dyn Script>,
    next_unit: u64,
    units: u64,
    /// ns per unit, one entry per repetition.
    samples: Vec<f64>,
}

/// Runs `units` units (a multiple of the period) of `script`; returns the elapsed time
/// of the apply + drain loop only. With `per_class`, also times every unit separately
/// and adds its time to `per_class[u % period]`.
fn run(
    subject: &mut Subject,
    script: &dyn Script,
    next_unit: &mut u64,
    units: u64,
    per_class: Option<&mut [Duration]>,
) -> Duration {
    let prepared = subject.prepare(script, *next_unit, units);
    let period = script.period();
    let start = Instant::now();
    match per_class {
        None => {
            for i in 0..prepared.len() {
                subject.step(&prepared, i);
            }
        }
        Some(acc) => {
            for i in 0..prepared.len() {
                let t = Instant::now();
                subject.step(&prepared, i);
                acc[(i as u64 % period) as usize] += t.elapsed();
            }
        }
    }
    let elapsed = start.elapsed();
    *next_unit += units;
    drop(prepared);
    elapsed
}

/// Runs one period checking every drain's frame count against the script.
fn check_shape(subject: &mut Subject, script: &dyn Script, next_unit: &mut u64, label: &str) {
    let period = script.period();
    let prepared = subject.prepare(script, *next_unit, period);
    for i in 0..prepared.len() {
        let u = *next_unit + i as u64;
        let got = subject.step(&prepared, i);
        let want = script.frames(u).min(1);
        assert_eq!(
            got.min(1),
            want,
            "{label}: unit {u} emitted {got} frames, the workload expects {want}"
        );
    }
    *next_unit += period;
}

/// Picks a unit count so that one repetition takes about `rep_ms`.
fn calibrate(subject: &mut Subject, script: &dyn Script, next_unit: &mut u64, rep_ms: u64) -> u64 {
    let period = script.period();
    let mut units = 16 * period;
    loop {
        let t = run(subject, script, next_unit, units, None);
        if t.as_millis() as u64 >= rep_ms / 4 || units >= 1 << 22 {
            let per = t.as_secs_f64() / units as f64;
            let want = (rep_ms as f64 / 1000.0 / per) as u64;
            return (want.max(period) / period * period).max(period);
        }
        units *= 4;
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// `10000` → `10k` (labels must not be substrings of one another).
fn kilo(n: usize) -> String {
    if n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

// ---------------------------------------------------------------------------------------
// The benchmarks.
// ---------------------------------------------------------------------------------------

fn main() {
    let reps = env_u64("READ_PATH_REPS", 9).max(1) as usize;
    let rep_ms = env_u64("READ_PATH_REP_MS", 40).max(1);
    // `READ_PATH_FILTER=<text>` runs only the configurations whose label contains the
    // text, and skips the summary sections (for profiling one workload).
    let filter = std::env::var("READ_PATH_FILTER").ok();
    let selected = |label: &str| filter.as_deref().is_none_or(|f| label.contains(f));
    println!("# read_path: {reps} repetitions, ~{rep_ms} ms per configuration and repetition");
    println!();

    // --- Subjects and configurations -------------------------------------------------
    let mut subjects: Vec<Subject> = Vec::new();
    let mut configs: Vec<Config> = Vec::new();
    let t0 = Instant::now();
    for &n in &[10_000usize, 100_000] {
        for json in [false, true] {
            let label = format!("W1 N={} {}", kilo(n), if json { "json" } else { "typed" });
            if !selected(&label) {
                continue;
            }
            let mut s = Subject::load(json, n, USERS);
            s.subscribe("w1", W1_AST);
            subjects.push(s);
            configs.push(Config {
                label,
                subject: subjects.len() - 1,
                script: Box::new(W1::new(n)),
                next_unit: 0,
                units: 0,
                samples: Vec::new(),
            });
        }
    }
    let w3_n = 10_000usize;
    for &q in &[10usize, 100, 1_000, 10_000] {
        for json in [false, true] {
            let face = if json { "json" } else { "typed" };
            let labels = ["hit", "miss"].map(|k| format!("W3 Q={q} {k} {face}"));
            if !labels.iter().any(|l| selected(l)) {
                continue;
            }
            let mut s = Subject::load(json, w3_n, q);
            for u in 0..q {
                s.subscribe(&format!("s{u:05}"), &w3_ast(u));
            }
            subjects.push(s);
            for (hit, label) in [true, false].into_iter().zip(labels) {
                if !selected(&label) {
                    continue;
                }
                configs.push(Config {
                    label,
                    subject: subjects.len() - 1,
                    script: Box::new(W3 { n: w3_n, q, hit }),
                    next_unit: 0,
                    units: 0,
                    samples: Vec::new(),
                });
            }
        }
    }
    println!(
        "setup: {} rooms, {} configurations in {:.1} s",
        subjects.len(),
        configs.len(),
        t0.elapsed().as_secs_f64()
    );

    // --- Shape checks and calibration ------------------------------------------------
    for c in &mut configs {
        let s = &mut subjects[c.subject];
        check_shape(s, &*c.script, &mut c.next_unit, &c.label);
        c.units = calibrate(s, &*c.script, &mut c.next_unit, rep_ms);
    }

    // --- Timed repetitions (configurations interleaved) ------------------------------
    for _ in 0..reps {
        for c in &mut configs {
            let s = &mut subjects[c.subject];
            let t = run(s, &*c.script, &mut c.next_unit, c.units, None);
            c.samples.push(t.as_nanos() as f64 / c.units as f64);
        }
    }

    println!();
    println!("## Per change (apply + commit_all), ns");
    println!();
    println!("| configuration | units/rep | median | min |");
    println!("|---|---:|---:|---:|");
    for c in &configs {
        println!(
            "| {} | {} | {:.0} | {:.0} |",
            c.label,
            c.units,
            median(&c.samples),
            min(&c.samples)
        );
    }

    if filter.is_none() {
        print_targets(&configs);
    }

    // --- Per-step breakdown ----------------------------------------------------------
    println!();
    println!("## Per step, ns (each unit timed alone; includes ~2 clock reads)");
    println!();
    println!("| configuration | step 0 | step 1 | step 2 | step 3 |");
    println!("|---|---:|---:|---:|---:|");
    for c in &mut configs {
        let period = c.script.period() as usize;
        let mut per_rep: Vec<Vec<f64>> = vec![Vec::new(); period];
        for _ in 0..reps.min(5) {
            let mut acc = vec![Duration::ZERO; period];
            let s = &mut subjects[c.subject];
            run(s, &*c.script, &mut c.next_unit, c.units, Some(&mut acc));
            let cycles = c.units as f64 / period as f64;
            for (k, d) in acc.iter().enumerate() {
                per_rep[k].push(d.as_nanos() as f64 / cycles);
            }
        }
        let mut cells: Vec<String> = per_rep
            .iter()
            .map(|v| format!("{:.0}", median(v)))
            .collect();
        cells.resize(4, String::from("–"));
        println!("| {} | {} |", c.label, cells.join(" | "));
    }
    println!();
    println!("W1 steps: 0 add newest, 1 edit its title, 2 edit a deep row, 3 remove it.");
    println!("W3 steps: 0 add, 1 remove.");

    // --- Allocations per applied op --------------------------------------------------
    println!();
    println!("## Allocations per applied op (apply + commit_all, counting allocator)");
    println!();
    println!("| configuration | allocs/op | per step |");
    println!("|---|---:|---|");
    for c in &mut configs {
        let period = c.script.period();
        let units = period * 64;
        let s = &mut subjects[c.subject];
        let prepared = s.prepare(&*c.script, c.next_unit, units);
        let mut per_step = vec![0u64; period as usize];
        let all = count_start();
        for i in 0..prepared.len() {
            let m = count_read();
            s.step(&prepared, i);
            per_step[i % period as usize] += count_read().allocs - m.allocs;
        }
        let (allocs, _) = count_stop(all);
        c.next_unit += units;
        drop(prepared);
        let cells: Vec<String> = per_step
            .iter()
            .map(|a| format!("{:.1}", *a as f64 / 64.0))
            .collect();
        println!(
            "| {} | {:.1} | {} |",
            c.label,
            allocs as f64 / units as f64,
            cells.join(" / ")
        );
    }

    // Every unit went through `Subject::step`: a profiler's count for the whole run
    // divided by this is a per-unit cost.
    println!();
    println!("## Units applied in this run (shape check, calibration, all passes)");
    println!();
    println!("| configuration | units |");
    println!("|---|---:|");
    for c in &configs {
        println!("| {} | {} |", c.label, c.next_unit);
    }

    // --- Hydration ---------------------------------------------------------------------
    drop(configs);
    drop(subjects);
    let hydrate_labels = ["hydrate W1 N=10k", "hydrate W1 N=100k", "hydrate W3 Q=1000"];
    if hydrate_labels.iter().any(|l| selected(l)) {
        println!();
        println!("## Subscribe (hydration), median over repetitions");
        println!();
        println!("| what | typed | json |");
        println!("|---|---:|---:|");
    }
    for &n in &[10_000usize, 100_000] {
        if !selected(&format!("hydrate W1 N={}", kilo(n))) {
            continue;
        }
        let mut typed = Subject::load(false, n, USERS);
        let mut json = Subject::load(true, n, USERS);
        let (mut ts, mut js) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            ts.push(hydrate(&mut typed, &[W1_AST.to_string()]));
            js.push(hydrate(&mut json, &[W1_AST.to_string()]));
        }
        println!(
            "| W1 query, N={} | {:.0} µs | {:.0} µs |",
            kilo(n),
            median(&ts) / 1000.0,
            median(&js) / 1000.0
        );
        // The first subscribe of a room builds what later ones share (an ordering).
        println!(
            "| W1 query, N={}, first on the room | {:.0} µs | {:.0} µs |",
            kilo(n),
            ts[0] / 1000.0,
            js[0] / 1000.0
        );
    }
    if selected("hydrate W3 Q=1000") {
        let q = 1_000usize;
        let asts: Vec<String> = (0..q).map(w3_ast).collect();
        let mut typed = Subject::load(false, w3_n, q);
        let mut json = Subject::load(true, w3_n, q);
        let (mut ts, mut js) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            ts.push(hydrate(&mut typed, &asts));
            js.push(hydrate(&mut json, &asts));
        }
        println!(
            "| W3 Q=1000: all 1000 views (N=10k) | {:.2} ms | {:.2} ms |",
            median(&ts) / 1e6,
            median(&js) / 1e6
        );
        println!(
            "| W3 Q=1000: per view | {:.1} µs | {:.1} µs |",
            median(&ts) / q as f64 / 1000.0,
            median(&js) / q as f64 / 1000.0
        );
    }

    // --- Boot storm ----------------------------------------------------------------
    if selected("boot storm") {
        // A room that just booted: N = 10k issues, 1,000 subscribers on 1,000 distinct
        // W1-like queries (250 creators × 4 orders) subscribing one after the other on
        // a fresh room, through the JSON contract as a host would.
        let asts = boot_storm_asts();
        let (mut totals, mut longest) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let mut subject = Subject::load(true, w3_n, BOOT_STORM_CREATORS);
            let Face::Json(room) = &mut subject.face else {
                unreachable!("a JSON subject")
            };
            let mut worst = 0f64;
            let t = Instant::now();
            for (i, ast) in asts.iter().enumerate() {
                let one = Instant::now();
                black_box(
                    room.subscribe(&format!("b{i:04}"), 1.0, ast, 0.0)
                        .expect("subscribe"),
                );
                worst = worst.max(one.elapsed().as_nanos() as f64);
            }
            totals.push(t.elapsed().as_nanos() as f64);
            longest.push(worst);
            assert_eq!(room.materialization_count(), asts.len() as u64);
        }
        println!();
        println!("## Boot storm: 1,000 distinct W1-like subscribes on a fresh room (N=10k, JSON)");
        println!();
        println!("| total | longest single subscribe | mean per subscribe |");
        println!("|---:|---:|---:|");
        println!(
            "| {:.1} ms | {:.0} µs | {:.0} µs |",
            median(&totals) / 1e6,
            median(&longest) / 1e3,
            median(&totals) / asts.len() as f64 / 1e3
        );
    }

    // --- Retained bytes per base row, and the peak while loading ---------------------
    if ["memory N=10k", "memory N=100k"]
        .iter()
        .any(|l| selected(l))
    {
        println!();
        println!("## Retained bytes per base row (typed, net requested bytes)");
        println!();
        println!("| N | row images | store total (no subscription) | + W1 query materialized |");
        println!("|---:|---:|---:|---:|");
    }
    for &n in &[10_000usize, 100_000] {
        if !selected(&format!("memory N={}", kilo(n))) {
            continue;
        }
        let rows = (USERS + n) as f64;
        let h = hello();
        let base = count_start();
        let mut room = Room::open(h.clone(), 0).expect("open");
        let opened = count_read();
        let snap = batch(&h, 0, snapshot(n, USERS));
        let built = count_read();
        room.apply(&snap).expect("snapshot");
        let ops_vec = (snap.ops.capacity() * core::mem::size_of::<NetOp>()) as isize;
        // The ops and their table names go; the row images stay, held by the store.
        drop(snap);
        let loaded = count_read();
        let q = room.parse_query(W1_AST).expect("query");
        let sub = room.subscribe("w1", 1, &q, 0).expect("subscribe");
        drop(sub);
        drop(q);
        let (_, with_query) = count_stop(base);
        let images = built.live - opened.live - ops_vec;
        let store = loaded.live - opened.live;
        let query = with_query - (loaded.live - base.live);
        println!(
            "| {} | {:.0} | {:.0} | {:.0} (+{:.0}) |",
            kilo(n),
            images as f64 / rows,
            store as f64 / rows,
            (store + query) as f64 / rows,
            query as f64 / rows,
        );
        let t = std::time::Instant::now();
        let counted = black_box(room.retained_bytes());
        println!(
            "  Room::retained_bytes at N={}: {counted} B in {:.0} µs",
            kilo(n),
            t.elapsed().as_secs_f64() * 1e6
        );
        black_box(&room);
    }
    if selected("memory snapshot") {
        // The seq-0 snapshot through the JSON contract: the most bytes live at once while
        // it is applied, against what the room keeps after it (the text excluded).
        println!();
        println!("## Applying a seq-0 snapshot through JsonRoom::apply (net requested bytes)");
        println!();
        println!("| N | retained per row | peak per row while applying | peak / retained |");
        println!("|---:|---:|---:|---:|");
        for &n in &[10_000usize, 100_000] {
            let rows = (USERS + n) as f64;
            let h = hello();
            let text = render_batch(&batch(&h, 0, snapshot(n, USERS)));
            let base = count_start();
            let mut room = JsonRoom::open(&hello_json(&h), 0.0).expect("open");
            let opened = count_read();
            PEAK.store(opened.live, Ordering::SeqCst);
            room.apply(&text).expect("snapshot");
            let peak = PEAK.load(Ordering::SeqCst) - opened.live;
            let (_, kept) = count_stop(base);
            let retained = kept - (opened.live - base.live);
            println!(
                "| {} | {:.0} | {:.0} | {:.2}× |",
                kilo(n),
                retained as f64 / rows,
                peak as f64 / rows,
                peak as f64 / retained as f64
            );
            black_box(&room);
        }
    }
    if selected("memory W3 views") {
        // What 1,000 standing W3 views keep (Q = 1000, N = 10k): subscriptions,
        // pipelines, held rows, footprints.
        let q = 1_000usize;
        let mut subject = Subject::load(false, w3_n, q);
        let asts: Vec<String> = (0..q).map(w3_ast).collect();
        let Face::Typed(room) = &mut subject.face else {
            unreachable!("a typed subject")
        };
        let queries: Vec<_> = asts
            .iter()
            .map(|a| room.parse_query(a).expect("query"))
            .collect();
        // One view first, so the shared ordering is not counted against the others.
        room.subscribe("w3-first", 1, &queries[0], 0)
            .expect("subscribe");
        let base = count_start();
        for (i, query) in queries.iter().enumerate().skip(1) {
            black_box(
                room.subscribe(&format!("w3-{i:04}"), 1, query, 0)
                    .expect("subscribe"),
            );
        }
        let (_, views) = count_stop(base);
        println!();
        println!(
            "Retained bytes per standing W3 view (Q=1000, N=10k): {:.0}",
            views as f64 / (q - 1) as f64
        );
        // Where they go: a view of a creator with no issues (the fixed cost of a
        // pipeline and its subscriber), and one more subscriber of an existing view.
        let empty: Vec<_> = (0..q)
            .map(|i| room.parse_query(&w3_ast(q + i)).expect("query"))
            .collect();
        let base = count_start();
        for (i, query) in empty.iter().enumerate() {
            black_box(
                room.subscribe(&format!("w3-empty-{i:04}"), 1, query, 0)
                    .expect("subscribe"),
            );
        }
        let (_, empty_views) = count_stop(base);
        let base = count_start();
        for i in 0..q {
            black_box(
                room.subscribe(&format!("w3-again-{i:04}"), 1, &queries[7], 0)
                    .expect("subscribe"),
            );
        }
        let (_, again) = count_stop(base);
        println!(
            "  of which: a view with no rows {:.0}, a further subscriber of one view {:.0}, \
             so per held row (10 each) {:.0}",
            empty_views as f64 / q as f64,
            again as f64 / q as f64,
            (views as f64 / (q - 1) as f64 - empty_views as f64 / q as f64) / 10.0
        );
        black_box(&subject);
    }
    if filter.is_some() {
        return;
    }
    println!();
    println!(
        "Rows: user [id, name], issue [id, title, open, created, creatorID, modified, \
         description]; size_of::<Value>() = {} bytes. Per base row = divided by N issues + {USERS} users.",
        core::mem::size_of::<Value>()
    );
}

/// Prints every target with its verdict. Ratios are taken per repetition (one
/// repetition = one machine state), then their median.
fn print_targets(configs: &[Config]) {
    let get = |label: &str| -> &Config {
        configs
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no configuration {label}"))
    };
    let ratio = |a: &str, b: &str| -> f64 {
        let (a, b) = (get(a), get(b));
        let r: Vec<f64> = a
            .samples
            .iter()
            .zip(&b.samples)
            .map(|(x, y)| x / y)
            .collect();
        median(&r)
    };
    println!();
    println!("## Targets");
    println!();
    println!("| target | measured | verdict |");
    println!("|---|---:|---|");
    let w1 = median(&get("W1 N=10k typed").samples);
    println!(
        "| W1 typed ≤ 2.5 µs per change (N=10k) | {:.2} µs | {} |",
        w1 / 1000.0,
        verdict(w1 <= 2500.0)
    );
    let w1_100k = median(&get("W1 N=100k typed").samples);
    println!(
        "| W1 typed N=100k ≤ 2.5 µs per change | {:.2} µs | {} |",
        w1_100k / 1000.0,
        verdict(w1_100k <= 2500.0)
    );
    let r = ratio("W1 N=100k typed", "W1 N=10k typed");
    println!(
        "| W1 typed N=100k / N=10k ≤ 1.3× | {r:.2}× | {} |",
        verdict(r <= 1.3)
    );
    for face in ["typed", "json"] {
        for kind in ["hit", "miss"] {
            let r = ratio(
                &format!("W3 Q=1000 {kind} {face}"),
                &format!("W3 Q=10 {kind} {face}"),
            );
            println!(
                "| W3 {kind} {face} Q=1000 / Q=10 ≤ 3× | {r:.2}× | {} |",
                verdict(r <= 3.0)
            );
        }
    }
    let mut json_pairs: Vec<(String, String)> = Vec::new();
    for n in ["10k", "100k"] {
        json_pairs.push((format!("W1 N={n} json"), format!("W1 N={n} typed")));
    }
    for q in ["10", "100", "1000", "10000"] {
        for kind in ["hit", "miss"] {
            json_pairs.push((
                format!("W3 Q={q} {kind} json"),
                format!("W3 Q={q} {kind} typed"),
            ));
        }
    }
    for (j, t) in &json_pairs {
        let r = ratio(j, t);
        println!("| {j} / typed ≤ 2.5× | {r:.2}× | {} |", verdict(r <= 2.5));
    }
}

/// Subscribes one subscriber per AST on a room with none, returns the elapsed ns of the
/// subscribes only, then detaches and sweeps every query (untimed).
fn hydrate(subject: &mut Subject, asts: &[String]) -> f64 {
    let subs: Vec<String> = (0..asts.len()).map(|i| format!("h{i:05}")).collect();
    let elapsed = match &mut subject.face {
        Face::Typed(r) => {
            let queries: Vec<_> = asts
                .iter()
                .map(|a| r.parse_query(a).expect("query"))
                .collect();
            let t = Instant::now();
            for (sub, q) in subs.iter().zip(&queries) {
                black_box(r.subscribe(sub, 1, q, 0).expect("subscribe"));
            }
            t.elapsed()
        }
        Face::Json(r) => {
            let t = Instant::now();
            for (sub, a) in subs.iter().zip(asts) {
                black_box(r.subscribe(sub, 1.0, a, 0.0).expect("subscribe"));
            }
            t.elapsed()
        }
    };
    let room: &Room = subject.room();
    assert_eq!(room.subscriber_count(), asts.len(), "every view subscribed");
    match &mut subject.face {
        Face::Typed(r) => {
            for sub in &subs {
                r.unsubscribe(sub, 0);
            }
            r.sweep(0);
            assert_eq!(r.materialization_count(), 0);
        }
        Face::Json(r) => {
            for sub in &subs {
                r.unsubscribe(sub, 0.0).expect("unsubscribe");
            }
            r.sweep(0.0).expect("sweep");
            assert_eq!(r.materialization_count(), 0);
        }
    }
    elapsed.as_nanos() as f64
}
