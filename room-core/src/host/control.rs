//! The control plane (the Node shell's `startControl`; `docs/design/authority.md`,
//! "Revocation and the control plane"): the routes, the bearer
//! check and the answers, for any driver's HTTP server; and the host's side of each
//! request.
//!
//! | Method + path | Token | Reply |
//! |---|---|---|
//! | `GET /healthz` | no | 200 `{"live":true}` while the room runs (liveness) |
//! | `GET /readyz` | no | 200 `{"ready":true}` when the incarnation is live and the room is not shutting down, else 503 `{"ready":false}` |
//! | `GET /stats` | yes | 200, the published room's fields |
//! | `POST /revoke {userId}` | yes | 200 `{"revoked":n}`; 400 `{"error":"userId required"}` / `{"error":"invalid JSON"}` |
//! | `POST /drain` | yes | 200 `{"finalFlushSeq":n,"drained":true}`; 500 `{"error":…}` |
//! | `GET /metrics` | yes | 200, the driver's Prometheus text |
//! | anything else | yes | 404 `{"error":"unknown endpoint"}` |
//!
//! The probes answer without a token and reveal nothing else (`docs/fleet.md`, "Health",
//! as in fleet mode); every other request must carry `Authorization: Bearer <token>` (compared in
//! constant time), else 401 `{"error":"unauthorized"}`. Routing compares the method and
//! the raw request-target exactly, as the published room's Node shell does. A room that stopped answers no
//! probe: the driver renders that as 503 (`ControlRoute::http(None)`).

use crate::texts::{bearer_matches, error_body};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::{ConnId, ControlReply, ControlRequest, Driver, Host, Level, Output, Phase};
use crate::json::tree::JsValue;
use crate::json::write::write_i64;

/// How long a shutdown waits for its drain before closing anyway (the journal keeps
/// whatever was not flushed; the next boot settles it).
pub(crate) const SHUTDOWN_DRAIN_MS: u64 = 10_000;

/// What a control-plane HTTP request calls for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlRoute {
    /// Answer at once: `(status, body)` (JSON).
    Reply(u16, String),
    /// Ask the host ([`super::Input::Control`]); render its answer with
    /// [`ControlRoute::http`].
    Host(ControlRequest),
    /// `GET /metrics`: the driver renders its Prometheus text.
    Metrics,
}

/// Routes one control-plane request: `authorization` is the header's value, `token` the
/// configured bearer token. The probes (`GET /healthz`, `GET /readyz`) need no token.
pub fn route_control(
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: &str,
    token: &str,
) -> ControlRoute {
    // A probe is answered whatever its query string says (load balancers add some).
    let probe = path.split_once('?').map_or(path, |(bare, _)| bare);
    match (method, probe) {
        ("GET", "/healthz") => return ControlRoute::Host(ControlRequest::Health),
        ("GET", "/readyz") => return ControlRoute::Host(ControlRequest::Ready),
        _ => {}
    }
    let expected = format!("Bearer {token}");
    let authorized =
        authorization.is_some_and(|given| bearer_matches(given.as_bytes(), expected.as_bytes()));
    if !authorized {
        return ControlRoute::Reply(401, error_body("unauthorized"));
    }
    match (method, path) {
        ("GET", "/stats") => ControlRoute::Host(ControlRequest::Stats),
        ("POST", "/revoke") => match JsValue::parse(body) {
            Err(_) | Ok(JsValue::Null) => ControlRoute::Reply(400, error_body("invalid JSON")),
            Ok(v) => match v.get("userId") {
                Some(JsValue::Str(u)) if !u.is_empty() => {
                    ControlRoute::Host(ControlRequest::Revoke { user: u.clone() })
                }
                _ => ControlRoute::Reply(400, error_body("userId required")),
            },
        },
        ("POST", "/drain") => ControlRoute::Host(ControlRequest::Drain),
        ("GET", "/metrics") => ControlRoute::Metrics,
        _ => ControlRoute::Reply(404, error_body("unknown endpoint")),
    }
}

impl ControlRoute {
    /// The HTTP answer `(status, body)` to a host's [`ControlReply`]; `None` when the
    /// host stopped before answering (503 `{"error":"the room is closed"}`).
    pub fn http(reply: Option<&ControlReply>) -> (u16, String) {
        match reply {
            None | Some(ControlReply::Stopped) | Some(ControlReply::Flushed) => {
                (503, error_body("the room is closed"))
            }
            Some(ControlReply::Stats(s)) => (200, s.clone()),
            Some(ControlReply::Health(true)) => (200, String::from("{\"live\":true}")),
            Some(ControlReply::Health(false)) => (503, String::from("{\"live\":false}")),
            Some(ControlReply::Ready(true)) => (200, String::from("{\"ready\":true}")),
            Some(ControlReply::Ready(false)) => (503, String::from("{\"ready\":false}")),
            Some(ControlReply::Revoked(n)) => {
                let mut s = String::from("{\"revoked\":");
                write_i64(&mut s, *n as i64);
                s.push('}');
                (200, s)
            }
            Some(ControlReply::Drained(Ok(seq))) => {
                let mut s = String::from("{\"finalFlushSeq\":");
                write_i64(&mut s, *seq as i64);
                s.push_str(",\"drained\":true}");
                (200, s)
            }
            Some(ControlReply::Drained(Err(e))) => (500, error_body(&e.to_string())),
        }
    }
}

impl Host {
    /// A control request to a stopped host: answered from what it knows, nothing started.
    pub(super) fn on_control_stopped(&mut self, id: u64, request: ControlRequest) {
        let reply = match request {
            ControlRequest::Stats => ControlReply::Stats(self.stats_json()),
            ControlRequest::Health => ControlReply::Health(false),
            ControlRequest::Ready => ControlReply::Ready(false),
            ControlRequest::Revoke { .. } => ControlReply::Revoked(0),
            ControlRequest::Drain => ControlReply::Drained(self.drained()),
            ControlRequest::FlushNow => ControlReply::Flushed,
            ControlRequest::Shutdown | ControlRequest::Abort | ControlRequest::Close => {
                ControlReply::Stopped
            }
        };
        self.push(Output::ControlReply { id, reply });
    }

    pub(super) fn on_control(&mut self, id: u64, request: ControlRequest, _: &mut dyn Driver) {
        let reply = |me: &mut Host, reply| me.push(Output::ControlReply { id, reply });
        match request {
            ControlRequest::Stats => {
                let s = self.stats_json();
                reply(self, ControlReply::Stats(s));
            }
            ControlRequest::Health => {
                let running = !self.closed();
                reply(self, ControlReply::Health(running));
            }
            ControlRequest::Ready => {
                let ready = self.inc.live && self.phase == Phase::Running && !self.moved;
                reply(self, ControlReply::Ready(ready));
            }
            ControlRequest::Revoke { user } => {
                let n = self.revoke_user(&user);
                reply(self, ControlReply::Revoked(n));
            }
            ControlRequest::Drain => self.start_drain(Some(id), false),
            ControlRequest::FlushNow => self.flush_now(id),
            ControlRequest::Shutdown => {
                if matches!(self.phase, Phase::Stopped | Phase::ShuttingDown) {
                    return reply(self, ControlReply::Stopped);
                }
                self.log(
                    Level::Info,
                    String::from("shutting down: no new connections, draining"),
                );
                self.flushing.shutdown_reply = Some(id);
                self.phase = Phase::ShuttingDown;
                self.push(Output::StopAccepting);
                self.timers.shutdown = Some(self.now + SHUTDOWN_DRAIN_MS);
                // Journal what the group commit holds, so its mutations survive.
                self.flush_journal();
                self.start_drain(None, true);
            }
            ControlRequest::Close => {
                if self.phase == Phase::Stopped {
                    return reply(self, ControlReply::Stopped);
                }
                self.log(Level::Info, String::from("closed: no drain"));
                self.close_everything(1001, "room shutting down");
                reply(self, ControlReply::Stopped);
                self.stop(false);
            }
            ControlRequest::Abort => {
                self.log(
                    Level::Warn,
                    String::from("aborted: sockets dropped, nothing drained"),
                );
                let conns: Vec<ConnId> = self.down.conns.keys().copied().collect();
                for conn in conns {
                    self.push(Output::Terminate { conn });
                }
                self.push(Output::CloseUpstream);
                self.push(Output::StopAccepting);
                reply(self, ControlReply::Stopped);
                self.stop(false);
            }
        }
    }

    /// The shutdown drain ran out of time: close anyway.
    pub(super) fn shutdown_deadline_passed(&mut self) {
        if self.flushing.shutdown_reply.is_none() {
            return;
        }
        self.log(
            Level::Warn,
            format!(
                "shutdown: the drain did not finish within {SHUTDOWN_DRAIN_MS} ms; closing \
                 anyway (the journal keeps what was not flushed; the next boot settles it)"
            ),
        );
        self.flushing.drains.retain(|d| !d.is_shutdown());
        self.finish_shutdown();
    }

    /// Point-in-time gauges: `(connections, subscriptions, materializations,
    /// pending mutations, dirty keys, head cv)`.
    pub fn gauges(&self) -> Gauges {
        let room = self.inc.room.as_ref().map(|r| r.room());
        Gauges {
            live: self.inc.live,
            connections: self.down.conns.len(),
            subscriptions: self.down.subs.len(),
            materializations: room.map_or(0, |r| r.materialization_count()),
            pending_mutations: room.map_or(0, |r| r.pending_len()),
            dirty_keys: room.map_or(0, |r| r.dirty_len()),
            flushes_awaiting_echo: self.echo_wait.len(),
            head_cv: room.map_or(0, |r| r.head_cv()),
            placement_epoch: self.boot.placement_epoch,
        }
    }

    /// The `/stats` object, in the published room's member order.
    pub fn stats_json(&self) -> String {
        let g = self.gauges();
        let mut s = String::from("{\"live\":");
        s.push_str(if g.live { "true" } else { "false" });
        let num = |s: &mut String, key: &str, v: u64| {
            s.push_str(",\"");
            s.push_str(key);
            s.push_str("\":");
            write_i64(s, v as i64);
        };
        num(&mut s, "connections", g.connections as u64);
        num(&mut s, "subscriptions", g.subscriptions as u64);
        num(&mut s, "materializations", g.materializations as u64);
        num(&mut s, "pendingMutations", g.pending_mutations as u64);
        num(&mut s, "dirtyKeys", g.dirty_keys as u64);
        num(&mut s, "placementEpoch", g.placement_epoch);
        num(&mut s, "flushesConfirmed", self.flushing.confirmed);
        s.push_str(",\"flushInFlight\":");
        s.push_str(if self.flushing.in_flight.is_some() {
            "true"
        } else {
            "false"
        });
        s.push('}');
        s
    }
}

/// What a control-plane server holds for its clients, the same in every driver: the
/// plane is loopback-only, for one operator or probe at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlLimits {
    /// The largest request body read (larger: 400, `bad request: body exceeds N bytes`).
    pub max_body_bytes: usize,
    /// How long a client may take to send its request, ms.
    pub read_timeout_ms: u64,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for ControlLimits {
    fn default() -> ControlLimits {
        ControlLimits::DEFAULT
    }
}

impl ControlLimits {
    /// The limits every driver applies (what [`Default`] gives, usable in a `const`).
    pub const DEFAULT: ControlLimits = ControlLimits {
        max_body_bytes: 1 << 20,
        read_timeout_ms: 10_000,
        max_connections: 64,
    };

    /// The limits as JSON (`maxBodyBytes`, `readTimeoutMs`, `maxConnections`), for a
    /// driver in another language.
    pub fn to_json(&self) -> String {
        alloc::format!(
            "{{\"maxBodyBytes\":{},\"readTimeoutMs\":{},\"maxConnections\":{}}}",
            self.max_body_bytes,
            self.read_timeout_ms,
            self.max_connections
        )
    }
}

/// Point-in-time values a driver renders (`/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Whether the current incarnation is live.
    pub live: bool,
    /// Open downstream connections.
    pub connections: usize,
    /// Tracked subscriptions (lmid system subscriptions included).
    pub subscriptions: usize,
    /// Materialized queries.
    pub materializations: usize,
    /// Processed mutations not yet durable.
    pub pending_mutations: usize,
    /// Dirty keys.
    pub dirty_keys: usize,
    /// Committed flushes whose journal record waits for its echo.
    pub flushes_awaiting_echo: usize,
    /// The room's head cv.
    pub head_cv: u64,
    /// The placement epoch (0 without an authority).
    pub placement_epoch: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_comparison_is_exact() {
        assert!(bearer_matches(b"Bearer abc", b"Bearer abc"));
        assert!(!bearer_matches(b"Bearer abd", b"Bearer abc"));
        assert!(!bearer_matches(b"Bearer ab", b"Bearer abc"));
        assert!(!bearer_matches(b"Bearer abcd", b"Bearer abc"));
        assert!(!bearer_matches(b"", b"Bearer abc"));
    }

    #[test]
    fn routes_and_refusals() {
        let r = |m, p, a, b| route_control(m, p, a, b, "t");
        assert_eq!(
            r("GET", "/stats", None, ""),
            ControlRoute::Reply(401, error_body("unauthorized"))
        );
        let ok = Some("Bearer t");
        assert_eq!(
            r("GET", "/stats", ok, ""),
            ControlRoute::Host(ControlRequest::Stats)
        );
        assert_eq!(r("GET", "/metrics", ok, ""), ControlRoute::Metrics);
        assert_eq!(
            r("POST", "/revoke", ok, "{\"userId\":\"u\"}"),
            ControlRoute::Host(ControlRequest::Revoke { user: "u".into() })
        );
        assert_eq!(
            r("POST", "/revoke", ok, "nope"),
            ControlRoute::Reply(400, error_body("invalid JSON"))
        );
        assert_eq!(
            r("POST", "/revoke", ok, "{}"),
            ControlRoute::Reply(400, error_body("userId required"))
        );
        assert_eq!(
            r("GET", "/nope", ok, ""),
            ControlRoute::Reply(404, error_body("unknown endpoint"))
        );
    }

    #[test]
    fn probes_need_no_token_and_reveal_nothing_else() {
        let r = |m, p, a| route_control(m, p, a, "", "t");
        for auth in [None, Some("Bearer nope"), Some("Bearer t")] {
            assert_eq!(
                r("GET", "/healthz", auth),
                ControlRoute::Host(ControlRequest::Health)
            );
            assert_eq!(
                r("GET", "/readyz", auth),
                ControlRoute::Host(ControlRequest::Ready)
            );
            assert_eq!(
                r("GET", "/healthz?x=1", auth),
                ControlRoute::Host(ControlRequest::Health)
            );
            assert_eq!(
                r("GET", "/readyz?probe=lb", auth),
                ControlRoute::Host(ControlRequest::Ready)
            );
        }
        let unauthorized = ControlRoute::Reply(401, error_body("unauthorized"));
        for (m, p) in [
            ("POST", "/healthz"),
            ("POST", "/healthz?x=1"),
            ("GET", "/readyz/"),
            ("GET", "/metrics"),
            ("GET", "/stats"),
        ] {
            assert_eq!(r(m, p, None), unauthorized, "{m} {p}");
        }
        assert_eq!(
            ControlRoute::http(Some(&ControlReply::Ready(true))),
            (200, String::from("{\"ready\":true}"))
        );
        assert_eq!(
            ControlRoute::http(Some(&ControlReply::Ready(false))),
            (503, String::from("{\"ready\":false}"))
        );
        assert_eq!(
            ControlRoute::http(Some(&ControlReply::Health(true))),
            (200, String::from("{\"live\":true}"))
        );
    }
}
