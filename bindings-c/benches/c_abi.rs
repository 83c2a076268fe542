//! What the C boundary costs: workload W1 (docs/BENCHMARKS.md) driven through the
//! exported `extern "C"` functions, against the same workload through
//! [`JsonRoom`] directly. Same data, same batch texts, one process.
//!
//! - **W1**: 100 users and N issues (default 10,000); one subscriber to `issue where open
//!   = true order by created desc limit 50` with a `related` `creator`; a 4-step cycle of
//!   one-op live batches (add a newest open issue, edit its title, edit a deep row's
//!   title, remove the added issue), each followed by the drain.
//! - **JSON**: `JsonRoom::apply(text)` + `JsonRoom::commit_all()`, results dropped.
//! - **C ABI**: `rindle_room_apply` + `rindle_room_commit_all`, each result freed with
//!   `rindle_room_buf_free`, as a C host does.
//!
//! The batch texts are rendered before the timed loop (both faces parse them). Each
//! repetition times both faces back to back, in alternating order, so noise hits them
//! alike; the ratio is computed per repetition and the median is reported.
//!
//! ```text
//! cargo bench -p rindle-room-c --bench c_abi
//! C_ABI_REPS=21 C_ABI_UNITS=40000 C_ABI_N=100000 cargo bench -p rindle-room-c --bench c_abi
//! ```
//!
//! For instruction counts, run one face under callgrind and collect its step function
//! only: `C_ABI_FILTER=c C_ABI_REPS=1 valgrind --tool=callgrind
//! --toggle-collect='*step_c*' <bench binary>` (`step_json` for the other face).

use core::ffi::c_char;
use core::hint::black_box;
use core::ptr;
use std::sync::Arc;
use std::time::Instant;

use ::rindle_room::{
    rindle_room, rindle_room_apply, rindle_room_buf, rindle_room_buf_free, rindle_room_commit_all,
    rindle_room_free, rindle_room_open, rindle_room_result, rindle_room_subscribe,
};
use rindle_room_core::contract::{write_ops, JsonRoom};
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::{NetOp, Row, TableSchema, Value};

const USERS: usize = 100;
const W1_AST: &str = r#"{"table":"issue","where":{"type":"simple","op":"=","left":{"type":"column","name":"open"},"right":{"type":"literal","value":true}},"orderBy":[["created","desc"]],"limit":50,"related":[{"correlation":{"parentField":["creatorID"],"childField":["id"]},"subquery":{"table":"user","alias":"creator"}}]}"#;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------
// W1's data, as JSON texts.
// ---------------------------------------------------------------------------------------

struct Data {
    hello: String,
    fp: String,
    snapshot: String,
    added: Row,
    edited: Row,
    deep: [Row; 2],
}

fn num(n: usize) -> Value {
    Value::num(n as f64)
}

fn issue(id: usize, title: &str, open: bool, created: usize, creator: usize) -> Row {
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

fn base_issue(id: usize) -> Row {
    issue(
        id,
        &format!("Issue {id}"),
        !id.is_multiple_of(3),
        id,
        id % USERS,
    )
}

impl Data {
    fn new(n: usize) -> Data {
        // A hello lists its tables by name (byte order).
        let tables = [
            TableSchema::new(
                "issue",
                &[
                    "id",
                    "title",
                    "open",
                    "created",
                    "creatorID",
                    "modified",
                    "description",
                ],
                &[0],
            ),
            TableSchema::new("user", &["id", "name"], &[0]),
        ];
        let fp = normalized_fp(tables.iter());
        let mut hello = String::from(r#"{"epoch":1,"comparatorVersion":2,"tables":["#);
        for (i, t) in tables.iter().enumerate() {
            if i > 0 {
                hello.push(',');
            }
            t.write_json(&mut hello);
        }
        hello.push_str(&format!(r#"],"normalizedFp":"{fp}"}}"#));

        let (user, issue_t): (Arc<str>, Arc<str>) = (Arc::from("user"), Arc::from("issue"));
        let mut ops = Vec::with_capacity(USERS + n);
        for id in 0..USERS {
            let row: Row = Row::from(vec![num(id), Value::string(format!("user {id}"))]);
            ops.push(NetOp::Add {
                table: user.clone(),
                row,
            });
        }
        for id in 0..n {
            ops.push(NetOp::Add {
                table: issue_t.clone(),
                row: base_issue(id),
            });
        }
        let snapshot = batch_text(&fp, 0, &ops);

        let id = n + 1;
        let mut deep_id = n / 2;
        while deep_id.is_multiple_of(3) {
            deep_id += 1;
        }
        Data {
            hello,
            snapshot,
            added: issue(id, &format!("Issue {id}"), true, id, id % USERS),
            edited: issue(id, &format!("Issue {id} (edited)"), true, id, id % USERS),
            deep: [
                base_issue(deep_id),
                issue(
                    deep_id,
                    &format!("Issue {deep_id} (edited)"),
                    true,
                    deep_id,
                    deep_id % USERS,
                ),
            ],
            fp,
        }
    }

    /// The op of W1 unit `u`.
    fn op(&self, u: u64) -> NetOp {
        let table: Arc<str> = Arc::from("issue");
        let cycle = (u / 4) as usize;
        match u % 4 {
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
        }
    }
}

fn batch_text(fp: &str, seq: u64, ops: &[NetOp]) -> String {
    let mut s = format!(r#"{{"epoch":1,"seq":{seq},"normalizedFp":"{fp}","ops":"#);
    write_ops(&mut s, ops);
    // Every batch carries its commit version: one per batch here.
    s.push_str(&format!(r#","cv":{seq}}}"#));
    s
}

// ---------------------------------------------------------------------------------------
// The two faces.
// ---------------------------------------------------------------------------------------

fn ok(rc: rindle_room_result) {
    assert_eq!(rc, rindle_room_result::Ok, "a C ABI call failed");
}

struct CRoom(*mut rindle_room);

impl CRoom {
    fn load(d: &Data) -> CRoom {
        let mut room = ptr::null_mut();
        let mut out = rindle_room_buf::ABSENT;
        // SAFETY: valid texts and out-parameters; the room is used by this thread only.
        unsafe {
            ok(rindle_room_open(
                d.hello.as_ptr().cast(),
                d.hello.len(),
                0.0,
                &mut room,
            ));
            ok(rindle_room_apply(
                room,
                d.snapshot.as_ptr().cast(),
                d.snapshot.len(),
                &mut out,
            ));
            rindle_room_buf_free(&mut out);
            let sub = "c1";
            ok(rindle_room_subscribe(
                room,
                sub.as_ptr().cast::<c_char>(),
                sub.len(),
                1.0,
                W1_AST.as_ptr().cast(),
                W1_AST.len(),
                0.0,
                &mut out,
            ));
            rindle_room_buf_free(&mut out);
        }
        CRoom(room)
    }
}

impl Drop for CRoom {
    fn drop(&mut self) {
        // SAFETY: the room from `load`, freed once.
        unsafe { rindle_room_free(self.0) };
    }
}

fn load_json(d: &Data) -> JsonRoom {
    let mut room = JsonRoom::open(&d.hello, 0.0).expect("open");
    room.apply(&d.snapshot).expect("snapshot");
    room.subscribe("c1", 1.0, W1_AST, 0.0).expect("subscribe");
    room
}

/// One change through the contract: apply + drain. Returns whether a frame was emitted.
#[inline(never)]
fn step_json(room: &mut JsonRoom, batch: &str) -> bool {
    black_box(room.apply(batch).expect("apply"));
    let out = room.commit_all();
    let emitted = out.len() > 2;
    black_box(out);
    emitted
}

/// One change through the C ABI, as a C host makes it.
#[inline(never)]
fn step_c(room: &CRoom, batch: &str) -> bool {
    let mut out = rindle_room_buf::ABSENT;
    // SAFETY: a live room, a valid text and out-parameter; each buf freed once.
    unsafe {
        ok(rindle_room_apply(
            room.0,
            batch.as_ptr().cast(),
            batch.len(),
            &mut out,
        ));
        black_box(out.data);
        rindle_room_buf_free(&mut out);
        ok(rindle_room_commit_all(room.0, &mut out));
        let emitted = out.len > 2;
        black_box(out.data);
        rindle_room_buf_free(&mut out);
        emitted
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n = env("C_ABI_N", 10_000);
    let reps = env("C_ABI_REPS", 15).max(1);
    let units = (env("C_ABI_UNITS", 20_000) as u64 / 4).max(1) * 4;
    let filter = std::env::var("C_ABI_FILTER").unwrap_or_default();
    let (run_json, run_c) = (filter != "c", filter != "json");

    let data = Data::new(n);
    let mut json = load_json(&data);
    let c = CRoom::load(&data);

    // Both faces see the same texts: they start at seq 1 and advance in lockstep.
    let mut next_seq = 1u64;
    let mut next_unit = 0u64;
    let (mut json_ns, mut c_ns, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let batches: Vec<String> = (0..units)
            .map(|i| batch_text(&data.fp, next_seq + i, &[data.op(next_unit + i)]))
            .collect();
        // The shape check: steps 0, 1 and 3 of the cycle emit a frame, step 2 does not.
        let shape = |i: usize, emitted: bool| {
            assert_eq!(
                emitted,
                (next_unit + i as u64) % 4 != 2,
                "W1 shape, unit {i}"
            );
        };
        let mut time_json = || {
            let start = Instant::now();
            for (i, b) in batches.iter().enumerate() {
                let emitted = step_json(&mut json, b);
                if rep == 0 {
                    shape(i, emitted);
                }
            }
            start.elapsed().as_nanos() as f64 / units as f64
        };
        let time_c = || {
            let start = Instant::now();
            for (i, b) in batches.iter().enumerate() {
                let emitted = step_c(&c, b);
                if rep == 0 {
                    shape(i, emitted);
                }
            }
            start.elapsed().as_nanos() as f64 / units as f64
        };
        let (j, k) = match (run_json, run_c) {
            (true, true) if rep % 2 == 0 => {
                let j = time_json();
                (j, time_c())
            }
            (true, true) => {
                let k = time_c();
                (time_json(), k)
            }
            (true, false) => (time_json(), f64::NAN),
            (false, _) => (f64::NAN, time_c()),
        };
        json_ns.push(j);
        c_ns.push(k);
        ratios.push(k / j);
        next_seq += units;
        next_unit += units;
    }

    println!("W1, N = {n}: {reps} repetitions of {units} changes per face");
    println!(
        "units applied in this run: {} per face",
        reps as u64 * units
    );
    let (jm, cm) = (median(&mut json_ns.clone()), median(&mut c_ns.clone()));
    let jmin = json_ns.iter().copied().fold(f64::INFINITY, f64::min);
    let cmin = c_ns.iter().copied().fold(f64::INFINITY, f64::min);
    println!("| face | median ns/change | min ns/change |");
    println!("|---|---:|---:|");
    println!("| JsonRoom (Rust) | {jm:.0} | {jmin:.0} |");
    println!("| C ABI | {cm:.0} | {cmin:.0} |");
    if run_json && run_c {
        let r = median(&mut ratios);
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
        println!(
            "C ABI / JsonRoom: median {r:.3} (range {lo:.3}–{hi:.3}); the boundary adds {:+.1}%",
            (r - 1.0) * 100.0
        );
    }
}
