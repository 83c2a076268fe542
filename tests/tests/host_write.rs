//! The room host without sockets, write path: mutations, group commit, acks only after
//! a durable append, outcomes, replay after a reboot, the write-behind flush against an
//! authority (outage, fencing, drain, boot settlement), shutdown, and the clientID
//! binding. Virtual clock, scripted inputs (tests/src/pair/).

use rindle_room_core::host::{ControlReply, ControlRequest, Placement};
use rindle_room_tests::pair::*;
use serde_json::{json, Value};

fn with_authority() -> Options {
    Options {
        authority: true,
        ..Options::default()
    }
}

fn lmids(frames: &[Value]) -> Vec<u64> {
    frames.iter().filter_map(lmid_of).map(|(_, l)| l).collect()
}

fn note_ids(p: &mut Pair) -> Vec<u64> {
    let c = p.subscriber("reader", "r", false);
    let tok = p.token(NOTES, "r", 60_000);
    p.send(c, &subscribe_frame(9, &tok));
    let snap = p.subscribed(c);
    p.disconnect(c);
    snap["batch"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["row"][0].as_u64().unwrap())
        .collect()
}

#[test]
fn a_mutation_fans_out_at_once_and_is_acked_only_after_the_append_is_durable() {
    let mut p = Pair::live(&Options::default());
    let author = p.subscriber("c1", "u1", true);
    let other = p.subscriber("c2", "u2", false);
    p.journal.hold = true;
    p.send(
        author,
        &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#),
    );
    // Fan-out is not gated on durability.
    let data = p.expect_t(author, "nbatch");
    let cv = data["batch"]["cv"].as_i64().unwrap();
    // The author's release point holds below its un-acked mutation; others release.
    assert_eq!(p.expect_t(author, "progress")["frame"]["cvMin"], cv - 1);
    p.expect_t(other, "nbatch");
    assert_eq!(p.expect_t(other, "progress")["frame"]["cvMin"], cv);
    p.advance(100);
    assert!(
        lmids(&p.drain(author)).is_empty(),
        "no ack before the append"
    );
    assert!(p.durable.is_empty());
    p.release_journal();
    assert_eq!(p.durable, [("c1".to_string(), 1)]);
    let frames = p.drain(author);
    assert_eq!(lmids(&frames), [1]);
    let last = frames.iter().rev().find(|v| v["t"] == "progress").unwrap();
    assert!(
        last["frame"]["cvMin"].as_i64().unwrap() > cv,
        "released: {last}"
    );
}

#[test]
fn mutations_in_one_window_share_one_append() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", true);
    for mid in 1..=5 {
        p.send(
            c,
            &push(
                "c1",
                mid,
                "addNote",
                &format!(r#"{{"id":{},"body":"b"}}"#, 10 + mid),
            ),
        );
    }
    assert!(p.durable.is_empty(), "the group-commit window is open");
    p.advance(5);
    assert_eq!(p.durable.len(), 5);
    assert_eq!(p.journal.entries.len(), 5);
    assert_eq!(lmids(&p.drain(c)).last(), Some(&5));
}

#[test]
fn a_failed_append_kills_the_incarnation_and_acks_nothing() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", true);
    p.journal.failing = true;
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(5);
    assert!(lmids(&p.drain(c)).is_empty());
    assert_eq!(p.clients[&c].closed.as_ref().map(|c| c.0), Some(1012));
    assert_eq!(
        p.log_count("journal append failed: No space left on device"),
        2
    );
    // The next incarnation never saw the mutation: it was not journaled.
    p.journal.failing = false;
    p.advance(250);
    assert!(p.host.is_live());
    assert_eq!(note_ids(&mut p), [1, 2, 3]);
}

#[test]
fn non_applied_outcomes_come_before_the_ack_and_a_resent_mid_gets_its_outcome() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "nope", "{}"));
    p.send(c, &push("c1", 2, "refuse", "{}"));
    p.send(c, &push("c1", 3, "needsQuery", r#"{"b":1.5,"a":[1,2]}"#));
    p.advance(5);
    let frames = p.drain(c);
    let outcomes: Vec<&Value> = frames
        .iter()
        .filter(|v| v["t"] == "mutationOutcome")
        .collect();
    assert_eq!(
        outcomes,
        [
            &json!({"t":"mutationOutcome","mid":1,"kind":"rejected","reason":"unknown mutator `nope`"}),
            &json!({"t":"mutationOutcome","mid":2,"kind":"rejected","reason":"not allowed"}),
            &json!({"t":"mutationOutcome","mid":3,"kind":"deopt","reason":"environment",
                    "name":"needsQuery","args":{"b":1.5,"a":[1,2]}}),
        ]
    );
    let first_ack = frames.iter().position(|v| lmid_of(v).is_some()).unwrap();
    let last_outcome = frames
        .iter()
        .rposition(|v| v["t"] == "mutationOutcome")
        .unwrap();
    assert!(
        last_outcome < first_ack,
        "outcomes precede the lmid that covers them"
    );
    p.send(c, &push("c1", 2, "refuse", "{}"));
    assert_eq!(
        p.expect_t(c, "mutationOutcome"),
        json!({"t":"mutationOutcome","mid":2,"kind":"rejected","reason":"not allowed"})
    );
    assert_eq!(p.host.counters().mutations_dedup, 1);
}

#[test]
fn a_reboot_replays_every_acked_mutation_exactly_once() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", true);
    for mid in 1..=20 {
        let args = format!(r#"{{"id":{mid},"mid":{mid}}}"#);
        p.send(c, &push("c1", mid, "tally", &args));
        if mid % 7 == 0 {
            p.advance(5);
        }
    }
    p.advance(5);
    assert_eq!(lmids(&p.drain(c)).last(), Some(&20));
    // The process dies; the journal survives.
    let mut p = p.reboot(&Options::default());
    p.start();
    assert!(p.host.is_live());
    assert_eq!(
        p.log_count("journal replay: 20 mutation(s) re-invoked and acked"),
        1
    );
    let c = p.subscriber("c1", "u1", true);
    let tok = p.token(r#"{"table":"tally"}"#, "u1", 60_000);
    p.send(c, &subscribe_frame(5, &tok));
    let snap = p.subscribed(c);
    assert_eq!(
        snap["batch"]["ops"].as_array().unwrap().len(),
        20,
        "each exactly once"
    );
    // A re-sent mid is a dedup, not a second application.
    p.send(c, &push("c1", 20, "tally", r#"{"id":99,"mid":20}"#));
    assert_eq!(p.host.counters().mutations_dedup, 1);
}

#[test]
fn the_write_behind_flush_reaches_the_authority_after_the_debounce() {
    let mut p = Pair::live(&with_authority());
    assert_eq!(p.host.placement_epoch(), 1);
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(5);
    assert!(p.authority.bodies.is_empty(), "debounced");
    p.advance(20);
    assert_eq!(p.authority.bodies.len(), 1);
    let body: Value = serde_json::from_str(&p.authority.bodies[0]).unwrap();
    assert_eq!(body["source"], "room:doc/1:1");
    assert_eq!(body["offset"], "00000000000000000001");
    assert!(p
        .authority
        .rows
        .contains_key(&("note".into(), "[10]".into())));
    assert!(p.journal.flushes.is_empty(), "confirmed");
    assert_eq!(p.host.counters().flushes_ok, 1);
}

#[test]
fn an_authority_outage_retries_the_same_body_with_backoff_and_loses_nothing() {
    let mut p = Pair::live(&with_authority());
    let c = p.subscriber("c1", "u1", true);
    p.authority.down = true;
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(25);
    assert_eq!(p.authority.bodies.len(), 1);
    let mut gaps = Vec::new();
    let mut last = p.now;
    while p.authority.bodies.len() < 7 {
        let n = p.authority.bodies.len();
        p.advance(1);
        if p.authority.bodies.len() > n {
            gaps.push(p.now - last);
            last = p.now;
        }
    }
    // 100, 200, 400, 800, 1600, then the 2 s cap (the first gap counts from t + 25,
    // 5 ms after the first send).
    assert_eq!(gaps, [95, 200, 400, 800, 1600, 2000]);
    assert!(
        p.authority.bodies.windows(2).all(|w| w[0] == w[1]),
        "the same bytes"
    );
    assert_eq!(
        p.journal.flushes.len(),
        1,
        "journaled before the first send"
    );
    p.authority.down = false;
    p.advance(2_000);
    assert!(p.journal.flushes.is_empty());
    assert!(p
        .authority
        .rows
        .contains_key(&("note".into(), "[10]".into())));
    // Seven failures, each retried; the eighth send settled.
    assert_eq!(p.host.counters().authority_retries, 7);
    assert_eq!(p.authority.bodies.len(), 8);
}

#[test]
fn a_fence_under_our_epoch_closes_every_socket_with_4009_and_stops() {
    let mut p = Pair::live(&with_authority());
    let c = p.subscriber("c1", "u1", true);
    let idle = p.connect();
    p.authority.epoch += 1; // another placement claimed the doc
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(30);
    assert_eq!(p.stopped, Some(true));
    assert!(p.host.is_moved());
    for conn in [c, idle] {
        assert_eq!(p.clients[&conn].closed, Some((4009, "room_moved".into())));
    }
    assert_eq!(p.host.next_deadline(), None, "inert");
}

#[test]
fn drain_answers_once_nothing_is_dirty() {
    let mut p = Pair::live(&with_authority());
    let c = p.subscriber("c1", "u1", true);
    for mid in 1..=3 {
        p.send(
            c,
            &push(
                "c1",
                mid,
                "addNote",
                &format!(r#"{{"id":{},"body":"b"}}"#, 10 + mid),
            ),
        );
    }
    p.authority.down = true;
    assert_eq!(p.control(ControlRequest::Drain), None, "not quiescent yet");
    p.authority.down = false;
    p.advance(3_000);
    let drained = p.replies.values().find_map(|r| match r {
        ControlReply::Drained(d) => Some(d.clone()),
        _ => None,
    });
    assert_eq!(drained, Some(Ok(1)));
    assert_eq!(p.authority.rows.len(), 4, "three notes and the ledger row");
}

#[test]
fn shutdown_journals_the_group_commit_drains_and_closes_with_1001() {
    let mut p = Pair::live(&with_authority());
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    assert!(p.durable.is_empty());
    let reply = p.control(ControlRequest::Shutdown);
    assert_eq!(reply, Some(ControlReply::Stopped));
    assert_eq!(
        p.durable,
        [("c1".to_string(), 1)],
        "the group commit was journaled"
    );
    assert!(
        p.authority
            .rows
            .contains_key(&("note".into(), "[10]".into())),
        "drained"
    );
    assert_eq!(
        p.clients[&c].closed,
        Some((1001, "room shutting down".into()))
    );
    assert_eq!(p.stopped, Some(false));
}

#[test]
fn shutdown_gives_up_on_a_dead_authority_after_ten_seconds() {
    let mut p = Pair::live(&with_authority());
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.authority.down = true;
    assert_eq!(p.control(ControlRequest::Shutdown), None);
    p.advance(9_999);
    assert_eq!(p.stopped, None);
    p.advance(1);
    assert_eq!(p.stopped, Some(false));
    assert_eq!(p.journal.flushes.len(), 1, "the next boot settles it");
}

#[test]
fn boot_settles_unconfirmed_flushes_before_replay() {
    let mut p = Pair::live(&with_authority());
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.authority.down = true;
    p.advance(25);
    assert_eq!(p.journal.flushes.len(), 1);
    // Crash with the flush unconfirmed; the authority comes back.
    let mut p = p.reboot(&with_authority());
    p.authority.down = false;
    p.start();
    assert!(p.host.is_live());
    assert_eq!(
        p.log_count("flush 1 (old epoch 1) fenced: dropped"),
        1,
        "the probe shows its ledger advance missing"
    );
    assert!(p.journal.flushes.is_empty());
    // The replay re-derives the effects under the new epoch.
    p.advance(30);
    assert!(p
        .authority
        .rows
        .contains_key(&("note".into(), "[10]".into())));
    assert_eq!(note_ids(&mut p), [1, 2, 3, 10]);
}

#[test]
fn another_subject_cannot_push_under_a_bound_client_id() {
    let mut p = Pair::live(&Options::default());
    let alice = p.subscriber("A", "alice", true);
    p.send(alice, &push("A", 1, "addNote", r#"{"id":10,"body":"a"}"#));
    p.advance(5);
    let bob = p.subscriber("A", "bob", false);
    p.send(bob, &push("A", 2, "addNote", r#"{"id":66,"body":"b"}"#));
    let err = p.expect_t(bob, "error");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("clientID `A` is bound to another subject"),
        "{err}"
    );
    p.send(alice, &push("A", 2, "addNote", r#"{"id":20,"body":"a2"}"#));
    p.advance(5);
    assert_eq!(lmids(&p.drain(alice)).last(), Some(&2));
    assert_eq!(note_ids(&mut p), [1, 2, 3, 10, 20]);
    // The binding survives a reboot through the journal.
    let mut p = p.reboot(&Options::default());
    p.start();
    let bob = p.subscriber("A", "bob", false);
    p.send(bob, &push("A", 3, "addNote", r#"{"id":77,"body":"b"}"#));
    assert_eq!(p.expect_t(bob, "error")["t"], "error");
}

/// Bob is refused under clientID `A` (bound to alice).
fn bob_is_refused_under_a(p: &mut Pair, mid: u64) {
    let bob = p.subscriber("A", "bob", false);
    p.send(bob, &push("A", mid, "addNote", r#"{"id":77,"body":"b"}"#));
    let err = p.expect_t(bob, "error");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("clientID `A` is bound to another subject"),
        "{err}"
    );
    p.disconnect(bob);
}

#[test]
fn the_host_derives_the_binding_from_the_replayed_entries() {
    let mut p = Pair::live(&Options::default());
    let alice = p.subscriber("A", "alice", true);
    p.send(alice, &push("A", 1, "addNote", r#"{"id":10,"body":"a"}"#));
    p.advance(5);
    assert_eq!(p.journal.entries[0].sub, "alice");
    // The journal hands over its entries only: no binding of its own.
    assert!(p.journal.bindings.is_empty());
    let mut p = p.reboot(&Options::default());
    p.start();
    assert_eq!(
        p.log_count("journal replay: 1 mutation(s) re-invoked and acked"),
        1
    );
    bob_is_refused_under_a(&mut p, 2);
    // Alice still writes under it, and the binding outlives her connection.
    let alice = p.subscriber("A", "alice", true);
    p.send(alice, &push("A", 2, "addNote", r#"{"id":20,"body":"a2"}"#));
    p.advance(5);
    assert_eq!(lmids(&p.drain(alice)).last(), Some(&2));
    p.disconnect(alice);
    bob_is_refused_under_a(&mut p, 3);
}

#[test]
fn a_binding_survives_a_restart_after_compaction_dropped_its_entries() {
    let mut p = Pair::live(&with_authority());
    let alice = p.subscriber("A", "alice", true);
    p.send(alice, &push("A", 1, "addNote", r#"{"id":10,"body":"a"}"#));
    p.advance(60);
    // Flushed, confirmed, compacted: the entry is gone, its binding kept.
    assert!(p.journal.entries.is_empty(), "{:?}", p.journal.entries);
    assert_eq!(p.journal.bindings, [("A".to_string(), "alice".to_string())]);
    let mut p = p.reboot(&with_authority());
    p.start();
    assert!(p.host.is_live());
    bob_is_refused_under_a(&mut p, 2);
    // A client bound only by a kept binding stays bound after its connections close.
    let alice = p.subscriber("A", "alice", true);
    p.disconnect(alice);
    bob_is_refused_under_a(&mut p, 2);
}

#[test]
fn a_room_boot_placement_stands_in_for_the_claim_and_the_first_mint() {
    let placement = Placement {
        epoch: 7,
        lease_token: "boot-lease".into(),
    };
    let o = Options {
        placement: Some(placement),
        ..with_authority()
    };
    let authority = Authority {
        epoch: 7, // room-boot claimed it
        ..Authority::default()
    };
    let mut p = Pair::new(&o, Journal::default(), authority);
    p.start();
    assert!(p.host.is_live(), "{:?}", p.logs);
    assert_eq!(p.authority.epoch, 7, "no second claim");
    assert_eq!(p.daemon.mints, 0, "no lease mint");
    assert_eq!(p.daemon.leases, ["boot-lease"]);
    assert_eq!(p.host.placement_epoch(), 7);
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.advance(30);
    assert_eq!(p.authority.bodies.len(), 1);
    assert!(
        p.authority.bodies[0].contains("\"epoch\":7"),
        "{}",
        p.authority.bodies[0]
    );
    assert_eq!(p.stopped, None, "the flush was not fenced");
}

#[test]
fn a_read_only_room_boot_placement_goes_live_without_a_mint() {
    let o = Options {
        writes: false,
        placement: Some(Placement {
            epoch: 2,
            lease_token: "boot-lease".into(),
        }),
        ..Options::default()
    };
    let mut p = Pair::new(&o, Journal::default(), Authority::default());
    p.start();
    assert!(p.host.is_live(), "{:?}", p.logs);
    assert_eq!((p.daemon.mints, p.daemon.leases.len()), (0, 1));
}

/// A live pair with an authority whose daemon and authority hold note 60 (`bump`
/// appends a `+` to its body), and writer `c1` subscribed: the options, the pair, the
/// note's authority key and the writer's connection.
fn counter_pair() -> (Options, Pair, (String, String), u64) {
    let o = with_authority();
    let mut p = Pair::new(&o, Default::default(), Default::default());
    p.seed_row("note", json!([60, "", "u"]));
    p.start();
    let c = p.subscriber("c1", "u1", true);
    (o, p, ("note".to_string(), "[60]".to_string()), c)
}

/// Both of `c1`'s bumps of note 60 are at the authority, once each, and the room has
/// nothing left to flush.
fn both_bumps_kept(p: &Pair, key: &(String, String)) {
    assert_eq!(
        p.authority.rows[key][1],
        json!("++"),
        "both bumps at the authority, once each"
    );
    let room = p.host.room().unwrap();
    assert_eq!((room.dirty_len(), room.pending_len()), (0, 0));
}

/// With a daemon that never echoes, `c1` bumps note 60 (mid 1) and the authority
/// commits it: its journal record waits for an echo that will not come.
fn bump_with_a_silent_daemon(p: &mut Pair, c: u64) {
    p.daemon.silent = true;
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.advance(300);
}

/// With the daemon lagging from now on, `c1` bumps note 60 (mid 1) and the authority
/// commits it: no echo comes, and a new snapshot lacks it.
fn bump_behind_the_daemon(p: &mut Pair, c: u64, key: &(String, String)) {
    p.daemon.lagging = true;
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.advance(300);
    assert_eq!(p.authority.rows[key][1], json!("+"), "committed");
}

/// A flush an incarnation died with (journaled, never answered: the upstream link
/// dropped) is settled by the next incarnation's boot under the same placement epoch —
/// committed *after* the snapshot that boot started from, so the snapshot lacks what it
/// wrote, while the durable lmids say its mutations are in (the replay skips them). The
/// boot takes its images in first: the next write of one of its keys is made on top of
/// them and kept. (Before, that write was made on the stale image, its flush
/// CAS-conflicted, and the room converged to the authority — the write lost.)
#[test]
fn a_flush_settled_at_boot_is_taken_in_so_the_next_write_of_its_key_is_kept() {
    let (_, mut p, key, c) = counter_pair();
    p.authority.down = true;
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.advance(100); // journaled and acked; its flush, journaled first, waits
    assert_eq!(p.journal.flushes.len(), 1);
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    p.advance(100); // journaled and acked; no flush carries it yet
                    // The incarnation dies; the next one gets its snapshot while the authority is still
                    // away, and settles the flush once it is back.
    p.drop_upstream();
    p.advance(1_000);
    assert_eq!(p.log_count("upstream snapshot"), 2);
    // The daemon is behind the commit that follows: no echo comes before the answer.
    p.daemon.lagging = true;
    p.authority.down = false;
    p.advance(5_000);
    // (The dead incarnation's own retry may commit it first: then the boot finds it
    // "already applied", and the snapshot still predates it.)
    assert_eq!(p.log_count("flush 1 settled at boot"), 1, "{:#?}", p.logs);
    assert_eq!(
        p.authority.rows[&key][1],
        json!("++"),
        "both bumps at the authority, once each"
    );
    assert_eq!(p.log_count("taken in ahead of the daemon's feed"), 1);
    let room = p.host.room().unwrap();
    assert_eq!((room.dirty_len(), room.pending_len()), (0, 0));
}

/// A restart claims a new epoch, so the dead process's last flush — committed, its
/// answer lost — comes back `fenced` when the boot resubmits it, while the durable lmids
/// say its mutations are in (the replay skips them). When the daemon lags behind that
/// commit, its snapshot lacks what the flush wrote; the boot takes those images in once
/// the probe has shown every ledger advance the flush carried committed, so the next
/// write of its key is made on top of them and kept. (Before, that write was made on
/// the stale image, its flush CAS-conflicted, and the acknowledged write was lost.)
#[test]
fn a_flush_committed_before_a_restart_is_taken_in_under_the_new_epoch() {
    let (o, mut p, key, c) = counter_pair();
    p.authority.lose_answers = true;
    bump_behind_the_daemon(&mut p, c, &key); // its answer lost
                                             // The process dies before an answer gets through; the restart claims a new epoch.
    let mut p = p.reboot(&o);
    p.authority.lose_answers = false;
    p.start();
    assert_eq!(
        p.log_count("flush 1 (old epoch 1) fenced"),
        1,
        "{:#?}",
        p.logs
    );
    assert_eq!(
        p.log_count("taken in ahead of the daemon's feed"),
        1,
        "{:#?}",
        p.logs
    );
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    p.advance(2_000);
    both_bumps_kept(&p, &key);
    assert_eq!(p.host.room().unwrap().durable_lmid("c1"), 2);
}

/// The other side: a record that comes back `fenced` after a restart, which the
/// authority never committed (it was down when the process died), is not taken in —
/// the probe shows its ledger advance missing, and the replay runs its mutation again,
/// once.
#[test]
fn a_fenced_flush_the_authority_never_committed_is_replayed_not_taken_in() {
    let (o, mut p, key, c) = counter_pair();
    p.authority.down = true;
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.advance(300);
    assert_eq!(p.journal.flushes.len(), 1, "journaled, never committed");
    let mut p = p.reboot(&o);
    p.authority.down = false;
    p.start();
    assert_eq!(
        p.log_count("flush 1 (old epoch 1) fenced"),
        1,
        "{:#?}",
        p.logs
    );
    assert_eq!(p.log_count("fenced: dropped"), 1);
    assert_eq!(p.log_count("fenced, but it had been committed"), 0);
    p.advance(2_000);
    assert_eq!(p.authority.rows[&key][1], json!("+"), "mid 1 once");
    assert_eq!(p.host.room().unwrap().durable_lmid("c1"), 1);
}

/// A committed flush's record stays unconfirmed until its echo is in: an incarnation
/// born while the daemon still lags behind that commit resubmits it, hears "already
/// applied", and takes its images in — so the next write of its key is kept. (Before,
/// the record was confirmed at the commit; the new incarnation's snapshot lacked the
/// images, the replay skipped the mutation, and the next write was lost to a CAS
/// conflict.)
#[test]
fn a_committed_flush_whose_echo_never_came_is_taken_in_by_the_next_incarnation() {
    let (_, mut p, key, c) = counter_pair();
    bump_behind_the_daemon(&mut p, c, &key); // and answered
    assert!(
        p.journal.flushes.contains_key(&1),
        "not confirmed: no echo yet"
    );
    // The upstream link drops; the next incarnation's snapshot still lacks the commit.
    p.drop_upstream();
    p.advance(1_000);
    assert_eq!(p.log_count("upstream snapshot"), 2);
    assert_eq!(p.log_count("flush 1 settled at boot: already applied"), 1);
    assert_eq!(p.log_count("taken in ahead of the daemon's feed"), 1);
    assert!(
        p.journal.flushes.contains_key(&1),
        "taken in, and unconfirmed until its echo is in"
    );
    let c = p.subscriber("c1", "u1", true);
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    p.advance(2_000);
    p.catch_up_daemon();
    assert!(p.journal.flushes.is_empty(), "echoed: confirmed");
    both_bumps_kept(&p, &key);
}

/// The record is confirmed as soon as the echo is in; a daemon that never streams it
/// (it netted the change away) holds it back at most `ECHO_WAIT_MS`.
#[test]
fn a_committed_flush_is_confirmed_at_its_echo_or_after_the_echo_wait() {
    let (_, mut p, _, c) = counter_pair();
    p.send(c, &push("c1", 1, "bump", r#"{"id":60}"#));
    p.advance(300);
    assert!(p.journal.flushes.is_empty(), "echoed at once, confirmed");
    p.daemon.silent = true;
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    p.advance(300);
    assert!(p.journal.flushes.contains_key(&2), "no echo: waiting");
    assert_eq!(p.host.gauges().flushes_awaiting_echo, 1);
    assert_eq!(p.host.counters().confirmed_unechoed, 0);
    p.advance(rindle_room_core::host::ECHO_WAIT_MS);
    assert!(p.journal.flushes.is_empty(), "confirmed after the wait");
    assert_eq!(p.log_count("confirmed without its echo"), 1);
    assert_eq!(p.host.gauges().flushes_awaiting_echo, 0);
    assert_eq!(p.host.counters().confirmed_unechoed, 1);
}

/// The echo of an earlier committed flush that arrives while a later flush carrying the
/// same key is in flight is the room's own write, not someone else's: when that later
/// flush CAS-conflicts on another key, the room keeps its change of this one and flushes
/// it again. (Before, the echo was taken for a foreign write during the flight, the
/// room dropped its change, and the next flush carried the writer's ledger advance
/// without it: an acknowledged mutation recorded as applied, its effect lost.)
#[test]
fn an_earlier_flushs_echo_during_a_conflicting_flight_does_not_drop_the_room_s_change() {
    let (_, mut p, key, c) = counter_pair();
    // Someone else adds note 70 at the authority; the room does not see it.
    p.authority.rows.insert(
        ("note".to_string(), "[70]".to_string()),
        json!([70, "foreign", "z"]),
    );
    bump_behind_the_daemon(&mut p, c, &key);
    p.authority.down = true;
    p.send(c, &push("c1", 2, "bump", r#"{"id":60}"#));
    p.send(c, &push("c1", 3, "addNote", r#"{"id":70,"body":"mine"}"#));
    p.advance(300); // flush 2 (note 60 → "++", note 70 added) waits on the authority
    p.catch_up_daemon(); // flush 1's echo arrives during flush 2's flight
    p.authority.down = false;
    p.advance(2_000);
    assert_eq!(p.log_count("flush 2 CAS-conflicted"), 1, "{:#?}", p.logs);
    both_bumps_kept(&p, &key);
    assert_eq!(
        p.authority.rows[&("note".to_string(), "[70]".to_string())],
        json!([70, "foreign", "z"]),
        "the conflicted add converged to the authority"
    );
}

/// At most `MAX_AWAITING_ECHO` records wait for their echo: past it, the oldest is
/// confirmed without one, so a daemon that never echoes cannot make a journal keep
/// every flush record it writes.
#[test]
fn past_the_echo_wait_limit_the_oldest_record_is_confirmed_without_its_echo() {
    let (_, mut p, _, c) = counter_pair();
    p.daemon.silent = true;
    let limit = rindle_room_core::host::MAX_AWAITING_ECHO as u64;
    for mid in 1..=limit + 3 {
        // A note each: a key keeps at most 8 unechoed images, one per batch here.
        let args = format!(r#"{{"id":{},"body":"b"}}"#, 1000 + mid);
        p.send(c, &push("c1", mid, "addNote", &args));
        p.advance(100); // journaled, flushed and committed; no echo comes
    }
    assert_eq!(
        p.journal.flushes.len() as u64,
        limit,
        "the newest {limit} wait"
    );
    assert!(!p.journal.flushes.contains_key(&3) && p.journal.flushes.contains_key(&4));
    assert_eq!(p.log_count("confirmed without its echo"), 3);
    assert_eq!(p.host.gauges().flushes_awaiting_echo as u64, limit);
    assert_eq!(p.host.counters().confirmed_unechoed, 3);
    let mut text = String::new();
    rindle_room_core::host::render_prometheus(
        &mut text,
        p.host.counters(),
        &p.host.gauges(),
        &Default::default(),
    );
    assert!(text.contains(&format!("\nrindle_room_flushes_awaiting_echo {limit}\n")));
    assert!(text.contains("\nrindle_room_flushes_confirmed_unechoed_total 3\n"));
}

/// A shutdown that finds the room quiet waits for the echo of its last committed flush:
/// the record is confirmed before the host stops, so the next boot has nothing to
/// settle.
#[test]
fn a_shutdown_waits_for_the_echo_of_the_last_committed_flush() {
    let (_, mut p, key, c) = counter_pair();
    bump_behind_the_daemon(&mut p, c, &key);
    assert_eq!(p.journal.flushes.len(), 1, "committed, not echoed");
    assert_eq!(
        p.control(ControlRequest::Shutdown),
        None,
        "waits for the echo"
    );
    p.advance(1_000);
    assert_eq!(p.stopped, None);
    p.catch_up_daemon();
    assert_eq!(p.stopped, Some(false), "stopped at the echo");
    assert!(
        p.journal.flushes.is_empty(),
        "confirmed before the host stopped"
    );
    assert_eq!(p.log_count("not echoed by the daemon"), 0);
}

/// A shutdown waits for outstanding echoes at most `DRAIN_ECHO_WAIT_MS`: with a daemon
/// that never echoes, it stops then, and the record stays for the next boot.
#[test]
fn a_shutdown_stops_waiting_for_echoes_after_the_drain_echo_wait() {
    let (_, mut p, _, c) = counter_pair();
    bump_with_a_silent_daemon(&mut p, c);
    assert_eq!(p.journal.flushes.len(), 1, "committed, not echoed");
    assert_eq!(
        p.control(ControlRequest::Shutdown),
        None,
        "waits for the echo"
    );
    let wait = rindle_room_core::host::DRAIN_ECHO_WAIT_MS;
    p.advance(wait - 1);
    assert_eq!(p.stopped, None, "still waiting");
    p.advance(1);
    assert_eq!(p.stopped, Some(false), "stopped at the wait's end");
    assert_eq!(p.log_count("not echoed by the daemon within"), 1);
    assert_eq!(
        p.journal.flushes.len(),
        1,
        "left for the next boot to settle"
    );
}

/// Only a shutdown waits for echoes: a `/drain` (or a hibernation, or a box settling
/// its rooms at start-up, one after the other) is answered as soon as the room is
/// quiet, and the record keeps waiting for its echo in the room.
#[test]
fn a_drain_does_not_wait_for_echoes() {
    let (_, mut p, _, c) = counter_pair();
    bump_with_a_silent_daemon(&mut p, c);
    assert_eq!(
        p.control(ControlRequest::Drain),
        Some(ControlReply::Drained(Ok(1)))
    );
    assert_eq!(p.journal.flushes.len(), 1, "still waiting for its echo");
    assert_eq!(p.host.gauges().flushes_awaiting_echo, 1);
}

/// A shutdown does not wait for an echo that cannot come: with the upstream link down
/// it stops at once.
#[test]
fn a_shutdown_with_the_upstream_link_down_does_not_wait_for_echoes() {
    let (_, mut p, _, c) = counter_pair();
    bump_with_a_silent_daemon(&mut p, c);
    p.drop_upstream();
    assert_eq!(
        p.control(ControlRequest::Shutdown),
        Some(ControlReply::Stopped)
    );
}
