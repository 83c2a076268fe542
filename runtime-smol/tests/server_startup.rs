//! Start-up with its dependencies not up yet: the first lease (rindled) and the epoch
//! claim (the authority) are retried with a logged backoff until
//! `server.startup_timeout_ms`, a refusal fails at once, and a start-up that fails — or a
//! room that never acknowledged a mutation — leaves no journal file behind.

mod common;

use std::time::{Duration, Instant};

use common::*;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("rindle-room-startup-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn opts(timeout_ms: u64) -> Opts {
    Opts {
        extra_server: format!("startup_timeout_ms = {timeout_ms}\n"),
        ..Opts::default()
    }
}

#[test]
fn the_first_lease_is_retried_until_rindled_answers() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        rindled.state.lock().unwrap().fail_mint = true;
        let logs = Logs::default();
        let starting = smol::spawn(builder(&rindled, &opts(30_000), &logs).start());
        eventually("three failed mints", || {
            rindled.state.lock().unwrap().materialize_bodies.len() >= 3
        })
        .await;
        rindled.state.lock().unwrap().fail_mint = false;
        let server = within(starting)
            .await
            .expect("the room starts once rindled mints");
        within(server.await_live()).await;
        assert!(
            logs.count("start-up: the upstream lease (rindled) failed: ") >= 2,
            "{}",
            logs.dump()
        );
        assert!(logs.count("retrying in 100 ms") == 1, "{}", logs.dump());
        assert!(logs.count("retrying in 200 ms") == 1, "{}", logs.dump());
        assert_eq!(
            logs.count("start-up: the upstream lease (rindled) succeeded after"),
            1
        );
        server.shutdown().await;
    });
}

#[test]
fn start_up_gives_up_after_the_timeout_and_leaves_no_journal() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        rindled.state.lock().unwrap().fail_mint = true;
        let dir = scratch("gives-up");
        let journal = dir.join("journal");
        let o = Opts {
            journal_file: Some(journal.clone()),
            ..opts(500)
        };
        let logs = Logs::default();
        let began = Instant::now();
        let err = within(builder(&rindled, &o, &logs).start())
            .await
            .expect_err("start-up fails")
            .to_string();
        assert!(began.elapsed() >= Duration::from_millis(300), "it retried");
        assert!(
            err.contains("gave up after") && err.contains("the start-up timeout is 500 ms"),
            "{err}"
        );
        assert!(!dir.exists(), "nothing created: {}", journal.display());
    });
}

#[test]
fn a_refused_mint_fails_at_once() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        rindled.state.lock().unwrap().refuse_mint = Some(403);
        let logs = Logs::default();
        let err = within(builder(&rindled, &opts(30_000), &logs).start())
            .await
            .expect_err("a 403 is not retried")
            .to_string();
        assert_eq!(rindled.state.lock().unwrap().materialize_bodies.len(), 1);
        assert!(!err.contains("gave up"), "{err}");
        assert_eq!(logs.count("retrying in"), 0, "{}", logs.dump());
    });
}

#[test]
fn with_a_zero_timeout_start_up_fails_at_the_first_failure() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        rindled.state.lock().unwrap().fail_mint = true;
        let logs = Logs::default();
        within(builder(&rindled, &opts(0), &logs).start())
            .await
            .expect_err("no retries");
        assert_eq!(rindled.state.lock().unwrap().materialize_bodies.len(), 1);
    });
}

#[test]
fn the_epoch_claim_is_retried_until_the_authority_answers() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let authority = FakeAuthority::start().await;
        authority.set_down(true);
        let dir = scratch("claim");
        let journal = dir.join("journal");
        let o = Opts {
            authority: Some(authority.base.clone()),
            journal_file: Some(journal.clone()),
            ..opts(30_000)
        };
        let logs = Logs::default();
        let starting = smol::spawn(builder(&rindled, &o, &logs).start());
        eventually("two failed claims", || {
            logs.count("start-up: the placement epoch claim (authority) failed") >= 2
        })
        .await;
        authority.set_down(false);
        let server = within(starting)
            .await
            .expect("the room starts once the authority answers");
        within(server.await_live()).await;
        assert!(logs.count("placement epoch 1") >= 1, "{}", logs.dump());
        // Live, and still nothing written: no file yet.
        assert!(!journal.exists(), "no journal before a mutation");
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(
            r#"{"t":"pushMutation","envelope":{"clientID":"c1","mid":1,"name":"addNote","args":{"id":9,"body":"nine"}}}"#,
        )
        .await;
        c.until("the ack", |v| v["t"] == "nbatch" && v["queryId"] == 0)
            .await;
        assert!(
            journal.exists(),
            "the first acknowledged mutation creates the journal"
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
