//! The write path over real sockets: the mutation round trip with its lmid ack and the
//! author holdback, non-applied outcomes before the covering lmid, the push
//! preconditions, the v2 gate and scope skew, a failing journal, and a restart that
//! replays a file journal.

mod common;

use std::sync::Arc;

use common::ws::Next;
use common::*;
use rindle_room_smol::journal::memory::MemoryJournal;
use rindle_room_smol::journal::Journal;
use serde_json::{json, Value};

fn push(client: &str, mid: impl std::fmt::Display, name: &str, args: &str) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{mid},"name":"{name}","args":{args}}}}}"#
    )
}

fn is_lmid(v: &Value) -> bool {
    v["t"] == "nbatch" && v["queryId"] == 0
}

#[test]
fn a_mutation_round_trip_acks_through_the_lmid_and_holds_the_author_back() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let journal = MemoryJournal::new();
        let server = builder(&rindled, &Opts::default(), &logs)
            .journal(Arc::new(journal.clone()))
            .start()
            .await
            .unwrap();
        within(server.await_live()).await;
        let mut author = subscriber(&server, "c1", "u1", true).await;
        let mut observer = subscriber(&server, "c2", "u2", false).await;

        author
            .send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        let data = author.expect_t("nbatch").await;
        assert_eq!(data["queryId"], 1);
        assert_eq!(
            data["batch"]["ops"],
            json!([{"table":"note","op":"add","row":[10,"ten","u1"]}])
        );
        let x = data["batch"]["cv"].as_i64().unwrap();
        // Held below the un-acked mutation's apply cv.
        assert_eq!(author.expect_t("progress").await["frame"]["cvMin"], x - 1);
        // Everyone else releases at the head.
        let seen = observer.expect_t("nbatch").await;
        assert_eq!(seen["batch"]["cv"], x);
        assert_eq!(observer.expect_t("progress").await["frame"]["cvMin"], x);
        // The ack: the lmid row advances in a later commit, then the release.
        let lmid = author.expect_t("nbatch").await;
        assert!(is_lmid(&lmid), "{lmid}");
        assert_eq!(
            lmid["batch"]["ops"],
            json!([{"table":"_rindle_client_mutations","op":"add","row":["c1",1]}])
        );
        assert_eq!(lmid["batch"]["cv"], x + 1);
        // One progress per drain: the lmid frame's carries the author's release point.
        assert_eq!(author.expect_t("progress").await["frame"]["cvMin"], x + 1);
        author.quiet(300).await;
        assert_eq!(journal.entry_count(), 1);
        let entry = &journal.replay().unwrap()[0];
        assert_eq!(
            (entry.sub.as_str(), entry.args.as_str()),
            ("u1", r#"{"id":10,"body":"ten"}"#)
        );

        // A re-sent applied mid is absorbed silently.
        author
            .send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        author.quiet(300).await;
        assert_eq!(journal.entry_count(), 1);
        drop((author, observer));
        server.shutdown().await;
    });
}

#[test]
fn an_ack_raises_the_release_point_on_the_authors_first_subscribed_connection() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &Opts::default(), &logs).await;
        // The first connection (the lowest subscription key) is another client's, `c3`
        // (a connection keeps the clientID of its one `init`): not the author's.
        let mut renamed = subscriber(&server, "c3", "u1", false).await;
        let mut author = subscriber(&server, "c1", "u1", true).await;
        let mut twin = subscriber(&server, "c1", "u1", false).await;

        author
            .send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        let x = author.expect_t("nbatch").await["batch"]["cv"]
            .as_i64()
            .unwrap();
        // Both `c1` connections are held below the un-acked mutation; `c3` is not.
        assert_eq!(author.expect_t("progress").await["frame"]["cvMin"], x - 1);
        twin.expect_t("nbatch").await;
        assert_eq!(twin.expect_t("progress").await["frame"]["cvMin"], x - 1);
        renamed.expect_t("nbatch").await;
        assert_eq!(renamed.expect_t("progress").await["frame"]["cvMin"], x);
        // The ack: the lmid frame and its progress (which carries the author's release
        // point: one progress per drain), on the `c1` connection holding the first
        // subscription only.
        assert!(is_lmid(&author.expect_t("nbatch").await));
        assert_eq!(author.expect_t("progress").await["frame"]["cvMin"], x + 1);
        author.quiet(300).await;
        twin.quiet(300).await;
        renamed.quiet(0).await;
        drop((renamed, author, twin));
        server.shutdown().await;
    });
}

#[test]
fn non_applied_outcomes_arrive_before_the_lmid_that_covers_them() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &Opts::default(), &logs).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(&push("c1", 1, "nope", "{}")).await;
        c.send(&push("c1", 2, "refuse", "{}")).await;
        c.send(&push("c1", 3, "needsQuery", r#"{"b":1.5,"a":[1,2]}"#))
            .await;
        c.send(&push("c1", 4, "panics", "{}")).await;
        let expected = [
            json!({"t":"mutationOutcome","mid":1,"kind":"rejected","reason":"unknown mutator `nope`"}),
            json!({"t":"mutationOutcome","mid":2,"kind":"rejected","reason":"not allowed"}),
            json!({"t":"mutationOutcome","mid":3,"kind":"deopt","reason":"environment",
                   "name":"needsQuery","args":{"b":1.5,"a":[1,2]}}),
            json!({"t":"mutationOutcome","mid":4,"kind":"rejected","reason":"mutator `panics` panicked: boom"}),
        ];
        let mut outcomes = vec![];
        loop {
            let v = c.next().await;
            if is_lmid(&v) {
                let row = &v["batch"]["ops"][0];
                let lmid = if row["op"] == "add" {
                    &row["row"]
                } else {
                    &row["new"]
                };
                if lmid[1] == 4 {
                    break;
                }
            } else if v["t"] == "mutationOutcome" {
                outcomes.push(v);
            }
        }
        assert_eq!(
            outcomes, expected,
            "every outcome precedes the lmid that covers it"
        );

        // A re-sent non-applied mid is answered with its recorded outcome.
        c.send(&push("c1", 3, "needsQuery", "{}")).await;
        let again = c
            .until("the re-answer", |v| v["t"] == "mutationOutcome")
            .await;
        assert_eq!(again, expected[2]);
        // A gap and a non-integer mid are errors on the connection.
        c.send(&push("c1", 9, "addNote", "{}")).await;
        let e = c.until("the gap", |v| v["t"] == "error").await;
        assert_eq!(
            e,
            json!({"t":"error","message":"mutation gap for c1: expected mid 5, got 9"})
        );
        c.send(&push("c1", 1.5, "addNote", "{}")).await;
        let e = c.until("the bad mid", |v| v["t"] == "error").await;
        assert_eq!(e["message"], "mid: not a wire-safe counter: 1.5");
        let (_, metrics) = control(&server, "GET", "/metrics", "").await;
        assert!(
            metrics.contains("rindle_room_mutations_total{outcome=\"rejected\"} 3\n"),
            "{metrics}"
        );
        assert!(
            metrics.contains("rindle_room_mutations_total{outcome=\"deopt\"} 1\n"),
            "{metrics}"
        );
        assert!(
            metrics.contains("rindle_room_journal_append_seconds_count "),
            "{metrics}"
        );
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn pushes_need_init_a_matching_client_and_a_subject() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &Opts::default(), &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#)
            .await;
        assert_eq!(
            c.expect_t("queryError").await["message"],
            "subscribe lmid query before init"
        );
        c.send(&push("c1", 1, "addNote", "{}")).await;
        assert_eq!(
            c.expect_t("error").await["message"],
            "init with a clientID before pushMutation"
        );
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        c.send(&push("c2", 1, "addNote", "{}")).await;
        assert_eq!(
            c.expect_t("error").await["message"],
            "envelope clientID does not match the connection identity"
        );
        c.send(&push("c1", 1, "addNote", "{}")).await;
        assert_eq!(
            c.expect_t("error").await["message"],
            "pushMutation requires an authenticated subject — subscribe with a lease token first"
        );
        drop(c);
        server.shutdown().await;
    });
}

const SCOPES: &str = r#"[{"table":"note","writable":{"kind":"predicate","where":{"type":"simple","op":"=","left":{"type":"column","name":"owner"},"right":{"type":"literal","value":"u1"}},"joinKeyCols":[]}}]"#;

#[test]
fn the_v2_gate_deopts_out_of_scope_writes_and_scope_skew_is_logged_once() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let opts = Opts {
            scopes: Some(SCOPES.into()),
            ..Opts::default()
        };
        let server = start_live(&rindled, &opts, &logs).await;
        let mut c = subscriber(&server, "c2", "u2", true).await;
        c.send(&push("c2", 1, "addNote", r#"{"id":20,"body":"x"}"#))
            .await;
        let o = c.until("the deopt", |v| v["t"] == "mutationOutcome").await;
        assert_eq!(
            o,
            json!({"t":"mutationOutcome","mid":1,"kind":"deopt","reason":"writeOutOfScope",
                   "name":"addNote","args":{"id":20,"body":"x"}})
        );
        let mut ok = subscriber(&server, "c1", "u1", false).await;
        ok.send(&push("c1", 1, "addNote", r#"{"id":21,"body":"y"}"#))
            .await;
        let b = ok.expect_t("nbatch").await;
        assert_eq!(b["batch"]["ops"][0]["row"], json!([21, "y", "u1"]));

        // Leases stamped with other scopes: logged once per distinct pair.
        let ast = rindle_room_core::json::tree::JsValue::parse(NOTES).unwrap();
        for _ in 0..2 {
            let tok = rindle_room_core::token::mint(&rindle_room_core::token::MintOptions {
                doc: DOC,
                ast: Some(&ast),
                sub: "u1",
                kid: KID,
                key: KEY,
                ttl_ms: 60_000.0,
                now_ms: 1e13,
                scopes_hash: Some("deadbeef"),
            })
            .unwrap();
            ok.send(&format!(
                r#"{{"t":"subscribe","queryId":5,"leaseToken":"{tok}"}}"#
            ))
            .await;
            ok.until("the hello", |v| v["t"] == "nhello").await;
        }
        assert_eq!(logs.count("scope skew:"), 1, "{}", logs.dump());
        drop((c, ok));
        server.shutdown().await;
    });
}

#[test]
fn a_failing_journal_kills_the_incarnation_and_nothing_is_acked() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let journal = MemoryJournal::new();
        let server = builder(&rindled, &Opts::default(), &logs)
            .journal(Arc::new(journal.clone()))
            .start()
            .await
            .unwrap();
        within(server.await_live()).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        journal.set_failing(true);
        c.send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        // Fan-out is not gated on durability…
        assert_eq!(c.expect_t("nbatch").await["queryId"], 1);
        // …but an ack that might not survive is never sent: the incarnation dies.
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((1012, "room re-subscribing".into())))
        );
        assert!(
            c.log.iter().all(|v| !is_lmid(v)),
            "no lmid frame: {:?}",
            c.log
        );
        journal.set_failing(false);
        eventually("the re-subscribe", || rindled.subscribes() == 2).await;
        within(server.await_live()).await;
        // The client re-sends its un-acked mid: applied against the fresh base, acked.
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        let lmid = c.until("the ack", is_lmid).await;
        assert_eq!(lmid["batch"]["ops"][0]["row"], json!(["c1", 1]));
        assert!(logs.count("journal append failed") >= 1);
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn a_restart_replays_the_file_journal_exactly_once() {
    smol::block_on(async {
        let dir = common::fresh_dir("test");
        let opts = Opts {
            journal_file: Some(dir.join("journal")),
            ..Opts::default()
        };
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &opts, &logs).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        c.send(&push("c1", 2, "setBody", r#"{"id":1,"body":"uno"}"#))
            .await;
        c.send(&push("c1", 3, "refuse", "{}")).await;
        c.send(&push("c1", 4, "addNote", r#"{"id":11,"body":"eleven"}"#))
            .await;
        c.until("the ack of mid 4", |v| {
            is_lmid(v) && {
                let op = &v["batch"]["ops"][0];
                (if op["op"] == "add" {
                    &op["row"]
                } else {
                    &op["new"]
                })[1]
                    == 4
            }
        })
        .await;
        drop(c);
        server.shutdown().await;

        // A new process (same journal): the replay re-invokes the mutators on the base.
        let logs2 = Logs::default();
        let server = start_live(&rindled, &opts, &logs2).await;
        let mut c = subscriber_snapshot(&server, "c1", "u1").await;
        let rows: Vec<Value> = c.1["batch"]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["row"].clone())
            .collect();
        assert_eq!(
            rows,
            vec![
                json!([1, "uno", "u1"]),
                json!([2, "two", "u1"]),
                json!([3, "three", "u2"]),
                json!([10, "ten", "u1"]),
                json!([11, "eleven", "u1"]),
            ]
        );
        assert_eq!(
            c.2["batch"]["ops"],
            json!([{"table":"_rindle_client_mutations","op":"add","row":["c1",4]}])
        );
        assert_eq!(
            logs2.count("journal replay: 4 mutation(s) re-invoked and acked"),
            1,
            "{}",
            logs2.dump()
        );
        // Re-sent mids dedup (the rejected one is answered from the replay's record).
        c.0.send(&push("c1", 4, "addNote", r#"{"id":11,"body":"eleven"}"#))
            .await;
        c.0.send(&push("c1", 3, "refuse", "{}")).await;
        let o =
            c.0.until("the re-answer", |v| v["t"] == "mutationOutcome")
                .await;
        assert_eq!(o, json!({"t":"mutationOutcome","mid":3,"kind":"rejected"}));
        c.0.quiet(200).await;
        drop(c);
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// A client subscribed to the lmid query and the notes; returns the two snapshots.
async fn subscriber_snapshot(
    server: &rindle_room_smol::server::RoomServer,
    client: &str,
    sub: &str,
) -> (WsClient, Value, Value) {
    let mut c = WsClient::connect(server.port()).await;
    c.send(&format!(r#"{{"t":"init","clientID":"{client}"}}"#))
        .await;
    c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#)
        .await;
    let lmid = c.subscribed().await;
    let tok = token(NOTES, sub, 60_000);
    c.send(&format!(
        r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
    ))
    .await;
    let notes = c.subscribed().await;
    (c, notes, lmid)
}
