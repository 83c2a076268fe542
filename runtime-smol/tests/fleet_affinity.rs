//! A room-boot affinity ticket over real sockets: offered upstream as
//! `Sec-WebSocket-Protocol: rindle.v1, <ticket>`; kept when the upstream (an edge)
//! selects `rindle.v1`; dropped, with one log line naming the setting, when the upstream
//! is rindled itself and selects no subprotocol — the room connects without it and
//! serves, instead of failing the handshake forever.

mod common;

use common::api::{FakeApi, SHELL_SECRET};
use common::fleet::*;
use common::*;

const TICKET: &str = "aff-ticket-7";
const OFFER: &str = "rindle.v1, aff-ticket-7";
const REFUSAL: &str = "selected no subprotocol for room-boot's affinity ticket";

/// A fleet whose room-boot grants `TICKET`, over a rindled that selects `select`.
async fn fleet_with_ticket(select: Option<&str>) -> FleetBox {
    let rindled = FakeRindled::notes().await;
    rindled.state.lock().unwrap().select_protocol = select.map(String::from);
    let api = FakeApi::start(&rindled.ws_url).await;
    api.state.lock().unwrap().affinity = Some(TICKET.into());
    start_box(api, rindled, SHELL_SECRET, "", "").await
}

fn lines_with(b: &FleetBox, needle: &str) -> Vec<String> {
    let logs = b.logs.lock().unwrap();
    logs.iter()
        .filter(|l| l.contains(needle))
        .cloned()
        .collect()
}

#[test]
fn rindled_selecting_no_subprotocol_gets_the_room_without_its_ticket() {
    smol::block_on(within(async {
        let b = fleet_with_ticket(None).await;
        let port = b.server.port();
        let mut a = reader(port, "deck/1", "deck/1").await;
        // The room connected, got the hello and the snapshot, and serves it.
        assert_eq!(note_count(&a.subscribed().await), 3);
        assert_eq!(
            b.rindled.offered_protocols(),
            vec![Some(OFFER.to_string()), None],
            "the ticket first, then no subprotocol header at all"
        );
        let refusals = lines_with(&b, REFUSAL);
        assert_eq!(refusals.len(), 1, "{refusals:#?}");
        assert!(
            refusals[0].contains("WARN")
                && refusals[0].contains(&b.rindled.ws_url)
                && refusals[0].contains("realtime.upstreamWsEndpoint")
                && !refusals[0].contains(TICKET),
            "the line names the endpoint and the setting, not the ticket: {}",
            refusals[0]
        );

        // A reconnect of the same room offers no ticket again.
        b.rindled.drop_conn();
        eventually("the room re-subscribes upstream", || {
            b.rindled.subscribes() >= 2
        })
        .await;
        assert_eq!(b.rindled.offered_protocols()[2..], [None]);

        // Another room falls back the same way, and the box does not warn again.
        let mut c = reader(port, "deck/2", "deck/2").await;
        assert_eq!(note_count(&c.subscribed().await), 3);
        assert_eq!(
            b.rindled.offered_protocols()[3..],
            [Some(OFFER.to_string()), None]
        );
        assert_eq!(lines_with(&b, REFUSAL).len(), 1, "one warning per box");
        b.server.shutdown().await;
    }));
}

#[test]
fn an_edge_selecting_rindle_v1_keeps_the_ticket() {
    smol::block_on(within(async {
        let b = fleet_with_ticket(Some("rindle.v1")).await;
        let mut a = reader(b.server.port(), "deck/1", "deck/1").await;
        assert_eq!(note_count(&a.subscribed().await), 3);
        b.rindled.drop_conn();
        eventually("the room re-subscribes upstream", || {
            b.rindled.subscribes() >= 2
        })
        .await;
        assert_eq!(
            b.rindled.offered_protocols(),
            vec![Some(OFFER.to_string()), Some(OFFER.to_string())],
            "every connect offers the ticket"
        );
        assert_eq!(lines_with(&b, REFUSAL), Vec::<String>::new());
        b.server.shutdown().await;
    }));
}

#[test]
fn without_a_ticket_no_subprotocol_is_offered() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "").await;
        let mut a = reader(b.server.port(), "deck/1", "deck/1").await;
        assert_eq!(note_count(&a.subscribed().await), 3);
        assert_eq!(b.rindled.offered_protocols(), vec![None]);
        b.server.shutdown().await;
    }));
}
