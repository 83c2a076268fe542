//! The fleet's control plane for many rooms (`docs/fleet.md`, "Health"): routes, the
//! bearer check, and the JSON answers that are not a single room's.
//!
//! | Method + path | Token | Reply |
//! |---|---|---|
//! | `GET /healthz` | no | 200 `{"live":true}` (the process serves HTTP) |
//! | `GET /readyz` | no | 200 `{"ready":true}` once start-up settlement is done and the box is not draining, else 503 `{"ready":false}` |
//! | `GET /rooms` | yes | 200 `{"rooms":[{doc, state, connections, epoch, hibernatedAtMs?}]}` |
//! | `GET /stats` | yes | 200 `{"box":{…, "strandedTotal": n, "stranded":[{doc, clientID, mid, name}]},"rooms":{doc: <the room's /stats>}}` (live rooms) |
//! | `POST /revoke {userId}` | yes | 200 `{"revoked":n}` summed over every room; the revocation also holds for rooms booted later |
//! | `POST /drain?doc=<doc>` | yes | 200 `{"finalFlushSeq":n,"drained":true}`; 404 when the box has no such room |
//! | `GET /metrics` | yes | 200, Prometheus text (box-level families only) |
//! | anything else | yes | 404 `{"error":"unknown endpoint"}` |
//!
//! The probes answer without a token and reveal nothing else; every other route answers
//! 401 `{"error":"unauthorized"}` without `Authorization: Bearer <token>`.

use alloc::string::String;
use alloc::vec::Vec;

use super::path::percent_decode;
use crate::json::tree::JsValue;
use crate::json::write::{write_i64, write_str};
use crate::texts::{bearer_matches, error_body, write_stranded, StrandedMutation};

/// What a fleet control-plane request calls for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FleetRoute {
    /// Answer at once: `(status, body)` (JSON).
    Reply(u16, String),
    /// `GET /readyz`: answer with [`ready_body`].
    Ready,
    /// `GET /rooms`: answer with [`rooms_body`].
    Rooms,
    /// `GET /stats`: answer with [`stats_body`].
    Stats,
    /// `POST /revoke`: revoke `user` in every room (and rooms booted later).
    Revoke {
        /// The subject.
        user: String,
    },
    /// `POST /drain?doc=`: drain that room.
    Drain {
        /// The doc.
        doc: String,
    },
    /// `GET /metrics`: the driver's Prometheus text.
    Metrics,
}

/// A room's state in the fleet's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoomState {
    /// Waiting for room-boot or for start-up.
    Booting,
    /// Serving.
    Live,
    /// Draining and shutting down (hibernating or re-booting).
    Stopping,
    /// Shut down; only a small record is kept.
    Hibernated,
}

impl RoomState {
    /// The name `/rooms` and the metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            RoomState::Booting => "booting",
            RoomState::Live => "live",
            RoomState::Stopping => "stopping",
            RoomState::Hibernated => "hibernated",
        }
    }
}

/// One row of `/rooms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoomSummary {
    /// The doc.
    pub doc: String,
    /// Its state.
    pub state: RoomState,
    /// Open connections.
    pub connections: usize,
    /// The placement epoch (0 before the first boot finished).
    pub epoch: u64,
    /// When it hibernated (ms since the Unix epoch), for a hibernated room.
    pub hibernated_at_ms: Option<u64>,
}

/// Routes one request to the fleet's control plane (`path` is the raw request-target,
/// query included).
pub fn route_fleet_control(
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: &str,
    token: &str,
) -> FleetRoute {
    // A probe is answered whatever its query string says (load balancers add some).
    let probe = path.split_once('?').map_or(path, |(bare, _)| bare);
    match (method, probe) {
        ("GET", "/healthz") => return FleetRoute::Reply(200, String::from("{\"live\":true}")),
        ("GET", "/readyz") => return FleetRoute::Ready,
        _ => {}
    }
    let mut expected = String::from("Bearer ");
    expected.push_str(token);
    let authorized =
        authorization.is_some_and(|given| bearer_matches(given.as_bytes(), expected.as_bytes()));
    if !authorized {
        return FleetRoute::Reply(401, error_body("unauthorized"));
    }
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    match (method, route) {
        ("GET", "/rooms") => FleetRoute::Rooms,
        ("GET", "/stats") => FleetRoute::Stats,
        ("GET", "/metrics") => FleetRoute::Metrics,
        ("POST", "/revoke") => match JsValue::parse(body) {
            Err(_) | Ok(JsValue::Null) => FleetRoute::Reply(400, error_body("invalid JSON")),
            Ok(v) => match v.get("userId") {
                Some(JsValue::Str(u)) if !u.is_empty() => FleetRoute::Revoke { user: u.clone() },
                _ => FleetRoute::Reply(400, error_body("userId required")),
            },
        },
        ("POST", "/drain") => {
            let doc = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("doc="))
                .map(percent_decode);
            match doc {
                Some(Ok(doc)) if !doc.is_empty() => FleetRoute::Drain { doc },
                Some(Err(e)) => FleetRoute::Reply(400, error_body(&alloc::format!("doc: {e}"))),
                _ => FleetRoute::Reply(
                    400,
                    error_body("doc required: POST /drain?doc=<percent-encoded doc>"),
                ),
            }
        }
        _ => FleetRoute::Reply(404, error_body("unknown endpoint")),
    }
}

/// The `/readyz` answer.
pub fn ready_body(ready: bool) -> (u16, String) {
    if ready {
        (200, String::from("{\"ready\":true}"))
    } else {
        (503, String::from("{\"ready\":false}"))
    }
}

/// The `/rooms` body.
pub fn rooms_body(rooms: &[RoomSummary]) -> String {
    let mut s = String::from("{\"rooms\":[");
    for (i, r) in rooms.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"doc\":");
        write_str(&mut s, &r.doc);
        s.push_str(",\"state\":");
        write_str(&mut s, r.state.as_str());
        s.push_str(",\"connections\":");
        write_i64(&mut s, r.connections as i64);
        s.push_str(",\"epoch\":");
        write_i64(&mut s, r.epoch as i64);
        if let Some(at) = r.hibernated_at_ms {
            s.push_str(",\"hibernatedAtMs\":");
            write_i64(&mut s, at as i64);
        }
        s.push('}');
    }
    s.push_str("]}");
    s
}

/// Box-level totals for `/stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoxTotals {
    /// The box's instance id.
    pub instance: String,
    /// Rooms per state: booting, live, stopping, hibernated.
    pub rooms: [usize; 4],
    /// Open room connections.
    pub connections: usize,
    /// Boots granted since start.
    pub boots: u64,
    /// Boots that failed (any reason) since start.
    pub boot_failures: u64,
    /// Rooms hibernated since start.
    pub hibernations: u64,
    /// Rooms that crashed (a panic) since start.
    pub crashes: u64,
    /// Bytes the live rooms retain together (each room's `Room::retained_bytes`).
    pub retained_bytes: u64,
    /// Subscribes refused by a room's budget, summed over the live rooms.
    pub budget_refusals: u64,
    /// The per-room budget (`None`: none).
    pub max_room_bytes: Option<u64>,
    /// The per-box budget (`None`: none).
    pub max_box_bytes: Option<u64>,
    /// Whether new boots are refused for the box budget.
    pub over_budget: bool,
    /// Mutations this box acknowledged and could not deliver because the doc is placed
    /// elsewhere now (`docs/fleet.md`, "Acknowledgement modes"): the first few thousand,
    /// listed.
    pub stranded: Vec<StrandedMutation>,
    /// Every stranded mutation, listed or not.
    pub stranded_total: u64,
}

/// The `/stats` body: the box's totals and each live room's own `/stats` JSON.
pub fn stats_body(totals: &BoxTotals, rooms: &[(String, String)]) -> String {
    let mut s = String::from("{\"box\":{\"instance\":");
    write_str(&mut s, &totals.instance);
    let states = [
        RoomState::Booting,
        RoomState::Live,
        RoomState::Stopping,
        RoomState::Hibernated,
    ];
    s.push_str(",\"rooms\":{");
    for (i, state) in states.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, state.as_str());
        s.push(':');
        write_i64(&mut s, totals.rooms[i] as i64);
    }
    s.push('}');
    let counters: [(&str, u64); 7] = [
        ("connections", totals.connections as u64),
        ("boots", totals.boots),
        ("bootFailures", totals.boot_failures),
        ("hibernations", totals.hibernations),
        ("crashes", totals.crashes),
        ("retainedBytes", totals.retained_bytes),
        ("budgetRefusals", totals.budget_refusals),
    ];
    for (name, value) in counters {
        s.push(',');
        write_str(&mut s, name);
        s.push(':');
        write_i64(&mut s, value as i64);
    }
    for (name, value) in [
        ("maxRoomBytes", totals.max_room_bytes),
        ("maxBoxBytes", totals.max_box_bytes),
    ] {
        s.push(',');
        write_str(&mut s, name);
        s.push(':');
        match value {
            Some(v) => write_i64(&mut s, v as i64),
            None => s.push_str("null"),
        }
    }
    s.push_str(",\"overBudget\":");
    s.push_str(if totals.over_budget { "true" } else { "false" });
    s.push_str(",\"strandedTotal\":");
    write_i64(&mut s, totals.stranded_total as i64);
    s.push_str(",\"stranded\":");
    write_stranded(&mut s, &totals.stranded);
    s.push_str("},\"rooms\":{");
    for (i, (doc, stats)) in rooms.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, doc);
        s.push(':');
        s.push_str(stats);
    }
    s.push_str("}}");
    s
}

/// The `/revoke` body: `{"revoked":n}`.
pub fn revoked_body(n: u64) -> String {
    let mut s = String::from("{\"revoked\":");
    write_i64(&mut s, n as i64);
    s.push('}');
    s
}

/// A room list sorted by doc, for stable output.
pub fn sorted(mut rooms: Vec<RoomSummary>) -> Vec<RoomSummary> {
    rooms.sort_by(|a, b| a.doc.cmp(&b.doc));
    rooms
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    const T: &str = "tok";

    fn route(method: &str, path: &str, auth: Option<&str>, body: &str) -> FleetRoute {
        route_fleet_control(method, path, auth, body, T)
    }

    #[test]
    fn probes_need_no_token_and_everything_else_does() {
        assert_eq!(
            route("GET", "/healthz", None, ""),
            FleetRoute::Reply(200, "{\"live\":true}".to_string())
        );
        assert_eq!(route("GET", "/readyz", None, ""), FleetRoute::Ready);
        assert_eq!(
            route("GET", "/healthz?x=1", None, ""),
            FleetRoute::Reply(200, "{\"live\":true}".to_string())
        );
        assert_eq!(route("GET", "/readyz?lb=1", None, ""), FleetRoute::Ready);
        for path in ["/rooms", "/stats", "/metrics", "/nope"] {
            assert_eq!(
                route("GET", path, Some("Bearer nope"), ""),
                FleetRoute::Reply(401, error_body("unauthorized"))
            );
        }
        let ok = Some("Bearer tok");
        assert_eq!(route("GET", "/rooms", ok, ""), FleetRoute::Rooms);
        assert_eq!(route("GET", "/stats", ok, ""), FleetRoute::Stats);
        assert_eq!(route("GET", "/metrics", ok, ""), FleetRoute::Metrics);
        assert_eq!(
            route("GET", "/nope", ok, ""),
            FleetRoute::Reply(404, error_body("unknown endpoint"))
        );
    }

    #[test]
    fn revoke_and_drain_read_their_arguments() {
        let ok = Some("Bearer tok");
        assert_eq!(
            route("POST", "/revoke", ok, r#"{"userId":"u1"}"#),
            FleetRoute::Revoke { user: "u1".into() }
        );
        assert!(matches!(
            route("POST", "/revoke", ok, "{}"),
            FleetRoute::Reply(400, _)
        ));
        assert_eq!(
            route("POST", "/drain?doc=deck%2F7", ok, ""),
            FleetRoute::Drain {
                doc: "deck/7".into()
            }
        );
        for bad in ["/drain", "/drain?doc=", "/drain?doc=%zz"] {
            assert!(
                matches!(route("POST", bad, ok, ""), FleetRoute::Reply(400, _)),
                "{bad}"
            );
        }
    }

    #[test]
    fn bodies() {
        let rooms = sorted(vec![
            RoomSummary {
                doc: "b".into(),
                state: RoomState::Hibernated,
                connections: 0,
                epoch: 2,
                hibernated_at_ms: Some(5),
            },
            RoomSummary {
                doc: "a\"".into(),
                state: RoomState::Live,
                connections: 3,
                epoch: 1,
                hibernated_at_ms: None,
            },
        ]);
        assert_eq!(
            rooms_body(&rooms),
            r#"{"rooms":[{"doc":"a\"","state":"live","connections":3,"epoch":1},{"doc":"b","state":"hibernated","connections":0,"epoch":2,"hibernatedAtMs":5}]}"#
        );
        let totals = BoxTotals {
            instance: "i".into(),
            rooms: [0, 1, 0, 1],
            connections: 3,
            boots: 3,
            ..BoxTotals::default()
        };
        let s = stats_body(&totals, &[("a".into(), "{\"x\":1}".into())]);
        assert_eq!(
            s,
            r#"{"box":{"instance":"i","rooms":{"booting":0,"live":1,"stopping":0,"hibernated":1},"connections":3,"boots":3,"bootFailures":0,"hibernations":0,"crashes":0,"retainedBytes":0,"budgetRefusals":0,"maxRoomBytes":null,"maxBoxBytes":null,"overBudget":false,"strandedTotal":0,"stranded":[]},"rooms":{"a":{"x":1}}}"#
        );
        assert_eq!(ready_body(false).0, 503);
        assert_eq!(revoked_body(4), "{\"revoked\":4}");
    }
}
