//! The read path over real sockets: subscribe and live updates, queued subscribes,
//! forged and malformed input, subject binding.

mod common;

use common::*;
use rindle_room_core::json::tree::JsValue;
use rindle_room_core::token::{self, MintOptions};
use rindle_room_smol::server::{Clock, SystemClock};
use serde_json::json;

#[test]
fn subscribe_then_live_updates() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let boot = server.boot_id().await.unwrap();
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        let hello = c.expect_t("nhello").await;
        assert_eq!(hello["queryId"], 1);
        assert_eq!(hello["bootId"], boot.as_str());
        assert_eq!(hello["hello"]["epoch"], 1);
        assert_eq!(hello["hello"]["comparatorVersion"], 2);
        assert_eq!(
            hello["hello"]["tables"],
            json!([{"name":"note","columns":["id","body","owner"],"primaryKey":[0]}])
        );
        let snap = c.expect_t("nbatch").await;
        assert_eq!(snap["batch"]["seq"], 0);
        // The snapshot is stamped with the upstream snapshot's cv.
        assert_eq!(snap["batch"]["cv"], 100);
        assert_eq!(
            snap["batch"]["normalizedFp"],
            hello["hello"]["normalizedFp"]
        );
        assert_eq!(
            snap["batch"]["ops"],
            json!([
                {"table":"note","op":"add","row":[1,"one","u1"]},
                {"table":"note","op":"add","row":[2,"two","u1"]},
                {"table":"note","op":"add","row":[3,"three","u2"]}
            ])
        );
        let p = c.expect_t("progress").await;
        assert_eq!(
            p["frame"],
            json!({"cvMin":100,"upstreamCv":100,"upstreamBoot":"daemon-boot-1"})
        );

        // A live upstream batch: one net frame (ops in pk order), then progress.
        rindled.live(&[
            json!({"table":"note","op":"add","row":[4,"four","u2"]}),
            json!({"table":"note","op":"edit","old":[1,"one","u1"],"new":[1,"uno","u1"]}),
        ]);
        let b = c.expect_t("nbatch").await;
        assert_eq!(b["batch"]["seq"], 1);
        assert_eq!(b["batch"]["cv"], 101);
        assert_eq!(
            b["batch"]["ops"],
            json!([
                {"table":"note","op":"edit","old":[1,"one","u1"],"new":[1,"uno","u1"]},
                {"table":"note","op":"add","row":[4,"four","u2"]}
            ])
        );
        assert_eq!(c.expect_t("progress").await["frame"]["cvMin"], 101);
        // The daemon's progress is re-advertised (absorption advert).
        let adv = c.expect_t("progress").await;
        assert_eq!(
            adv["frame"],
            json!({"cvMin":101,"upstreamCv":101,"upstreamBoot":"daemon-boot-1"})
        );

        // Re-subscribing the same queryId bumps the epoch and re-snapshots.
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        assert_eq!(c.expect_t("nhello").await["hello"]["epoch"], 2);
        let snap = c.expect_t("nbatch").await;
        assert_eq!(snap["batch"]["ops"].as_array().unwrap().len(), 4);
        c.expect_t("progress").await;

        // A second connection shares the pipeline; an unsubscribed one hears nothing.
        let mut d = WsClient::connect(server.port()).await;
        d.send(&subscribe(7, &token(NOTES, "u2", 60_000))).await;
        d.expect_t("nhello").await;
        d.expect_t("nbatch").await;
        d.expect_t("progress").await;
        c.send(r#"{"t":"unsubscribe","queryId":1}"#).await;
        sleep(50).await;
        rindled.live(&[json!({"table":"note","op":"remove","row":[2,"two","u1"]})]);
        let b = d.expect_t("nbatch").await;
        assert_eq!(b["queryId"], 7);
        assert_eq!(
            b["batch"]["ops"],
            json!([{"table":"note","op":"remove","row":[2,"two","u1"]}])
        );
        // c only gets the (connection-less) advert? No: it has no subscriptions left.
        c.quiet(200).await;
        let stats = server.stats().await.unwrap();
        assert!(stats.contains("\"subscriptions\":1"), "{stats}");
        assert!(stats.contains("\"materializations\":1"), "{stats}");
        drop((c, d));
        server.shutdown().await;
    });
}

#[test]
fn subscribes_before_live_are_served_once_the_snapshot_lands() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        rindled.hold();
        let logs = Logs::default();
        let server = builder(&rindled, &read_only(), &logs)
            .start()
            .await
            .unwrap();
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        c.quiet(200).await;
        rindled.release();
        c.expect_t("nhello").await;
        assert_eq!(c.expect_t("nbatch").await["batch"]["seq"], 0);
        c.expect_t("progress").await;
        drop(c);
        server.shutdown().await;
    });
}

fn forged(key: &str, kid: &str, doc: &str, iat: u64, ttl: u64) -> String {
    let ast = JsValue::parse(NOTES).unwrap();
    token::mint(&MintOptions {
        doc,
        ast: Some(&ast),
        sub: "u1",
        kid,
        key,
        ttl_ms: ttl as f64,
        now_ms: iat as f64,
        scopes_hash: None,
    })
    .unwrap()
}

#[test]
fn forged_and_malformed_input_gets_error_frames_and_nothing_crashes() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        let now = SystemClock.now_ms();
        let cases = [
            (subscribe(1, "garbage"), "lease token refused: malformed"),
            (
                subscribe(1, &forged("wrong", KID, DOC, now, 60_000)),
                "lease token refused: bad signature",
            ),
            (
                subscribe(1, &forged(KEY, "k9", DOC, now, 60_000)),
                "lease token refused: unknown key",
            ),
            (
                subscribe(1, &forged(KEY, KID, "doc/2", now, 60_000)),
                "lease token refused: wrong document",
            ),
            (
                subscribe(1, &forged(KEY, KID, DOC, now - 10_000, 1_000)),
                "lease token refused: expired",
            ),
            (
                r#"{"t":"subscribe","queryId":1}"#.to_string(),
                "subscribe requires a lease token",
            ),
            (
                r#"{"t":"subscribe","queryId":1,"name":"myQuery","args":{}}"#.to_string(),
                "subscribe requires a lease token",
            ),
            (
                r#"{"t":"subscribe","queryId":1,"name":"_rindle/clientLmid"}"#.to_string(),
                "this room is read-only (no write plane configured)",
            ),
        ];
        for (frame, message) in &cases {
            c.send(frame).await;
            let e = c.expect_t("queryError").await;
            assert_eq!(e["queryId"], 1);
            assert_eq!(e["message"], *message, "for {frame}");
        }
        c.send(&subscribe(1, &token(r#"{"table":"nope"}"#, "u1", 60_000)))
            .await;
        let e = c.expect_t("queryError").await;
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.starts_with("materialize failed: subscribe: Query(UnknownTable"),
            "{msg}"
        );

        c.send(r#"{"t":"mutate","queryId":5,"mutation":{}}"#).await;
        let e = c.expect_t("error").await;
        assert_eq!(
            e,
            json!({"t":"error","queryId":5,"message":"this room accepts named mutators only (pushMutation)"})
        );
        c.send(r#"{"t":"pushMutation","envelope":{"clientID":"c1","mid":1,"name":"x"}}"#)
            .await;
        let e = c.expect_t("error").await;
        assert_eq!(
            e["message"],
            "this room is read-only (no write plane configured)"
        );
        c.send(r#"{"t":"pushMutation","envelope":{"clientID":"c1","mid":"1","name":"x"}}"#)
            .await;
        assert_eq!(
            c.expect_t("error").await["message"],
            "malformed pushMutation envelope"
        );

        // Ignored without a reply: not JSON, not an object, unknown t, a bad queryId,
        // hostile nesting.
        for junk in [
            "not json".to_string(),
            "[1,2,3]".to_string(),
            "null".to_string(),
            r#"{"t":5}"#.to_string(),
            r#"{"t":"subscribe","queryId":"1","leaseToken":"x"}"#.to_string(),
            r#"{"t":"unsubscribe"}"#.to_string(),
            "[".repeat(100_000),
        ] {
            c.send(&junk).await;
        }
        c.quiet(200).await;
        // The connection still works.
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        c.expect_t("nhello").await;
        c.expect_t("nbatch").await;
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn a_second_subject_on_a_bound_connection_is_refused() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        c.subscribed().await;
        c.send(&subscribe(2, &token(NOTES, "u2", 60_000))).await;
        let e = c.expect_t("queryError").await;
        assert_eq!(e["queryId"], 2);
        assert_eq!(
            e["message"],
            "lease token refused: connection is bound to another subject"
        );
        drop(c);
        server.shutdown().await;
    });
}
