//! The fleet's control plane over HTTP: the routes and bodies are the core's
//! ([`rindle_room_core::fleet::route_fleet_control`]); this file asks the rooms.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::fleet::{
    ready_body, revoked_body, rooms_body, route_fleet_control, stats_body, BoxTotals, FleetRoute,
    RoomState,
};
use rindle_room_core::host::{error_body, ControlReply, ControlRoute};
use smol::net::TcpListener;

use super::rooms::Rooms;
use crate::http;
use crate::server::actor::{Control, Event};
use crate::server::control_plane::{serve_with, Handler, Reply, JSON};

/// How long the control plane waits for one room's answer.
const ROOM_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves the fleet's control plane until `stop` fires.
pub(crate) async fn serve(
    listener: TcpListener,
    token: String,
    rooms: Arc<Rooms>,
    stop: Receiver<()>,
) {
    let handler: Handler = Arc::new(move |req: http::Request| {
        let token = token.clone();
        let rooms = rooms.clone();
        Box::pin(async move { route(&req, &token, &rooms).await })
    });
    serve_with(listener, handler, stop).await
}

/// Asks one room; `None` when it stopped or did not answer in time.
async fn ask<T>(events: &Sender<Event>, make: impl FnOnce(Sender<T>) -> Control) -> Option<T> {
    let (tx, rx) = async_channel::bounded(1);
    events.send(Event::Control(make(tx))).await.ok()?;
    async { rx.recv().await.ok() }
        .or(async {
            smol::Timer::after(ROOM_ANSWER_TIMEOUT).await;
            None
        })
        .await
}

/// `answer`'s value if it comes before `deadline` (`None`: late, or the room stopped).
async fn before<T, E>(
    deadline: std::time::Instant,
    answer: impl std::future::Future<Output = Result<T, E>>,
) -> Option<T> {
    async { answer.await.ok() }
        .or(async {
            smol::Timer::at(deadline).await;
            None
        })
        .await
}

fn json((status, body): (u16, String)) -> Reply {
    (status, JSON, body.into_bytes())
}

async fn route(req: &http::Request, token: &str, rooms: &Arc<Rooms>) -> Reply {
    let body = req.body_text();
    let shared = &rooms.shared;
    match route_fleet_control(
        &req.method,
        &req.path,
        req.header("authorization"),
        &body,
        token,
    ) {
        FleetRoute::Reply(status, body) => json((status, body)),
        FleetRoute::Ready => json(ready_body(rooms.is_ready())),
        FleetRoute::Rooms => json((200, rooms_body(&rooms.list()))),
        FleetRoute::Stats => {
            let list = rooms.list();
            // Every room is asked at once (each answers on its own task), and the answers
            // are collected under one deadline: a box of thousands of rooms answers in
            // about the time of its slowest room, and a stuck room costs at most the
            // deadline.
            let mut asked = Vec::new();
            for room in rooms.live_rooms() {
                let (stats_tx, stats_rx) = async_channel::bounded(1);
                let (memory_tx, memory_rx) = async_channel::bounded(1);
                let sent = room
                    .events
                    .send(Event::Control(Control::Stats(stats_tx)))
                    .await
                    .is_ok()
                    && room
                        .events
                        .send(Event::Control(Control::Memory(memory_tx)))
                        .await
                        .is_ok();
                if sent {
                    asked.push((room.doc.clone(), stats_rx, memory_rx));
                }
            }
            let deadline = std::time::Instant::now() + ROOM_ANSWER_TIMEOUT;
            let mut per_room = Vec::new();
            let (mut bytes, mut refusals) = (0, 0);
            for (doc, stats_rx, memory_rx) in asked {
                if let Some(text) = before(deadline, stats_rx.recv()).await {
                    per_room.push((doc, text));
                }
                if let Some((b, r)) = before(deadline, memory_rx.recv()).await {
                    bytes += b;
                    refusals += r;
                }
            }
            per_room.sort();
            let mut t = totals(rooms, &list);
            t.retained_bytes = bytes;
            t.budget_refusals = refusals;
            json((200, stats_body(&t, &per_room)))
        }
        FleetRoute::Revoke { user } => {
            let now = shared.env.now_ms();
            shared
                .revoked
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((user.clone(), now));
            let mut n = 0;
            for room in rooms.live_rooms() {
                let user = user.clone();
                n += ask(&room.events, |reply| Control::Revoke { user, reply })
                    .await
                    .unwrap_or(0);
            }
            shared.log.info(&format!(
                "revoked {user} across the box: {n} subscription(s)"
            ));
            json((200, revoked_body(n)))
        }
        FleetRoute::Drain { doc } => match rooms.lookup(&doc) {
            Some(Ok(room)) => {
                let reply = ask(&room.events, Control::Drain).await;
                if let Some(result) = &reply {
                    // The table keeps the seq for the room's hibernation record.
                    rooms.step(Some(rindle_room_core::fleet::Input::Drained {
                        doc: doc.clone(),
                        incarnation: room.incarnation,
                        result: result.clone().map_err(|e| e.to_string().into()),
                    }));
                }
                json(ControlRoute::http(
                    reply
                        .map(|r| ControlReply::Drained(r.map_err(|e| e.to_string().into())))
                        .as_ref(),
                ))
            }
            Some(Err(record)) => match record.final_flush_seq {
                Some(seq) => json(ControlRoute::http(Some(&ControlReply::Drained(Ok(seq))))),
                None => json((
                    409,
                    error_body(&format!(
                        "room {doc} is hibernated without a recorded drain; connect to it to \
                         boot it, then drain"
                    )),
                )),
            },
            None => json((
                404,
                error_body(&format!("no room for doc {doc} on this box")),
            )),
        },
        FleetRoute::Metrics => {
            let text = metrics(rooms, &rooms.list());
            (200, "text/plain; version=0.0.4", text.into_bytes())
        }
    }
}

fn totals(rooms: &Rooms, list: &[rindle_room_core::fleet::RoomSummary]) -> BoxTotals {
    let c = &rooms.shared.counters;
    let table = rooms.counters();
    let mut t = BoxTotals {
        instance: rooms.shared.instance.clone(),
        boots: table.boots,
        boot_failures: table.boot_failures,
        hibernations: table.hibernations,
        crashes: c.crashes.load(Ordering::Relaxed),
        max_room_bytes: rooms.shared.fleet.max_room_bytes,
        max_box_bytes: rooms.shared.fleet.max_box_bytes,
        over_budget: rooms.over_budget(),
        stranded: rooms
            .shared
            .stranded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone(),
        stranded_total: rooms.shared.stranded_total.load(Ordering::Relaxed),
        ..BoxTotals::default()
    };
    for r in list {
        t.rooms[state_index(r.state)] += 1;
        t.connections += r.connections;
    }
    t
}

fn state_index(s: RoomState) -> usize {
    match s {
        RoomState::Booting => 0,
        RoomState::Live => 1,
        RoomState::Stopping => 2,
        RoomState::Hibernated => 3,
    }
}

/// Box-level families only: no label takes a doc, so the page stays small however
/// many rooms the box serves.
fn metrics(rooms: &Rooms, list: &[rindle_room_core::fleet::RoomSummary]) -> String {
    use std::fmt::Write as _;
    let t = totals(rooms, list);
    let mut s = String::new();
    let _ = writeln!(s, "# HELP rindle_fleet_rooms Rooms by state.");
    let _ = writeln!(s, "# TYPE rindle_fleet_rooms gauge");
    for state in [
        RoomState::Booting,
        RoomState::Live,
        RoomState::Stopping,
        RoomState::Hibernated,
    ] {
        let _ = writeln!(
            s,
            "rindle_fleet_rooms{{state=\"{}\"}} {}",
            state.as_str(),
            t.rooms[state_index(state)]
        );
    }
    let sync = rooms
        .shared
        .group_sync
        .as_ref()
        .map(|g| g.stats())
        .unwrap_or_default();
    let families: [(&str, &str, &str, u64); 9] = [
        (
            "rindle_fleet_journal_syncs_total",
            "counter",
            "Box-level journal syncs (one syncfs each; fleet.journal_sync = \"box\").",
            sync.syncs,
        ),
        (
            "rindle_fleet_journal_synced_appends_total",
            "counter",
            "Journal appends the box-level syncs covered.",
            sync.covered,
        ),
        (
            "rindle_fleet_boots_refused_for_budget",
            "gauge",
            "1 while new boots are refused for fleet.max_box_bytes.",
            u64::from(t.over_budget),
        ),
        (
            "rindle_room_stranded_mutations_total",
            "counter",
            "Acknowledged mutations a fenced room could not deliver (journal kept).",
            t.stranded_total,
        ),
        (
            "rindle_fleet_connections",
            "gauge",
            "Open room connections.",
            t.connections as u64,
        ),
        (
            "rindle_fleet_boots_total",
            "counter",
            "Room boots granted.",
            t.boots,
        ),
        (
            "rindle_fleet_boot_failures_total",
            "counter",
            "Room boots that failed.",
            t.boot_failures,
        ),
        (
            "rindle_fleet_hibernations_total",
            "counter",
            "Rooms hibernated.",
            t.hibernations,
        ),
        (
            "rindle_fleet_room_crashes_total",
            "counter",
            "Rooms that crashed.",
            t.crashes,
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        let _ = writeln!(s, "{name} {value}");
    }
    // The rooms' own counters, summed over every room the box ran.
    let counters = &rooms.shared.counters;
    let host = *counters.host.lock().unwrap_or_else(|e| e.into_inner());
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    let sockets = rindle_room_core::host::SocketCounts {
        connections_refused: load(&counters.conn.connections_refused),
        handshake_timeouts: load(&counters.conn.handshake_timeouts),
        protocol_closes: load(&counters.conn.protocol_closes),
    };
    rindle_room_core::host::render_counters(&mut s, &host, &sockets);
    s
}
