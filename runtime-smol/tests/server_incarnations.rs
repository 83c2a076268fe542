//! Incarnation deaths over real sockets: an upstream drop, an upstream `queryError`,
//! upstream violations — each closes the subscribed sockets with 1012, rotates the
//! bootId and re-subscribes upstream.

mod common;

use common::ws::Next;
use common::*;

#[test]
fn an_upstream_drop_closes_with_1012_and_the_next_incarnation_serves_the_same_rows() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let boot1 = server.boot_id().await.unwrap();
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        c.expect_t("nhello").await;
        let snap1 = c.expect_t("nbatch").await;
        // A connection with no subscription stays open through the death.
        let mut idle = WsClient::connect(server.port()).await;
        idle.send(r#"{"t":"init","clientID":"idle"}"#).await;

        rindled.drop_conn();
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((1012, "room re-subscribing".into())))
        );
        // Reconnect after the backoff, re-subscribe with the same lease, live again.
        eventually("a reconnect", || {
            rindled.subscribes() == 2 && rindled.conns() == 2
        })
        .await;
        within(server.await_live()).await;
        assert_eq!(rindled.mints(), 1);
        let boot2 = server.boot_id().await.unwrap();
        assert_ne!(boot1, boot2);

        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        let hello = c.expect_t("nhello").await;
        assert_eq!(hello["bootId"], boot2.as_str());
        let snap2 = c.expect_t("nbatch").await;
        assert_eq!(snap1["batch"]["ops"], snap2["batch"]["ops"]);
        idle.quiet(100).await;
        assert!(
            logs.count("incarnation dead: upstream socket closed") >= 1,
            "{}",
            logs.dump()
        );
        drop((c, idle));
        server.shutdown().await;
    });
}

#[test]
fn an_upstream_query_error_remints_the_lease_and_resubscribes() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let mut c = WsClient::connect(server.port()).await;
        c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
        c.subscribed().await;
        rindled.send_raw(r#"{"t":"queryError","queryId":1,"message":"lease expired"}"#);
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((1012, "room re-subscribing".into())))
        );
        eventually("a re-subscribe", || rindled.subscribes() == 2).await;
        within(server.await_live()).await;
        {
            let s = rindled.state.lock().unwrap();
            assert_eq!(s.mints, 2);
            assert_eq!(s.conns, 1, "the same socket is reused");
            assert_eq!(s.leases, vec!["lease-1".to_string(), "lease-2".to_string()]);
            assert_eq!(s.auth_headers[0].as_deref(), Some("Bearer up-token"));
            assert_eq!(s.materialize_bodies[0], r#"{"ast":{"table":"note"}}"#);
        }
        assert_eq!(
            logs.count("incarnation dead: upstream queryError: lease expired"),
            1
        );
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn upstream_violations_kill_the_incarnation_and_resubscribe_on_the_same_socket() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        for (n, garbage) in [
            "this is not JSON",
            r#"{"t":"nbatch","queryId":1,"batch":{"epoch":1,"seq":9,"normalizedFp":"x","ops":[]}}"#,
        ]
        .iter()
        .enumerate()
        {
            let mut c = WsClient::connect(server.port()).await;
            c.send(&subscribe(1, &token(NOTES, "u1", 60_000))).await;
            c.subscribed().await;
            rindled.send_raw(garbage);
            assert_eq!(
                c.closed().await,
                Next::Closed(Some((1012, "room re-subscribing".into())))
            );
            eventually("a re-subscribe", || rindled.subscribes() == n + 2).await;
            within(server.await_live()).await;
        }
        assert_eq!(rindled.conns(), 1);
        assert_eq!(
            logs.count("incarnation dead: upstream frame is not JSON"),
            1
        );
        assert_eq!(logs.count("incarnation dead: upstream apply failed"), 1);
        // Frames for another upstream queryId are ignored.
        rindled.send_raw(r#"{"t":"queryError","queryId":2,"message":"not ours"}"#);
        sleep(100).await;
        assert_eq!(rindled.subscribes(), 3);
        server.shutdown().await;
    });
}
