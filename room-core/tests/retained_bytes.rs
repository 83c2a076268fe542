//! `Room::retained_bytes` against a counting global allocator (docs/fleet.md, "Memory
//! budgets": within 10 % of the bytes the allocator attributes to the room), through the
//! JSON contract a host drives: a snapshot, hundreds of subscriptions, live batches,
//! writes, unsubscribes.

#[path = "../benches/support/counting_alloc.rs"]
#[allow(dead_code)]
mod counting_alloc;

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use counting_alloc::{Counting, COUNTING, LIVE};
use rindle_room_core::contract::JsonRoom;
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::TableSchema;

#[global_allocator]
static ALLOC: Counting = Counting;

fn hello() -> (String, String) {
    let tables = [
        TableSchema::new(
            "issue",
            &["id", "title", "open", "created", "creatorID", "description"],
            &[0],
        ),
        TableSchema::new("user", &["id", "name"], &[0]),
    ];
    let fp = normalized_fp(tables.iter());
    let mut s = String::from("{\"epoch\":1,\"comparatorVersion\":2,\"tables\":[");
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        t.write_json(&mut s);
    }
    let _ = write!(s, "],\"normalizedFp\":\"{fp}\"}}");
    (s, fp)
}

fn issue(id: usize, title: &str, description: &str) -> String {
    format!(
        "[{id},\"{title}\",{},{id},{},\"{description}\"]",
        !id.is_multiple_of(3),
        id % 100
    )
}

const LONG: &str = "The description of an issue, long enough to leave the cell.";

fn snapshot(fp: &str, n: usize) -> String {
    let mut s = format!("{{\"epoch\":1,\"seq\":0,\"normalizedFp\":\"{fp}\",\"ops\":[");
    for id in 0..100 {
        let _ = write!(
            s,
            "{{\"table\":\"user\",\"op\":\"add\",\"row\":[{id},\"user {id}\"]}},"
        );
    }
    for id in 0..n {
        if id > 0 {
            s.push(',');
        }
        let row = issue(id, &format!("Issue {id}"), LONG);
        let _ = write!(s, "{{\"table\":\"issue\",\"op\":\"add\",\"row\":{row}}}");
    }
    s.push_str("],\"cv\":1}");
    s
}

/// 50 edits of distinct issues (the ones `seq` picks), each to a new title and a short
/// description.
fn live_batch(fp: &str, seq: u64, n: usize) -> String {
    let mut s = format!("{{\"epoch\":1,\"seq\":{seq},\"normalizedFp\":\"{fp}\",\"ops\":[");
    for k in 0..50 {
        let id = (seq as usize * 1_000 + k) % n;
        if k > 0 {
            s.push(',');
        }
        let old = issue(id, &format!("Issue {id}"), LONG);
        let new = issue(id, &format!("Edited {id}"), "x");
        let _ = write!(
            s,
            "{{\"table\":\"issue\",\"op\":\"edit\",\"old\":{old},\"new\":{new}}}"
        );
    }
    let _ = write!(s, "],\"cv\":{}}}", seq + 1);
    s
}

fn w3(creator: usize) -> String {
    format!(
        r#"{{"table":"issue","where":{{"type":"simple","op":"=","left":{{"type":"column","name":"creatorID"}},"right":{{"type":"literal","value":{creator}}}}},"orderBy":[["created","desc"]],"limit":20}}"#
    )
}

const W1: &str = r#"{"table":"issue","where":{"type":"simple","op":"=","left":{"type":"column","name":"open"},"right":{"type":"literal","value":true}},"orderBy":[["created","desc"]],"limit":50,"related":[{"correlation":{"parentField":["creatorID"],"childField":["id"]},"subquery":{"table":"user","alias":"creator"}}]}"#;

/// Asserts the room's own count is within 10 % of what the allocator holds for it.
fn check(what: &str, room: &JsonRoom, base: isize) {
    let held = (LIVE.load(Ordering::SeqCst) - base) as f64;
    let counted = room.room().retained_bytes() as f64;
    let ratio = counted / held;
    println!("{what}: allocator {held:.0} B, retained_bytes {counted:.0} B ({ratio:.3})");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: retained_bytes says {counted:.0} B, the allocator holds {held:.0} B"
    );
}

#[test]
fn retained_bytes_tracks_the_allocator_through_a_rooms_life() {
    let n = 20_000;
    let (hello, fp) = hello();
    let snap = snapshot(&fp, n);
    let w3s: Vec<String> = (0..100).map(w3).collect();
    let batches: Vec<String> = (1..=20).map(|seq| live_batch(&fp, seq, n)).collect();
    let subs: Vec<String> = (0..300).map(|i| format!("s{i}")).collect();
    let rows: Vec<String> = (1..=50)
        .map(|m| {
            let id = 100_000 + m;
            issue(id, &format!("new {id}"), "written by c1")
        })
        .collect();

    COUNTING.store(true, Ordering::SeqCst);
    let base = LIVE.load(Ordering::SeqCst);
    let mut room = JsonRoom::open(&hello, 30_000.0).expect("open");
    room.apply(&snap).expect("snapshot");
    check("snapshot of 20,100 rows", &room, base);

    for (i, sub) in subs.iter().enumerate() {
        let ast = if i % 3 == 0 { W1 } else { &w3s[i % 100] };
        drop(room.subscribe(sub, 1.0, ast, 0.0).expect("subscribe"));
    }
    drop(room.commit_all());
    check("+ 300 subscribers on 101 queries", &room, base);

    for b in &batches {
        drop(room.apply(b).expect("live batch"));
        drop(room.commit_all());
    }
    check("+ 20 live batches of 50 edits", &room, base);

    room.enable_writes(r#"["issue"]"#).expect("writes");
    for (mid, row) in rows.iter().enumerate() {
        drop(
            room.begin_mutation("c1", (mid + 1) as f64, Some("add"), None)
                .expect("begin"),
        );
        room.tx_add("issue", row).expect("add");
        drop(room.commit_mutation().expect("commit"));
        drop(room.commit_all());
    }
    check("+ the write plane and 50 mutations", &room, base);

    for sub in &subs[..150] {
        room.unsubscribe(sub, 0.0).expect("unsubscribe");
    }
    drop(room.sweep(1_000_000.0));
    drop(room.commit_all());
    check("- 150 subscribers, idle queries swept", &room, base);
    COUNTING.store(false, Ordering::SeqCst);
    drop(room);
}
