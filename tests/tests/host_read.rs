//! The room host without sockets, read path and incarnations: scripted inputs on a
//! virtual clock, asserted outputs (tests/src/pair/). The socket tests of
//! runtime-smol cover the same behaviours through a driver; these pin the host itself.

use rindle_room_core::host::{ControlReply, ControlRequest, HostConfig, Level};
use rindle_room_tests::pair::*;
use serde_json::json;

fn ids(snapshot: &serde_json::Value) -> Vec<u64> {
    snapshot["batch"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["row"][0].as_u64().unwrap())
        .collect()
}

#[test]
fn a_subscriber_gets_hello_snapshot_progress_then_live_batches() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", false);
    p.upstream(&[json!({"table":"note","op":"add","row":[4,"four","u1"]})]);
    let live = p.expect_t(c, "nbatch");
    assert_eq!(live["batch"]["seq"], 1);
    assert_eq!(live["batch"]["ops"][0]["row"][0], 4);
    let progress = p.expect_t(c, "progress");
    assert_eq!(progress["frame"]["cvMin"], live["batch"]["cv"]);
    // The daemon's progress is re-advertised as the upstream absorption point.
    let advert = p.expect_t(c, "progress");
    assert_eq!(advert["frame"]["upstreamCv"], 101);
    assert_eq!(advert["frame"]["upstreamBoot"], "daemon-boot-1");
}

#[test]
fn subscribes_before_live_are_served_once_the_snapshot_lands() {
    let mut p = Pair::new(
        &Options::default(),
        Journal::default(),
        Authority::default(),
    );
    p.daemon.hold = true;
    p.start();
    assert_eq!(p.started, Some(Ok(())));
    assert!(!p.host.is_live());
    let c = p.connect();
    let tok = p.token(NOTES, "u1", 60_000);
    p.send(c, &subscribe_frame(1, &tok));
    assert!(p.drain(c).is_empty(), "held until live");
    p.release_daemon();
    let snap = p.subscribed(c);
    assert_eq!(ids(&snap), [1, 2, 3]);
}

#[test]
fn identical_queries_share_one_materialization() {
    let mut p = Pair::live(&Options::default());
    p.subscriber("a", "u1", false);
    p.subscriber("b", "u2", false);
    let Some(ControlReply::Stats(stats)) = p.control(ControlRequest::Stats) else {
        panic!("stats")
    };
    assert!(
        stats.contains("\"subscriptions\":2,\"materializations\":1"),
        "{stats}"
    );
}

#[test]
fn an_upstream_drop_kills_the_incarnation_and_reconnects_with_backoff() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", false);
    let boot = p.host.boot_id().to_string();
    p.daemon.hold = true; // the reconnect's subscribe waits
    p.drop_upstream();
    assert_eq!(
        p.clients[&c].closed,
        Some((1012, "room re-subscribing".into()))
    );
    assert!(!p.host.is_live());
    assert_ne!(p.host.boot_id(), boot, "a new incarnation, a new bootId");
    // The reconnect waits 250 ms; while connecting keeps failing, the wait doubles up to
    // 5 s.
    p.daemon.refuse = true;
    let opens = p.daemon.opens;
    let mut waits = Vec::new();
    for _ in 0..6 {
        let before = p.daemon.opens;
        let mut waited = 0;
        while p.daemon.opens == before {
            p.advance(1);
            waited += 1;
            assert!(waited <= 5_000, "no reconnect within 5 s");
        }
        waits.push(waited);
    }
    assert_eq!(waits, [250, 500, 1000, 2000, 4000, 5000]);
    assert_eq!(p.daemon.opens, opens + 6);
    p.daemon.refuse = false;
    p.advance(5_000);
    p.release_daemon();
    assert!(p.host.is_live());
    let d = p.subscriber("c1", "u1", false);
    assert_eq!(p.drain(d), Vec::<serde_json::Value>::new());
}

#[test]
fn garbage_from_upstream_is_a_violation_and_resubscribes_after_a_beat() {
    let mut p = Pair::live(&Options::default());
    let c = p.subscriber("c1", "u1", false);
    let subscribes = p.daemon.subscribes;
    p.upstream_raw("not json at all");
    assert_eq!(p.clients[&c].closed.as_ref().map(|c| c.0), Some(1012));
    assert_eq!(
        p.log_count("incarnation dead: upstream frame is not JSON"),
        1
    );
    p.advance(250);
    assert_eq!(
        p.daemon.subscribes,
        subscribes + 1,
        "the same link re-subscribes"
    );
    assert!(p.host.is_live());
}

#[test]
fn an_upstream_query_error_remints_the_lease_and_retries_a_failed_mint() {
    let mut p = Pair::live(&Options::default());
    let mints = p.daemon.mints;
    p.daemon.fail_mint = true;
    p.upstream_raw(r#"{"t":"queryError","queryId":1,"message":"lease expired"}"#);
    assert_eq!(p.daemon.mints, mints);
    assert_eq!(p.log_count("lease re-mint failed"), 1);
    p.daemon.fail_mint = false;
    p.advance(5_000); // the re-mint retry
    assert_eq!(p.daemon.mints, mints + 1);
    p.advance(250); // then the re-subscribe
    assert!(p.host.is_live());
}

#[test]
fn an_expired_lease_is_dropped_by_the_sweep() {
    let mut p = Pair::live(&Options::default());
    let c = p.connect();
    let tok = p.token(NOTES, "u1", 1_000);
    p.send(c, &subscribe_frame(1, &tok));
    p.subscribed(c);
    p.advance(950);
    assert!(p.drain(c).is_empty());
    p.advance(100);
    let err = p.expect_t(c, "queryError");
    assert_eq!(
        err["message"],
        "expired lease — renew through the API server"
    );
    assert_eq!(p.host.counters().expired_leases, 1);
}

#[test]
fn revocation_drops_subscriptions_closes_sockets_and_refuses_old_tokens() {
    let mut p = Pair::live(&Options::default());
    let old = p.token(NOTES, "u1", 600_000);
    let c = p.subscriber("c1", "u1", false);
    let other = p.subscriber("c2", "u2", false);
    p.advance(10);
    assert_eq!(
        p.control(ControlRequest::Revoke { user: "u1".into() }),
        Some(ControlReply::Revoked(1))
    );
    assert_eq!(p.expect_t(c, "queryError")["message"], "lease revoked");
    assert_eq!(p.clients[&c].closed, Some((1008, "revoked".into())));
    assert!(p.clients[&other].closed.is_none());
    let d = p.connect();
    p.send(d, &subscribe_frame(1, &old));
    assert_eq!(
        p.expect_t(d, "queryError")["message"],
        "lease token refused: revoked"
    );
    // A token issued after the revocation is fine.
    p.advance(10);
    let fresh = p.token(NOTES, "u1", 600_000);
    p.send(d, &subscribe_frame(2, &fresh));
    p.subscribed(d);
}

#[test]
fn a_silent_socket_is_closed_after_the_first_frame_timeout() {
    let mut p = Pair::live(&Options {
        first_frame_timeout_ms: 1_000,
        ..Options::default()
    });
    let silent = p.connect();
    let talker = p.connect();
    p.send(talker, r#"{"t":"init","clientID":"c1"}"#);
    p.advance(999);
    assert!(p.clients[&silent].closed.is_none());
    p.advance(60); // the next sweep
    let (code, reason) = p.clients[&silent].closed.clone().expect("closed");
    assert_eq!(code, 1008);
    assert!(
        reason.starts_with("no init or subscribe within 1000 ms"),
        "{reason}"
    );
    assert!(p.clients[&talker].closed.is_none());
    assert!(p
        .logs
        .iter()
        .any(|(l, t)| *l == Level::Info && t.contains("closed (1008)")));
}

#[test]
fn a_stalled_socket_is_cut_past_the_send_budget_and_its_queue_dropped() {
    let mut p = Pair::live(&Options {
        send_budget: 2_000,
        writes: false,
        ..Options::default()
    });
    let healthy = p.subscriber("h", "u1", false);
    let stalled = p.subscriber("s", "u2", false);
    p.stall(stalled, true);
    let body = "x".repeat(300);
    let mut id = 100;
    while p.clients[&stalled].closed.is_none() {
        id += 1;
        p.upstream(&[json!({"table":"note","op":"add","row":[id, body, "u1"]})]);
        assert!(id < 200, "the stalled socket was never cut");
    }
    let (code, reason) = p.clients[&stalled].closed.clone().unwrap();
    assert_eq!(code, 1008);
    assert!(reason.starts_with("send budget exceeded: "), "{reason}");
    assert!(
        p.clients[&stalled].unread.is_empty(),
        "its queue was dropped"
    );
    assert_eq!(p.clients[&stalled].after_close, 0);
    // The healthy subscriber got every batch.
    let seqs: Vec<u64> = p
        .drain(healthy)
        .iter()
        .filter(|v| v["t"] == "nbatch")
        .map(|v| v["batch"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=(id - 100)).collect::<Vec<_>>());
    assert_eq!(p.host.counters().budget_terminations, 1);
}

/// A client that keeps sending frames the room answers (here, pushes refused as gaps)
/// while it reads nothing piles up answers that are not live frames; the send budget
/// bounds them too: the socket is cut once its unread bytes pass it.
#[test]
fn a_socket_that_sends_and_never_reads_is_cut_past_the_send_budget() {
    let mut p = Pair::live(&Options {
        send_budget: 2_000,
        ..Options::default()
    });
    let c = p.subscriber("c1", "u1", true);
    p.stall(c, true);
    let mut mid = 1;
    while p.clients[&c].closed.is_none() {
        mid += 1; // every mid past 1 is a gap: an error frame each
        p.send(c, &push("c1", mid, "addNote", r#"{"id":10,"body":"ten"}"#));
        assert!(mid < 200, "the socket was never cut");
    }
    let (code, reason) = p.clients[&c].closed.clone().unwrap();
    assert_eq!(code, 1008);
    assert!(reason.starts_with("send budget exceeded: "), "{reason}");
    assert!(p.clients[&c].unread.is_empty(), "its queue was dropped");
    assert!(mid > 20, "not before the budget: {mid}");
}

#[test]
fn a_snapshot_larger_than_the_send_budget_is_served() {
    let mut p = Pair::new(
        &Options {
            send_budget: 1_000,
            writes: false,
            ..Options::default()
        },
        Journal::default(),
        Authority::default(),
    );
    let big = json!([9, "y".repeat(5_000), "u1"]);
    p.daemon.rows.insert(("note".into(), "[9]".into()), big);
    p.start();
    let c = p.connect();
    p.stall(c, true); // not even reading: one snapshot is never what cuts a socket
    let tok = p.token(NOTES, "u1", 60_000);
    p.send(c, &subscribe_frame(1, &tok));
    assert!(p.clients[&c].closed.is_none());
    p.stall(c, false);
    let snap = p.subscribed(c);
    assert_eq!(ids(&snap), [1, 2, 3, 9]);
}

#[test]
fn a_revocation_carried_over_from_the_box_refuses_older_tokens_only() {
    // The pair starts at t = 1,000,000; the box revoked u1 at 999,000.
    let o = Options {
        revoked: vec![("u1".into(), 999_000)],
        ..Options::default()
    };
    let mut p = Pair::new(&o, Journal::default(), Authority::default());
    let before = {
        let mut q = Pair::new(
            &Options::default(),
            Journal::default(),
            Authority::default(),
        );
        q.now = 998_000;
        q.token(NOTES, "u1", 600_000)
    };
    p.start();
    let c = p.connect();
    p.send(c, &subscribe_frame(1, &before));
    assert_eq!(
        p.expect_t(c, "queryError")["message"],
        "lease token refused: revoked"
    );
    let after = p.token(NOTES, "u1", 600_000);
    p.send(c, &subscribe_frame(2, &after));
    p.subscribed(c);
}

#[test]
fn a_subscribe_past_the_room_budget_is_taken_back_and_answered_with_a_query_error() {
    let probe = Pair::live(&Options::default());
    let base = probe.host.room().unwrap().retained_bytes() as u64;
    let budget = base + 64;
    let mut p = Pair::live(&Options {
        max_room_bytes: Some(budget),
        ..Options::default()
    });
    let before = p.host.room().unwrap().materialization_count();
    let c = p.connect();
    let tok = p.token(NOTES, "u1", 600_000);
    p.send(c, &subscribe_frame(1, &tok));
    let err = p.expect_t(c, "queryError");
    let message = err["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("room memory budget exceeded: ")
            && message.ends_with(&format!("bytes retained, budget {budget}")),
        "{message}"
    );
    let reported: u64 = message["room memory budget exceeded: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let room = p.host.room().unwrap();
    assert_eq!(room.materialization_count(), before, "nothing else changed");
    // The query's state is gone; what is left over budget is grown capacity (slot
    // vectors, an index kept for reuse).
    assert!((room.retained_bytes() as u64) < reported);
    assert_eq!(p.host.counters().budget_refusals, 1);
    assert!(p.clients[&c].closed.is_none(), "the socket keeps serving");
}

#[test]
fn the_room_budget_counts_what_a_query_s_conditions_hold() {
    // An `IN` list of 20,000 texts: its set (each text kept once, ~1 MB) is part of
    // what the room retains, so a budget with a megabyte of headroom refuses it while
    // an ordinary query passes.
    let probe = Pair::live(&Options::default());
    let budget = probe.host.room().unwrap().retained_bytes() as u64 + (1 << 20);
    let mut p = Pair::live(&Options {
        max_room_bytes: Some(budget),
        ..Options::default()
    });
    let c = p.connect();
    let tok = p.token(NOTES, "u1", 600_000);
    p.send(c, &subscribe_frame(1, &tok));
    p.subscribed(c);
    let tok = p.token(&owners_query("x", 20_000), "u1", 600_000);
    p.send(c, &subscribe_frame(2, &tok));
    let err = p.expect_t(c, "queryError");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.starts_with("room memory budget exceeded: "),
        "{message}"
    );
    assert!(p.clients[&c].closed.is_none(), "the socket keeps serving");
}

/// A query naming `n` owners of 30-odd bytes each: its `IN` set holds ~50 bytes per
/// owner, its canonical text ~30.
fn owners_query(tag: &str, n: usize) -> String {
    let owners: Vec<String> = (0..n).map(|i| format!("{tag}-owner-{i:020}")).collect();
    json!({
        "table": "note",
        "where": {"type": "simple", "op": "IN",
                  "left": {"type": "column", "name": "owner"},
                  "right": {"type": "literal", "value": owners}},
    })
    .to_string()
}

#[test]
fn queries_past_max_query_bytes_are_refused_and_idle_ones_make_room() {
    // Room for two 2,000-owner queries (~150 KB each), not for a third of 3,000.
    let mut p = Pair::live(&Options {
        max_query_bytes: 400_000,
        ..Options::default()
    });
    let c = p.connect();
    let (a, b, big) = (
        owners_query("a", 2_000),
        owners_query("b", 2_000),
        owners_query("c", 3_000),
    );
    for (qid, ast) in [(1, &a), (2, &b)] {
        let tok = p.token(ast, "u1", 600_000);
        p.send(c, &subscribe_frame(qid, &tok));
        p.subscribed(c);
    }
    let held = p.host.room().unwrap().query_bytes();
    assert!(held > 200_000 && held < 400_000, "{held}");
    // A query that does not fit while the others are live is refused, naming the option.
    let tok = p.token(&big, "u1", 600_000);
    p.send(c, &subscribe_frame(3, &tok));
    let err = p.expect_t(c, "queryError");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.starts_with("materialize refused: this query holds ")
            && message.contains("the limit is 400000 (downstream.max_query_bytes)"),
        "{message}"
    );
    assert_eq!(p.host.room().unwrap().materialization_count(), 2);
    // Subscribing a query equal to a live one costs nothing.
    let tok = p.token(&a, "u2", 600_000);
    let d = p.connect();
    p.send(d, &subscribe_frame(1, &tok));
    p.subscribed(d);
    // Once the first two are idle (unsubscribed), idle queries are reclaimed, longest
    // idle first, until the new one fits: one is enough.
    for conn in [c, d] {
        for qid in [1, 2] {
            p.send(conn, &format!(r#"{{"t":"unsubscribe","queryId":{qid}}}"#));
        }
    }
    p.settle();
    let tok = p.token(&big, "u1", 600_000);
    p.send(c, &subscribe_frame(3, &tok));
    p.subscribed(c);
    let room = p.host.room().unwrap();
    assert_eq!(
        room.materialization_count(),
        2,
        "one idle query was reclaimed"
    );
    assert!(room.query_bytes() <= 400_000);
    assert!(p.clients[&c].closed.is_none(), "the socket keeps serving");
}

#[test]
fn caps_of_zero_refuse_every_new_query_without_a_panic() {
    // A host configured through JSON (Node, C) may be handed zeros.
    for (max_materializations, max_query_bytes, option) in [
        (
            0,
            HostConfig::default().max_query_bytes,
            "downstream.max_materializations",
        ),
        (10, 0, "downstream.max_query_bytes"),
    ] {
        let mut p = Pair::live(&Options {
            max_materializations,
            max_query_bytes,
            ..Options::default()
        });
        let c = p.connect();
        let tok = p.token(NOTES, "u1", 600_000);
        p.send(c, &subscribe_frame(1, &tok));
        let err = p.expect_t(c, "queryError");
        let message = err["message"].as_str().unwrap();
        assert!(message.contains(option), "{message}");
        assert!(p.clients[&c].closed.is_none(), "the socket keeps serving");
    }
}

#[test]
fn a_query_that_takes_the_room_past_max_held_rows_is_taken_back_and_idle_ones_make_room() {
    // The pair serves three notes: each query over them holds three rows.
    let mut p = Pair::live(&Options {
        max_held_rows: 4,
        ..Options::default()
    });
    let c = p.connect();
    let tok = p.token(NOTES, "u1", 600_000);
    p.send(c, &subscribe_frame(1, &tok));
    p.subscribed(c);
    assert_eq!(p.host.room().unwrap().held_rows(), 3);
    let other = r#"{"table":"note","where":{"type":"simple","op":"!=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":-1}}}"#;
    let tok = p.token(other, "u1", 600_000);
    p.send(c, &subscribe_frame(2, &tok));
    let err = p.expect_t(c, "queryError");
    assert_eq!(
        err["message"],
        "materialize refused: the room's queries would hold 6 rows, the limit is 4 \
         (downstream.max_held_rows); narrow the query (a filter, a limit) or try again later"
    );
    let room = p.host.room().unwrap();
    assert_eq!(
        (room.materialization_count(), room.held_rows()),
        (1, 3),
        "taken back"
    );
    // A second subscriber of the live query adds no rows.
    let d = p.connect();
    let tok = p.token(NOTES, "u2", 600_000);
    p.send(d, &subscribe_frame(1, &tok));
    p.subscribed(d);
    // Once the first query is idle, it is reclaimed for the new one.
    for conn in [c, d] {
        p.send(conn, r#"{"t":"unsubscribe","queryId":1}"#);
    }
    p.settle();
    let tok = p.token(other, "u1", 600_000);
    p.send(c, &subscribe_frame(2, &tok));
    p.subscribed(c);
    let room = p.host.room().unwrap();
    assert_eq!((room.materialization_count(), room.held_rows()), (1, 3));
}

#[test]
fn a_snapshot_alone_past_the_room_budget_kills_the_incarnation_with_a_reason() {
    let mut p = Pair::new(
        &Options {
            max_room_bytes: Some(100),
            ..Options::default()
        },
        Journal::default(),
        Authority::default(),
    );
    p.start();
    assert!(!p.host.is_live());
    let said = p
        .logs
        .iter()
        .any(|(_, l)| l.contains("room memory budget exceeded by the upstream snapshot alone"));
    assert!(said, "{:?}", p.logs);
    // Each re-subscribe costs the daemon a snapshot: they back off (0.5 s, 1 s, 2 s, 4 s,
    // 8 s …), instead of one every 250 ms.
    let first = p.daemon.subscribes;
    p.advance(16_000);
    let more = p.daemon.subscribes - first;
    assert!((3..=5).contains(&more), "{more} re-subscribes in 16 s");
    assert!(!p.host.is_live());
}

#[test]
fn a_socket_whose_subscribe_waits_for_the_snapshot_is_closed_when_the_incarnation_dies() {
    let mut p = Pair::live(&Options::default());
    p.daemon.hold = true;
    p.drop_upstream(); // incarnation 1 dies; incarnation 2 waits for its snapshot
    p.advance(300);
    let c = p.connect();
    let tok = p.token(NOTES, "u1", 60_000);
    p.send(c, &subscribe_frame(1, &tok)); // held until the snapshot lands
    assert!(p.clients[&c].closed.is_none());
    p.drop_upstream(); // incarnation 2 dies before it went live
    assert_eq!(
        p.clients[&c].closed,
        Some((1012, "room re-subscribing".into())),
        "told to re-send, not left waiting"
    );
}
