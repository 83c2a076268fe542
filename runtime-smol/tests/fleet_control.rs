//! The fleet's control plane: unauthenticated probes, the room list, box stats and
//! bounded metrics, drain by doc, and a revocation that outlives a room's hibernation.

mod common;

use common::api::SHELL_SECRET;
use common::fleet::*;
use common::ws::Next;
use common::*;
use rindle_room_core::fleet::RoomState;
use serde_json::Value;

#[test]
fn probes_answer_without_a_token_and_the_rest_needs_one() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let server = &b.server;
        eventually("ready", || server.is_ready()).await;
        assert_eq!(
            fleet_control(&b, "GET", "/healthz", "", None).await,
            (200, r#"{"live":true}"#.to_string())
        );
        assert_eq!(
            fleet_control(&b, "GET", "/readyz", "", None).await,
            (200, r#"{"ready":true}"#.to_string())
        );
        for path in ["/rooms", "/stats", "/metrics"] {
            assert_eq!(
                fleet_control(&b, "GET", path, "", None).await.0,
                401,
                "{path}"
            );
        }
        b.server.shutdown().await;
    }));
}

#[test]
fn rooms_stats_and_metrics_describe_the_box() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let port = b.server.port();
        let mut one = reader(port, "deck/1", "deck/1").await;
        one.subscribed().await;
        let mut two = reader(port, "deck/2", "deck/2").await;
        two.subscribed().await;
        let (status, rooms) = fleet_control(&b, "GET", "/rooms", "", Some(CONTROL)).await;
        assert_eq!(status, 200);
        assert_eq!(
            rooms,
            r#"{"rooms":[{"doc":"deck/1","state":"live","connections":1,"epoch":1},{"doc":"deck/2","state":"live","connections":1,"epoch":1}]}"#
        );
        let (status, stats) = fleet_control(&b, "GET", "/stats", "", Some(CONTROL)).await;
        assert_eq!(status, 200);
        let stats: Value = serde_json::from_str(&stats).unwrap();
        assert_eq!(stats["box"]["rooms"]["live"], 2, "{stats}");
        assert_eq!(stats["box"]["boots"], 2);
        assert_eq!(stats["box"]["instance"], "box-test");
        assert!(stats["rooms"]["deck/1"].is_object(), "{stats}");
        let (_, metrics) = fleet_control(&b, "GET", "/metrics", "", Some(CONTROL)).await;
        assert!(
            metrics.contains("rindle_fleet_rooms{state=\"live\"} 2"),
            "{metrics}"
        );
        assert!(metrics.contains("rindle_fleet_boots_total 2"), "{metrics}");
        assert!(!metrics.contains("deck"), "no per-doc labels: {metrics}");
        assert_eq!(
            fleet_control(&b, "POST", "/drain?doc=deck%2F1", "", Some(CONTROL)).await,
            (200, r#"{"finalFlushSeq":0,"drained":true}"#.to_string())
        );
        assert_eq!(
            fleet_control(&b, "POST", "/drain?doc=nope", "", Some(CONTROL))
                .await
                .0,
            404
        );
        b.server.shutdown().await;
    }));
}

#[test]
fn a_revocation_outlives_the_rooms_hibernation() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "idle_evict_ms = 200").await;
        let port = b.server.port();
        let old = token_for("d", NOTES, "u1");
        let mut c = reader(port, "d", "d").await;
        c.subscribed().await;
        sleep(5).await;
        assert_eq!(
            fleet_control(&b, "POST", "/revoke", r#"{"userId":"u1"}"#, Some(CONTROL)).await,
            (200, r#"{"revoked":1}"#.to_string())
        );
        let err = c.until("queryError", |v| v["t"] == "queryError").await;
        assert_eq!(err["message"], "lease revoked");
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((1008, "revoked".into())))
        );
        let server = &b.server;
        eventually("the room hibernates", || {
            server.rooms()[0].state == RoomState::Hibernated
        })
        .await;
        assert_eq!(
            fleet_control(&b, "POST", "/drain?doc=d", "", Some(CONTROL)).await,
            (200, r#"{"finalFlushSeq":0,"drained":true}"#.to_string()),
            "a hibernated room answers with its last drain"
        );
        // A new placement of the room still refuses the revoked token...
        let path = rindle_room_core::fleet::room_path("d");
        let mut again = WsClient::connect_path(port, &path).await;
        again.send(&subscribe(1, &old)).await;
        assert_eq!(
            again.next().await["message"],
            "lease token refused: revoked"
        );
        assert_eq!(b.api.boots_of("d"), 2);
        // ...and takes a token issued after the revocation.
        sleep(5).await;
        again
            .send(&subscribe(2, &token_for("d", NOTES, "u1")))
            .await;
        again.subscribed().await;
        server.shutdown().await;
    }));
}
