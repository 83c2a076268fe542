//! Start-up waits for its dependencies on the host's own timer: a transient failure of
//! the first lease mint or of the placement epoch claim is tried again (100 ms doubling
//! to 5 s) until the start-up timeout; a refusal fails the start at once.

use rindle_room_core::host::{ControlRequest, Level};
use rindle_room_tests::pair::{Authority, Journal, Options, Pair};

fn warnings(p: &Pair) -> Vec<&str> {
    p.logs
        .iter()
        .filter(|(l, _)| *l == Level::Warn)
        .map(|(_, t)| t.as_str())
        .collect()
}

/// What fails while the pair starts.
enum Failing {
    /// Lease mints answer 500.
    Mint,
    /// Lease mints answer 401.
    MintRefused,
    /// The authority is unreachable.
    Authority,
}

/// A pair under `o`, started while `failing` fails.
fn started(o: &Options, failing: Failing) -> Pair {
    let mut p = Pair::new(o, Journal::default(), Authority::default());
    match failing {
        Failing::Mint => p.daemon.fail_mint = true,
        Failing::MintRefused => p.daemon.refuse_mint = true,
        Failing::Authority => p.authority.down = true,
    }
    p.start();
    p
}

#[test]
fn a_failing_mint_is_tried_again_with_a_doubling_wait_until_it_succeeds() {
    let mut p = started(&Options::default(), Failing::Mint);
    assert_eq!(p.daemon.mint_tries, 1);
    assert!(p.started.is_none(), "still starting: {:?}", p.started);
    // Tries at +100, +300 (200 later), +700 (400 later).
    for (wait, tries) in [(99, 1), (1, 2), (199, 2), (1, 3), (400, 4)] {
        p.advance(wait);
        assert_eq!(p.daemon.mint_tries, tries, "after {wait} more ms");
    }
    let w = warnings(&p);
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(
        w[0].starts_with(
            "start-up: the upstream lease (rindled) failed: upstream /materialize failed: 500"
        ) && w[0].contains("retrying in 100 ms (giving up in 60 s)"),
        "{}",
        w[0]
    );
    assert!(w[3].contains("retrying in 800 ms"), "{}", w[3]);
    p.daemon.fail_mint = false;
    p.advance(800);
    assert_eq!(p.started, Some(Ok(())));
    assert!(p.host.is_live());
    assert!(
        p.logs
            .iter()
            .any(|(_, t)| t == "start-up: the upstream lease (rindled) succeeded after 5 tries"),
        "{:?}",
        p.logs
    );
}

#[test]
fn the_wait_between_tries_stops_doubling_at_five_seconds() {
    let mut p = started(&Options::default(), Failing::Mint);
    p.advance(30_000);
    let w = warnings(&p);
    let waits: Vec<&str> = w
        .iter()
        .map(|t| {
            t.split("retrying in ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        &waits[..10],
        ["100", "200", "400", "800", "1600", "3200", "5000", "5000", "5000", "5000"]
    );
    assert!(p.started.is_none());
}

#[test]
fn a_refused_mint_fails_the_start_at_once() {
    let p = started(&Options::default(), Failing::MintRefused);
    assert_eq!(p.daemon.mint_tries, 1);
    assert_eq!(
        p.started,
        Some(Err(
            "upstream /materialize failed: 401 mint refused".to_string()
        ))
    );
    assert!(p.host.is_stopped());
    assert_eq!(p.host.next_deadline(), None);
}

#[test]
fn start_up_gives_up_when_the_next_try_would_begin_past_its_timeout() {
    let o = Options {
        startup_timeout_ms: 1_000,
        ..Options::default()
    };
    let mut p = started(&o, Failing::Mint);
    p.advance(5_000);
    // Tries at 0, 100, 300, 700; the next (at 1,500) would begin past 1,000.
    assert_eq!(p.daemon.mint_tries, 4);
    let Some(Err(reason)) = &p.started else {
        panic!("the start failed: {:?}", p.started);
    };
    assert!(
        reason.starts_with("upstream /materialize failed: 500 mint refused (gave up after 4 tries in 700 ms; the start-up timeout is 1000 ms"),
        "{reason}"
    );
    assert!(reason.contains("server.startup_timeout_ms"), "{reason}");
    assert!(p.host.is_stopped());
}

#[test]
fn a_start_up_timeout_of_zero_fails_at_the_first_failure() {
    let o = Options {
        startup_timeout_ms: 0,
        ..Options::default()
    };
    let p = started(&o, Failing::Mint);
    assert_eq!(p.daemon.mint_tries, 1);
    assert_eq!(
        p.started,
        Some(Err(
            "upstream /materialize failed: 500 mint refused".to_string()
        ))
    );
}

#[test]
fn the_epoch_claim_is_tried_again_while_the_authority_is_down() {
    let o = Options {
        authority: true,
        ..Options::default()
    };
    let mut p = started(&o, Failing::Authority);
    p.advance(1_000);
    assert!(p.started.is_none());
    assert_eq!(p.daemon.mint_tries, 0, "no lease before the epoch");
    let w = warnings(&p);
    assert!(
        w.iter().all(|t| t.starts_with(
            "start-up: the placement epoch claim (authority) failed: authority error \
             (retryable): authority down; retrying in"
        )),
        "{w:?}"
    );
    assert_eq!(w.len(), 4, "tries at 0, 100, 300, 700: {w:?}");
    p.authority.down = false;
    p.advance(2_000);
    assert_eq!(p.started, Some(Ok(())));
    assert_eq!(p.host.placement_epoch(), 1);
    assert!(p.host.is_live());
}

#[test]
fn a_shutdown_during_the_wait_stops_the_retries() {
    let mut p = started(&Options::default(), Failing::Mint);
    p.advance(150);
    let tries = p.daemon.mint_tries;
    p.control(ControlRequest::Close);
    assert!(p.host.is_stopped());
    assert!(matches!(&p.started, Some(Err(r)) if r.contains("stopped before")));
    p.advance(10_000);
    assert_eq!(p.daemon.mint_tries, tries);
}

#[test]
fn a_shutdown_while_start_up_waits_stops_the_host_and_answers_the_start() {
    let mut p = started(&Options::default(), Failing::Mint);
    p.advance(150);
    let tries = p.daemon.mint_tries;
    p.control(ControlRequest::Shutdown);
    p.advance(10_000);
    assert_eq!(p.daemon.mint_tries, tries);
    assert!(p.host.is_stopped());
    assert_eq!(p.stopped, Some(false));
    assert_eq!(
        p.started,
        Some(Err(
            "the room was stopped before its start-up finished".to_string()
        ))
    );
}
