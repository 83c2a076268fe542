//! Memory budgets in fleet mode (docs/fleet.md, "Memory budgets"): a subscribe past the
//! room budget gets a `queryError` and the room keeps serving; past the box budget idle
//! rooms hibernate and, with none idle, new boots are refused with 1013.

mod common;

use common::api::SHELL_SECRET;
use common::fleet::*;
use common::ws::Next;
use common::*;
use rindle_room_core::fleet::RoomState;
use serde_json::Value;

async fn box_stats(b: &FleetBox) -> Value {
    let (status, text) = fleet_control(b, "GET", "/stats", "", Some(CONTROL)).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_subscribe_past_the_room_budget_gets_a_query_error_and_the_room_serves_on() {
    smol::block_on(within(async {
        // How much a booted room of the fake daemon's notes retains before any query.
        let probe = start_fleet(SHELL_SECRET, "").await;
        // A verified lease subscribe boots the room; its query names no table, so it is
        // refused and nothing is materialized.
        let _idle = reader_with(probe.server.port(), "d", r#"{"table":"nope"}"#).await;
        let mut base = 0;
        for _ in 0..200 {
            base = box_stats(&probe).await["box"]["retainedBytes"]
                .as_u64()
                .unwrap();
            if base > 0 {
                break;
            }
            sleep(20).await;
        }
        assert!(base > 0);
        probe.server.shutdown().await;

        // Room for the snapshot-time transients (a few hundred bytes), not for a query.
        let budget = base + 600;
        let b = start_fleet(SHELL_SECRET, &format!("max_room_bytes = {budget}")).await;
        let mut c = reader(b.server.port(), "d", "d").await;
        let err = match c.next_within(3000).await {
            Next::Frame(v) => v,
            other => panic!("{other:?}\n{}", b.logs.lock().unwrap().join("\n")),
        };
        assert_eq!(err["t"], "queryError", "{err}");
        let message = err["message"].as_str().unwrap();
        assert!(
            message.starts_with("room memory budget exceeded: ")
                && message.ends_with(&format!("budget {budget}")),
            "{message}"
        );
        // The socket stays open and the room keeps answering.
        c.quiet(100).await;
        let mut again = reader(b.server.port(), "d", "d").await;
        let err = again.until("queryError", |v| v["t"] == "queryError").await;
        assert!(err["message"]
            .as_str()
            .unwrap()
            .starts_with("room memory budget"));
        let stats = box_stats(&b).await;
        assert_eq!(stats["box"]["budgetRefusals"], 2, "{stats}");
        assert_eq!(stats["box"]["maxRoomBytes"], budget);
        b.server.shutdown().await;
    }));
}

#[test]
fn past_the_box_budget_idle_rooms_hibernate_then_new_boots_are_refused() {
    smol::block_on(within(async {
        let b = start_fleet(SHELL_SECRET, "max_box_bytes = 1\nidle_evict_ms = 60000").await;
        let port = b.server.port();
        // A connected room: over budget but not idle, so it stays and boots stop.
        let mut held = reader(port, "d1", "d1").await;
        held.subscribed().await;
        let mut over = false;
        for _ in 0..300 {
            if box_stats(&b).await["box"]["overBudget"] == true {
                over = true;
                break;
            }
            sleep(20).await;
        }
        assert!(over, "the box notices it is over budget");
        let mut refused = reader(port, "d2", "d2").await;
        assert_eq!(
            refused.closed().await,
            Next::Closed(Some((1013, "box memory budget exceeded".into())))
        );
        // Once its last client goes, the room is idle: the budget hibernates it (long
        // before idle_evict_ms), and boots are allowed again.
        drop(held);
        let server = &b.server;
        eventually("the idle room hibernates for the budget", || {
            server
                .rooms()
                .iter()
                .any(|r| r.doc == "d1" && r.state == RoomState::Hibernated)
        })
        .await;
        let logs = b.logs.lock().unwrap().join("\n");
        assert!(
            logs.contains("box budget: hibernating idle room d1"),
            "{logs}"
        );
        b.server.shutdown().await;
    }));
}
