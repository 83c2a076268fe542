//! Fleet mode over real sockets: rooms booted on demand through a fake API server's
//! room-boot, one boot for concurrent first connections, the failure closes, and
//! hibernation of an idle room.

mod common;

use common::api::SHELL_SECRET;
use common::fleet::*;
use common::ws::Next;
use common::*;
use rindle_room_core::fleet::RoomState;

#[test]
fn the_first_connection_boots_the_room_and_later_ones_share_it() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let port = b.server.port();
        let mut a = reader(port, "deck/1", "deck/1").await;
        assert_eq!(note_count(&a.subscribed().await), 3);
        let mut c = reader(port, "deck/1", "deck/1").await;
        assert_eq!(note_count(&c.subscribed().await), 3);
        let mut other = reader(port, "deck/2", "deck/2").await;
        assert_eq!(note_count(&other.subscribed().await), 3);
        assert_eq!(b.api.boots_of("deck/1"), 1);
        assert_eq!(b.api.boots_of("deck/2"), 1);
        let rooms = b.server.rooms();
        assert_eq!(rooms.len(), 2, "{rooms:?}");
        assert_eq!(
            (
                rooms[0].doc.as_str(),
                rooms[0].state,
                rooms[0].connections,
                rooms[0].epoch
            ),
            ("deck/1", RoomState::Live, 2, 1)
        );
        let instances: Vec<String> = {
            let state = b.api.state.lock().unwrap();
            state.boots.iter().map(|(_, i)| i.clone()).collect()
        };
        assert!(instances.iter().all(|i| i == "box-test"), "{instances:?}");
        b.server.shutdown().await;
    }));
}

#[test]
fn concurrent_first_connections_cause_one_boot() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        b.api.state.lock().unwrap().delay_ms = 300;
        let port = b.server.port();
        let clients: Vec<_> = (0..5)
            .map(|_| smol::spawn(async move { reader(port, "d", "d").await }))
            .collect();
        let mut held = Vec::new();
        for c in clients {
            let mut c = c.await;
            assert_eq!(note_count(&c.subscribed().await), 3);
            held.push(c);
        }
        assert_eq!(b.api.boots_of("d"), 1);
        assert_eq!(b.server.rooms()[0].connections, 5);
        b.server.shutdown().await;
    }));
}

#[test]
fn a_token_for_another_doc_is_refused() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let mut c = reader(b.server.port(), "d1", "d2").await;
        match c.closed().await {
            Next::Closed(Some((1008, reason))) => {
                assert_eq!(reason, "lease token refused: wrong document")
            }
            other => panic!("expected 1008, got {other:?}"),
        }
        // Refused before anything was booted.
        assert_eq!(b.api.state.lock().unwrap().requests, 0);
        assert!(b.server.rooms().is_empty(), "{:?}", b.server.rooms());
        b.server.shutdown().await;
    }));
}

#[test]
fn an_unknown_doc_closes_4404_and_other_paths_get_http_404() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let port = b.server.port();
        let mut c = reader(port, "missing-1", "missing-1").await;
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((4404, "no room for doc".into())))
        );
        // The refusal is remembered: the API server is not asked again for a while.
        let mut again = reader(port, "missing-1", "missing-1").await;
        assert_eq!(
            again.closed().await,
            Next::Closed(Some((4404, "no room for doc".into())))
        );
        assert_eq!(b.api.state.lock().unwrap().requests, 1, "asked once");
        for path in ["/", "/rooms/", "/rooms/a/b", "/other/x", "/rooms/%zz"] {
            assert_eq!(
                WsClient::try_connect_path(port, path).await.err(),
                Some(404),
                "{path}"
            );
        }
        assert!(b.server.rooms().is_empty(), "{:?}", b.server.rooms());
        b.server.shutdown().await;
    }));
}

#[test]
fn a_busy_api_server_is_retried_with_backoff() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        b.api.state.lock().unwrap().fail_next = 2;
        let mut c = reader(b.server.port(), "d", "d").await;
        assert_eq!(note_count(&c.subscribed().await), 3);
        assert_eq!(b.api.state.lock().unwrap().requests, 3);
        b.server.shutdown().await;
    }));
}

#[test]
fn a_refused_shell_secret_closes_1013_and_says_why() {
    smol::block_on(within(async {
        let b = start_fleet("not-the-secret", "").await;
        let mut c = reader(b.server.port(), "d", "d").await;
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((1013, "room boot failed".into())))
        );
        let logs = b.logs.lock().unwrap().join("\n");
        assert!(
            logs.contains("HTTP 403") && logs.contains("shell_secret"),
            "{logs}"
        );
        assert_eq!(b.api.state.lock().unwrap().requests, 1, "not retried");
        b.server.shutdown().await;
    }));
}

#[test]
fn an_idle_room_hibernates_and_its_next_connection_boots_it_again() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "idle_evict_ms = 200").await;
        let port = b.server.port();
        let mut c = reader(port, "d", "d").await;
        c.subscribed().await;
        drop(c);
        let server = &b.server;
        for _ in 0..200 {
            if server
                .rooms()
                .first()
                .is_some_and(|r| r.state == RoomState::Hibernated)
            {
                break;
            }
            sleep(20).await;
        }
        let room = &server.rooms()[0];
        assert_eq!(
            (room.state, room.epoch),
            (RoomState::Hibernated, 1),
            "{room:?}"
        );
        let mut again = reader(port, "d", "d").await;
        assert_eq!(note_count(&again.subscribed().await), 3);
        assert_eq!(b.api.boots_of("d"), 2);
        assert_eq!(server.rooms()[0].epoch, 2, "a new placement");
        server.shutdown().await;
    }));
}

#[test]
fn past_max_rooms_a_new_doc_is_closed_1013_and_live_rooms_serve_on() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "max_rooms = 1").await;
        let port = b.server.port();
        let mut first = reader(port, "d1", "d1").await;
        first.subscribed().await;
        let mut second = reader(port, "d2", "d2").await;
        match second.closed().await {
            Next::Closed(Some((1013, reason))) => {
                assert!(reason.contains("fleet.max_rooms"), "{reason}")
            }
            other => panic!("expected 1013, got {other:?}"),
        }
        let mut again = reader(port, "d1", "d1").await;
        again.subscribed().await;
        assert_eq!(b.api.boots_of("d2"), 0);
        b.server.shutdown().await;
    }));
}

#[test]
fn a_doc_longer_than_the_limit_is_refused_at_the_upgrade() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let long = "d".repeat(rindle_room_core::fleet::MAX_DOC_BYTES + 1);
        let path = rindle_room_core::fleet::room_path(&long);
        assert_eq!(
            WsClient::try_connect_path(b.server.port(), &path)
                .await
                .err(),
            Some(404)
        );
        assert_eq!(b.api.state.lock().unwrap().requests, 0, "no boot was tried");
        b.server.shutdown().await;
    }));
}
