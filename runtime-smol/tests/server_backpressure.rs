//! The per-socket send budget: a stalled reader is cut (a 1008 close after what is in
//! flight) while the other subscribers keep receiving every frame.

mod common;

use common::ws::Next;
use common::*;
use serde_json::json;

#[test]
fn a_stalled_reader_is_terminated_while_others_keep_receiving() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = Opts {
            writes: false,
            send_budget: Some(256 * 1024),
            ..Opts::default()
        };
        let server = start_live(&rindled, &opts, &logs).await;
        let mut healthy = subscriber(&server, "h", "u1", false).await;
        let mut stalled = WsClient::connect(server.port()).await;
        let tok = token(NOTES, "u2", 600_000);
        stalled
            .send(&format!(
                r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
            ))
            .await;
        eventually_stats(&server, "\"subscriptions\":2").await;

        // The healthy client reads continuously in its own task.
        let (seqs_tx, seqs) = async_channel::unbounded::<u64>();
        let reader = smol::spawn(async move {
            loop {
                match healthy.next_within(10_000).await {
                    Next::Frame(v) if v["t"] == "nbatch" => {
                        let _ = seqs_tx.send(v["batch"]["seq"].as_u64().unwrap()).await;
                    }
                    Next::Frame(_) => {}
                    _ => return healthy,
                }
            }
        });

        let body = "x".repeat(4096);
        let mut id = 1000;
        let mut terminated_at = None;
        for round in 1..=600u64 {
            let ops: Vec<_> = (0..16)
                .map(|_| {
                    id += 1;
                    json!({"table":"note","op":"add","row":[id, body, "u2"]})
                })
                .collect();
            rindled.live(&ops);
            // Pace the upstream on the healthy reader: it never lags.
            assert_eq!(within(seqs.recv()).await.unwrap(), round);
            if terminated_at.is_none()
                && server
                    .metrics()
                    .budget_terminations
                    .load(std::sync::atomic::Ordering::Relaxed)
                    > 0
            {
                terminated_at = Some(round);
            }
            if terminated_at.is_some_and(|t| round >= t + 5) {
                break;
            }
        }
        let t = terminated_at.expect("the stalled reader was terminated");
        assert!(logs.count("send budget exceeded") == 1, "{}", logs.dump());
        eventually_stats(&server, "\"connections\":1,\"subscriptions\":1").await;
        // The stalled client finds its buffered frames, then the 1008 close naming the
        // budget — or, when even the close frame found the socket buffers full, a socket
        // dropped after the close grace.
        match stalled.closed().await {
            Next::Closed(Some((1008, reason))) => {
                assert!(reason.starts_with("send budget exceeded: "), "{reason}");
            }
            Next::Dropped => {}
            other => panic!("after {} frames: {other:?}", stalled.log.len()),
        }
        let last_seq = stalled
            .log
            .iter()
            .filter(|v| v["t"] == "nbatch")
            .filter_map(|v| v["batch"]["seq"].as_u64())
            .max()
            .unwrap_or(0);
        assert!(
            last_seq < t,
            "terminated at round {t}, yet it got seq {last_seq}"
        );
        eprintln!(
            "terminated at round {t} (~{} KiB sent); the stalled reader got seq {last_seq}",
            t * 64
        );
        drop(stalled);
        server.shutdown().await;
        let _ = reader.await;
    });
}

async fn eventually_stats(server: &rindle_room_smol::server::RoomServer, needle: &str) {
    let start = std::time::Instant::now();
    loop {
        let stats = server.stats().await.unwrap();
        if stats.contains(needle) {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "stats never showed {needle}: {stats}"
        );
        sleep(10).await;
    }
}

/// The process-wide cap (`server.max_unsent_bytes`): sockets that each stay under their
/// own budget, but together hold more than the cap, are cut largest first — and a
/// client that reads is never among them.
#[test]
fn past_the_process_unsent_cap_the_largest_backlogs_are_cut() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = Opts {
            writes: false,
            send_budget: Some(64 * 1024 * 1024),
            extra_server: String::from("max_unsent_bytes = 1048576\n"),
            ..Opts::default()
        };
        let server = start_live(&rindled, &opts, &logs).await;
        let mut healthy = subscriber(&server, "h", "u1", false).await;
        let mut stalled = Vec::new();
        for user in ["u2", "u3", "u4"] {
            let mut c = WsClient::connect(server.port()).await;
            let tok = token(NOTES, user, 600_000);
            c.send(&format!(
                r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
            ))
            .await;
            stalled.push(c);
        }
        eventually_stats(&server, "\"subscriptions\":4").await;
        let (seqs_tx, seqs) = async_channel::unbounded::<u64>();
        let reader = smol::spawn(async move {
            loop {
                match healthy.next_within(10_000).await {
                    Next::Frame(v) if v["t"] == "nbatch" => {
                        let _ = seqs_tx.send(v["batch"]["seq"].as_u64().unwrap()).await;
                    }
                    Next::Frame(_) => {}
                    _ => return healthy,
                }
            }
        });
        let body = "x".repeat(4096);
        let mut id = 1000;
        let mut cut_at = None;
        for round in 1..=2_000u64 {
            let ops: Vec<_> = (0..16)
                .map(|_| {
                    id += 1;
                    json!({"table":"note","op":"add","row":[id, body, "u2"]})
                })
                .collect();
            rindled.live(&ops);
            assert_eq!(within(seqs.recv()).await.unwrap(), round, "the reader lags");
            if cut_at.is_none() && logs.count("box backlog over") > 0 {
                cut_at = Some(round);
            }
            if cut_at.is_some_and(|t| round >= t + 5) {
                break;
            }
        }
        let t = cut_at.unwrap_or_else(|| panic!("nobody was cut: {}", logs.dump()));
        assert_eq!(logs.count("send budget exceeded"), 0, "{}", logs.dump());
        // The healthy reader is still subscribed; the cut sockets are gone.
        let stats = server.stats().await.unwrap();
        assert!(stats.contains("\"subscriptions\":"), "{stats}");
        // Those cut find their buffered frames, then the 1008 close naming the cap (or
        // a socket dropped when even the close found the buffers full); the others,
        // under the cap together, are still open.
        let mut closed = 0;
        for mut c in stalled.drain(..) {
            match c.closed().await {
                Next::Closed(Some((1008, reason))) => {
                    assert!(reason.starts_with("box backlog over: "), "{reason}");
                    closed += 1;
                }
                Next::Dropped | Next::Closed(None) => closed += 1,
                Next::Timeout => {}
                other => panic!("after {} frames: {other:?}", c.log.len()),
            }
        }
        assert!(closed >= 1, "no stalled socket was closed");
        assert_eq!(logs.count("box backlog over"), closed, "{}", logs.dump());
        eprintln!("first cut at round {t} (~{} KiB sent per socket)", t * 64);
        server.shutdown().await;
        let _ = reader.await;
    });
}
