//! The single room's probes: `GET /healthz` and `GET /readyz` answer without the bearer
//! token (docs/fleet.md, "Health"; as in fleet mode); every other route keeps it.

mod common;

use common::*;

async fn probe(server: &rindle_room_smol::server::RoomServer, path: &str) -> (u16, String) {
    control_with(server, "GET", path, "", None).await
}

#[test]
fn probes_answer_without_a_token_and_follow_readiness() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let live = (200, r#"{"live":true}"#.to_string());
        let ready = (200, r#"{"ready":true}"#.to_string());
        let not_ready = (503, r#"{"ready":false}"#.to_string());
        assert_eq!(probe(&server, "/healthz").await, live);
        assert_eq!(probe(&server, "/readyz").await, ready);
        // A wrong token does not matter to a probe.
        assert_eq!(
            control_with(&server, "GET", "/readyz", "", Some("wrong")).await,
            ready
        );
        // A probe's query string is ignored (load balancers add some).
        assert_eq!(
            control_with(&server, "GET", "/readyz?verbose=1", "", None).await,
            ready
        );
        // Everything else still needs the token, including near-misses of the probes.
        let unauthorized = (401, r#"{"error":"unauthorized"}"#.to_string());
        for (method, path) in [
            ("GET", "/stats"),
            ("GET", "/metrics"),
            ("POST", "/drain"),
            ("POST", "/healthz"),
            ("POST", "/readyz?verbose=1"),
        ] {
            assert_eq!(
                control_with(&server, method, path, "", None).await,
                unauthorized,
                "{method} {path}"
            );
        }

        // The incarnation dies and the daemon holds the next snapshot: alive, not ready.
        rindled.hold();
        rindled.drop_conn();
        eventually("the re-subscribe", || rindled.subscribes() >= 2).await;
        assert_eq!(probe(&server, "/readyz").await, not_ready);
        assert_eq!(probe(&server, "/healthz").await, live);

        // The snapshot lands: ready again.
        rindled.release();
        within(server.await_live()).await;
        assert_eq!(probe(&server, "/readyz").await, ready);
        server.shutdown().await;
    });
}

/// Sockets opened to the control plane and left silent (a slowloris, re-opened as they
/// are dropped) do not keep a probe out: a new connection takes the place of the one
/// that has waited longest without a request.
#[test]
fn probes_answer_while_silent_sockets_hold_the_control_plane() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let addr = format!("127.0.0.1:{}", server.control_port());
        let mut silent = Vec::new();
        for _ in 0..200 {
            silent.push(smol::net::TcpStream::connect(&addr).await.unwrap());
        }
        let live = (200, r#"{"live":true}"#.to_string());
        for _ in 0..20 {
            // The attacker keeps re-opening.
            for _ in 0..10 {
                silent.push(smol::net::TcpStream::connect(&addr).await.unwrap());
            }
            assert_eq!(probe(&server, "/healthz").await, live);
        }
        drop(silent);
        server.shutdown().await;
    });
}
