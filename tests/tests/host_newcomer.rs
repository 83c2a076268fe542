//! The room host without sockets: a writer the room has no journal entries for (its
//! doc moved here from another box, or the journal is gone) is served only after the
//! authority told its durable lmid — never from an empty ledger. Virtual clock,
//! scripted inputs (tests/src/pair/).

use rindle_room_tests::pair::*;
use serde_json::json;

fn with_authority() -> Options {
    Options {
        authority: true,
        ..Options::default()
    }
}

/// With an authority and `ack = "flushed"`.
fn flushed() -> Options {
    Options {
        ack_after_flush: true,
        ..with_authority()
    }
}

fn lmids(frames: &[serde_json::Value]) -> Vec<u64> {
    frames.iter().filter_map(lmid_of).map(|(_, l)| l).collect()
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

/// A connection that inited `c1` and subscribed its lmid query, with no lease.
fn anonymous_lmid_subscriber(p: &mut Pair) -> u64 {
    let c = p.connect();
    p.send(c, r#"{"t":"init","clientID":"c1"}"#);
    p.send(
        c,
        r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#,
    );
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

/// A writer that moved here with mids 1–4 committed pushes mid 5 while the authority is
/// unreachable: its frames wait the whole newcomer wait, no longer.
fn moved_writer_waits_out_an_outage(o: &Options) -> (Pair, u64) {
    let mut p = Pair::live(o);
    p.authority.rows.insert(
        ("_rindle_client_mutations".into(), r#"["c1"]"#.into()),
        json!(["c1", 4]),
    );
    p.authority.down = true;
    let c = connect_writer(&mut p, "c1");
    p.send(c, &push("c1", 5, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(rindle_room_core::host::NEWCOMER_WAIT_MS - 1);
    assert!(
        p.drain(c).iter().all(|v| v["t"] != "error"),
        "still waiting"
    );
    p.advance(1);
    (p, c)
}

/// The error a refused mutation of an unconfirmed writer carries, and its close code.
fn refused_unconfirmed(p: &mut Pair, c: u64) -> bool {
    let frames = p.drain(c);
    let told = frames.iter().any(|v| {
        v["t"] == "error"
            && v["message"]
                .as_str()
                .unwrap()
                .contains("cannot run clientID `c1`'s mutations yet")
    });
    told && p.clients[&c].closed.as_ref().map(|(code, _)| *code) == Some(1013)
}

#[test]
fn an_unreachable_authority_holds_a_newcomer_two_seconds_then_its_ledger_answers() {
    let (mut p, c) = moved_writer_waits_out_an_outage(&with_authority());
    // Served from the room's empty ledger: a gap it is told about, nothing applied.
    let frames = p.drain(c);
    assert!(
        frames
            .iter()
            .any(|v| v["t"] == "error" && v["message"].as_str().unwrap().contains("gap")),
        "{frames:?}"
    );
    assert_eq!(p.host.counters().mutations_applied, 0);
    assert_eq!(p.log_count("has not told clientID c1's durable lmid"), 1);
    // The fetch goes on; its answer seeds the ledger once the authority is back, and the
    // re-sent mid applies.
    p.authority.down = false;
    p.advance(3_000);
    assert_eq!(p.host.room().unwrap().durable_lmid("c1"), 4);
    p.send(c, &push("c1", 5, "addNote", r#"{"id":10,"body":"ten"}"#));
    assert_eq!(p.host.counters().mutations_applied, 1);
}

#[test]
fn with_ack_flushed_an_unreachable_authority_holds_a_newcomer_two_seconds_then_refuses_its_mutations(
) {
    let (mut p, c) = moved_writer_waits_out_an_outage(&flushed());
    // Not run against the room's empty ledger (it could be a mid the authority already
    // committed): refused, and the socket closed with 1013 (try again later).
    assert!(refused_unconfirmed(&mut p, c));
    assert_eq!(p.host.counters().mutations_applied, 0);
    assert_eq!(p.log_count("has not told clientID c1's durable lmid"), 1);
    // While the authority stays away a reconnect is answered at once: its lmid from the
    // ledger, its mutations refused the same way.
    let again = connect_writer(&mut p, "c1");
    assert!(p
        .drain(again)
        .iter()
        .any(|v| v["t"] == "nbatch" && v["queryId"] == 0));
    p.send(
        again,
        &push("c1", 5, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    assert!(refused_unconfirmed(&mut p, again));
    // The fetch goes on; its answer seeds the ledger once the authority is back, and the
    // writer's re-sent mid applies after its reconnect.
    p.authority.down = false;
    p.advance(3_000);
    assert_eq!(p.host.room().unwrap().durable_lmid("c1"), 4);
    let back = connect_writer(&mut p, "c1");
    p.send(back, &push("c1", 5, "addNote", r#"{"id":10,"body":"ten"}"#));
    assert_eq!(p.host.counters().mutations_applied, 1);
    assert_eq!(p.clients[&back].closed, None);
}

/// With `ack = "flushed"`, a writer re-sends mids whose ack it never saw (the room died
/// between the commit and the ack) after the room rebooted with a compacted journal (so
/// it does not know the writer) while the authority is unreachable: those mids were
/// committed, so they must not run again — not at the room's head, not at the
/// authority — however long the outage lasts. (Before, the room served the writer from
/// its own ledger after the newcomer wait and ran them again; the flush CAS-conflicted
/// on the ledger row only, and the rest of it — a second run of a non-idempotent edit —
/// committed.)
#[test]
fn with_ack_flushed_a_committed_mid_resent_during_an_outage_to_a_room_that_forgot_its_writer_runs_once(
) {
    let o = flushed();
    let mut p = Pair::live(&o);
    let author = p.subscriber("c1", "u1", true);
    p.send(author, &push("c1", 1, "addNote", r#"{"id":50,"body":"x"}"#));
    p.send(author, &push("c1", 2, "bump", r#"{"id":50}"#));
    p.advance(2_000);
    let body = |p: &Pair| p.authority.rows[&("note".to_string(), "[50]".to_string())][1].clone();
    assert_eq!(body(&p), json!("x+"));
    assert!(matches!(
        p.control(rindle_room_core::host::ControlRequest::Drain),
        Some(rindle_room_core::host::ControlReply::Drained(Ok(_)))
    ));
    assert!(
        p.journal.entries.is_empty(),
        "the drain compacted the journal"
    );
    let mut p = p.reboot(&o);
    p.start();
    p.authority.down = true;
    let runs = p.mutators.runs.len();
    // The writer saw no ack for mids 1 and 2: it re-sends both, on every reconnect.
    for _ in 0..3 {
        let c = connect_writer(&mut p, "c1");
        p.send(c, &push("c1", 1, "addNote", r#"{"id":50,"body":"x"}"#));
        p.send(c, &push("c1", 2, "bump", r#"{"id":50}"#));
        p.advance(5_000);
        assert!(refused_unconfirmed(&mut p, c));
    }
    assert_eq!(p.mutators.runs.len(), runs, "nothing ran during the outage");
    p.authority.down = false;
    p.advance(5_000);
    let c = connect_writer(&mut p, "c1");
    p.send(c, &push("c1", 1, "addNote", r#"{"id":50,"body":"x"}"#));
    p.send(c, &push("c1", 2, "bump", r#"{"id":50}"#));
    p.advance(5_000);
    assert_eq!(p.mutators.runs.len(), runs, "both are duplicates now");
    assert_eq!(body(&p), json!("x+"), "the authority applied mid 2 once");
    assert!(p
        .drain(c)
        .iter()
        .filter_map(lmid_of)
        .any(|(_, lmid)| lmid == 2));
}

#[test]
fn past_the_fetch_limit_newcomers_are_served_from_the_ledger_at_once() {
    let mut p = Pair::live(&with_authority());
    p.authority.down = true;
    let limit = rindle_room_core::host::MAX_NEWCOMER_FETCHES;
    for i in 0..limit {
        connect_writer(&mut p, &format!("w{i}"));
    }
    let late = connect_writer(&mut p, "late");
    let answered = p
        .drain(late)
        .into_iter()
        .any(|v| v["t"] == "nbatch" && v["queryId"] == 0);
    assert!(answered, "no fetch, no wait");
    assert_eq!(p.log_count("lmid fetches already under way"), 1);
    // With `ack = "journaled"` its mutations run unconfirmed too (one warning, once).
    p.send(
        late,
        &push("late", 1, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    assert_eq!(p.host.counters().mutations_applied, 1);
    assert_eq!(p.log_count("lmid fetches already under way"), 1);
}

#[test]
fn with_ack_flushed_past_the_fetch_limit_a_newcomers_mutations_are_refused() {
    let mut p = Pair::live(&flushed());
    p.authority.down = true;
    for i in 0..rindle_room_core::host::MAX_NEWCOMER_FETCHES {
        connect_writer(&mut p, &format!("w{i}"));
    }
    let late = connect_writer(&mut p, "late");
    assert!(p
        .drain(late)
        .iter()
        .any(|v| v["t"] == "nbatch" && v["queryId"] == 0));
    p.send(
        late,
        &push("late", 1, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    assert_eq!(p.host.counters().mutations_applied, 0);
    assert_eq!(
        p.clients[&late].closed.as_ref().map(|(code, _)| *code),
        Some(1013)
    );
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

#[test]
fn an_anonymous_lmid_subscribe_calls_the_authority_only_once_the_connection_has_a_lease() {
    let mut p = Pair::live(&with_authority());
    p.authority.down = true;
    let c = anonymous_lmid_subscriber(&mut p);
    p.advance(1_000);
    assert!(
        p.drain(c).is_empty(),
        "parked until a lease authenticates it"
    );
    assert_eq!(
        p.host.counters().authority_retries,
        0,
        "no authority call yet"
    );
    let tok = p.token(NOTES, "u1", 600_000);
    p.send(c, &subscribe_frame(1, &tok));
    p.advance(100);
    assert!(p.host.counters().authority_retries > 0, "now fetched");
    p.advance(rindle_room_core::host::NEWCOMER_WAIT_MS);
    let answered = p
        .drain(c)
        .into_iter()
        .any(|v| v["t"] == "nbatch" && v["queryId"] == 0);
    assert!(answered);
}

#[test]
fn a_connection_that_never_presents_a_lease_gets_the_ledgers_lmid_without_an_authority_call() {
    let mut p = Pair::live(&with_authority());
    p.authority.down = true;
    let c = anonymous_lmid_subscriber(&mut p);
    p.advance(rindle_room_core::host::NEWCOMER_WAIT_MS);
    let answered = p
        .drain(c)
        .into_iter()
        .any(|v| v["t"] == "nbatch" && v["queryId"] == 0);
    assert!(answered, "answered from the room's ledger after the wait");
    assert_eq!(p.host.counters().authority_retries, 0, "never called");
}

/// `c1`'s mid 1 (`bump` of note 60) committed at the authority and the journal compacted
/// by a drain; then a reboot, with the authority down. Returns the note's authority key.
fn bumped_then_rebooted_into_an_outage() -> (Pair, (String, String)) {
    let o = with_authority();
    let mut p = Pair::new(&o, Default::default(), Default::default());
    let key = ("note".to_string(), "[60]".to_string());
    p.seed_row("note", json!([60, "", "u"]));
    p.start();
    let author = p.subscriber("c1", "u1", true);
    p.send(author, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.advance(2_000);
    assert_eq!(p.authority.rows[&key][1], json!("+"));
    assert!(matches!(
        p.control(rindle_room_core::host::ControlRequest::Drain),
        Some(rindle_room_core::host::ControlReply::Drained(Ok(_)))
    ));
    let mut p = p.reboot(&o);
    p.start();
    p.authority.down = true;
    (p, key)
}

/// With `ack = "journaled"` acks must not wait for the authority, so a writer the room
/// does not know is served from its own ledger after the newcomer wait, mutations
/// included — and a mid it re-sends because it never saw the ack of a committed one
/// runs again. The room cannot tell it from a new writer's first mid, so no flush goes
/// out while such a writer is unconfirmed; when the authority's answer shows the
/// overlap, the room rebuilds its head from the journal with that lmid seeded, and the
/// mid applies once — at the head and at the authority.
#[test]
fn with_ack_journaled_a_committed_mid_run_again_during_an_outage_applies_once() {
    let (mut p, key) = bumped_then_rebooted_into_an_outage();
    // The writer never saw its ack: it re-sends mid 1, and writes mid 2.
    let c = connect_writer(&mut p, "c1");
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    p.advance(rindle_room_core::host::NEWCOMER_WAIT_MS + 100);
    assert_eq!(
        p.mutators.runs.len(),
        2,
        "both run from the room's own ledger"
    );
    assert!(lmids(&p.drain(c)).contains(&2), "and are acknowledged");
    p.authority.down = false;
    p.advance(5_000);
    assert_eq!(
        p.authority.rows[&key][1],
        json!("++"),
        "mid 1 once, mid 2 once"
    );
    assert_eq!(
        p.log_count("incarnation dead: clientID c1: the authority holds its mids up to 1"),
        1,
        "{:#?}",
        p.logs
    );
    let room = p.host.room().expect("the rebuilt incarnation is live");
    assert_eq!((room.dirty_len(), room.pending_len()), (0, 0));
    assert_eq!(room.durable_lmid("c1"), 2);
}

/// The same past the fetch limit: a writer the room cannot even start a fetch for is
/// served at once (`ack = "journaled"`), its fetch starts when a slot frees, and flushes
/// wait for it as for one gone overdue — so a committed mid it re-sent applies once.
#[test]
fn with_ack_journaled_past_the_fetch_limit_a_committed_mid_run_again_applies_once() {
    let (mut p, key) = bumped_then_rebooted_into_an_outage();
    for i in 0..rindle_room_core::host::MAX_NEWCOMER_FETCHES {
        connect_writer(&mut p, &format!("w{i}"));
    }
    let c = connect_writer(&mut p, "c1");
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    assert_eq!(p.mutators.runs.len(), 2, "served at once");
    p.advance(rindle_room_core::host::NEWCOMER_WAIT_MS + 100);
    assert!(lmids(&p.drain(c)).contains(&2), "and acknowledged");
    p.authority.down = false;
    p.advance(10_000);
    assert_eq!(
        p.authority.rows[&key][1],
        json!("++"),
        "mid 1 once, mid 2 once"
    );
    let room = p.host.room().expect("the rebuilt incarnation is live");
    assert_eq!((room.dirty_len(), room.pending_len()), (0, 0));
    assert_eq!(room.durable_lmid("c1"), 2);
}

/// With `ack = "journaled"` the queue of fetches waiting for a slot is bounded too: past
/// it a newcomer's mutations are refused with `1013` (its lmid is still answered from the
/// ledger), and once the authority is back every queued fetch runs and the writer that
/// was refused is served normally when it comes back.
#[test]
fn with_ack_journaled_past_the_fetch_queue_a_newcomers_mutations_are_refused() {
    let mut p = Pair::live(&Options {
        newcomer_fetch_limits: (2, 2),
        ..with_authority()
    });
    p.authority.down = true;
    let mut writers = Vec::new();
    for (i, name) in ["w0", "w1", "w2", "w3", "c1"].iter().enumerate() {
        let c = connect_writer(&mut p, name);
        p.send(
            c,
            &push(
                name,
                1,
                "addNote",
                &format!(r#"{{"id":{},"body":"x"}}"#, 20 + i),
            ),
        );
        writers.push(c);
    }
    // w0 and w1 wait on their fetches; w2 and w3 are served at once with their fetches
    // queued; c1 finds the queue full.
    assert_eq!(p.host.counters().mutations_applied, 2, "w2 and w3 ran");
    assert!(refused_unconfirmed(&mut p, writers[4]));
    // One warning each for w2 and w3; c1, never queued, warns at each of its frames.
    assert_eq!(p.log_count("lmid fetches already under way"), 4);
    p.authority.down = false;
    p.advance(10_000);
    assert_eq!(p.host.counters().mutations_applied, 4, "w0 and w1 ran too");
    for id in 20..24 {
        assert!(
            p.authority
                .rows
                .contains_key(&("note".to_string(), format!("[{id}]"))),
            "note {id} flushed once every queued fetch answered"
        );
    }
    let again = connect_writer(&mut p, "c1");
    p.send(again, &push("c1", 1, "addNote", r#"{"id":24,"body":"x"}"#));
    p.advance(2_000);
    assert_eq!(p.host.counters().mutations_applied, 5);
    assert!(lmids(&p.drain(again)).contains(&1));
}
