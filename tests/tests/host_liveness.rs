//! Silent links: an upstream link or a client socket whose peer vanished without a FIN
//! or RST, on the virtual clock (tests/src/pair/). The host pings a link silent for a
//! third of its timeout and takes it as dead past the timeout.

use rindle_room_tests::pair::*;
use serde_json::json;

fn timeouts(upstream: u64, downstream: u64) -> Options {
    Options {
        upstream_silence_timeout_ms: upstream,
        silence_timeout_ms: downstream,
        ..Options::default()
    }
}

#[test]
fn a_quiet_upstream_that_answers_pings_stays_connected() {
    let mut p = Pair::live(&timeouts(3_000, 0));
    let c = p.subscriber("c1", "u1", false);
    let opens = p.daemon.opens;
    p.advance(60_000);
    assert!(p.host.is_live());
    assert_eq!(p.daemon.opens, opens, "no reconnect");
    assert!(p.clients[&c].closed.is_none());
    // One ping per second of silence (a third of the timeout), each answered.
    assert!((59..=61).contains(&p.daemon.pings), "{}", p.daemon.pings);
    assert_eq!(p.host.counters().upstream_silences, 0);
}

#[test]
fn frames_from_upstream_count_as_signs_of_life() {
    let mut p = Pair::live(&timeouts(3_000, 0));
    p.daemon.dark = true; // no pong ever comes back…
    for i in 0..20 {
        p.advance(900);
        p.daemon.dark = false; // …but a batch does, every 0.9 s
        p.upstream(&[json!({"table":"note","op":"add","row":[100 + i,"x","u1"]})]);
        p.daemon.dark = true;
    }
    assert_eq!(p.daemon.pings, 0, "never silent for a third of the timeout");
    assert!(p.host.is_live());
}

#[test]
fn a_dark_upstream_is_taken_as_dead_after_the_silence_timeout_and_the_room_reconnects() {
    let mut p = Pair::live(&timeouts(3_000, 0));
    let c = p.subscriber("c1", "u1", false);
    let boot = p.host.boot_id().to_string();
    let opens = p.daemon.opens;
    p.daemon.dark = true;
    p.advance(999);
    assert_eq!(p.daemon.pings, 0);
    p.advance(1);
    assert_eq!(p.daemon.pings, 1, "pinged after a third of the timeout");
    p.advance(1_999);
    assert!(p.host.is_live(), "still waiting for the pong");
    assert!(p.clients[&c].closed.is_none());
    p.advance(1);
    // Past the timeout: the link is closed and handled as a drop.
    assert_eq!(
        p.clients[&c].closed,
        Some((1012, "room re-subscribing".into()))
    );
    assert_eq!(p.host.counters().upstream_silences, 1);
    assert_eq!(p.log_count("upstream silent for 3000 ms"), 1);
    assert!(p.daemon.link.is_none(), "the host closed the link");
    // The reconnect comes after the first backoff, on a link that works.
    p.advance(250);
    assert_eq!(p.daemon.opens, opens + 1);
    assert!(p.host.is_live());
    assert_ne!(p.host.boot_id(), boot);
    let d = p.subscriber("c1", "u1", false);
    assert!(p.clients[&d].closed.is_none());
}

#[test]
fn a_late_close_of_a_link_taken_as_dead_is_not_a_second_drop() {
    let mut p = Pair::live(&timeouts(3_000, 0));
    let link = p.daemon.link.expect("open");
    p.daemon.dark = true;
    p.daemon.hold = true;
    p.advance(3_000);
    let deaths = p.host.counters().incarnation_deaths;
    // The driver's socket ends later and reports it: nothing more happens.
    p.input_up_closed(link);
    assert_eq!(p.host.counters().incarnation_deaths, deaths);
    assert_eq!(p.log_count("upstream reconnect in"), 1);
    p.advance(250);
    assert_eq!(p.log_count("upstream connected"), 2);
}

#[test]
fn a_silence_timeout_of_zero_never_pings_or_drops() {
    let mut p = Pair::live(&timeouts(0, 0));
    let c = p.subscriber("c1", "u1", false);
    p.daemon.dark = true;
    p.clients.get_mut(&c).unwrap().dark = true;
    p.advance(600_000);
    assert!(p.host.is_live());
    assert_eq!((p.daemon.pings, p.clients[&c].pings), (0, 0));
    assert!(p.clients[&c].closed.is_none());
}

#[test]
fn a_dark_client_is_pinged_then_closed_with_1011_and_its_subscriptions_go() {
    let mut p = Pair::live(&timeouts(0, 3_000));
    let dark = p.subscriber("c1", "u1", false);
    let alive = p.subscriber("c2", "u2", false);
    p.clients.get_mut(&dark).unwrap().dark = true;
    assert_eq!(p.host.gauges().subscriptions, 2);
    p.advance(1_100); // the sweep runs every 50 ms here
    assert_eq!(p.clients[&dark].pings, 1);
    assert_eq!(p.clients[&alive].pings, 1);
    p.advance(2_000);
    let (code, reason) = p.clients[&dark].closed.clone().expect("closed");
    assert_eq!(code, 1011);
    assert!(
        reason.contains("(downstream.silence_timeout_ms)"),
        "{reason}"
    );
    assert!(p.clients[&alive].closed.is_none(), "it answered its ping");
    assert_eq!(p.host.gauges().subscriptions, 1);
    assert_eq!(p.host.counters().silent_sockets, 1);
    // The live one keeps being pinged as long as it stays quiet, and stays.
    p.advance(30_000);
    assert!(p.clients[&alive].closed.is_none());
    assert!(p.clients[&alive].pings >= 10, "{}", p.clients[&alive].pings);
}

#[test]
fn a_client_that_sends_frames_is_never_pinged() {
    let mut p = Pair::live(&timeouts(0, 3_000));
    let c = p.connect();
    p.clients.get_mut(&c).unwrap().dark = true;
    for _ in 0..30 {
        p.advance(900);
        p.send(c, r#"{"t":"init","clientID":"c1"}"#);
    }
    assert_eq!(p.clients[&c].pings, 0);
    assert!(p.clients[&c].closed.is_none());
}
