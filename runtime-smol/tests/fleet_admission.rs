//! Fleet admission over real sockets: a connection boots nothing until it shows a lease
//! subscribe that verifies for its document; boots past `fleet.max_boots_in_flight`
//! wait for a slot.

mod common;

use common::api::SHELL_SECRET;
use common::fleet::*;
use common::ws::Next;
use common::*;
use rindle_room_core::fleet::GATE_MAX_FRAMES;

#[test]
fn strangers_without_a_lease_token_boot_nothing() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let port = b.server.port();
        for i in 0..20 {
            let mut c = WsClient::connect_path(port, &format!("/rooms/stranger-{i}")).await;
            for _ in 0..GATE_MAX_FRAMES {
                c.send(r#"{"t":"init","clientID":"x"}"#).await;
            }
            match c.closed().await {
                Next::Closed(Some((1008, reason))) => {
                    assert!(reason.contains("no lease token"), "{reason}")
                }
                other => panic!("expected 1008, got {other:?}"),
            }
        }
        // A forged token is no better.
        let mut forged = WsClient::connect_path(port, "/rooms/stranger-x").await;
        forged
            .send(&subscribe(1, "rt1.eyJ2IjoxfQ.c2lnbmF0dXJl"))
            .await;
        assert!(matches!(
            forged.closed().await,
            Next::Closed(Some((1008, _)))
        ));
        assert_eq!(b.api.state.lock().unwrap().requests, 0, "no room-boot call");
        assert!(b.server.rooms().is_empty(), "{:?}", b.server.rooms());
        // A legitimate client is served throughout.
        let mut c = reader(port, "deck/1", "deck/1").await;
        assert_eq!(note_count(&c.subscribed().await), 3);
        b.server.shutdown().await;
    }));
}

#[test]
fn frames_before_the_lease_subscribe_reach_the_room_in_order() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let path = rindle_room_core::fleet::room_path("d");
        let mut c = WsClient::connect_path(b.server.port(), &path).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        c.send(&subscribe(1, &token_for("d", NOTES, "u1"))).await;
        assert_eq!(note_count(&c.subscribed().await), 3);
        assert_eq!(b.api.boots_of("d"), 1);
        b.server.shutdown().await;
    }));
}

#[test]
fn boots_past_the_slots_wait_for_one() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "max_boots_in_flight = 1").await;
        b.api.state.lock().unwrap().delay_ms = 300;
        let port = b.server.port();
        let clients: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|doc| smol::spawn(async move { reader(port, doc, doc).await }))
            .collect();
        let mut held = Vec::new();
        for c in clients {
            let mut c = c.await;
            assert_eq!(note_count(&c.subscribed().await), 3);
            held.push(c);
        }
        let (boots, most) = {
            let api = b.api.state.lock().unwrap();
            (api.boots.len(), api.max_in_flight)
        };
        assert_eq!(boots, 3);
        assert_eq!(most, 1, "one room-boot call at a time");
        b.server.shutdown().await;
    }));
}
