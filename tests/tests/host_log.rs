//! The host's log lines for a connection's life: debug lines for open, ignored frames,
//! subscribe, unsubscribe, mutation outcomes and close; none of them once the driver
//! lowers the host's log level to `info` (the lines are then not even formatted).

use rindle_room_core::host::Level;
use rindle_room_tests::pair::*;

fn debug_lines(p: &Pair) -> Vec<String> {
    p.logs
        .iter()
        .filter(|(l, _)| *l == Level::Debug)
        .map(|(_, t)| t.clone())
        .collect()
}

/// A session: garbage, an unknown frame, a subscribe, an applied and a rejected
/// mutation, a re-sent mid, an unsubscribe, a close.
fn session(p: &mut Pair) -> u64 {
    let c = p.subscriber("c1", "u1", true);
    p.send(c, "{nope");
    p.send(c, "[1,2]");
    p.send(c, r#"{"t":"wave"}"#);
    p.send(c, r#"{"t":"subscribe"}"#);
    p.send(c, &push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#));
    p.send(c, &push("c1", 2, "nope", "{}"));
    p.send(c, &push("c1", 2, "nope", "{}"));
    p.send(c, r#"{"t":"unsubscribe","queryId":1}"#);
    p.send(c, r#"{"t":"unsubscribe","queryId":9}"#);
    p.settle();
    p.disconnect(c);
    p.settle();
    c
}

#[test]
fn a_connections_life_is_logged_at_debug() {
    let mut p = Pair::live(&Options::default());
    let c = session(&mut p);
    let lines = debug_lines(&p);
    for needle in [
        format!("conn {c}: open"),
        format!("conn {c}: subscribed queryId 0 (the lmid query, epoch 1, snapshot "),
        format!("conn {c}: subscribed queryId 1 (sub u1, epoch 1, snapshot "),
        format!("conn {c}: ignored frame: not JSON (5 bytes)"),
        format!("conn {c}: ignored frame: not a JSON object"),
        format!("conn {c}: ignored frame: unknown type \"wave\""),
        format!("conn {c}: ignored frame: subscribe without a numeric queryId"),
        format!("conn {c}: mutation `addNote` (c1:1) applied @ cv "),
        format!("conn {c}: mutation c1:2: outcome rejected sent"),
        format!("conn {c}: mutation c1:2 is a duplicate (already processed)"),
        format!("conn {c}: unsubscribe queryId 1"),
        format!("conn {c}: unsubscribe queryId 9 (not subscribed: nothing to do)"),
        format!("conn {c}: closed (clientID c1, 1 subscription(s) detached)"),
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&needle)),
            "{needle:?} missing from {lines:#?}"
        );
    }
    // The rejection itself stays an info line.
    assert_eq!(p.log_count("mutation `nope` (c1:2) rejected"), 0);
    assert_eq!(
        p.log_count("mutation c1:2 rejected: unknown mutator `nope`"),
        1
    );
}

#[test]
fn at_info_the_host_produces_no_debug_line() {
    let mut p = Pair::live(&Options::default());
    p.host.set_log_level(Level::Info);
    p.logs.clear();
    session(&mut p);
    assert!(debug_lines(&p).is_empty(), "{:?}", debug_lines(&p));
    assert_eq!(
        p.log_count("mutation c1:2 rejected: unknown mutator `nope`"),
        1
    );
}
