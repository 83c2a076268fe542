//! Leases after subscribe (expiry on a fake clock, revocation) and the control plane.

mod common;

use std::sync::Arc;

use common::ws::Next;
use common::*;
use rindle_room_smol::server::{Clock, ManualClock, SystemClock};
use serde_json::json;

#[test]
fn leases_expire_on_the_room_clock() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let clock = ManualClock::starting_now();
        let server = builder(&rindled, &read_only(), &logs)
            .clock(Arc::new(clock.clone()))
            .start()
            .await
            .unwrap();
        within(server.await_live()).await;
        let mut c = WsClient::connect(server.port()).await;
        let short = token_at(NOTES, "u1", clock.now_ms(), 1_000);
        let long = token_at(NOTES, "u1", clock.now_ms(), 60_000);
        c.send(&subscribe(1, &short)).await;
        c.subscribed().await;
        c.send(&subscribe(2, &long)).await;
        c.subscribed().await;
        clock.advance(600);
        c.quiet(100).await;
        clock.advance(600);
        let e = c.expect_t("queryError").await;
        assert_eq!(
            e,
            json!({"t":"queryError","queryId":1,"message":"expired lease — renew through the API server"})
        );
        // The expired subscription is detached; the other still receives.
        rindled.live(&[json!({"table":"note","op":"add","row":[9,"nine","u1"]})]);
        let b = c.expect_t("nbatch").await;
        assert_eq!(b["queryId"], 2);
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn revocation_closes_the_users_sockets_and_refuses_older_tokens() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let old = token(NOTES, "u1", 600_000);
        let mut a = WsClient::connect(server.port()).await;
        a.send(&subscribe(1, &old)).await;
        a.subscribed().await;
        a.send(&subscribe(2, &old)).await;
        a.subscribed().await;
        // Bound to u1 with no live subscription: still revoked.
        let mut bound = WsClient::connect(server.port()).await;
        bound.send(&subscribe(1, &old)).await;
        bound.subscribed().await;
        bound.send(r#"{"t":"unsubscribe","queryId":1}"#).await;
        let mut other = WsClient::connect(server.port()).await;
        other
            .send(&subscribe(1, &token(NOTES, "u2", 600_000)))
            .await;
        other.subscribed().await;
        sleep(20).await;

        for (body, status, reply) in [
            ("", 400, r#"{"error":"invalid JSON"}"#),
            ("null", 400, r#"{"error":"invalid JSON"}"#),
            ("{}", 400, r#"{"error":"userId required"}"#),
            (r#"{"userId":""}"#, 400, r#"{"error":"userId required"}"#),
        ] {
            assert_eq!(
                control(&server, "POST", "/revoke", body).await,
                (status, reply.to_string())
            );
        }
        let (status, body) = control(&server, "POST", "/revoke", r#"{"userId":"u1"}"#).await;
        assert_eq!((status, body.as_str()), (200, r#"{"revoked":2}"#));
        let mut errors = vec![];
        for _ in 0..2 {
            let e = a.expect_t("queryError").await;
            assert_eq!(e["message"], "lease revoked");
            errors.push(e["queryId"].as_u64().unwrap());
        }
        errors.sort();
        assert_eq!(errors, vec![1, 2]);
        assert_eq!(
            a.closed().await,
            Next::Closed(Some((1008, "revoked".into())))
        );
        assert_eq!(
            bound.closed().await,
            Next::Closed(Some((1008, "revoked".into())))
        );
        rindled.live(&[json!({"table":"note","op":"add","row":[9,"nine","u1"]})]);
        other.expect_t("nbatch").await;

        let mut again = WsClient::connect(server.port()).await;
        again.send(&subscribe(1, &old)).await;
        assert_eq!(
            again.expect_t("queryError").await["message"],
            "lease token refused: revoked"
        );
        let fresh = token_at(NOTES, "u1", SystemClock.now_ms() + 50, 600_000);
        again.send(&subscribe(1, &fresh)).await;
        again.expect_t("nhello").await;
        drop((a, bound, other, again));
        server.shutdown().await;
    });
}

#[test]
fn the_control_plane_authenticates_routes_and_reports() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let unauthorized = (401, r#"{"error":"unauthorized"}"#.to_string());
        assert_eq!(
            control_with(&server, "GET", "/stats", "", None).await,
            unauthorized
        );
        assert_eq!(
            control_with(&server, "GET", "/stats", "", Some("nope")).await,
            unauthorized
        );
        let unknown = (404, r#"{"error":"unknown endpoint"}"#.to_string());
        assert_eq!(control(&server, "GET", "/nothing", "").await, unknown);
        assert_eq!(control(&server, "POST", "/stats", "").await, unknown);
        assert_eq!(control(&server, "GET", "/stats?x=1", "").await, unknown);
        let c = subscriber(&server, "c1", "u1", false).await;
        let (status, stats) = control(&server, "GET", "/stats", "").await;
        assert_eq!(status, 200);
        assert_eq!(
            stats,
            r#"{"live":true,"connections":1,"subscriptions":1,"materializations":1,"pendingMutations":0,"dirtyKeys":0,"placementEpoch":0,"flushesConfirmed":0,"flushInFlight":false}"#
        );
        assert_eq!(
            control(&server, "GET", "/healthz", "").await,
            (200, r#"{"live":true}"#.into())
        );
        let (status, metrics) = control(&server, "GET", "/metrics", "").await;
        drop(c);
        assert_eq!(status, 200);
        for needle in [
            "rindle_room_connections 1\n",
            "rindle_room_subscriptions 1\n",
            "rindle_room_incarnations_total 1\n",
            "# TYPE rindle_room_journal_append_seconds histogram",
            "rindle_room_flushes_total{outcome=\"ok\"} 0\n",
        ] {
            assert!(metrics.contains(needle), "{needle} missing from\n{metrics}");
        }
        assert_eq!(
            control(&server, "POST", "/drain", "").await,
            (200, r#"{"finalFlushSeq":0,"drained":true}"#.into())
        );
        // Not live: not ready (still alive).
        rindled.hold();
        rindled.drop_conn();
        eventually("the incarnation death", || rindled.subscribes() >= 2).await;
        assert_eq!(
            control(&server, "GET", "/readyz", "").await,
            (503, r#"{"ready":false}"#.into())
        );
        assert_eq!(
            control(&server, "GET", "/healthz", "").await,
            (200, r#"{"live":true}"#.into())
        );
        server.shutdown().await;
    });
}
