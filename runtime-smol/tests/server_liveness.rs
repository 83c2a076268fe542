//! Peers that vanish without a FIN or RST, over real sockets: a daemon behind a network
//! partition (a relay that black-holes the link) and a client that stops answering.
//! The room pings a link silent for a third of its silence timeout and takes it as dead
//! past the timeout.

mod common;

use common::blackhole::Blackhole;
use common::raw::{self, Ending, RawWs};
use common::ws::Next;
use common::*;
use serde_json::json;

/// A partitioned upstream link is taken as dead after `upstream.silence_timeout_ms`:
/// the room closes it, its clients re-subscribe, and the reconnect (on a route that
/// works) brings what the daemon committed during the partition.
#[test]
fn a_partitioned_upstream_is_dropped_after_the_silence_timeout_and_the_room_catches_up() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let relay = Blackhole::start(rindled.ws_url.trim_start_matches("ws://")).await;
        let mut via = rindled.clone();
        via.ws_url = format!("ws://127.0.0.1:{}", relay.port);
        let logs = Logs::default();
        let o = Opts {
            extra_upstream: String::from("silence_timeout_ms = 900\n"),
            ..read_only()
        };
        let server = start_live(&via, &o, &logs).await;
        let mut c = subscriber(&server, "c1", "u1", false).await;
        // Quiet but healthy: pings every 300 ms are answered, the link stays.
        c.quiet(2_000).await;
        assert_eq!(relay.accepted(), 1);
        assert_eq!(logs.count("upstream silent"), 0);
        // The partition: a row committed meanwhile never crosses it.
        relay.go_dark();
        rindled.live(&[json!({"table":"note","op":"add","row":[9,"nine","u1"]})]);
        let started = std::time::Instant::now();
        match c.closed().await {
            Next::Closed(Some((1012, reason))) => assert_eq!(reason, "room re-subscribing"),
            other => panic!("expected the 1012 close, got {other:?}"),
        }
        let waited = started.elapsed().as_millis();
        // Silence counts from the last pong, up to a ping interval before the partition.
        assert!((500..5_000).contains(&waited), "dropped after {waited} ms");
        assert_eq!(logs.count("upstream silent for"), 1, "{}", logs.dump());
        within(server.await_live()).await;
        assert_eq!(relay.accepted(), 2, "reconnected through a new connection");
        let mut d = WsClient::connect(server.port()).await;
        d.send(&subscribe(1, &token(NOTES, "u1", 600_000))).await;
        let snap = d.subscribed().await;
        assert!(snap.to_string().contains("nine"), "{snap}");
        let (_, metrics) = control(&server, "GET", "/metrics", "").await;
        assert!(
            metrics.contains("rindle_room_upstream_silences_total 1"),
            "{metrics}"
        );
        server.shutdown().await;
    });
}

/// A client that stops answering is pinged after a third of
/// `downstream.silence_timeout_ms` and closed with 1011 past it; one that answers the
/// pings stays however long it is quiet.
#[test]
fn a_client_that_stops_answering_is_closed_with_1011_and_one_that_answers_stays() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let o = Opts {
            extra_downstream: String::from("silence_timeout_ms = 900\n"),
            ..read_only()
        };
        let server = start_live(&rindled, &o, &logs).await;
        // A library client answers pings by itself.
        let mut alive = subscriber(&server, "c1", "u1", false).await;
        let mut dark = RawWs::connect(server.port()).await;
        dark.send(&raw::text(r#"{"t":"init","clientID":"c2"}"#))
            .await;
        let started = std::time::Instant::now();
        let watch_dark = async {
            let mut pings = 0;
            loop {
                match dark.next_frame().await {
                    Some((raw::PING, _)) => pings += 1, // never answered
                    Some((raw::CLOSE, payload)) if payload.len() >= 2 => {
                        let code = u16::from_be_bytes([payload[0], payload[1]]);
                        let reason = String::from_utf8_lossy(&payload[2..]).into_owned();
                        break (pings, Ending::Closed(code, reason), started.elapsed());
                    }
                    Some(_) => {}
                    None => break (pings, Ending::Dropped, started.elapsed()),
                }
            }
        };
        // The library client reads (and so answers pings) all along.
        let ((pings, ending, waited), ()) =
            futures_lite::future::zip(watch_dark, alive.quiet(3_000)).await;
        let waited = waited.as_millis();
        assert_eq!(pings, 1, "pinged once before the close");
        match ending {
            Ending::Closed(1011, reason) => {
                assert!(reason.contains("downstream.silence_timeout_ms"), "{reason}")
            }
            other => panic!("expected close 1011, got {other:?}"),
        }
        assert!((800..5_000).contains(&waited), "closed after {waited} ms");
        assert!(
            dark.eof().await,
            "the socket is dropped after the close grace"
        );
        alive.send(r#"{"t":"init","clientID":"c1"}"#).await;
        let (_, metrics) = control(&server, "GET", "/metrics", "").await;
        assert!(
            metrics.contains("rindle_room_refused_total{reason=\"silent\"} 1"),
            "{metrics}"
        );
        server.shutdown().await;
    });
}

/// A ping flood goes through the connection's inbound window like frames do: the room
/// keeps serving the flooding socket and the others.
#[test]
fn a_ping_flood_is_answered_and_the_room_keeps_serving() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &read_only(), &logs).await;
        let mut flood = RawWs::connect(server.port()).await;
        let ping = raw::frame(true, 0, raw::PING, b"x", true);
        let burst: Vec<u8> = std::iter::repeat_n(ping, 20_000).flatten().collect();
        flood.send(&burst).await;
        flood
            .send(&raw::text(&subscribe(1, &token(NOTES, "u1", 600_000))))
            .await;
        let mut texts = Vec::new();
        let mut pongs = 0;
        while texts.len() < 3 {
            match within(flood.next_frame()).await {
                Some((0xA, _)) => pongs += 1,
                Some((raw::TEXT, payload)) => texts.push(String::from_utf8(payload).unwrap()),
                other => panic!("expected pongs and the subscribe's answer, got {other:?}"),
            }
        }
        assert!(texts[1].contains("\"seq\":0"), "{texts:?}");
        assert!(pongs > 0, "pongs come back");
        let mut other = subscriber(&server, "c2", "u2", false).await;
        other.quiet(100).await;
        server.shutdown().await;
    });
}

/// Fleet mode: a room whose link to rindled is partitioned takes it as dead after
/// `fleet.upstream_silence_timeout_ms`, and comes back on a route that works.
#[test]
fn a_fleet_room_drops_a_partitioned_upstream_and_comes_back() {
    smol::block_on(async {
        use common::api::{FakeApi, SHELL_SECRET};
        use common::fleet::{fleet_control, reader, start_box};
        let rindled = FakeRindled::notes().await;
        let relay = Blackhole::start(rindled.ws_url.trim_start_matches("ws://")).await;
        let api = FakeApi::start(&format!("ws://127.0.0.1:{}", relay.port)).await;
        let b = start_box(
            api,
            rindled,
            SHELL_SECRET,
            "upstream_silence_timeout_ms = 900",
            "",
        )
        .await;
        let port = b.server.port();
        let mut c = reader(port, "doc-a", "doc-a").await;
        c.subscribed().await;
        assert_eq!(relay.accepted(), 1);
        relay.go_dark();
        b.rindled
            .live(&[json!({"table":"note","op":"add","row":[9,"nine","u1"]})]);
        match c.closed().await {
            Next::Closed(Some((code, _))) => assert!([1001, 1012].contains(&code), "{code}"),
            other => panic!("expected the room to close its clients, got {other:?}"),
        }
        let mut d = reader(port, "doc-a", "doc-a").await;
        let snap = d.subscribed().await;
        assert!(snap.to_string().contains("nine"), "{snap}");
        assert!(relay.accepted() >= 2, "a new route");
        let logs = b.logs.lock().unwrap().join("\n");
        assert!(logs.contains("upstream silent for"), "{logs}");
        // The box's /metrics sums its rooms' own counters.
        let (_, metrics) = fleet_control(&b, "GET", "/metrics", "", Some(CONTROL)).await;
        assert!(
            metrics.contains("\nrindle_room_upstream_silences_total 1\n"),
            "{metrics}"
        );
        assert!(
            metrics.contains("\nrindle_room_incarnations_total 2\n"),
            "{metrics}"
        );
        b.server.shutdown().await;
    });
}
