//! Large upstream frames: a seq-0 snapshot past the websocket library's default frame
//! limit (16 MiB) is taken, and one past `upstream.max_frame_bytes` is refused with a
//! log line naming the option, not a silent reconnect loop.

mod common;

use common::*;
use rindle_room_core::TableSchema;
use serde_json::json;

/// A daemon serving `n` notes whose bodies make the snapshot about `n * 230` bytes.
async fn big_daemon(n: u64) -> FakeRindled {
    let tables = vec![TableSchema::new("note", &["id", "body", "owner"], &[0])];
    let body = "x".repeat(180);
    let rows = (0..n)
        .map(|i| ("note", json!([i, format!("{body}{i}"), "u1"])))
        .collect();
    FakeRindled::start(tables, rows).await
}

#[test]
fn a_snapshot_frame_of_25_mb_is_taken() {
    smol::block_on(async {
        let rindled = big_daemon(110_000).await;
        let logs = Logs::default();
        let server = builder(&rindled, &read_only(), &logs)
            .start()
            .await
            .expect("the room starts");
        within_secs(60, server.await_live()).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(
            1,
            &token(
                r#"{"table":"note","orderBy":[["id","desc"]],"limit":1}"#,
                "u1",
                600_000,
            ),
        ))
        .await;
        let snap = c.subscribed().await;
        assert_eq!(snap["batch"]["ops"][0]["row"][0], 109_999, "{snap}");
        server.shutdown().await;
    });
}

#[test]
fn a_frame_past_upstream_max_frame_bytes_is_refused_with_a_reason() {
    smol::block_on(async {
        let rindled = big_daemon(10_000).await;
        let logs = Logs::default();
        let o = Opts {
            extra_upstream: String::from("max_frame_bytes = 1000000\n"),
            ..read_only()
        };
        let server = builder(&rindled, &o, &logs)
            .start()
            .await
            .expect("the room starts");
        eventually("the refusal in the log", || {
            logs.count("upstream.max_frame_bytes") > 0
        })
        .await;
        let line = logs.dump();
        assert!(line.contains("the limit is 1000000"), "{line}");
        server.shutdown().await;
    });
}
