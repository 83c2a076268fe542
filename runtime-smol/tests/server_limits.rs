//! Hostile clients against the limits of docs/security.md, over real sockets: oversized
//! and endless messages, websocket violations, sockets that never upgrade or never
//! speak, too many sockets, identities, subscriptions and materializations, and
//! snapshots larger than the send budget. Each test names the hole it closes.

mod common;

use common::raw::{self, Ending, RawWs};
use common::ws::Next;
use common::*;
use futures_lite::AsyncWriteExt;
use rindle_room_smol::server::{JournalOpenError, StartError};
use serde_json::json;

fn limits(server: &str, downstream: &str) -> Opts {
    Opts {
        extra_server: server.to_string(),
        extra_downstream: downstream.to_string(),
        ..Opts::default()
    }
}

/// Hole 1: an unfinished fragmented message may not grow past `max_frame_bytes`; nor
/// may one message. Both close with 1009 and a reason naming the limit.
#[test]
fn messages_and_fragments_past_max_frame_bytes_close_with_1009() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = limits("max_frame_bytes = 65536\n", "");
        let server = start_live(&rindled, &opts, &logs).await;

        // Fragments, never finished: 3 × 30 KiB, no init, no token.
        let mut c = RawWs::connect(server.port()).await;
        let chunk = vec![b'x'; 30 * 1024];
        c.send(&raw::frame(false, 0, raw::TEXT, &chunk, true)).await;
        for _ in 0..2 {
            c.send(&raw::frame(false, 0, raw::CONT, &chunk, true)).await;
        }
        let ending = c.ending(&mut Vec::new()).await;
        let Ending::Closed(1009, reason) = ending else {
            panic!("expected 1009, got {ending:?}");
        };
        assert!(
            reason.contains("65536") && reason.contains("max_frame_bytes"),
            "{reason}"
        );
        assert!(c.eof().await, "the socket goes after the close");

        // One message over the limit.
        let mut c = RawWs::connect(server.port()).await;
        c.send(&raw::text(&"y".repeat(70_000))).await;
        let ending = c.ending(&mut Vec::new()).await;
        assert!(matches!(ending, Ending::Closed(1009, _)), "{ending:?}");

        // A frame at the limit is fine.
        let mut ok = WsClient::connect(server.port()).await;
        ok.send(&format!(
            r#"{{"t":"init","clientID":"c1","pad":"{}"}}"#,
            "z".repeat(60_000)
        ))
        .await;
        ok.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        ok.subscribed().await;
        eventually("the refused sockets to go", || {
            smol::block_on(server.stats())
                .unwrap()
                .contains("\"connections\":1")
        })
        .await;
        drop(ok);
        server.shutdown().await;
    });
}

/// Hole 6: invalid UTF-8 and raw protocol violations end with a close frame that says
/// why (1007, 1002), never a bare TCP close.
#[test]
fn protocol_violations_close_with_a_code_and_a_reason() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let cases: Vec<(&str, Vec<u8>, u16)> = vec![
            (
                "invalid UTF-8",
                raw::frame(true, 0, raw::TEXT, &[0x7B, 0xFF, 0xFE, 0x7D], true),
                1007,
            ),
            (
                "reserved bits",
                raw::frame(true, 4, raw::TEXT, b"{}", true),
                1002,
            ),
            (
                "an unmasked client frame",
                raw::frame(true, 0, raw::TEXT, b"{}", false),
                1002,
            ),
            (
                "a reserved opcode",
                raw::frame(true, 0, 0x3, b"{}", true),
                1002,
            ),
            (
                "a fragmented ping",
                raw::frame(false, 0, raw::PING, b"p", true),
                1002,
            ),
            (
                "a ping over 125 bytes",
                raw::frame(true, 0, raw::PING, &[0; 126], true),
                1002,
            ),
            (
                "a continuation with nothing to continue",
                raw::frame(true, 0, raw::CONT, b"{}", true),
                1002,
            ),
            (
                "a new message inside a fragmented one",
                [
                    raw::frame(false, 0, raw::TEXT, b"{", true),
                    raw::frame(true, 0, raw::TEXT, b"{}", true),
                ]
                .concat(),
                1002,
            ),
            (
                "a reserved control opcode",
                raw::frame(true, 0, 0xB, b"", true),
                1002,
            ),
        ];
        for (what, bytes, code) in cases {
            let mut c = RawWs::connect(server.port()).await;
            c.send(&bytes).await;
            let ending = c.ending(&mut Vec::new()).await;
            match ending {
                Ending::Closed(got, reason) => {
                    assert_eq!(got, code, "{what}: {reason}");
                    assert!(!reason.is_empty(), "{what}: a reason");
                }
                other => panic!("{what}: expected a close frame, got {other:?}"),
            }
        }
        let metrics = control(&server, "GET", "/metrics", "").await.1;
        assert!(
            metrics.contains("rindle_room_refused_total{reason=\"protocol\"} 9\n"),
            "{metrics}"
        );
        server.shutdown().await;
    });
}

/// Hole 2: a connection has one `init` identity; a second, different one is refused
/// with an error frame and a 1008 close.
#[test]
fn a_second_init_identity_is_refused() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &Opts::default(), &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await; // the same again: fine
        c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
            .await;
        c.subscribed().await;
        c.send(r#"{"t":"init","clientID":"c2"}"#).await;
        let err = c.expect_t("error").await;
        let message = err["message"].as_str().unwrap();
        assert!(
            message.contains("one init identity per connection"),
            "{message}"
        );
        match c.closed().await {
            Next::Closed(Some((1008, reason))) => assert_eq!(reason, message),
            other => panic!("{other:?}"),
        }
        server.shutdown().await;
    });
}

/// Hole 2: subscriptions per connection are capped (lmid ones count); past the cap an
/// error frame, then 1008.
#[test]
fn subscriptions_past_the_per_connection_cap_are_refused() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = limits("", "max_subscriptions_per_conn = 3\n");
        let server = start_live(&rindled, &opts, &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        for qid in 0..3 {
            c.send(&format!(
                r#"{{"t":"subscribe","queryId":{qid},"name":"_rindle/clientLmid"}}"#
            ))
            .await;
            c.subscribed().await;
        }
        // Re-subscribing a held queryId is not a new subscription.
        c.send(r#"{"t":"subscribe","queryId":2,"name":"_rindle/clientLmid"}"#)
            .await;
        c.subscribed().await;
        c.send(&subscribe(7, &token(NOTES, "u1", 60_000))).await;
        let err = c.expect_t("error").await;
        assert_eq!(err["queryId"], 7);
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("max_subscriptions_per_conn"),
            "{err}"
        );
        assert!(matches!(c.closed().await, Next::Closed(Some((1008, _)))));
        eventually("the subscriptions to go", || {
            smol::block_on(server.stats())
                .unwrap()
                .contains("\"subscriptions\":0")
        })
        .await;
        server.shutdown().await;
    });
}

/// Hole 2: materializations are capped room-wide; at the cap idle ones are reclaimed
/// oldest first, and when none is idle a subscribe that needs a new one is refused.
#[test]
fn materializations_are_capped_room_wide() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = limits("", "max_materializations = 2\n");
        let server = start_live(&rindled, &opts, &logs).await;
        let port = server.port();
        let mut a = lmid_client(port, "a").await;
        a.subscribed().await;
        let mut b = lmid_client(port, "b").await;
        b.subscribed().await;
        let mut c = lmid_client(port, "c").await;
        let refused = c.expect_t("queryError").await;
        let message = refused["message"].as_str().unwrap();
        assert!(message.contains("max_materializations"), "{message}");
        // The socket stays; once a query goes idle, it is reclaimed for the new one.
        drop(a);
        eventually("a's query to go idle", || {
            smol::block_on(server.stats())
                .unwrap()
                .contains("\"subscriptions\":1")
        })
        .await;
        c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
            .await;
        c.subscribed().await;
        let stats = server.stats().await.unwrap();
        assert!(stats.contains("\"materializations\":2"), "{stats}");
        drop((b, c));
        server.shutdown().await;
    });
}

/// Serves the notes with the `[downstream]` lines `downstream`, subscribes them, then
/// `ast`: returns the `queryError` message `ast` gets, after checking that the socket
/// still serves a subscribe.
async fn refusal_of(downstream: &str, ast: &str) -> String {
    let rindled = FakeRindled::notes().await;
    let logs = Logs::default();
    let server = start_live(&rindled, &limits("", downstream), &logs).await;
    let mut c = WsClient::connect(server.port()).await;
    c.send(&lease_subscribe(1, NOTES)).await;
    c.subscribed().await;
    c.send(&lease_subscribe(2, ast)).await;
    let refused = c.expect_t("queryError").await;
    assert_eq!(refused["queryId"], 2);
    c.send(&lease_subscribe(3, NOTES)).await;
    c.subscribed().await;
    drop(c);
    server.shutdown().await;
    refused["message"].as_str().unwrap().to_string()
}

/// The bytes a room's queries hold are capped (`downstream.max_query_bytes`): a query
/// whose `IN` set and text would pass it is refused, and the socket goes on serving.
#[test]
fn queries_past_max_query_bytes_are_refused_over_the_socket() {
    let big = owners_in((0..500).map(|i| format!("owner-{i}")));
    let message = smol::block_on(refusal_of("max_query_bytes = 4096\n", &big));
    assert!(
        message.contains("the limit is 4096 (downstream.max_query_bytes)"),
        "{message}"
    );
}

/// `downstream.max_room_bytes` reaches a single room: a subscribe that would leave the
/// room past it is taken back with a `queryError`, and the socket goes on serving.
#[test]
fn a_single_room_takes_a_memory_budget_from_downstream_max_room_bytes() {
    // Room for the notes and a query or two, not for a query holding 20,000 texts.
    let big = owners_in((0..20_000).map(|i| format!("owner-{i:020}")));
    let message = smol::block_on(refusal_of("max_room_bytes = 200000\n", &big));
    assert!(
        message.starts_with("room memory budget exceeded: ") && message.ends_with("budget 200000"),
        "{message}"
    );
}

/// The rows a room's queries hold are capped (`downstream.max_held_rows`): a query that
/// would take the room past it is taken back with a `queryError`.
#[test]
fn a_query_past_max_held_rows_is_refused_over_the_socket() {
    // Three notes: one query over them fits, two do not.
    let other = r#"{"table":"note","where":{"type":"simple","op":"!=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":-1}}}"#;
    let message = smol::block_on(refusal_of("max_held_rows = 4\n", other));
    assert!(
        message.contains("would hold 6 rows, the limit is 4 (downstream.max_held_rows)"),
        "{message}"
    );
}

/// A subscribe frame for `ast` with a lease token of subject `u1`.
fn lease_subscribe(qid: u64, ast: &str) -> String {
    format!(
        r#"{{"t":"subscribe","queryId":{qid},"leaseToken":"{}"}}"#,
        token(ast, "u1", 600_000)
    )
}

/// The notes whose owner is one of `owners` (an `IN` list as long as the test needs).
fn owners_in(owners: impl Iterator<Item = String>) -> String {
    json!({
        "table": "note",
        "where": {"type": "simple", "op": "IN",
                  "left": {"type": "column", "name": "owner"},
                  "right": {"type": "literal", "value": owners.collect::<Vec<_>>()}},
    })
    .to_string()
}

/// A client that inits `client` and subscribes its lmid query (the answer unread).
async fn lmid_client(port: u16, client: &str) -> WsClient {
    let mut ws = WsClient::connect(port).await;
    ws.send(&format!(r#"{{"t":"init","clientID":"{client}"}}"#))
        .await;
    ws.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
        .await;
    ws
}

/// Hole 3: a socket that upgrades but never sends `init` or `subscribe` is closed after
/// `first_frame_timeout_ms` with a close frame saying so.
#[test]
fn a_silent_socket_is_closed_after_the_first_frame_timeout() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = limits("", "first_frame_timeout_ms = 200\n");
        let server = start_live(&rindled, &opts, &logs).await;
        let mut silent = WsClient::connect(server.port()).await;
        let mut talker = WsClient::connect(server.port()).await;
        talker.send(r#"{"t":"init","clientID":"c1"}"#).await;
        let err = silent.expect_t("error").await;
        assert!(err["message"]
            .as_str()
            .unwrap()
            .contains("first_frame_timeout_ms"));
        match silent.closed().await {
            Next::Closed(Some((1008, reason))) => {
                assert!(
                    reason.starts_with("no init or subscribe within 200 ms"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        talker.quiet(400).await; // identified: kept
        server.shutdown().await;
    });
}

/// Hole 3: TCP connections that never complete the upgrade — silent, or stuck halfway
/// through the request — are dropped after `handshake_timeout_ms`.
#[test]
fn sockets_that_never_upgrade_are_dropped() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = limits("handshake_timeout_ms = 200\n", "");
        let server = start_live(&rindled, &opts, &logs).await;
        let mut idle = smol::net::TcpStream::connect(("127.0.0.1", server.port()))
            .await
            .unwrap();
        let mut partial = smol::net::TcpStream::connect(("127.0.0.1", server.port()))
            .await
            .unwrap();
        partial
            .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")
            .await
            .unwrap();
        for s in [&mut idle, &mut partial] {
            let mut buf = [0u8; 64];
            let n = within(futures_lite::AsyncReadExt::read(s, &mut buf))
                .await
                .unwrap_or(0);
            assert_eq!(n, 0, "closed without an answer");
        }
        let metrics = control(&server, "GET", "/metrics", "").await.1;
        assert!(
            metrics.contains("rindle_room_refused_total{reason=\"handshake_timeout\"} 2\n"),
            "{metrics}"
        );
        server.shutdown().await;
    });
}

/// Hole 3: past `max_connections`, an upgrade is answered with HTTP 503 (and the box
/// keeps serving the sockets it has, and new ones once there is room).
#[test]
fn upgrades_past_max_connections_get_503() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = limits("max_connections = 2\n", "");
        let server = start_live(&rindled, &opts, &logs).await;
        let mut a = WsClient::connect(server.port()).await;
        let b = RawWs::connect(server.port()).await;
        let (status, _refused) = RawWs::try_upgrade(server.port()).await;
        assert_eq!(status, 503);
        a.send(r#"{"t":"init","clientID":"c1"}"#).await;
        a.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        a.subscribed().await;
        drop(b);
        let mut admitted = false;
        for _ in 0..100 {
            let (status, _ws) = RawWs::try_upgrade(server.port()).await;
            if status == 101 {
                admitted = true;
                break;
            }
            sleep(20).await;
        }
        assert!(admitted, "a slot freed by a closed socket is reused");
        server.shutdown().await;
    });
}

fn big_notes(body_bytes: usize) -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("note", json!([1, "one", "u1"])),
        ("note", json!([2, "x".repeat(body_bytes), "u1"])),
    ]
}

async fn big_rindled(body_bytes: usize) -> FakeRindled {
    use rindle_room_core::TableSchema;
    let tables = vec![
        TableSchema::new("note", &["id", "body", "owner"], &[0]),
        TableSchema::new("tally", &["id", "mid"], &[0]),
    ];
    FakeRindled::start(tables, big_notes(body_bytes)).await
}

/// Hole 5: a snapshot larger than the whole send budget is served (the budget bounds
/// the backlog of a socket that does not read, not one frame), and live frames follow.
#[test]
fn a_snapshot_larger_than_the_send_budget_is_served() {
    smol::block_on(async {
        let rindled = big_rindled(300_000).await;
        let logs = Logs::default();
        let opts = Opts {
            writes: false,
            send_budget: Some(64 * 1024),
            ..Opts::default()
        };
        let server = start_live(&rindled, &opts, &logs).await;
        for _ in 0..2 {
            let mut c = WsClient::connect(server.port()).await;
            c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
            let snap = c.subscribed().await;
            assert_eq!(snap["batch"]["ops"].as_array().unwrap().len(), 2);
            rindled.live(&[json!({"table":"note","op":"add","row":[5, "five", "u1"]})]);
            let live = c.until("the live add", |v| v["t"] == "nbatch").await;
            assert_eq!(live["batch"]["ops"][0]["op"], "add");
            assert_eq!(live["batch"]["ops"][0]["row"][0], 5);
            rindled.live(&[json!({"table":"note","op":"remove","row":[5, "five", "u1"]})]);
            let live = c.until("the live remove", |v| v["t"] == "nbatch").await;
            assert_eq!(live["batch"]["ops"][0]["op"], "remove");
        }
        assert_eq!(logs.count("send budget exceeded"), 0, "{}", logs.dump());
        server.shutdown().await;
    });
}

/// Hole 5: a snapshot over `max_snapshot_bytes` is a `queryError` naming the size and
/// the limit; the socket stays open for the queries that fit.
#[test]
fn a_snapshot_over_max_snapshot_bytes_is_a_query_error_and_the_socket_stays() {
    smol::block_on(async {
        let rindled = big_rindled(200_000).await;
        let logs = Logs::default();
        let opts = Opts {
            writes: false,
            extra_downstream: String::from("max_snapshot_bytes = 100000\n"),
            ..Opts::default()
        };
        let server = start_live(&rindled, &opts, &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        let err = c.expect_t("queryError").await;
        let message = err["message"].as_str().unwrap();
        assert!(message.starts_with("snapshot too large: 200"), "{message}");
        assert!(message.contains("the limit is 100000 (downstream.max_snapshot_bytes)"));
        let one = r#"{"table":"note","where":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":1}}}"#;
        c.send(&subscribe(2, &token(one, "u1", 60_000))).await;
        let snap = c.subscribed().await;
        assert_eq!(snap["batch"]["ops"][0]["row"][0], 1);
        let stats = server.stats().await.unwrap();
        assert!(stats.contains("\"subscriptions\":1"), "{stats}");
        server.shutdown().await;
    });
}

/// Hole 4 at the server: a journal with damage in the middle refuses to start, naming
/// the file and the offset, and the file is left as it was.
#[test]
fn a_corrupt_journal_refuses_to_start_and_is_left_alone() {
    use rindle_room_smol::journal::file::FileJournal;
    use rindle_room_smol::journal::{Journal, JournalEntry, Outcome};
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let dir = std::env::temp_dir().join(format!("rindle-room-corrupt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("room.journal");
        let j = FileJournal::open(&path).unwrap();
        let mut second = 0;
        for mid in 1..=3 {
            if mid == 2 {
                second = j.len_bytes().unwrap();
            }
            j.append(&[JournalEntry {
                client_id: "c1".into(),
                mid,
                name: "addNote".into(),
                args: format!(r#"{{"id":{}}}"#, 100 + mid),
                sub: "u1".into(),
                outcome: Outcome::Applied,
            }])
            .unwrap();
        }
        drop(j);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[second as usize + 20] ^= 0x04;
        std::fs::write(&path, &bytes).unwrap();
        let logs = Logs::default();
        let opts = Opts {
            journal_file: Some(path.clone()),
            ..Opts::default()
        };
        let err = builder(&rindled, &opts, &logs)
            .start()
            .await
            .expect_err("a corrupt journal refuses to start");
        assert!(
            matches!(&err, StartError::Journal(JournalOpenError::Open { .. })),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(err.contains("is corrupt"), "{err}");
        assert!(err.contains(&format!("byte {second}")), "{err}");
        assert!(err.contains("followed by 1 intact record(s)"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Frames held until the room is live are capped per connection: subscribes by
/// `max_subscriptions_per_conn`, `pushMutation`s by 1,024; past either, an error frame
/// and 1008 — and a held connection that closes takes its held frames with it.
#[test]
fn frames_held_before_the_room_is_live_are_capped() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        rindled.hold();
        let logs = Logs::default();
        let opts = limits("", "max_subscriptions_per_conn = 2\n");
        let server = builder(&rindled, &opts, &logs).start().await.unwrap();
        let mut subs = WsClient::connect(server.port()).await;
        for qid in 1..=3 {
            subs.send(&subscribe(qid, &token(NOTES, "u1", 60_000)))
                .await;
        }
        let err = subs.expect_t("error").await;
        assert_eq!(err["queryId"], 3);
        assert!(matches!(subs.closed().await, Next::Closed(Some((1008, _)))));

        let mut pushes = WsClient::connect(server.port()).await;
        pushes.send(r#"{"t":"init","clientID":"c1"}"#).await;
        for mid in 1..=1_025 {
            pushes
                .send(&format!(
                    r#"{{"t":"pushMutation","envelope":{{"clientID":"c1","mid":{mid},"name":"addNote","args":{{}}}}}}"#
                ))
                .await;
        }
        let err = pushes.expect_t("error").await;
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("the limit is 1024"),
            "{err}"
        );
        assert!(matches!(
            pushes.closed().await,
            Next::Closed(Some((1008, _)))
        ));
        rindled.release();
        within(server.await_live()).await;
        server.shutdown().await;
    });
}
