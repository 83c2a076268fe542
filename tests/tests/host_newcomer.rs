//! The room host without sockets: a writer the room has no journal entries for (its
//! doc moved here from another box, or the journal is gone) is served only after the
//! authority told its durable lmid — never from an empty ledger. Virtual clock,
//! scripted inputs (tests/src/pair.rs).

use rindle_room_tests::pair::*;
use serde_json::json;

fn with_authority() -> Options {
    Options {
        authority: true,
        ..Options::default()
    }
}

/// A writer `client` connected as `u1`: init, the lmid query, a lease subscribe.
fn connect_writer(p: &mut Pair, client: &str) -> u64 {
    let c = p.connect();
    p.send(c, &format!(r#"{{"t":"init","clientID":"{client}"}}"#));
    p.send(
        c,
        r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#,
    );
    let tok = p.token(NOTES, "u1", 600_000);
    p.send(c, &subscribe_frame(1, &tok));
    c
}

#[test]
fn a_writer_new_to_this_room_sees_the_lmid_the_authority_committed() {
    let mut p = Pair::live(&with_authority());
    p.authority.rows.insert(
        ("_rindle_client_mutations".into(), r#"["c9"]"#.into()),
        json!(["c9", 7]),
    );
    let c = connect_writer(&mut p, "c9");
    let frames = p.drain(c);
    let lmids: Vec<u64> = frames.iter().filter_map(lmid_of).map(|(_, l)| l).collect();
    assert_eq!(
        lmids,
        [7],
        "the snapshot carries the committed lmid: {frames:?}"
    );
    // Its next mid is no gap, and an old one is a dedup.
    p.send(c, &push("c9", 8, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.send(c, &push("c9", 3, "addNote", r#"{"id":11,"body":"x"}"#));
    p.advance(30);
    assert_eq!(p.host.counters().mutations_applied, 1);
    assert_eq!(p.host.counters().mutations_dedup, 1);
    // The flush edits the ledger row the authority holds (no conflict).
    assert_eq!(p.host.counters().flushes_ok, 1);
    assert_eq!(p.host.counters().flushes_conflict, 0);
    assert_eq!(
        p.authority.rows[&("_rindle_client_mutations".into(), r#"["c9"]"#.into())],
        json!(["c9", 8])
    );
}

#[test]
fn frames_wait_through_an_authority_outage_and_are_served_in_order() {
    let mut p = Pair::live(&with_authority());
    p.authority.down = true;
    let c = connect_writer(&mut p, "c1");
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(1_000);
    let early = p.drain(c);
    assert!(
        early.iter().all(|v| v["queryId"] != 0),
        "no lmid answer before the authority's: {early:?}"
    );
    assert_eq!(p.host.counters().mutations_applied, 0);
    p.authority.down = false;
    p.advance(2_100);
    assert_eq!(p.host.counters().mutations_applied, 1);
    let lmid_frames: Vec<_> = p
        .drain(c)
        .into_iter()
        .filter(|v| v["t"] == "nbatch" && v["queryId"] == 0)
        .collect();
    assert_eq!(lmid_frames.len(), 2, "the (empty) snapshot, then the ack");
    assert_eq!(lmid_of(&lmid_frames[1]).map(|(_, l)| l), Some(1));
}

#[test]
fn a_writer_flooding_a_pending_fetch_is_cut_at_the_limit() {
    let mut p = Pair::live(&with_authority());
    p.authority.down = true;
    let c = connect_writer(&mut p, "c1");
    let limit = rindle_room_core::host::MAX_FRAMES_AWAITING_LMID as u64;
    for mid in 1..=limit + 1 {
        p.send(c, &push("c1", mid, "addNote", r#"{"id":10,"body":"ten"}"#));
    }
    let closed = p.clients[&c].closed.clone().expect("cut");
    assert_eq!(closed.0, 1008);
    assert!(closed.1.contains("durable lmid"), "{closed:?}");
}

#[test]
fn without_an_authority_the_ledger_is_the_rooms_own() {
    let mut p = Pair::live(&Options::default());
    let c = connect_writer(&mut p, "c1");
    let snapshot = p
        .drain(c)
        .into_iter()
        .find(|v| v["t"] == "nbatch" && v["queryId"] == 0);
    assert!(
        snapshot.is_some(),
        "answered at once, with no authority call"
    );
}
