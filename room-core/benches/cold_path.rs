//! Cold-path benchmarks: what a room pays before it serves its first frame, and what a
//! burst of distinct relational queries costs. A box that boots rooms on demand pays the
//! load and the first query on every cold boot.
//!
//! - **load** — applying the seq-0 snapshot of 300 users, N issues and N comments
//!   (typed rows, so the JSON parse is not in it).
//! - **cold W1** — the first `issue where open = true order by created desc limit 50`
//!   (related `creator`) on a freshly loaded room; then a second one of the same shape.
//! - **W2 hydrate** — 300 distinct relational queries, each `user where id = u` with
//!   `related issues (creatorID = id, order by created desc, limit 10)` and under each
//!   issue `related comments (issueID = id, order by created, limit 10)`: joins on
//!   non-key columns of the child tables. Subscribed one after the other on one room
//!   (mean per query).
//!
//! Run: `cargo bench -p rindle-room-core --bench cold_path` (`COLD_PATH_REPS`, default
//! 5; `COLD_PATH_N`, a comma list, default `10000,100000`; `COLD_PATH_W2=0` leaves the
//! W2 row out, for profiling the first query alone; `COLD_PATH_CREATED=scattered` gives
//! issue `id` the creation time `id * 7919 % N`, so the rows no longer arrive in the
//! order W1 sorts by). Medians over the
//! repetitions, each on a fresh room. Nothing here asserts a timing.

use std::sync::Arc;
use std::time::Instant;

use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::value::COMPARATOR_VERSION;
use rindle_room_core::{Hello, NetOp, Room, Row, TableSchema, UpstreamBatch, Value};

const USERS: usize = 300;
const W2_QUERIES: usize = 300;

const W1_AST: &str = r#"{"table":"issue","where":{"type":"simple","op":"=","left":{"type":"column","name":"open"},"right":{"type":"literal","value":true}},"orderBy":[["created","desc"]],"limit":50,"related":[{"correlation":{"parentField":["creatorID"],"childField":["id"]},"subquery":{"table":"user","alias":"creator"}}]}"#;

fn w2_ast(user: usize) -> String {
    format!(
        r#"{{"table":"user","where":{{"type":"simple","op":"=","left":{{"type":"column","name":"id"}},"right":{{"type":"literal","value":{user}}}}},"related":[{{"correlation":{{"parentField":["id"],"childField":["creatorID"]}},"subquery":{{"table":"issue","alias":"issues","orderBy":[["created","desc"],["id","asc"]],"limit":10,"related":[{{"correlation":{{"parentField":["id"],"childField":["issueID"]}},"subquery":{{"table":"comment","alias":"comments","orderBy":[["created","asc"],["id","asc"]],"limit":10}}}}]}}}}]}}"#
    )
}

fn tables() -> Vec<TableSchema> {
    vec![
        TableSchema::new("comment", &["id", "issueID", "created", "body"], &[0]),
        TableSchema::new(
            "issue",
            &["id", "title", "open", "created", "creatorID", "description"],
            &[0],
        ),
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

fn num(n: usize) -> Value {
    Value::num(n as f64)
}

/// 300 users, `n` issues (creator `id % 300`), `n` comments (issue `id * 7 % n`).
/// Issue `id` was created at `id`, or at `id * 7919 % n` when `scattered` (7919 is a
/// prime that divides neither 10k nor 100k, so that is a permutation).
fn snapshot(h: &Hello, n: usize, scattered: bool) -> UpstreamBatch {
    let (user, issue, comment): (Arc<str>, Arc<str>, Arc<str>) =
        (Arc::from("user"), Arc::from("issue"), Arc::from("comment"));
    let mut ops = Vec::with_capacity(USERS + 2 * n);
    for id in 0..USERS {
        ops.push(NetOp::Add {
            table: user.clone(),
            row: Row::from(vec![num(id), Value::string(format!("user {id}"))]),
        });
    }
    for id in 0..n {
        ops.push(NetOp::Add {
            table: issue.clone(),
            row: Row::from(vec![
                num(id),
                Value::string(format!("Issue {id}")),
                Value::Bool(!id.is_multiple_of(3)),
                num(if scattered { id * 7919 % n } else { id }),
                num(id % USERS),
                Value::string(format!("Description of issue {id}.")),
            ]),
        });
    }
    for id in 0..n {
        ops.push(NetOp::Add {
            table: comment.clone(),
            row: Row::from(vec![
                num(id),
                num(id * 7 % n),
                num(id),
                Value::string(format!("Comment {id}")),
            ]),
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Subscribes `ast` as `sub`; the milliseconds the subscribe took.
fn subscribe(room: &mut Room, sub: &str, ast: &str) -> f64 {
    let q = room.parse_query(ast).expect("query");
    let t = Instant::now();
    let snapshot = room.subscribe(sub, 1, &q, 0).expect("subscribe");
    let took = ms(t.elapsed());
    std::hint::black_box(snapshot);
    took
}

fn main() {
    let reps = std::env::var("COLD_PATH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5usize)
        .max(1);
    let sizes: Vec<usize> = std::env::var("COLD_PATH_N")
        .unwrap_or_else(|_| String::from("10000,100000"))
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let with_w2 = std::env::var("COLD_PATH_W2").map_or(true, |v| v != "0");
    let scattered = std::env::var("COLD_PATH_CREATED").is_ok_and(|v| v == "scattered");
    println!(
        "# cold_path: {reps} repetitions, each on a fresh room{}",
        if scattered {
            "; creation times scattered"
        } else {
            ""
        }
    );
    println!();
    println!("| N | load, ms | cold W1, ms | second W1, ms | W2 hydrate, ms per query |");
    println!("|---:|---:|---:|---:|---:|");
    let h = hello();
    for &n in &sizes {
        let snap = snapshot(&h, n, scattered);
        let (mut load, mut cold, mut warm, mut w2) = (vec![], vec![], vec![], vec![]);
        for _ in 0..reps {
            let mut room = Room::open(h.clone(), 0).expect("open");
            let t = Instant::now();
            room.apply(&snap).expect("snapshot");
            load.push(ms(t.elapsed()));
            cold.push(subscribe(&mut room, "w1a", W1_AST));
            warm.push(subscribe(&mut room, "w1b", &W1_AST.replace("50", "49")));
            if !with_w2 {
                continue;
            }
            let asts: Vec<String> = (0..W2_QUERIES).map(w2_ast).collect();
            let mut total = 0.0;
            for (i, a) in asts.iter().enumerate() {
                total += subscribe(&mut room, &format!("w2-{i}"), a);
            }
            w2.push(total / W2_QUERIES as f64);
            assert_eq!(room.subscriber_count(), 2 + W2_QUERIES);
        }
        println!(
            "| {n} | {:.1} | {:.3} | {:.3} | {:.3} |",
            median(load),
            median(cold),
            median(warm),
            if with_w2 { median(w2) } else { f64::NAN }
        );
    }
}
