//! Streamed seq-0 snapshots: the same room as the batch path, and nothing left behind
//! when the stream gives up.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::contract::JsonRoom;

const HELLO: &str = r#"{"epoch":1,"comparatorVersion":2,"tables":[
    {"name":"k","columns":["x","y","z"],"primaryKey":[2,0]},
        {"name":"t","columns":["id","a","b","c"],"primaryKey":[0]}],"normalizedFp":"ade493d332983993"}"#;
const FP: &str = "ade493d332983993";

fn adds(n: usize) -> String {
    let ops: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"table":"t","op":"add","row":[{i},"a{i}",{},null]}}"#,
                i % 3 == 0
            )
        })
        .collect();
    ops.join(",")
}

/// The header first: the text is streamed.
fn streamed(ops: &str) -> String {
    format!(r#"{{"epoch":1,"seq":0,"normalizedFp":"{FP}","ops":[{ops}],"cv":5}}"#)
}

/// The ops first: the text is applied the batch way.
fn batched(ops: &str) -> String {
    format!(r#"{{"ops":[{ops}],"epoch":1,"seq":0,"normalizedFp":"{FP}","cv":5}}"#)
}

fn room() -> JsonRoom {
    JsonRoom::open(HELLO, 0.0).unwrap()
}

fn everything(room: &mut JsonRoom) -> String {
    room.subscribe("all", 1.0, r#"{"table":"t"}"#, 0.0).unwrap()
}

#[test]
fn a_streamed_snapshot_builds_the_room_the_batch_path_builds() {
    let ops = adds(40);
    let (mut a, mut b) = (room(), room());
    let sa = a.apply(&streamed(&ops)).unwrap();
    let sb = b.apply(&batched(&ops)).unwrap();
    assert_eq!(sa, r#"{"applied":"snapshot","rows":40}"#);
    assert_eq!(sa, sb);
    assert_eq!(everything(&mut a), everything(&mut b));
    assert_eq!(a.room().cv(), Some(5.0));
    // Which texts stream: the header before the ops only.
    let (mut c, mut d) = (room(), room());
    assert!(super::stream_snapshot(&streamed(&ops), c.room_mut()).is_some());
    assert!(super::stream_snapshot(&batched(&ops), d.room_mut()).is_none());
    assert!(!d.is_live());
    // A live batch never streams.
    let live = streamed("").replace(r#""seq":0"#, r#""seq":1"#);
    assert!(super::stream_snapshot(&live, c.room_mut()).is_none());
    // An empty snapshot streams too.
    let mut c = room();
    assert_eq!(
        c.apply(&streamed("")).unwrap(),
        r#"{"applied":"snapshot","rows":0}"#
    );
    assert!(c.is_live());
}

#[test]
fn a_duplicate_key_poisons_with_the_batch_paths_message() {
    let ops = format!("{},{}", adds(5), adds(1));
    let (mut a, mut b) = (room(), room());
    let ea = a.apply(&streamed(&ops)).unwrap_err();
    let eb = b.apply(&batched(&ops)).unwrap_err();
    assert_eq!((ea.code(), ea.message()), (eb.code(), eb.message()));
    assert!(a.is_poisoned() && b.is_poisoned());
}

#[test]
fn a_snapshot_that_fails_midway_leaves_nothing_behind() {
    let mut a = room();
    // Cut off after a few ops: a syntax error once rows were applied.
    let text = streamed(&adds(10));
    let cut = &text[..text.len() - 40];
    let e = a.apply(cut).unwrap_err();
    assert!(!a.is_live() && !a.is_poisoned(), "{}", e.message());
    // Trailing text after a whole (even empty) snapshot: refused, still not live.
    let trailing = format!("{} trailing", streamed(""));
    assert!(a.apply(&trailing).is_err());
    assert!(!a.is_live());
    // The room takes a good snapshot afterwards and holds exactly its rows.
    let ops = adds(4);
    a.apply(&streamed(&ops)).unwrap();
    let mut b = room();
    b.apply(&batched(&ops)).unwrap();
    assert_eq!(everything(&mut a), everything(&mut b));
    // A remove in a snapshot poisons the room, and it keeps nothing of the snapshot.
    let mut c = room();
    let bad = streamed(&format!(
        r#"{},{{"table":"t","op":"remove","row":[1,"a1",false,null]}}"#,
        adds(3)
    ));
    let e = c.apply(&bad).unwrap_err();
    assert!(e.message().contains("is not an add"), "{}", e.message());
    assert!(!c.is_live() && c.is_poisoned());
}
