//! The room host without sockets, acknowledgement modes (docs/fleet.md,
//! "Acknowledgement modes"): with
//! `ack = "flushed"` an author's lmid is released only once the flush carrying its
//! mutation commits; with the default `ack = "journaled"` a fenced room reports the
//! acknowledged mutations the authority never confirmed as stranded. Virtual clock,
//! scripted inputs (tests/src/pair/).

use rindle_room_core::fleet::StrandedMutation;
use rindle_room_tests::pair::*;
use serde_json::Value;

fn options(ack_after_flush: bool) -> Options {
    Options {
        authority: true,
        ack_after_flush,
        ..Options::default()
    }
}

/// The highest release point among `frames`' progress frames.
fn released(frames: &[Value]) -> Option<i64> {
    frames
        .iter()
        .filter(|v| v["t"] == "progress")
        .filter_map(|v| v["frame"]["cvMin"].as_i64())
        .max()
}

/// The cv of the lmid frame raising the ledger to `mid`.
fn lmid_cv(frames: &[Value], mid: u64) -> Option<i64> {
    frames
        .iter()
        .find(|v| lmid_of(v).is_some_and(|(_, l)| l >= mid))
        .and_then(|v| v["batch"]["cv"].as_i64())
}

fn stranded(p: &Pair) -> Vec<(String, u64, String)> {
    p.stranded
        .iter()
        .map(
            |StrandedMutation {
                 client_id,
                 mid,
                 name,
                 doc,
             }| {
                assert_eq!(doc, DOC);
                (client_id.clone(), *mid, name.clone())
            },
        )
        .collect()
}

#[test]
fn with_ack_flushed_the_lmid_is_released_only_when_the_flush_commits() {
    let mut p = Pair::live(&options(true));
    let author = p.subscriber("c1", "u1", true);
    let other = p.subscriber("c2", "u2", false);
    p.authority.down = true;
    p.send(
        author,
        &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    p.advance(10); // journaled (group commit 5 ms), the flush not committed
    assert_eq!(p.durable, [("c1".to_string(), 1)]);
    let frames = p.drain(author);
    let data_cv = frames
        .iter()
        .find(|v| v["t"] == "nbatch" && v["queryId"] == 1)
        .and_then(|v| v["batch"]["cv"].as_i64())
        .expect("fan-out is not gated on durability");
    let ledger_cv = lmid_cv(&frames, 1).expect("the ledger row rides the next flush");
    assert!(
        released(&frames).unwrap() < data_cv,
        "the author's release point stays below its mutation: {frames:?}"
    );
    // Other subscribers are not held back.
    assert!(released(&p.drain(other)).unwrap() >= data_cv);
    // An outage holds the ack as long as it lasts.
    p.advance(5_000);
    assert!(released(&p.drain(author)).is_none_or(|r| r < data_cv));
    p.authority.down = false;
    p.advance(2_100);
    assert!(p
        .authority
        .rows
        .contains_key(&("note".into(), "[10]".into())));
    assert!(p
        .authority
        .rows
        .contains_key(&("_rindle_client_mutations".into(), r#"["c1"]"#.into())));
    let after = p.drain(author);
    assert!(
        released(&after).unwrap() >= ledger_cv,
        "the commit is the ack: {after:?}"
    );
}

/// The append of a mutation can be made after the flush that carried it (its data and
/// its ledger row) committed: a group-commit window longer than the flush debounce, or a
/// flush fired at once by many dirty keys and answered before the append's fsync. With
/// `ack = "flushed"` the ack is the later of the two, so it comes with the append then —
/// before, the commit found nothing journaled to release and the append found the flush
/// already gone, and the author waited for the next write.
#[test]
fn with_ack_flushed_an_append_made_after_its_flush_committed_is_the_ack() {
    let mut p = Pair::live(&Options {
        group_commit_ms: 200,
        ..options(true)
    });
    let author = p.subscriber("c1", "u1", true);
    p.send(
        author,
        &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    p.advance(100); // the flush (debounce 20 ms) committed; no append made yet
    let ledger = (
        "_rindle_client_mutations".to_string(),
        r#"["c1"]"#.to_string(),
    );
    assert!(p
        .authority
        .rows
        .contains_key(&("note".into(), "[10]".into())));
    assert!(p.authority.rows.contains_key(&ledger));
    assert!(p.durable.is_empty());
    let frames = p.drain(author);
    assert!(
        lmid_cv(&frames, 1).is_none(),
        "no ack before the append: {frames:?}"
    );
    p.advance(1_000); // the append at 200 ms
    assert_eq!(p.durable, [("c1".to_string(), 1)]);
    let frames = p.drain(author);
    let ledger_cv = lmid_cv(&frames, 1).expect("the lmid frame follows the append");
    assert!(
        released(&frames).is_some_and(|r| r >= ledger_cv),
        "the append, after the commit, is the ack: {frames:?}"
    );
}

#[test]
fn with_ack_flushed_a_rejected_mutation_is_acked_by_the_flush_too() {
    let mut p = Pair::live(&options(true));
    let author = p.subscriber("c1", "u1", true);
    p.authority.down = true;
    p.send(author, &push("c1", 1, "noSuchMutator", "{}"));
    p.advance(10);
    let frames = p.drain(author);
    assert!(frames.iter().any(|v| v["t"] == "mutationOutcome"));
    let ledger_cv = lmid_cv(&frames, 1).expect("the mid is consumed");
    assert!(released(&frames).is_none_or(|r| r < ledger_cv));
    p.authority.down = false;
    p.advance(2_100);
    assert!(released(&p.drain(author)).unwrap() >= ledger_cv);
}

#[test]
fn with_ack_journaled_the_lmid_is_released_after_the_fsync() {
    let mut p = Pair::live(&options(false));
    let author = p.subscriber("c1", "u1", true);
    p.authority.down = true;
    p.send(
        author,
        &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    p.advance(10);
    let frames = p.drain(author);
    let ledger_cv = lmid_cv(&frames, 1).unwrap();
    assert!(released(&frames).unwrap() >= ledger_cv, "{frames:?}");
}

#[test]
fn a_fenced_room_reports_what_it_acknowledged_and_never_flushed_as_stranded() {
    let mut p = Pair::live(&options(false));
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(30); // acked and flushed
    assert_eq!(p.host.counters().flushes_ok, 1);
    p.authority.down = true;
    p.send(c, &push("c1", 2, "addNote", r#"{"id":11,"body":"b"}"#));
    p.send(c, &push("c1", 3, "noSuchMutator", "{}"));
    p.advance(30); // acked, the flush not through
    p.authority.down = false;
    p.authority.epoch += 1; // another placement claimed the doc
    p.advance(300);
    assert_eq!(p.stopped, Some(true), "fenced");
    assert_eq!(
        stranded(&p),
        [
            ("c1".to_string(), 2, "addNote".to_string()),
            ("c1".to_string(), 3, "noSuchMutator".to_string())
        ],
        "the flushed mid 1 is not stranded"
    );
    assert_eq!(p.log_count("stranded mutation: doc"), 2);
}

#[test]
fn with_ack_flushed_a_fenced_room_owes_its_authors_nothing() {
    let mut p = Pair::live(&options(true));
    let c = p.subscriber("c1", "u1", true);
    p.authority.down = true;
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(30);
    p.authority.down = false;
    p.authority.epoch += 1;
    p.advance(300);
    assert_eq!(p.stopped, Some(true));
    assert!(p.stranded.is_empty());
    assert_eq!(p.log_count("were never acknowledged (ack = flushed)"), 1);
}

#[test]
fn with_ack_flushed_replayed_mutations_stay_held_until_their_flush() {
    let mut p = Pair::live(&options(true));
    let c = p.subscriber("c1", "u1", true);
    p.authority.down = true;
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(10);
    assert_eq!(p.durable.len(), 1, "journaled, never flushed");
    // The process dies; it boots again with the authority up, which then fails.
    let mut p = p.reboot(&options(true));
    p.authority.down = false;
    p.start();
    assert!(p.host.is_live());
    assert_eq!(p.log_count("journal replay: 1 mutation(s)"), 1);
    p.authority.down = true;
    let c = p.connect();
    p.send(c, r#"{"t":"init","clientID":"c1"}"#);
    p.send(
        c,
        r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#,
    );
    let frames = p.drain(c);
    let snapshot = frames
        .iter()
        .find(|v| v["t"] == "nbatch")
        .expect("the lmid snapshot");
    assert_eq!(snapshot["batch"]["ops"][0]["row"][1], 1, "replayed");
    let snapshot_cv = snapshot["batch"]["cv"].as_i64().unwrap();
    assert!(
        released(&frames).unwrap() < snapshot_cv,
        "held below the replayed mutation: {frames:?}"
    );
    p.authority.down = false;
    p.advance(2_500);
    assert!(p
        .authority
        .rows
        .contains_key(&("note".into(), "[10]".into())));
    assert!(released(&p.drain(c)).unwrap() >= snapshot_cv);
}

#[test]
fn the_stranded_output_renders_for_json_drivers() {
    let o = rindle_room_core::host::Output::Stranded {
        mutations: vec![StrandedMutation {
            doc: "d\"1".into(),
            client_id: "c1".into(),
            mid: 7,
            name: "addNote".into(),
        }],
    };
    let text = rindle_room_core::host::json::output_json(o);
    let v: Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["mutations"][0]["doc"], "d\"1");
    assert_eq!(v["mutations"][0]["clientID"], "c1");
    assert_eq!(v["mutations"][0]["mid"], 7);
    assert_eq!(v["mutations"][0]["name"], "addNote");
}

/// A drain whose flush is fenced is answered, and so is one asked of the room after it
/// stopped: not as drained — the room moved with an acknowledged mutation it will never
/// flush (reported stranded, kept by the journal) — and without starting a journal
/// compaction it would never hear back from. Before, the first waited for that
/// compaction forever and the second got no answer at all.
#[test]
fn a_drain_of_a_fenced_room_is_answered_and_says_what_it_kept() {
    use rindle_room_core::host::{ControlReply, ControlRequest, DrainError};
    let mut p = Pair::live(&options(false));
    let c = p.subscriber("c1", "u1", true);
    p.authority.epoch += 1; // another placement claimed the doc
    p.send(c, &push("c1", 1, "tally", r#"{"id":1,"mid":1}"#));
    p.advance(5); // journaled and acknowledged
    let stopped = |r: &Option<ControlReply>| {
        matches!(
            r,
            Some(ControlReply::Drained(Err(DrainError::Stopped {
                moved: true,
                pending: 1,
                ..
            })))
        )
    };
    let first = p.control(ControlRequest::Drain);
    assert!(p.host.is_moved() && p.host.is_stopped());
    assert!(stopped(&first), "{first:?}");
    let again = p.control(ControlRequest::Drain);
    assert!(stopped(&again), "{again:?}");
    assert_eq!(stranded(&p), [("c1".to_string(), 1, "tally".to_string())]);
    assert_eq!(
        p.journal.entries.len(),
        1,
        "the journal keeps what it stranded"
    );
    assert_eq!(
        p.control(ControlRequest::Health),
        Some(ControlReply::Health(false))
    );
}

/// A drain waiting on a flush that is still in flight when its incarnation dies, whose
/// room is then fenced at the next boot's settlement, is answered — with what the room
/// left to the journal — though the dead incarnation's flight never settles. Before,
/// the drain waited on that flight forever, and the acknowledged mutation it carried
/// was not reported stranded (the dead incarnation's list was cleared before the next
/// boot could list it again).
#[test]
fn a_drain_is_answered_when_the_room_is_fenced_between_incarnations() {
    use rindle_room_core::host::{ControlReply, ControlRequest, DrainError};
    let mut p = Pair::live(&options(false));
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "tally", r#"{"id":1,"mid":1}"#));
    p.authority.down = true;
    p.advance(700); // acknowledged; its flush retries
    assert_eq!(
        p.control(ControlRequest::Drain),
        None,
        "waits for the flush"
    );
    p.authority.epoch += 1; // another placement claimed the doc
    p.drop_upstream();
    p.authority.down = false;
    p.advance(10_000);
    assert!(p.host.is_moved());
    let replies: Vec<_> = p.replies.values().cloned().collect();
    assert!(
        matches!(
            replies.as_slice(),
            [ControlReply::Drained(Err(DrainError::Stopped {
                moved: true,
                pending: 1,
                ..
            }))]
        ),
        "{replies:?}"
    );
    assert_eq!(stranded(&p), [("c1".to_string(), 1, "tally".to_string())]);
}
