//! Unit tests of taking a committed flush in ([`Room::adopt_committed`]).

use alloc::string::ToString;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::tests::room;
use crate::room::{Room, UpstreamBatch};
use crate::schema::TableSchema;
use crate::serve::NetOp;
use crate::value::Value;
use crate::write::{committed_changes, CommittedChange, FlushChange};
use crate::Row;

fn slide(id: &str, pos: f64) -> Row {
    Row::from(&[Value::str(id), Value::str("d1"), Value::num(pos)][..])
}

fn pos(r: &Room, id: &str) -> Option<f64> {
    r.rows("slide")
        .iter()
        .find_map(|row| match (row.get(0), row.get(2)) {
            (crate::value::CellRef::Str(x), crate::value::CellRef::Num(p)) if x == id => Some(p),
            _ => None,
        })
}

fn edit(id: &str, from: f64, to: f64) -> CommittedChange {
    CommittedChange {
        table: "slide".to_string(),
        old: Some(slide(id, from)),
        new: Some(slide(id, to)),
    }
}

fn upstream_edit(r: &mut Room, seq: u64, id: &str, from: f64, to: f64) {
    let tables: Vec<TableSchema> = r.tables().take(3).cloned().collect();
    let fp = crate::fingerprint::normalized_fp(tables.iter());
    r.apply(&UpstreamBatch {
        epoch: 1,
        seq,
        normalized_fp: fp,
        cv: Some(1.0 + seq as f64),
        ops: vec![NetOp::Edit {
            table: Arc::from("slide"),
            old: slide(id, from),
            new: slide(id, to),
        }],
    })
    .unwrap();
}

#[test]
fn a_key_still_at_the_old_image_takes_the_new_one() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    let changes = vec![
        edit("s1", 1.0, 5.0),
        // Already there (the snapshot saw the commit): left as it is.
        edit("s2", 7.0, 2.0),
        CommittedChange {
            table: "slide".to_string(),
            old: None,
            new: Some(slide("s3", 3.0)),
        },
    ];
    let cv = r.head_cv();
    assert_eq!(r.adopt_committed(&changes).unwrap(), 2);
    assert_eq!(r.head_cv(), cv + 1, "one local commit");
    assert_eq!(
        (pos(&r, "s1"), pos(&r, "s2"), pos(&r, "s3")),
        (Some(5.0), Some(2.0), Some(3.0))
    );
    // Nothing dirty: the authority holds these images.
    assert_eq!(r.dirty_len(), 0);
    assert!(r.begin_flush().unwrap().is_none());
}

#[test]
fn a_key_someone_wrote_since_is_left_to_the_feed() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    // The snapshot shows pos 9: neither the batch's old image (1) nor its new one (5).
    upstream_edit(&mut r, 1, "s1", 1.0, 9.0);
    assert_eq!(r.adopt_committed(&[edit("s1", 1.0, 5.0)]).unwrap(), 0);
    assert_eq!(pos(&r, "s1"), Some(9.0));
    // A read-only table is never written.
    let member = CommittedChange {
        table: "member".to_string(),
        old: None,
        new: Some(Row::from(&[Value::str("m2"), Value::str("bo")][..])),
    };
    assert_eq!(r.adopt_committed(&[member]).unwrap(), 0);
}

#[test]
fn a_write_made_on_a_taken_image_flushes_against_it_and_survives_its_echo() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    assert_eq!(r.adopt_committed(&[edit("s1", 1.0, 5.0)]).unwrap(), 1);
    r.begin_mutation("c", 1, None, None).unwrap();
    r.tx_edit("slide", slide("s1", 6.0)).unwrap();
    r.commit_mutation().unwrap();
    // The daemon's feed catches up with the committed batch: the room's own echo, not
    // someone else's write — the newer local write stays.
    upstream_edit(&mut r, 1, "s1", 1.0, 5.0);
    assert_eq!(pos(&r, "s1"), Some(6.0));
    let b = r.begin_flush().unwrap().unwrap();
    assert_eq!(
        b.changes[0],
        FlushChange::Edit {
            table: Arc::from("slide"),
            old: slide("s1", 5.0),
            row: slide("s1", 6.0),
        },
        "the CAS base is the committed image"
    );
}

#[test]
fn flush_bodies_parse_into_changes_and_malformed_ones_say_why() {
    let body = r#"{"source":"room:d:1","offset":"1","changes":[
        {"table":"slide","op":"edit","old":["s1","d1",1],"row":["s1","d1",5]},
        {"table":"slide","op":"add","row":["s3","d1",3]},
        {"table":"slide","op":"remove","old":["s2","d1",2]}]}"#;
    let changes = committed_changes(body).unwrap();
    assert_eq!(changes.len(), 3);
    assert_eq!(changes[0], edit("s1", 1.0, 5.0));
    assert_eq!(
        (changes[1].old.is_none(), changes[2].new.is_none()),
        (true, true)
    );
    let bad = r#"{"changes":[{"table":"slide","op":"edit","row":["s1","d1",5]}]}"#;
    let e = committed_changes(bad).unwrap_err();
    assert!(e.message().contains("change 0"), "{}", e.message());
    assert!(committed_changes("{").is_err());
}
